//! The five rate-limit algorithms as pure functions of their stored state,
//! the request and the time. Nothing here reads a clock or touches Redis:
//! the handlers read the state, call a function, and write back what it
//! returns.
//!
//! Time is integer milliseconds (`NOW` is milliseconds), and every quantity
//! that would be fractional is kept as an exact integer ratio, so a rate of
//! 100,000 requests per second, 3 requests per second or 7 per day is
//! exact, not rounded to a microsecond grid:
//!
//! - GCRA keeps its theoretical arrival time as `ms + num/limit`; the
//!   "debt" `(tat − now) × limit` is an integer, one request adds `period`
//!   to it and it drains by `limit` per millisecond.
//! - BUCKET keeps whole tokens plus a `carry` in units of `1/period` token;
//!   it refills `limit` such units per millisecond.
//! - SLIDING compares `prev × (period − elapsed) ≤ (limit − count − cost) ×
//!   period`, never a float.
//!
//! All products stay below 2^53 when `burst × period ≤ 2^52` (checked by
//! the handler, see [`MAX_PRODUCT`]), so the Lua twins, whose numbers are
//! doubles, compute exactly the same integers.
//!
//! Waiting times are rounded up to the next millisecond ("never rounded
//! down": a client that waits `retry-after-ms` passes), and a request that
//! is refused changes nothing.

/// The largest `burst × period-ms` (GCRA, BUCKET) or `limit × period-ms`
/// (SLIDING) accepted: 2^52, so that every intermediate value (and a
/// theoretical arrival time of up to `NOW` + 2^52 ms) is an exact integer
/// in a Lua double too.
pub const MAX_PRODUCT: i128 = 1 << 52;

/// The algorithm a limiter key holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Algo {
    Gcra,
    Fixed,
    Sliding,
    Log,
    Bucket,
}

impl Algo {
    /// Returns the lower-case name used in replies, errors and stored state.
    pub fn name(self) -> &'static str {
        match self {
            Algo::Gcra => "gcra",
            Algo::Fixed => "fixed",
            Algo::Sliding => "sliding",
            Algo::Log => "log",
            Algo::Bucket => "bucket",
        }
    }

    /// Returns the algorithm named `s` (any case).
    pub fn parse(s: &str) -> Option<Algo> {
        [
            Algo::Gcra,
            Algo::Fixed,
            Algo::Sliding,
            Algo::Log,
            Algo::Bucket,
        ]
        .into_iter()
        .find(|a| a.name().eq_ignore_ascii_case(s))
    }

    /// Returns true for the algorithms that take `BURST`.
    pub fn has_burst(self) -> bool {
        matches!(self, Algo::Gcra | Algo::Bucket)
    }
}

/// One rule: `limit` requests per `period_ms`, at most `burst` at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rule {
    pub limit: i64,
    pub period_ms: i64,
    pub burst: i64,
}

impl Rule {
    /// Returns true when the rule's products stay exact (see
    /// [`MAX_PRODUCT`]) for `algo`.
    pub fn fits(&self, algo: Algo) -> bool {
        let cap = match algo {
            Algo::Gcra | Algo::Bucket => self.burst,
            Algo::Sliding => self.limit,
            Algo::Fixed | Algo::Log => return true,
        };
        (cap as i128) * (self.period_ms as i128) <= MAX_PRODUCT
    }
}

/// The answer to one request: `[allowed, limit, remaining, retry-after-ms,
/// reset-after-ms]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reply {
    pub allowed: bool,
    pub limit: i64,
    /// Requests of cost 1 that would pass right after this one.
    pub remaining: i64,
    /// -1 when allowed, or when the cost can never pass (more than the
    /// burst); else the milliseconds until the same request passes.
    pub retry_ms: i64,
    /// Milliseconds until the limiter is back to full (0: it is full).
    pub reset_ms: i64,
}

impl Reply {
    /// Returns the five reply fields.
    pub fn fields(&self) -> [i64; 5] {
        [
            self.allowed as i64,
            self.limit,
            self.remaining,
            self.retry_ms,
            self.reset_ms,
        ]
    }
}

/// Returns `ceil(a / b)` for `a ≥ 0`, `b > 0`.
fn ceil_div(a: i128, b: i128) -> i128 {
    (a + b - 1).div_euclid(b)
}

fn to_i64(v: i128) -> i64 {
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

// ---------------------------------------------------------------- GCRA --

/// A GCRA theoretical arrival time, `ms + num/den` milliseconds, with
/// `den` the limit it was computed with. Stored as `gcra:<ms>:<num>:<den>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tat {
    pub ms: i64,
    pub num: i64,
    pub den: i64,
}

