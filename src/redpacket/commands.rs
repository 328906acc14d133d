//! REDPACKET handlers: parse every argument, validate, open and type-check
//! the packet's keys, read, plan with the model (`plan_split`,
//! `plan_take`, `plan_refund`: what to write, or a refusal with nothing
//! written), apply the plan, replicate, notify, reply. Every error comes
//! before the first write (tests/no_partial_writes.rs).

use redis_module::{
    CallOptionsBuilder, CallResult, Context, ContextFlags, RedisError, RedisResult, RedisString,
    RedisValue,
};

use super::model::{self, Grab, Meta, Mode};
use super::{
    COUNT_ALREADY, COUNT_CLOSED, COUNT_EMPTY, COUNT_GRABBED, COUNT_REFUNDED_CENTS, COUNT_REFUNDS,
    COUNT_SPLITS, FAMILY,
};
use crate::args::Cursor;
use crate::argv::Args;
use crate::config;
use crate::error;
use crate::keys::{derived, derived_name, int_string, Field, HashField, Key, KeyType};
use crate::reply;
use crate::util;

/// Occurs when SPLIT finds the packet's keys already there.
const EXISTS: &str = "packet already exists";

// `B:meta` fields, made into Redis strings once.
static F_TOTAL: Field = Field::new(c"total");
static F_COUNT: Field = Field::new(c"count");
static F_STATE: Field = Field::new(c"state");
static F_EXPIRES: Field = Field::new(c"expires");
static F_LEFT: Field = Field::new(c"left_cents");

/// Returns `ERR redpacket: corrupt data in 'B:meta' field '<field>'`.
fn corrupt_meta(base: &[u8], field: &Field) -> RedisError {
    error::corrupt(FAMILY, &derived_name(base, "meta"), Some(field.name()))
}

/// Parses a `B:meta` value read by [`Key::hget_fields`]; a missing field or
/// a value SPLIT never writes is a corrupt-data error naming the field.
fn meta_value<T>(
    base: &[u8],
    field: &Field,
    v: &Option<RedisString>,
    parse: fn(&[u8]) -> Option<T>,
) -> Result<T, RedisError> {
    v.as_ref()
        .and_then(|v| parse(v.as_slice()))
        .ok_or_else(|| corrupt_meta(base, field))
}

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
        // The names are kept between commands (keys/mod.rs): GRAB opens all
        // three on every call, and a hot packet is grabbed many times.
        let meta = Key::derived_hot(ctx, base, "meta", write);
        let pool = Key::derived_hot(ctx, base, "pool", write);
        let grabbed = Key::derived_hot(ctx, base, "grabbed", write);
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

    /// Returns the packet's meta (every field checked), or `None` when
    /// there is no packet.
    fn meta(&self, base: &[u8]) -> Result<Option<Meta>, RedisError> {
        if !self.has_meta {
            return Ok(None);
        }
        let [total, count, state, expires, left] = self
            .meta
            .hget_fields([&F_TOTAL, &F_COUNT, &F_STATE, &F_EXPIRES, &F_LEFT]);
        let total = meta_value(base, &F_TOTAL, &total, model::parse::total)?;
        let count = meta_value(base, &F_COUNT, &count, model::parse::count)?;
        let refunded = meta_value(base, &F_STATE, &state, model::parse::refunded)?;
        let expires = meta_value(base, &F_EXPIRES, &expires, model::parse::expires)?;
        let left_cents = meta_value(base, &F_LEFT, &left, model::parse::cents)?;
        if left_cents > total {
            return Err(corrupt_meta(base, &F_LEFT));
        }
        Ok(Some(Meta {
            total,
            count,
            refunded,
            expires,
            left_cents,
        }))
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
    let max = config::get(&config::REDPACKET_MAX_COUNT).min(model::MAX_COUNT_LIMIT);
    // The arguments are refused before the keys are type-checked.
    model::validate_split(total, count, max).map_err(|e| error::family(FAMILY, &e.message()))?;
    let packet = Packet::open(ctx, &base, true)?;
    let exists = packet.has_meta || packet.has_pool || packet.has_grabbed;
    drop(packet);
    let plan = model::plan_split(
        total,
        count,
        max,
        mode,
        expires,
        exists,
        &mut rand::thread_rng(),
    )
    .map_err(refusal(&base))?;
    apply_split(ctx, &base, &plan)?;
    util::notify(ctx, "hotpath.redpacket.split", &base);
    COUNT_SPLITS.incr();
    Ok(RedisValue::Integer(count))
}

