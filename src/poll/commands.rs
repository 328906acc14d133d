//! POLL's handlers: parse and validate everything, open keys (every type
//! check before any value check), apply the model, reply, replicate,
//! notify.

use std::ffi::CStr;
use std::time::Instant;

use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use super::model::{self, Mode, Rules};
use crate::args::Cursor;
use crate::error;
use crate::keys::{derived, Key, KeyType, ZScan};
use crate::slices::{self, Job, Step};
use crate::util::{self, bulk};
use crate::{config, keys};

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

/// Parses a trailing `NOW <unix-ms>`; returns (now, given).
fn trailing_now(c: &mut Cursor) -> Result<(i64, bool), RedisError> {
    if c.done() {
        return Ok((util::now_ms(), false));
    }
    if c.next_keyword()? != "NOW" {
        return Err(error::syntax());
    }
    let now = c.option_i64(0, model::MAX_TIME_MS)?;
    c.expect_done()?;
    Ok((now, true))
}

/// Replicates a command that read the clock: verbatim when the client gave
/// `NOW` (nearly free), else with the master's `NOW` appended.
fn replicate_now(ctx: &Context, args: &[RedisString], now: i64, had_now: bool) {
    if had_now {
        ctx.replicate_verbatim();
    } else {
        util::replicate_args_now(ctx, args, now);
    }
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
pub fn poll_create(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let keys = base_of(ctx, &mut c)?;
    let mut mode = Mode::Once;
    let mut maxvotes: Option<i64> = None;
    let mut candidates: Option<Vec<Vec<u8>>> = None;
    let (mut start, mut end, mut tz, mut ttl) = (0i64, 0i64, 0i64, 0i64);
    let mut now: Option<i64> = None;
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "MODE" => {
                let v = c.option_bytes()?;
                mode = Mode::parse(v).ok_or_else(error::syntax)?;
            }
            "MAXVOTES" => maxvotes = Some(c.option_i64(1, model::MAX_MAXVOTES)?),
            "CANDIDATES" => {
                let n = c.option_i64(1, model::MAX_CANDIDATES)? as usize;
                if c.remaining() < n {
                    return Err(error::syntax());
                }
                let mut list = Vec::with_capacity(n);
                for _ in 0..n {
                    list.push(nonempty(c.next_bytes()?, "candidate")?);
                }
                candidates = Some(list);
            }
            "START" => start = c.option_i64(0, model::MAX_TIME_MS)?,
            "END" => end = c.option_i64(0, model::MAX_TIME_MS)?,
            "TZ" => tz = c.option_i64(-model::MAX_TZ_MINUTES, model::MAX_TZ_MINUTES)?,
            "TTL" => ttl = c.option_i64(1, model::MAX_TTL_S)?,
            "NOW" => now = Some(c.option_i64(0, model::MAX_TIME_MS)?),
            _ => return Err(error::syntax()),
        }
    }
    if maxvotes.is_some() && mode != Mode::Multi {
        return Err(fail("MAXVOTES needs MODE MULTI"));
    }
    let colon = candidates.iter().flatten().any(|c| c.contains(&b':'));
    if mode == Mode::Multi && colon {
        return Err(fail("candidate must not contain ':' in MODE MULTI"));
    }
    let bad_utf8 = candidates
        .iter()
        .flatten()
        .any(|c| std::str::from_utf8(c).is_err());
    if mode == Mode::Multi && bad_utf8 {
        return Err(fail("candidate must be valid UTF-8 in MODE MULTI"));
    }
    if start != 0 && end != 0 && start >= end {
        return Err(fail("START must be before END"));
    }
    let had_now = now.is_some();
    let now = now.unwrap_or_else(util::now_ms);

    let meta = keys.open(ctx, "meta", true);
    let board = keys.open(ctx, "board", true);
    let voted = keys.open(ctx, "voted", true);
    meta.check(KeyType::Hash)?;
    board.check(KeyType::ZSet)?;
    voted.check(KeyType::Hash)?;
    if meta.exists() || board.exists() || voted.exists() {
        return Err(fail("poll already exists"));
    }
    let maxvotes = match mode {
        Mode::Multi => maxvotes.unwrap_or(model::DEFAULT_MAXVOTES),
        _ => 1,
    };
    let expires = if ttl > 0 { now + ttl * 1000 } else { 0 };
    if expires > 0 && expires <= util::now_ms() {
        // Born expired (NOW + TTL already past): like SET with a past
        // PXAT, nothing is kept, and nothing reaches replicas.
        return Ok(RedisValue::SimpleStringStatic("OK"));
    }
    let rules = Rules {
        mode,
        maxvotes,
        start,
        end,
        tz_minutes: tz,
        closed: candidates.is_some(),
        expires,
    };
    // `rules` first: every vote reads it, and a small hash is searched
    // from its first field.
    meta.hput(b"rules", rules.pack().as_bytes());
    let fields: [(&[u8], String); 7] = [
        (b"mode", mode.as_str().to_string()),
        (b"maxvotes", maxvotes.to_string()),
        (b"start", start.to_string()),
        (b"end", end.to_string()),
        (b"tz", tz.to_string()),
        (b"closed", (candidates.is_some() as i64).to_string()),
        (b"expires", expires.to_string()),
    ];
    for (f, v) in fields.iter() {
        meta.hput(f, v.as_bytes());
    }
    if let Some(list) = &candidates {
        for cand in list {
            if board.zscore(cand).is_none() {
                board.zadd(cand, 0.0);
            }
        }
    }
    expire_new(&meta, expires);
    expire_new(&board, expires);
    replicate_now(ctx, c.args(), now, had_now);
    util::notify(ctx, "hotpath.poll.create", &keys.base);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// POLL.VOTE B user candidate [NOW unix-ms]
