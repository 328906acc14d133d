//! RATE's handlers: parse everything, read the clock once, open the
//! limiter key, look at what it holds, plan (model/plan.rs: the checks,
//! the algorithm, what to write and reply, or the refusal), then apply
//! the plan: write back only what was consumed, reply, replicate the
//! concrete effects (state and absolute expiry), notify.
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

use super::model::plan::{self, CheckRule, Refusal, Stored, TextWrite, Time};
use super::model::{
    self, Algo, Log, LogScale, MultiRule, Rule, MAX_COUNT, MAX_NOW_MS, MAX_PERIOD_MS, US,
};
use super::{ALLOWED, LIMITED, RESETS};
use crate::args::Cursor;
use crate::argv::Args;
use crate::error;
use crate::keys::{zadd, Key};
use crate::replicate;

const FAMILY: &str = "rate";
pub use super::model::plan::{MAX_LOG_COST, MAX_LOG_LIMIT};
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

fn corrupt(name: &[u8], field: Option<&str>) -> RedisError {
    error::corrupt(FAMILY, name, field)
}

/// Returns the error of a plan's refusal; `key` names a corrupt limiter.
#[cold]
fn refused(key: &RedisString, r: Refusal) -> RedisError {
    match r {
        Refusal::WrongType => error::wrongtype(),
        Refusal::Holds(algo) => fail(&format!("key holds a {} limiter", algo.name())),
        Refusal::Corrupt(field) => corrupt(key.as_slice(), field),
        r => fail(&r.message().unwrap_or_default()),
    }
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

/// Reads the server clock once: the command's time.
fn time(explicit: Option<i64>) -> Time {
    Time::new(clock_us(), explicit)
}

// ------------------------------------------------------ replication ----

/// Raises the event of the command that wrote the limiter
/// (`hotpath.rate.check`, `.multi` or `.throttle`): one event per write,
/// named after the command, as in every family.
fn consumed(ctx: &Context, key: &Key, event: &CStr) {
    crate::util::notify_static(ctx, event, key.name());
}

// ------------------------------------------------------ String states --

/// Calls `f` with what the limiter key holds. A Hash's `algo` field is
/// read here (a Hash limiter is the millisecond version's, read once).
#[inline]
fn look<R>(key: &Key, f: impl FnOnce(Stored) -> R) -> R {
    match key.kind() {
        KeyType::Empty => f(Stored::Empty),
        KeyType::String => f(Stored::String(key.bytes())),
        KeyType::Hash => {
            let algo = key.hget(b"algo");
            f(Stored::Hash(algo.as_deref()))
        }
        KeyType::ZSet => f(Stored::ZSet),
        _ => f(Stored::Other),
    }
}

/// Reads the three fields of a millisecond version's Hash of `kind`
/// (window, count, prev; or tokens, carry, ts) in one batched call.
fn hash_fields(key: &Key, kind: Algo) -> [Option<RedisString>; 3] {
    let [_, a, b, c] = if kind == Algo::Sliding {
        key.hget_cnames([c"algo", c"window", c"count", c"prev"])
    } else {
        key.hget_cnames([c"algo", c"tokens", c"carry", c"ts"])
    };
    [a, b, c]
}

/// Reads a GCRA state (THROTTLE's, MULTI's), refusing any other value.
fn read_tat(key: &Key) -> Result<Option<model::Tat>, RedisError> {
    look(key, |st| plan::read_tat(st, |k| hash_fields(key, k))).map_err(|r| refused(key.name(), r))
}

/// Applies a String write: the value in place and its expiry; replicates
/// `SET … PXAT at`, or `SET … KEEPTTL` when the plan keeps an expiry
/// already at `at`. A key of another type (a Hash of the millisecond
/// version) is replaced.
fn write_text(ctx: &Context, key: &Key, w: &TextWrite, event: &CStr) {
    let value = w.value.as_bytes();
    let keep =
        w.keep_same_ttl && key.kind() == KeyType::String && key.abs_expire_ms() == Some(w.at);
    key.write_string(value);
    if keep {
        replicate::set_at(ctx, key.name(), value, None);
    } else {
        key.set_abs_expire_ms(w.at);
        replicate::set_at(ctx, key.name(), value, Some(w.at));
    }
    consumed(ctx, key, event);
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
    let check = CheckRule {
        algo,
        limit,
        period_ms: period,
        burst,
        cost,
    };
    let rule = plan::plan_rule(check).map_err(|r| refused(&a[1], r))?;
    let time = time(now);
    let key = Key::open_arg(ctx, &a[1], true);
    let reply = if algo == Algo::Log {
        check_log(ctx, &key, rule, &Common { cost, peek, time })?
    } else {
        let fields = |k| hash_fields(&key, k);
        let (state, old) = look(&key, |st| plan::read_state(st, algo, period, fields))
            .map_err(|r| refused(key.name(), r))?;
        let p = plan::plan_check(algo, rule, state, old, time, cost, peek);
        if let Some(w) = &p.write {
            write_text(ctx, &key, w, CHECK_EVENT);
        }
        p.reply
    };
    if !peek {
        count(reply.allowed);
    }
    Ok(self::reply(ctx, reply.fields()))
}

fn check_log(ctx: &Context, key: &Key, rule: Rule, o: &Common) -> Result<model::Reply, RedisError> {
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
    Ok(r)
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
    plan::plan_multi_rules(&rules).map_err(|r| refused(&a[2], r))?;
    let time = time(now);
    let keys: Vec<Key> = names.iter().map(|k| Key::open_arg(ctx, k, true)).collect();
    // Every type check before any value check.
    for k in &keys {
        look(k, plan::multi_kind).map_err(|r| refused(k.name(), r))?;
    }
    let mut states = Vec::with_capacity(keys.len());
    for k in &keys {
        states.push(read_tat(k)?);
    }
    let p = plan::plan_multi(&rules, &states, time, cost, peek);
    for (i, key) in keys.iter().enumerate() {
        if let Some(w) = p.write(i) {
            write_text(ctx, key, &w, c"hotpath.rate.multi");
        }
    }
    if !peek {
        count(p.reply.allowed);
    }
    Ok(reply(ctx, p.reply.fields()))
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
    let rule = plan::plan_throttle_rule(max_burst, per, period_s).map_err(|r| refused(&a[1], r))?;
    let time = time(now);
    let key = Key::open_arg(ctx, &a[1], true);
    let tat = read_tat(&key)?;
    let p = plan::plan_throttle(rule, tat, time, qty);
    if let Some(w) = &p.write {
        write_text(ctx, &key, w, c"hotpath.rate.throttle");
    }
    count(p.allowed);
    Ok(throttle_array(ctx, p.fields))
}

// ------------------------------------------------------------ RATE.RESET --

/// RATE.RESET B
pub fn rate_reset(ctx: &Context, c: &mut Args) -> RedisResult {
    // The arity (exactly one key) is checked by Redis before the call.
    c.require(2)?;
    let a = c.all();
    let key = Key::open_arg(ctx, &a[1], true);
    // A damaged limiter is still ours to drop: resetting it is the
    // remedy the corrupt-data error points to.
    let ours = look(&key, plan::plan_reset).map_err(|r| refused(key.name(), r))?;
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
