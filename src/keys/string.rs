//! Strings: reads, writes, and bytes read and rewritten in place.

use std::os::raw::c_int;

use redis_module::raw;

use super::{rstr, Key, KeyType};

impl Key {
    /// Returns the string value.
    pub fn get(&self) -> Option<Vec<u8>> {
        if self.kind() != KeyType::String {
            return None;
        }
        let mut len = 0usize;
        let p = raw::string_dma(self.ptr, &mut len, raw::KeyMode::READ);
        if p.is_null() {
            return Some(Vec::new());
        }
        Some(unsafe { std::slice::from_raw_parts(p as *const u8, len) }.to_vec())
    }

    /// Returns the string value parsed as an integer (None when missing).
    pub fn get_i64(&self) -> Option<i64> {
        self.get().and_then(|v| crate::args::parse_i64_plain(&v))
    }

    /// Sets the string value (keeps no TTL, like `SET`).
    pub fn set(&self, value: &[u8]) {
        let v = rstr(self.ctx, value);
        unsafe { raw::RedisModule_StringSet.unwrap()(self.ptr, v.inner) };
        self.touch();
    }

    /// Sets the string value keeping the key's current TTL.
    pub fn set_keep_ttl(&self, value: &[u8]) {
        let ttl = self.expire_ms();
        self.set(value);
        if ttl > 0 {
            self.set_expire_ms(ttl);
        }
    }

    /// Returns the string's bytes for in-place reading and writing, grown
    /// with zero bytes to at least `min_len` (a bitmap's storage).
    ///
    /// The slice aliases the key's value: use it before any other call on
    /// this key.
    #[allow(clippy::mut_from_ref)]
    pub fn bytes_mut(&self, min_len: usize) -> &mut [u8] {
        let mut len = 0usize;
        if self.len() < min_len {
            raw::string_truncate(self.ptr, min_len);
        }
        // The caller writes through the slice: count it as a change.
        self.touch();
        let p = raw::string_dma(self.ptr, &mut len, raw::KeyMode::WRITE);
        if p.is_null() || len == 0 {
            return &mut [];
        }
        unsafe { std::slice::from_raw_parts_mut(p as *mut u8, len) }
    }

    /// Returns the bytes of a String the caller may change in place,
    /// without marking the key as changed: a hot write reads the value and
    /// changes it through one access, and calls [`Key::mark_modified`]
    /// when it does change it. Empty when the key is missing or not a
    /// String. (Access for writing may turn a shared or integer-encoded
    /// value into a plain string of the same bytes, as `SETRANGE` does.)
    /// The slice aliases the key's value, as [`Key::bytes_mut`]'s does:
    /// use it before any other call that reads or changes the value.
    #[allow(clippy::mut_from_ref)]
    pub fn bytes_for_write(&self) -> &mut [u8] {
        if self.ptr.is_null() {
            return &mut [];
        }
        let mut len = 0usize;
        let p = raw::string_dma(self.ptr, &mut len, raw::KeyMode::WRITE);
        if p.is_null() || len == 0 {
            return &mut [];
        }
        unsafe { std::slice::from_raw_parts_mut(p as *mut u8, len) }
    }

    /// Returns the string's bytes for reading in place, without copying
    /// (empty when the key is missing or not a string). A bitmap read on
    /// the hot path must not copy megabytes.
    pub fn bytes(&self) -> &[u8] {
        // `RM_StringDMA` answers NULL for a key of another type and an
        // empty buffer for a missing one: no type lookup needed first.
        if self.ptr.is_null() {
            return &[];
        }
        let mut len = 0usize;
        let p = raw::string_dma(self.ptr, &mut len, raw::KeyMode::READ);
        if p.is_null() || len == 0 {
            return &[];
        }
        unsafe { std::slice::from_raw_parts(p as *const u8, len) }
    }

    /// Sets the string value in place, keeping the key's expiry; creates
    /// the key when missing. `RedisModule_StringSet` deletes the key and
    /// adds a new value (about 2,300 instructions); rewriting the bytes of
    /// the existing value costs a tenth of that.
    pub fn write_string(&self, value: &[u8]) {
        if self.ptr.is_null() {
            return;
        }
        let truncate = match unsafe { raw::RedisModule_StringTruncate } {
            Some(f) => f,
            None => return self.set(value),
        };
        if unsafe { truncate(self.ptr, value.len()) } != raw::REDISMODULE_OK as c_int {
            return self.set(value);
        }
        let mut len = 0usize;
        let p = raw::string_dma(self.ptr, &mut len, raw::KeyMode::WRITE);
        if p.is_null() || len != value.len() {
            return self.set(value);
        }
        unsafe { std::ptr::copy_nonoverlapping(value.as_ptr(), p as *mut u8, len) };
        self.touch();
    }

    /// Replaces the string value with `value` in place: the value object
    /// is resized and rewritten rather than replaced (`RM_StringSet` frees
    /// the old object and creates a new one). Creates the key when
    /// missing. The key keeps its TTL, if any.
    pub fn write_in_place(&self, value: &[u8]) {
        if value.is_empty() {
            self.set(value);
            return;
        }
        raw::string_truncate(self.ptr, value.len());
        let mut len = 0usize;
        let p = raw::string_dma(self.ptr, &mut len, raw::KeyMode::WRITE);
        if !p.is_null() && len == value.len() {
            unsafe { std::ptr::copy_nonoverlapping(value.as_ptr(), p as *mut u8, len) };
        }
        self.touch();
    }

    /// Rewrites a string value from byte `offset` on with `tail`, keeping
    /// the bytes before it (and the key's TTL): the value is cut to
    /// `offset + tail.len()` bytes in place. Does nothing unless the key
    /// holds a string of at least `offset` bytes.
    pub fn write_tail(&self, offset: usize, tail: &[u8]) {
        if self.kind() != KeyType::String || self.len() < offset {
            return;
        }
        raw::string_truncate(self.ptr, offset + tail.len());
        let mut len = 0usize;
        let p = raw::string_dma(self.ptr, &mut len, raw::KeyMode::WRITE);
        if !p.is_null() && len == offset + tail.len() {
            unsafe {
                std::ptr::copy_nonoverlapping(tail.as_ptr(), (p as *mut u8).add(offset), tail.len())
            };
        }
        self.touch();
    }

    /// Sets the string's length to `len` (zero bytes added at the end, or
    /// the end cut off), creating the key when it is missing. The expiry
    /// is kept.
    pub fn truncate(&self, len: usize) {
        if self.len() != len || !self.exists() {
            raw::string_truncate(self.ptr, len);
            self.touch();
        }
    }
}
