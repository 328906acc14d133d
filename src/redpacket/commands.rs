//! REDPACKET handlers: parse every argument, validate, open and type-check
//! the packet's keys, apply the model, reply, replicate, notify.

use std::os::raw::c_longlong;

use redis_module::{
    raw, CallOptionsBuilder, CallResult, Context, ContextFlags, NotifyEvent, RedisError,
    RedisResult, RedisString, RedisValue,
};

use super::model::{self, Grab, Meta, Mode};
use super::{
    COUNT_ALREADY, COUNT_CLOSED, COUNT_EMPTY, COUNT_GRABBED, COUNT_REFUNDED_CENTS, COUNT_REFUNDS,
    COUNT_SPLITS, FAMILY,
};
use crate::args::{parse_i64_plain, Cursor};
use crate::config;
use crate::error;
use crate::keys::{derived, HashField, Key, KeyType};
use crate::util;

/// Occurs when SPLIT finds the packet's keys already there.
const EXISTS: &str = "packet already exists";
/// Occurs when a share in `B:pool` is not an integer (the pool was edited
/// by hand); the bad element has been taken off the pool.
const CORRUPT: &str = "pool holds a share that is not an integer";

/// The three keys of one packet, opened and type-checked.
struct Packet {
    meta: Key,
    pool: Key,
    grabbed: Key,
    has_meta: bool,
    has_pool: bool,
    has_grabbed: bool,
}

impl Packet {
    /// Opens `B:meta`, `B:pool` and `B:grabbed`.
    ///
    /// Occurs as `WRONGTYPE` when any of them holds another type than its
    /// own (Hash, List, Hash), before anything is written.
    fn open(ctx: &Context, base: &[u8], write: bool) -> Result<Packet, RedisError> {
        // One buffer for the three names: GRAB opens them on every call.
        let mut name = Vec::with_capacity(base.len() + 8);
        name.extend_from_slice(base);
        name.push(b':');
        let stem = name.len();
        let mut open = |suffix: &[u8]| {
            name.truncate(stem);
            name.extend_from_slice(suffix);
            Key::open(ctx, &name, write)
        };
        let meta = open(b"meta");
        let pool = open(b"pool");
        let grabbed = open(b"grabbed");
        let has_meta = meta.check(KeyType::Hash)?;
        let has_pool = pool.check(KeyType::List)?;
        let has_grabbed = grabbed.check(KeyType::Hash)?;
        Ok(Packet {
            meta,
            pool,
            grabbed,
            has_meta,
            has_pool,
            has_grabbed,
        })
    }

    /// Returns the packet's meta, or `None` when there is no packet.
    fn meta(&self) -> Option<Meta> {
        if !self.has_meta {
            return None;
        }
        let int = |f: &[u8]| self.meta.hget_i64(f).unwrap_or(0);
        Some(Meta {
            total: int(b"total"),
            count: int(b"count"),
            refunded: self.meta.hget(b"state").as_deref() == Some(model::STATE_CLOSED.as_bytes()),
            expires: int(b"expires"),
        })
    }

    /// Returns the fields GRAB needs (refunded and expiry; not the amounts).
    ///
    /// REFUND empties the pool, so a packet that still has shares was not
    /// refunded: `state` is read only once the pool is empty, which saves
    /// the hot path a hash lookup. (The Lua twin decides the same way.)
    fn gate(&self) -> Option<Meta> {
        if !self.has_meta {
            return None;
        }
        let refunded = !self.has_pool
            && self
                .meta
                .hget_arg(HashField::Name(c"state"))
                .is_some_and(|v| v.as_slice() == model::STATE_CLOSED.as_bytes());
        let expires = self.meta.hget_arg(HashField::Name(c"expires"));
        Some(Meta {
            total: 0,
            count: 0,
            refunded,
            expires: expires
                .and_then(|v| parse_i64_plain(v.as_slice()))
                .unwrap_or(0),
        })
    }
}

/// Parses a trailing `[NOW unix-ms]`, the only option of GRAB and INFO.
fn parse_now(cur: &mut Cursor) -> Result<Option<i64>, RedisError> {
    let mut now = None;
    while !cur.done() {
        match cur.next_keyword()?.as_str() {
            "NOW" => now = Some(cur.option_i64(0, model::MAX_TIME_MS)?),
            _ => return Err(error::syntax()),
        }
    }
    Ok(now)
}

