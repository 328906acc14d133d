//! LUCKYBAG handlers: parse every argument with a [`Cursor`], validate,
//! open and type-check every key the command touches, then check the
//! stored values, apply the model, reply, replicate, notify.
//!
//! Cost: the hot writes (JOIN, LEAVE, ENTER) use the low-level key API
//! only, with the client's own strings for the user (no copies): JOIN is
//! one `ZsetAdd NX` (the dedup and the pool insert in one lookup), one
//! in-place write of `B:count` and one read of four `B:meta` fields in a
//! single `HashGet`. Expiries are set once, when a key is created, from
//! `B:meta`'s absolute expiry.
//!
//! Replication: `JOIN` draws a random score, so it replicates itself with
//! the score made explicit (`SCORE <r>`, accepted only from the master or
//! the AOF); `TASK` replicates its effect (`ZADD` with the score given);
//! `CREATE` replicates `HSET` + `PEXPIREAT` at the instant it set; `LEAVE`,
//! `ENTER` and `DRAW` are deterministic given the data and replicate
//! verbatim. Keys created on a replica or during AOF replay take the
//! absolute expiry of their own `B:meta`, which is the master's.

use std::ffi::CStr;
use std::os::raw::c_int;

use rand::thread_rng;
use redis_module::{raw, Context, ContextFlags, RedisError, RedisResult, RedisString, RedisValue};

use crate::args::Cursor;
use crate::error;
use crate::keys::{derived_name, zadd, Field, HashField, Key, KeyType, Name};
use crate::util;

use super::model::{self, field, parse, Rules};

const FAMILY: &str = "luckybag";

// `B:meta` fields, made into Redis strings once.
static F_WINNERS: Field = Field::new(c"winners");
static F_SHARDS: Field = Field::new(c"shards");
static F_POOLCAP: Field = Field::new(c"poolcap");
static F_HIGHSCORE: Field = Field::new(c"highscore");
static F_RESTORE: Field = Field::new(c"restore");
static F_STATE: Field = Field::new(c"state");
static F_LATEPOOLED: Field = Field::new(c"latepooled");
/// Longest `TTL`: 100 years.
const MAX_TTL_SECONDS: i64 = 3_153_600_000;

fn ferr(msg: &str) -> RedisError {
    error::family(FAMILY, msg)
}

fn not_float() -> RedisError {
    RedisError::Str("ERR value is not a valid float")
}

/// Raises `hotpath.luckybag.<event>` (class module) on the base key the
/// client sent: no copy of the key and no allocation for the event name.
fn notify(ctx: &Context, event: &CStr, base: &RedisString) {
    unsafe {
        raw::RedisModule_NotifyKeyspaceEvent.unwrap()(
            ctx.ctx,
            raw::REDISMODULE_NOTIFY_MODULE as c_int,
            event.as_ptr(),
            base.inner,
        )
    };
}

/// Returns `B:cand:<s>`, built on the stack.
fn cand_name(base: &[u8], shard: u64) -> Name {
    let mut name = derived_name(base, "cand:");
    name.extend_from_slice(itoa::Buffer::new().format(shard).as_bytes());
    name
}

/// Opens `B:meta` and checks its type; `Ok(None)` when the bag does not
/// exist.
fn find_meta(ctx: &Context, base: &[u8], write: bool) -> Result<Option<Key>, RedisError> {
    let meta = Key::derived(ctx, base, "meta", write);
    Ok(meta.check(KeyType::Hash)?.then_some(meta))
}

/// Opens `B:meta` of a bag that must exist.
fn open_meta(ctx: &Context, base: &[u8], write: bool) -> Result<Key, RedisError> {
    find_meta(ctx, base, write)?.ok_or_else(|| ferr(model::ERR_NO_BAG))
}