impl Tat {
    /// Parses the stored form; None when it is not a GCRA state.
    pub fn parse(v: &[u8]) -> Option<Tat> {
        let rest = v.strip_prefix(b"gcra:")?;
        let mut parts = rest.split(|&c| c == b':');
        let ms = parse_nonneg(parts.next()?)?;
        let num = parse_nonneg(parts.next()?)?;
        let den = parse_nonneg(parts.next()?)?;
        if parts.next().is_some() || den == 0 || num >= den {
            return None;
        }
        Some(Tat { ms, num, den })
    }

    /// Returns the stored form.
    pub fn format(&self) -> String {
        join_ints("gcra:", &[self.ms, self.num, self.den])
    }

    /// Returns `(tat − now) × limit`, at least 0. A state computed with
    /// another limit is first rounded up to a whole millisecond, which can
    /// only make the limiter stricter.
    fn debt(&self, now: i64, limit: i64) -> i128 {
        let (ms, num) = if self.den == limit {
            (self.ms, self.num)
        } else {
            (self.ms + (self.num > 0) as i64, 0)
        };
        ((ms as i128 - now as i128) * limit as i128 + num as i128).max(0)
    }

    fn from_debt(now: i64, limit: i64, debt: i128) -> Tat {
        let l = limit as i128;
        Tat {
            ms: to_i64(now as i128 + debt / l),
            num: (debt % l) as i64,
            den: limit,
        }
    }
}

/// Returns `prefix` then the integers separated by `:`, formatted with
/// `itoa` (the write path's hottest formatting).
fn join_ints(prefix: &str, vals: &[i64]) -> String {
    let mut s = String::with_capacity(prefix.len() + vals.len() * 20);
    s.push_str(prefix);
    let mut buf = itoa::Buffer::new();
    for (i, v) in vals.iter().enumerate() {
        if i > 0 {
            s.push(':');
        }
        s.push_str(buf.format(*v));
    }
    s
}

fn parse_nonneg(b: &[u8]) -> Option<i64> {
    if b.is_empty() || b.len() > 18 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if b.len() > 1 && b[0] == b'0' {
        return None;
    }
    std::str::from_utf8(b).ok()?.parse().ok()
}

/// The outcome of one GCRA step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcraStep {
    pub reply: Reply,
    /// The debt after the step, in 1/limit ms (`reset` before rounding).
    pub debt: i128,
    /// A refused request's exact wait in 1/limit ms (0 otherwise).
    pub wait: i128,
    /// The new state when something was consumed.
    pub new: Option<Tat>,
}

/// GCRA: spacing `period/limit`, tolerance `burst × spacing`. A fresh key
/// lets `burst` requests through at once, then one every spacing.
pub fn gcra(rule: Rule, tat: Option<Tat>, now: i64, cost: i64) -> GcraStep {
    let l = rule.limit as i128;
    let p = rule.period_ms as i128;
    let cap = rule.burst as i128 * p;
    let debt = tat.map_or(0, |t| t.debt(now, rule.limit));
    let possible = cost <= rule.burst;
    let want = if possible { cost as i128 * p } else { 0 };
    let allowed = possible && debt + want <= cap;
    let after = if allowed { debt + want } else { debt };
    let wait = if allowed || !possible {
        0
    } else {
        debt + want - cap
    };
    let reply = Reply {
        allowed,
        limit: rule.limit,
        remaining: to_i64(((cap - after) / p).max(0)),
        retry_ms: if allowed || !possible {
            -1
        } else {
            to_i64(ceil_div(wait, l))
        },
        reset_ms: to_i64(ceil_div(after, l)),
    };
    let new = (allowed && cost > 0).then(|| Tat::from_debt(now, rule.limit, after));
    GcraStep {
        reply,
        debt: after,
        wait,
        new,
    }
}

/// Returns redis-cell's `CL.THROTTLE` reply for a GCRA step computed with
/// `Rule { limit: count, period_ms: period_s × 1000, burst: max_burst + 1 }`:
/// `[limited, max_burst + 1, remaining, retry-after-s, reset-after-s]`.
///
/// redis-cell rounds a duration up to the next second only when its
/// millisecond part is non-zero, so a duration is first cut to whole
/// milliseconds and then rounded up to seconds.
pub fn throttle_reply(rule: Rule, step: &GcraStep) -> [i64; 5] {
    let l = rule.limit as i128;
    let secs = |units: i128| to_i64(ceil_div(units / l, 1000));
    let r = &step.reply;
    let retry = if r.retry_ms < 0 { -1 } else { secs(step.wait) };
    [
        (!r.allowed) as i64,
        rule.burst,
        r.remaining,
        retry,
        secs(step.debt),
    ]
}

/// One rule of a RATE.MULTI: its rule and the index of its key among the
/// distinct keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MultiRule {
    pub rule: Rule,
    pub key: usize,
}