fn text(s: &str) -> RedisValue {
    util::bulk(s.as_bytes())
}

/// Returns the bytes of a string reply of `ctx.call`.
fn reply_bytes(v: &RedisValue) -> Option<Vec<u8>> {
    match v {
        RedisValue::SimpleString(s) | RedisValue::BulkString(s) => Some(s.as_bytes().to_vec()),
        RedisValue::StringBuffer(b) => Some(b.clone()),
        RedisValue::BulkRedisString(s) => Some(s.as_slice().to_vec()),
        _ => None,
    }
}

/// Returns the elements of an array reply of `ctx.call` as bytes.
fn call_strings(ctx: &Context, cmd: &str, args: &[&[u8]]) -> Result<Vec<Vec<u8>>, RedisError> {
    match ctx.call(cmd, args)? {
        RedisValue::Array(items) => Ok(items.iter().filter_map(reply_bytes).collect()),
        _ => Ok(Vec::new()),
    }
}

/// Returns `v` as a Redis string, made by Redis directly from the integer
/// (no text formatting on our side: SPLIT makes thousands of them).
fn int_string(ctx: &Context, v: i64) -> RedisString {
    // SAFETY: the function is part of the module API on every supported
    // server; the string it returns is owned by the RedisString, which
    // frees it on drop.
    let p = unsafe { raw::RedisModule_CreateStringFromLongLong.unwrap()(ctx.ctx, v as c_longlong) };
    RedisString::from_redis_module_string(ctx.ctx, p)
}

/// Sets the absolute expiry `at_ms` on `key` through `PEXPIREAT`, whose
/// effect replicates itself: the same `PEXPIREAT`, or, when `at_ms` is
/// already past and the master deletes the key at once, that `DEL` (a
/// replica applying a past `PEXPIREAT` would keep the key instead). Call it
/// after replicating the writes that create the key.
fn pexpireat(ctx: &Context, key: &[u8], at_ms: i64) -> Result<(), RedisError> {
    let at = at_ms.to_string();
    let options = CallOptionsBuilder::new().replicate().build();
    let reply: CallResult = ctx.call_ext("PEXPIREAT", &options, &[key, at.as_bytes()][..]);
    reply
        .map(|_| ())
        .map_err(|e| RedisError::String(e.to_string()))
}

/// REDPACKET.SPLIT B total-cents count [MODE RANDOM|EQUAL] [TTL seconds] [NOW unix-ms]
///
/// Splits the amount once into `B:pool` and records `B:meta`; replies the
/// count. Replicates the shares actually drawn, never the command.
pub fn redpacket_split(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut cur = Cursor::new(args, 4)?;
    let base = cur.next_bytes()?;
    let total = cur.next_i64(i64::MIN, model::MAX_TOTAL)?;
    let count = cur.next_i64(i64::MIN, i64::MAX)?;
    let mut mode = Mode::Random;
    let mut ttl = None;
    let mut now = None;
    while !cur.done() {
        match cur.next_keyword()?.as_str() {
            "MODE" => {
                let name = cur.option_choice(&["RANDOM", "EQUAL"])?;
                mode = Mode::parse(name).ok_or_else(error::syntax)?;
            }
            "TTL" => ttl = Some(cur.option_i64(1, model::MAX_TTL_S)?),
            "NOW" => now = Some(cur.option_i64(0, model::MAX_TIME_MS)?),
            _ => return Err(error::syntax()),
        }
    }
    let now = now.unwrap_or_else(util::now_ms);
    let expires = match ttl {
        Some(t) => model::expires_at(now, t).ok_or_else(error::not_integer)?,
        None => 0,
    };
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let max = config::get(&config::REDPACKET_MAX_COUNT);
    model::validate_split(total, count, max).map_err(|e| error::family(FAMILY, &e.message()))?;

    let packet = Packet::open(ctx, &base, true)?;
    if packet.has_meta || packet.has_pool || packet.has_grabbed {
        return Err(error::family(FAMILY, EXISTS));
    }
    drop(packet);
    let shares = model::split(total, count, mode, &mut rand::thread_rng());

    // One RPUSH of every share: the strings made for it are the very ones
    // replicated, and one call pushes N shares faster than N `ListPush`es.
    let pool_name = derived(&base, "pool");
    let meta_name = derived(&base, "meta");
    let mut rpush: Vec<RedisString> = Vec::with_capacity(shares.len() + 1);
    rpush.push(RedisString::create_from_slice(ctx.ctx, &pool_name));
    rpush.extend(shares.iter().map(|&s| int_string(ctx, s)));
    let rpush: Vec<&RedisString> = rpush.iter().collect();
    ctx.call("RPUSH", rpush.as_slice())?;
    let (total_s, count_s, expires_s) = (total.to_string(), count.to_string(), expires.to_string());
    let hset: [&[u8]; 9] = [
        &meta_name,
        b"total",
        total_s.as_bytes(),
        b"count",
        count_s.as_bytes(),
        b"state",
        model::STATE_OPEN.as_bytes(),
        b"expires",
        expires_s.as_bytes(),
    ];
    let meta = Key::open(ctx, &meta_name, true);
    for pair in hset[1..].chunks(2) {
        meta.hput(pair[0], pair[1]);
    }
    drop(meta);

    // The shares are random: the replicas and the AOF get what was drawn,
    // then the expiry (a packet whose expiry is already past is deleted
    // on the master at once, and that deletion is what replicates).
    ctx.replicate("RPUSH", rpush.as_slice());
    ctx.replicate("HSET", &hset[..]);
    if expires > 0 {
        pexpireat(ctx, &pool_name, expires)?;
        pexpireat(ctx, &meta_name, expires)?;
    }
    util::notify(ctx, "hotpath.redpacket.split", &base);
    COUNT_SPLITS.incr();
    Ok(RedisValue::Integer(count))
}

