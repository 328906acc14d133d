//! LUCKYBAG handlers: parse every argument with a [`Cursor`], validate,
//! open and type-check every key the command touches, then check the
//! stored values, apply the model, reply, replicate, notify.
//!
//! Cost: the hot writes (JOIN, LEAVE, ENTER) use the low-level key API
//! only, with the client's own strings for the user (no copies): JOIN is
//! one lookup of the user (a duplicate stops there, with no keyed score
//! computed), one `ZsetAdd`, one in-place write of `B:count` and one read
//! of four `B:meta` fields in a single `HashGet`. Expiries are set once, when a key is created, from
//! `B:meta`'s absolute expiry.
//!
//! Each write parses every argument, opens and type-checks its keys,
//! reads what it needs, asks the model for a plan (`model::plan_join`,
//! `plan_task`, `plan_leave`, `plan_enter`), applies it, replies and
//! replicates: nothing is written before the plan exists.
//!
//! Replication: a pool score is a keyed function of the bag's seed and
//! the user ([`keyed`](super::keyed)), so no write but `CREATE` uses
//! randomness. `CREATE` draws the seed and reads the clock: it replicates
//! itself with both made explicit (`SEED <seed> NOW <unix-ms>`). `JOIN`,
//! `TASK`, `LEAVE`, `ENTER` and `DRAW` are deterministic given the data
//! and replicate verbatim. Keys created on a replica or during AOF replay
//! take the absolute expiry of their own `B:meta`, which is the master's.

use std::cell::RefCell;

use rand::rngs::OsRng;
use rand::RngCore;
use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args::Cursor;
use crate::argv::{is, Args};
use crate::error;
use crate::keys::{derived_name, zadd, Field, Key, KeyType, Name};
use crate::reply;
use crate::spread::{route, scope, shard};
use crate::util;

use super::keyed;
use super::model::{self, field, parse, Refusal, Rules, State};

const FAMILY: &str = "luckybag";

// `B:meta` fields, made into Redis strings once.
static F_WINNERS: Field = Field::new(c"winners");
static F_SHARDS: Field = Field::new(c"shards");
static F_POOLCAP: Field = Field::new(c"poolcap");
static F_HIGHSCORE: Field = Field::new(c"highscore");
static F_RESTORE: Field = Field::new(c"restore");
static F_STATE: Field = Field::new(c"state");
static F_LATEPOOLED: Field = Field::new(c"latepooled");
static F_SEED: Field = Field::new(c"seed");
// A spread bag's draw (docs/spread.md).
static F_DRAW: Field = Field::new(c"draw");
static F_DRAWTOKEN: Field = Field::new(c"drawtoken");
static F_DRAWLEASE: Field = Field::new(c"drawlease");
/// Longest `TTL`: 100 years.
const MAX_TTL_SECONDS: i64 = 3_153_600_000;

fn ferr(msg: &str) -> RedisError {
    error::family(FAMILY, msg)
}

fn not_float() -> RedisError {
    RedisError::Str("ERR value is not a valid float")
}

/// Returns `B:cand:<s>`, built on the stack.
fn cand_name(base: &[u8], shard: u64) -> Name {
    let mut name = derived_name(base, "cand:");
    name.extend_from_slice(itoa::Buffer::new().format(shard).as_bytes());
    name
}

/// Opens `B:cand:<s>`, the shard of the pool, with a name kept between
/// commands (a hot bag opens it on every join).
fn cand_key(ctx: &Context, base: &[u8], shard: u64, write: bool) -> Key {
    Key::derived_hot_at(ctx, base, "cand:", Some(shard), write)
}

/// Opens `B:meta` and checks its type; `Ok(None)` when the bag does not
/// exist.
fn find_meta(ctx: &Context, base: &[u8], write: bool) -> Result<Option<Key>, RedisError> {
    let meta = Key::derived_hot(ctx, base, "meta", write);
    Ok(meta.check(KeyType::Hash)?.then_some(meta))
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
    // A frozen shard of a spread bag is being drawn: closed too.
    if meta_value(base, &F_STATE, state, parse::state)? != State::Open {
        return Err(ferr(model::ERR_CLOSED));
    }
    Ok(shards)
}

// ---- spread bags (docs/spread.md) ----

/// A spread bag's data keys besides `B:meta`: data there without a
/// record means the record was deleted.
const BAG: scope::Family = scope::Family {
    name: FAMILY,
    data: &["count", "winners", "cand:0"],
};

/// Returns the shard of a spread bag `base` is, from the `SPREAD n` the
/// call declared and the record in its `B:meta` (`meta`, when the bag
/// exists); `None` for a single-slot bag. A key that does not look like a
/// shard key and declares nothing costs nothing here. With `user`, the
/// user must belong to this shard. For a single-slot call on a missing
/// bag, refuses the base key of a spread bag.
#[inline]
fn spread_of(
    ctx: &Context,
    base: &[u8],
    declared: Option<u32>,
    meta: Option<&Key>,
    user: Option<&[u8]>,
) -> Result<Option<shard::Shard>, RedisError> {
    let member = user.map(|u| ("user", u));
    scope::resolve(
        ctx,
        &BAG,
        base,
        declared,
        meta,
        Some(meta.is_some()),
        member,
    )
}

/// Reads `B user [SPREAD n]` where Redis holds the arguments; an empty
/// user is refused.
fn base_user_spread<'a>(
    c: &mut Args<'a>,
) -> Result<(&'a RedisString, &'a RedisString, Option<u32>), RedisError> {
    c.require(3)?;
    let declared = scope::only(FAMILY, c.all(), 3)?;
    let (base, user) = (c.string(1), c.string(2));
    if user.as_slice().is_empty() {
        return Err(error::empty_user(FAMILY));
    }
    Ok((base, user, declared))
}

