//! Lists: pushes and pops.

use std::os::raw::c_int;

use redis_module::{raw, RedisString};

use super::{rstr, Key, KeyType};

impl Key {
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
}
