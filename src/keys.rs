//! A small safe wrapper over the raw key API: sorted sets, hashes, strings,
//! lists, expiry. `redis-module` 2.0.8 has no safe sorted-set API and hides
//! the raw pointer of its writable keys, so every family opens keys here.
//!
//! A [`Key`] closes itself on drop. Reads on a missing key answer "empty"
//! instead of touching a null handle.
//!
//! Modified-key signals: the module sets `NO_IMPLICIT_SIGNAL_MODIFIED`, so
//! opening a key for writing no longer tells `WATCH` and client-side
//! caching that it changed; every method here that changes a key marks it,
//! and the drop signals only marked keys. A refused vote, a denied rate
//! check or a repeated like thus leaves a client's `WATCH` intact.

use std::cell::Cell;
use std::os::raw::{c_char, c_int};
use std::ptr;

use redis_module::{raw, Context, RedisError, RedisString};

use crate::error;

/// The Redis type a key holds, as the families care about it.
pub use redis_module::KeyType;

/// An open key; closed on drop.
pub struct Key {
    ctx: *mut raw::RedisModuleCtx,
    ptr: *mut raw::RedisModuleKey,
    name: RedisString,
    modified: Cell<bool>,
}

/// A key name built on the stack when short (no allocation on hot paths).
pub type Name = smallvec::SmallVec<[u8; 96]>;

/// Returns `B:<suffix>`, the name of a family's derived key.
pub fn derived(base: &[u8], suffix: &str) -> Vec<u8> {
    derived_name(base, suffix).to_vec()
}

/// Returns `B:<suffix>` on the stack when short.
pub fn derived_name(base: &[u8], suffix: &str) -> Name {
    let mut v = Name::with_capacity(base.len() + 1 + suffix.len());
    v.extend_from_slice(base);
    v.push(b':');
    v.extend_from_slice(suffix.as_bytes());
    v
}

fn rstr(ctx: *mut raw::RedisModuleCtx, bytes: &[u8]) -> RedisString {
    RedisString::create_from_slice(ctx, bytes)
}

impl Key {
    /// Opens `name` for reading, or for reading and writing.
    pub fn open(ctx: &Context, name: &[u8], write: bool) -> Key {
        let s = rstr(ctx.ctx, name);
        let mode = if write {
            raw::KeyMode::READ | raw::KeyMode::WRITE
        } else {
            raw::KeyMode::READ
        };
        let ptr = raw::open_key(ctx.ctx, s.inner, mode);
        Key {
            ctx: ctx.ctx,
            ptr,
            name: s,
            modified: Cell::new(false),
        }
    }

    /// Records that the key changed, for the modified-key signal on drop.
    fn touch(&self) {
        self.modified.set(true);
    }

    /// Returns `changed` after recording it.
    fn touch_if(&self, changed: bool) -> bool {
        if changed {
            self.touch();
        }
        changed
    }

    /// Opens the derived key `base:suffix`.
    pub fn derived(ctx: &Context, base: &[u8], suffix: &str, write: bool) -> Key {
        Key::open(ctx, &derived_name(base, suffix), write)
    }

    /// Returns the Redis type held by the key (`Empty` when missing).
    pub fn kind(&self) -> KeyType {
        if self.ptr.is_null() {
            return KeyType::Empty;
        }
        unsafe { raw::RedisModule_KeyType.unwrap()(self.ptr) }.into()
    }

    /// Returns true if the key exists.
    pub fn exists(&self) -> bool {
        self.kind() != KeyType::Empty
    }

    /// Returns whether the key exists, or `WRONGTYPE` when it holds another
    /// type than `want`.
    pub fn check(&self, want: KeyType) -> Result<bool, RedisError> {
        match self.kind() {
            KeyType::Empty => Ok(false),
            k if k == want => Ok(true),
            _ => Err(error::wrongtype()),
        }
    }

    /// Returns the length of the value (members, fields, bytes, elements).
    pub fn len(&self) -> usize {
        if self.ptr.is_null() {
            return 0;
        }
        unsafe { raw::RedisModule_ValueLength.unwrap()(self.ptr) }
    }

    /// Returns true when the key is missing or empty.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Deletes the key.
    pub fn delete(&self) {
        if !self.ptr.is_null() && self.exists() {
            unsafe { raw::RedisModule_DeleteKey.unwrap()(self.ptr) };
            self.touch();
        }
    }

    /// Removes the key's expiry (no-op when missing or persistent).
    pub fn persist(&self) {
        if self.exists() && self.expire_ms() >= 0 {
            unsafe {
                raw::RedisModule_SetExpire.unwrap()(self.ptr, raw::REDISMODULE_NO_EXPIRE.into())
            };
            self.touch();
        }
    }

