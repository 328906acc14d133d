//! Hashes: field reads and writes, by bytes, by the client's strings, and
//! by constant names made once.

use std::os::raw::{c_char, c_int};
use std::ptr;

use redis_module::{raw, RedisString};

use super::{rstr, Key, KeyType};

/// `REDISMODULE_HASH_DELETE`: as a value, deletes the field. It is the
/// pointer value 1, not a real string.
#[allow(clippy::manual_dangling_ptr)]
const HASH_DELETE: *mut raw::RedisModuleString = 1usize as *mut raw::RedisModuleString;

impl Key {
    /// One `RedisModule_HashSet` call for one field (the caller marks the
    /// key as changed): every hash write goes through here.
    #[inline]
    fn hash_set(
        &self,
        flags: u32,
        field: *mut raw::RedisModuleString,
        value: *mut raw::RedisModuleString,
    ) -> c_int {
        unsafe {
            raw::RedisModule_HashSet.unwrap()(
                self.ptr,
                flags as c_int,
                field,
                value,
                ptr::null::<c_char>(),
            )
        }
    }

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
        let rc = self.hash_set(flags, f.inner, value);
        let conditional = flags & raw::REDISMODULE_HASH_NX != 0 || value == HASH_DELETE;
        self.touch_if(!conditional || rc > 0);
        rc
    }

    /// Sets a field; returns true if the field is new.
    pub fn hset(&self, field: &[u8], value: &[u8]) -> bool {
        let existed = self.hget(field).is_some();
        with_value(self.ctx, value, |v| {
            self.hash_set_raw(raw::REDISMODULE_HASH_NONE, field, v)
        });
        !existed
    }

    /// Sets a field without checking whether it existed (one lookup).
    pub fn hput(&self, field: &[u8], value: &[u8]) {
        with_value(self.ctx, value, |v| {
            self.hash_set_raw(raw::REDISMODULE_HASH_NONE, field, v)
        });
    }

    /// Sets a field only if it is absent; returns true if it was set.
    pub fn hset_nx(&self, field: &[u8], value: &[u8]) -> bool {
        let flags = raw::REDISMODULE_HASH_NX | raw::REDISMODULE_HASH_COUNT_ALL;
        with_value(self.ctx, value, |v| self.hash_set_raw(flags, field, v)) > 0
    }

    /// Deletes a field; returns true if it was there.
    pub fn hdel(&self, field: &[u8]) -> bool {
        if self.kind() != KeyType::Hash {
            return false;
        }
        self.hash_set_raw(raw::REDISMODULE_HASH_NONE, field, HASH_DELETE) > 0
    }

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

    /// Reads a field the client sent and a field with a constant name in
    /// one `HashGet` call (one call's fixed cost instead of two); `None`
    /// for a missing field (or a key that is not a hash).
    pub fn hget_arg_and_field(
        &self,
        field: &RedisString,
        other: &Field,
    ) -> (Option<RedisString>, Option<RedisString>) {
        let mut a: *mut raw::RedisModuleString = ptr::null_mut();
        let mut b: *mut raw::RedisModuleString = ptr::null_mut();
        if self.kind() == KeyType::Hash {
            unsafe {
                raw::RedisModule_HashGet.unwrap()(
                    self.ptr,
                    raw::REDISMODULE_HASH_NONE as c_int,
                    field.inner,
                    &mut a as *mut *mut raw::RedisModuleString,
                    other.string(),
                    &mut b as *mut *mut raw::RedisModuleString,
                    ptr::null::<c_char>(),
                )
            };
        }
        let wrap = |p: *mut raw::RedisModuleString| {
            (!p.is_null()).then(|| RedisString::from_redis_module_string(self.ctx, p))
        };
        (wrap(a), wrap(b))
    }

    /// Sets a field only if it is absent, field and value given as Redis
    /// strings (no copies); returns true if it was set.
    pub fn hset_nx_arg(&self, field: &RedisString, value: &RedisString) -> bool {
        let flags = raw::REDISMODULE_HASH_NX | raw::REDISMODULE_HASH_COUNT_ALL;
        self.touch_if(self.hash_set(flags, field.inner, value.inner) > 0)
    }

    /// Sets a field, field and value given as Redis strings (no copies);
    /// for a caller that has just found the field absent, so that the NX
    /// check's second lookup is not paid.
    pub fn hset_arg(&self, field: &RedisString, value: &RedisString) {
        self.hash_set(raw::REDISMODULE_HASH_NONE, field.inner, value.inner);
        self.touch();
    }

    /// Sets a hash field the client sent to `value` (no copy of the field;
    /// the value goes through a reused string, see [`with_value`]).
    pub fn hput_arg(&self, field: &RedisString, value: &[u8]) {
        with_value(self.ctx, value, |v| {
            self.hash_set(raw::REDISMODULE_HASH_NONE, field.inner, v)
        });
        self.touch();
    }

    /// Deletes a hash field the client sent; returns true if it was there.
    pub fn hdel_arg(&self, field: &RedisString) -> bool {
        if self.kind() != KeyType::Hash {
            return false;
        }
        let n = self.hash_set(raw::REDISMODULE_HASH_NONE, field.inner, HASH_DELETE);
        self.touch_if(n > 0)
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
        self.hash_set(raw::REDISMODULE_HASH_NONE, field.string(), value.inner);
        self.touch();
    }

    /// Sets a field the client sent to `value`, only if it is absent;
    /// returns true if it was set.
    pub fn hset_nx_field_arg(&self, field: &RedisString, value: &[u8]) -> bool {
        let flags = raw::REDISMODULE_HASH_NX | raw::REDISMODULE_HASH_COUNT_ALL;
        self.touch_if(with_value(self.ctx, value, |v| self.hash_set(flags, field.inner, v)) > 0)
    }

    /// Reads four hash fields in one `HashGet` call, the names given as C
    /// strings (`HASH_CFIELDS`); `None` for a missing field.
    pub fn hget_cnames(&self, names: [&std::ffi::CStr; 4]) -> [Option<RedisString>; 4] {
        let mut out: [*mut raw::RedisModuleString; 4] = [ptr::null_mut(); 4];
        if let Some(get) = unsafe { raw::RedisModule_HashGet } {
            let [o0, o1, o2, o3] = &mut out;
            unsafe {
                get(
                    self.ptr,
                    raw::REDISMODULE_HASH_CFIELDS as c_int,
                    names[0].as_ptr(),
                    o0 as *mut _,
                    names[1].as_ptr(),
                    o1 as *mut _,
                    names[2].as_ptr(),
                    o2 as *mut _,
                    names[3].as_ptr(),
                    o3 as *mut _,
                    ptr::null::<c_char>(),
                );
            }
        }
        out.map(|p| (!p.is_null()).then(|| RedisString::from_redis_module_string(self.ctx, p)))
    }
}

