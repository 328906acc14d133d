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

    /// Returns the element at the head (`LINDEX key 0`) without removing
    /// it: `None` when the key is not a list or is empty. A command reads
    /// the element it will pop, checks it, and pops only once every check
    /// passed.
    pub fn head_string(&self) -> Option<RedisString> {
        if self.kind() != KeyType::List {
            return None;
        }
        let p = unsafe { raw::RedisModule_ListGet.unwrap()(self.ptr, 0) };
        (!p.is_null()).then(|| RedisString::from_redis_module_string(self.ctx, p))
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