/// The outcome of RATE.MULTI: the reply of the tightest rule and the new
/// state of each distinct key (None: not written).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiOutcome {
    pub reply: Reply,
    pub new: Vec<Option<Tat>>,
}

/// Checks every rule against its key's state (keys shared by several rules
/// see the earlier rules' consumption) and consumes only when all allow.
///
/// The reply is the tightest rule's: when refused, the refused rule with
/// the longest wait (a rule that can never pass counts as longest), so a
/// client that waits `retry-after-ms` passes every rule; when allowed, the
/// rule with the fewest remaining requests (the first on ties).
pub fn multi(rules: &[MultiRule], states: &[Option<Tat>], now: i64, cost: i64) -> MultiOutcome {
    let mut cur: Vec<Option<Tat>> = states.to_vec();
    let mut touched = vec![false; states.len()];
    let mut all = true;
    let mut best: Option<Reply> = None;
    for r in rules {
        let step = gcra(r.rule, cur[r.key], now, cost);
        let reply = step.reply;
        if let Some(t) = step.new {
            cur[r.key] = Some(t);
            touched[r.key] = true;
        }
        let tighter = match best {
            None => true,
            Some(b) => {
                if !reply.allowed && b.allowed {
                    true
                } else if reply.allowed != b.allowed {
                    false
                } else if !reply.allowed {
                    let key = |x: i64| if x < 0 { i64::MAX } else { x };
                    key(reply.retry_ms) > key(b.retry_ms)
                } else {
                    reply.remaining < b.remaining
                }
            }
        };
        if tighter {
            best = Some(reply);
        }
        all &= reply.allowed;
    }
    let reply = best.unwrap_or(Reply {
        allowed: true,
        limit: 0,
        remaining: 0,
        retry_ms: -1,
        reset_ms: 0,
    });
    let new = if all && cost > 0 {
        cur.iter()
            .zip(&touched)
            .map(|(t, &w)| if w { *t } else { None })
            .collect()
    } else {
        vec![None; states.len()]
    };
    MultiOutcome { reply, new }
}

// --------------------------------------------------------------- FIXED --

/// A fixed window's counter. Stored as `fixed:<window-start-ms>:<count>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    pub start: i64,
    pub count: i64,
}

impl Window {
    /// Parses the stored form; None when it is not a FIXED state.
    pub fn parse(v: &[u8]) -> Option<Window> {
        let rest = v.strip_prefix(b"fixed:")?;
        let mut parts = rest.split(|&c| c == b':');
        let start = parse_nonneg(parts.next()?)?;
        let count = parse_nonneg(parts.next()?)?;
        if parts.next().is_some() {
            return None;
        }
        Some(Window { start, count })
    }

    /// Returns the stored form.
    pub fn format(&self) -> String {
        join_ints("fixed:", &[self.start, self.count])
    }
}

/// FIXED: a counter per window, windows aligned to multiples of the period
/// (a window starts at `now − now mod period`).
pub fn fixed(
    limit: i64,
    period: i64,
    state: Option<Window>,
    now: i64,
    cost: i64,
) -> (Reply, Option<Window>) {
    let start = now - now.rem_euclid(period);
    let count = state.filter(|w| w.start == start).map_or(0, |w| w.count);
    let possible = cost <= limit;
    let allowed = possible && count + cost <= limit;
    let after = if allowed { count + cost } else { count };
    let end = start + period - now;
    let reply = Reply {
        allowed,
        limit,
        remaining: (limit - after).max(0),
        retry_ms: if allowed || !possible { -1 } else { end },
        reset_ms: if after > 0 { end } else { 0 },
    };
    let new = (allowed && cost > 0).then_some(Window {
        start,
        count: after,
    });
    (reply, new)
}

// ------------------------------------------------------------- SLIDING --

/// A sliding window's two counters: the current window's and the previous
/// one's. Stored as a Hash `algo sliding window <ms> count <n> prev <n>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sliding {
    pub window: i64,
    pub count: i64,
    pub prev: i64,
}

