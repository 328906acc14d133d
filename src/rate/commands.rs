//! RATE's handlers: parse and validate everything, read the clock once,
//! open the limiter key, run the model, write back only what was consumed,
//! reply, replicate the concrete effects (state and absolute expiry),
//! notify.
//!
//! Every write is replicated as plain Redis commands (`SET … PXAT`,
//! `HSET` + `PEXPIREAT`, `ZREMRANGEBYRANK` + `ZADD` + `PEXPIREAT`,
//! `UNLINK`) carrying the master's clock, so replicas and the AOF end
//! byte-identical (TTLs included) and need no module to replay them.
//!
//! The write path is counted in instructions (callgrind), so it avoids
//! what costs on it: the key is opened with the client's own string, a
//! String state is rewritten in place, hash fields are read and written
//! in one batched call with C-string field names, stored values are
//! formatted on the stack, and replication passes the client's key string
//! and integers straight to `RedisModule_Replicate`.

use std::cell::Cell;
use std::ffi::CStr;

use redis_module::{Context, KeyType, RedisError, RedisResult, RedisString, RedisValue};

use super::model::{
    self, Algo, Bucket, Log, LogScale, MultiRule, Rule, Sliding, Tat, Text, MAX_COUNT, MAX_NOW_MS,
    MAX_PERIOD_MS, MAX_REFILL_MS, MAX_STORED_MS, MAX_STORED_US, US,
};
use super::{ALLOWED, LIMITED, RESETS};
use crate::args::Cursor;
use crate::argv::Args;
use crate::error;
use crate::keys::{zadd, Key};
use crate::replicate;

const FAMILY: &str = "rate";
/// LOG keeps one entry per request: its limit is capped so that a window
/// never holds more than this many entries.
pub const MAX_LOG_LIMIT: i64 = 100_000;
/// The most entries one LOG request adds (its COST), so that one call
/// does a bounded amount of work.
pub const MAX_LOG_COST: i64 = 100;
/// The most rules one RATE.MULTI takes.
pub const MAX_RULES: i64 = 100;
/// A LOG of at most this many entries is read by walking its entries; a
/// larger one is counted with `ZCOUNT`/`ZRANGE` (O(log N)).
const LOG_SCAN: i64 = 256;
/// Besides as many as it adds, a LOG write removes at most this many
/// entries that left the window, so that stale entries never accumulate
/// and no call removes an unbounded number.
const LOG_TRIM: i64 = 128;

fn fail(msg: &str) -> RedisError {
    error::family(FAMILY, msg)
}

fn holds(algo: Algo) -> RedisError {
    fail(&format!("key holds a {} limiter", algo.name()))
}

fn too_large() -> RedisError {
    fail(&format!(
        "burst * period-ms / limit exceeds {MAX_REFILL_MS}"
    ))
}

fn corrupt(name: &[u8], field: Option<&str>) -> RedisError {
    error::corrupt(FAMILY, name, field)
}

/// The names of the five reply fields (RESP3 map keys).
const FIELDS: [&str; 5] = [
    "allowed",
    "limit",
    "remaining",
    "retry_after_ms",
    "reset_after_ms",
];

/// Replies with the five integers straight through the reply API (no
/// reply value is built and dropped), named in RESP3, and tells the
/// dispatcher that the reply is sent.
fn reply(ctx: &Context, fields: [i64; 5]) -> RedisValue {
    crate::util::record_ints(ctx, &FIELDS, &fields)
}

/// Replies RATE.THROTTLE's five integers as a flat array in both
/// protocols: exactly redis-cell's `CL.THROTTLE` reply.
fn throttle_array(ctx: &Context, fields: [i64; 5]) -> RedisValue {
    crate::reply::ints(ctx, &fields);
    RedisValue::NoReply
}

fn count(allowed: bool) {
    if allowed {
        ALLOWED.incr();
    } else {
        LIMITED.incr();
    }
}