    /// Sets the key to expire in `ms` milliseconds (no-op when missing).
    pub fn set_expire_ms(&self, ms: i64) {
        if self.exists() && ms > 0 {
            unsafe { raw::RedisModule_SetExpire.unwrap()(self.ptr, ms) };
            self.touch();
        }
    }

    /// Returns the remaining time to live in ms, or -1 when none.
    pub fn expire_ms(&self) -> i64 {
        if !self.exists() {
            return -1;
        }
        unsafe { raw::RedisModule_GetExpire.unwrap()(self.ptr) }
    }

    // ---- sorted sets ----

    /// Returns a member's score.
    pub fn zscore(&self, member: &[u8]) -> Option<f64> {
        if self.kind() != KeyType::ZSet {
            return None;
        }
        let m = rstr(self.ctx, member);
        let mut score = 0f64;
        let rc = unsafe { raw::RedisModule_ZsetScore.unwrap()(self.ptr, m.inner, &mut score) };
        (rc == raw::REDISMODULE_OK as c_int).then_some(score)
    }

    /// Sets a member's score (creating the set).
    pub fn zadd(&self, member: &[u8], score: f64) {
        let m = rstr(self.ctx, member);
        let mut flags: c_int = 0;
        unsafe { raw::RedisModule_ZsetAdd.unwrap()(self.ptr, score, m.inner, &mut flags) };
        self.touch();
    }

    /// Adds `delta` to a member the client sent (no copy of the member).
    pub fn zincrby_arg(&self, member: &RedisString, delta: f64) -> f64 {
        let mut flags: c_int = 0;
        let mut out = 0f64;
        unsafe {
            raw::RedisModule_ZsetIncrby.unwrap()(
                self.ptr,
                delta,
                member.inner,
                &mut flags,
                &mut out,
            )
        };
        self.touch();
        out
    }

    /// Adds `delta` to a member's score and returns the new score.
    pub fn zincrby(&self, member: &[u8], delta: f64) -> f64 {
        let m = rstr(self.ctx, member);
        let mut flags: c_int = 0;
        let mut out = 0f64;
        unsafe {
            raw::RedisModule_ZsetIncrby.unwrap()(self.ptr, delta, m.inner, &mut flags, &mut out)
        };
        self.touch();
        out
    }

    /// Removes a member; returns true if it was there.
    pub fn zrem(&self, member: &[u8]) -> bool {
        if self.kind() != KeyType::ZSet {
            return false;
        }
        let m = rstr(self.ctx, member);
        let mut deleted: c_int = 0;
        unsafe { raw::RedisModule_ZsetRem.unwrap()(self.ptr, m.inner, &mut deleted) };
        self.touch_if(deleted != 0)
    }

    /// Returns up to `count` members with scores, best (highest) first,
    /// after skipping `offset`: the order of `ZREVRANGE`.
    pub fn zrange_desc(&self, offset: usize, count: usize) -> Vec<(Vec<u8>, f64)> {
        self.zrange(offset, count, true, f64::NEG_INFINITY, f64::INFINITY)
    }

    /// Returns up to `count` members with scores, lowest first (`ZRANGE`).
    pub fn zrange_asc(&self, offset: usize, count: usize) -> Vec<(Vec<u8>, f64)> {
        self.zrange(offset, count, false, f64::NEG_INFINITY, f64::INFINITY)
    }

    /// Returns members with scores in `[min, max]`, in the given direction,
    /// after skipping `offset`, at most `count`.
    pub fn zrange(
        &self,
        offset: usize,
        count: usize,
        desc: bool,
        min: f64,
        max: f64,
    ) -> Vec<(Vec<u8>, f64)> {
        let mut out = Vec::new();
        if self.kind() != KeyType::ZSet || count == 0 {
            return out;
        }
        let f = unsafe {
            if desc {
                raw::RedisModule_ZsetLastInScoreRange.unwrap()(self.ptr, min, max, 0, 0)
            } else {
                raw::RedisModule_ZsetFirstInScoreRange.unwrap()(self.ptr, min, max, 0, 0)
            }
        };
        if f != raw::REDISMODULE_OK as c_int {
            return out;
        }
        let mut skipped = 0usize;
        unsafe {
            while raw::RedisModule_ZsetRangeEndReached.unwrap()(self.ptr) == 0 {
                if skipped < offset {
                    skipped += 1;
                } else {
                    let mut score = 0f64;
                    let e = raw::RedisModule_ZsetRangeCurrentElement.unwrap()(self.ptr, &mut score);
                    let s = RedisString::from_redis_module_string(self.ctx, e);
                    out.push((s.as_slice().to_vec(), score));
                    if out.len() >= count {
                        break;
                    }
                }
                let more = if desc {
                    raw::RedisModule_ZsetRangePrev.unwrap()(self.ptr)
                } else {
                    raw::RedisModule_ZsetRangeNext.unwrap()(self.ptr)
                };
                if more == 0 {
                    break;
                }
            }
            raw::RedisModule_ZsetRangeStop.unwrap()(self.ptr);
        }
        out
    }

