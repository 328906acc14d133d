//! `RedisModule_Call` for what the key API does not cover (modules have
//! no Set API; ranks and ranges by rank): one wrapper that passes Redis
//! strings without copying them, the Set commands built on it, and one
//! parser of `WITHSCORES` replies.

use std::ffi::CStr;

use redis_module::{raw, Context, RedisError, RedisString, RedisValue};

use crate::error;

/// A Redis string passed to a call (or a replicated command) as it is: the
/// client's own argument or a name made once, never a copy.
pub type Arg = *mut raw::RedisModuleString;

/// A reply of `RedisModule_Call`, freed on drop.
pub struct Reply(*mut raw::RedisModuleCallReply);

impl Drop for Reply {
    fn drop(&mut self) {
        if !self.0.is_null() {
            raw::free_call_reply(self.0);
        }
    }
}

/// Calls `cmd` with arguments that are Redis strings already (the client's
/// own, or key names made once): no argument is copied. An error reply
/// (`WRONGTYPE`) becomes the command's error.
#[inline]
pub fn call(ctx: &Context, cmd: &CStr, args: &[Arg]) -> Result<Reply, RedisError> {
    let p = unsafe {
        raw::RedisModule_Call.unwrap()(
            ctx.ctx,
            cmd.as_ptr(),
            c"v".as_ptr(),
            args.as_ptr(),
            args.len(),
        )
    };
    checked(p)
}

/// Calls `cmd a b` with two Redis strings through the variadic `"ss"`
/// format: RedisModule_Call then sizes its argument vector once, where the
/// `"v"` format reallocates it (about 300 instructions). Returns the
/// integer reply.
#[inline]
pub fn call2(
    ctx: &Context,
    cmd: &CStr,
    a: &RedisString,
    b: &RedisString,
) -> Result<i64, RedisError> {
    let p = unsafe {
        raw::RedisModule_Call.unwrap()(ctx.ctx, cmd.as_ptr(), c"ss".as_ptr(), a.inner, b.inner)
    };
    Ok(checked(p)?.integer())
}

/// Takes ownership of a call's reply; a missing reply is an internal
/// error, an error reply the command's error.
#[inline]
fn checked(p: *mut raw::RedisModuleCallReply) -> Result<Reply, RedisError> {
    if p.is_null() {
        return Err(RedisError::Str(error::INTERNAL));
    }
    let reply = Reply(p);
    if raw::call_reply_type(p) == raw::ReplyType::Error {
        return Err(RedisError::String(
            String::from_utf8_lossy(Reply::str_at(p)).into_owned(),
        ));
    }
    Ok(reply)
}

impl Reply {
    /// The reply as an integer.
    pub fn integer(&self) -> i64 {
        raw::call_reply_integer(self.0)
    }

    /// The number of elements of an array reply.
    pub fn len(&self) -> usize {
        raw::call_reply_length(self.0)
    }

    /// True when an array reply has no elements.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The integer element `i` of an array reply.
    pub fn integer_at(&self, i: usize) -> i64 {
        raw::call_reply_integer(self.at(i))
    }

    fn at(&self, i: usize) -> *mut raw::RedisModuleCallReply {
        raw::call_reply_array_element(self.0, i)
    }

    fn str_at<'a>(p: *mut raw::RedisModuleCallReply) -> &'a [u8] {
        let mut len = 0;
        let s = raw::call_reply_string_ptr(p, &mut len);
        if s.is_null() {
            return &[];
        }
        unsafe { std::slice::from_raw_parts(s as *const u8, len) }
    }
}

// ---- Sets (modules have no Set API) ----

/// The reply of `SSCAN`, read in place (no copy of the members).
pub struct Scan(Reply);

impl Scan {
    /// The cursor to continue from (`0` when the scan is complete).
    pub fn cursor(&self) -> &[u8] {
        Reply::str_at(self.0.at(0))
    }

    /// The members this step returned.
    pub fn members(&self) -> impl Iterator<Item = &[u8]> {
        let items = self.0.at(1);
        (0..raw::call_reply_length(items))
            .map(move |i| Reply::str_at(raw::call_reply_array_element(items, i)))
    }
}

/// `SSCAN set cursor COUNT n`.
pub fn sscan(
    ctx: &Context,
    set: &RedisString,
    cursor: &[u8],
    count: u64,
) -> Result<Scan, RedisError> {
    let cur = RedisString::create_from_slice(ctx.ctx, cursor);
    let kw = RedisString::create_from_slice(ctx.ctx, b"COUNT");
    let n = RedisString::create_from_slice(ctx.ctx, itoa::Buffer::new().format(count).as_bytes());
    let r = call(ctx, c"SSCAN", &[set.inner, cur.inner, kw.inner, n.inner])?;
    if r.len() != 2 {
        return Err(RedisError::Str(error::INTERNAL));
    }
    Ok(Scan(r))
}

/// `SISMEMBER set user`.
pub fn is_member(ctx: &Context, set: &RedisString, user: &RedisString) -> Result<bool, RedisError> {
    Ok(call2(ctx, c"SISMEMBER", set, user)? == 1)
}

/// `SMISMEMBER set users…` in batches; returns one flag per user.
pub fn are_members(
    ctx: &Context,
    set: &RedisString,
    users: &[Arg],
) -> Result<Vec<bool>, RedisError> {
    let mut out = Vec::with_capacity(users.len());
    let mut a = Vec::with_capacity(users.len().min(1000) + 1);
    for batch in users.chunks(1000) {
        a.clear();
        a.push(set.inner);
        a.extend_from_slice(batch);
        let r = call(ctx, c"SMISMEMBER", &a)?;
        out.extend((0..r.len()).map(|i| r.integer_at(i) == 1));
    }
    Ok(out)
}

// ---- ranges by rank ----

/// Returns `ZREVRANGE key start stop WITHSCORES` as (member, score) pairs.
pub fn zrevrange_withscores(
    ctx: &Context,
    key: &[u8],
    start: i64,
    stop: i64,
) -> Result<Vec<(Vec<u8>, f64)>, RedisError> {
    let (start, stop) = (start.to_string(), stop.to_string());
    let reply = ctx.call(
        "ZREVRANGE",
        &[key, start.as_bytes(), stop.as_bytes(), b"WITHSCORES"][..],
    )?;
    Ok(score_pairs(reply))
}

/// Reads a `WITHSCORES` reply (`[member, score, …]`) as (member, score)
/// pairs; a score that is not a number reads as NaN, a reply that is not
/// an array as no pairs.
pub fn score_pairs(reply: RedisValue) -> Vec<(Vec<u8>, f64)> {
    let RedisValue::Array(items) = reply else {
        return Vec::new();
    };
    let bytes = |v: RedisValue| -> Vec<u8> {
        match v {
            RedisValue::SimpleString(s) | RedisValue::BulkString(s) => s.into_bytes(),
            RedisValue::StringBuffer(b) => b,
            RedisValue::Integer(i) => i.to_string().into_bytes(),
            RedisValue::Float(f) => f.to_string().into_bytes(),
            _ => Vec::new(),
        }
    };
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(m), Some(s)) = (it.next(), it.next()) {
        let score = std::str::from_utf8(&bytes(s))
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or(f64::NAN);
        out.push((bytes(m), score));
    }
    out
}