/// Returns the server clock in unix microseconds.
fn clock_us() -> i64 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        // Seconds and microseconds apart: `as_micros` goes through a
        // 128-bit division.
        Ok(d) => d.as_secs() as i64 * 1_000_000 + d.subsec_micros() as i64,
        Err(_) => 0,
    }
}

/// Returns the absolute expiry (unix ms) of a state that is full again
/// `ttl_us` after `clock_us`, rounded up: the key never expires before the
/// limiter is full.
fn expire_at(clock_us: i64, ttl_us: i64) -> i64 {
    (clock_us + ttl_us.max(1) + US - 1).div_euclid(US)
}

/// Parses an argument as an integer within `[min, max]` (`min ≥ 0`), with
/// Redis's error for anything else.
fn int(b: &[u8], min: i64, max: i64) -> Result<i64, RedisError> {
    model::parse_nonneg(b)
        .filter(|n| (min..=max).contains(n))
        .ok_or_else(error::not_integer)
}

/// Reads the arguments in place after the fixed ones.
struct Opts<'a> {
    args: &'a [RedisString],
    pos: usize,
}

impl<'a> Opts<'a> {
    fn done(&self) -> bool {
        self.pos >= self.args.len()
    }

    /// Returns the next argument (the caller checked `done`).
    fn keyword(&mut self) -> &'a [u8] {
        self.pos += 1;
        self.args[self.pos - 1].as_slice()
    }

    /// Returns an option's value; missing is a syntax error.
    fn value(&mut self) -> Result<&'a [u8], RedisError> {
        if self.done() {
            return Err(error::syntax());
        }
        Ok(self.keyword())
    }

    fn int(&mut self, min: i64, max: i64) -> Result<i64, RedisError> {
        let v = self.value()?;
        int(v, min, max)
    }

    /// Reads the value of `NOW unix-ms` or `NOWUS unix-µs` when `kw` is
    /// one of them, returning the instant in microseconds.
    fn time(&mut self, kw: &[u8]) -> Result<Option<i64>, RedisError> {
        if kw.eq_ignore_ascii_case(b"NOW") {
            Ok(Some(self.int(0, MAX_NOW_MS)? * US))
        } else if kw.eq_ignore_ascii_case(b"NOWUS") {
            Ok(Some(self.int(0, MAX_NOW_MS * US)?))
        } else {
            Ok(None)
        }
    }
}

/// The instant a command computes at (`now`, µs) and the server clock it
/// counts expiry times from (`clock`, µs): the same reading unless the
/// client gave `NOW`/`NOWUS`.
#[derive(Clone, Copy)]
struct Time {
    now: i64,
    clock: i64,
}

impl Time {
    fn new(explicit: Option<i64>) -> Time {
        let clock = clock_us();
        Time {
            now: explicit.unwrap_or(clock),
            clock,
        }
    }

    fn expire_at(&self, ttl_us: i64) -> i64 {
        expire_at(self.clock, ttl_us)
    }
}

// ------------------------------------------------------ replication ----

/// Raises the event of the command that wrote the limiter
/// (`hotpath.rate.check`, `.multi` or `.throttle`): one event per write,
/// named after the command, as in every family.
fn consumed(ctx: &Context, key: &Key, event: &CStr) {
    crate::util::notify_static(ctx, event, key.name());
}

// ------------------------------------------------------ String states --

/// Reads a limiter for one of the String algorithms: None when the key is
/// missing; WRONGTYPE for another Redis type or a String that is not a
/// limiter; `holds` for another algorithm's state; a corrupt-data error
/// naming the key for a damaged limiter. A SLIDING or BUCKET Hash written
/// by the millisecond version is read too (the bool is then true: the
/// next write replaces it with a String).
fn read_state(key: &Key, algo: Algo, period_ms: i64) -> Result<(Option<Text>, bool), RedisError> {
    match key.kind() {
        KeyType::Empty => Ok((None, false)),
        KeyType::String => match model::parse_text(key.bytes()) {
            Text::Foreign => Err(error::wrongtype()),
            Text::Corrupt => Err(corrupt(key.name().as_slice(), None)),
            t if t.algo() == Some(algo) => Ok((Some(t), false)),
            t => Err(holds(t.algo().unwrap_or(algo))),
        },
        KeyType::Hash => {
            let old = read_old_hash(key, period_ms)?;
            match old.algo() {
                Some(a) if a == algo => Ok((Some(old), true)),
                Some(a) => Err(holds(a)),
                None => Err(error::wrongtype()),
            }
        }
        _ => Err(error::wrongtype()),
    }
}