    // ---- hashes ----

    /// Returns a field's value.
    pub fn hget(&self, field: &[u8]) -> Option<Vec<u8>> {
        if self.kind() != KeyType::Hash {
            return None;
        }
        let f = rstr(self.ctx, field);
        let mut out: *mut raw::RedisModuleString = ptr::null_mut();
        unsafe {
            raw::RedisModule_HashGet.unwrap()(
                self.ptr,
                raw::REDISMODULE_HASH_NONE as c_int,
                f.inner,
                &mut out as *mut *mut raw::RedisModuleString,
                ptr::null::<c_char>(),
            )
        };
        if out.is_null() {
            return None;
        }
        let s = RedisString::from_redis_module_string(self.ctx, out);
        Some(s.as_slice().to_vec())
    }

    /// Returns a field's value parsed as an integer (None when missing or
    /// not an integer).
    pub fn hget_i64(&self, field: &[u8]) -> Option<i64> {
        self.hget(field)
            .and_then(|v| crate::args::parse_i64_plain(&v))
    }

    /// Sets (or, with the DELETE marker, deletes) a field. The count the
    /// API returns covers inserted fields only under `COUNT_ALL`, so a plain
    /// set always counts as a change; NX and deletes count when they did
    /// something.
    fn hash_set_raw(&self, flags: u32, field: &[u8], value: *mut raw::RedisModuleString) -> c_int {
        let f = rstr(self.ctx, field);
        let rc = unsafe {
            raw::RedisModule_HashSet.unwrap()(
                self.ptr,
                flags as c_int,
                f.inner,
                value,
                ptr::null::<c_char>(),
            )
        };
        let conditional = flags & raw::REDISMODULE_HASH_NX != 0 || value as usize == 1;
        self.touch_if(!conditional || rc > 0);
        rc
    }

    /// Sets a field; returns true if the field is new.
    pub fn hset(&self, field: &[u8], value: &[u8]) -> bool {
        let v = rstr(self.ctx, value);
        let existed = self.hget(field).is_some();
        self.hash_set_raw(raw::REDISMODULE_HASH_NONE, field, v.inner);
        !existed
    }

    /// Sets a field without checking whether it existed (one lookup).
    pub fn hput(&self, field: &[u8], value: &[u8]) {
        let v = rstr(self.ctx, value);
        self.hash_set_raw(raw::REDISMODULE_HASH_NONE, field, v.inner);
    }

    /// Sets a field only if it is absent; returns true if it was set.
    pub fn hset_nx(&self, field: &[u8], value: &[u8]) -> bool {
        let v = rstr(self.ctx, value);
        self.hash_set_raw(
            raw::REDISMODULE_HASH_NX | raw::REDISMODULE_HASH_COUNT_ALL,
            field,
            v.inner,
        ) > 0
    }

    /// Deletes a field; returns true if it was there.
    pub fn hdel(&self, field: &[u8]) -> bool {
        if self.kind() != KeyType::Hash {
            return false;
        }
        // REDISMODULE_HASH_DELETE is the pointer value 1, not a real string.
        #[allow(clippy::manual_dangling_ptr)]
        let del = 1usize as *mut raw::RedisModuleString; // REDISMODULE_HASH_DELETE
        self.hash_set_raw(raw::REDISMODULE_HASH_NONE, field, del) > 0
    }

    // ---- strings ----

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

    // ---- lists ----

    /// Pushes at the tail (`RPUSH`).
    pub fn rpush(&self, value: &[u8]) {
        let v = rstr(self.ctx, value);
        unsafe {
            raw::RedisModule_ListPush.unwrap()(
                self.ptr,
                raw::REDISMODULE_LIST_TAIL as c_int,
                v.inner,
            )
        };
        self.touch();
    }

    /// Pops from the head (`LPOP`).
    pub fn lpop(&self) -> Option<Vec<u8>> {
        if self.kind() != KeyType::List {
            return None;
        }
        let p = unsafe {
            raw::RedisModule_ListPop.unwrap()(self.ptr, raw::REDISMODULE_LIST_HEAD as c_int)
        };
        if p.is_null() {
            return None;
        }
        self.touch();
        let s = RedisString::from_redis_module_string(self.ctx, p);
        Some(s.as_slice().to_vec())
    }
}

/// Sets an absolute expiry (unix ms) on a key that has none, through the
/// open key itself: a `PEXPIREAT` through `ctx.call` while the key is open
/// can reallocate its value under the handle (Valkey 8+ embeds the expiry
/// in the object) and crash the server when the key is closed. An instant
/// already past deletes the key at once, as `PEXPIREAT` does. The command
/// that calls this replicates itself with the same instant, so replicas and
/// the AOF reach the same state.
pub fn expire_at_if_unset(key: &Key, at_ms: i64) {
    if at_ms > 0 && key.exists() && key.expire_ms() < 0 {
        if at_ms <= crate::util::now_ms() {
            key.delete();
        } else {
            key.set_abs_expire_ms(at_ms);
        }
    }
}