/// REDPACKET.GRAB B user [NOW unix-ms]
///
/// Replies `[status, cents]`: `OK` and the share just won, `ALREADY` and
/// the share won before, `EMPTY 0`, `CLOSED 0` (refunded or expired),
/// `NOSUCH 0`.
pub fn redpacket_grab(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut cur = Cursor::new(args, 3)?;
    let base_arg = cur.next()?;
    let base = base_arg.as_slice();
    // The user stays the Redis string the client sent: it is looked up and
    // stored without copies.
    let user = cur.next()?;
    let now_arg = parse_now(&mut cur)?;
    util::require_hash_tag(ctx, FAMILY, base)?;

    let packet = Packet::open(ctx, base, true)?;
    let held = if packet.has_meta && packet.has_grabbed {
        packet
            .grabbed
            .hget_arg(HashField::Arg(&user))
            .map(|v| parse_i64_plain(v.as_slice()).unwrap_or(0))
    } else {
        None
    };
    // A user who holds a share is answered without reading the meta.
    let meta = match held {
        Some(_) => packet.has_meta.then_some(Meta::default()),
        None => packet.gate(),
    };
    let expires = meta.map_or(0, |m| m.expires);
    // A grab that reaches a replica or the AOF was decided open by the
    // master (only won shares are propagated), so there it must not consult
    // the local clock, which may be past `expires` by then: the command is
    // replicated verbatim and re-executes to the same result.
    let from_master = ctx
        .get_flags()
        .intersects(ContextFlags::REPLICATED | ContextFlags::LOADING);
    let now = match now_arg {
        _ if from_master => None,
        Some(t) => Some(t),
        None if expires > 0 => Some(util::now_ms()),
        None => None,
    };
    let decided = model::precheck_grab(meta.as_ref(), held, now);
    let outcome = match decided {
        Ok(outcome) => outcome,
        Err(()) => match packet.pool.lpop_string() {
            None => Grab::Empty,
            Some(share) => {
                let Some(cents) = parse_i64_plain(share.as_slice()) else {
                    drop(packet);
                    ctx.replicate_verbatim();
                    return Err(error::family(FAMILY, CORRUPT));
                };
                packet.grabbed.hset_nx_arg(&user, &share);
                let first_grab = !packet.has_grabbed;
                drop(packet);
                ctx.replicate_verbatim();
                if first_grab && expires > 0 {
                    // B:grabbed is born now: it gets the packet's expiry.
                    pexpireat(ctx, &derived(base, "grabbed"), expires)?;
                }
                ctx.notify_keyspace_event(NotifyEvent::MODULE, "hotpath.redpacket.grab", &base_arg);
                Grab::Won(cents)
            }
        },
    };
    match outcome {
        Grab::Won(_) => COUNT_GRABBED.incr(),
        Grab::Already(_) => COUNT_ALREADY.incr(),
        Grab::Empty => COUNT_EMPTY.incr(),
        Grab::Closed => COUNT_CLOSED.incr(),
        Grab::NoSuch => {}
    }
    Ok(RedisValue::Array(vec![
        text(outcome.status()),
        RedisValue::Integer(outcome.cents()),
    ]))
}

