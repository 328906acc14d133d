//! Replies written straight through the reply API, one element at a time:
//! no reply value is built and dropped (the crate's generic reply costs
//! several hundred instructions more per element on a hot path). A handler
//! that replies this way returns [`RedisValue::NoReply`].
//!
//! [`RedisValue::NoReply`]: redis_module::RedisValue::NoReply
//!
//! While a write with `IDEM token` runs, each function also writes what it
//! sends into the reply being captured (src/idem_token/): one thread-local
//! load per call otherwise.

use std::os::raw::{c_char, c_long, c_longlong};

use redis_module::{raw, Context, RedisString};

/// Starts an array of `len` elements.
#[inline]
pub fn array(ctx: &Context, len: usize) {
    if crate::idem_token::capturing() {
        crate::idem_token::capture(|e| e.array(len));
    }
    unsafe { raw::RedisModule_ReplyWithArray.unwrap()(ctx.ctx, len as c_long) };
}

/// Starts a map of `len` pairs: a RESP3 map, or in RESP2 the flat array
/// of twice the length.
#[inline]
pub fn map(ctx: &Context, len: usize) {
    if crate::idem_token::capturing() {
        crate::idem_token::capture(|e| e.map(len));
    }
    raw::reply_with_map(ctx.ctx, len as c_long);
}

/// Replies an integer.
#[inline]
pub fn int(ctx: &Context, v: i64) {
    if crate::idem_token::capturing() {
        crate::idem_token::capture(|e| e.int(v));
    }
    unsafe { raw::RedisModule_ReplyWithLongLong.unwrap()(ctx.ctx, v as c_longlong) };
}

/// Replies the integers `values` as an array.
#[inline]
pub fn ints(ctx: &Context, values: &[i64]) {
    array(ctx, values.len());
    for &v in values {
        int(ctx, v);
    }
}

/// Replies a bulk string with the bytes of `v`.
#[inline]
pub fn bytes(ctx: &Context, v: &[u8]) {
    if crate::idem_token::capturing() {
        crate::idem_token::capture(|e| e.bulk(v));
    }
    unsafe {
        raw::RedisModule_ReplyWithStringBuffer.unwrap()(
            ctx.ctx,
            v.as_ptr() as *const c_char,
            v.len(),
        )
    };
}

/// Replies a Redis string as it is (no copy on our side).
#[inline]
pub fn string(ctx: &Context, s: &RedisString) {
    if crate::idem_token::capturing() {
        crate::idem_token::capture(|e| e.bulk(s.as_slice()));
    }
    unsafe { raw::RedisModule_ReplyWithString.unwrap()(ctx.ctx, s.inner) };
}