pub fn poll_vote(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 4)?;
    // The hot path reads the key, user and candidate in place: no copies.
    c.skip(3)?;
    let base = c.arg(1);
    util::require_hash_tag(ctx, FAMILY, base)?;
    if c.arg(2).is_empty() {
        return Err(error::empty_user(FAMILY));
    }
    if c.arg(3).is_empty() {
        return Err(fail("candidate must not be empty"));
    }
    let (now, had_now) = trailing_now(&mut c)?;
    let (base, user, cand) = (c.arg(1), c.arg(2), c.arg(3));

    // Every type check first, then the rules and the values.
    let meta = Key::derived_hot(ctx, base, "meta", false);
    meta.check(KeyType::Hash)?;
    let voted = Key::derived_hot(ctx, base, "voted", true);
    voted.check(KeyType::Hash)?;
    let board = Key::derived_hot(ctx, base, "board", true);
    board.check(KeyType::ZSet)?;
    let rules = read_rules(&meta, base)?;
    drop(meta);
    let uservotes = if rules.mode == Mode::Multi {
        let k = Key::derived_hot(ctx, base, "uservotes", true);
        k.check(KeyType::Hash)?;
        Some(k)
    } else {
        None
    };
    if !rules.is_open(now) {
        return Err(fail("not open"));
    }
    if rules.closed && board.zscore_arg(&c.args()[3]).is_none() {
        return Err(fail("unknown candidate"));
    }
    let record = model::ballot_value(cand, now);
    let mut list = Vec::new();
    let field = match rules.mode {
        // The dedup member of ONCE is the user the client sent.
        Mode::Once => None,
        Mode::Daily => Some(model::ballot_field(
            Mode::Daily,
            user,
            cand,
            model::day_of(now, rules.tz_minutes),
        )),
        Mode::Multi => {
            // The dedup member is `user:candidate`: with no ':' in
            // candidates it splits at its last ':' unambiguously, whatever
            // the user id holds. MULTI keeps each user's candidates as a
            // JSON array of strings.
            if cand.contains(&b':') {
                return Err(fail("candidate must not contain ':' in MODE MULTI"));
            }
            let Ok(cand_s) = std::str::from_utf8(cand) else {
                return Err(fail("candidate must be valid UTF-8 in MODE MULTI"));
            };
            let field = model::ballot_field(Mode::Multi, user, cand, 0);
            let uv = uservotes.as_ref().expect("MULTI opens B:uservotes");
            list = user_votes(uv, base, user)?;
            // A ballot without its list entry (a hand edit) is refused as
            // a duplicate by HSETNX below.
            if list.iter().any(|c| c == cand_s) {
                super::DUPLICATES.incr();
                return Ok(ints(0));
            }
            if list.len() as i64 >= rules.maxvotes {
                return Err(fail("vote limit reached"));
            }
            list.push(cand_s.to_string());
            Some(field)
        }
    };
    let created = (voted.exists(), board.exists());
    let counted = match &field {
        None => voted.hset_nx_field_arg(&c.args()[2], &record),
        Some(f) => voted.hset_nx(f, &record),
    };
    if !counted {
        super::DUPLICATES.incr();
        return Ok(ints(0));
    }
    board.zincrby_arg(&c.args()[3], 1.0);
    if let Some(uv) = &uservotes {
        let had = uv.exists();
        uv.hput(user, model::format_user_votes(&list).as_bytes());
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
    replicate_now(ctx, c.args(), now, had_now);
    util::notify_arg(ctx, "hotpath.poll.vote", &c.args()[1]);
    Ok(ints(1))
}

