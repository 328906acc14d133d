//! POLL's handlers: parse and validate everything, open keys, apply the
//! model, reply, replicate, notify.

use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use super::model::{self, Mode, Rules};
use crate::args::Cursor;
use crate::error;
use crate::keys::{derived, expire_at_if_unset, Key, KeyType};
use crate::util::{self, bulk, replicate_with_now};

const FAMILY: &str = "poll";

fn fail(msg: &str) -> RedisError {
    error::family(FAMILY, msg)
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

/// Reads a poll's rules from `B:meta` (defaults for a poll never created).
fn read_rules(meta: &Key) -> Result<Rules, RedisError> {
    if !meta.check(KeyType::Hash)? {
        return Ok(Rules::default());
    }
    // One packed field: each field read costs about as much as a whole
    // HSET, and VOTE reads the rules on every call.
    Ok(meta
        .hget(b"rules")
        .and_then(|v| Rules::unpack(&v))
        .unwrap_or_default())
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
    let rules = Rules {
        mode,
        maxvotes,
        start,
        end,
        tz_minutes: tz,
        closed: candidates.is_some(),
        expires,
    };
    meta.hput(b"rules", rules.pack().as_bytes());
    if let Some(list) = &candidates {
        for cand in list {
            if board.zscore(cand).is_none() {
                board.zadd(cand, 0.0);
            }
        }
    }
    expire_at_if_unset(&meta, expires);
    expire_at_if_unset(&board, expires);
    replicate_with_now(ctx, c.args(), now, had_now);
    util::notify(ctx, "hotpath.poll.create", &keys.base);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// POLL.VOTE B user candidate [NOW unix-ms]
pub fn poll_vote(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 4)?;
    let keys = base_of(ctx, &mut c)?;
    // The hot path reads user and candidate in place, without copies.
    c.skip(2)?;
    if c.arg(2).is_empty() {
        return Err(fail("user must not be empty"));
    }
    if c.arg(3).is_empty() {
        return Err(fail("candidate must not be empty"));
    }
    let (now, had_now) = trailing_now(&mut c)?;
    let (user, cand) = (c.arg(2), c.arg(3));

    let meta = keys.open(ctx, "meta", false);
    let rules = read_rules(&meta)?;
    drop(meta);
    let voted = keys.open(ctx, "voted", true);
    let board = keys.open(ctx, "board", true);
    voted.check(KeyType::Hash)?;
    board.check(KeyType::ZSet)?;
    let uservotes = if rules.mode == Mode::Multi {
        let k = keys.open(ctx, "uservotes", true);
        k.check(KeyType::Hash)?;
        Some(k)
    } else {
        None
    };
    if !rules.is_open(now) {
        return Err(fail("not open"));
    }
    if rules.closed && board.zscore(cand).is_none() {
        return Err(fail("unknown candidate"));
    }
    // The dedup member is `user:candidate`: with no ':' in candidates it
    // splits at its last ':' unambiguously, whatever the user id holds.
    if rules.mode == Mode::Multi && cand.contains(&b':') {
        return Err(fail("candidate must not contain ':' in MODE MULTI"));
    }
    // MULTI keeps each user's candidates as a JSON array of strings.
    if rules.mode == Mode::Multi && std::str::from_utf8(cand).is_err() {
        return Err(fail("candidate must be valid UTF-8 in MODE MULTI"));
    }
    let day = if rules.mode == Mode::Daily {
        model::day_of(now, rules.tz_minutes)
    } else {
        0
    };
    let field = model::ballot_field(rules.mode, user, cand, day);
    let mut list = Vec::new();
    if let Some(uv) = &uservotes {
        list = uv
            .hget(user)
            .map(|j| model::parse_user_votes(&j))
            .unwrap_or_default();
        let cand_s = String::from_utf8_lossy(cand).into_owned();
        if list.contains(&cand_s) || voted.hget(&field).is_some() {
            super::DUPLICATES.incr();
            return Ok(ints(0));
        }
        if list.len() as i64 >= rules.maxvotes {
            return Err(fail("vote limit reached"));
        }
        list.push(cand_s);
    }
    let created = (voted.exists(), board.exists());
    if !voted.hset_nx(&field, &model::ballot_value(cand, now)) {
        super::DUPLICATES.incr();
        return Ok(ints(0));
    }
    board.zincrby_arg(&c.args()[3], 1.0);
    if let Some(uv) = &uservotes {
        let had = uv.exists();
        uv.hput(user, model::format_user_votes(&list).as_bytes());
        if !had {
            expire_at_if_unset(uv, rules.expires);
        }
    }
    if !created.0 {
        expire_at_if_unset(&voted, rules.expires);
    }
    if !created.1 {
        expire_at_if_unset(&board, rules.expires);
    }
    super::VOTES.incr();
    replicate_with_now(ctx, c.args(), now, had_now);
    util::notify_arg(ctx, "hotpath.poll.vote", &c.args()[1]);
    Ok(ints(1))
}

/// POLL.REVOKE B user [candidate] [NOW unix-ms]
pub fn poll_revoke(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let keys = base_of(ctx, &mut c)?;
    let user = nonempty(c.next_bytes()?, "user")?;
    let only: Option<Vec<u8>> = match c.remaining() {
        1 | 3 => Some(nonempty(c.next_bytes()?, "candidate")?),
        _ => None,
    };
    let (now, had_now) = trailing_now(&mut c)?;

    let meta = keys.open(ctx, "meta", false);
    let rules = read_rules(&meta)?;
    drop(meta);
    let voted = keys.open(ctx, "voted", true);
    let board = keys.open(ctx, "board", true);
    voted.check(KeyType::Hash)?;
    board.check(KeyType::ZSet)?;
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
                let cand = model::ballot_candidate(&v).to_vec();
                if only.as_ref().is_none_or(|o| *o == cand) {
                    voted.hdel(&field);
                    taken.push(cand);
                }
            }
        }
        Mode::Multi => {
            let uv = keys.open(ctx, "uservotes", true);
            uv.check(KeyType::Hash)?;
            let list = uv
                .hget(&user)
                .map(|j| model::parse_user_votes(&j))
                .unwrap_or_default();
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
        replicate_with_now(ctx, c.args(), now, had_now);
        util::notify(ctx, "hotpath.poll.revoke", &keys.base);
    }
    Ok(ints(taken.len() as i64))
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
            offset = c.option_i64(0, model::MAX_TIME_MS)?;
        } else if first {
            count = crate::args::parse_i64(a.as_slice(), 0, model::MAX_TIME_MS)?;
        } else {
            return Err(error::syntax());
        }
        first = false;
    }
    let board = keys.open(ctx, "board", false);
    board.check(KeyType::ZSet)?;
    let mut out = Vec::new();
    for (cand, votes) in board.zrange_desc(offset as usize, count as usize) {
        out.push(bulk(cand));
        out.push(ints(votes as i64));
    }
    Ok(RedisValue::Array(out))
}