/// Returns the error of a refused plan for the packet `base`.
fn refusal(base: &[u8]) -> impl Fn(model::Refusal) -> RedisError + '_ {
    move |r| match r {
        model::Refusal::Split(e) => error::family(FAMILY, &e.message()),
        model::Refusal::Exists => error::family(FAMILY, EXISTS),
        model::Refusal::CorruptPool => error::corrupt(FAMILY, &derived_name(base, "pool"), None),
        model::Refusal::CorruptLeft => corrupt_meta(base, &F_LEFT),
    }
}

/// Writes a SPLIT plan and replicates what was written.
fn apply_split(ctx: &Context, base: &[u8], plan: &model::SplitPlan) -> Result<(), RedisError> {
    // One RPUSH of every share: the strings made for it are the very ones
    // replicated, and one call pushes N shares faster than N `ListPush`es.
    let pool_name = derived(base, "pool");
    let meta_name = derived(base, "meta");
    let mut rpush: Vec<RedisString> = Vec::with_capacity(plan.shares.len() + 1);
    rpush.push(RedisString::create_from_slice(ctx.ctx, &pool_name));
    rpush.extend(plan.shares.iter().map(|&s| int_string(ctx, s)));
    let rpush: Vec<&RedisString> = rpush.iter().collect();
    ctx.call("RPUSH", rpush.as_slice())?;
    let mut hset: Vec<&[u8]> = Vec::with_capacity(1 + 2 * plan.meta.len());
    hset.push(&meta_name);
    for (f, v) in &plan.meta {
        hset.push(f.as_bytes());
        hset.push(v.as_bytes());
    }
    let meta = Key::open(ctx, &meta_name, true);
    for pair in hset[1..].chunks(2) {
        meta.hput(pair[0], pair[1]);
    }
    drop(meta);
    // The shares are random: the replicas and the AOF get what was drawn,
    // then the expiry (a packet whose expiry is already past is deleted
    // on the master at once, and that deletion is what replicates).
    ctx.replicate("RPUSH", rpush.as_slice());
    ctx.replicate("HSET", hset.as_slice());
    if plan.expires > 0 {
        pexpireat(ctx, &pool_name, plan.expires)?;
        pexpireat(ctx, &meta_name, plan.expires)?;
    }
    Ok(())
}

/// Reads what GRAB needs of `B:meta`: the packet's expiry, whether it was
/// refunded, and `left_cents` as stored (parsed only once the packet is
/// found open).
///
/// SPLIT gives `B:meta` the absolute expiry `expires`: while the key has
/// one, that is the instant, read without a hash lookup. Without one, the
/// field is read: 0 for a packet without TTL, or the instant of a packet
/// whose keys were made persistent (to refund it after it closed), which
/// stays closed. REFUND empties the pool, so a packet that still has
/// shares was not refunded: `state` is read only once the pool is empty.
fn grab_meta(packet: &Packet, base: &[u8]) -> Result<(i64, bool, Option<RedisString>), RedisError> {
    let key_expiry = packet.meta.abs_expire_ms();
    let (field_expiry, left, state) = match (key_expiry, packet.has_pool) {
        (Some(_), true) => {
            let [l] = packet.meta.hget_fields([&F_LEFT]);
            (None, l, None)
        }
        (Some(_), false) => {
            let [l, st] = packet.meta.hget_fields([&F_LEFT, &F_STATE]);
            (None, l, Some(st))
        }
        (None, true) => {
            let [e, l] = packet.meta.hget_fields([&F_EXPIRES, &F_LEFT]);
            (Some(e), l, None)
        }
        (None, false) => {
            let [e, l, st] = packet.meta.hget_fields([&F_EXPIRES, &F_LEFT, &F_STATE]);
            (Some(e), l, Some(st))
        }
    };
    let expires = match (key_expiry, field_expiry) {
        (Some(at), _) => at,
        (None, e) => meta_value(base, &F_EXPIRES, &e.flatten(), model::parse::expires)?,
    };
    let refunded = match state {
        Some(st) => meta_value(base, &F_STATE, &st, model::parse::refunded)?,
        None => false,
    };
    Ok((expires, refunded, left))
}