/// Parses a `B:meta` value read by [`Key::hget_fields`]; a missing field
/// or a value `CREATE` never writes is `ERR luckybag: corrupt data in
/// 'B:meta' field '<name>'`.
fn meta_value<T>(
    base: &[u8],
    name: &Field,
    v: &Option<RedisString>,
    parse: fn(&[u8]) -> Option<T>,
) -> Result<T, RedisError> {
    v.as_ref()
        .and_then(|v| parse(v.as_slice()))
        .ok_or_else(|| error::corrupt(FAMILY, &derived_name(base, "meta"), Some(name.name())))
}

/// Reads the two `B:meta` values that decide which keys a write touches:
/// `shards` (where the user's keys are) and `state` (a drawn bag takes no
/// more writes: `ERR luckybag: bag is closed`). They are checked first;
/// every key is then type-checked before any other value is read.
fn scope(
    base: &[u8],
    shards: &Option<RedisString>,
    state: &Option<RedisString>,
) -> Result<u64, RedisError> {
    let shards = meta_value(base, &F_SHARDS, shards, parse::shards)?;
    if meta_value(base, &F_STATE, state, parse::drawn)? {
        return Err(ferr(model::ERR_CLOSED));
    }
    Ok(shards)
}

/// Gives a key this command just created the bag's expiry: the very
/// instant `B:meta` expires, read from it (never a remaining time, which
/// would drift by the time the command takes and differ on replicas).
fn adopt_expiry(meta: &Key, key: &Key) {
    if let Some(at) = meta.abs_expire_ms() {
        key.set_abs_expire_ms(at);
    }
}

/// Returns true when the command comes from the master or the AOF.
fn from_master_or_aof(ctx: &Context) -> bool {
    let f = ctx.get_flags();
    f.contains(ContextFlags::REPLICATED) || f.contains(ContextFlags::LOADING)
}

/// Parses `B user` (nothing else) and refuses an empty user.
fn base_and_user(args: Vec<RedisString>) -> Result<(RedisString, RedisString), RedisError> {
    let mut c = Cursor::new(args, 3)?;
    let base = c.next()?;
    let user = c.next()?;
    c.expect_done()?;
    if user.as_slice().is_empty() {
        return Err(error::empty_user(FAMILY));
    }
    Ok((base, user))
}