/// Reads a GCRA state, refusing any other kind of value.
fn read_tat(key: &Key) -> Result<Option<Tat>, RedisError> {
    match read_state(key, Algo::Gcra, 1)?.0 {
        Some(Text::Gcra(t)) => Ok(Some(t)),
        _ => Ok(None),
    }
}

/// Writes a String state in place and sets its expiry to `at`; replicates
/// `SET … PXAT at`. With `same_ttl_likely` (a state whose expiry moves
/// once per window), an unchanged expiry is left alone and replicated as
/// `KEEPTTL`. A key of another type (a Hash of the millisecond version) is
/// replaced.
fn write_text(
    ctx: &Context,
    key: &Key,
    value: &[u8],
    at: i64,
    same_ttl_likely: bool,
    event: &CStr,
) {
    let keep = same_ttl_likely && key.kind() == KeyType::String && key.abs_expire_ms() == Some(at);
    key.write_string(value);
    if keep {
        replicate::set_at(ctx, key.name(), value, None);
    } else {
        key.set_abs_expire_ms(at);
        replicate::set_at(ctx, key.name(), value, Some(at));
    }
    consumed(ctx, key, event);
}

// ----------------------------------------- Hash states (older version) --

/// Returns the kind of a Hash limiter of the millisecond version from its
/// `algo` field; WRONGTYPE for a Hash that is not one of ours.
fn hash_kind(algo: Option<&[u8]>) -> Result<Algo, RedisError> {
    match algo {
        Some(b"sliding") => Ok(Algo::Sliding),
        Some(b"bucket") => Ok(Algo::Bucket),
        _ => Err(error::wrongtype()),
    }
}

/// Parses a stored hash field as an integer within `[0, max]`; a missing
/// or malformed field is corrupt data, named in the error.
fn field(name: &[u8], v: &Option<RedisString>, field: &str, max: i64) -> Result<i64, RedisError> {
    v.as_ref()
        .and_then(|s| model::parse_nonneg(s.as_slice()))
        .filter(|&n| n <= max)
        .ok_or_else(|| corrupt(name, Some(field)))
}

/// Reads a SLIDING or BUCKET Hash of the millisecond version (`algo
/// sliding window <ms> count <n> prev <n>`, `algo bucket tokens <n> carry
/// <n> ts <ms>`) as the state it stands for; any other Hash is WRONGTYPE.
/// This runs once per key (the next write replaces the Hash).
fn read_old_hash(key: &Key, period_ms: i64) -> Result<Text, RedisError> {
    let name = key.name().as_slice();
    match hash_kind(key.hget(b"algo").as_deref())? {
        Algo::Sliding => {
            let v = key.hget_cnames([c"algo", c"window", c"count", c"prev"]);
            Ok(Text::Sliding(Sliding {
                window: field(name, &v[1], "window", MAX_STORED_MS)?,
                count: field(name, &v[2], "count", MAX_COUNT)?,
                prev: field(name, &v[3], "prev", MAX_COUNT)?,
            }))
        }
        _ => {
            let v = key.hget_cnames([c"algo", c"tokens", c"carry", c"ts"]);
            let tokens = field(name, &v[1], "tokens", MAX_COUNT)?;
            let carry = field(name, &v[2], "carry", MAX_STORED_US)?;
            let ts = field(name, &v[3], "ts", MAX_STORED_MS)?;
            Ok(Text::Bucket(Bucket::from_ms(tokens, carry, ts, period_ms)))
        }
    }
}