/// Gives a key this command just created the bag's expiry: the very
/// instant `B:meta` expires, read from it (never a remaining time, which
/// would drift by the time the command takes and differ on replicas).
fn adopt_expiry(meta: &Key, key: &Key) {
    if let Some(at) = meta.abs_expire_ms() {
        key.set_abs_expire_ms(at);
    }
}

thread_local! {
    /// The HMAC of the last seed used: a hot bag takes every join with
    /// the same seed, and the key's two pad blocks are then hashed once.
    static SCORER: RefCell<Option<(Vec<u8>, keyed::Hmac)>> = const { RefCell::new(None) };
}

/// Returns the keyed pool score of `user` in a bag with `seed`.
fn keyed_score(seed: &[u8], user: &[u8]) -> f64 {
    SCORER.with(|c| {
        let mut c = c.borrow_mut();
        if let Some((s, h)) = c.as_ref() {
            if s.as_slice() == seed {
                return h.score(user);
            }
        }
        let h = keyed::Hmac::new(seed);
        let score = h.score(user);
        *c = Some((seed.to_vec(), h));
        score
    })
}

/// Reads the bag's seed (`B:meta` field `seed`): a bag created before
/// keyed scores has none and takes no more writes but DRAW.
fn seed_of<'a>(base: &[u8], v: &'a Option<RedisString>) -> Result<&'a [u8], RedisError> {
    let v = v.as_ref().ok_or_else(|| ferr(model::ERR_NO_SEED))?;
    parse::seed(v.as_slice())
        .ok_or_else(|| error::corrupt(FAMILY, &derived_name(base, "meta"), Some(field::SEED)))
}

/// Draws a new bag's seed: 16 bytes from the OS's CSPRNG, as 32 hex
/// digits (printable in `HGETALL`, the same key bytes for the Lua twins).
fn new_seed() -> Vec<u8> {
    let mut b = [0u8; 16];
    OsRng.fill_bytes(&mut b);
    keyed::hex(&b).into_bytes()
}

/// LUCKYBAG.CREATE B WINNERS n [SHARDS s] [POOLCAP c] [HIGHSCORE h]
/// [RESTORE YES|NO] [TTL seconds] [SEED seed] [NOW unix-ms]
///
/// Replicates itself with the seed and the clock made explicit.
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
    let mut shards_given = false;
    let mut declared = None;
    let mut seed: Option<Vec<u8>> = None;
    let mut now = None;
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "SPREAD" => declared = Some(shard::parse_count(FAMILY, c.option_bytes()?)?),
            "SEED" => {
                let v = c.option_bytes()?;
                seed = Some(
                    parse::seed(v)
                        .ok_or_else(|| ferr(model::ERR_SEED))?
                        .to_vec(),
                );
            }
            "NOW" => now = Some(c.option_i64(0, MAX_NOW_MS)?),
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
                shards_given = true;
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
    // A shard of a spread bag: its own slice of the pool cap, and one
    // internal pool unless SHARDS says otherwise (its users already share
    // `user mod n`, so more internal shards would mostly stay empty).
    let spread = match declared {
        Some(n) => Some(shard::Shard {
            n,
            i: route::shard_index(base, n)
                .ok_or_else(|| shard::not_a_shard_key(FAMILY, base, n))?,
        }),
        None => None,
    };
    if let Some(sh) = spread {
        if !shards_given {
            shards = 1;
        }
        poolcap = shard::share(poolcap, sh.n, sh.i);
    }

    let meta_name = derived_name(base, "meta");
    let meta = Key::open(ctx, &meta_name, true);
    if meta.check(KeyType::Hash)? {
        let Some(sh) = spread else {
            return Err(ferr(model::ERR_EXISTS));
        };
        // Creating a spread bag again with the same rules is harmless (a
        // creation that failed half way is run again); anything else is
        // an error.
        match scope::record(FAMILY, base, &meta)? {
            Some(r) if r == sh => {
                let have =
                    meta.hget_fields([&F_WINNERS, &F_SHARDS, &F_POOLCAP, &F_HIGHSCORE, &F_RESTORE]);
                let want: [Vec<u8>; 5] = [
                    winners.to_string().into_bytes(),
                    shards.to_string().into_bytes(),
                    poolcap.to_string().into_bytes(),
                    highscore_text.clone(),
                    if restore {
                        b"yes".to_vec()
                    } else {
                        b"no".to_vec()
                    },
                ];
                let same = have
                    .iter()
                    .zip(&want)
                    .all(|(h, w)| h.as_ref().map(|h| h.as_slice()) == Some(w.as_slice()));
                // A seed given again must be the bag's; without one, the
                // bag keeps the seed it has.
                let same_seed = seed.as_ref().is_none_or(|s| {
                    let [have] = meta.hget_fields([&F_SEED]);
                    have.as_ref().map(|h| h.as_slice()) == Some(s.as_slice())
                });
                if same && same_seed {
                    return Ok(RedisValue::SimpleStringStatic("OK"));
                }
                return Err(ferr(model::ERR_EXISTS));
            }
            Some(r) => return Err(shard::counts_disagree(FAMILY, base, sh.n, r)),
            None => return Err(ferr(model::ERR_EXISTS)),
        }
    }
    // Shard 0 shares its base key's slot: a single-slot bag under the base
    // (in that slot when it has a hash tag, or on a standalone server)
    // must not be shadowed by a spread one.
    if let Some(shard::Shard { i: 0, .. }) = spread {
        let b = route::shard_base(base).unwrap_or(base);
        if (util::has_hash_tag(b) || !util::cluster_mode(ctx))
            && Key::derived(ctx, b, "meta", false).exists()
        {
            return Err(ferr(&format!(
                "'{}' is a single-slot bag already",
                error::key_text(b)
            )));
        }
    }
    // Keys left over from an earlier bag of the same name (only possible
    // if someone deleted `B:meta` alone: every key of a bag expires at the
    // same instant) would be inherited by the new bag; a count or a pool
    // must start empty, so the name counts as taken until they are gone.
    let leftover = ["count", "winners"]
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
        seed: seed.unwrap_or_else(new_seed),
    };
    let now = now.unwrap_or_else(util::now_ms);
    let mut fields = rules.fields();
    if let Some(sh) = spread {
        fields.push(("spread", sh.n.to_string().into_bytes()));
        fields.push(("shard", sh.i.to_string().into_bytes()));
    }
    for (f, v) in &fields {
        meta.hput(f.as_bytes(), v);
    }
    if ttl > 0 {
        // One absolute instant, from the NOW replicated below.
        meta.set_abs_expire_ms(now + ttl * 1000);
    }
    drop(meta);
    // The command itself, with the seed and the clock it used: replicas
    // and AOF replay run it and write the same bag.
    let now = now.to_string();
    let mut rep: Vec<&[u8]> = c.args()[1..].iter().map(|a| a.as_slice()).collect();
    rep.extend([&b"SEED"[..], &rules.seed, b"NOW", now.as_bytes()]);
    ctx.replicate("LUCKYBAG.CREATE", rep.as_slice());
    super::BAGS_CREATED.incr();
    util::notify_static(ctx, c"hotpath.luckybag.create", &base_arg);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// LUCKYBAG.JOIN B user [TASK DONE|PENDING] → [new, pooled, participants]
