//! POLL's handlers: parse and validate everything, open keys (every type
//! check before any value check), read, plan with the model (CREATE:
//! `Create::validate`, `plan_create_existing`, `plan_create`), apply,
//! reply, replicate, notify. Every error comes before the first write
//! (tests/no_partial_writes.rs).

use std::ffi::CStr;
use std::time::Instant;

use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use super::model::{self, Frozen, Mode, Rules};
use crate::args::Cursor;
use crate::argv::{Args, Options};
use crate::error;
use crate::keys::call::zrevrange_withscores;
use crate::keys::{derived, derived_name, HashField, Key, KeyType, ZScan};
use crate::slices::{self, Job, Step};
use crate::spread::{route, scope, shard};
use crate::util::{self, bulk};
use crate::{config, keys, replicate};

const FAMILY: &str = "poll";

fn fail(msg: &str) -> RedisError {
    error::family(FAMILY, msg)
}

fn corrupt(key: &[u8], field: &[u8]) -> RedisError {
    error::corrupt(FAMILY, key, Some(&error::key_text(field)))
}

/// The keys of one poll.
struct PollKeys {
    base: Vec<u8>,
}

impl PollKeys {
    fn name(&self, suffix: &str) -> Vec<u8> {
        derived(&self.base, suffix)
    }
    fn open(&self, ctx: &Context, suffix: &str, write: bool) -> Key {
        Key::derived(ctx, &self.base, suffix, write)
    }
}

fn base_of(ctx: &Context, c: &mut Cursor) -> Result<PollKeys, RedisError> {
    let base = c.next_bytes()?;
    util::require_hash_tag(ctx, FAMILY, &base)?;
    Ok(PollKeys { base })
}

fn nonempty(v: Vec<u8>, what: &str) -> Result<Vec<u8>, RedisError> {
    if v.is_empty() {
        return Err(fail(&format!("{what} must not be empty")));
    }
    Ok(v)
}

fn user_arg(v: Vec<u8>) -> Result<Vec<u8>, RedisError> {
    if v.is_empty() {
        return Err(error::empty_user(FAMILY));
    }
    Ok(v)
}

// ---- spread polls (docs/spread.md) ----

/// A spread poll's data keys besides `B:meta`: data there without a
/// record means the record was deleted by hand.
const POLL: scope::Family = scope::Family {
    name: FAMILY,
    data: &["voted", "board", "uservotes", "synced", "syncing"],
};

/// Returns the shard of a spread poll `base` is, from the `SPREAD n` the
/// call declared and the record in `B:meta`; `None` for a single-slot
/// poll. A key that does not look like a shard key and declares nothing
/// costs one byte comparison. With `user`, the voter must belong to this
/// shard (a voter's dedup lives in one shard: docs/spread.md §4).
fn spread_of(
    ctx: &Context,
    base: &[u8],
    declared: Option<u32>,
    user: Option<&[u8]>,
) -> Result<Option<shard::Shard>, RedisError> {
    if !scope::may_spread(base, declared) {
        return Ok(None);
    }
    let meta = scope::open_meta(ctx, base)?;
    spread_in(ctx, base, declared, &meta, user)
}

/// [`spread_of`] with `B:meta` already open and type-checked.
#[inline]
fn spread_in(
    ctx: &Context,
    base: &[u8],
    declared: Option<u32>,
    meta: &Key,
    user: Option<&[u8]>,
) -> Result<Option<shard::Shard>, RedisError> {
    let member = user.map(|u| ("user", u));
    scope::resolve(ctx, &POLL, base, declared, Some(meta), None, member)
}

/// For a single-slot command on `base` that found none of the poll's keys
/// (`B:meta`, `B:board`, `B:voted`): refuses the base key of a spread
/// poll. Costs nothing once the poll has a key.
fn refuse_base(
    ctx: &Context,
    base: &[u8],
    spread: Option<shard::Shard>,
    found: bool,
) -> Result<(), RedisError> {
    if spread.is_none() && !found {
        scope::refuse_base(ctx, &POLL, base)?;
    }
    Ok(())
}

/// Returns true when one of a poll's main keys (`B:meta`, `B:board`,
/// `B:voted`) exists: a command that opened only some of them asks for
/// the others before it refuses the base key of a spread poll.
fn poll_found(ctx: &Context, base: &[u8]) -> bool {
    ["meta", "board", "voted"]
        .iter()
        .any(|s| Key::open(ctx, &derived_name(base, s), false).exists())
}

/// Parses trailing `[NOW unix-ms] [SPREAD n]`, in either order (a master
/// appends `NOW` after `SPREAD n` when it replicates a call that read its
/// clock); returns (now, given, declared count).
fn trailing_now_spread(c: &mut impl Options) -> Result<(i64, bool, Option<u32>), RedisError> {
    let (now, declared) = scope::now_and_spread(FAMILY, c, model::MAX_TIME_MS)?;
    match now {
        Some(t) => Ok((t, true, declared)),
        None => Ok((util::now_ms(), false, declared)),
    }
}

/// Reads a poll's rules from an open, type-checked `B:meta`: the defaults
/// for a poll never created (no `B:meta`, or one that only holds the
/// write-back state), an error naming the field when `rules` was edited
/// into something CREATE never writes.
fn read_rules(meta: &Key, base: &[u8]) -> Result<Rules, RedisError> {
    if !meta.exists() {
        return Ok(Rules::default());
    }
    // One packed field: each field read costs about as much as a whole
    // HSET, and VOTE reads the rules on every call.
    thread_local! {
        /// The field name, made once: a C-string field costs a string per
        /// call inside Redis.
        static RULES: RedisString = RedisString::create_from_slice(std::ptr::null_mut(), b"rules");
    }
    match RULES.with(|f| meta.hget_arg(keys::HashField::Arg(f))) {
        None => Ok(Rules::default()),
        Some(v) => {
            unpack_rules(v.as_slice()).ok_or_else(|| corrupt(&derived(base, "meta"), b"rules"))
        }
    }
}

