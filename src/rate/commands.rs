//! RATE's handlers: parse and validate everything, open the limiter key,
//! run the model, write back only what was consumed, reply, replicate the
//! concrete effects (state and absolute expiry), notify.
//!
//! Every write is replicated as plain Redis commands (`SET … PXAT`,
//! `HSET` + `PEXPIREAT`, `ZREMRANGEBYSCORE` + `ZADD` + `PEXPIREAT`, `DEL`)
//! carrying the master's clock, so replicas and the AOF end byte-identical
//! (TTLs included) and need no module to replay them.

use std::ffi::CStr;
use std::os::raw::c_char;

use redis_module::{raw, Context, KeyType, RedisError, RedisResult, RedisString, RedisValue};

use super::model::{self, Algo, Bucket, Log, MultiRule, Rule, Sliding, Tat, Window};
use super::{ALLOWED, LIMITED, RESETS};
use crate::args::Cursor;
use crate::error;
use crate::keys::Key;
use crate::util;

const FAMILY: &str = "rate";
/// The largest limit, burst or cost.
pub const MAX_COUNT: i64 = 1_000_000_000_000;
/// The longest period (ms), about 31 years.
pub const MAX_PERIOD_MS: i64 = 1_000_000_000_000;
/// The latest `NOW` (unix ms), in the year 2286.
pub const MAX_NOW_MS: i64 = 10_000_000_000_000;
/// LOG keeps one entry per request: its limit is capped so that one call
/// can never add more than this many entries.
pub const MAX_LOG_LIMIT: i64 = 100_000;
/// The most rules one RATE.MULTI takes.
pub const MAX_RULES: i64 = 1000;

fn fail(msg: &str) -> RedisError {
    error::family(FAMILY, msg)
}

fn holds(algo: Algo) -> RedisError {
    fail(&format!("key holds a {} limiter", algo.name()))
}

fn too_large() -> RedisError {
    fail("limit or burst * period-ms exceeds 2^52")
}

fn reply(fields: [i64; 5]) -> RedisValue {
    RedisValue::Array(fields.iter().map(|&n| RedisValue::Integer(n)).collect())
}

fn count(allowed: bool) {
    if allowed {
        ALLOWED.incr();
    } else {
        LIMITED.incr();
    }
}

/// What a String limiter key holds.
enum Text {
    Empty,
    Gcra(Tat),
    Fixed(Window),
}

fn read_text(key: &Key) -> Result<Text, RedisError> {
    match key.kind() {
        KeyType::Empty => Ok(Text::Empty),
        KeyType::String => {
            let v = key.get().unwrap_or_default();
            if let Some(t) = Tat::parse(&v) {
                Ok(Text::Gcra(t))
            } else if let Some(w) = Window::parse(&v) {
                Ok(Text::Fixed(w))
            } else {
                Err(error::wrongtype())
            }
        }
        _ => Err(error::wrongtype()),
    }
}

/// Reads a GCRA state, refusing any other kind of value.
fn read_tat(key: &Key) -> Result<Option<Tat>, RedisError> {
    match read_text(key)? {
        Text::Empty => Ok(None),
        Text::Gcra(t) => Ok(Some(t)),
        Text::Fixed(_) => Err(holds(Algo::Fixed)),
    }
}

fn field(key: &Key, name: &[u8]) -> Result<i64, RedisError> {
    key.hget(name)
        .and_then(|v| crate::args::parse_i64_plain(&v))
        .filter(|&n| n >= 0)
        .ok_or_else(error::wrongtype)
}

/// Reads a Hash limiter's kind: `Some(Sliding|Bucket)`, or None when
/// missing; WRONGTYPE for anything that is not one of ours.
fn read_hash_kind(key: &Key) -> Result<Option<Algo>, RedisError> {
    if !key.check(KeyType::Hash)? {
        return Ok(None);
    }
    match key.hget(b"algo").as_deref() {
        Some(b"sliding") => Ok(Some(Algo::Sliding)),
        Some(b"bucket") => Ok(Some(Algo::Bucket)),
        _ => Err(error::wrongtype()),
    }
}

