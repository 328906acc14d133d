//! RANK handlers: parse every argument, validate, open and type-check the
//! keys, apply the model, reply, replicate the effects, notify.

use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args::{parse_i64, Cursor};
use crate::error;
use crate::keys::{derived, Key, KeyType};
use crate::rank::model::{
    self, Aggregate, Condition, Layout, RankError, Tiebreak, Unit, EXACT_MAX, MAX_DIGITS, MAX_TTL_S,
};
use crate::rank::{KEPT, MERGES, REFUSED, REMOVED, UPDATES};
use crate::util;

/// TOP walks the skiplist itself up to this offset; beyond it `ZREVRANGE`
/// finds the start by rank in O(log N).
const WALK_MAX_OFFSET: i64 = 1024;
/// Members per replicated `ZADD` of a MERGE.
const ZADD_CHUNK: usize = 512;

fn rank_error(e: RankError) -> RedisError {
    if e != RankError::BadLayout {
        REFUSED.incr();
    }
    // redis-module 2.0.8 writes an error reply one byte per `char` (`c as
    // u8`), which would send `±` as the lone byte 0xB1. Spelling the UTF-8
    // bytes as one char each makes the client receive proper UTF-8, the
    // same bytes the Lua twins send.
    let text = format!("ERR rank: {}", e.message());
    RedisError::String(text.bytes().map(char::from).collect())
}

fn now_option(c: &mut Cursor) -> Result<i64, RedisError> {
    c.option_i64(0, EXACT_MAX)
}

/// A board opened for a command: `B`, `B:meta` and the layout.
struct Board {
    board: Key,
    meta: Key,
    layout: Layout,
}

/// How a command opens a board's keys.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Access {
    Read,
    /// `B` writable; `B:meta` only read (opening it writable would signal
    /// it as modified to WATCH and client tracking on every write).
    WriteBoard,
    /// Both writable (MERGE may set the meta's expiry).
    WriteBoth,
}

/// Opens `B` and `B:meta`, checks their types (WRONGTYPE before anything
/// else) and reads the layout.
fn open_board(ctx: &Context, base: &[u8], access: Access) -> Result<Board, RedisError> {
    let board = Key::open(ctx, base, access != Access::Read);
    board.check(KeyType::ZSet)?;
    let meta = Key::derived(ctx, base, "meta", access == Access::WriteBoth);
    let layout = read_layout(&meta)?;
    Ok(Board {
        board,
        meta,
        layout,
    })
}

fn read_layout(meta: &Key) -> Result<Layout, RedisError> {
    if !meta.check(KeyType::Hash)? {
        return Ok(Layout::default());
    }
    Layout::from_field(meta.hget(model::META_FIELD.as_bytes()).as_deref()).map_err(rank_error)
}

/// Gives a board that was just created the expiry of its `B:meta`, so that
/// every key of the board goes at the same instant. Returns that instant.
fn inherit_expiry(b: &Board) -> Option<i64> {
    let at = b.meta.abs_expire_ms()?;
    b.board.set_abs_expire_ms(at);
    Some(at)
}

fn replicate_pexpireat(ctx: &Context, key: &[u8], at: i64) {
    let at = at.to_string();
    ctx.replicate("PEXPIREAT", &[key, at.as_bytes()]);
}

fn ttl_instant(ttl_s: i64) -> i64 {
    util::now_ms() + ttl_s * 1000
}