/// POLL.REVOKE B user [candidate] [NOW unix-ms]
pub fn poll_revoke(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let keys = base_of(ctx, &mut c)?;
    let user = user_arg(c.next_bytes()?)?;
    let only: Option<Vec<u8>> = match c.remaining() {
        1 | 3 => Some(nonempty(c.next_bytes()?, "candidate")?),
        _ => None,
    };
    let (now, had_now) = trailing_now(&mut c)?;

    let meta = keys.open(ctx, "meta", false);
    meta.check(KeyType::Hash)?;
    let voted = keys.open(ctx, "voted", true);
    let board = keys.open(ctx, "board", true);
    voted.check(KeyType::Hash)?;
    board.check(KeyType::ZSet)?;
    let rules = read_rules(&meta, &keys.base)?;
    drop(meta);
    let mut taken: Vec<Vec<u8>> = Vec::new();
    match rules.mode {
        Mode::Once | Mode::Daily => {
            let day = if rules.mode == Mode::Daily {
                model::day_of(now, rules.tz_minutes)
            } else {
                0
            };
            let field = model::ballot_field(rules.mode, &user, b"", day);
            if let Some(v) = voted.hget(&field) {
                let cand = ballot_candidate(&v, &keys.base, &field)?;
                if only.as_ref().is_none_or(|o| *o == cand) {
                    voted.hdel(&field);
                    taken.push(cand);
                }
            }
        }
        Mode::Multi => {
            let uv = keys.open(ctx, "uservotes", true);
            uv.check(KeyType::Hash)?;
            let list = user_votes(&uv, &keys.base, &user)?;
            let (gone, kept): (Vec<String>, Vec<String>) = list.into_iter().partition(|cand| {
                only.as_ref()
                    .is_none_or(|o| o.as_slice() == cand.as_bytes())
            });
            for cand in &gone {
                voted.hdel(&model::ballot_field(Mode::Multi, &user, cand.as_bytes(), 0));
                taken.push(cand.as_bytes().to_vec());
            }
            if !gone.is_empty() {
                if kept.is_empty() {
                    uv.hdel(&user);
                } else {
                    uv.hput(&user, model::format_user_votes(&kept).as_bytes());
                }
            }
        }
    }
    for cand in &taken {
        if board.zscore(cand).is_some() {
            board.zincrby(cand, -1.0);
        }
    }
    if !taken.is_empty() {
        super::REVOKED.add(taken.len() as u64);
        replicate_now(ctx, c.args(), now, had_now);
        util::notify(ctx, "hotpath.poll.revoke", &keys.base);
    }
    Ok(ints(taken.len() as i64))
}

/// TOP walks the board itself up to this offset; beyond it `ZREVRANGE`
/// finds the start by rank in O(log N).
const WALK_MAX_OFFSET: i64 = 1024;