/// Sets the key's expiry `reset_ms` from the server clock and returns the
/// absolute time, for `PEXPIREAT`/`PXAT`.
fn expire(key: &Key, reset_ms: i64) -> String {
    let at = util::now_ms() + reset_ms.max(1);
    key.set_abs_expire_ms(at);
    itoa::Buffer::new().format(at).to_string()
}

/// Replicates `cmd name a b` / `cmd name a b c d` … straight from byte
/// buffers (format `b`: pointer and length), without first building a
/// module string per argument as `ctx.replicate` does: the write path is
/// dominated by allocations.
fn replicate_bufs(ctx: &Context, cmd: &CStr, args: &[&[u8]]) {
    let f = match unsafe { raw::RedisModule_Replicate } {
        Some(f) => f,
        None => return,
    };
    let p = |i: usize| args[i].as_ptr() as *const c_char;
    let l = |i: usize| args[i].len();
    unsafe {
        match args.len() {
            2 => f(
                ctx.ctx,
                cmd.as_ptr(),
                c"bb".as_ptr(),
                p(0),
                l(0),
                p(1),
                l(1),
            ),
            3 => f(
                ctx.ctx,
                cmd.as_ptr(),
                c"bbb".as_ptr(),
                p(0),
                l(0),
                p(1),
                l(1),
                p(2),
                l(2),
            ),
            4 => f(
                ctx.ctx,
                cmd.as_ptr(),
                c"bbbb".as_ptr(),
                p(0),
                l(0),
                p(1),
                l(1),
                p(2),
                l(2),
                p(3),
                l(3),
            ),
            7 => f(
                ctx.ctx,
                cmd.as_ptr(),
                c"bbbbbbb".as_ptr(),
                p(0),
                l(0),
                p(1),
                l(1),
                p(2),
                l(2),
                p(3),
                l(3),
                p(4),
                l(4),
                p(5),
                l(5),
                p(6),
                l(6),
            ),
            9 => f(
                ctx.ctx,
                cmd.as_ptr(),
                c"bbbbbbbbb".as_ptr(),
                p(0),
                l(0),
                p(1),
                l(1),
                p(2),
                l(2),
                p(3),
                l(3),
                p(4),
                l(4),
                p(5),
                l(5),
                p(6),
                l(6),
                p(7),
                l(7),
                p(8),
                l(8),
            ),
            _ => {
                let name = cmd.to_string_lossy();
                ctx.replicate(&name, args);
                0
            }
        };
    }
}

fn write_text(ctx: &Context, key: &Key, name: &[u8], value: &str, reset_ms: i64) {
    key.set(value.as_bytes());
    let at = expire(key, reset_ms);
    replicate_bufs(
        ctx,
        c"SET",
        &[name, value.as_bytes(), b"PXAT", at.as_bytes()],
    );
}

fn write_hash(ctx: &Context, key: &Key, name: &[u8], fields: &[(&str, String)], reset_ms: i64) {
    let mut args: Vec<&[u8]> = vec![name];
    for (f, v) in fields {
        key.hput(f.as_bytes(), v.as_bytes());
        args.push(f.as_bytes());
        args.push(v.as_bytes());
    }
    let at = expire(key, reset_ms);
    replicate_bufs(ctx, c"HSET", &args);
    replicate_bufs(ctx, c"PEXPIREAT", &[name, at.as_bytes()]);
}

/// A LOG's Sorted Set seen through the model's [`Log`] trait.
struct ZLog<'a>(&'a Key);

impl Log for ZLog<'_> {
    fn count_after(&self, cutoff: i64) -> i64 {
        let stale = self
            .0
            .zrange(0, usize::MAX, false, f64::NEG_INFINITY, cutoff as f64)
            .len();
        self.0.len() as i64 - stale as i64
    }
    fn nth_after(&self, cutoff: i64, n: i64) -> Option<i64> {
        let n = usize::try_from(n).ok()?;
        self.0
            .zrange(n, 1, false, (cutoff + 1) as f64, f64::INFINITY)
            .first()
            .map(|(_, s)| *s as i64)
    }
    fn newest(&self) -> Option<i64> {
        self.0.zrange_desc(0, 1).first().map(|(_, s)| *s as i64)
    }
}

/// The options every checking command shares.
struct Common {
    cost: i64,
    peek: bool,
    now: i64,
}

