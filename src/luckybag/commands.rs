//! LUCKYBAG handlers: parse every argument with a [`Cursor`], validate,
//! open and type-check every key the command touches, apply the model,
//! reply, replicate, notify.
//!
//! Replication: `JOIN` draws a random score, so it replicates itself with
//! the score made explicit (`SCORE <r>`, accepted only from the master or
//! the AOF); `TASK` replicates its effect (`ZADD` with the score given);
//! `CREATE` replicates `HSET` + `PEXPIREAT` so that an AOF replay does not
//! restart its TTL; `LEAVE`, `ENTER` and `DRAW` are deterministic given the
//! data and replicate verbatim.

use rand::thread_rng;
use redis_module::{Context, ContextFlags, RedisError, RedisResult, RedisString, RedisValue};

use crate::args::{parse_i64, Cursor};
use crate::error;
use crate::keys::{derived, Key, KeyType};
use crate::util;

use super::model::{self, field, Rules};

const FAMILY: &str = "luckybag";
/// Longest `TTL`: 100 years.
const MAX_TTL_SECONDS: i64 = 3_153_600_000;

fn ferr(msg: &str) -> RedisError {
    error::family(FAMILY, msg)
}

fn not_float() -> RedisError {
    RedisError::Str("ERR value is not a valid float")
}

fn event(ctx: &Context, name: &'static str, base: &[u8]) {
    util::notify(ctx, name, base);
}

/// An open bag: its meta key, its rules and the TTL its keys share.
struct Bag {
    meta: Key,
    rules: Rules,
    /// Remaining time to live of `B:meta` in ms, or -1 for none; every
    /// derived key created later gets the same expiry.
    ttl_ms: i64,
}

/// Opens `B:meta`; `Ok(None)` when the bag does not exist.
fn find_bag(ctx: &Context, base: &[u8], write: bool) -> Result<Option<Bag>, RedisError> {
    let meta = Key::derived(ctx, base, "meta", write);
    if !meta.check(KeyType::Hash)? {
        return Ok(None);
    }
    let rules = Rules::from_fields(|f| meta.hget(f)).ok_or_else(|| ferr(model::ERR_CORRUPT))?;
    let ttl_ms = meta.expire_ms();
    Ok(Some(Bag {
        meta,
        rules,
        ttl_ms,
    }))
}

/// Opens a bag that must exist and still be open (for writes).
fn open_bag(ctx: &Context, base: &[u8]) -> Result<Bag, RedisError> {
    let bag = find_bag(ctx, base, true)?.ok_or_else(|| ferr(model::ERR_NO_BAG))?;
    if bag.rules.drawn {
        return Err(ferr(model::ERR_CLOSED));
    }
    Ok(bag)
}

fn shard_key(base: &[u8], kind: &str, shard: u64) -> Vec<u8> {
    derived(base, &format!("{kind}:{shard}"))
}

/// Gives a key created by this command the bag's expiry.
fn adopt_ttl(key: &Key, ttl_ms: i64) {
    if ttl_ms > 0 {
        key.set_expire_ms(ttl_ms);
    }
}

/// Replicates the absolute expiry of a key created by this command.
fn replicate_expire(ctx: &Context, name: &[u8], ttl_ms: i64) {
    if ttl_ms > 0 {
        let at = (util::now_ms() + ttl_ms).to_string();
        ctx.replicate("PEXPIREAT", &[name, at.as_bytes()]);
    }
}