/// REDPACKET.GRAB B user [NOW unix-ms]
///
/// Replies `[status, cents]`: `OK` and the share just won, `ALREADY` and
/// the share won before, `EMPTY 0`, `CLOSED 0` (refunded or expired),
/// `NOSUCH 0`.
///
/// Cost: three keys opened and type-checked, one lookup of the user in
/// `B:grabbed`, one `HashGet` of `expires` and `left_cents`, one pop (the
/// share checked once popped), one insert, one write of `left_cents`; the
/// user and the share go to Redis as the strings they are. Replicated
/// verbatim (see the module docs).
pub fn redpacket_grab(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(3)?;
    // The arguments are read where Redis holds them (argv.rs): the user is
    // looked up and stored as the string the client sent, without copies.
    let base_arg = c.string(1);
    let base = base_arg.as_slice();
    let user = c.string(2);
    c.skip(2)?;
    let mut now_arg = None;
    while !c.done() {
        if !c.keyword()?.eq_ignore_ascii_case(b"NOW") {
            return Err(error::syntax());
        }
        now_arg = Some(c.option_i64(0, model::MAX_TIME_MS)?);
    }
    if user.as_slice().is_empty() {
        return Err(error::empty_user(FAMILY));
    }
    util::require_hash_tag(ctx, FAMILY, base)?;

    let packet = Packet::open(ctx, base, true)?;
    if !packet.has_meta {
        return reply_grab(ctx, Grab::NoSuch);
    }
    if packet.has_grabbed {
        if let Some(held) = packet.grabbed.hget_arg(HashField::Arg(user)) {
            let cents = model::parse::share(held.as_slice()).ok_or_else(|| {
                error::corrupt(
                    FAMILY,
                    &derived_name(base, "grabbed"),
                    Some(&error::key_text(user.as_slice())),
                )
            })?;
            COUNT_ALREADY.incr();
            return reply_grab(ctx, Grab::Already(cents));
        }
    }
    let (expires, refunded, left) = grab_meta(&packet, base)?;
    // A grab that reaches a replica or the AOF was decided open by the
    // master (only won shares are propagated), so there it must not consult
    // the local clock, which may be past `expires` by then: the command is
    // replicated verbatim and re-executes to the same result. Without an
    // expiry there is no clock to consult.
    let now = if expires == 0
        || ctx
            .get_flags()
            .intersects(ContextFlags::REPLICATED | ContextFlags::LOADING)
    {
        None
    } else {
        Some(now_arg.unwrap_or_else(util::now_ms))
    };
    let meta = Meta {
        refunded,
        expires,
        ..Meta::default()
    };
    if let Ok(outcome) = model::precheck_grab(Some(&meta), None, now) {
        if outcome == Grab::Closed {
            COUNT_CLOSED.incr();
        }
        return reply_grab(ctx, outcome);
    }
    let left = meta_value(base, &F_LEFT, &left, model::parse::cents)?;
    // Popping the last share deletes the pool and its expiry: kept in case
    // the share must go back.
    let pool_at = if packet.pool.len() == 1 {
        packet.pool.abs_expire_ms()
    } else {
        None
    };
    // The head share is popped, then checked: a share the module never
    // writes (not a positive integer), or more than the running total says
    // is left, is refused and goes back, with the pool as it was (its
    // expiry too, and no modified-key signal). Reading the head before
    // popping it costs every grab about 1,300 instructions
    // (`RedisModule_ListGet`'s iterator and a second string); this costs
    // only a refused share.
    let share = packet.pool.lpop_string();
    let plan = match model::plan_take(
        left,
        share.as_ref().map(|s| s.as_slice()),
        packet.has_grabbed,
        expires,
    ) {
        Ok(plan) => plan,
        Err(refused) => {
            if let Some(share) = &share {
                packet.pool.unpop_head(share, pool_at);
            }
            return Err(refusal(base)(refused));
        }
    };
    let (
        model::TakePlan::Take {
            cents,
            left: rest,
            expire_grabbed,
        },
        Some(share),
    ) = (plan, share)
    else {
        COUNT_EMPTY.incr();
        return reply_grab(ctx, Grab::Empty);
    };
    apply_take(ctx, &packet, user, &share, rest, expire_grabbed);
    drop(packet);
    ctx.replicate_verbatim();
    // No allocation for the event's name: this runs on every share won.
    util::notify_static(ctx, c"hotpath.redpacket.grab", base_arg);
    COUNT_GRABBED.incr();
    reply_grab(ctx, Grab::Won(cents))
}