/// Parses a `rules` field, reusing the last result when the field is the
/// same as last time (a hot poll): the parse is a pure function of the
/// bytes, so the cache is never stale.
fn unpack_rules(v: &[u8]) -> Option<Rules> {
    thread_local! {
        static LAST: std::cell::RefCell<(Vec<u8>, Option<Rules>)> =
            const { std::cell::RefCell::new((Vec::new(), None)) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if last.1.is_none() || last.0 != v {
            let rules = Rules::unpack(v)?;
            last.0.clear();
            last.0.extend_from_slice(v);
            last.1 = Some(rules);
        }
        last.1.clone()
    })
}

/// Reads an integer field of `B:meta` (`epoch`, `pending`): 0 when absent,
/// an error naming the field when it is not an integer of the range the
/// module writes.
fn meta_int(meta: &Key, base: &[u8], field: &'static CStr) -> Result<i64, RedisError> {
    match meta.hget_arg(keys::HashField::Name(field)) {
        None => Ok(0),
        Some(v) => model::parse_int(v.as_slice())
            .filter(|n| *n >= 0)
            .ok_or_else(|| corrupt(&derived(base, "meta"), field.to_bytes())),
    }
}

/// Reads a MULTI user's vote list from an open, type-checked
/// `B:uservotes`; an error naming the user's field when it is not a JSON
/// array of strings.
fn user_votes(uv: &Key, base: &[u8], user: &[u8]) -> Result<Vec<String>, RedisError> {
    match uv.hget(user) {
        None => Ok(Vec::new()),
        Some(j) => {
            model::parse_user_votes(&j).ok_or_else(|| corrupt(&derived(base, "uservotes"), user))
        }
    }
}

/// Returns the candidate of a ballot's audit record, or an error naming
/// the ballot's field when the record is not `<candidate>:<unix-ms>`.
fn ballot_candidate(record: &[u8], base: &[u8], field: &[u8]) -> Result<Vec<u8>, RedisError> {
    model::ballot_candidate(record)
        .map(<[u8]>::to_vec)
        .ok_or_else(|| corrupt(&derived(base, "voted"), field))
}

/// Returns a board count, or an error naming the candidate when the score
/// is not a whole number of votes (edited by hand).
fn votes(score: f64, key: &[u8], cand: &[u8]) -> Result<i64, RedisError> {
    model::votes_of(score).ok_or_else(|| corrupt(key, cand))
}

/// Gives a key the poll just created the poll's absolute expiry (none when
/// 0). The same instant on the master, on replicas and in the AOF, since
/// it comes from `B:meta`, never from a remaining time.
fn expire_new(key: &Key, at: i64) {
    if at > 0 && key.exists() {
        key.set_abs_expire_ms(at);
    }
}

fn ints(n: i64) -> RedisValue {
    RedisValue::Integer(n)
}

/// POLL.CREATE B [MODE ONCE|DAILY|MULTI] [MAXVOTES n] [CANDIDATES n c1 … cn]
/// [START unix-ms] [END unix-ms] [TZ minutes] [TTL seconds] [NOW unix-ms]
///
/// Parse and validate ([`parse_create`]), type-check the poll's keys,
/// decide ([`model::plan_create_existing`] when some exist, else the
/// spread checks and [`model::plan_create`]), then write the plan
/// ([`apply_create`]), replicate and reply.
pub fn poll_create(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let keys = base_of(ctx, &mut c)?;
    let (create, now, spread) = parse_create(&mut c, &keys.base)?;
    create.validate().map_err(|r| fail(r.message()))?;
    let had_now = now.is_some();
    let now = now.unwrap_or_else(util::now_ms);

    let meta = keys.open(ctx, "meta", true);
    let board = keys.open(ctx, "board", true);
    let voted = keys.open(ctx, "voted", true);
    meta.check(KeyType::Hash)?;
    board.check(KeyType::ZSet)?;
    voted.check(KeyType::Hash)?;
    let declared = spread.map(|s| (s.n, s.i));
    if meta.exists() || board.exists() || voted.exists() {
        let found = match (spread, meta.exists()) {
            (Some(sh), true) => Some(shard_found(&keys.base, &create, sh, &meta, &board)?),
            _ => None,
        };
        return match model::plan_create_existing(declared, found) {
            // The same shard with the same rules and count, created again
            // (a creation that failed half way is run again): OK, and
            // nothing changes, the first expiry included.
            Ok(()) => Ok(RedisValue::SimpleStringStatic("OK")),
            Err(model::CreateRefusal::CountsDisagree { have: (n, i) }) => {
                Err(shard::counts_disagree(
                    FAMILY,
                    &keys.base,
                    declared.map_or(0, |d| d.0),
                    shard::Shard { n, i },
                ))
            }
            Err(r) => Err(fail(r.message())),
        };
    }
    refuse_shadowing(ctx, &keys.base, spread)?;
    match model::plan_create(&create, declared, now, util::now_ms()) {
        model::CreatePlan::BornExpired => {}
        model::CreatePlan::Create {
            meta: fields,
            board: candidates,
            expires,
        } => {
            apply_create(&meta, &board, &fields, &candidates, expires);
            replicate::with_clock(ctx, c.args(), now, had_now);
            util::notify(ctx, "hotpath.poll.create", &keys.base);
        }
    }
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// Parses POLL.CREATE's options after the key: the arguments, the `NOW`
/// given, and the shard `SPREAD n` makes of the key (which must be that
/// shard's key: docs/spread.md).
fn parse_create(
    c: &mut Cursor,
    base: &[u8],
) -> Result<(model::Create, Option<i64>, Option<shard::Shard>), RedisError> {
    let mut a = model::Create::default();
    let mut now: Option<i64> = None;
    let mut declared = None;
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "MODE" => {
                let v = c.option_bytes()?;
                a.mode = Mode::parse(v).ok_or_else(error::syntax)?;
            }
            "MAXVOTES" => a.maxvotes = Some(c.option_i64(1, model::MAX_MAXVOTES)?),
            "CANDIDATES" => {
                let n = c.option_i64(1, model::MAX_CANDIDATES)? as usize;
                if c.remaining() < n {
                    return Err(error::syntax());
                }
                let mut list = Vec::with_capacity(n);
                for _ in 0..n {
                    list.push(nonempty(c.next_bytes()?, "candidate")?);
                }
                a.candidates = Some(list);
            }
            "START" => a.start = c.option_i64(0, model::MAX_TIME_MS)?,
            "END" => a.end = c.option_i64(0, model::MAX_TIME_MS)?,
            "TZ" => a.tz = c.option_i64(-model::MAX_TZ_MINUTES, model::MAX_TZ_MINUTES)?,
            "TTL" => a.ttl = c.option_i64(1, model::MAX_TTL_S)?,
            "NOW" => now = Some(c.option_i64(0, model::MAX_TIME_MS)?),
            "SPREAD" => declared = Some(shard::parse_count(FAMILY, c.option_bytes()?)?),
            _ => return Err(error::syntax()),
        }
    }
    let spread = match declared {
        Some(n) => Some(shard::Shard {
            n,
            i: route::shard_index(base, n)
                .ok_or_else(|| shard::not_a_shard_key(FAMILY, base, n))?,
        }),
        None => None,
    };
    Ok((a, now, spread))
}