/// Returns `ZREVRANGE key start stop WITHSCORES` as (member, score) pairs.
fn rev_range(
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
    let RedisValue::Array(items) = reply else {
        return Ok(Vec::new());
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
    Ok(out)
}

/// POLL.TOP B [count] [OFFSET o]
pub fn poll_top(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let keys = base_of(ctx, &mut c)?;
    let mut count = 10i64;
    let mut offset = 0i64;
    let mut first = true;
    while !c.done() {
        let a = c.next()?;
        if a.as_slice().eq_ignore_ascii_case(b"OFFSET") {
            offset = c.option_i64(0, i64::MAX)?;
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
    let board = keys.open(ctx, "board", false);
    board.check(KeyType::ZSet)?;
    let len = board.len() as i64;
    if count == 0 || offset >= len {
        return Ok(RedisValue::Array(Vec::new()));
    }
    let entries = if offset <= WALK_MAX_OFFSET {
        board.zrange_desc(offset as usize, count as usize)
    } else {
        drop(board);
        rev_range(
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
    Ok(RedisValue::Array(out))
}

/// POLL.RANK B candidate
pub fn poll_rank(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let keys = base_of(ctx, &mut c)?;
    let cand = nonempty(c.next_bytes()?, "candidate")?;
    c.expect_done()?;
    let board = keys.open(ctx, "board", false);
    board.check(KeyType::ZSet)?;
    let Some(score) = board.zscore(&cand) else {
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
    let (now, _) = trailing_now(&mut c)?;
    let meta = keys.open(ctx, "meta", false);
    meta.check(KeyType::Hash)?;
    let voted = keys.open(ctx, "voted", false);
    voted.check(KeyType::Hash)?;
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
    let keys = base_of(ctx, &mut c)?;
    c.expect_done()?;
    let meta = keys.open(ctx, "meta", false);
    let voted = keys.open(ctx, "voted", false);
    let board = keys.open(ctx, "board", false);
    meta.check(KeyType::Hash)?;
    voted.check(KeyType::Hash)?;
    board.check(KeyType::ZSet)?;
    let rules = read_rules(&meta, &keys.base)?;
    // Every counted vote is one ballot in B:voted and one point on the
    // board, and REVOKE takes both back: the board's total is the number
    // of ballots, read in O(1) instead of summing the board.
    let ballots = voted.len() as i64;
    Ok(RedisValue::Array(vec![
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
    ]))
}

/// Candidates read or written per step of a SYNC slice.
const SYNC_BATCH: i64 = 256;

/// POLL.SYNC as a job: the freeze (a copy of the board into `B:syncing`,
/// a scan at a time) and then the deltas (the frozen snapshot against the
/// acknowledged one, by rank), each in slices (see slices.rs).
struct SyncJob {
    base: Vec<u8>,
    epoch: i64,
    /// The rules' absolute expiry, for the keys SYNC creates.
    expires: i64,
    phase: SyncPhase,
    deltas: Vec<RedisValue>,
    /// Held while freezing: one freeze per poll at a time.
    claim: Option<slices::Claim>,
}

enum SyncPhase {
    Freeze(ZScan),
    /// Ranks into `B:syncing`, then into `B:synced` (the candidates that
    /// left the board since the last acknowledged snapshot).
    Frozen {
        rank: i64,
        tail: Option<i64>,
    },
}

impl SyncJob {
    /// Copies a slice of the board into `B:syncing` and replicates it as
    /// one `ZADD`.
    fn freeze(&mut self, ctx: &Context, deadline: Instant) -> Result<bool, RedisError> {
        let SyncPhase::Freeze(scan) = &mut self.phase else {
            return Ok(false);
        };
        let board = Key::derived(ctx, &self.base, "board", false);
        let syncing = Key::derived(ctx, &self.base, "syncing", true);
        board.check(KeyType::ZSet)?;
        syncing.check(KeyType::ZSet)?;
        let name = syncing.name().safe_clone(ctx);
        let mut argv: Vec<RedisString> = vec![name];
        let mut bad: Option<Vec<u8>> = None;
        let mut more = true;
        let mut n = 0usize;
        while more && bad.is_none() && !slices::due(n, deadline) {
            more = scan.step(&board, &mut |member, score| {
                n += 1;
                // The first corrupt member is the one reported.
                if bad.is_some() {
                    return;
                }
                match score
                    .parse_float()
                    .ok()
                    .filter(|s| model::votes_of(*s).is_some())
                {
                    Some(s) => {
                        syncing.zadd_arg(&member, s);
                        argv.push(score);
                        argv.push(member);
                    }
                    None => bad = Some(member.as_slice().to_vec()),
                }
            });
        }
        if let Some(cand) = bad {
            return Err(corrupt(&derived(&self.base, "board"), &cand));
        }
        if argv.len() > 1 {
            slices::replicate(ctx, c"ZADD", &argv);
        }
        if more {
            return Ok(true);
        }
        // The snapshot is complete: it becomes the pending write-back.
        drop(board);
        expire_new(&syncing, self.expires);
        if self.expires > 0 && syncing.exists() {
            let at = self.expires.to_string();
            ctx.replicate(
                "PEXPIREAT",
                &[&derived(&self.base, "syncing")[..], at.as_bytes()],
            );
        }
        drop(syncing);
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
        self.phase = SyncPhase::Frozen {
            rank: 0,
            tail: None,
        };
        Ok(false)
    }

    /// Compares a slice of the frozen snapshot with the acknowledged one.
    fn diff(&mut self, ctx: &Context, deadline: Instant) -> Result<bool, RedisError> {
        let SyncPhase::Frozen { rank, tail } = &mut self.phase else {
            return Ok(true);
        };
        // A SYNCACK between two slices replaced the snapshots this reply
        // is made of: refuse rather than mix two epochs.
        let meta = Key::derived(ctx, &self.base, "meta", false);
        meta.check(KeyType::Hash)?;
        if meta_int(&meta, &self.base, c"pending")? != self.epoch {
            return Err(fail("snapshot acknowledged during SYNC, call SYNC again"));
        }
        drop(meta);
        let (syncing_name, synced_name) = (
            derived(&self.base, "syncing"),
            derived(&self.base, "synced"),
        );
        loop {
            let (from, other, start) = match tail {
                None => (&syncing_name, &synced_name, *rank),
                Some(t) => (&synced_name, &syncing_name, *t),
            };
            let page = rev_range(ctx, from, start, start + SYNC_BATCH - 1)?;
            let other_key = Key::open(ctx, other, false);
            other_key.check(KeyType::ZSet)?;
            for (cand, score) in &page {
                let v = votes(*score, from, cand)?;
                let d = match (tail.is_none(), other_key.zscore(cand)) {
                    (true, acked) => v - acked.map_or(Ok(0), |s| votes(s, other, cand))?,
                    (false, None) => -v,
                    (false, Some(_)) => 0,
                };
                if d != 0 {
                    self.deltas.push(bulk(cand.clone()));
                    self.deltas.push(ints(d));
                }
            }
            let got = page.len() as i64;
            match tail {
                None => *rank += got,
                Some(t) => *t += got,
            }
            if got < SYNC_BATCH {
                if tail.is_some() {
                    return Ok(false);
                }
                *tail = Some(0);
            }
            if Instant::now() >= deadline {
                return Ok(true);
            }
        }
    }
}

impl Job for SyncJob {
    fn step(&mut self, ctx: &Context, deadline: Instant) -> Step {
        let r = self.freeze(ctx, deadline).and_then(|more| {
            if more {
                Ok(true)
            } else {
                self.diff(ctx, deadline)
            }
        });
        match r {
            Ok(true) => Step::More,
            Ok(false) => {
                let mut out = vec![ints(self.epoch)];
                out.append(&mut self.deltas);
                Step::Done(Ok(RedisValue::Array(out)))
            }
            Err(e) => {
                // A freeze that meets a corrupt count leaves no partial
                // snapshot behind.
                if matches!(self.phase, SyncPhase::Freeze(_)) {
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

    fn event(&self) -> &'static CStr {
        c"hotpath-poll-sync"
    }
}

/// POLL.SYNC B
pub fn poll_sync(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let keys = base_of(ctx, &mut c)?;
    c.expect_done()?;
    let meta = keys.open(ctx, "meta", false);
    let board = keys.open(ctx, "board", false);
    let synced = keys.open(ctx, "synced", false);
    let syncing = keys.open(ctx, "syncing", false);
    meta.check(KeyType::Hash)?;
    board.check(KeyType::ZSet)?;
    synced.check(KeyType::ZSet)?;
    syncing.check(KeyType::ZSet)?;
    let rules = read_rules(&meta, &keys.base)?;
    let pending = meta_int(&meta, &keys.base, c"pending")?;
    let last = meta_int(&meta, &keys.base, c"epoch")?;
    drop((meta, board, synced, syncing));
    let mut job = SyncJob {
        base: keys.base.clone(),
        epoch: pending,
        expires: rules.expires,
        phase: SyncPhase::Frozen {
            rank: 0,
            tail: None,
        },
        deltas: Vec::new(),
        claim: None,
    };
    if pending == 0 {
        // Freeze the board as the new snapshot.
        let epoch = last
            .checked_add(1)
            .ok_or_else(|| error::overflow(FAMILY, &keys.name("meta"), Some("epoch")))?;
        job.claim = Some(slices::claim(
            ctx,
            &keys.name("syncing"),
            fail("SYNC of this poll is already running"),
        )?);
        job.epoch = epoch;
        job.phase = SyncPhase::Freeze(ZScan::new());
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
    let keys = base_of(ctx, &mut c)?;
    let epoch = c.next_i64(i64::MIN, i64::MAX)?;
    c.expect_done()?;
    let meta = keys.open(ctx, "meta", true);
    meta.check(KeyType::Hash)?;
    let synced = keys.open(ctx, "synced", true);
    let syncing = keys.open(ctx, "syncing", true);
    synced.check(KeyType::ZSet)?;
    syncing.check(KeyType::ZSet)?;
    let pending = meta_int(&meta, &keys.base, c"pending")?;
    if pending == 0 || epoch != pending {
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