// ------------------------------------------------------------- LOG ------

/// A LOG's Sorted Set seen through the model's [`Log`] trait, at the
/// scale its entries were written with.
struct ZLog<'a> {
    ctx: &'a Context,
    key: &'a Key,
    len: i64,
    scale: LogScale,
    /// Set when an entry the model asked about is not one the module
    /// writes, or a count failed: the command then refuses with a
    /// corrupt-data error and writes nothing.
    bad: Cell<bool>,
}

/// Returns a score as `ZCOUNT` takes it (LOG scores are integers).
fn score_text(s: f64) -> String {
    (s as i64).to_string()
}

/// Reads a score from a `ZRANGE … WITHSCORES` reply element.
fn reply_f64(v: &RedisValue) -> Option<f64> {
    match v {
        RedisValue::SimpleString(s) | RedisValue::BulkString(s) => s.parse().ok(),
        RedisValue::BulkRedisString(s) => s.try_as_str().ok()?.parse().ok(),
        RedisValue::StringBuffer(b) => std::str::from_utf8(b).ok()?.parse().ok(),
        RedisValue::Float(f) => Some(*f),
        RedisValue::Integer(i) => Some(*i as f64),
        _ => None,
    }
}

impl ZLog<'_> {
    fn large(&self) -> bool {
        self.len > LOG_SCAN
    }

    /// Returns an integer reply of `ZCOUNT B min max` (a read: safe while
    /// the key is open, and O(log N)).
    fn zcount(&self, min: &str, max: &str) -> i64 {
        let name = self.key.name().as_slice();
        match self
            .ctx
            .call("ZCOUNT", &[name, min.as_bytes(), max.as_bytes()][..])
        {
            Ok(RedisValue::Integer(n)) => n,
            _ => {
                self.bad.set(true);
                0
            }
        }
    }

    /// Returns how many entries have a score of at most `s`.
    fn count_upto(&self, s: f64) -> i64 {
        if self.large() {
            return self.zcount("-inf", &score_text(s));
        }
        let mut n = 0;
        self.key.zwalk(f64::NEG_INFINITY, false, s, false, |_, _| {
            n += 1;
            true
        });
        n
    }

    /// Returns how many entries have exactly the score `s`.
    fn count_at(&self, s: f64) -> i64 {
        if self.large() {
            let t = score_text(s);
            return self.zcount(&t, &t);
        }
        let mut n = 0;
        self.key.zwalk(s, false, s, false, |_, _| {
            n += 1;
            true
        });
        n
    }

    fn time(&self, score: f64) -> Option<i64> {
        let t = self.scale.time(score);
        if t.is_none() {
            self.bad.set(true);
        }
        t
    }

    /// Returns the time of the `n`-th (0-based) entry scored above `s`.
    fn nth_above(&self, s: f64, n: i64) -> Option<i64> {
        if self.large() {
            let rank = (self.count_upto(s) + n).to_string();
            let name = self.key.name().as_slice();
            let args: &[&[u8]] = &[name, rank.as_bytes(), rank.as_bytes(), b"WITHSCORES"];
            let score = match self.ctx.call("ZRANGE", args) {
                Ok(RedisValue::Array(v)) if v.len() == 2 => reply_f64(&v[1]),
                _ => None,
            };
            if score.is_none() {
                self.bad.set(true);
            }
            return score.and_then(|s| self.time(s));
        }
        let mut skip = n;
        let mut found = None;
        self.key.zwalk(s, true, f64::INFINITY, false, |_, v| {
            if skip == 0 {
                found = Some(v);
                return false;
            }
            skip -= 1;
            true
        });
        found.and_then(|v| self.time(v))
    }
}

/// The in-window count and newest entry, read once, for the model.
struct Counted<'a, 'b> {
    log: &'a ZLog<'b>,
    count: i64,
    newest: Option<i64>,
}

