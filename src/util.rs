//! Small helpers every family uses: the clock, `NOW`, cluster hash tags,
//! keyspace events and replies.

use redis_module::{Context, ContextFlags, NotifyEvent, RedisError, RedisString, RedisValue};

use crate::error;

/// Returns the server clock in unix milliseconds.
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as i64)
        .unwrap_or(0)
}

/// Returns true when `key` has a non-empty `{hash tag}` (Redis Cluster rules).
pub fn has_hash_tag(key: &[u8]) -> bool {
    if let Some(open) = key.iter().position(|&c| c == b'{') {
        if let Some(close) = key[open + 1..].iter().position(|&c| c == b'}') {
            return close > 0;
        }
    }
    false
}

/// Fails with `ERR <family>: base key needs a {hash tag} in cluster mode`
/// when the server runs in cluster mode and `base` has no hash tag, since
/// its derived keys would then land in other slots.
pub fn require_hash_tag(ctx: &Context, family: &str, base: &[u8]) -> Result<(), RedisError> {
    if !has_hash_tag(base) && cluster_mode(ctx) {
        return Err(error::family(
            family,
            "base key needs a {hash tag} in cluster mode",
        ));
    }
    Ok(())
}

/// Returns true when the server runs in cluster mode. The mode is fixed
/// for the life of the process (`cluster-enabled` cannot change at run
/// time), so it is read once: `RM_GetContextFlags` computes a dozen flags,
/// among them the memory state, on every call.
pub fn cluster_mode(ctx: &Context) -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    static MODE: AtomicU8 = AtomicU8::new(0); // 0 unknown, 1 standalone, 2 cluster
    match MODE.load(Ordering::Relaxed) {
        1 => false,
        2 => true,
        _ => {
            let cluster = ctx.get_flags().contains(ContextFlags::CLUSTER);
            MODE.store(if cluster { 2 } else { 1 }, Ordering::Relaxed);
            cluster
        }
    }
}

/// Raises the keyspace event `hotpath.<family>.<event>` (class "module").
pub fn notify(ctx: &Context, event: &str, key: &[u8]) {
    if !module_events_on() {
        return;
    }
    let k = RedisString::create_from_slice(ctx.ctx, key);
    ctx.notify_keyspace_event(NotifyEvent::MODULE, event, &k);
}

/// Returns true when `notify-keyspace-events` has the module class (`d`)
/// on: otherwise a module event reaches no client, and building the key's
/// Redis string for it would be wasted work on every write.
fn module_events_on() -> bool {
    match unsafe { redis_module::raw::RedisModule_GetNotifyKeyspaceEvents } {
        Some(get) => {
            let on = unsafe { get() };
            on & redis_module::raw::REDISMODULE_NOTIFY_MODULE != 0
        }
        None => true,
    }
}

/// Returns a bulk-string reply of raw bytes.
pub fn bulk(bytes: impl Into<Vec<u8>>) -> RedisValue {
    RedisValue::StringBuffer(bytes.into())
}

/// Returns a flat array reply.
pub fn array(items: Vec<RedisValue>) -> RedisValue {
    RedisValue::Array(items)
}

/// Raises the keyspace event `event` (class "module") for a key the client
/// sent, with the event name a C string constant: the crate's
/// `notify_keyspace_event` allocates a C string for the name on each call.
pub fn notify_static(ctx: &Context, event: &std::ffi::CStr, key: &RedisString) {
    if let Some(notify) = unsafe { redis_module::raw::RedisModule_NotifyKeyspaceEvent } {
        unsafe {
            notify(
                ctx.ctx,
                redis_module::raw::REDISMODULE_NOTIFY_MODULE as std::os::raw::c_int,
                event.as_ptr(),
                key.inner,
            )
        };
    }
}

/// Returns true when the calling client speaks RESP3 (it sent `HELLO 3`).
/// Asked only by commands whose reply differs between the protocols.
pub fn resp3(ctx: &Context) -> bool {
    match unsafe { redis_module::raw::RedisModule_GetContextFlags } {
        Some(flags) => {
            let f = unsafe { flags(ctx.ctx) } as u32;
            f & redis_module::raw::REDISMODULE_CTX_FLAGS_RESP3 != 0
        }
        None => false,
    }
}