/// RANK.CREATE B [TIEBREAK EARLIER|LATER|NONE] [UNIT MS|S] [DIGITS d]
/// [EPOCH unix-ms] [TTL seconds] [NOW unix-ms]
pub fn rank_create(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let base = c.next_bytes()?;
    let mut tiebreak = Tiebreak::Earlier;
    let mut unit = Unit::S;
    let mut digits = None;
    let mut epoch = 0;
    let mut ttl = None;
    let mut now = None;
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "TIEBREAK" => {
                tiebreak = Tiebreak::parse(c.option_bytes()?).ok_or_else(error::syntax)?;
            }
            "UNIT" => unit = Unit::parse(c.option_bytes()?).ok_or_else(error::syntax)?,
            "DIGITS" => digits = Some(c.option_i64(0, MAX_DIGITS as i64)? as u32),
            "EPOCH" => epoch = c.option_i64(0, EXACT_MAX)?,
            "TTL" => ttl = Some(c.option_i64(1, MAX_TTL_S)?),
            "NOW" => now = Some(now_option(&mut c)?),
            _ => return Err(error::syntax()),
        }
    }
    util::require_hash_tag(ctx, "rank", &base)?;
    let layout = Layout {
        tiebreak,
        unit,
        digits: digits.unwrap_or(Layout::default_digits(tiebreak)),
        epoch,
    };
    let board = Key::open(ctx, &base, false);
    board.check(KeyType::ZSet)?;
    let meta_name = derived(&base, "meta");
    let meta = Key::open(ctx, &meta_name, true);
    if meta.check(KeyType::Hash)? || board.exists() {
        return Err(error::family("rank", "board already exists"));
    }
    layout
        .tick(now.unwrap_or_else(util::now_ms))
        .map_err(rank_error)?;

    let value = layout.to_field();
    let field = model::META_FIELD.as_bytes();
    meta.hput(field, value.as_bytes());
    ctx.replicate("HSET", &[&meta_name, field, value.as_bytes()]);
    if let Some(ttl) = ttl {
        let at = ttl_instant(ttl);
        meta.set_abs_expire_ms(at);
        replicate_pexpireat(ctx, &meta_name, at);
    }
    util::notify(ctx, "hotpath.rank.create", &base);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// Writes `member` with `packed` on an open board, gives a new board its
/// meta's expiry, and replicates both effects.
fn write_score(ctx: &Context, b: &Board, base: &[u8], member: &[u8], packed: i64) {
    let created = !b.board.exists();
    b.board.zadd(member, packed as f64);
    let score = packed.to_string();
    ctx.replicate("ZADD", &[base, score.as_bytes(), member]);
    if created {
        if let Some(at) = inherit_expiry(b) {
            replicate_pexpireat(ctx, base, at);
        }
    }
    UPDATES.incr();
}

/// RANK.ADD B member points [GT|LT] [NOW unix-ms]
pub fn rank_add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 4)?;
    let base = c.next_bytes()?;
    let member = c.next_bytes()?;
    let points = c.next_i64(i64::MIN, i64::MAX)?;
    let mut cond = Condition::Always;
    let mut now = None;
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "GT" if cond != Condition::Lt => cond = Condition::Gt,
            "LT" if cond != Condition::Gt => cond = Condition::Lt,
            "NOW" => now = Some(now_option(&mut c)?),
            _ => return Err(error::syntax()),
        }
    }
    util::require_hash_tag(ctx, "rank", &base)?;
    // Read first: a kept value must not signal the board as modified
    // (WATCH, client tracking), just as a ZADD that changes nothing.
    let mut b = open_board(ctx, &base, Access::Read)?;
    let t = b
        .layout
        .tick(now.unwrap_or_else(util::now_ms))
        .map_err(rank_error)?;
    b.layout.check_points(points).map_err(rank_error)?;

    let current = b.board.zscore(&member).map(|s| b.layout.unpack(s).points);
    if !model::add_writes(current, points, cond) {
        KEPT.incr();
        return Ok(RedisValue::Integer(current.unwrap_or(points)));
    }
    b.board = Key::open(ctx, &base, true);
    write_score(ctx, &b, &base, &member, b.layout.pack_tick(points, t));
    util::notify(ctx, "hotpath.rank.add", &base);
    Ok(RedisValue::Integer(points))
}

/// RANK.INCR B member delta [NOW unix-ms]
pub fn rank_incr(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 4)?;
    let base = c.next_bytes()?;
    let member = c.next_bytes()?;
    let delta = c.next_i64(i64::MIN, i64::MAX)?;
    let mut now = None;
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "NOW" => now = Some(now_option(&mut c)?),
            _ => return Err(error::syntax()),
        }
    }
    util::require_hash_tag(ctx, "rank", &base)?;
    let b = open_board(ctx, &base, Access::WriteBoard)?;
    let t = b
        .layout
        .tick(now.unwrap_or_else(util::now_ms))
        .map_err(rank_error)?;
    let current = b
        .board
        .zscore(&member)
        .map_or(0, |s| b.layout.unpack(s).points);
    let points = model::incr_points(&b.layout, current, delta).map_err(rank_error)?;
    write_score(ctx, &b, &base, &member, b.layout.pack_tick(points, t));
    util::notify(ctx, "hotpath.rank.incr", &base);
    Ok(RedisValue::Integer(points))
}