impl Log for Counted<'_, '_> {
    fn count_after(&self, _cutoff: i64) -> i64 {
        self.count
    }
    fn nth_after(&self, cutoff: i64, n: i64) -> Option<i64> {
        self.log.nth_above(self.log.scale.score(cutoff), n)
    }
    fn newest(&self) -> Option<i64> {
        self.newest
    }
}

/// Replicates a LOG write: `ZREMRANGEBYRANK B 0 n-1` when entries were
/// removed (the oldest, the same on a replica), `ZADD B score m …`,
/// `PEXPIREAT B at`.
fn replicate_log(
    ctx: &Context,
    name: &RedisString,
    removed: i64,
    score: f64,
    members: &[RedisString],
    at: i64,
) {
    replicate::zremrangebyrank_first(ctx, name, removed);
    replicate::zadd_same_score(ctx, name, score as i64, members);
    replicate::pexpireat(ctx, name, at);
}

// ------------------------------------------------------------ RATE.CHECK --

/// The keyspace event of a write by RATE.CHECK.
const CHECK_EVENT: &CStr = c"hotpath.rate.check";

/// The options every checking command shares.
struct Common {
    cost: i64,
    peek: bool,
    time: Time,
}

/// RATE.CHECK B limit period-ms [ALGO GCRA|FIXED|SLIDING|LOG|BUCKET]
/// [BURST n] [COST n] [PEEK] [NOW unix-ms | NOWUS unix-µs]
pub fn rate_check(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(4)?;
    let a = c.all();
    let limit = int(a[2].as_slice(), 1, MAX_COUNT)?;
    let period = int(a[3].as_slice(), 1, MAX_PERIOD_MS)?;
    let mut algo = Algo::Gcra;
    let mut burst: Option<i64> = None;
    let mut cost = 1;
    let mut peek = false;
    let mut now = None;
    let mut o = Opts { args: a, pos: 4 };
    while !o.done() {
        let kw = o.keyword();
        if kw.eq_ignore_ascii_case(b"ALGO") {
            algo = Algo::parse(o.value()?).ok_or_else(error::syntax)?;
        } else if kw.eq_ignore_ascii_case(b"BURST") {
            burst = Some(o.int(1, MAX_COUNT)?);
        } else if kw.eq_ignore_ascii_case(b"COST") {
            cost = o.int(0, MAX_COUNT)?;
        } else if kw.eq_ignore_ascii_case(b"PEEK") {
            peek = true;
        } else if let Some(t) = o.time(kw)? {
            now = Some(t);
        } else {
            return Err(error::syntax());
        }
    }
    if burst.is_some() && !algo.has_burst() {
        return Err(fail("BURST applies only to GCRA and BUCKET"));
    }
    if algo == Algo::Log && limit > MAX_LOG_LIMIT {
        return Err(fail("LOG limit must be at most 100000"));
    }
    if algo == Algo::Log && cost > MAX_LOG_COST {
        return Err(fail("LOG cost must be at most 100"));
    }
    let rule = Rule {
        limit,
        period_ms: period,
        burst: burst.unwrap_or(limit),
    };
    if !rule.fits(algo) {
        return Err(too_large());
    }
    let o = Common {
        cost,
        peek,
        time: Time::new(now),
    };
    let key = Key::open_arg(ctx, &a[1], true);
    let fields = match algo {
        Algo::Gcra => check_gcra(ctx, &key, rule, &o)?,
        Algo::Fixed => check_fixed(ctx, &key, rule, &o)?,
        Algo::Sliding => check_sliding(ctx, &key, rule, &o)?,
        Algo::Bucket => check_bucket(ctx, &key, rule, &o)?,
        Algo::Log => check_log(ctx, &key, rule, &o)?,
    };
    if !o.peek {
        count(fields[0] == 1);
    }
    Ok(reply(ctx, fields))
}