/// REDPACKET.INFO B [NOW unix-ms]
///
/// Replies the map `total, count, left_cents, left_count, state, expires`,
/// or an empty array for an unknown packet. `state` is `closed` once
/// refunded or expired at NOW.
pub fn redpacket_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut cur = Cursor::new(args, 2)?;
    let base = cur.next_bytes()?;
    let now = parse_now(&mut cur)?.unwrap_or_else(util::now_ms);
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let packet = Packet::open(ctx, &base, false)?;
    let Some(meta) = packet.meta() else {
        return Ok(util::map(ctx, Vec::new()));
    };
    let left_count = packet.pool.len() as i64;
    let has_pool = packet.has_pool;
    drop(packet);
    let mut left_cents: i128 = 0;
    if has_pool {
        // Summing a List has no low-level API: one LRANGE, off the hot path.
        for share in call_strings(ctx, "LRANGE", &[&derived(&base, "pool"), b"0", b"-1"])? {
            left_cents += i128::from(parse_i64_plain(&share).unwrap_or(0));
        }
    }
    let left_cents = left_cents.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
    Ok(util::map(ctx, vec![
        text("total"),
        RedisValue::Integer(meta.total),
        text("count"),
        RedisValue::Integer(meta.count),
        text("left_cents"),
        RedisValue::Integer(left_cents),
        text("left_count"),
        RedisValue::Integer(left_count),
        text("state"),
        text(meta.state_at(now)),
        text("expires"),
        RedisValue::Integer(meta.expires),
    ]))
}

/// REDPACKET.GRABBED B
///
/// Replies `[user, cents, …]` in `HGETALL B:grabbed` order.
pub fn redpacket_grabbed(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut cur = Cursor::new(args, 2)?;
    let base = cur.next_bytes()?;
    cur.expect_done()?;
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let packet = Packet::open(ctx, &base, false)?;
    let has_grabbed = packet.has_grabbed;
    drop(packet);
    if !has_grabbed {
        return Ok(util::map(ctx, Vec::new()));
    }
    // Hashes have no ordered low-level iteration: HGETALL keeps its order.
    let items = call_strings(ctx, "HGETALL", &[&derived(&base, "grabbed")])?;
    let mut out = Vec::with_capacity(items.len());
    for pair in items.chunks(2) {
        if let [user, cents] = pair {
            out.push(util::bulk(user.clone()));
            out.push(match parse_i64_plain(cents) {
                Some(c) => RedisValue::Integer(c),
                None => util::bulk(cents.clone()),
            });
        }
    }
    Ok(util::map(ctx, out))
}

/// REDPACKET.REFUND B
///
/// Empties `B:pool`, closes the packet and replies the cents returned to
/// the sender: 0 for an unknown or already refunded packet.
pub fn redpacket_refund(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut cur = Cursor::new(args, 2)?;
    let base = cur.next_bytes()?;
    cur.expect_done()?;
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let packet = Packet::open(ctx, &base, true)?;
    let Some(meta) = packet.meta() else {
        return Ok(RedisValue::Integer(0));
    };
    if meta.refunded {
        return Ok(RedisValue::Integer(0));
    }
    let mut left: i128 = 0;
    while let Some(share) = packet.pool.lpop() {
        left += i128::from(parse_i64_plain(&share).unwrap_or(0));
    }
    packet.meta.hput(b"state", model::STATE_CLOSED.as_bytes());
    drop(packet);
    let left = left.clamp(i64::MIN as i128, i64::MAX as i128) as i64;
    ctx.replicate_verbatim();
    util::notify(ctx, "hotpath.redpacket.refund", &base);
    COUNT_REFUNDS.incr();
    COUNT_REFUNDED_CENTS.add(left.max(0) as u64);
    Ok(RedisValue::Integer(left))
}