/// LUCKYBAG.CREATE B WINNERS n [SHARDS s] [POOLCAP c] [HIGHSCORE h]
/// [RESTORE YES|NO] [TTL seconds]
pub fn luckybag_create(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 4)?;
    let base_arg = c.next()?;
    let base = base_arg.as_slice();
    let mut winners = None;
    let mut shards = model::DEFAULT_SHARDS;
    let mut poolcap = model::DEFAULT_POOLCAP;
    let mut highscore_text = model::DEFAULT_HIGHSCORE.as_bytes().to_vec();
    let mut highscore = 0.99;
    let mut restore = true;
    let mut ttl = 0i64;
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "WINNERS" => {
                let n = crate::args::parse_i64(c.option_bytes()?, i64::MIN, i64::MAX)?;
                if !(1..=model::MAX_WINNERS).contains(&n) {
                    return Err(ferr(&model::err_winners()));
                }
                winners = Some(n);
            }
            "SHARDS" => {
                let n = crate::args::parse_i64(c.option_bytes()?, i64::MIN, i64::MAX)?;
                if !model::valid_shards(n) {
                    return Err(ferr(model::ERR_SHARDS));
                }
                shards = n as u64;
            }
            "POOLCAP" => poolcap = c.option_i64(0, i64::MAX)?,
            "HIGHSCORE" => {
                let v = c.option_bytes()?;
                match model::parse_highscore(v) {
                    None => return Err(not_float()),
                    Some(Err(())) => return Err(ferr(model::ERR_HIGHSCORE)),
                    Some(Ok(h)) => {
                        highscore = h;
                        highscore_text = v.to_vec();
                    }
                }
            }
            "RESTORE" => restore = c.option_choice(&["YES", "NO"])? == "YES",
            "TTL" => {
                let n = crate::args::parse_i64(c.option_bytes()?, i64::MIN, i64::MAX)?;
                if !(1..=MAX_TTL_SECONDS).contains(&n) {
                    return Err(RedisError::String(format!(
                        "ERR invalid expire time in '{}' command",
                        c.command().to_ascii_lowercase()
                    )));
                }
                ttl = n;
            }
            _ => return Err(error::syntax()),
        }
    }
    let winners = winners.ok_or_else(error::syntax)?;
    util::require_hash_tag(ctx, FAMILY, base)?;

    let meta_name = derived_name(base, "meta");
    let meta = Key::open(ctx, &meta_name, true);
    if meta.check(KeyType::Hash)? {
        return Err(ferr(model::ERR_EXISTS));
    }
    // Keys left over from an earlier bag of the same name (only possible
    // if someone deleted `B:meta` alone: every key of a bag expires at the
    // same instant) would be inherited by the new bag; a count or a pool
    // must start empty, so the name counts as taken until they are gone.
    let leftover = ["count", "stored", "winners"]
        .iter()
        .any(|s| Key::derived(ctx, base, s, false).exists())
        || (0..shards).any(|s| Key::open(ctx, &cand_name(base, s), false).exists());
    if leftover {
        return Err(ferr(model::ERR_EXISTS));
    }
    let rules = Rules {
        winners,
        shards,
        poolcap,
        highscore_text,
        highscore,
        restore,
        drawn: false,
    };
    let fields = rules.fields();
    let mut hset: Vec<&[u8]> = vec![&meta_name];
    for (f, v) in &fields {
        meta.hput(f.as_bytes(), v);
        hset.push(f.as_bytes());
        hset.push(v);
    }
    ctx.replicate("HSET", hset.as_slice());
    if ttl > 0 {
        // One absolute instant, set here and replicated as it is.
        let at = util::now_ms() + ttl * 1000;
        meta.set_abs_expire_ms(at);
        let at = at.to_string();
        ctx.replicate("PEXPIREAT", &[&meta_name[..], at.as_bytes()]);
    }
    drop(meta);
    super::BAGS_CREATED.incr();
    notify(ctx, c"hotpath.luckybag.create", &base_arg);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// LUCKYBAG.JOIN B user [TASK DONE|PENDING] → [new, pooled, participants]