/// A hash field for [`Key::hget_arg`]: a string the client sent, or a
/// constant field name.
pub enum HashField<'a> {
    Arg(&'a RedisString),
    Name(&'a std::ffi::CStr),
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

// ---- values written from bytes: one reused Redis string per length ----

/// The longest value written through a reused string; a longer one gets a
/// string of its own per write (its copy into the hash costs more than
/// the string then).
const REUSED_MAX: usize = 128;

thread_local! {
    /// One string per value length (index = length), made on first use
    /// with a NULL context (never freed automatically) and rewritten in
    /// place for each write of that length; main thread only, like every
    /// command.
    static VALUES: std::cell::RefCell<Vec<*mut raw::RedisModuleString>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Runs `f` (one `RedisModule_HashSet` call) on a Redis string holding
/// `value`, without creating and freeing a string per write (about 345
/// instructions): a string of the value's length, owned by the module
/// alone, is rewritten in place.
///
/// Safe because `RM_HashSet` never keeps the value object: it passes the
/// value's bytes to `hashTypeSet` with `HASH_SET_COPY`, which copies them
/// (`lpAppend`/`lpReplace` into a listpack, `sdsdup` into a hashtable
/// entry), and never takes a reference to the object (Redis 7.0
/// `module.c`/`t_hash.c`, Valkey 8 and 9). So the string's reference count
/// stays 1 (the module's), no key, reply or replication stream ever holds
/// it, and rewriting its bytes between writes changes nothing Redis sees;
/// the length never changes (one string per length), so its header stays
/// right. Integration tests write fields of one length through it and read
/// every earlier one back, on both servers (`hash_value_reuse`).
fn with_value<R>(
    ctx: *mut raw::RedisModuleCtx,
    value: &[u8],
    f: impl FnOnce(*mut raw::RedisModuleString) -> R,
) -> R {
    if value.len() > REUSED_MAX {
        let v = rstr(ctx, value);
        return f(v.inner);
    }
    VALUES.with(|slots| {
        // `f` runs with the table borrowed; should it ever come back here,
        // that write makes its own string.
        let Ok(mut slots) = slots.try_borrow_mut() else {
            let v = rstr(ctx, value);
            return f(v.inner);
        };
        if slots.is_empty() {
            slots.resize(REUSED_MAX + 1, ptr::null_mut());
        }
        let slot = &mut slots[value.len()];
        if slot.is_null() {
            // A NULL context: the string is the module's for the process's
            // life; made with the value, so nothing to rewrite this time.
            *slot = unsafe {
                raw::RedisModule_CreateString.unwrap()(
                    ptr::null_mut(),
                    value.as_ptr().cast::<c_char>(),
                    value.len(),
                )
            };
        } else {
            let mut len = 0usize;
            let bytes = unsafe { raw::RedisModule_StringPtrLen.unwrap()(*slot, &mut len) };
            if len != value.len() || bytes.is_null() {
                let v = rstr(ctx, value);
                return f(v.inner);
            }
            // SAFETY: the string is the module's alone (reference count 1,
            // see above) and `len` bytes long; its bytes are rewritten with
            // as many.
            unsafe { ptr::copy_nonoverlapping(value.as_ptr(), bytes as *mut u8, len) };
        }
        f(*slot)
    })
}