/// Returns a member's 0-based rank, best first (`ZREVRANK`; the module API
/// has no rank lookup).
fn rev_rank(ctx: &Context, base: &[u8], member: &[u8]) -> Result<Option<i64>, RedisError> {
    match ctx.call("ZREVRANK", &[base, member])? {
        RedisValue::Integer(r) => Ok(Some(r)),
        _ => Ok(None),
    }
}

/// Returns `ZREVRANGE base start stop WITHSCORES` as (member, score) pairs.
fn rev_range(
    ctx: &Context,
    base: &[u8],
    start: i64,
    stop: i64,
) -> Result<Vec<(Vec<u8>, f64)>, RedisError> {
    let (start, stop) = (start.to_string(), stop.to_string());
    let reply = ctx.call(
        "ZREVRANGE",
        &[base, start.as_bytes(), stop.as_bytes(), b"WITHSCORES"],
    )?;
    let items = match reply {
        RedisValue::Array(items) => items,
        _ => return Ok(Vec::new()),
    };
    let bytes = |v: RedisValue| -> Vec<u8> {
        match v {
            RedisValue::SimpleString(s) | RedisValue::BulkString(s) => s.into_bytes(),
            RedisValue::StringBuffer(b) => b,
            _ => Vec::new(),
        }
    };
    let mut out = Vec::with_capacity(items.len() / 2);
    let mut it = items.into_iter();
    while let (Some(m), Some(s)) = (it.next(), it.next()) {
        let score = std::str::from_utf8(&bytes(s))
            .ok()
            .and_then(|s| s.parse::<f64>().ok())
            .unwrap_or(0.0);
        out.push((bytes(m), score));
    }
    Ok(out)
}

/// RANK.GET B member
pub fn rank_get(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let base = c.next_bytes()?;
    let member = c.next_bytes()?;
    if !c.done() {
        return Err(error::arity(&c.command()));
    }
    let b = open_board(ctx, &base, Access::Read)?;
    let Some(score) = b.board.zscore(&member) else {
        return Ok(RedisValue::Null);
    };
    let e = b.layout.unpack(score);
    let Some(rank) = rev_rank(ctx, &base, &member)? else {
        return Ok(RedisValue::Null);
    };
    Ok(util::record(ctx, &["points", "rank", "achieved_ms"], vec![
        RedisValue::Integer(e.points),
        RedisValue::Integer(rank),
        e.achieved_ms.map_or(RedisValue::Null, RedisValue::Integer),
    ]))
}

/// RANK.TOP B [count] [OFFSET o]
pub fn rank_top(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let base = c.next_bytes()?;
    let mut count = 10;
    let mut offset = 0;
    let mut first = true;
    while !c.done() {
        let a = c.next()?;
        if a.as_slice().eq_ignore_ascii_case(b"OFFSET") {
            offset = c.option_i64(0, i64::MAX)?;
        } else if first {
            count = parse_i64(a.as_slice(), 0, i64::MAX)?;
        } else {
            return Err(error::syntax());
        }
        first = false;
    }
    let b = open_board(ctx, &base, Access::Read)?;
    let len = b.board.len() as i64;
    if count == 0 || offset >= len {
        return Ok(RedisValue::Array(Vec::new()));
    }
    let entries = if offset <= WALK_MAX_OFFSET {
        b.board
            .zrange_desc(offset as usize, count.min(len) as usize)
    } else {
        rev_range(ctx, &base, offset, offset.saturating_add(count - 1))?
    };
    let mut out = Vec::with_capacity(entries.len() * 2);
    for (member, score) in entries {
        out.push(RedisValue::StringBuffer(member));
        out.push(RedisValue::Integer(b.layout.unpack(score).points));
    }
    Ok(RedisValue::Array(out))
}

/// RANK.AROUND B member n
pub fn rank_around(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 4)?;
    let base = c.next_bytes()?;
    let member = c.next_bytes()?;
    let n = c.next_i64(0, i64::MAX)?;
    if !c.done() {
        return Err(error::arity(&c.command()));
    }
    let b = open_board(ctx, &base, Access::Read)?;
    if b.board.zscore(&member).is_none() {
        return Ok(RedisValue::Null);
    }
    let Some(rank) = rev_rank(ctx, &base, &member)? else {
        return Ok(RedisValue::Null);
    };
    let start = rank.saturating_sub(n).max(0);
    let entries = rev_range(ctx, &base, start, rank.saturating_add(n))?;
    let mut out = Vec::with_capacity(entries.len() * 3);
    for (i, (m, score)) in entries.into_iter().enumerate() {
        out.push(RedisValue::Integer(start + i as i64));
        out.push(RedisValue::StringBuffer(m));
        out.push(RedisValue::Integer(b.layout.unpack(score).points));
    }
    Ok(RedisValue::Array(out))
}