/// Reads what a creation of a spread poll's shard needs to know of the
/// shard found there: its record, whether its rules and its board are the
/// ones asked for.
fn shard_found(
    base: &[u8],
    create: &model::Create,
    declared: shard::Shard,
    meta: &Key,
    board: &Key,
) -> Result<model::ShardFound, RedisError> {
    let record = scope::record(FAMILY, base, meta)?.map(|r| (r.n, r.i));
    // The rules and the board matter (and are read) only for the very
    // shard declared.
    let mine = record == Some((declared.n, declared.i));
    let same_rules = mine && model::same_rules(&read_rules(meta, base)?, create);
    let same_candidates = mine
        && match &create.candidates {
            None => true,
            Some(_) => {
                let distinct = create.distinct_candidates();
                board.len() == distinct.len() && distinct.iter().all(|c| board.zscore(c).is_some())
            }
        };
    Ok(model::ShardFound {
        record,
        same_rules,
        same_candidates,
    })
}

/// Refuses a new poll that would shadow another: a single-slot poll where
/// a spread one lives, or shard 0 of a spread poll where a single-slot
/// poll lives under the base (in that slot when it has a hash tag, or on a
/// standalone server).
fn refuse_shadowing(
    ctx: &Context,
    base: &[u8],
    spread: Option<shard::Shard>,
) -> Result<(), RedisError> {
    match spread {
        None => scope::refuse_base(ctx, &POLL, base),
        Some(shard::Shard { i: 0, .. }) => {
            let b = route::shard_base(base).unwrap_or(base);
            if (util::has_hash_tag(b) || !util::cluster_mode(ctx)) && poll_found(ctx, b) {
                return Err(fail(&format!(
                    "'{}' is a single-slot poll already",
                    error::key_text(b)
                )));
            }
            Ok(())
        }
        Some(_) => Ok(()),
    }
}

/// Writes a new poll's plan: `B:meta`'s fields, the candidates on a new
/// board, then the poll's absolute expiry on both keys.
fn apply_create(
    meta: &Key,
    board: &Key,
    fields: &[(&[u8], Vec<u8>)],
    candidates: &[Vec<u8>],
    expires: i64,
) {
    for (f, v) in fields {
        meta.hput(f, v);
    }
    for cand in candidates {
        board.zadd(cand, 0.0);
    }
    expire_new(meta, expires);
    expire_new(board, expires);
}