///
/// The user's score is the bag's keyed score, so the command replicates
/// verbatim.
pub fn luckybag_join(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(3)?;
    let (base_arg, user) = (c.string(1), c.string(2));
    c.skip(2)?;
    let mut pending = false;
    let mut declared = None;
    while !c.done() {
        let kw = c.keyword()?;
        if is(kw, "TASK") {
            let v = c.option_bytes()?;
            pending = if is(v, "PENDING") {
                true
            } else if is(v, "DONE") {
                false
            } else {
                return Err(error::syntax());
            };
        } else if scope::is_keyword(kw) {
            declared = Some(shard::parse_count(FAMILY, c.option_bytes()?)?);
        } else {
            return Err(error::syntax());
        }
    }
    if user.as_slice().is_empty() {
        return Err(error::empty_user(FAMILY));
    }
    let base = base_arg.as_slice();
    util::require_hash_tag(ctx, FAMILY, base)?;

    let meta = find_meta(ctx, base, true)?;
    spread_of(ctx, base, declared, meta.as_ref(), Some(user.as_slice()))?;
    let meta = meta.ok_or_else(|| ferr(model::ERR_NO_BAG))?;
    let [shards, state, poolcap, seed] =
        meta.hget_fields([&F_SHARDS, &F_STATE, &F_POOLCAP, &F_SEED]);
    let shards = scope(base, &shards, &state)?;

    // Every type check before any other value check.
    let cand = cand_key(ctx, base, model::shard_of(user.as_slice(), shards), true);
    let cand_existed = cand.check(KeyType::ZSet)?;
    let count = Key::derived_hot(ctx, base, "count", true);
    let count_existed = count.check(KeyType::String)?;
    let count_name = || derived_name(base, "count");
    let poolcap = meta_value(base, &F_POOLCAP, &poolcap, parse::non_negative)?;
    let seed = seed_of(base, &seed)?;
    let before = if count_existed {
        parse::participants(count.bytes())
            .ok_or_else(|| error::corrupt(FAMILY, &count_name(), None))?
    } else {
        0
    };
    let refused = |r: Refusal| match r {
        Refusal::Corrupt(f) => error::corrupt(FAMILY, &derived_name(base, "meta"), Some(f)),
        Refusal::CountOverflow => error::overflow(FAMILY, &count_name(), None),
        Refusal::LateOverflow => {
            error::overflow(FAMILY, &derived_name(base, "meta"), Some(field::LATEPOOLED))
        }
    };
    // The user is looked up before its score is computed: a duplicate
    // needs no HMAC and writes nothing.
    if let Some(existing) = cand.zscore_arg(user) {
        let pooled = model::plan_duplicate(before, existing).map_err(refused)?;
        super::DUPLICATES.incr();
        return Ok(RedisValue::Array(vec![
            RedisValue::Integer(0),
            RedisValue::Integer(pooled as i64),
            RedisValue::Integer(before),
        ]));
    }
    let score = if pending {
        model::PENDING_SCORE
    } else {
        keyed_score(seed, user.as_slice())
    };
    // HIGHSCORE and `latepooled` matter (and are read) only past the cap.
    let plan = model::plan_join(
        before,
        poolcap,
        score,
        || {
            let [h] = meta.hget_fields([&F_HIGHSCORE]);
            h.as_ref().and_then(|v| parse::highscore(v.as_slice()))
        },
        || {
            let [v] = meta.hget_fields([&F_LATEPOOLED]);
            v.as_ref().and_then(|v| parse::latepooled(v.as_slice()))
        },
    )
    .map_err(refused)?;

    // The pool is also the participant list (the user is not in it).
    cand.zadd_flags_arg(user, plan.kept, zadd::NX);
    if !cand_existed {
        adopt_expiry(&meta, &cand);
    }
    count.write_in_place(itoa::Buffer::new().format(plan.participants).as_bytes());
    if !count_existed {
        adopt_expiry(&meta, &count);
    }
    if let Some(n) = plan.latepooled {
        let v = RedisString::create_from_slice(ctx.ctx, itoa::Buffer::new().format(n).as_bytes());
        meta.hput_field(&F_LATEPOOLED, &v);
    }
    drop((cand, count, meta));

    ctx.replicate_verbatim();
    super::JOINED.incr();
    if plan.pooled {
        super::POOLED.incr();
    } else {
        super::CAPPED.incr();
    }
    util::notify_static(ctx, c"hotpath.luckybag.join", base_arg);
    Ok(RedisValue::Array(vec![
        RedisValue::Integer(1),
        RedisValue::Integer(plan.pooled as i64),
        RedisValue::Integer(plan.participants),
    ]))
}