/// Groups a flat reply `[a1, b1, …, a2, b2, …]` into rows of `width`:
/// in RESP3 an array of `width`-element arrays (the way `ZRANGE …
/// WITHSCORES` answers a client that sent `HELLO 3`), in RESP2 the flat
/// array as it is.
pub fn rows(ctx: &Context, flat: Vec<RedisValue>, width: usize) -> RedisValue {
    if !resp3(ctx) || width < 2 {
        return RedisValue::Array(flat);
    }
    let mut out = Vec::with_capacity(flat.len() / width);
    let mut it = flat.into_iter();
    loop {
        let row: Vec<RedisValue> = it.by_ref().take(width).collect();
        if row.is_empty() {
            break;
        }
        out.push(RedisValue::Array(row));
    }
    RedisValue::Array(out)
}

/// Sends a bulk-string map key.
fn reply_key(ctx: &Context, name: &[u8]) {
    unsafe {
        redis_module::raw::RedisModule_ReplyWithStringBuffer.unwrap()(
            ctx.ctx,
            name.as_ptr().cast(),
            name.len(),
        );
    }
}

/// Replies a field/value map given as a flat list `[field, value, …]`
/// (the way HGETALL answers): a RESP3 map to a client that sent `HELLO 3`,
/// the same flat array, in the same order, in RESP2 (the reply API's map
/// falls back to an array of twice the length). Returns
/// [`RedisValue::NoReply`]: the reply is sent, so return it as the
/// handler's result (`Ok(util::map(ctx, items))`).
pub fn map(ctx: &Context, flat: Vec<RedisValue>) -> RedisValue {
    if crate::idem_token::capturing() {
        crate::idem_token::capture(|e| e.map(flat.len() / 2));
        flat.iter().for_each(crate::idem_token::capture_value);
    }
    redis_module::raw::reply_with_map(ctx.ctx, (flat.len() / 2) as std::os::raw::c_long);
    for v in flat {
        ctx.reply(Ok(v));
    }
    RedisValue::NoReply
}

/// Replies a record of named fields: in RESP3 a map `name → value`; in
/// RESP2 the values alone, in order (the positional array such commands
/// answer, e.g. `[points, rank, achieved_ms]`). Returns
/// [`RedisValue::NoReply`] like [`map`].
pub fn record(ctx: &Context, names: &[&str], values: Vec<RedisValue>) -> RedisValue {
    debug_assert_eq!(names.len(), values.len());
    if crate::idem_token::capturing() {
        // A record, replayed in the protocol of the client that retries.
        crate::idem_token::capture(|e| e.record(values.len()));
        for (n, v) in names.iter().zip(&values) {
            crate::idem_token::capture(|e| e.bulk(n.as_bytes()));
            crate::idem_token::capture_value(v);
        }
    }
    if resp3(ctx) {
        redis_module::raw::reply_with_map(ctx.ctx, values.len() as std::os::raw::c_long);
        for (n, v) in names.iter().zip(values) {
            reply_key(ctx, n.as_bytes());
            ctx.reply(Ok(v));
        }
    } else {
        redis_module::raw::reply_with_array(ctx.ctx, values.len() as std::os::raw::c_long);
        for v in values {
            ctx.reply(Ok(v));
        }
    }
    RedisValue::NoReply
}

/// [`record`] for integer fields, straight to the reply API (no reply
/// values built): for hot paths such as RATE.CHECK.
pub fn record_ints(ctx: &Context, names: &[&str], values: &[i64]) -> RedisValue {
    let n = values.len() as std::os::raw::c_long;
    if crate::idem_token::capturing() {
        crate::idem_token::capture(|e| {
            e.record(values.len());
            for (name, v) in names.iter().zip(values) {
                e.bulk(name.as_bytes());
                e.int(*v);
            }
        });
    }
    let three = resp3(ctx);
    unsafe {
        if three {
            redis_module::raw::reply_with_map(ctx.ctx, n);
        } else {
            redis_module::raw::RedisModule_ReplyWithArray.unwrap()(ctx.ctx, n);
        }
        for (name, v) in names.iter().zip(values) {
            if three {
                reply_key(ctx, name.as_bytes());
            }
            redis_module::raw::RedisModule_ReplyWithLongLong.unwrap()(ctx.ctx, *v);
        }
    }
    RedisValue::NoReply
}