/// POLL.VOTE B user candidate [NOW unix-ms]
pub fn poll_vote(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(4)?;
    // The hot path reads the key, user and candidate where Redis holds
    // them (argv.rs): no copies, no vector.
    c.skip(3)?;
    let base = c.arg(1);
    util::require_hash_tag(ctx, FAMILY, base)?;
    if c.arg(2).is_empty() {
        return Err(error::empty_user(FAMILY));
    }
    if c.arg(3).is_empty() {
        return Err(fail("candidate must not be empty"));
    }
    let (now, had_now, declared) = trailing_now_spread(c)?;
    let (base, user, cand) = (c.arg(1), c.arg(2), c.arg(3));

    // Every type check first, then the rules and the values.
    let meta = Key::derived_hot(ctx, base, "meta", false);
    meta.check(KeyType::Hash)?;
    // A shard of a spread poll takes only its own voters.
    let spread = spread_in(ctx, base, declared, &meta, Some(user))?;
    let voted = Key::derived_hot(ctx, base, "voted", true);
    voted.check(KeyType::Hash)?;
    let board = Key::derived_hot(ctx, base, "board", true);
    board.check(KeyType::ZSet)?;
    refuse_base(
        ctx,
        base,
        spread,
        meta.exists() || voted.exists() || board.exists(),
    )?;
    let rules = read_rules(&meta, base)?;
    drop(meta);
    let uservotes = if rules.mode == Mode::Multi {
        let k = Key::derived_hot(ctx, base, "uservotes", true);
        k.check(KeyType::Hash)?;
        Some(k)
    } else {
        None
    };
    // Plan from what is read; nothing is written before the plan.
    let score = board.zscore_arg(c.string(3));
    let read_list = || {
        let uv = uservotes.as_ref().expect("MULTI opens B:uservotes");
        user_votes(uv, base, user)
    };
    let taken = |field: &[u8]| match rules.mode {
        Mode::Once => voted.hget_arg(HashField::Arg(c.string(2))).is_some(),
        _ => voted.hget(field).is_some(),
    };
    let plan = model::plan_vote(&rules, now, user, cand, score, read_list, taken).map_err(|r| {
        match (r.message(), r) {
            (Some(m), _) => fail(m),
            (None, model::VoteRefusal::Read(e)) => e,
            (None, _) => {
                let name = derived(base, "board");
                error::overflow(FAMILY, &name, Some(&error::key_text(cand)))
            }
        }
    })?;
    let model::VotePlan::Count {
        field,
        record,
        list,
    } = plan
    else {
        super::DUPLICATES.incr();
        return Ok(ints(0));
    };
    // Apply.
    let created = (voted.exists(), board.exists());
    match &field {
        None => voted.hput_arg(c.string(2), &record),
        Some(f) => voted.hput(f, &record),
    }
    board.zincrby_arg(c.string(3), 1.0);
    if let (Some(uv), Some(list)) = (&uservotes, &list) {
        let had = uv.exists();
        uv.hput(user, list.as_bytes());
        if !had {
            expire_new(uv, rules.expires);
        }
    }
    if !created.0 {
        expire_new(&voted, rules.expires);
    }
    if !created.1 {
        expire_new(&board, rules.expires);
    }
    super::VOTES.incr();
    replicate::with_clock(ctx, c.all(), now, had_now);
    util::notify_static(ctx, c"hotpath.poll.vote", c.string(1));
    Ok(ints(1))
}

/// POLL.REVOKE B user [candidate] [NOW unix-ms]
pub fn poll_revoke(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let keys = base_of(ctx, &mut c)?;
    let user = user_arg(c.next_bytes()?)?;
    // The options come in pairs: an odd count starts with the candidate.
    let only: Option<Vec<u8>> = match c.remaining() % 2 {
        1 => Some(nonempty(c.next_bytes()?, "candidate")?),
        _ => None,
    };
    let (now, had_now, declared) = trailing_now_spread(&mut c)?;

    let meta = keys.open(ctx, "meta", false);
    meta.check(KeyType::Hash)?;
    let spread = spread_in(ctx, &keys.base, declared, &meta, Some(&user))?;
    let voted = keys.open(ctx, "voted", true);
    let board = keys.open(ctx, "board", true);
    voted.check(KeyType::Hash)?;
    board.check(KeyType::ZSet)?;
    refuse_base(
        ctx,
        &keys.base,
        spread,
        meta.exists() || voted.exists() || board.exists(),
    )?;
    let rules = read_rules(&meta, &keys.base)?;
    drop(meta);
    let uv = (rules.mode == Mode::Multi).then(|| keys.open(ctx, "uservotes", true));
    let plan = model::plan_revoke(
        &rules,
        now,
        &user,
        only.as_deref(),
        |field| match voted.hget(field) {
            Some(v) => ballot_candidate(&v, &keys.base, field).map(Some),
            None => Ok(None),
        },
        || {
            let uv = uv.as_ref().expect("MULTI opens B:uservotes");
            uv.check(KeyType::Hash)?;
            user_votes(uv, &keys.base, &user)
        },
    )?;
    // Apply.
    for f in &plan.del {
        voted.hdel(f);
    }
    if let (Some(uv), Some(list)) = (&uv, &plan.list) {
        match list {
            None => uv.hdel(&user),
            Some(l) => {
                uv.hput(&user, l.as_bytes());
                true
            }
        };
    }
    let taken = plan.taken;
    for cand in &taken {
        if board.zscore(cand).is_some() {
            board.zincrby(cand, -1.0);
        }
    }
    if !taken.is_empty() {
        super::REVOKED.add(taken.len() as u64);
        replicate::with_clock(ctx, c.args(), now, had_now);
        util::notify(ctx, "hotpath.poll.revoke", &keys.base);
    }
    Ok(ints(taken.len() as i64))
}

/// TOP walks the board itself up to this offset; beyond it `ZREVRANGE`
/// finds the start by rank in O(log N).
const WALK_MAX_OFFSET: i64 = 1024;