/// What a user's write (TASK, LEAVE, ENTER) opens and reads: the user's
/// shard of the pool (type checked, the bag open), and the `restore` and
/// `seed` values of `B:meta`.
struct UserWrite {
    cand: Key,
    restore: Option<RedisString>,
    seed: Option<RedisString>,
}

/// Opens what TASK, LEAVE and ENTER touch, in the error order of the
/// family: `B:meta`'s type, `shards` and `state`, the pool's type.
fn open_user_write(
    ctx: &Context,
    base: &[u8],
    user: &RedisString,
    declared: Option<u32>,
) -> Result<UserWrite, RedisError> {
    util::require_hash_tag(ctx, FAMILY, base)?;
    let meta = find_meta(ctx, base, true)?;
    spread_of(ctx, base, declared, meta.as_ref(), Some(user.as_slice()))?;
    let meta = meta.ok_or_else(|| ferr(model::ERR_NO_BAG))?;
    let [shards, state, restore, seed] =
        meta.hget_fields([&F_SHARDS, &F_STATE, &F_RESTORE, &F_SEED]);
    let shards = scope(base, &shards, &state)?;
    let cand = cand_key(ctx, base, model::shard_of(user.as_slice(), shards), true);
    cand.check(KeyType::ZSet)?;
    Ok(UserWrite {
        cand,
        restore,
        seed,
    })
}

/// LUCKYBAG.TASK B user → 1 if a pending user now has its score
pub fn luckybag_task(ctx: &Context, c: &mut Args) -> RedisResult {
    let (base_arg, user, declared) = base_user_spread(c)?;
    let base = base_arg.as_slice();
    let w = open_user_write(ctx, base, user, declared)?;
    let seed = seed_of(base, &w.seed)?;
    let plan = model::plan_task(w.cand.zscore_arg(user), || {
        keyed_score(seed, user.as_slice())
    });
    let Some(score) = plan else {
        return Ok(RedisValue::Integer(0));
    };
    w.cand.zadd_flags_arg(user, score, zadd::XX);
    drop(w);
    ctx.replicate_verbatim();
    super::TASKS_DONE.incr();
    util::notify_static(ctx, c"hotpath.luckybag.task", base_arg);
    Ok(RedisValue::Integer(1))
}

/// LUCKYBAG.LEAVE B user → 1 if the user is now out of the room (-1)
pub fn luckybag_leave(ctx: &Context, c: &mut Args) -> RedisResult {
    let (base_arg, user, declared) = base_user_spread(c)?;
    let base = base_arg.as_slice();
    let w = open_user_write(ctx, base, user, declared)?;
    // LEAVE needs no score, but a bag without a seed could not give it
    // back: such a bag takes no writes but DRAW.
    seed_of(base, &w.seed)?;
    let Some(away) = model::plan_leave(w.cand.zscore_arg(user)) else {
        return Ok(RedisValue::Integer(0));
    };
    w.cand.zadd_flags_arg(user, away, zadd::XX);
    drop(w);
    ctx.replicate_verbatim();
    super::LEFT.incr();
    util::notify_static(ctx, c"hotpath.luckybag.leave", base_arg);
    Ok(RedisValue::Integer(1))
}

/// LUCKYBAG.ENTER B user → 1 if the user's score is back (RESTORE YES)
pub fn luckybag_enter(ctx: &Context, c: &mut Args) -> RedisResult {
    let (base_arg, user, declared) = base_user_spread(c)?;
    let base = base_arg.as_slice();
    let w = open_user_write(ctx, base, user, declared)?;
    let restore = meta_value(base, &F_RESTORE, &w.restore, parse::restore)?;
    let seed = seed_of(base, &w.seed)?;
    let plan = model::plan_enter(restore, w.cand.zscore_arg(user), || {
        keyed_score(seed, user.as_slice())
    });
    let Some(score) = plan else {
        return Ok(RedisValue::Integer(0));
    };
    w.cand.zadd_flags_arg(user, score, zadd::XX);
    drop(w);
    ctx.replicate_verbatim();
    super::RESTORED.incr();
    util::notify_static(ctx, c"hotpath.luckybag.enter", base_arg);
    Ok(RedisValue::Integer(1))
}

