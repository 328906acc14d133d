//! Scans without a reply (`RedisModule_ScanKey`): whole, bounded, and
//! resumable across slices.

use std::ptr;

use redis_module::{raw, RedisString};

use super::{Key, KeyType};

impl Key {
    /// Calls `f` with each member of a Set (each field of a Hash) until it
    /// returns false; returns false when stopped early. Uses
    /// `RedisModule_ScanKey`, so no reply is built: reading a set of a
    /// million members through `ctx.call("SMEMBERS")` costs several times
    /// more.
    pub fn scan(&self, mut f: impl FnMut(&[u8]) -> bool) -> bool {
        struct State<'a> {
            f: &'a mut dyn FnMut(&[u8]) -> bool,
            go: bool,
        }
        unsafe extern "C" fn each(
            _key: *mut raw::RedisModuleKey,
            field: *mut raw::RedisModuleString,
            _value: *mut raw::RedisModuleString,
            privdata: *mut std::os::raw::c_void,
        ) {
            let st = &mut *(privdata as *mut State);
            if !st.go || field.is_null() {
                return;
            }
            let mut len = 0usize;
            let p = raw::RedisModule_StringPtrLen.unwrap()(field, &mut len);
            let bytes = if p.is_null() {
                &[][..]
            } else {
                std::slice::from_raw_parts(p as *const u8, len)
            };
            st.go = (st.f)(bytes);
        }
        if self.ptr.is_null() || !matches!(self.kind(), KeyType::Set | KeyType::Hash) {
            return true;
        }
        let mut st = State {
            f: &mut f,
            go: true,
        };
        unsafe {
            let cursor = raw::RedisModule_ScanCursorCreate.unwrap()();
            while st.go
                && raw::RedisModule_ScanKey.unwrap()(
                    self.ptr,
                    cursor,
                    Some(each),
                    &mut st as *mut State as *mut std::os::raw::c_void,
                ) != 0
            {}
            raw::RedisModule_ScanCursorDestroy.unwrap()(cursor);
        }
        st.go
    }

    /// Calls `f` with each field and value of a Hash until it returns
    /// false; returns false when stopped early. Like [`Key::scan`], no
    /// reply is built.
    pub fn scan_pairs(&self, mut f: impl FnMut(&[u8], &[u8]) -> bool) -> bool {
        struct State<'a> {
            f: &'a mut dyn FnMut(&[u8], &[u8]) -> bool,
            go: bool,
        }
        unsafe fn bytes<'b>(s: *mut raw::RedisModuleString) -> &'b [u8] {
            if s.is_null() {
                return &[];
            }
            let mut len = 0usize;
            let p = raw::RedisModule_StringPtrLen.unwrap()(s, &mut len);
            if p.is_null() {
                &[]
            } else {
                std::slice::from_raw_parts(p as *const u8, len)
            }
        }
        unsafe extern "C" fn each(
            _key: *mut raw::RedisModuleKey,
            field: *mut raw::RedisModuleString,
            value: *mut raw::RedisModuleString,
            privdata: *mut std::os::raw::c_void,
        ) {
            let st = &mut *(privdata as *mut State);
            if !st.go || field.is_null() {
                return;
            }
            st.go = (st.f)(bytes(field), bytes(value));
        }
        if self.ptr.is_null() || self.kind() != KeyType::Hash {
            return true;
        }
        let mut st = State {
            f: &mut f,
            go: true,
        };
        unsafe {
            let cursor = raw::RedisModule_ScanCursorCreate.unwrap()();
            while st.go
                && raw::RedisModule_ScanKey.unwrap()(
                    self.ptr,
                    cursor,
                    Some(each),
                    &mut st as *mut State as *mut std::os::raw::c_void,
                ) != 0
            {}
            raw::RedisModule_ScanCursorDestroy.unwrap()(cursor);
        }
        st.go
    }

    /// Calls `f` with each member `SSCAN key 0 COUNT count` would return,
    /// in the same order, and returns true when that is the whole Set (the
    /// cursor came back to 0). It follows SSCAN's own loop: one table step
    /// at a time until `count` members are read or `10 × count` more steps
    /// were taken; a small Set (intset) is read whole in one step, as SSCAN
    /// does. `RedisModule_ScanKey` builds no reply, so this costs a fraction
    /// of `SSCAN` through `RedisModule_Call`.
    pub fn scan_first(&self, count: usize, mut f: impl FnMut(&[u8])) -> bool {
        struct State<'a> {
            f: &'a mut dyn FnMut(&[u8]),
            seen: usize,
        }
        unsafe extern "C" fn each(
            _key: *mut raw::RedisModuleKey,
            field: *mut raw::RedisModuleString,
            _value: *mut raw::RedisModuleString,
            privdata: *mut std::os::raw::c_void,
        ) {
            let st = &mut *(privdata as *mut State);
            if field.is_null() {
                return;
            }
            let mut len = 0usize;
            let p = raw::RedisModule_StringPtrLen.unwrap()(field, &mut len);
            if !p.is_null() {
                (st.f)(std::slice::from_raw_parts(p as *const u8, len));
            }
            st.seen += 1;
        }
        if self.ptr.is_null() || self.kind() != KeyType::Set {
            return true;
        }
        let mut st = State { f: &mut f, seen: 0 };
        let mut steps = 0usize;
        unsafe {
            let cursor = raw::RedisModule_ScanCursorCreate.unwrap()();
            let complete = loop {
                let more = raw::RedisModule_ScanKey.unwrap()(
                    self.ptr,
                    cursor,
                    Some(each),
                    &mut st as *mut State as *mut std::os::raw::c_void,
                ) != 0;
                steps += 1;
                if !more {
                    break true;
                }
                if steps > count.saturating_mul(10) || st.seen >= count {
                    break false;
                }
            };
            raw::RedisModule_ScanCursorDestroy.unwrap()(cursor);
            complete
        }
    }
}