/// POLL.TOP B [count] [OFFSET o]
pub fn poll_top(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let keys = base_of(ctx, &mut c)?;
    let mut count = 10i64;
    let mut offset = 0i64;
    let mut first = true;
    let mut declared = None;
    while !c.done() {
        let a = c.next()?;
        if a.as_slice().eq_ignore_ascii_case(b"OFFSET") {
            offset = c.option_i64(0, i64::MAX)?;
        } else if scope::is_keyword(a.as_slice()) {
            declared = Some(shard::parse_count(FAMILY, c.option_bytes()?)?);
        } else if first {
            count = crate::args::parse_i64(a.as_slice(), 0, i64::MAX)?;
        } else {
            return Err(error::syntax());
        }
        first = false;
    }
    let max = config::get(&config::POLL_RANGE_MAX);
    if count > max {
        return Err(fail(&format!(
            "count must be at most {max} (poll-range-max)"
        )));
    }
    let spread = spread_of(ctx, &keys.base, declared, None)?;
    let board = keys.open(ctx, "board", false);
    board.check(KeyType::ZSet)?;
    if spread.is_none() && !board.exists() {
        refuse_base(ctx, &keys.base, spread, poll_found(ctx, &keys.base))?;
    }
    let len = board.len() as i64;
    if count == 0 || offset >= len {
        return Ok(RedisValue::Array(Vec::new()));
    }
    let entries = if offset <= WALK_MAX_OFFSET {
        board.zrange_desc(offset as usize, count as usize)
    } else {
        drop(board);
        zrevrange_withscores(
            ctx,
            &keys.name("board"),
            offset,
            offset.saturating_add(count - 1),
        )?
    };
    let name = keys.name("board");
    let mut out = Vec::with_capacity(entries.len() * 2);
    for (cand, score) in entries {
        let v = votes(score, &name, &cand)?;
        out.push(bulk(cand));
        out.push(ints(v));
    }
    Ok(util::rows(ctx, out, 2))
}

/// POLL.RANK B candidate
pub fn poll_rank(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let keys = base_of(ctx, &mut c)?;
    let declared = scope::only(FAMILY, c.args(), 3)?;
    let cand = nonempty(c.next_bytes()?, "candidate")?;
    let spread = spread_of(ctx, &keys.base, declared, None)?;
    let board = keys.open(ctx, "board", false);
    board.check(KeyType::ZSet)?;
    let Some(score) = board.zscore(&cand) else {
        if !board.exists() {
            refuse_base(ctx, &keys.base, spread, poll_found(ctx, &keys.base))?;
        }
        return Ok(RedisValue::Null);
    };
    drop(board);
    let name = keys.name("board");
    let v = votes(score, &name, &cand)?;
    let rank = match ctx.call("ZREVRANK", &[name.as_slice(), cand.as_slice()][..])? {
        RedisValue::Integer(r) => r,
        _ => return Ok(RedisValue::Null),
    };
    Ok(RedisValue::Array(vec![ints(rank), ints(v)]))
}

/// POLL.STATUS B user [NOW unix-ms]
pub fn poll_status(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let keys = base_of(ctx, &mut c)?;
    let user = user_arg(c.next_bytes()?)?;
    let (now, _, declared) = trailing_now_spread(&mut c)?;
    let meta = keys.open(ctx, "meta", false);
    meta.check(KeyType::Hash)?;
    let spread = spread_in(ctx, &keys.base, declared, &meta, Some(&user))?;
    let voted = keys.open(ctx, "voted", false);
    voted.check(KeyType::Hash)?;
    if !meta.exists() && !voted.exists() {
        refuse_base(ctx, &keys.base, spread, poll_found(ctx, &keys.base))?;
    }
    let rules = read_rules(&meta, &keys.base)?;
    let out: Vec<RedisValue> = match rules.mode {
        Mode::Once | Mode::Daily => {
            let day = if rules.mode == Mode::Daily {
                model::day_of(now, rules.tz_minutes)
            } else {
                0
            };
            let field = model::ballot_field(rules.mode, &user, b"", day);
            match voted.hget(&field) {
                Some(v) => vec![bulk(ballot_candidate(&v, &keys.base, &field)?)],
                None => Vec::new(),
            }
        }
        Mode::Multi => {
            let uv = keys.open(ctx, "uservotes", false);
            uv.check(KeyType::Hash)?;
            user_votes(&uv, &keys.base, &user)?
                .into_iter()
                .map(|s| bulk(s.into_bytes()))
                .collect()
        }
    };
    Ok(RedisValue::Array(out))
}

/// POLL.INFO B
pub fn poll_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let declared = scope::only(FAMILY, c.args(), 2)?;
    let keys = base_of(ctx, &mut c)?;
    let meta = keys.open(ctx, "meta", false);
    let voted = keys.open(ctx, "voted", false);
    let board = keys.open(ctx, "board", false);
    meta.check(KeyType::Hash)?;
    voted.check(KeyType::Hash)?;
    board.check(KeyType::ZSet)?;
    let spread = spread_in(ctx, &keys.base, declared, &meta, None)?;
    refuse_base(
        ctx,
        &keys.base,
        spread,
        meta.exists() || voted.exists() || board.exists(),
    )?;
    let rules = read_rules(&meta, &keys.base)?;
    // Every counted vote is one ballot in B:voted and one point on the
    // board, and REVOKE takes both back: the board's total is the number
    // of ballots, read in O(1) instead of summing the board.
    let ballots = voted.len() as i64;
    let mut out = vec![
        bulk("mode"),
        bulk(rules.mode.as_str()),
        bulk("maxvotes"),
        ints(rules.maxvotes),
        bulk("start"),
        ints(rules.start),
        bulk("end"),
        ints(rules.end),
        bulk("ballots"),
        ints(ballots),
        bulk("votes"),
        ints(ballots),
    ];
    // A shard says which one it is, and its absolute expiry (0: none), so
    // that a client completing a creation gives every shard that instant.
    if let Some(sh) = spread {
        out.extend([
            bulk("spread"),
            ints(i64::from(sh.n)),
            bulk("shard"),
            ints(i64::from(sh.i)),
            bulk("expires"),
            ints(rules.expires),
        ]);
    }
    Ok(util::map(ctx, out))
}