/// RATE.CHECK B limit period-ms [ALGO GCRA|FIXED|SLIDING|LOG|BUCKET]
/// [BURST n] [COST n] [PEEK] [NOW unix-ms]
pub fn rate_check(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 4)?;
    let name = c.next_bytes()?;
    let limit = c.next_i64(1, MAX_COUNT)?;
    let period = c.next_i64(1, MAX_PERIOD_MS)?;
    let mut algo = Algo::Gcra;
    let mut burst: Option<i64> = None;
    let mut o = Common {
        cost: 1,
        peek: false,
        now: -1,
    };
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "ALGO" => {
                let v = String::from_utf8_lossy(c.option_bytes()?);
                algo = Algo::parse(&v).ok_or_else(error::syntax)?;
            }
            "BURST" => burst = Some(c.option_i64(1, MAX_COUNT)?),
            "COST" => o.cost = c.option_i64(0, MAX_COUNT)?,
            "PEEK" => o.peek = true,
            "NOW" => o.now = c.option_i64(0, MAX_NOW_MS)?,
            _ => return Err(error::syntax()),
        }
    }
    if burst.is_some() && !algo.has_burst() {
        return Err(fail("BURST applies only to GCRA and BUCKET"));
    }
    if algo == Algo::Log && limit > MAX_LOG_LIMIT {
        return Err(fail("LOG limit must be at most 100000"));
    }
    let rule = Rule {
        limit,
        period_ms: period,
        burst: burst.unwrap_or(limit),
    };
    if !rule.fits(algo) {
        return Err(too_large());
    }
    if o.now < 0 {
        o.now = util::now_ms();
    }
    let key = Key::open(ctx, &name, true);
    let fields = match algo {
        Algo::Gcra => check_gcra(ctx, &key, &name, rule, &o)?,
        Algo::Fixed => check_fixed(ctx, &key, &name, rule, &o)?,
        Algo::Sliding => check_sliding(ctx, &key, &name, rule, &o)?,
        Algo::Bucket => check_bucket(ctx, &key, &name, rule, &o)?,
        Algo::Log => check_log(ctx, &key, &name, rule, &o)?,
    };
    if !o.peek {
        count(fields[0] == 1);
    }
    Ok(reply(fields))
}

fn consumed(ctx: &Context, name: &[u8]) {
    util::notify(ctx, "hotpath.rate.consume", name);
}

fn check_gcra(
    ctx: &Context,
    key: &Key,
    name: &[u8],
    rule: Rule,
    o: &Common,
) -> Result<[i64; 5], RedisError> {
    let tat = read_tat(key)?;
    let step = model::gcra(rule, tat, o.now, o.cost);
    if let (Some(t), false) = (step.new, o.peek) {
        write_text(ctx, key, name, &t.format(), step.reply.reset_ms);
        consumed(ctx, name);
    }
    Ok(step.reply.fields())
}

fn check_fixed(
    ctx: &Context,
    key: &Key,
    name: &[u8],
    rule: Rule,
    o: &Common,
) -> Result<[i64; 5], RedisError> {
    let state = match read_text(key)? {
        Text::Empty => None,
        Text::Fixed(w) => Some(w),
        Text::Gcra(_) => return Err(holds(Algo::Gcra)),
    };
    let (r, new) = model::fixed(rule.limit, rule.period_ms, state, o.now, o.cost);
    if let (Some(w), false) = (new, o.peek) {
        write_text(ctx, key, name, &w.format(), r.reset_ms);
        consumed(ctx, name);
    }
    Ok(r.fields())
}

fn check_sliding(
    ctx: &Context,
    key: &Key,
    name: &[u8],
    rule: Rule,
    o: &Common,
) -> Result<[i64; 5], RedisError> {
    let state = match read_hash_kind(key)? {
        None => None,
        Some(Algo::Sliding) => Some(Sliding {
            window: field(key, b"window")?,
            count: field(key, b"count")?,
            prev: field(key, b"prev")?,
        }),
        Some(other) => return Err(holds(other)),
    };
    let (r, new) = model::sliding(rule.limit, rule.period_ms, state, o.now, o.cost);
    if let (Some(s), false) = (new, o.peek) {
        // Within the stored window only the count moves: write just that
        // field (the resulting Hash is the same, with one write, not four).
        let same_window = state.is_some_and(|old| old.window == s.window && old.prev == s.prev);
        let all = [
            ("algo", "sliding".to_string()),
            ("window", s.window.to_string()),
            ("count", s.count.to_string()),
            ("prev", s.prev.to_string()),
        ];
        let fields = if same_window { &all[2..3] } else { &all[..] };
        write_hash(ctx, key, name, fields, r.reset_ms);
        consumed(ctx, name);
    }
    Ok(r.fields())
}

