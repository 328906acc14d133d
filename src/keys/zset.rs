//! Sorted sets: scores, adds, removals, ranges and lazy walks.

use std::os::raw::c_int;

use redis_module::{raw, RedisString};

use super::{rstr, Key, KeyType};

impl Key {
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
        if count == 0 {
            return out;
        }
        self.zrange_each(min, false, max, desc, offset, |e, score| {
            let s = RedisString::from_redis_module_string(self.ctx, e);
            out.push((s.as_slice().to_vec(), score));
            out.len() < count
        });
        out
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
        if count == 0 {
            return out;
        }
        self.zrange_each(min, false, max, false, offset, |e, score| {
            out.push((RedisString::from_redis_module_string(self.ctx, e), score));
            out.len() < count
        });
        out
    }

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

    /// Walks the members with scores in `[min, max]` (`min_ex`: excluding
    /// `min`), ascending or descending, while `f` returns true; each member
    /// is the Redis string the set holds (no copy).
    pub fn zwalk(
        &self,
        min: f64,
        min_ex: bool,
        max: f64,
        desc: bool,
        mut f: impl FnMut(RedisString, f64) -> bool,
    ) {
        self.zrange_each(min, min_ex, max, desc, 0, |e, score| {
            f(RedisString::from_redis_module_string(self.ctx, e), score)
        });
    }

    /// The one range loop of a Sorted Set: walks the members with scores
    /// in `[min, max]` (`min_ex`: excluding `min`) in the given direction,
    /// passes over the first `skip` without reading them, and calls `f`
    /// with each next member (the string the range returned) and its score
    /// while `f` returns true. Nothing when the key is not a Sorted Set.
    #[inline]
    fn zrange_each(
        &self,
        min: f64,
        min_ex: bool,
        max: f64,
        desc: bool,
        skip: usize,
        mut f: impl FnMut(*mut raw::RedisModuleString, f64) -> bool,
    ) {
        let k = self.ptr;
        if k.is_null() || self.kind() != KeyType::ZSet {
            return;
        }
        unsafe {
            let start = if desc {
                raw::RedisModule_ZsetLastInScoreRange.unwrap()(k, min, max, min_ex as c_int, 0)
            } else {
                raw::RedisModule_ZsetFirstInScoreRange.unwrap()(k, min, max, min_ex as c_int, 0)
            };
            if start != raw::REDISMODULE_OK as c_int {
                return;
            }
            let mut skipped = 0usize;
            while raw::RedisModule_ZsetRangeEndReached.unwrap()(k) == 0 {
                if skipped < skip {
                    skipped += 1;
                } else {
                    let mut score = 0f64;
                    let e = raw::RedisModule_ZsetRangeCurrentElement.unwrap()(k, &mut score);
                    if !f(e, score) {
                        break;
                    }
                }
                let more = if desc {
                    raw::RedisModule_ZsetRangePrev.unwrap()(k)
                } else {
                    raw::RedisModule_ZsetRangeNext.unwrap()(k)
                };
                if more == 0 {
                    break;
                }
            }
            raw::RedisModule_ZsetRangeStop.unwrap()(k);
        }
    }
}

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