/// POLL.SYNC as a job (see slices.rs). With the server lock, a slice at a
/// time: a scan of the board (a freeze) or of the frozen snapshot (a
/// retry), each candidate looked up in `B:synced` on the way; for a freeze,
/// the copy written into `B:syncing` in the board's order (so each insert
/// lands at the head of the skiplist instead of searching it); then a scan
/// of `B:synced` for the candidates that left the board. Without the lock:
/// sorting and building the reply.
struct SyncJob {
    base: Vec<u8>,
    epoch: i64,
    /// The rules' absolute expiry, for the keys SYNC creates.
    expires: i64,
    /// True for a freeze, false for a retry of a frozen snapshot.
    freeze: bool,
    phase: SyncPhase,
    /// (candidate, frozen votes, acknowledged votes): in scan order while
    /// reading, then sorted (votes, then name, descending) and without the
    /// candidates a scan met twice.
    frozen: Vec<Frozen>,
    /// (candidate, acknowledged votes) of the candidates not frozen.
    gone: Vec<(Vec<u8>, i64)>,
    /// Held while freezing: one freeze per poll at a time.
    claim: Option<slices::Claim>,
    /// The reply, once built without the lock.
    result: Option<RedisValue>,
    /// The dataset generation the job started in (see slices.rs).
    generation: u64,
    /// The scanned key existed in an earlier slice.
    seen: bool,
}

/// The poll was deleted or its database flushed while a SYNC worked on it.
fn changed() -> RedisError {
    fail("the poll was deleted or flushed during SYNC, call SYNC again")
}

/// Makes room for at least one more slice's entries in `v`.
fn reserve<T>(v: &mut Vec<T>) {
    const ROOM: usize = 1 << 16;
    if v.capacity() - v.len() < ROOM {
        v.reserve(ROOM.max(v.len()));
    }
}

/// Entries up to this many are sorted within a slice; more are sorted
/// without the lock.
const INLINE_SORT: usize = 4096;
/// Candidates a freeze slice writes between two looks at the clock (one
/// replicated `ZADD` each).
const WRITE_CHUNK: usize = 128;

enum SyncPhase {
    /// Reading the board (freeze) or the frozen snapshot (retry).
    Read(ZScan),
    /// Read: the entries wait to be sorted.
    Sort,
    /// Writing the sorted copy into `B:syncing` from this index (freeze).
    Write(usize),
    /// Reading `B:synced` for candidates that are not in the snapshot.
    Gone(ZScan),
    /// Read: the reply waits to be built.
    Done,
}

impl SyncJob {
    /// Scans one slice of the board (freeze) or of the frozen snapshot
    /// (retry).
    fn read(&mut self, ctx: &Context, deadline: Instant) -> Result<(), RedisError> {
        let SyncPhase::Read(scan) = &mut self.phase else {
            return Ok(());
        };
        let from_name = derived(&self.base, if self.freeze { "board" } else { "syncing" });
        let synced_name = derived(&self.base, "synced");
        let from = Key::open(ctx, &from_name, false);
        let synced = Key::open(ctx, &synced_name, false);
        from.check(KeyType::ZSet)?;
        synced.check(KeyType::ZSet)?;
        // Deleted between two slices: the copy would be half a board.
        if self.seen && !from.exists() {
            return Err(changed());
        }
        self.seen |= from.exists();
        let mut bad: Option<RedisError> = None;
        let mut more = true;
        let mut budget = slices::Budget::until(deadline);
        let frozen = &mut self.frozen;
        while more && bad.is_none() && !budget.spent() {
            more = scan.step(&from, &mut |member, score| {
                // The first corrupt count is the one reported.
                if bad.is_some() {
                    return;
                }
                let m = member.as_slice();
                let Some(v) = score.parse_float().ok().and_then(model::votes_of) else {
                    bad = Some(corrupt(&from_name, m));
                    return;
                };
                let acked = match synced.zscore_arg(&member).map(model::votes_of) {
                    None => 0,
                    Some(Some(a)) => a,
                    Some(None) => {
                        bad = Some(corrupt(&synced_name, m));
                        return;
                    }
                };
                frozen.push((m.to_vec(), v, acked));
            });
        }
        if let Some(e) = bad {
            return Err(e);
        }
        if !more {
            self.phase = SyncPhase::Sort;
        }
        Ok(())
    }

    /// Sorts the frozen entries into the board's order (votes, then name,
    /// descending, as ZREVRANGE lists them), keeping a candidate a scan
    /// met twice at its last sighting.
    fn sort(&mut self) {
        if !matches!(self.phase, SyncPhase::Sort) {
            return;
        }
        self.frozen = model::sort_frozen(std::mem::take(&mut self.frozen));
        self.phase = if self.freeze {
            SyncPhase::Write(0)
        } else {
            SyncPhase::Gone(ZScan::new())
        };
    }

    /// Writes a slice of the sorted copy into `B:syncing`, best first (each
    /// insert at the head of the skiplist), replicated as one `ZADD` per
    /// chunk; the last slice makes it the pending write-back.
    fn write(&mut self, ctx: &Context, deadline: Instant) -> Result<(), RedisError> {
        let SyncPhase::Write(next) = &mut self.phase else {
            return Ok(());
        };
        let syncing = Key::derived(ctx, &self.base, "syncing", true);
        syncing.check(KeyType::ZSet)?;
        let name = syncing.name().safe_clone(ctx);
        while *next < self.frozen.len() {
            let end = (*next + WRITE_CHUNK).min(self.frozen.len());
            let mut argv = Vec::with_capacity(1 + 2 * (end - *next));
            argv.push(name.safe_clone(ctx));
            for (cand, v, _) in &self.frozen[*next..end] {
                let m = RedisString::create_from_slice(ctx.ctx, cand);
                syncing.zadd_arg(&m, *v as f64);
                let score = itoa::Buffer::new().format(*v).as_bytes().to_vec();
                argv.push(RedisString::create_from_slice(ctx.ctx, &score));
                argv.push(m);
            }
            slices::replicate(ctx, c"ZADD", &argv);
            *next = end;
            if Instant::now() >= deadline {
                // Until the copy is complete it is work in progress: a
                // crash leaves it to expire rather than stay until the
                // next SYNC.
                slices::mark_work_in_progress(ctx, &syncing, &derived(&self.base, "syncing"));
                return Ok(());
            }
        }
        self.frozen_done(ctx, &syncing)?;
        self.phase = SyncPhase::Gone(ZScan::new());
        Ok(())
    }