/// Replies `[user, score, …]` straight through the reply API (a draw
/// replies up to `MAX_WINNERS` pairs; the crate's generic reply costs
/// several hundred instructions more per element).
fn reply_winners(ctx: &Context, list: &[(RedisString, f64)]) -> RedisResult {
    reply::array(ctx, list.len() * 2);
    for (u, s) in list {
        reply::string(ctx, u);
        reply::bytes(ctx, model::format_score(*s).as_bytes());
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
    let meta = find_meta(ctx, base, true)?;
    if let Some(sh) = spread_of(ctx, base, None, meta.as_ref(), None)? {
        return Err(ferr(&format!(
            "'{}' is shard {} of a bag spread over {} shards: draw it with a client library (docs/spread.md)",
            error::key_text(base),
            sh.i,
            sh.n
        )));
    }
    let meta = meta.ok_or_else(|| ferr(model::ERR_NO_BAG))?;
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
    util::notify_static(ctx, c"hotpath.luckybag.draw", &base_arg);
    let list: Vec<(RedisString, f64)> = drawn.into_iter().map(|Candidate(u, s)| (u, s)).collect();
    reply_winners(ctx, &list)
}

/// LUCKYBAG.RESULT B user → PENDING, WON, LOST or ABSENT
pub fn luckybag_result(ctx: &Context, c: &mut Args) -> RedisResult {
    let (base_arg, user, declared) = base_user_spread(c)?;
    let base = base_arg.as_slice();
    util::require_hash_tag(ctx, FAMILY, base)?;
    let meta = find_meta(ctx, base, false)?;
    spread_of(ctx, base, declared, meta.as_ref(), Some(user.as_slice()))?;
    let Some(meta) = meta else {
        return Ok(RedisValue::SimpleStringStatic(
            model::Outcome::Absent.word(),
        ));
    };
    let [shards, state] = meta.hget_fields([&F_SHARDS, &F_STATE]);
    let shards = meta_value(base, &F_SHARDS, &shards, parse::shards)?;
    let cand = cand_key(ctx, base, model::shard_of(user.as_slice(), shards), false);
    cand.check(KeyType::ZSet)?;
    let winners = Key::derived(ctx, base, "winners", false);
    winners.check(KeyType::ZSet)?;
    // A frozen shard of a spread bag is not drawn yet.
    let drawn = meta_value(base, &F_STATE, &state, parse::state)? == State::Drawn;
    // Every participant has an entry in its shard's pool (capped ones too).
    let joined = cand.zscore_arg(user).is_some();
    let won = drawn && winners.zscore_arg(user).is_some();
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
    let declared = scope::only(FAMILY, c.args(), 2)?;
    let base = base_arg.as_slice();
    util::require_hash_tag(ctx, FAMILY, base)?;
    let meta = find_meta(ctx, base, false)?;
    let spread = spread_of(ctx, base, declared, meta.as_ref(), None)?;
    let Some(meta) = meta else {
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
    let state = meta_value(base, &F_STATE, &state, parse::state)?;
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
    let mut out = vec![
        util::bulk("state"),
        util::bulk(state.word()),
        util::bulk("participants"),
        RedisValue::Integer(participants),
        util::bulk("pooled"),
        RedisValue::Integer(pooled),
        util::bulk("winners"),
        RedisValue::Integer(winners),
        util::bulk("shards"),
        RedisValue::Integer(shards as i64),
    ];
    // A shard of a spread bag says which one it is; shard 0 also gives
    // the state of the bag's draw (`none`, `drawing`, `drawn`).
    if let Some(sh) = spread {
        out.extend([
            util::bulk("spread"),
            RedisValue::Integer(i64::from(sh.n)),
            util::bulk("shard"),
            RedisValue::Integer(i64::from(sh.i)),
        ]);
        if sh.i == 0 {
            let [d] = meta.hget_fields([&F_DRAW]);
            let d = match d.as_ref().map(|v| v.as_slice()) {
                None => b"none".to_vec(),
                Some(v) if v == b"drawing" || v == b"drawn" => v.to_vec(),
                Some(_) => {
                    return Err(error::corrupt(
                        FAMILY,
                        &derived_name(base, "meta"),
                        Some("draw"),
                    ))
                }
            };
            out.extend([util::bulk("draw"), util::bulk(d)]);
        }
    }
    Ok(util::map(ctx, out))
}

// ---- the draw of a spread bag (docs/spread.md) ----
//
// Each step is one atomic command on one shard, idempotent and
// deterministic given the data, so that a draw interrupted anywhere can
// be run again, by the same client or another one:
// 1. DRAWBEGIN on shard 0 (the coordinator) takes the draw's lease;
// 2. FREEZE on every shard closes it to writes and answers its best
//    candidates (the client then waits for a replica of each shard);
// 3. the client merges the shards' lists into the global top WINNERS;
// 4. COMMIT on shard 0 stores that list: the winners are final;
// 5. PUBLISH on every shard stores the shard's own winners, so that each
//    user's RESULT is read from the node owning that user's shard.

/// Occurs when a winner list's score is not a score from 0 to 1 as
/// replies print it.
const ERR_WINNER_SCORE: &str =
    "winner scores must be scores from 0 to 1 as replies print them (17 significant digits)";

/// Longest draw lease: a day.
const MAX_LEASE_MS: i64 = 86_400_000;
/// Default draw lease.
const DEFAULT_LEASE_MS: i64 = 30_000;

/// The shard of a spread bag a draw step runs on (`SPREAD n` is required),
/// with its open `B:meta`.
fn draw_shard(
    ctx: &Context,
    base: &[u8],
    declared: Option<u32>,
    coordinator: bool,
) -> Result<(shard::Shard, Key), RedisError> {
    let Some(n) = declared else {
        return Err(ferr("the draw steps of a spread bag need SPREAD n"));
    };
    let meta = find_meta(ctx, base, true)?;
    let sh = spread_of(ctx, base, Some(n), meta.as_ref(), None)?
        .ok_or(RedisError::Str(error::INTERNAL))?;
    let meta = meta.ok_or(RedisError::Str(error::INTERNAL))?;
    if coordinator && sh.i != 0 {
        let b = route::shard_base(base).unwrap_or(base);
        return Err(ferr(&format!(
            "the draw of a spread bag is coordinated by its shard 0 ('{}')",
            error::key_text(&shard::first_shard_key(b))
        )));
    }
    Ok((sh, meta))
}

/// Parses a winner list `user score …` (scores with six decimals, as
/// replies give them) and checks it against WINNERS.
fn winner_list(args: &[RedisString], winners: i64) -> Result<Vec<(&[u8], f64)>, RedisError> {
    if !args.len().is_multiple_of(2) {
        return Err(error::syntax());
    }
    let mut list = Vec::with_capacity(args.len() / 2);
    for pair in args.chunks(2) {
        let r = model::parse_score(pair[1].as_slice()).ok_or_else(|| ferr(ERR_WINNER_SCORE))?;
        list.push((pair[0].as_slice(), r));
    }
    model::check_winner_list(&list, winners as usize).map_err(ferr)?;
    Ok(list)
}

/// Reads a stored winner list (`B:winners` or `B:allwinners`) as the draw
/// orders it, for comparing a repeated step.
fn stored_list(key: &Key, max: usize) -> Vec<(Vec<u8>, f64)> {
    key.zrange_desc(0, max).into_iter().collect()
}

fn same_list(stored: &[(Vec<u8>, f64)], given: &[(&[u8], f64)]) -> bool {
    stored.len() == given.len()
        && stored
            .iter()
            .zip(given)
            .all(|((su, sr), (gu, gr))| su.as_slice() == *gu && sr == gr)
}

/// Writes a winner list into a sorted set (replaced whole), with the bag's
/// expiry.
fn write_list(ctx: &Context, meta: &Key, key: &Key, list: &[(&[u8], f64)]) {
    key.delete();
    for (u, r) in list {
        let u = RedisString::create_from_slice(ctx.ctx, u);
        key.zadd_flags_arg(&u, *r, 0);
    }
    if !list.is_empty() {
        adopt_expiry(meta, key);
    }
}

/// The largest `NOW` (9999-12-31T23:59:59.999Z), as in the other families.
const MAX_NOW_MS: i64 = 253_402_300_799_999;

/// LUCKYBAG.DRAWBEGIN K token [LEASE ms] [NOW unix-ms] SPREAD n →
/// `[drawing, winners]` or `[drawn, winners, user, score, …]`
///
/// Step 1 of a spread bag's draw, on shard 0: takes the draw's lease for
/// `token`. The same token renews it; another token is refused with `ERR
/// luckybag: draw in progress` until the lease runs out, and then takes it
/// over (every later step is idempotent, so that is safe). Once the draw
/// is committed it answers `drawn` and the winners. The lease instant
/// comes from the master's clock and replicates as it is.
pub fn luckybag_drawbegin(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let base_arg = c.next()?;
    let token = c.next()?;
    let mut lease = DEFAULT_LEASE_MS;
    let mut now = None;
    let mut declared = None;
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "LEASE" => lease = c.option_i64(1, MAX_LEASE_MS)?,
            "NOW" => now = Some(c.option_i64(0, MAX_NOW_MS)?),
            "SPREAD" => declared = Some(shard::parse_count(FAMILY, c.option_bytes()?)?),
            _ => return Err(error::syntax()),
        }
    }
    if token.as_slice().is_empty() || token.as_slice().len() > 128 {
        return Err(ferr("a draw token must be 1 to 128 bytes"));
    }
    let base = base_arg.as_slice();
    util::require_hash_tag(ctx, FAMILY, base)?;
    let (_, meta) = draw_shard(ctx, base, declared, true)?;
    let all = Key::derived(ctx, base, "allwinners", true);
    all.check(KeyType::ZSet)?;
    let [w, d, t, l] = meta.hget_fields([&F_WINNERS, &F_DRAW, &F_DRAWTOKEN, &F_DRAWLEASE]);
    let winners = meta_value(base, &F_WINNERS, &w, parse::winners)?;
    let corrupt = |f: &str| error::corrupt(FAMILY, &derived_name(base, "meta"), Some(f));
    let now = now.unwrap_or_else(util::now_ms);
    match d.as_ref().map(|v| v.as_slice()) {
        Some(b"drawn") => {
            let list = stored_list(&all, winners as usize);
            let mut out = vec![util::bulk("drawn"), RedisValue::Integer(winners)];
            for (u, r) in list {
                out.push(util::bulk(u));
                out.push(util::bulk(model::format_score(r)));
            }
            return Ok(RedisValue::Array(out));
        }
        Some(b"drawing") => {
            let holder = t.ok_or_else(|| corrupt("drawtoken"))?;
            let until = l
                .as_ref()
                .and_then(|v| crate::args::parse_i64_plain(v.as_slice()))
                .ok_or_else(|| corrupt("drawlease"))?;
            if holder.as_slice() != token.as_slice() && until > now {
                return Err(ferr("draw in progress"));
            }
        }
        None => {}
        Some(_) => return Err(corrupt("draw")),
    }
    let at = now.saturating_add(lease).to_string();
    meta.hput(b"draw", b"drawing");
    meta.hput(b"drawtoken", token.as_slice());
    meta.hput(b"drawlease", at.as_bytes());
    drop((all, meta));
    let meta_name = derived_name(base, "meta");
    ctx.replicate(
        "HSET",
        &[
            &meta_name[..],
            b"draw",
            b"drawing",
            b"drawtoken",
            token.as_slice(),
            b"drawlease",
            at.as_bytes(),
        ],
    );
    util::notify_static(ctx, c"hotpath.luckybag.drawbegin", &base_arg);
    Ok(RedisValue::Array(vec![
        util::bulk("drawing"),
        RedisValue::Integer(winners),
    ]))
}