/// RANK.REM B member [member ...]
pub fn rank_rem(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let base = c.next_bytes()?;
    let mut members = Vec::with_capacity(c.remaining());
    while !c.done() {
        members.push(c.next_bytes()?);
    }
    let board = Key::open(ctx, &base, true);
    board.check(KeyType::ZSet)?;
    let removed = members.iter().filter(|m| board.zrem(m)).count() as i64;
    if removed > 0 {
        let mut zrem: Vec<&[u8]> = vec![&base];
        zrem.extend(members.iter().map(|m| m.as_slice()));
        ctx.replicate("ZREM", zrem.as_slice());
        REMOVED.add(removed as u64);
        util::notify(ctx, "hotpath.rank.rem", &base);
    }
    Ok(RedisValue::Integer(removed))
}

/// RANK.COUNT B
pub fn rank_count(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let base = c.next_bytes()?;
    if !c.done() {
        return Err(error::arity(&c.command()));
    }
    let board = Key::open(ctx, &base, false);
    board.check(KeyType::ZSet)?;
    Ok(RedisValue::Integer(board.len() as i64))
}

/// RANK.MERGE dest numkeys src [src ...] [AGGREGATE SUM|MAX] [TTL seconds]
/// [NOW unix-ms]
pub fn rank_merge(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 4)?;
    let dest = c.next_bytes()?;
    let numkeys = c.next_i64(1, i64::MAX)?;
    if numkeys as u64 > c.remaining() as u64 {
        return Err(error::syntax());
    }
    let mut sources = Vec::with_capacity(numkeys as usize);
    for _ in 0..numkeys {
        sources.push(c.next_bytes()?);
    }
    let mut agg = Aggregate::Sum;
    let mut ttl = None;
    let mut now = None;
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "AGGREGATE" => {
                agg = match c.option_choice(&["SUM", "MAX"])? {
                    "SUM" => Aggregate::Sum,
                    _ => Aggregate::Max,
                }
            }
            "TTL" => ttl = Some(c.option_i64(1, MAX_TTL_S)?),
            "NOW" => now = Some(now_option(&mut c)?),
            _ => return Err(error::syntax()),
        }
    }
    util::require_hash_tag(ctx, "rank", &dest)?;
    for s in &sources {
        util::require_hash_tag(ctx, "rank", s)?;
    }
    let d = open_board(ctx, &dest, Access::WriteBoth)?;
    let mut inputs = Vec::with_capacity(sources.len());
    for s in &sources {
        let src = open_board(ctx, s, Access::Read)?;
        inputs.push((src.layout, src.board.zrange_asc(0, usize::MAX)));
    }
    let merged = model::merge(&inputs, &d.layout, agg, now.unwrap_or_else(util::now_ms))
        .map_err(rank_error)?;
    drop(inputs);

    d.board.delete();
    ctx.replicate("DEL", &[dest.as_slice()]);
    for (member, packed) in &merged {
        d.board.zadd(member, *packed as f64);
    }
    for chunk in merged.chunks(ZADD_CHUNK) {
        let scores: Vec<String> = chunk.iter().map(|(_, p)| p.to_string()).collect();
        let mut zadd: Vec<&[u8]> = Vec::with_capacity(1 + chunk.len() * 2);
        zadd.push(&dest);
        for ((member, _), score) in chunk.iter().zip(scores.iter()) {
            zadd.push(score.as_bytes());
            zadd.push(member);
        }
        ctx.replicate("ZADD", zadd.as_slice());
    }
    match ttl {
        Some(ttl) => {
            let at = ttl_instant(ttl);
            if d.board.exists() {
                d.board.set_abs_expire_ms(at);
                replicate_pexpireat(ctx, &dest, at);
            }
            if d.meta.exists() {
                d.meta.set_abs_expire_ms(at);
                replicate_pexpireat(ctx, &derived(&dest, "meta"), at);
            }
        }
        None => {
            if d.board.exists() {
                if let Some(at) = inherit_expiry(&d) {
                    replicate_pexpireat(ctx, &dest, at);
                }
            }
        }
    }
    MERGES.incr();
    util::notify(ctx, "hotpath.rank.merge", &dest);
    Ok(RedisValue::Integer(merged.len() as i64))
}