///
/// Replicates itself with the drawn score made explicit (`SCORE <r>`, an
/// argument only replicas and AOF replay may pass: a client choosing its
/// own score would defeat the lottery).
pub fn luckybag_join(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let base_arg = c.next()?;
    let user = c.next()?;
    let mut pending = false;
    let mut given: Option<u32> = None;
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "TASK" => pending = c.option_choice(&["DONE", "PENDING"])? == "PENDING",
            "SCORE" if from_master_or_aof(ctx) => {
                given = Some(c.option_i64(0, i64::from(model::SCALE) - 1)? as u32)
            }
            _ => return Err(error::syntax()),
        }
    }
    if user.as_slice().is_empty() {
        return Err(error::empty_user(FAMILY));
    }
    let base = base_arg.as_slice();
    util::require_hash_tag(ctx, FAMILY, base)?;

    let meta = open_meta(ctx, base, true)?;
    let [shards, state, poolcap] = meta.hget_fields([&F_SHARDS, &F_STATE, &F_POOLCAP]);
    let shards = scope(base, &shards, &state)?;

    // Every type check before any other value check.
    let cand = Key::open(
        ctx,
        &cand_name(base, model::shard_of(user.as_slice(), shards)),
        true,
    );
    let cand_existed = cand.check(KeyType::ZSet)?;
    let count_name = derived_name(base, "count");
    let count = Key::open(ctx, &count_name, true);
    let count_existed = count.check(KeyType::String)?;
    let poolcap = meta_value(base, &F_POOLCAP, &poolcap, parse::non_negative)?;
    let before = if count_existed {
        parse::participants(count.bytes())
            .ok_or_else(|| error::corrupt(FAMILY, &count_name, None))?
    } else {
        0
    };
    let participants = Some(before + 1)
        .filter(|&n| n <= model::MAX_COUNT)
        .ok_or_else(|| error::overflow(FAMILY, &count_name, None))?;

    let drawn = match (pending, given) {
        (true, _) => None,
        (false, Some(r)) => Some(r),
        (false, None) => Some(model::random_r(&mut thread_rng())),
    };
    let score = drawn.map_or(model::PENDING_SCORE, model::score_of);
    // HIGHSCORE matters (and is read) only past the pool cap.
    let pooled = participants <= poolcap || {
        let [h] = meta.hget_fields([&F_HIGHSCORE]);
        let highscore = meta_value(base, &F_HIGHSCORE, &h, parse::highscore)?;
        model::enters_pool(participants, poolcap, score, highscore)
    };
    // A participant past the cap who entered the pool is counted in
    // `latepooled`: read (and checked) before anything is written.
    let late = if pooled && participants > poolcap {
        let [v] = meta.hget_fields([&F_LATEPOOLED]);
        let n = meta_value(base, &F_LATEPOOLED, &v, parse::latepooled)?;
        Some(Some(n + 1).filter(|&n| n <= model::MAX_COUNT).ok_or_else(|| {
            error::overflow(FAMILY, &derived_name(base, "meta"), Some(field::LATEPOOLED))
        })?)
    } else {
        None
    };

    // The pool is also the participant list: NX makes the insert the dedup.
    let kept = if pooled { score } else { model::CAPPED_SCORE };
    if cand.zadd_flags_arg(&user, kept, zadd::NX) & zadd::ADDED == 0 {
        super::DUPLICATES.incr();
        let pooled = cand.zscore_arg(&user) != Some(model::CAPPED_SCORE);
        return Ok(RedisValue::Array(vec![
            RedisValue::Integer(0),
            RedisValue::Integer(pooled as i64),
            RedisValue::Integer(before),
        ]));
    }
    if !cand_existed {
        adopt_expiry(&meta, &cand);
    }
    count.write_in_place(itoa::Buffer::new().format(participants).as_bytes());
    if !count_existed {
        adopt_expiry(&meta, &count);
    }
    if let Some(n) = late {
        let v = RedisString::create_from_slice(ctx.ctx, itoa::Buffer::new().format(n).as_bytes());
        meta.hput_field(&F_LATEPOOLED, &v);
    }
    drop((cand, count, meta));

    match (drawn, given) {
        (Some(r), None) => replicate_with_score(ctx, c.args(), r),
        _ => ctx.replicate_verbatim(),
    }
    super::JOINED.incr();
    if pooled {
        super::POOLED.incr();
    } else {
        super::CAPPED.incr();
    }
    notify(ctx, c"hotpath.luckybag.join", &base_arg);
    Ok(RedisValue::Array(vec![
        RedisValue::Integer(1),
        RedisValue::Integer(pooled as i64),
        RedisValue::Integer(participants),
    ]))
}

/// Replicates the client's JOIN with `SCORE <r>` appended, in one
/// `RM_Replicate` that makes the two extra arguments itself (no vector or
/// strings built here: this runs on every new participant).
fn replicate_with_score(ctx: &Context, args: &[RedisString], r: u32) {
    static SCORE: Field = Field::new(c"SCORE");
    let r = unsafe {
        raw::RedisModule_CreateStringFromLongLong.unwrap()(
            ctx.ctx,
            std::os::raw::c_longlong::from(r),
        )
    };
    let r = RedisString::from_redis_module_string(ctx.ctx, r);
    let mut argv: smallvec::SmallVec<[*mut raw::RedisModuleString; 8]> =
        args[1..].iter().map(|a| a.inner).collect();
    argv.push(SCORE.string());
    argv.push(r.inner);
    // The command name as the client sent it: an sds, so NUL-terminated.
    let mut len = 0usize;
    let name = raw::string_ptr_len(args[0].inner, &mut len);
    unsafe {
        raw::RedisModule_Replicate.unwrap()(
            ctx.ctx,
            name,
            c"v".as_ptr(),
            argv.as_ptr(),
            argv.len(),
        );
    }
}