fn check_bucket(
    ctx: &Context,
    key: &Key,
    name: &[u8],
    rule: Rule,
    o: &Common,
) -> Result<[i64; 5], RedisError> {
    let state = match read_hash_kind(key)? {
        None => None,
        Some(Algo::Bucket) => Some(Bucket {
            tokens: field(key, b"tokens")?,
            carry: field(key, b"carry")?,
            ts: field(key, b"ts")?,
        }),
        Some(other) => return Err(holds(other)),
    };
    let (r, new) = model::bucket(rule, state, o.now, o.cost);
    if let (Some(b), false) = (new, o.peek) {
        // An existing bucket already holds its `algo` field.
        let all = [
            ("algo", "bucket".to_string()),
            ("tokens", b.tokens.to_string()),
            ("carry", b.carry.to_string()),
            ("ts", b.ts.to_string()),
        ];
        let fields = if state.is_some() { &all[1..] } else { &all[..] };
        write_hash(ctx, key, name, fields, r.reset_ms);
        consumed(ctx, name);
    }
    Ok(r.fields())
}

fn check_log(
    ctx: &Context,
    key: &Key,
    name: &[u8],
    rule: Rule,
    o: &Common,
) -> Result<[i64; 5], RedisError> {
    key.check(KeyType::ZSet)?;
    let log = ZLog(key);
    let cutoff = o.now - rule.period_ms;
    let (r, add) = model::log(rule.limit, rule.period_ms, &log, o.now, o.cost);
    if add && !o.peek {
        // Entries are named `<ms>-<seq>`: at one NOW the in-window count
        // only grows, so numbering from it keeps the names unique.
        let first = log.count_after(cutoff);
        let stale: Vec<Vec<u8>> = key
            .zrange(0, usize::MAX, false, f64::NEG_INFINITY, cutoff as f64)
            .into_iter()
            .map(|(m, _)| m)
            .collect();
        for m in &stale {
            key.zrem(m);
        }
        let score = o.now.to_string();
        let members: Vec<String> = (0..o.cost)
            .map(|i| format!("{}-{}", o.now, first + i))
            .collect();
        for m in &members {
            key.zadd(m.as_bytes(), o.now as f64);
        }
        let at = expire(key, r.reset_ms);
        if !stale.is_empty() {
            let max = cutoff.to_string();
            ctx.replicate("ZREMRANGEBYSCORE", &[name, b"-inf", max.as_bytes()][..]);
        }
        let mut zargs: Vec<&[u8]> = vec![name];
        for m in &members {
            zargs.push(score.as_bytes());
            zargs.push(m.as_bytes());
        }
        ctx.replicate("ZADD", zargs.as_slice());
        ctx.replicate("PEXPIREAT", &[name, at.as_bytes()][..]);
        consumed(ctx, name);
    }
    Ok(r.fields())
}

/// Parses the trailing `[COST n] [PEEK] [NOW unix-ms]` of RATE.MULTI.
fn common_options(c: &mut Cursor) -> Result<Common, RedisError> {
    let mut o = Common {
        cost: 1,
        peek: false,
        now: -1,
    };
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "COST" => o.cost = c.option_i64(0, MAX_COUNT)?,
            "PEEK" => o.peek = true,
            "NOW" => o.now = c.option_i64(0, MAX_NOW_MS)?,
            _ => return Err(error::syntax()),
        }
    }
    if o.now < 0 {
        o.now = util::now_ms();
    }
    Ok(o)
}

