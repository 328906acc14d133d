//! Lists: pushes and pops.

use std::os::raw::c_int;

use redis_module::{raw, RedisString};

use super::{rstr, Key, KeyType};

impl Key {
    /// Pushes at the tail (`RPUSH`).
    pub fn rpush(&self, value: &[u8]) {
        let v = rstr(self.ctx, value);
        self.list_push(raw::REDISMODULE_LIST_TAIL, v.inner);
    }

    /// Pops from the head (`LPOP`).
    pub fn lpop(&self) -> Option<Vec<u8>> {
        self.lpop_string().map(|s| s.as_slice().to_vec())
    }

    /// Pops from the head (`LPOP`) and returns the element as the Redis
    /// string the list gave (no copy).
    pub fn lpop_string(&self) -> Option<RedisString> {
        let p = self.pop_head();
        self.touch_if(!p.is_null());
        (!p.is_null()).then(|| RedisString::from_redis_module_string(self.ctx, p))
    }

    /// Puts back at the head the element [`Key::lpop_string`] just took
    /// from this handle (`value`), with the key's expiry `expire_at` when
    /// that pop emptied, and so deleted, the list; then forgets the change,
    /// so the key is not signalled as modified (`WATCH` and client-side
    /// caching see the list as it was). Only right after that pop, on a
    /// handle that changed nothing else.
    ///
    /// A command pops the element it will use and checks it: reading it
    /// first (`RedisModule_ListGet`) would cost every call an iterator and
    /// a second string (about 1,300 instructions a grab), where only a
    /// refused element, which the module never writes, pays for this.
    pub fn unpop_head(&self, value: &RedisString, expire_at: Option<i64>) {
        self.list_push(raw::REDISMODULE_LIST_HEAD, value.inner);
        if let Some(at) = expire_at {
            self.set_abs_expire_ms(at);
        }
        self.modified.set(false);
    }

    /// Pushes a string at the head or the tail (`REDISMODULE_LIST_HEAD`,
    /// `REDISMODULE_LIST_TAIL`).
    #[inline]
    fn list_push(&self, at: isize, value: *mut raw::RedisModuleString) {
        unsafe { raw::RedisModule_ListPush.unwrap()(self.ptr, at as c_int, value) };
        self.touch();
    }

    /// Pops the head of a list: the string the list gave, or null when the
    /// key is not a list or is empty (the caller marks the change).
    #[inline]
    fn pop_head(&self) -> *mut raw::RedisModuleString {
        if self.kind() != KeyType::List {
            return std::ptr::null_mut();
        }
        unsafe { raw::RedisModule_ListPop.unwrap()(self.ptr, raw::REDISMODULE_LIST_HEAD as c_int) }
    }
}