/// LUCKYBAG.TASK B user → 1 if a pending user now has a random score
pub fn luckybag_task(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let (base_arg, user) = base_and_user(args)?;
    let base = base_arg.as_slice();
    util::require_hash_tag(ctx, FAMILY, base)?;
    let meta = open_meta(ctx, base, true)?;
    let [shards, state] = meta.hget_fields([&F_SHARDS, &F_STATE]);
    let shards = scope(base, &shards, &state)?;
    let name = cand_name(base, model::shard_of(user.as_slice(), shards));
    let cand = Key::open(ctx, &name, true);
    cand.check(KeyType::ZSet)?;
    if cand.zscore_arg(&user) != Some(model::PENDING_SCORE) {
        return Ok(RedisValue::Integer(0));
    }
    let score = model::random_score(&mut thread_rng());
    cand.zadd_flags_arg(&user, score, zadd::XX);
    drop((cand, meta));
    let s = model::format_score(score);
    ctx.replicate("ZADD", &[&name[..], s.as_bytes(), user.as_slice()]);
    super::TASKS_DONE.incr();
    notify(ctx, c"hotpath.luckybag.task", &base_arg);
    Ok(RedisValue::Integer(1))
}

/// LUCKYBAG.LEAVE B user → 1 if the user's score was kept and set to -1
pub fn luckybag_leave(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let (base_arg, user) = base_and_user(args)?;
    let base = base_arg.as_slice();
    util::require_hash_tag(ctx, FAMILY, base)?;
    let meta = open_meta(ctx, base, true)?;
    let [shards, state, restore] = meta.hget_fields([&F_SHARDS, &F_STATE, &F_RESTORE]);
    let shards = scope(base, &shards, &state)?;
    let cand = Key::open(
        ctx,
        &cand_name(base, model::shard_of(user.as_slice(), shards)),
        true,
    );
    cand.check(KeyType::ZSet)?;
    let stored = Key::derived(ctx, base, "stored", true);
    let stored_existed = stored.check(KeyType::Hash)?;
    let restore = meta_value(base, &F_RESTORE, &restore, parse::restore)?;
    let score = match cand.zscore_arg(&user) {
        Some(s) if s != model::AWAY_SCORE && s != model::CAPPED_SCORE => s,
        _ => return Ok(RedisValue::Integer(0)),
    };
    if restore {
        stored.hput_arg(&user, model::format_score(score).as_bytes());
        if !stored_existed {
            adopt_expiry(&meta, &stored);
        }
    }
    cand.zadd_flags_arg(&user, model::AWAY_SCORE, zadd::XX);
    drop((cand, stored, meta));
    ctx.replicate_verbatim();
    super::LEFT.incr();
    notify(ctx, c"hotpath.luckybag.leave", &base_arg);
    Ok(RedisValue::Integer(1))
}

/// LUCKYBAG.ENTER B user → 1 if the kept score was restored (RESTORE YES)
pub fn luckybag_enter(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let (base_arg, user) = base_and_user(args)?;
    let base = base_arg.as_slice();
    util::require_hash_tag(ctx, FAMILY, base)?;
    let meta = open_meta(ctx, base, true)?;
    let [shards, state, restore] = meta.hget_fields([&F_SHARDS, &F_STATE, &F_RESTORE]);
    let shards = scope(base, &shards, &state)?;
    let cand = Key::open(
        ctx,
        &cand_name(base, model::shard_of(user.as_slice(), shards)),
        true,
    );
    cand.check(KeyType::ZSet)?;
    let stored_name = derived_name(base, "stored");
    let stored = Key::open(ctx, &stored_name, true);
    stored.check(KeyType::Hash)?;
    let restore = meta_value(base, &F_RESTORE, &restore, parse::restore)?;
    if !restore || cand.zscore_arg(&user) != Some(model::AWAY_SCORE) {
        return Ok(RedisValue::Integer(0));
    }
    let Some(kept) = stored.hget_arg(HashField::Arg(&user)) else {
        return Ok(RedisValue::Integer(0));
    };
    let score = parse::kept_score(kept.as_slice()).ok_or_else(|| {
        error::corrupt(
            FAMILY,
            &stored_name,
            Some(&error::key_text(user.as_slice())),
        )
    })?;
    cand.zadd_flags_arg(&user, score, zadd::XX);
    stored.hdel_arg(&user);
    drop((cand, stored, meta));
    ctx.replicate_verbatim();
    super::RESTORED.incr();
    notify(ctx, c"hotpath.luckybag.enter", &base_arg);
    Ok(RedisValue::Integer(1))
}