/// RATE.MULTI numkeys B1 … Bn LIMITS limit1 period1-ms … limitn periodn-ms
/// [COST n] [PEEK] [NOW unix-ms]
pub fn rate_multi(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 6)?;
    let n = c.next_i64(1, MAX_RULES)? as usize;
    if c.remaining() < n {
        return Err(error::syntax());
    }
    let mut names: Vec<Vec<u8>> = Vec::new();
    let mut slots = Vec::with_capacity(n);
    for _ in 0..n {
        let k = c.next_bytes()?;
        let slot = match names.iter().position(|x| *x == k) {
            Some(i) => i,
            None => {
                names.push(k);
                names.len() - 1
            }
        };
        slots.push(slot);
    }
    if c.done() || c.next_keyword()? != "LIMITS" {
        return Err(error::syntax());
    }
    let mut rules = Vec::with_capacity(n);
    for &slot in &slots {
        let limit = c.next_i64(1, MAX_COUNT)?;
        let period = c.next_i64(1, MAX_PERIOD_MS)?;
        rules.push(MultiRule {
            rule: Rule {
                limit,
                period_ms: period,
                burst: limit,
            },
            key: slot,
        });
    }
    let o = common_options(&mut c)?;
    if rules.iter().any(|r| !r.rule.fits(Algo::Gcra)) {
        return Err(too_large());
    }
    let keys: Vec<Key> = names.iter().map(|k| Key::open(ctx, k, true)).collect();
    let mut states = Vec::with_capacity(keys.len());
    for k in &keys {
        states.push(read_tat(k)?);
    }
    let out = model::multi(&rules, &states, o.now, o.cost);
    if !o.peek {
        for ((key, name), new) in keys.iter().zip(&names).zip(&out.new) {
            if let Some(t) = new {
                let l = t.den as i128;
                let debt = (t.ms as i128 - o.now as i128) * l + t.num as i128;
                let reset = ((debt + l - 1) / l).max(1) as i64;
                write_text(ctx, key, name, &t.format(), reset);
                consumed(ctx, name);
            }
        }
        count(out.reply.allowed);
    }
    Ok(reply(out.reply.fields()))
}

/// RATE.THROTTLE B max-burst count period-s [quantity] [NOW unix-ms]
pub fn rate_throttle(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 5)?;
    let name = c.next_bytes()?;
    let max_burst = c.next_i64(0, MAX_COUNT - 1)?;
    let per = c.next_i64(1, MAX_COUNT)?;
    let period_s = c.next_i64(1, MAX_PERIOD_MS / 1000)?;
    let mut qty = 1;
    let mut now = -1;
    if !c.done() {
        // Argument 5 is either the quantity or NOW.
        if c.next_slice()?.eq_ignore_ascii_case(b"NOW") {
            now = c.option_i64(0, MAX_NOW_MS)?;
        } else {
            qty = crate::args::parse_i64(c.arg(5), 0, MAX_COUNT)?;
            if !c.done() {
                if c.next_keyword()? != "NOW" {
                    return Err(error::syntax());
                }
                now = c.option_i64(0, MAX_NOW_MS)?;
            }
        }
    }
    c.expect_done()?;
    let rule = Rule {
        limit: per,
        period_ms: period_s * 1000,
        burst: max_burst + 1,
    };
    if !rule.fits(Algo::Gcra) {
        return Err(too_large());
    }
    if now < 0 {
        now = util::now_ms();
    }
    let key = Key::open(ctx, &name, true);
    let tat = read_tat(&key)?;
    let step = model::gcra(rule, tat, now, qty);
    if let Some(t) = step.new {
        write_text(ctx, &key, &name, &t.format(), step.reply.reset_ms);
        consumed(ctx, &name);
    }
    count(step.reply.allowed);
    Ok(reply(model::throttle_reply(rule, &step)))
}

/// RATE.RESET B
pub fn rate_reset(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let name = c.next_bytes()?;
    c.expect_done()?;
    let key = Key::open(ctx, &name, true);
    let ours = match key.kind() {
        KeyType::Empty => false,
        KeyType::String => {
            read_text(&key)?;
            true
        }
        KeyType::Hash => read_hash_kind(&key)?.is_some(),
        KeyType::ZSet => true,
        _ => return Err(error::wrongtype()),
    };
    if !ours {
        return Ok(RedisValue::Integer(0));
    }
    key.delete();
    ctx.replicate("DEL", &[name.as_slice()][..]);
    util::notify(ctx, "hotpath.rate.reset", &name);
    RESETS.incr();
    Ok(RedisValue::Integer(1))
}