fn check_gcra(ctx: &Context, key: &Key, rule: Rule, o: &Common) -> Result<[i64; 5], RedisError> {
    let tat = read_tat(key)?;
    let step = model::gcra(rule, tat, o.time.now, o.cost);
    if let (Some(t), false) = (step.new, o.peek) {
        let at = o.time.expire_at(step.reset_us());
        write_text(ctx, key, t.format().as_bytes(), at, false, CHECK_EVENT);
    }
    Ok(step.reply.fields())
}

fn check_fixed(ctx: &Context, key: &Key, rule: Rule, o: &Common) -> Result<[i64; 5], RedisError> {
    let state = match read_state(key, Algo::Fixed, rule.period_ms)?.0 {
        Some(Text::Fixed(w)) => Some(w),
        _ => None,
    };
    let (r, new) = model::fixed(rule.limit, rule.period_ms, state, o.time.now, o.cost);
    if let (Some((w, ttl)), false) = (new, o.peek) {
        // The expiry is the window's end: it moves once per window.
        write_text(
            ctx,
            key,
            w.format().as_bytes(),
            o.time.expire_at(ttl),
            true,
            CHECK_EVENT,
        );
    }
    Ok(r.fields())
}

fn check_sliding(ctx: &Context, key: &Key, rule: Rule, o: &Common) -> Result<[i64; 5], RedisError> {
    let (state, old) = read_state(key, Algo::Sliding, rule.period_ms)?;
    let state = match state {
        Some(Text::Sliding(s)) => Some(s),
        _ => None,
    };
    let (r, new) = model::sliding(rule.limit, rule.period_ms, state, o.time.now, o.cost);
    if let (Some(s), false) = (new, o.peek) {
        // The state is needed until the end of the window after its own:
        // the expiry moves once per window.
        let ttl = (s.window + 2 * rule.period_ms) * US - o.time.now;
        let at = o.time.expire_at(ttl);
        write_text(ctx, key, s.format().as_bytes(), at, !old, CHECK_EVENT);
    }
    Ok(r.fields())
}

fn check_bucket(ctx: &Context, key: &Key, rule: Rule, o: &Common) -> Result<[i64; 5], RedisError> {
    let state = match read_state(key, Algo::Bucket, rule.period_ms)?.0 {
        Some(Text::Bucket(b)) => Some(b),
        _ => None,
    };
    let (r, new) = model::bucket(rule, state, o.time.now, o.cost);
    if let (Some((b, ttl)), false) = (new, o.peek) {
        write_text(
            ctx,
            key,
            b.format().as_bytes(),
            o.time.expire_at(ttl),
            false,
            CHECK_EVENT,
        );
    }
    Ok(r.fields())
}

fn check_log(ctx: &Context, key: &Key, rule: Rule, o: &Common) -> Result<[i64; 5], RedisError> {
    key.check(KeyType::ZSet)?;
    let name = key.name().as_slice();
    let mut newest: Option<(RedisString, f64)> = None;
    key.zwalk(f64::NEG_INFINITY, false, f64::INFINITY, true, |m, s| {
        newest = Some((m, s));
        false
    });
    let scale = newest
        .as_ref()
        .map_or(LogScale::Micros, |(m, _)| LogScale::of_member(m.as_slice()));
    let log = ZLog {
        ctx,
        key,
        len: key.len() as i64,
        scale,
        bad: Cell::new(false),
    };
    let newest = match newest {
        None => None,
        Some((_, s)) => Some(scale.time(s).ok_or_else(|| corrupt(name, None))?),
    };
    let now = scale.truncate(o.time.now);
    let p = rule.period_ms * US;
    let stale = log.count_upto(scale.score(now - p));
    let view = Counted {
        log: &log,
        count: log.len - stale,
        newest,
    };
    let (r, add) = model::log(rule.limit, rule.period_ms, &view, now, o.cost);
    if log.bad.get() {
        return Err(corrupt(name, None));
    }
    if add && !o.peek {
        // Entries are named `<time>-<n>`, numbered among the entries of the
        // same instant (which never leave before the new ones); the oldest
        // entries that left the window go, a bounded number.
        let w = model::plan_log_write(
            scale,
            now,
            o.time.now,
            newest,
            stale,
            o.cost,
            LOG_TRIM,
            rule.period_ms,
            || log.count_at(scale.score(now)),
        );
        let (score, mut n, drop) = (w.score, w.first, w.drop);
        let mut gone: Vec<RedisString> = Vec::with_capacity(drop as usize);
        if drop > 0 {
            key.zwalk(f64::NEG_INFINITY, false, f64::INFINITY, false, |m, _| {
                gone.push(m);
                (gone.len() as i64) < drop
            });
        }
        for m in &gone {
            key.zrem_arg(m);
        }
        let mut buf = Vec::with_capacity(32);
        let mut members: Vec<RedisString> = Vec::with_capacity(o.cost as usize);
        for _ in 0..o.cost {
            // A name is only ever taken when the clock went back by more
            // than a period; then the next free number is used.
            loop {
                scale.member(now, n, &mut buf);
                n += 1;
                let m = RedisString::create_from_slice(ctx.ctx, &buf);
                if key.zadd_flags_arg(&m, score, zadd::NX) & zadd::ADDED != 0 {
                    members.push(m);
                    break;
                }
            }
        }
        key.mark_modified();
        let at = o.time.expire_at(w.ttl_us);
        key.set_abs_expire_ms(at);
        replicate_log(ctx, key.name(), gone.len() as i64, score, &members, at);
        consumed(ctx, key, CHECK_EVENT);
    }
    Ok(r.fields())
}