/// Replies `[user, score, …]` straight through the reply API (a draw
/// replies up to `MAX_WINNERS` pairs; the crate's generic reply costs
/// several hundred instructions more per element).
fn reply_winners(ctx: &Context, list: &[(RedisString, f64)]) -> RedisResult {
    unsafe {
        raw::RedisModule_ReplyWithArray.unwrap()(ctx.ctx, (list.len() * 2) as std::os::raw::c_long);
        for (u, s) in list {
            raw::RedisModule_ReplyWithString.unwrap()(ctx.ctx, u.inner);
            let s = model::format_score(*s);
            raw::RedisModule_ReplyWithStringBuffer.unwrap()(ctx.ctx, s.as_ptr().cast(), s.len());
        }
    }
    Ok(RedisValue::NoReply)
}

/// A pool entry read from a shard's walk, for the merge.
struct Candidate(RedisString, f64);

impl model::Ranked for Candidate {
    fn score(&self) -> f64 {
        self.1
    }
    fn member(&self) -> &[u8] {
        self.0.as_slice()
    }
}

/// LUCKYBAG.DRAW B → [user, score, …] the winners, best score first
///
/// O(S·log N + W·(log N + log S)) for S shards of up to N members and W
/// winners (W ≤ 1000): every shard is walked from its best eligible member,
/// and a member is read only when the one before it in its shard was drawn.
pub fn luckybag_draw(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let base_arg = c.next()?;
    c.expect_done()?;
    let base = base_arg.as_slice();
    util::require_hash_tag(ctx, FAMILY, base)?;
    let meta = open_meta(ctx, base, true)?;
    let winners = Key::derived(ctx, base, "winners", true);
    winners.check(KeyType::ZSet)?;
    let [shards, state, n] = meta.hget_fields([&F_SHARDS, &F_STATE, &F_WINNERS]);
    let shards = meta_value(base, &F_SHARDS, &shards, parse::shards)?;
    if meta_value(base, &F_STATE, &state, parse::drawn)? {
        let n = meta_value(base, &F_WINNERS, &n, parse::winners)? as usize;
        // Idempotent: the winners already written, in the same order.
        let list: Vec<(RedisString, f64)> = winners
            .zrange_desc(0, n)
            .into_iter()
            .map(|(u, s)| (RedisString::create_from_slice(ctx.ctx, &u), s))
            .collect();
        return reply_winners(ctx, &list);
    }
    let mut pools = Vec::with_capacity(shards as usize);
    for s in 0..shards {
        let cand = Key::open(ctx, &cand_name(base, s), false);
        cand.check(KeyType::ZSet)?;
        pools.push(cand);
    }
    let n = meta_value(base, &F_WINNERS, &n, parse::winners)? as usize;
    let heads: Vec<Option<Candidate>> = pools
        .iter()
        .map(|p| {
            p.zwalk_desc(0.0, 1.0)
                .then(|| p.zwalk_current())
                .flatten()
                .map(|(u, s)| Candidate(u, s))
        })
        .collect();
    let drawn = model::merge_lazy(
        heads,
        |i| {
            let p = &pools[i];
            p.zwalk_prev()
                .then(|| p.zwalk_current())
                .flatten()
                .map(|(u, s)| Candidate(u, s))
        },
        n,
    );
    for p in &pools {
        p.zwalk_stop();
    }
    drop(pools);
    winners.delete();
    for Candidate(u, s) in &drawn {
        winners.zadd_flags_arg(u, *s, 0);
    }
    if !drawn.is_empty() {
        adopt_expiry(&meta, &winners);
    }
    meta.hput(field::STATE.as_bytes(), model::DRAWN);
    drop((winners, meta));
    ctx.replicate_verbatim();
    super::DRAWS.incr();
    super::WINNERS_DRAWN.add(drawn.len() as u64);
    notify(ctx, c"hotpath.luckybag.draw", &base_arg);
    let list: Vec<(RedisString, f64)> = drawn.into_iter().map(|Candidate(u, s)| (u, s)).collect();
    reply_winners(ctx, &list)
}