/// SLIDING: the weighted two-window estimate `prev × (period − elapsed) /
/// period + count` must stay within `limit` after the request.
pub fn sliding(
    limit: i64,
    period: i64,
    state: Option<Sliding>,
    now: i64,
    cost: i64,
) -> (Reply, Option<Sliding>) {
    let start = now - now.rem_euclid(period);
    let (count, prev) = match state {
        Some(s) if s.window == start => (s.count, s.prev),
        Some(s) if s.window == start - period => (0, s.count),
        _ => (0, 0),
    };
    let (l, p, c, pv, k) = (
        limit as i128,
        period as i128,
        count as i128,
        prev as i128,
        cost as i128,
    );
    let e = (now - start) as i128;
    let weighted = pv * (p - e); // prev's share, in 1/period requests
    let possible = k <= l;
    let allowed = possible && l - c - k >= 0 && weighted <= (l - c - k) * p;
    let after = if allowed { c + k } else { c };
    let retry_ms = if allowed || !possible {
        -1
    } else if l - c - k >= 0 {
        // Within this window, once prev's weight has shrunk enough.
        let reach = p - (l - c - k) * p / pv;
        to_i64(reach - e)
    } else {
        // In the next window, where this window's count becomes prev.
        let reach = p - (l - k) * p / c;
        to_i64(p - e + reach)
    };
    let remaining = (l - after - ceil_div(weighted, p)).max(0);
    let reset = if after > 0 {
        2 * p - e
    } else if pv > 0 {
        p - e
    } else {
        0
    };
    let reply = Reply {
        allowed,
        limit,
        remaining: to_i64(remaining),
        retry_ms,
        reset_ms: to_i64(reset),
    };
    let new = (allowed && cost > 0).then_some(Sliding {
        window: start,
        count: to_i64(after),
        prev,
    });
    (reply, new)
}

// ----------------------------------------------------------------- LOG --

/// What LOG needs to know about its Sorted Set of request times.
pub trait Log {
    /// Returns how many entries have a time after `cutoff`.
    fn count_after(&self, cutoff: i64) -> i64;
    /// Returns the time of the `n`-th (0-based) oldest entry after `cutoff`.
    fn nth_after(&self, cutoff: i64, n: i64) -> Option<i64>;
    /// Returns the newest entry's time.
    fn newest(&self) -> Option<i64>;
}

/// A log held in memory, for tests.
impl Log for Vec<i64> {
    fn count_after(&self, cutoff: i64) -> i64 {
        self.iter().filter(|&&t| t > cutoff).count() as i64
    }
    fn nth_after(&self, cutoff: i64, n: i64) -> Option<i64> {
        let mut v: Vec<i64> = self.iter().copied().filter(|&t| t > cutoff).collect();
        v.sort_unstable();
        v.get(usize::try_from(n).ok()?).copied()
    }
    fn newest(&self) -> Option<i64> {
        self.iter().copied().max()
    }
}

/// LOG: an exact sliding log. A request passes when the entries of the
/// last `period` (times after `now − period`) plus its cost stay within
/// `limit`; it then adds `cost` entries at `now`. Returns the reply and
/// whether entries are to be added.
pub fn log(limit: i64, period: i64, log: &impl Log, now: i64, cost: i64) -> (Reply, bool) {
    let cutoff = now - period;
    let count = log.count_after(cutoff);
    let possible = cost <= limit;
    let allowed = possible && count + cost <= limit;
    let after = if allowed { count + cost } else { count };
    let retry_ms = if allowed || !possible {
        -1
    } else {
        // The (count + cost − limit)-th oldest entry must leave the window.
        let t = log
            .nth_after(cutoff, count + cost - limit - 1)
            .unwrap_or(now);
        (t + period - now).max(1)
    };
    let newest = match (log.newest(), allowed && cost > 0) {
        (Some(t), true) => Some(t.max(now)),
        (None, true) => Some(now),
        (t, false) => t,
    };
    let reset_ms = match newest {
        Some(t) if after > 0 => (t + period - now).max(0),
        _ => 0,
    };
    let reply = Reply {
        allowed,
        limit,
        remaining: (limit - after).max(0),
        retry_ms,
        reset_ms,
    };
    (reply, allowed && cost > 0)
}

// -------------------------------------------------------------- BUCKET --

/// A token bucket: whole `tokens`, a `carry` of `1/period` tokens, and the
/// time `ts` they were counted at. Stored as a Hash `algo bucket tokens <n>
/// carry <n> ts <ms>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    pub tokens: i64,
    pub carry: i64,
    pub ts: i64,
}