/// LUCKYBAG.CREATE B WINNERS n [SHARDS s] [POOLCAP c] [HIGHSCORE h]
/// [RESTORE YES|NO] [TTL seconds]
pub fn luckybag_create(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 4)?;
    let base = c.next_bytes()?;
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
                let v = c.option_bytes()?;
                let n = parse_i64(v, i64::MIN, i64::MAX)?;
                if !(1..=model::MAX_WINNERS).contains(&n) {
                    return Err(ferr(model::ERR_WINNERS));
                }
                winners = Some(n);
            }
            "SHARDS" => {
                let v = c.option_bytes()?;
                let n = parse_i64(v, i64::MIN, i64::MAX)?;
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
                let v = c.option_bytes()?;
                let n = parse_i64(v, i64::MIN, i64::MAX)?;
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
    util::require_hash_tag(ctx, FAMILY, &base)?;

    let meta_name = derived(&base, "meta");
    let meta = Key::open(ctx, &meta_name, true);
    if meta.check(KeyType::Hash)? {
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
        meta.hput(f, v);
        hset.push(f);
        hset.push(v);
    }
    ctx.replicate("HSET", hset.as_slice());
    if ttl > 0 {
        meta.set_expire_ms(ttl * 1000);
        replicate_expire(ctx, &meta_name, ttl * 1000);
    }
    super::BAGS_CREATED.incr();
    event(ctx, "hotpath.luckybag.create", &base);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// LUCKYBAG.JOIN B user [TASK DONE|PENDING] → [new, pooled, participants]
///
/// Replicates itself with the drawn score made explicit (`SCORE <r>`, an
/// argument only replicas and AOF replay may pass: a client choosing its
/// own score would defeat the lottery).
pub fn luckybag_join(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let base = c.next_bytes()?;
    let user = c.next_bytes()?;
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
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let bag = open_bag(ctx, &base)?;
    let shard = model::shard_of(&user, bag.rules.shards);

    // Type-check every key before the first write.
    // B:joined:<s> is checked by SADD itself, the first write: a WRONGTYPE
    // there leaves nothing written.
    let joined_name = shard_key(&base, "joined", shard);
    let cand = Key::open(ctx, &shard_key(&base, "cand", shard), true);
    let cand_existed = cand.check(KeyType::ZSet)?;
    let count = Key::derived(ctx, &base, "count", true);
    let count_existed = count.check(KeyType::String)?;
    let before = if count_existed {
        count.get_i64().ok_or_else(error::not_integer)?
    } else {
        0
    };
    let participants = before.checked_add(1).ok_or_else(error::not_integer)?;

    // Sets have no low-level API: SADD is the dedup and the first write.
    let added = matches!(
        ctx.call("SADD", &[&joined_name[..], &user[..]])?,
        RedisValue::Integer(1)
    );
    if !added {
        super::DUPLICATES.incr();
        let pooled = cand.zscore(&user).is_some();
        return Ok(RedisValue::Array(vec![
            RedisValue::Integer(0),
            RedisValue::Integer(pooled as i64),
            RedisValue::Integer(before),
        ]));
    }
    if bag.ttl_ms > 0 {
        let joined = Key::open(ctx, &joined_name, true);
        if joined.expire_ms() < 0 {
            adopt_ttl(&joined, bag.ttl_ms);
        }
    }
    let drawn = match (pending, given) {
        (true, _) => None,
        (false, Some(r)) => Some(r),
        (false, None) => Some(model::random_r(&mut thread_rng())),
    };
    let score = drawn.map_or(model::PENDING_SCORE, model::score_of);
    let pooled = model::enters_pool(participants, bag.rules.poolcap, score, bag.rules.highscore);
    if pooled {
        cand.zadd(&user, score);
        if !cand_existed {
            adopt_ttl(&cand, bag.ttl_ms);
        }
    }
    let count_ttl = if count_existed {
        count.expire_ms()
    } else {
        bag.ttl_ms
    };
    count.set(participants.to_string().as_bytes());
    adopt_ttl(&count, count_ttl);

    match (drawn, given) {
        (Some(r), None) => {
            util::replicate_with_extra(ctx, c.args(), &[b"SCORE", r.to_string().as_bytes()])
        }
        _ => ctx.replicate_verbatim(),
    }
    super::JOINED.incr();
    if pooled {
        super::POOLED.incr();
    } else {
        super::CAPPED.incr();
    }
    util::notify(ctx, "hotpath.luckybag.join", &base);
    Ok(RedisValue::Array(vec![
        RedisValue::Integer(1),
        RedisValue::Integer(pooled as i64),
        RedisValue::Integer(participants),
    ]))
}

/// Returns true when the command comes from the master or the AOF.
fn from_master_or_aof(ctx: &Context) -> bool {
    let f = ctx.get_flags();
    f.contains(ContextFlags::REPLICATED) || f.contains(ContextFlags::LOADING)
}

/// A command on one user of an open bag: `B user`.
struct UserCommand {
    base: Vec<u8>,
    user: Vec<u8>,
    bag: Bag,
    /// `B:cand:<s>` of the user's shard, open for writing, type-checked.
    cand_name: Vec<u8>,
    cand: Key,
}

/// Parses `B user` and opens the bag and the user's candidate pool.
fn user_command(ctx: &Context, args: Vec<RedisString>) -> Result<UserCommand, RedisError> {
    let mut c = Cursor::new(args, 3)?;
    let base = c.next_bytes()?;
    let user = c.next_bytes()?;
    c.expect_done()?;
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let bag = open_bag(ctx, &base)?;
    let cand_name = shard_key(&base, "cand", model::shard_of(&user, bag.rules.shards));
    let cand = Key::open(ctx, &cand_name, true);
    cand.check(KeyType::ZSet)?;
    Ok(UserCommand {
        base,
        user,
        bag,
        cand_name,
        cand,
    })
}

/// LUCKYBAG.TASK B user → 1 if a pending user now has a random score
pub fn luckybag_task(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let UserCommand {
        base,
        user,
        cand_name,
        cand,
        ..
    } = user_command(ctx, args)?;
    if cand.zscore(&user) != Some(model::PENDING_SCORE) {
        return Ok(RedisValue::Integer(0));
    }
    let score = model::random_score(&mut thread_rng());
    cand.zadd(&user, score);
    let s = model::format_score(score);
    ctx.replicate("ZADD", &[&cand_name[..], s.as_bytes(), &user[..]]);
    super::TASKS_DONE.incr();
    event(ctx, "hotpath.luckybag.task", &base);
    Ok(RedisValue::Integer(1))
}

/// LUCKYBAG.LEAVE B user → 1 if the user's score was kept and set to -1
pub fn luckybag_leave(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let UserCommand {
        base,
        user,
        bag,
        cand,
        ..
    } = user_command(ctx, args)?;
    let stored = Key::derived(ctx, &base, "stored", true);
    let stored_existed = stored.check(KeyType::Hash)?;
    let score = match cand.zscore(&user) {
        Some(s) if s != model::AWAY_SCORE => s,
        _ => return Ok(RedisValue::Integer(0)),
    };
    if bag.rules.restore {
        stored.hput(&user, model::format_score(score).as_bytes());
        if !stored_existed {
            adopt_ttl(&stored, bag.ttl_ms);
        }
    }
    cand.zadd(&user, model::AWAY_SCORE);
    ctx.replicate_verbatim();
    super::LEFT.incr();
    event(ctx, "hotpath.luckybag.leave", &base);
    Ok(RedisValue::Integer(1))
}

/// LUCKYBAG.ENTER B user → 1 if the kept score was restored (RESTORE YES)
pub fn luckybag_enter(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let UserCommand {
        base,
        user,
        bag,
        cand,
        ..
    } = user_command(ctx, args)?;
    let stored = Key::derived(ctx, &base, "stored", true);
    stored.check(KeyType::Hash)?;
    if !bag.rules.restore || cand.zscore(&user) != Some(model::AWAY_SCORE) {
        return Ok(RedisValue::Integer(0));
    }
    let Some(kept) = stored.hget(&user) else {
        return Ok(RedisValue::Integer(0));
    };
    let score: f64 = std::str::from_utf8(&kept)
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|s: &f64| s.is_finite())
        .ok_or_else(not_float)?;
    cand.zadd(&user, score);
    stored.hdel(&user);
    ctx.replicate_verbatim();
    super::RESTORED.incr();
    event(ctx, "hotpath.luckybag.enter", &base);
    Ok(RedisValue::Integer(1))
}