/// Writes the rest of a grab's plan, once the share (`share`, just popped
/// and checked) is taken: records it in `B:grabbed` for `user`, gives a
/// `B:grabbed` born now the packet's expiry, and records the running total
/// `rest`.
fn apply_take(
    ctx: &Context,
    packet: &Packet,
    user: &RedisString,
    share: &RedisString,
    rest: i64,
    expire_grabbed: Option<i64>,
) {
    // The user was just found absent: a plain set, without NX's second
    // lookup of the field.
    packet.grabbed.hset_arg(user, share);
    if let Some(at) = expire_grabbed {
        // B:grabbed is born now: it gets the packet's expiry, the very
        // instant in `expires` (replicas and the AOF re-run this grab and
        // set the same one).
        packet.grabbed.set_abs_expire_ms(at);
    }
    packet.meta.hput_field(&F_LEFT, &int_string(ctx, rest));
}

/// Replies `[status, cents]` straight through the reply API (the crate's
/// generic reply costs several hundred instructions more on this hot path).
fn reply_grab(ctx: &Context, outcome: Grab) -> RedisResult {
    let status = outcome.status();
    reply::array(ctx, 2);
    reply::bytes(ctx, status.as_bytes());
    reply::int(ctx, outcome.cents());
    Ok(RedisValue::NoReply)
}

/// REDPACKET.INFO B [NOW unix-ms]
///
/// Replies the map `total, count, left_cents, left_count, state, expires`,
/// or an empty array for an unknown packet. `state` is `closed` once
/// refunded or expired at NOW. O(1): `left_cents` is the running total kept
/// in `B:meta`, `left_count` the pool's length.
pub fn redpacket_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut cur = Cursor::new(args, 2)?;
    let base = cur.next_bytes()?;
    let now = parse_now(&mut cur)?.unwrap_or_else(util::now_ms);
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let packet = Packet::open(ctx, &base, false)?;
    let Some(meta) = packet.meta(&base)? else {
        return Ok(util::map(ctx, Vec::new()));
    };
    let left_count = packet.pool.len() as i64;
    Ok(util::map(
        ctx,
        vec![
            text("total"),
            RedisValue::Integer(meta.total),
            text("count"),
            RedisValue::Integer(meta.count),
            text("left_cents"),
            RedisValue::Integer(meta.left_cents),
            text("left_count"),
            RedisValue::Integer(left_count),
            text("state"),
            text(meta.state_at(now)),
            text("expires"),
            RedisValue::Integer(meta.expires),
        ],
    ))
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
            // A share as an integer; anything GRAB never writes (not a
            // share from 1 to 2^53 − 1 cents) as the string it is, which
            // the Lua twin can show alike (a double is not exact past 2^53).
            out.push(match model::parse::share(cents) {
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
/// the sender: 0 for an unknown or already refunded packet. O(1): the
/// amount is the running total `left_cents`, and the pool is unlinked (a
/// large one is freed in the background, as `UNLINK` does).
pub fn redpacket_refund(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut cur = Cursor::new(args, 2)?;
    let base = cur.next_bytes()?;
    cur.expect_done()?;
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let packet = Packet::open(ctx, &base, true)?;
    // Every meta field is checked, as INFO does (GRAB reads only what it
    // needs): a packet whose record was edited by hand is refused before
    // its money is counted out.
    let plan = model::plan_refund(packet.meta(&base)?.as_ref());
    if !plan.close {
        return Ok(RedisValue::Integer(plan.cents));
    }
    let left = plan.cents;
    packet.pool.unlink();
    packet.meta.hput_field(
        &F_STATE,
        &RedisString::create_from_slice(ctx.ctx, model::STATE_CLOSED.as_bytes()),
    );
    packet.meta.hput_field(&F_LEFT, &int_string(ctx, 0));
    drop(packet);
    ctx.replicate_verbatim();
    util::notify(ctx, "hotpath.redpacket.refund", &base);
    COUNT_REFUNDS.incr();
    COUNT_REFUNDED_CENTS.add(left as u64);
    Ok(RedisValue::Integer(left))
}