/// LUCKYBAG.RESULT B user → PENDING, WON, LOST or ABSENT
pub fn luckybag_result(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let (base_arg, user) = base_and_user(args)?;
    let base = base_arg.as_slice();
    util::require_hash_tag(ctx, FAMILY, base)?;
    let Some(meta) = find_meta(ctx, base, false)? else {
        return Ok(RedisValue::SimpleStringStatic(
            model::Outcome::Absent.word(),
        ));
    };
    let [shards, state] = meta.hget_fields([&F_SHARDS, &F_STATE]);
    let shards = meta_value(base, &F_SHARDS, &shards, parse::shards)?;
    let cand = Key::open(
        ctx,
        &cand_name(base, model::shard_of(user.as_slice(), shards)),
        false,
    );
    cand.check(KeyType::ZSet)?;
    let winners = Key::derived(ctx, base, "winners", false);
    winners.check(KeyType::ZSet)?;
    let drawn = meta_value(base, &F_STATE, &state, parse::drawn)?;
    // Every participant has an entry in its shard's pool (capped ones too).
    let joined = cand.zscore_arg(&user).is_some();
    let won = drawn && winners.zscore_arg(&user).is_some();
    let outcome = model::Outcome::of(joined, drawn, won);
    Ok(RedisValue::SimpleStringStatic(outcome.word()))
}

/// LUCKYBAG.INFO B → [state, …, participants, …, pooled, …, winners, …, shards, …]
///
/// O(1): `pooled` comes from the participant count and the `latepooled`
/// total, not from the shards.
pub fn luckybag_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let base_arg = c.next()?;
    c.expect_done()?;
    let base = base_arg.as_slice();
    util::require_hash_tag(ctx, FAMILY, base)?;
    let Some(meta) = find_meta(ctx, base, false)? else {
        return Ok(util::map(ctx, vec![]));
    };
    let count_name = derived_name(base, "count");
    let count = Key::open(ctx, &count_name, false);
    let count_exists = count.check(KeyType::String)?;
    let [winners, shards, poolcap, state, late] =
        meta.hget_fields([&F_WINNERS, &F_SHARDS, &F_POOLCAP, &F_STATE, &F_LATEPOOLED]);
    let winners = meta_value(base, &F_WINNERS, &winners, parse::winners)?;
    let shards = meta_value(base, &F_SHARDS, &shards, parse::shards)?;
    let poolcap = meta_value(base, &F_POOLCAP, &poolcap, parse::non_negative)?;
    let drawn = meta_value(base, &F_STATE, &state, parse::drawn)?;
    let late = meta_value(base, &F_LATEPOOLED, &late, parse::latepooled)?;
    let participants = if count_exists {
        parse::participants(count.bytes())
            .ok_or_else(|| error::corrupt(FAMILY, &count_name, None))?
    } else {
        0
    };
    let pooled = model::pooled_total(participants, poolcap, late).ok_or_else(|| {
        error::overflow(FAMILY, &derived_name(base, "meta"), Some(field::LATEPOOLED))
    })?;
    let state: &[u8] = if drawn { model::DRAWN } else { model::OPEN };
    Ok(util::map(ctx, vec![
        util::bulk("state"),
        util::bulk(state),
        util::bulk("participants"),
        RedisValue::Integer(participants),
        util::bulk("pooled"),
        RedisValue::Integer(pooled),
        util::bulk("winners"),
        RedisValue::Integer(winners),
        util::bulk("shards"),
        RedisValue::Integer(shards as i64),
    ]))
}