    /// Makes the complete copy the pending write-back: `epoch` and
    /// `pending` in `B:meta`, the poll's expiry on the new keys.
    fn frozen_done(&mut self, ctx: &Context, syncing: &Key) -> Result<(), RedisError> {
        if self.expires > 0 && syncing.exists() {
            expire_new(syncing, self.expires);
            let at = self.expires.to_string();
            ctx.replicate(
                "PEXPIREAT",
                &[&derived(&self.base, "syncing")[..], at.as_bytes()],
            );
        } else if syncing.abs_expire_ms().is_some() {
            // The complete copy is the pending write-back: it stays until
            // SYNCACK, without the expiry it had while being written.
            syncing.persist();
            ctx.replicate("PERSIST", &[&derived(&self.base, "syncing")[..]]);
        }
        let meta = Key::derived(ctx, &self.base, "meta", true);
        meta.check(KeyType::Hash)?;
        let had_meta = meta.exists();
        let e = self.epoch.to_string();
        meta.hput(b"epoch", e.as_bytes());
        meta.hput(b"pending", e.as_bytes());
        let meta_name = derived(&self.base, "meta");
        ctx.replicate(
            "HSET",
            &[
                &meta_name[..],
                b"epoch",
                e.as_bytes(),
                b"pending",
                e.as_bytes(),
            ],
        );
        if !had_meta && self.expires > 0 {
            expire_new(&meta, self.expires);
            let at = self.expires.to_string();
            ctx.replicate("PEXPIREAT", &[&meta_name[..], at.as_bytes()]);
        }
        super::SYNCS.incr();
        util::notify(ctx, "hotpath.poll.sync", &self.base);
        self.claim = None;
        Ok(())
    }

    /// Scans one slice of `B:synced` for candidates the snapshot lacks.
    fn scan_gone(&mut self, ctx: &Context, deadline: Instant) -> Result<(), RedisError> {
        let SyncPhase::Gone(scan) = &mut self.phase else {
            return Ok(());
        };
        let synced_name = derived(&self.base, "synced");
        let synced = Key::open(ctx, &synced_name, false);
        let syncing = Key::derived(ctx, &self.base, "syncing", false);
        synced.check(KeyType::ZSet)?;
        syncing.check(KeyType::ZSet)?;
        let mut bad: Option<RedisError> = None;
        let mut more = true;
        let mut budget = slices::Budget::until(deadline);
        let gone = &mut self.gone;
        while more && bad.is_none() && !budget.spent() {
            more = scan.step(&synced, &mut |member, score| {
                if bad.is_some() {
                    return;
                }
                let Some(v) = score.parse_float().ok().and_then(model::votes_of) else {
                    bad = Some(corrupt(&synced_name, member.as_slice()));
                    return;
                };
                if syncing.zscore_arg(&member).is_none() {
                    gone.push((member.as_slice().to_vec(), v));
                }
            });
        }
        if let Some(e) = bad {
            return Err(e);
        }
        if !more {
            self.phase = SyncPhase::Done;
        }
        Ok(())
    }

    /// A SYNCACK between two slices replaced the snapshots this reply is
    /// made of: refuse rather than mix two epochs.
    fn still_pending(&self, ctx: &Context) -> Result<(), RedisError> {
        if self.freeze && !matches!(self.phase, SyncPhase::Gone(_) | SyncPhase::Done) {
            return Ok(());
        }
        let meta = Key::derived(ctx, &self.base, "meta", false);
        meta.check(KeyType::Hash)?;
        if meta_int(&meta, &self.base, c"pending")? != self.epoch {
            return Err(fail("snapshot acknowledged during SYNC, call SYNC again"));
        }
        Ok(())
    }

    /// Returns `[epoch, candidate, delta, …]`: the frozen candidates in
    /// the frozen board's order, then the ones that left it in the
    /// acknowledged snapshot's order; zero changes left out.
    fn reply(&mut self) -> RedisValue {
        let deltas = model::sync_deltas(
            std::mem::take(&mut self.frozen),
            std::mem::take(&mut self.gone),
        );
        let mut out = Vec::with_capacity(1 + 2 * deltas.len());
        out.push(ints(self.epoch));
        for (c, d) in deltas {
            out.push(bulk(c));
            out.push(ints(d));
        }
        RedisValue::Array(out)
    }

    fn slice(&mut self, ctx: &Context, deadline: Instant) -> Result<bool, RedisError> {
        if slices::generation() != self.generation {
            return Err(changed());
        }
        self.still_pending(ctx)?;
        self.read(ctx, deadline)?;
        if matches!(self.phase, SyncPhase::Sort) {
            if self.frozen.len() > INLINE_SORT {
                return Ok(true);
            }
            self.sort();
        }
        self.write(ctx, deadline)?;
        self.scan_gone(ctx, deadline)?;
        if !matches!(self.phase, SyncPhase::Done) {
            return Ok(true);
        }
        Ok(self.frozen.len() + self.gone.len() > INLINE_SORT)
    }
}

impl Job for SyncJob {
    fn claim(&self) -> Option<&slices::Claim> {
        self.claim.as_ref()
    }