// ------------------------------------------------------------ RATE.MULTI --

/// RATE.MULTI numkeys B1 … Bn LIMITS limit1 period1-ms … limitn periodn-ms
/// [COST n] [PEEK] [NOW unix-ms | NOWUS unix-µs]
pub fn rate_multi(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let c = Cursor::new(args, 6)?;
    let a = c.args();
    let n = int(a[1].as_slice(), 1, MAX_RULES)? as usize;
    if a.len() - 2 < n {
        return Err(error::syntax());
    }
    // Distinct keys in order of first appearance; each rule points at one.
    let mut names: Vec<&RedisString> = Vec::with_capacity(n);
    let mut slots = Vec::with_capacity(n);
    for k in &a[2..2 + n] {
        let slot = match names.iter().position(|x| x.as_slice() == k.as_slice()) {
            Some(i) => i,
            None => {
                names.push(k);
                names.len() - 1
            }
        };
        slots.push(slot);
    }
    let mut o = Opts {
        args: a,
        pos: 2 + n,
    };
    if o.done() || !o.keyword().eq_ignore_ascii_case(b"LIMITS") {
        return Err(error::syntax());
    }
    let mut rules = Vec::with_capacity(n);
    for &slot in &slots {
        if o.args.len() - o.pos < 2 {
            return Err(c_arity());
        }
        let limit = int(o.keyword(), 1, MAX_COUNT)?;
        let period = int(o.keyword(), 1, MAX_PERIOD_MS)?;
        rules.push(MultiRule {
            rule: Rule {
                limit,
                period_ms: period,
                burst: limit,
            },
            key: slot,
        });
    }
    let mut cost = 1;
    let mut peek = false;
    let mut now = None;
    while !o.done() {
        let kw = o.keyword();
        if kw.eq_ignore_ascii_case(b"COST") {
            cost = o.int(0, MAX_COUNT)?;
        } else if kw.eq_ignore_ascii_case(b"PEEK") {
            peek = true;
        } else if let Some(t) = o.time(kw)? {
            now = Some(t);
        } else {
            return Err(error::syntax());
        }
    }
    if rules.iter().any(|r| !r.rule.fits(Algo::Gcra)) {
        return Err(too_large());
    }
    let time = Time::new(now);
    let keys: Vec<Key> = names.iter().map(|k| Key::open_arg(ctx, k, true)).collect();
    // Every type check before any value check.
    for k in &keys {
        match k.kind() {
            KeyType::Empty => {}
            KeyType::String if model::parse_text(k.bytes()) != Text::Foreign => {}
            KeyType::Hash => {
                hash_kind(k.hget(b"algo").as_deref())?;
            }
            _ => return Err(error::wrongtype()),
        }
    }
    let mut states = Vec::with_capacity(keys.len());
    for k in &keys {
        states.push(read_tat(k)?);
    }
    let out = model::multi(&rules, &states, time.now, cost);
    if !peek {
        for (key, new) in keys.iter().zip(&out.new) {
            if let Some((t, ttl)) = new {
                let at = time.expire_at(*ttl);
                write_text(
                    ctx,
                    key,
                    t.format().as_bytes(),
                    at,
                    false,
                    c"hotpath.rate.multi",
                );
            }
        }
        count(out.reply.allowed);
    }
    Ok(reply(ctx, out.reply.fields()))
}