impl Drop for Key {
    fn drop(&mut self) {
        if self.modified.get() {
            // No unwrap in a drop: a panic here could abort the server.
            if let Some(signal) = unsafe { raw::RedisModule_SignalModifiedKey } {
                unsafe { signal(self.ctx, self.name.inner) };
            }
        }
        if !self.ptr.is_null() {
            raw::close_key(self.ptr);
        }
    }
}

// ---- absolute expiry (added for RANK: every key of a board shares one
// expiry instant, and replicas must receive that instant, not a relative TTL) ----
impl Key {
    /// Returns the key's expiry as a unix-ms instant, or None when the key
    /// is missing or has no expiry.
    pub fn abs_expire_ms(&self) -> Option<i64> {
        if !self.exists() {
            return None;
        }
        let at = match unsafe { raw::RedisModule_GetAbsExpire } {
            Some(get) => unsafe { get(self.ptr) },
            None => {
                let rel = self.expire_ms();
                if rel < 0 {
                    return None;
                }
                crate::util::now_ms() + rel
            }
        };
        (at >= 0).then_some(at)
    }

    /// Sets the key to expire at the unix-ms instant `at` (no-op when the
    /// key is missing).
    pub fn set_abs_expire_ms(&self, at: i64) {
        if !self.exists() {
            return;
        }
        match unsafe { raw::RedisModule_SetAbsExpire } {
            Some(set) => unsafe {
                set(self.ptr, at);
                self.touch();
            },
            None => self.set_expire_ms((at - crate::util::now_ms()).max(1)),
        }
    }
}

// ---- without copies: Redis strings in, Redis strings out (REDPACKET.GRAB) ----

impl Key {
    /// Returns a hash field's value; the field is a string the client sent
    /// and a constant field name is a C string (`c"expires"`), so no field
    /// is copied into a new Redis string.
    pub fn hget_arg(&self, field: HashField) -> Option<RedisString> {
        if self.kind() != KeyType::Hash {
            return None;
        }
        let mut out: *mut raw::RedisModuleString = ptr::null_mut();
        let (flags, f) = match field {
            HashField::Arg(s) => (
                raw::REDISMODULE_HASH_NONE,
                s.inner as *const std::ffi::c_void,
            ),
            HashField::Name(c) => (
                raw::REDISMODULE_HASH_CFIELDS,
                c.as_ptr() as *const std::ffi::c_void,
            ),
        };
        unsafe {
            raw::RedisModule_HashGet.unwrap()(
                self.ptr,
                flags as c_int,
                f,
                &mut out as *mut *mut raw::RedisModuleString,
                ptr::null::<c_char>(),
            )
        };
        (!out.is_null()).then(|| RedisString::from_redis_module_string(self.ctx, out))
    }

    /// Sets a field only if it is absent, field and value given as Redis
    /// strings (no copies); returns true if it was set.
    pub fn hset_nx_arg(&self, field: &RedisString, value: &RedisString) -> bool {
        let set = unsafe {
            raw::RedisModule_HashSet.unwrap()(
                self.ptr,
                (raw::REDISMODULE_HASH_NX | raw::REDISMODULE_HASH_COUNT_ALL) as c_int,
                field.inner,
                value.inner,
                ptr::null::<c_char>(),
            ) > 0
        };
        self.touch_if(set)
    }

    /// Sets a field, field and value given as Redis strings (no copies);
    /// for a caller that has just found the field absent, so that the NX
    /// check's second lookup is not paid.
    pub fn hset_arg(&self, field: &RedisString, value: &RedisString) {
        unsafe {
            raw::RedisModule_HashSet.unwrap()(
                self.ptr,
                raw::REDISMODULE_HASH_NONE as c_int,
                field.inner,
                value.inner,
                ptr::null::<c_char>(),
            )
        };
        self.touch();
    }

    /// Pops from the head (`LPOP`) and returns the element as the Redis
    /// string the list gave (no copy).
    pub fn lpop_string(&self) -> Option<RedisString> {
        if self.kind() != KeyType::List {
            return None;
        }
        let p = unsafe {
            raw::RedisModule_ListPop.unwrap()(self.ptr, raw::REDISMODULE_LIST_HEAD as c_int)
        };
        self.touch_if(!p.is_null());
        (!p.is_null()).then(|| RedisString::from_redis_module_string(self.ctx, p))
    }
}