    fn step(&mut self, ctx: &Context, deadline: Instant) -> Step {
        if let Some(reply) = self.result.take() {
            return Step::Done(Ok(reply));
        }
        match self.slice(ctx, deadline) {
            Ok(true) => Step::More,
            // A short reply is built at once; a long one in `compute`.
            Ok(false) => Step::Done(Ok(self.reply())),
            Err(e) => {
                // A freeze that fails leaves no partial snapshot behind.
                if self.freeze && self.claim.is_some() {
                    let syncing = derived(&self.base, "syncing");
                    if let Ok(RedisValue::Integer(1)) =
                        ctx.call("UNLINK", &[syncing.as_slice()][..])
                    {
                        ctx.replicate("UNLINK", &[syncing.as_slice()]);
                    }
                }
                Step::Done(Err(e))
            }
        }
    }

    fn compute(&mut self) {
        self.sort();
        if matches!(self.phase, SyncPhase::Done) && self.result.is_none() {
            self.result = Some(self.reply());
        }
        // Grow the lists here, without the lock: doubling a list of a
        // million entries inside a slice would copy tens of megabytes.
        if matches!(self.phase, SyncPhase::Read(_)) {
            reserve(&mut self.frozen);
        }
        if matches!(self.phase, SyncPhase::Gone(_)) {
            reserve(&mut self.gone);
        }
    }

    fn event(&self) -> &'static CStr {
        c"hotpath-poll-sync"
    }
}

/// POLL.SYNC B
pub fn poll_sync(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let request = slices::request_of(c.args());
    let declared = scope::only(FAMILY, c.args(), 2)?;
    let keys = base_of(ctx, &mut c)?;
    let meta = keys.open(ctx, "meta", false);
    let board = keys.open(ctx, "board", false);
    let synced = keys.open(ctx, "synced", false);
    let syncing = keys.open(ctx, "syncing", false);
    meta.check(KeyType::Hash)?;
    board.check(KeyType::ZSet)?;
    synced.check(KeyType::ZSet)?;
    syncing.check(KeyType::ZSet)?;
    // A shard of a spread poll writes back its own share (the client
    // libraries merge the shards' deltas: docs/spread.md).
    let spread = spread_in(ctx, &keys.base, declared, &meta, None)?;
    let found = meta.exists() || board.exists() || synced.exists() || syncing.exists();
    refuse_base(
        ctx,
        &keys.base,
        spread,
        found || poll_found(ctx, &keys.base),
    )?;
    let rules = read_rules(&meta, &keys.base)?;
    let pending = meta_int(&meta, &keys.base, c"pending")?;
    let last = meta_int(&meta, &keys.base, c"epoch")?;
    drop((meta, board, synced, syncing));
    let start = model::plan_sync(pending, last)
        .map_err(|_| error::overflow(FAMILY, &keys.name("meta"), Some("epoch")))?;
    let (freeze, epoch) = match start {
        model::SyncStart::Freeze { epoch } => (true, epoch),
        model::SyncStart::Retry { epoch } => (false, epoch),
    };
    let mut job = SyncJob {
        base: keys.base.clone(),
        epoch,
        expires: rules.expires,
        freeze,
        phase: SyncPhase::Read(ZScan::new()),
        frozen: Vec::new(),
        gone: Vec::new(),
        claim: None,
        result: None,
        generation: slices::generation(),
        seen: false,
    };
    if freeze {
        // Freeze the board as the new snapshot. A retry of the same SYNC
        // (a client whose timeout fired) waits for the running one and
        // gets its reply.
        job.claim = match slices::claim_or_attach(
            ctx,
            &keys.name("syncing"),
            Some(&request),
            fail("SYNC of this poll is already running"),
        )? {
            Some(claim) => Some(claim),
            None => return Ok(RedisValue::NoReply),
        };
        // An old frozen copy is dropped in the background (UNLINK), so a
        // large one does not stall the server, here or on replicas.
        let syncing_name = keys.name("syncing");
        if let RedisValue::Integer(1) = ctx.call("UNLINK", &[syncing_name.as_slice()][..])? {
            ctx.replicate("UNLINK", &[syncing_name.as_slice()]);
        }
    }
    slices::run(ctx, Box::new(job))
}

/// POLL.SYNCACK B epoch
pub fn poll_syncack(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let declared = scope::only(FAMILY, c.args(), 3)?;
    let keys = base_of(ctx, &mut c)?;
    let epoch = c.next_i64(i64::MIN, i64::MAX)?;
    let meta = keys.open(ctx, "meta", true);
    meta.check(KeyType::Hash)?;
    let synced = keys.open(ctx, "synced", true);
    let syncing = keys.open(ctx, "syncing", true);
    synced.check(KeyType::ZSet)?;
    syncing.check(KeyType::ZSet)?;
    let spread = spread_in(ctx, &keys.base, declared, &meta, None)?;
    if !meta.exists() {
        refuse_base(ctx, &keys.base, spread, poll_found(ctx, &keys.base))?;
    }
    let pending = meta_int(&meta, &keys.base, c"pending")?;
    if !model::plan_syncack(pending, epoch) {
        return Ok(ints(0));
    }
    meta.hput(b"pending", b"0");
    let has_frozen = syncing.exists();
    drop((meta, synced, syncing));
    // The old base goes in the background (UNLINK): freeing a million
    // members at once would stall the server.
    let (from, to) = (keys.name("syncing"), keys.name("synced"));
    ctx.call("UNLINK", &[to.as_slice()][..])?;
    if has_frozen {
        ctx.call("RENAME", &[from.as_slice(), to.as_slice()][..])?;
    }
    ctx.replicate_verbatim();
    util::notify(ctx, "hotpath.poll.syncack", &keys.base);
    Ok(ints(1))
}