/// LUCKYBAG.FREEZE K count SPREAD n → `[user, score, …]`
///
/// Step 2, on every shard: closes the shard to JOIN, TASK, LEAVE and
/// ENTER (`open` → `frozen`) and answers its best `count` candidates
/// (scores in `[0, 1]`, score descending then user descending byte-wise,
/// the order of the single-slot DRAW). A frozen shard answers again from
/// the same, unchanging pool.
pub fn luckybag_freeze(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let base_arg = c.next()?;
    let count = c.next_i64(1, model::MAX_WINNERS)? as usize;
    let declared = scope::only(FAMILY, c.args(), 3)?;
    let base = base_arg.as_slice();
    util::require_hash_tag(ctx, FAMILY, base)?;
    let (_, meta) = draw_shard(ctx, base, declared, false)?;
    let [shards, state] = meta.hget_fields([&F_SHARDS, &F_STATE]);
    let shards = meta_value(base, &F_SHARDS, &shards, parse::shards)?;
    let state = meta_value(base, &F_STATE, &state, parse::state)?;
    let mut pools = Vec::with_capacity(shards as usize);
    for s in 0..shards {
        let cand = Key::open(ctx, &cand_name(base, s), false);
        cand.check(KeyType::ZSet)?;
        pools.push(cand);
    }
    let top = top_candidates(&pools, count);
    drop(pools);
    if state == State::Open {
        meta.hput(field::STATE.as_bytes(), model::FROZEN);
        util::notify_static(ctx, c"hotpath.luckybag.freeze", &base_arg);
    }
    drop(meta);
    // Replicated even when the shard was frozen already (it changes
    // nothing there): a `WAIT` after it on this connection then also
    // covers a freeze made earlier by another connection, such as an
    // interrupted run of the same draw.
    ctx.replicate_verbatim();
    let list: Vec<(RedisString, f64)> = top.into_iter().map(|Candidate(u, s)| (u, s)).collect();
    reply_winners(ctx, &list)
}