/// A scan position in a Sorted Set, kept across slices (and across
/// re-openings of the key) like a `ZSCAN` cursor: every member present
/// from the start to the end of the scan is seen at least once; a member
/// may be seen twice while the set is being rehashed.
pub struct ZScan {
    cursor: *mut raw::RedisModuleScanCursor,
}

impl Default for ZScan {
    fn default() -> Self {
        ZScan::new()
    }
}

impl ZScan {
    /// Returns a scan at the start.
    pub fn new() -> ZScan {
        ZScan {
            cursor: unsafe { raw::RedisModule_ScanCursorCreate.unwrap()() },
        }
    }

    /// Scans one step of `key` (a bucket of a large set, the whole of a
    /// small one) and calls `f` with each member and its score, both as
    /// Redis strings (retained: `f` may keep them). Returns false when the
    /// scan is over (or the key is missing or not a Sorted Set).
    pub fn step(&mut self, key: &Key, f: &mut dyn FnMut(RedisString, RedisString)) -> bool {
        struct State<'a> {
            f: &'a mut dyn FnMut(RedisString, RedisString),
        }
        unsafe extern "C" fn each(
            _key: *mut raw::RedisModuleKey,
            field: *mut raw::RedisModuleString,
            value: *mut raw::RedisModuleString,
            privdata: *mut std::os::raw::c_void,
        ) {
            let st = &mut *(privdata as *mut State);
            if field.is_null() || value.is_null() {
                return;
            }
            // The strings belong to the scan: retain them for the caller.
            raw::RedisModule_RetainString.unwrap()(ptr::null_mut(), field);
            raw::RedisModule_RetainString.unwrap()(ptr::null_mut(), value);
            (st.f)(
                RedisString::from_redis_module_string(ptr::null_mut(), field),
                RedisString::from_redis_module_string(ptr::null_mut(), value),
            );
        }
        if key.ptr.is_null() || key.kind() != KeyType::ZSet {
            return false;
        }
        let mut st = State { f };
        unsafe {
            raw::RedisModule_ScanKey.unwrap()(
                key.ptr,
                self.cursor,
                Some(each),
                &mut st as *mut State as *mut std::os::raw::c_void,
            ) != 0
        }
    }
}

impl Drop for ZScan {
    fn drop(&mut self) {
        if !self.cursor.is_null() {
            unsafe { raw::RedisModule_ScanCursorDestroy.unwrap()(self.cursor) };
        }
    }
}