fn c_arity() -> RedisError {
    error::arity("rate.multi")
}

// --------------------------------------------------------- RATE.THROTTLE --

/// RATE.THROTTLE B max-burst count period-s [quantity] [NOW unix-ms |
/// NOWUS unix-µs]
pub fn rate_throttle(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(5)?;
    let a = c.all();
    let max_burst = int(a[2].as_slice(), 0, MAX_COUNT - 1)?;
    let per = int(a[3].as_slice(), 1, MAX_COUNT)?;
    let period_s = int(a[4].as_slice(), 1, MAX_PERIOD_MS / 1000)?;
    let mut qty = 1;
    let mut now = None;
    let mut o = Opts { args: a, pos: 5 };
    if !o.done() {
        // Argument 5 is either the quantity or the time.
        let kw = o.keyword();
        match o.time(kw)? {
            Some(t) => now = Some(t),
            None => {
                qty = int(kw, 0, MAX_COUNT)?;
                if !o.done() {
                    let kw = o.keyword();
                    now = Some(o.time(kw)?.ok_or_else(error::syntax)?);
                }
            }
        }
    }
    if !o.done() {
        return Err(error::syntax());
    }
    let rule = Rule {
        limit: per,
        period_ms: period_s * 1000,
        burst: max_burst + 1,
    };
    if !rule.fits(Algo::Gcra) {
        return Err(too_large());
    }
    let time = Time::new(now);
    let key = Key::open_arg(ctx, &a[1], true);
    let tat = read_tat(&key)?;
    let step = model::gcra(rule, tat, time.now, qty);
    if let Some(t) = step.new {
        let at = time.expire_at(step.reset_us());
        write_text(
            ctx,
            &key,
            t.format().as_bytes(),
            at,
            false,
            c"hotpath.rate.throttle",
        );
    }
    count(step.reply.allowed);
    Ok(throttle_array(ctx, model::throttle_reply(rule, &step)))
}

// ------------------------------------------------------------ RATE.RESET --

/// RATE.RESET B
pub fn rate_reset(ctx: &Context, c: &mut Args) -> RedisResult {
    // The arity (exactly one key) is checked by Redis before the call.
    c.require(2)?;
    let a = c.all();
    let key = Key::open_arg(ctx, &a[1], true);
    let ours = match key.kind() {
        KeyType::Empty => false,
        // A damaged limiter is still ours to drop: resetting it is the
        // remedy the corrupt-data error points to.
        KeyType::String => match model::parse_text(key.bytes()) {
            Text::Foreign => return Err(error::wrongtype()),
            _ => true,
        },
        KeyType::Hash => {
            hash_kind(key.hget(b"algo").as_deref())?;
            true
        }
        KeyType::ZSet => true,
        _ => return Err(error::wrongtype()),
    };
    if !ours {
        return Ok(RedisValue::Integer(0));
    }
    // UNLINK frees a large LOG in the background instead of stalling.
    key.unlink();
    replicate::key_only(ctx, c"UNLINK", key.name());
    crate::util::notify_static(ctx, c"hotpath.rate.reset", key.name());
    RESETS.incr();
    Ok(RedisValue::Integer(1))
}