/// POLL.RANK B candidate
pub fn poll_rank(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let keys = base_of(ctx, &mut c)?;
    let cand = c.next_bytes()?;
    c.expect_done()?;
    let board = keys.open(ctx, "board", false);
    board.check(KeyType::ZSet)?;
    let Some(votes) = board.zscore(&cand) else {
        return Ok(RedisValue::Null);
    };
    drop(board);
    let name = keys.name("board");
    let rank = match ctx.call("ZREVRANK", &[name.as_slice(), cand.as_slice()][..])? {
        RedisValue::Integer(r) => r,
        _ => return Ok(RedisValue::Null),
    };
    Ok(RedisValue::Array(vec![ints(rank), ints(votes as i64)]))
}

/// POLL.STATUS B user [NOW unix-ms]
pub fn poll_status(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let keys = base_of(ctx, &mut c)?;
    let user = c.next_bytes()?;
    let (now, _) = trailing_now(&mut c)?;
    let meta = keys.open(ctx, "meta", false);
    let rules = read_rules(&meta)?;
    let voted = keys.open(ctx, "voted", false);
    voted.check(KeyType::Hash)?;
    let out: Vec<RedisValue> = match rules.mode {
        Mode::Once | Mode::Daily => {
            let day = if rules.mode == Mode::Daily {
                model::day_of(now, rules.tz_minutes)
            } else {
                0
            };
            voted
                .hget(&model::ballot_field(rules.mode, &user, b"", day))
                .map(|v| vec![bulk(model::ballot_candidate(&v).to_vec())])
                .unwrap_or_default()
        }
        Mode::Multi => {
            let uv = keys.open(ctx, "uservotes", false);
            uv.check(KeyType::Hash)?;
            uv.hget(&user)
                .map(|j| model::parse_user_votes(&j))
                .unwrap_or_default()
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
    let rules = read_rules(&meta)?;
    let voted = keys.open(ctx, "voted", false);
    let board = keys.open(ctx, "board", false);
    voted.check(KeyType::Hash)?;
    board.check(KeyType::ZSet)?;
    let votes: f64 = board
        .zrange_desc(0, usize::MAX)
        .iter()
        .map(|(_, v)| v)
        .sum();
    Ok(util::map(ctx, vec![
        bulk("mode"),
        bulk(rules.mode.as_str()),
        bulk("maxvotes"),
        ints(rules.maxvotes),
        bulk("start"),
        ints(rules.start),
        bulk("end"),
        ints(rules.end),
        bulk("ballots"),
        ints(voted.len() as i64),
        bulk("votes"),
        ints(votes as i64),
    ]))
}

/// POLL.SYNC B
pub fn poll_sync(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let keys = base_of(ctx, &mut c)?;
    c.expect_done()?;
    let meta = keys.open(ctx, "meta", true);
    let rules = read_rules(&meta)?;
    let board = keys.open(ctx, "board", false);
    let synced = keys.open(ctx, "synced", true);
    let syncing = keys.open(ctx, "syncing", true);
    board.check(KeyType::ZSet)?;
    synced.check(KeyType::ZSet)?;
    syncing.check(KeyType::ZSet)?;
    let mut epoch = meta.hget_i64(b"pending").unwrap_or(0);
    if epoch == 0 {
        // Freeze the board as the new snapshot.
        epoch = meta.hget_i64(b"epoch").unwrap_or(0) + 1;
        syncing.delete();
        for (cand, votes) in board.zrange_desc(0, usize::MAX) {
            syncing.zadd(&cand, votes);
        }
        let had_meta = meta.exists();
        meta.hput(b"epoch", epoch.to_string().as_bytes());
        meta.hput(b"pending", epoch.to_string().as_bytes());
        if !had_meta {
            expire_at_if_unset(&meta, rules.expires);
        }
        expire_at_if_unset(&syncing, rules.expires);
        super::SYNCS.incr();
        ctx.replicate_verbatim();
        util::notify(ctx, "hotpath.poll.sync", &keys.base);
    }
    let frozen: Vec<(Vec<u8>, i64)> = syncing
        .zrange_desc(0, usize::MAX)
        .into_iter()
        .map(|(c, v)| (c, v as i64))
        .collect();
    let acked: Vec<(Vec<u8>, i64)> = synced
        .zrange_desc(0, usize::MAX)
        .into_iter()
        .map(|(c, v)| (c, v as i64))
        .collect();
    let mut out = vec![ints(epoch)];
    for (cand, d) in model::deltas(&frozen, &acked) {
        out.push(bulk(cand));
        out.push(ints(d));
    }
    Ok(RedisValue::Array(out))
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
    let pending = meta.hget_i64(b"pending").unwrap_or(0);
    if pending == 0 || epoch != pending {
        return Ok(ints(0));
    }
    meta.hput(b"pending", b"0");
    synced.delete();
    let has_frozen = syncing.exists();
    drop((synced, syncing));
    if has_frozen {
        let (from, to) = (keys.name("syncing"), keys.name("synced"));
        ctx.call("RENAME", &[from.as_slice(), to.as_slice()][..])?;
    }
    ctx.replicate_verbatim();
    util::notify(ctx, "hotpath.poll.syncack", &keys.base);
    Ok(ints(1))
}
