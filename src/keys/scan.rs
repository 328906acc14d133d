//! Scans without a reply (`RedisModule_ScanKey`): whole, bounded, and
//! resumable across slices. One trampoline ([`ZScan::each`]) serves them
//! all.

use std::ptr;

use redis_module::{raw, RedisString};

use super::{Key, KeyType};

/// What a scan step hands each element to: its field (member) and value
/// (score; null for a Set member), as the strings the scan owns.
type Each<'a> = &'a mut dyn FnMut(*mut raw::RedisModuleString, *mut raw::RedisModuleString);

/// Returns the bytes of a string the scan handed over (empty when null).
///
/// # Safety
/// `s` is null or a live Redis string; the slice lives as long as it.
unsafe fn scanned<'b>(s: *mut raw::RedisModuleString) -> Option<&'b [u8]> {
    if s.is_null() {
        return None;
    }
    let mut len = 0usize;
    let p = raw::RedisModule_StringPtrLen.unwrap()(s, &mut len);
    (!p.is_null()).then(|| std::slice::from_raw_parts(p as *const u8, len))
}

impl Key {
    /// Calls `f` with each member of a Set (each field of a Hash) until it
    /// returns false; returns false when stopped early. Uses
    /// `RedisModule_ScanKey`, so no reply is built: reading a set of a
    /// million members through `ctx.call("SMEMBERS")` costs several times
    /// more.
    pub fn scan(&self, mut f: impl FnMut(&[u8]) -> bool) -> bool {
        if self.ptr.is_null() || !matches!(self.kind(), KeyType::Set | KeyType::Hash) {
            return true;
        }
        self.scan_while(|field, _| f(unsafe { scanned(field) }.unwrap_or(&[])))
    }

    /// Calls `f` with each field and value of a Hash until it returns
    /// false; returns false when stopped early. Like [`Key::scan`], no
    /// reply is built.
    pub fn scan_pairs(&self, mut f: impl FnMut(&[u8], &[u8]) -> bool) -> bool {
        if self.ptr.is_null() || self.kind() != KeyType::Hash {
            return true;
        }
        self.scan_while(|field, value| {
            let (field, value) = unsafe { (scanned(field), scanned(value)) };
            f(field.unwrap_or(&[]), value.unwrap_or(&[]))
        })
    }

    /// Scans the whole key (open, not null), calling `f` with each field
    /// (not null) and value until it returns false; returns false when
    /// stopped early.
    fn scan_while(
        &self,
        mut f: impl FnMut(*mut raw::RedisModuleString, *mut raw::RedisModuleString) -> bool,
    ) -> bool {
        let mut go = true;
        let mut scan = ZScan::new();
        while go
            && scan.each(self, &mut |field, value| {
                if go && !field.is_null() {
                    go = f(field, value);
                }
            })
        {}
        go
    }

    /// Calls `f` with each member `SSCAN key 0 COUNT count` would return,
    /// in the same order, and returns true when that is the whole Set (the
    /// cursor came back to 0). It follows SSCAN's own loop: one table step
    /// at a time until `count` members are read or `10 × count` more steps
    /// were taken; a small Set (intset) is read whole in one step, as SSCAN
    /// does. `RedisModule_ScanKey` builds no reply, so this costs a fraction
    /// of `SSCAN` through `RedisModule_Call`.
    pub fn scan_first(&self, count: usize, mut f: impl FnMut(&[u8])) -> bool {
        if self.ptr.is_null() || self.kind() != KeyType::Set {
            return true;
        }
        let mut seen = 0usize;
        let mut steps = 0usize;
        let mut scan = ZScan::new();
        loop {
            let more = scan.each(self, &mut |field, _| {
                if field.is_null() {
                    return;
                }
                if let Some(member) = unsafe { scanned(field) } {
                    f(member);
                }
                seen += 1;
            });
            steps += 1;
            if !more {
                break true;
            }
            if steps > count.saturating_mul(10) || seen >= count {
                break false;
            }
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
        if key.ptr.is_null() || key.kind() != KeyType::ZSet {
            return false;
        }
        self.each(key, &mut |field, value| {
            if field.is_null() || value.is_null() {
                return;
            }
            // The strings belong to the scan: retain them for the caller.
            unsafe {
                raw::RedisModule_RetainString.unwrap()(ptr::null_mut(), field);
                raw::RedisModule_RetainString.unwrap()(ptr::null_mut(), value);
            }
            f(
                RedisString::from_redis_module_string(ptr::null_mut(), field),
                RedisString::from_redis_module_string(ptr::null_mut(), value),
            );
        })
    }

    /// Runs one `RedisModule_ScanKey` step of an open key (not null) and
    /// calls `f` with each element; returns true while elements remain.
    /// The one trampoline of every scan.
    fn each(&mut self, key: &Key, mut f: Each) -> bool {
        unsafe extern "C" fn each(
            _key: *mut raw::RedisModuleKey,
            field: *mut raw::RedisModuleString,
            value: *mut raw::RedisModuleString,
            privdata: *mut std::os::raw::c_void,
        ) {
            let f = &mut *(privdata as *mut Each);
            f(field, value);
        }
        unsafe {
            raw::RedisModule_ScanKey.unwrap()(
                key.ptr,
                self.cursor,
                Some(each),
                &mut f as *mut Each as *mut std::os::raw::c_void,
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