/// The best `n` eligible candidates over a bag's internal pools, in the
/// draw's order (the single-slot DRAW's walk).
fn top_candidates(pools: &[Key], n: usize) -> Vec<Candidate> {
    let heads: Vec<Option<Candidate>> = pools
        .iter()
        .map(|p| {
            p.zwalk_desc(0.0, 1.0)
                .then(|| p.zwalk_current())
                .flatten()
                .map(|(u, s)| Candidate(u, s))
        })
        .collect();
    let top = model::merge_lazy(
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
    for p in pools {
        p.zwalk_stop();
    }
    top
}

/// LUCKYBAG.COMMIT K token [user score …] SPREAD n → `OK`
///
/// Step 4, on shard 0, by the holder of the draw's lease: stores the
/// global winner list in `K:allwinners` and marks the draw `drawn`; from
/// then on the winners are final. Committing the same list again answers
/// `OK`; another list is refused.
pub fn luckybag_commit(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let (end, declared) = scope::trailing(FAMILY, &args, 3)?;
    if args.len() < 3 || end < 3 {
        return Err(error::arity("luckybag.commit"));
    }
    let base = args[1].as_slice();
    let token = args[2].as_slice();
    util::require_hash_tag(ctx, FAMILY, base)?;
    let (_, meta) = draw_shard(ctx, base, declared, true)?;
    let all = Key::derived(ctx, base, "allwinners", true);
    all.check(KeyType::ZSet)?;
    let [w, d, t] = meta.hget_fields([&F_WINNERS, &F_DRAW, &F_DRAWTOKEN]);
    let winners = meta_value(base, &F_WINNERS, &w, parse::winners)?;
    let list = winner_list(&args[3..end], winners)?;
    match d.as_ref().map(|v| v.as_slice()) {
        Some(b"drawn") => {
            if same_list(&stored_list(&all, winners as usize), &list) {
                // Replicated for the `WAIT` after it (see FREEZE).
                ctx.replicate_verbatim();
                return Ok(RedisValue::SimpleStringStatic("OK"));
            }
            return Err(ferr("the draw was committed with other winners"));
        }
        Some(b"drawing") => {
            if t.as_ref().map(|v| v.as_slice()) != Some(token) {
                return Err(ferr("draw in progress"));
            }
        }
        None => return Err(ferr("no draw in progress (LUCKYBAG.DRAWBEGIN first)")),
        Some(_) => {
            return Err(error::corrupt(
                FAMILY,
                &derived_name(base, "meta"),
                Some("draw"),
            ))
        }
    }
    write_list(ctx, &meta, &all, &list);
    meta.hput(b"draw", b"drawn");
    meta.hdel(b"drawtoken");
    meta.hdel(b"drawlease");
    drop((all, meta));
    ctx.replicate_verbatim();
    super::DRAWS.incr();
    super::WINNERS_DRAWN.add(list.len() as u64);
    util::notify_static(ctx, c"hotpath.luckybag.commit", &args[1]);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// LUCKYBAG.PUBLISH K [user score …] [LAST user score] [VERIFY] SPREAD n
/// → winners stored
///
/// Step 5, on every shard: stores the shard's own winners (each must be a
/// participant of this shard with that very score) in `K:winners` and
/// marks the shard `drawn`, so that RESULT answers WON or LOST there. The
/// shard must be frozen. Publishing the same list again answers the same;
/// another list is refused.
///
/// It also checks that the winners are the true top: they must be the
/// shard's own best candidates, and its best non-winner must rank after
/// `LAST`, the global list's last winner (sent when the global list has
/// WINNERS entries; without it, the shard must have no non-winner). With
/// `VERIFY` it only checks and writes nothing: the client libraries verify
/// every shard before COMMIT, so a wrong merge is refused while nothing is
/// final. O((S + W) log N) for S internal pools of up to N candidates.
pub fn luckybag_publish(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let (end, declared) = scope::trailing(FAMILY, &args, 2)?;
    if args.len() < 2 {
        return Err(error::arity("luckybag.publish"));
    }
    let mut end = end.max(2);
    // `VERIFY` is never a score, and a pair list is even: a trailing
    // `VERIFY`, then an odd rest ending in `LAST user score`, are the
    // options.
    let verify = end > 2 && args[end - 1].as_slice().eq_ignore_ascii_case(b"VERIFY");
    if verify {
        end -= 1;
    }
    let last_arg =
        if (end - 2) % 2 == 1 && end >= 5 && args[end - 3].as_slice().eq_ignore_ascii_case(b"LAST")
        {
            end -= 3;
            Some((&args[end + 1], &args[end + 2]))
        } else {
            None
        };
    let base = args[1].as_slice();
    util::require_hash_tag(ctx, FAMILY, base)?;
    let (sh, meta) = draw_shard(ctx, base, declared, false)?;
    let won = Key::derived(ctx, base, "winners", true);
    won.check(KeyType::ZSet)?;
    let [w, shards, state] = meta.hget_fields([&F_WINNERS, &F_SHARDS, &F_STATE]);
    let winners = meta_value(base, &F_WINNERS, &w, parse::winners)?;
    let shards = meta_value(base, &F_SHARDS, &shards, parse::shards)?;
    let state = meta_value(base, &F_STATE, &state, parse::state)?;
    let list = winner_list(&args[2..end], winners)?;
    // LAST is the global list's last winner: at most WINNERS with the
    // shard's own (so it is a winner list itself), and ranking last.
    let last = match last_arg {
        Some((u, r)) => {
            let r = model::parse_score(r.as_slice()).ok_or_else(|| ferr(ERR_WINNER_SCORE))?;
            let last = (u.as_slice(), r);
            let mut with_last = list.clone();
            if with_last.last() != Some(&last) {
                with_last.push(last);
            }
            model::check_winner_list(&with_last, winners as usize).map_err(ferr)?;
            Some(last)
        }
        None => None,
    };
    for (u, r) in &list {
        shard::check_owner(FAMILY, "user", base, sh, u)?;
        let cand = Key::open(ctx, &cand_name(base, model::shard_of(u, shards)), false);
        cand.check(KeyType::ZSet)?;
        let score = cand.zscore(u);
        if score != Some(*r) {
            return Err(ferr(&format!(
                "'{}' is not a candidate of '{}' with score {}",
                error::key_text(u),
                error::key_text(base),
                model::format_score(*r)
            )));
        }
    }
    if state == State::Open {
        return Err(ferr(&format!(
            "shard '{}' is not frozen (LUCKYBAG.FREEZE first)",
            error::key_text(base)
        )));
    }
    check_true_top(ctx, base, shards, &list, last)?;
    if state == State::Drawn {
        if same_list(&stored_list(&won, winners as usize), &list) {
            return Ok(RedisValue::Integer(list.len() as i64));
        }
        return Err(ferr("the shard was published with other winners"));
    }
    if verify {
        return Ok(RedisValue::Integer(list.len() as i64));
    }
    write_list(ctx, &meta, &won, &list);
    meta.hput(field::STATE.as_bytes(), model::DRAWN);
    drop((won, meta));
    ctx.replicate_verbatim();
    util::notify_static(ctx, c"hotpath.luckybag.publish", &args[1]);
    Ok(RedisValue::Integer(list.len() as i64))
}

/// Refuses a shard's winners that are not its true top
/// ([`model::check_true_top`]): reads the shard's best `list.len() + 1`
/// candidates over its internal pools (types checked by the caller's
/// reads of the same pools).
fn check_true_top(
    ctx: &Context,
    base: &[u8],
    shards: u64,
    list: &[(&[u8], f64)],
    last: Option<(&[u8], f64)>,
) -> Result<(), RedisError> {
    let mut pools = Vec::with_capacity(shards as usize);
    for s in 0..shards {
        let cand = Key::open(ctx, &cand_name(base, s), false);
        cand.check(KeyType::ZSet)?;
        pools.push(cand);
    }
    let top = top_candidates(&pools, list.len() + 1);
    drop(pools);
    let top: Vec<(&[u8], f64)> = top
        .iter()
        .map(|Candidate(u, s)| (u.as_slice(), *s))
        .collect();
    model::check_true_top(list, &top, last).map_err(|e| {
        let score = model::format_score;
        let (u, s, k) = (error::key_text(&e.user), score(e.score), error::key_text(base));
        ferr(&match &e.above {
            Some((w, r)) => format!(
                "not the true top: '{u}' with score {s} of '{k}' is not a winner but does not rank after '{}' with score {}",
                error::key_text(w),
                score(*r)
            ),
            None => format!(
                "not the true top: '{u}' with score {s} of '{k}' is not a winner but the winner list is shorter than WINNERS without LAST"
            ),
        })
    })
}