/// BUCKET: a bucket of `burst` tokens refilling `limit` tokens per period
/// (continuously, exactly); a request takes `cost` tokens.
pub fn bucket(rule: Rule, state: Option<Bucket>, now: i64, cost: i64) -> (Reply, Option<Bucket>) {
    let (l, p, b) = (
        rule.limit as i128,
        rule.period_ms as i128,
        rule.burst as i128,
    );
    let (mut tokens, mut carry, mut ts) = match state {
        None => (b, 0i128, now),
        Some(s) => (s.tokens as i128, (s.carry as i128).min(p - 1), s.ts),
    };
    if tokens >= b {
        tokens = b;
        carry = 0;
        ts = ts.max(now);
    } else if now > ts {
        let need = (b - tokens) * p - carry; // units to full
        let e = (now - ts) as i128;
        if e >= ceil_div(need, l) {
            tokens = b;
            carry = 0;
        } else {
            let total = carry + e * l;
            tokens += total / p;
            carry = total % p;
        }
        ts = now;
    }
    let k = cost as i128;
    let possible = k <= b;
    let allowed = possible && k <= tokens;
    if allowed {
        tokens -= k;
    }
    let ahead = (ts - now) as i128; // > 0 only if the clock went back
    let retry_ms = if allowed || !possible {
        -1
    } else {
        to_i64(ahead + ceil_div((k - tokens) * p - carry, l))
    };
    let reset = if tokens >= b {
        0
    } else {
        ahead + ceil_div((b - tokens) * p - carry, l)
    };
    let reply = Reply {
        allowed,
        limit: rule.limit,
        remaining: to_i64(tokens),
        retry_ms,
        reset_ms: to_i64(reset),
    };
    let new = (allowed && cost > 0).then_some(Bucket {
        tokens: to_i64(tokens),
        carry: to_i64(carry),
        ts,
    });
    (reply, new)
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    const T0: i64 = 1_764_700_000_000;

    fn rule(limit: i64, period_ms: i64, burst: i64) -> Rule {
        Rule {
            limit,
            period_ms,
            burst,
        }
    }

    /// Runs GCRA requests of cost 1 at `times`, returning the replies.
    fn run_gcra(r: Rule, times: &[i64]) -> Vec<[i64; 5]> {
        let mut tat = None;
        times
            .iter()
            .map(|&t| {
                let s = gcra(r, tat, t, 1);
                if s.new.is_some() {
                    tat = s.new;
                }
                s.reply.fields()
            })
            .collect()
    }

    #[test]
    fn gcra_lets_a_burst_through_then_spaces_requests() {
        let r = rule(10, 1000, 10);
        let out = run_gcra(r, &[T0; 11]);
        for (i, f) in out.iter().take(10).enumerate() {
            assert_eq!(f, &[1, 10, 9 - i as i64, -1, 100 * (i as i64 + 1)]);
        }
        assert_eq!(out[10], [0, 10, 0, 100, 1000], "the 11th waits one spacing");
        let mut tat = None;
        for _ in 0..10 {
            tat = gcra(r, tat, T0, 1).new;
        }
        assert!(!gcra(r, tat, T0 + 99, 1).reply.allowed);
        assert_eq!(
            gcra(r, tat, T0 + 100, 1).reply.fields(),
            [1, 10, 0, -1, 1000]
        );
    }

    #[test]
    fn gcra_burst_of_one_spaces_from_each_request() {
        // 3 per second, one at a time: spacing 333⅓ ms, kept exact. With no
        // tolerance a late request restarts the schedule from itself.
        let r = rule(3, 1000, 1);
        let out = run_gcra(r, &[T0, T0 + 333, T0 + 334, T0 + 667, T0 + 668]);
        assert_eq!(out[0], [1, 3, 0, -1, 334]);
        assert_eq!(
            out[1],
            [0, 3, 0, 1, 1],
            "333 ms is ⅓ ms early: retry rounds up to 1"
        );
        assert_eq!(out[2][0], 1);
        assert_eq!(out[3], [0, 3, 0, 1, 1], "the next slot is 334 + 333⅓");
        assert_eq!(out[4][0], 1);
    }

    #[test]
    fn gcra_is_exact_at_100k_per_second() {
        let r = rule(100_000, 1000, 100_000);
        let mut tat = None;
        for _ in 0..100_000 {
            let s = gcra(r, tat, T0, 1);
            assert!(s.reply.allowed);
            tat = s.new;
        }
        let denied = gcra(r, tat, T0, 1).reply;
        assert_eq!(
            denied.fields(),
            [0, 100_000, 0, 1, 1000],
            "a 10 µs wait rounds up to 1 ms"
        );
        // One millisecond later exactly 100 more pass.
        let mut n = 0;
        loop {
            let s = gcra(r, tat, T0 + 1, 1);
            if !s.reply.allowed {
                break;
            }
            tat = s.new;
            n += 1;
        }
        assert_eq!(n, 100);
    }

    #[test]
    fn gcra_is_exact_over_a_day() {
        // 7 per day: spacing 12,342,857.142857… ms.
        let day = 86_400_000;
        let r = rule(7, day, 1);
        let first = gcra(r, None, T0, 1);
        let second = gcra(r, first.new, T0, 1).reply;
        assert_eq!(second.retry_ms, 12_342_858, "ceil(86400000/7)");
        // Hammered every second for a week with a burst of 2: 2 + 7×7 pass,
        // no more, no less (the fractions of a millisecond add up exactly).
        let r = rule(7, day, 2);
        let mut tat = None;
        let mut n = 0;
        let mut t = T0;
        while t <= T0 + 7 * day {
            let s = gcra(r, tat, t, 1);
            if s.reply.allowed {
                n += 1;
                tat = s.new;
            }
            t += 1000;
        }
        assert_eq!(n, 2 + 49);
    }

    #[test]
    fn gcra_admits_exactly_burst_plus_rate_under_constant_demand() {
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..200 {
            // At most one slot per millisecond (limit ≤ period), so that
            // demand on every millisecond can use every slot. A burst of 1
            // has no tolerance: a request arriving on a later millisecond
            // than its slot restarts the schedule, so the exact count holds
            // from a burst of 2.
            let limit = rng.gen_range(1..50);
            let period = rng.gen_range(limit..400);
            let burst = rng.gen_range(2..20);
            let r = rule(limit, period, burst);
            let m = rng.gen_range(0..2000);
            let mut tat = None;
            let mut n = 0i64;
            for t in 0..=m {
                loop {
                    let s = gcra(r, tat, T0 + t, 1);
                    if !s.reply.allowed {
                        break;
                    }
                    tat = s.new;
                    n += 1;
                }
            }
            assert_eq!(n, burst + m * limit / period, "{r:?} over {m} ms");
        }
    }

    #[test]
    fn cost_and_refusal_consume_nothing() {
        let r = rule(5, 1000, 5);
        let s = gcra(r, None, T0, 3);
        assert_eq!(s.reply.fields(), [1, 5, 2, -1, 600]);
        let refused = gcra(r, s.new, T0, 3);
        assert_eq!(refused.reply.fields(), [0, 5, 2, 200, 600]);
        assert_eq!(refused.new, None);
        let never = gcra(r, s.new, T0, 6);
        assert_eq!(
            never.reply.fields(),
            [0, 5, 2, -1, 600],
            "more than the burst never passes"
        );
        let peek = gcra(r, s.new, T0, 0);
        assert_eq!(peek.reply.fields(), [1, 5, 2, -1, 600]);
        assert_eq!(peek.new, None);
    }

    #[test]
    fn tat_round_trips_and_rejects_garbage() {
        let t = Tat {
            ms: T0,
            num: 2,
            den: 3,
        };
        assert_eq!(Tat::parse(t.format().as_bytes()), Some(t));
        for bad in [
            &b"gcra:1:3:3"[..],
            b"gcra:1:0:0",
            b"gcra:1:2",
            b"gcra:-1:0:1",
            b"123",
            b"fixed:1:2",
            b"gcra:01:0:1",
        ] {
            assert_eq!(Tat::parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        // A state written with another limit is rounded up to a whole ms.
        assert_eq!(t.debt(T0, 5), 5);
    }

    #[test]
    fn throttle_matches_redis_cell_documented_reply() {
        // CL.THROTTLE user123 15 30 60 on a fresh key → 0 16 15 -1 2
        let r = rule(30, 60_000, 16);
        let s = gcra(r, None, T0, 1);
        assert_eq!(throttle_reply(r, &s), [0, 16, 15, -1, 2]);
    }

    #[test]
    fn throttle_replays_redis_cell_test_table() {
        // redis-cell's own table: max_burst 4, 1 per second.
        let r = rule(1, 1000, 5);
        let cases: [(i64, i64, [i64; 5]); 15] = [
            (0, 6, [1, 5, 5, -1, 0]),
            (0, 1, [0, 5, 4, -1, 1]),
            (0, 1, [0, 5, 3, -1, 2]),
            (0, 1, [0, 5, 2, -1, 3]),
            (0, 1, [0, 5, 1, -1, 4]),
            (0, 1, [0, 5, 0, -1, 5]),
            (0, 1, [1, 5, 0, 1, 5]),
            (3000, 1, [0, 5, 2, -1, 3]),
            (3100, 1, [0, 5, 1, -1, 4]),
            (4000, 1, [0, 5, 1, -1, 4]),
            (8000, 1, [0, 5, 4, -1, 1]),
            (9500, 1, [0, 5, 4, -1, 1]),
            (9500, 0, [0, 5, 4, -1, 1]),
            (9500, 2, [0, 5, 2, -1, 3]),
            (9500, 5, [1, 5, 2, 3, 3]),
        ];
        let mut tat = None;
        for (i, (at, qty, want)) in cases.iter().enumerate() {
            let s = gcra(r, tat, T0 + at, *qty);
            if s.new.is_some() {
                tat = s.new;
            }
            assert_eq!(throttle_reply(r, &s), *want, "case {i}");
        }
    }

    #[test]
    fn multi_consumes_only_when_every_rule_allows() {
        let per_sec = MultiRule {
            rule: rule(2, 1000, 2),
            key: 0,
        };
        let per_min = MultiRule {
            rule: rule(3, 60_000, 3),
            key: 1,
        };
        let rules = [per_sec, per_min];
        let mut st = vec![None, None];
        for _ in 0..2 {
            let o = multi(&rules, &st, T0, 1);
            assert!(o.reply.allowed);
            st = o.new.iter().zip(&st).map(|(n, o)| n.or(*o)).collect();
        }
        let o = multi(&rules, &st, T0, 1);
        assert_eq!(
            o.reply.fields(),
            [0, 2, 0, 500, 1000],
            "the per-second rule is the tightest"
        );
        assert_eq!(
            o.new,
            vec![None, None],
            "the per-minute rule consumed nothing"
        );
        let o = multi(&rules, &st, T0 + 500, 1);
        assert!(o.reply.allowed);
        assert_eq!(
            (o.reply.limit, o.reply.remaining),
            (2, 0),
            "both have none left: the first wins the tie"
        );
        st = o.new.iter().zip(&st).map(|(n, o)| n.or(*o)).collect();
        let o = multi(&rules, &st, T0 + 1000, 1);
        assert_eq!(
            o.reply.fields(),
            [0, 3, 0, 19_000, 59_000],
            "the per-minute rule now waits longest"
        );
    }

    #[test]
    fn multi_sees_earlier_rules_on_the_same_key() {
        let rules = [
            MultiRule {
                rule: rule(1, 1000, 1),
                key: 0,
            },
            MultiRule {
                rule: rule(1, 1000, 1),
                key: 0,
            },
        ];
        let o = multi(&rules, &[None], T0, 1);
        assert!(!o.reply.allowed);
        assert_eq!(o.new, vec![None]);
    }

    #[test]
    fn fixed_counts_per_aligned_window() {
        let mut st = None;
        let mut at = |t: i64, c: i64| {
            let (r, n) = fixed(3, 1000, st, t, c);
            if n.is_some() {
                st = n;
            }
            r.fields()
        };
        assert_eq!(at(5_000_900, 1), [1, 3, 2, -1, 100]);
        assert_eq!(at(5_000_950, 2), [1, 3, 0, -1, 50]);
        assert_eq!(
            at(5_000_999, 1),
            [0, 3, 0, 1, 1],
            "the window ends at the next multiple"
        );
        assert_eq!(
            at(5_001_000, 3),
            [1, 3, 0, -1, 1000],
            "a new window starts full"
        );
        assert_eq!(
            at(5_001_000, 4),
            [0, 3, 0, -1, 1000],
            "more than the limit never passes"
        );
        assert_eq!(
            Window::parse(b"fixed:5001000:3"),
            Some(Window {
                start: 5_001_000,
                count: 3
            })
        );
        assert_eq!(Window::parse(b"fixed:1"), None);
    }

    #[test]
    fn sliding_weighs_the_previous_window() {
        // 10 per second; the previous window was full; 25% into this one
        // the estimate is 10 × 0.75 + count.
        let st = Some(Sliding {
            window: 4_000_000,
            count: 10,
            prev: 0,
        });
        let (r1, st1) = sliding(10, 1000, st, 4_001_250, 1);
        assert_eq!(r1.fields(), [1, 10, 1, -1, 1750]);
        let (r2, st2) = sliding(10, 1000, st1, 4_001_250, 1);
        assert_eq!(r2.fields(), [1, 10, 0, -1, 1750]);
        let (r3, none) = sliding(10, 1000, st2, 4_001_250, 1);
        assert_eq!(
            r3.fields(),
            [0, 10, 0, 50, 1750],
            "at 300 ms 10×0.7 + 3 = 10"
        );
        assert_eq!(none, None);
        let (r4, _) = sliding(10, 1000, st2, 4_001_300, 1);
        assert!(r4.allowed);
        // Over the limit in this window alone: wait for the next one.
        let full = Some(Sliding {
            window: 4_001_000,
            count: 10,
            prev: 0,
        });
        let (r5, _) = sliding(10, 1000, full, 4_001_400, 1);
        assert_eq!(
            r5.fields(),
            [0, 10, 0, 700, 1600],
            "at 100 ms into the next: 10×0.9 + 1"
        );
    }

    #[test]
    fn log_is_exact() {
        let mut entries: Vec<i64> = Vec::new();
        for t in [0, 100, 200] {
            let (r, add) = log(3, 1000, &entries, T0 + t, 1);
            assert!(r.allowed && add);
            entries.push(T0 + t);
        }
        let (r, add) = log(3, 1000, &entries, T0 + 999, 1);
        assert_eq!((r.fields(), add), ([0, 3, 0, 1, 201], false));
        let (r, _) = log(3, 1000, &entries, T0 + 999, 2);
        assert_eq!(r.retry_ms, 101, "two must leave: the second oldest at 100");
        let (r, _) = log(3, 1000, &entries, T0 + 1000, 1);
        assert_eq!(r.fields(), [1, 3, 0, -1, 1000]);
    }

    #[test]
    fn log_matches_brute_force() {
        let mut rng = StdRng::seed_from_u64(11);
        for _ in 0..50 {
            let limit = rng.gen_range(1..8);
            let period = rng.gen_range(1..200);
            let mut entries: Vec<i64> = Vec::new();
            let mut t = T0;
            for _ in 0..300 {
                t += rng.gen_range(0..40);
                let cost = rng.gen_range(0..4);
                let inside = entries
                    .iter()
                    .filter(|&&e| e > t - period && e <= t)
                    .count() as i64;
                let (r, add) = log(limit, period, &entries, t, cost);
                assert_eq!(r.allowed, cost <= limit && inside + cost <= limit);
                if add {
                    entries.extend(std::iter::repeat_n(t, cost as usize));
                }
                if !r.allowed && r.retry_ms > 0 {
                    let (later, _) = log(limit, period, &entries, t + r.retry_ms, cost);
                    assert!(later.allowed, "waiting retry-after passes");
                    let (early, _) = log(limit, period, &entries, t + r.retry_ms - 1, cost);
                    assert!(!early.allowed, "retry-after is the earliest time");
                }
            }
        }
    }

    #[test]
    fn bucket_refills_continuously() {
        let r = rule(1, 1000, 5);
        let mut st = None;
        for i in 0..5 {
            let (rep, n) = bucket(r, st, T0, 1);
            assert_eq!(rep.fields(), [1, 1, 4 - i, -1, 1000 * (i + 1)]);
            st = n;
        }
        let (rep, n) = bucket(r, st, T0, 1);
        assert_eq!((rep.fields(), n), ([0, 1, 0, 1000, 5000], None));
        assert_eq!(bucket(r, st, T0 + 500, 1).0.retry_ms, 500);
        assert!(bucket(r, st, T0 + 1000, 1).0.allowed);
        assert_eq!(
            bucket(r, st, T0 + 1000, 2).0.fields(),
            [0, 1, 1, 1000, 4000]
        );
    }

    #[test]
    fn bucket_and_gcra_agree_on_random_streams() {
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..200 {
            let r = rule(
                rng.gen_range(1..30),
                rng.gen_range(1..500),
                rng.gen_range(1..10),
            );
            let (mut tat, mut b) = (None, None);
            let mut t = T0;
            for _ in 0..200 {
                t += rng.gen_range(0..60);
                let cost = rng.gen_range(0..4);
                let g = gcra(r, tat, t, cost);
                let (k, nb) = bucket(r, b, t, cost);
                assert_eq!(g.reply, k, "{r:?} at {t} cost {cost}");
                if g.new.is_some() {
                    tat = g.new;
                }
                if nb.is_some() {
                    b = nb;
                }
            }
        }
    }

    #[test]
    fn retry_after_is_never_early_and_never_late() {
        let mut rng = StdRng::seed_from_u64(5);
        for _ in 0..300 {
            let r = rule(
                rng.gen_range(1..40),
                rng.gen_range(1..3000),
                rng.gen_range(1..8),
            );
            let mut tat = None;
            let mut sl = None;
            let mut t = T0;
            for _ in 0..100 {
                t += rng.gen_range(0..50);
                let cost = rng.gen_range(1..4);
                let g = gcra(r, tat, t, cost);
                if let Some(n) = g.new {
                    tat = Some(n);
                } else if g.reply.retry_ms > 0 {
                    assert!(gcra(r, tat, t + g.reply.retry_ms, cost).reply.allowed);
                    assert!(!gcra(r, tat, t + g.reply.retry_ms - 1, cost).reply.allowed);
                }
                let (s, n) = sliding(r.limit, r.period_ms, sl, t, cost);
                if n.is_some() {
                    sl = n;
                } else if s.retry_ms > 0 {
                    assert!(
                        sliding(r.limit, r.period_ms, sl, t + s.retry_ms, cost)
                            .0
                            .allowed
                    );
                    assert!(
                        !sliding(r.limit, r.period_ms, sl, t + s.retry_ms - 1, cost)
                            .0
                            .allowed
                    );
                }
            }
        }
    }

    #[test]
    fn rules_too_large_for_exact_integers_are_refused() {
        assert!(rule(1, 86_400_000, 1_000_000).fits(Algo::Gcra));
        assert!(!rule(1, 1_000_000_000_000, 10_000).fits(Algo::Gcra));
        assert!(!rule(10_000, 1_000_000_000_000, 1).fits(Algo::Sliding));
        assert!(rule(10_000, 1_000_000_000_000, 1).fits(Algo::Fixed));
    }
}