fn winners_reply(list: &[(Vec<u8>, f64)]) -> RedisValue {
    let mut out = Vec::with_capacity(list.len() * 2);
    for (u, s) in list {
        out.push(util::bulk(u.clone()));
        out.push(util::bulk(model::format_score(*s)));
    }
    RedisValue::Array(out)
}

/// LUCKYBAG.DRAW B → [user, score, …] the winners, best score first
pub fn luckybag_draw(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let base = c.next_bytes()?;
    c.expect_done()?;
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let bag = find_bag(ctx, &base, true)?.ok_or_else(|| ferr(model::ERR_NO_BAG))?;
    let winners = Key::derived(ctx, &base, "winners", true);
    winners.check(KeyType::ZSet)?;
    if bag.rules.drawn {
        // Idempotent: the winners already written, in the same order.
        return Ok(winners_reply(&winners.zrange_desc(0, usize::MAX)));
    }
    let n = bag.rules.winners as usize;
    let mut pools = Vec::with_capacity(bag.rules.shards as usize);
    for s in 0..bag.rules.shards {
        let cand = Key::open(ctx, &shard_key(&base, "cand", s), false);
        cand.check(KeyType::ZSet)?;
        pools.push(cand);
    }
    let shards = pools.len();
    let drawn = model::draw_top(shards, n, |s, count| {
        pools[s].zrange(0, count, true, 0.0, 1.0)
    });
    drop(pools);
    winners.delete();
    for (u, s) in &drawn {
        winners.zadd(u, *s);
    }
    if !drawn.is_empty() {
        adopt_ttl(&winners, bag.ttl_ms);
    }
    bag.meta.hput(field::STATE, model::DRAWN);
    ctx.replicate_verbatim();
    super::DRAWS.incr();
    super::WINNERS_DRAWN.add(drawn.len() as u64);
    event(ctx, "hotpath.luckybag.draw", &base);
    Ok(winners_reply(&drawn))
}