/// A hash field for [`Key::hget_arg`]: a string the client sent, or a
/// constant field name.
pub enum HashField<'a> {
    Arg(&'a RedisString),
    Name(&'a std::ffi::CStr),
}

impl Key {
    /// Returns the string's bytes for reading in place, without copying
    /// (empty when the key is missing or not a string). A bitmap read on
    /// the hot path must not copy megabytes.
    pub fn bytes(&self) -> &[u8] {
        if self.kind() != KeyType::String {
            return &[];
        }
        let mut len = 0usize;
        let p = raw::string_dma(self.ptr, &mut len, raw::KeyMode::READ);
        if p.is_null() || len == 0 {
            return &[];
        }
        unsafe { std::slice::from_raw_parts(p as *const u8, len) }
    }

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
}

// ---- added for LOCK (semaphore holders): a hash scan with values ----
impl Key {
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
}

// ---- added for LOCK and DELAYQ: keys, fields and members the client sent,
// used without copies, and strings rewritten in place ----
impl Key {
    /// Opens the key the client named; the name is shared, not copied (a
    /// copy costs an allocation and a string object per call).
    pub fn open_arg(ctx: &Context, name: &RedisString, write: bool) -> Key {
        let mode = if write {
            raw::KeyMode::READ | raw::KeyMode::WRITE
        } else {
            raw::KeyMode::READ
        };
        let ptr = raw::open_key(ctx.ctx, name.inner, mode);
        Key {
            ctx: ctx.ctx,
            ptr,
            // Retains the client's string (a reference count, no copy).
            name: RedisString::new(std::ptr::NonNull::new(ctx.ctx), name.inner),
            modified: Cell::new(false),
        }
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

    /// Returns the raw key handle, for module API calls this wrapper does
    /// not cover. A caller that changes the key through it must call
    /// [`Key::mark_modified`].
    pub fn raw(&self) -> *mut raw::RedisModuleKey {
        self.ptr
    }

    /// Records a change made through [`Key::raw`], so that the key is
    /// signalled as modified when it is closed.
    pub fn mark_modified(&self) {
        self.touch();
    }

    /// Returns the key's name as the Redis string it was opened with.
    pub fn name(&self) -> &RedisString {
        &self.name
    }

    /// Sets a hash field the client sent to `value` (no copy of the field).
    pub fn hput_arg(&self, field: &RedisString, value: &[u8]) {
        let v = rstr(self.ctx, value);
        unsafe {
            raw::RedisModule_HashSet.unwrap()(
                self.ptr,
                raw::REDISMODULE_HASH_NONE as c_int,
                field.inner,
                v.inner,
                ptr::null::<c_char>(),
            )
        };
        self.touch();
    }

    /// Deletes a hash field the client sent; returns true if it was there.
    pub fn hdel_arg(&self, field: &RedisString) -> bool {
        if self.kind() != KeyType::Hash {
            return false;
        }
        #[allow(clippy::manual_dangling_ptr)]
        let del = 1usize as *mut raw::RedisModuleString; // REDISMODULE_HASH_DELETE
        let n = unsafe {
            raw::RedisModule_HashSet.unwrap()(
                self.ptr,
                raw::REDISMODULE_HASH_NONE as c_int,
                field.inner,
                del,
                ptr::null::<c_char>(),
            )
        };
        self.touch_if(n > 0)
    }

    /// Sets the score of a member the client sent (creating the set).
    pub fn zadd_arg(&self, member: &RedisString, score: f64) {
        let mut flags: c_int = 0;
        unsafe { raw::RedisModule_ZsetAdd.unwrap()(self.ptr, score, member.inner, &mut flags) };
        self.touch();
    }

    /// Removes a member the client sent; returns true if it was there.
    pub fn zrem_arg(&self, member: &RedisString) -> bool {
        if self.kind() != KeyType::ZSet {
            return false;
        }
        let mut deleted: c_int = 0;
        unsafe { raw::RedisModule_ZsetRem.unwrap()(self.ptr, member.inner, &mut deleted) };
        self.touch_if(deleted != 0)
    }

    /// Returns the score of a member the client sent.
    pub fn zscore_arg(&self, member: &RedisString) -> Option<f64> {
        if self.kind() != KeyType::ZSet {
            return None;
        }
        let mut score = 0f64;
        let rc = unsafe { raw::RedisModule_ZsetScore.unwrap()(self.ptr, member.inner, &mut score) };
        (rc == raw::REDISMODULE_OK as c_int).then_some(score)
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
}

impl Key {
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
}

impl Key {
    /// Returns up to `count` members with scores in `[min, max]`, lowest
    /// first, after skipping `offset`, as the Redis strings the set holds
    /// (no copy into Rust buffers: they are passed on to other key calls
    /// and replies as they are).
    pub fn zrange_strings(
        &self,
        offset: usize,
        count: usize,
        min: f64,
        max: f64,
    ) -> Vec<(RedisString, f64)> {
        let mut out = Vec::new();
        if self.kind() != KeyType::ZSet || count == 0 {
            return out;
        }
        let first =
            unsafe { raw::RedisModule_ZsetFirstInScoreRange.unwrap()(self.ptr, min, max, 0, 0) };
        if first != raw::REDISMODULE_OK as c_int {
            return out;
        }
        let mut skipped = 0usize;
        unsafe {
            while raw::RedisModule_ZsetRangeEndReached.unwrap()(self.ptr) == 0 {
                if skipped < offset {
                    skipped += 1;
                } else {
                    let mut score = 0f64;
                    let e = raw::RedisModule_ZsetRangeCurrentElement.unwrap()(self.ptr, &mut score);
                    out.push((RedisString::from_redis_module_string(self.ctx, e), score));
                    if out.len() >= count {
                        break;
                    }
                }
                if raw::RedisModule_ZsetRangeNext.unwrap()(self.ptr) == 0 {
                    break;
                }
            }
            raw::RedisModule_ZsetRangeStop.unwrap()(self.ptr);
        }
        out
    }
}

// ---- a string resized in place (added for LIKE: bitmap chunks are
// created and cut back through the open key, keeping its expiry) ----
impl Key {
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

// ---- a bounded read of a Set from its start (added for LIKE's promotion
// check: the members `SSCAN key 0 COUNT n` returns, without a reply) ----
impl Key {
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

// ---- added for LUCKYBAG and REDPACKET: ZADD flags, several hash fields in
// one call with names made once, a pop put back, UNLINK, a lazy walk down a
// sorted set ----

/// The input and outcome flags of [`Key::zadd_flags_arg`].
pub mod zadd {
    use std::os::raw::c_int;

    use redis_module::raw;

    /// Input: only add a new member.
    pub const NX: c_int = raw::REDISMODULE_ZADD_NX as c_int;
    /// Input: only update an existing member.
    pub const XX: c_int = raw::REDISMODULE_ZADD_XX as c_int;
    /// Output: the member was added.
    pub const ADDED: c_int = raw::REDISMODULE_ZADD_ADDED as c_int;
    /// Output: an existing member's score changed.
    pub const UPDATED: c_int = raw::REDISMODULE_ZADD_UPDATED as c_int;
}

impl Key {
    /// Sets a member's score with `ZADD`'s `NX`/`XX` input flags (see
    /// [`zadd`]) and returns the output flags: [`zadd::ADDED`],
    /// [`zadd::UPDATED`], or neither when nothing changed. `ZsetAdd` with
    /// `NX` looks the member up once, so it is the dedup and the insert in
    /// one step.
    pub fn zadd_flags_arg(&self, member: &RedisString, score: f64, flags: c_int) -> c_int {
        let mut f: c_int = flags;
        unsafe { raw::RedisModule_ZsetAdd.unwrap()(self.ptr, score, member.inner, &mut f) };
        self.touch_if(f & (zadd::ADDED | zadd::UPDATED) != 0);
        f
    }

    /// Reads several hash fields in one `HashGet` call; `None` for a
    /// missing field (or a key that is not a hash). Takes up to 6 fields.
    pub fn hget_fields<const N: usize>(&self, fields: [&Field; N]) -> [Option<RedisString>; N] {
        const { assert!(N >= 1 && N <= 6) };
        let mut out: [*mut raw::RedisModuleString; N] = [ptr::null_mut(); N];
        if self.kind() == KeyType::Hash {
            let get = unsafe { raw::RedisModule_HashGet.unwrap() };
            let flags = raw::REDISMODULE_HASH_NONE as c_int;
            let f = |i: usize| fields[i.min(N - 1)].string();
            let o = out.as_mut_ptr();
            let v = |i: usize| unsafe { o.add(i.min(N - 1)) };
            let end = ptr::null::<c_char>();
            unsafe {
                match N {
                    1 => get(self.ptr, flags, f(0), v(0), end),
                    2 => get(self.ptr, flags, f(0), v(0), f(1), v(1), end),
                    3 => get(self.ptr, flags, f(0), v(0), f(1), v(1), f(2), v(2), end),
                    4 => get(
                        self.ptr,
                        flags,
                        f(0),
                        v(0),
                        f(1),
                        v(1),
                        f(2),
                        v(2),
                        f(3),
                        v(3),
                        end,
                    ),
                    5 => get(
                        self.ptr,
                        flags,
                        f(0),
                        v(0),
                        f(1),
                        v(1),
                        f(2),
                        v(2),
                        f(3),
                        v(3),
                        f(4),
                        v(4),
                        end,
                    ),
                    _ => get(
                        self.ptr,
                        flags,
                        f(0),
                        v(0),
                        f(1),
                        v(1),
                        f(2),
                        v(2),
                        f(3),
                        v(3),
                        f(4),
                        v(4),
                        f(5),
                        v(5),
                        end,
                    ),
                };
            }
        }
        out.map(|p| (!p.is_null()).then(|| RedisString::from_redis_module_string(self.ctx, p)))
    }

    /// Sets a hash field with a constant name.
    pub fn hput_field(&self, field: &Field, value: &RedisString) {
        unsafe {
            raw::RedisModule_HashSet.unwrap()(
                self.ptr,
                raw::REDISMODULE_HASH_NONE as c_int,
                field.string(),
                value.inner,
                ptr::null::<c_char>(),
            )
        };
        self.touch();
    }

    /// Pushes a Redis string at the head (`LPUSH`), e.g. to put back an
    /// element just popped.
    pub fn push_head_arg(&self, value: &RedisString) {
        unsafe {
            raw::RedisModule_ListPush.unwrap()(
                self.ptr,
                raw::REDISMODULE_LIST_HEAD as c_int,
                value.inner,
            )
        };
        self.touch();
    }

    /// Deletes the key, freeing a large value in the background as
    /// `UNLINK` does.
    pub fn unlink(&self) {
        if !self.ptr.is_null() && self.exists() {
            unsafe { raw::RedisModule_UnlinkKey.unwrap()(self.ptr) };
            self.touch();
        }
    }

    /// Starts a walk over the members with scores in `[min, max]`, from the
    /// highest (`ZREVRANGEBYSCORE` order); false when there is none. Read
    /// with [`Key::zwalk_current`], move with [`Key::zwalk_prev`], and end
    /// with [`Key::zwalk_stop`]. Each open key has its own walk, so several
    /// sorted sets can be merged lazily.
    pub fn zwalk_desc(&self, min: f64, max: f64) -> bool {
        if self.kind() != KeyType::ZSet {
            return false;
        }
        let rc =
            unsafe { raw::RedisModule_ZsetLastInScoreRange.unwrap()(self.ptr, min, max, 0, 0) };
        rc == raw::REDISMODULE_OK as c_int
            && unsafe { raw::RedisModule_ZsetRangeEndReached.unwrap()(self.ptr) } == 0
    }

    /// Returns the walk's current member and score.
    pub fn zwalk_current(&self) -> Option<(RedisString, f64)> {
        let mut score = 0f64;
        let e = unsafe { raw::RedisModule_ZsetRangeCurrentElement.unwrap()(self.ptr, &mut score) };
        (!e.is_null()).then(|| (RedisString::from_redis_module_string(self.ctx, e), score))
    }

    /// Moves the walk to the next lower member; false at the end.
    pub fn zwalk_prev(&self) -> bool {
        unsafe {
            raw::RedisModule_ZsetRangePrev.unwrap()(self.ptr) != 0
                && raw::RedisModule_ZsetRangeEndReached.unwrap()(self.ptr) == 0
        }
    }

    /// Ends a walk.
    pub fn zwalk_stop(&self) {
        if !self.ptr.is_null() {
            unsafe { raw::RedisModule_ZsetRangeStop.unwrap()(self.ptr) };
        }
    }
}

/// A constant hash field name, made into a Redis string once and reused by
/// every call: a field name given as a C string (`HASH_CFIELDS`) costs two
/// allocations and two frees on every lookup. The string is created on
/// first use, on the main thread (command handlers hold the server lock),
/// and lives as long as the process.
pub struct Field {
    name: &'static std::ffi::CStr,
    string: std::sync::atomic::AtomicPtr<raw::RedisModuleString>,
}

impl Field {
    /// Returns the field `name` (not yet made into a Redis string).
    pub const fn new(name: &'static std::ffi::CStr) -> Field {
        Field {
            name,
            string: std::sync::atomic::AtomicPtr::new(ptr::null_mut()),
        }
    }

    /// Returns the field's name, for error messages.
    pub fn name(&self) -> &'static str {
        self.name.to_str().unwrap_or("?")
    }

    /// Returns the Redis string of the name, made on first use; it lives as
    /// long as the process (e.g. a constant argument to replicate).
    pub fn string(&self) -> *mut raw::RedisModuleString {
        use std::sync::atomic::Ordering;
        let p = self.string.load(Ordering::Relaxed);
        if !p.is_null() {
            return p;
        }
        let bytes = self.name.to_bytes();
        // A NULL context makes a string that is never freed automatically.
        let p = unsafe {
            raw::RedisModule_CreateString.unwrap()(
                ptr::null_mut(),
                bytes.as_ptr().cast::<c_char>(),
                bytes.len(),
            )
        };
        self.string.store(p, Ordering::Relaxed);
        p
    }
}

// ---- (added for POLL) a field the client sent, set only if absent ----
impl Key {
    /// Sets a field the client sent to `value`, only if it is absent;
    /// returns true if it was set.
    pub fn hset_nx_field_arg(&self, field: &RedisString, value: &[u8]) -> bool {
        let v = rstr(self.ctx, value);
        self.hset_nx_arg(field, &v)
    }
}

// ---- a sorted-set scan that can stop and resume later (the slices of
// POLL.SYNC and RANK.MERGE, see slices.rs) ----

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

// ---- derived key names kept between commands: a hot command on the same
// entity (votes on one poll, scores on one board) reuses the names it built
// last time instead of creating and freeing a Redis string per key per call
// (about 500 instructions each) ----

/// A name kept between commands: the base key and the suffix it was built
/// from (the suffix by address and length: callers pass literals), and the
/// immutable Redis string `B:<suffix>`, created without a context so that
/// it outlives the command. Redis only reads it: `RM_OpenKey` takes its own
/// reference for as long as the key is open.
struct KeptName {
    /// The full hash of the name, compared before anything else.
    hash: u64,
    base: Box<[u8]>,
    suffix: &'static str,
    index: Option<u64>,
    name: RedisString,
}

thread_local! {
    /// Recently built names, in pairs of slots chosen by [`name_hash`];
    /// main thread only, like every command.
    static NAMES: std::cell::RefCell<Vec<Option<KeptName>>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// How many recent names are kept (a power of two), in pairs: a name may
/// sit in either slot of its pair, so two names of one command that hash
/// alike do not evict each other on every call.
const NAMES_KEPT: usize = 256;

/// The hash of `B:<suffix>[<index>]` (its top bits choose a pair of
/// slots): a multiplicative hash of
/// the base's length and last eight bytes (entities differ there:
/// `post:1234`, `bag{7}`), the suffix's address and the index; a few
/// instructions, where hashing every byte cost as much as building the
/// name.
fn name_hash(base: &[u8], suffix: &'static str, index: Option<u64>) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    let tail = match base.len() {
        n if n >= 8 => u64::from_le_bytes(base[n - 8..].try_into().unwrap_or_default()),
        _ => base.iter().fold(0u64, |h, &b| (h << 8) | b as u64),
    };
    let mut x = (tail ^ ((base.len() as u64) << 56)).wrapping_mul(K);
    x ^= (suffix.as_ptr() as u64).rotate_left(29)
        ^ index.map_or(0, |i| i.wrapping_add(1).wrapping_mul(0x2545_F491_4F6C_DD1D));
    (x ^ (x >> 32)).wrapping_mul(K)
}

impl Key {
    /// Opens the derived key `base:suffix` with a name kept from a recent
    /// command when one built the same name (a hot command on one entity:
    /// votes on a poll, grabs of a packet, scores on a board), instead of
    /// creating and freeing a Redis string per key per call.
    pub fn derived_hot(ctx: &Context, base: &[u8], suffix: &'static str, write: bool) -> Key {
        Key::derived_hot_at(ctx, base, suffix, None, write)
    }

    /// [`Key::derived_hot`] for `base:<suffix><index>` when `index` is
    /// given (a shard or chunk: `B:cand:3`, `B:bits:12`).
    pub fn derived_hot_at(
        ctx: &Context,
        base: &[u8],
        suffix: &'static str,
        index: Option<u64>,
        write: bool,
    ) -> Key {
        with_kept_name(base, suffix, index, |name| Key::open_arg(ctx, name, write))
    }
}

/// Runs `f` on the kept name `base:<suffix>[<index>]`, building it first
/// when it is not kept.
fn with_kept_name<R>(
    base: &[u8],
    suffix: &'static str,
    index: Option<u64>,
    f: impl FnOnce(&RedisString) -> R,
) -> R {
    let hash = name_hash(base, suffix, index);
    let first = 2 * ((hash >> 57) as usize & (NAMES_KEPT / 2 - 1));
    let build = || {
        let mut name = derived_name(base, suffix);
        if let Some(i) = index {
            name.extend_from_slice(itoa::Buffer::new().format(i).as_bytes());
        }
        RedisString::create_from_slice(ptr::null_mut(), &name)
    };
    NAMES.with(|n| {
        // `f` runs with the table borrowed; should it ever come back here
        // (a server event opening a key), that call builds its own name.
        let Ok(mut n) = n.try_borrow_mut() else {
            return f(&build());
        };
        if n.is_empty() {
            n.resize_with(NAMES_KEPT, || None);
        }
        let is = |e: &Option<KeptName>| {
            matches!(e, Some(k) if k.hash == hash
                && ptr::eq(k.suffix, suffix)
                && k.index == index
                && *k.base == *base)
        };
        // The pair keeps its most recent name first: a hit in the second
        // slot moves forward, a new name goes first and the older one of
        // the pair is dropped.
        if !is(&n[first]) {
            n.swap(first, first + 1);
            if !is(&n[first]) {
                n[first] = None;
            }
        }
        let k = n[first].get_or_insert_with(|| KeptName {
            hash,
            base: base.into(),
            suffix,
            index,
            name: build(),
        });
        f(&k.name)
    })
}