/// LUCKYBAG.RESULT B user → PENDING, WON, LOST or ABSENT
pub fn luckybag_result(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let base = c.next_bytes()?;
    let user = c.next_bytes()?;
    c.expect_done()?;
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let Some(bag) = find_bag(ctx, &base, false)? else {
        return Ok(RedisValue::SimpleStringStatic(
            model::Outcome::Absent.word(),
        ));
    };
    let joined_name = shard_key(&base, "joined", model::shard_of(&user, bag.rules.shards));
    let joined_exists = Key::open(ctx, &joined_name, false).check(KeyType::Set)?;
    let winners = Key::derived(ctx, &base, "winners", false);
    winners.check(KeyType::ZSet)?;
    let joined = joined_exists
        && matches!(
            ctx.call("SISMEMBER", &[&joined_name[..], &user[..]])?,
            RedisValue::Integer(1)
        );
    let won = bag.rules.drawn && winners.zscore(&user).is_some();
    let outcome = model::Outcome::of(joined, bag.rules.drawn, won);
    Ok(RedisValue::SimpleStringStatic(outcome.word()))
}

/// LUCKYBAG.INFO B → [state, …, participants, …, pooled, …, winners, …, shards, …]
pub fn luckybag_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let base = c.next_bytes()?;
    c.expect_done()?;
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let Some(bag) = find_bag(ctx, &base, false)? else {
        return Ok(util::map(ctx, vec![]));
    };
    let count = Key::derived(ctx, &base, "count", false);
    let participants = if count.check(KeyType::String)? {
        count.get_i64().ok_or_else(error::not_integer)?
    } else {
        0
    };
    let mut pooled = 0usize;
    for s in 0..bag.rules.shards {
        let cand = Key::open(ctx, &shard_key(&base, "cand", s), false);
        cand.check(KeyType::ZSet)?;
        pooled += cand.len();
    }
    let state: &[u8] = if bag.rules.drawn {
        model::DRAWN
    } else {
        model::OPEN
    };
    Ok(util::map(ctx, vec![
        util::bulk("state"),
        util::bulk(state),
        util::bulk("participants"),
        RedisValue::Integer(participants),
        util::bulk("pooled"),
        RedisValue::Integer(pooled as i64),
        util::bulk("winners"),
        RedisValue::Integer(bag.rules.winners),
        util::bulk("shards"),
        RedisValue::Integer(bag.rules.shards as i64),
    ]))
}
