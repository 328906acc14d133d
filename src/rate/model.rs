//! The five rate-limit algorithms as pure functions of their stored state,
//! the request and the time. Nothing here reads a clock or touches Redis:
//! the handlers read the state, call a function, and write back what it
//! returns.
//!
//! Time is integer **microseconds** since the Unix epoch (`NOW unix-ms` is
//! taken as `ms × 1000`), and every quantity that would be fractional is
//! kept as an exact integer ratio, so a rate of 100,000 requests per
//! second, 3 per second or 7 per day is exact, not rounded to a grid:
//!
//! - GCRA keeps its theoretical arrival time as `ms + num/den` ms, written
//!   with `den = 1000 × limit`; the "debt" `(tat − now) × limit` is an
//!   integer in units of `1/limit` µs, one request adds `period-µs` to it
//!   and it drains by `limit` per microsecond.
//! - BUCKET keeps whole tokens plus a `carry` in units of `1/period-µs`
//!   token; it refills `limit` such units per microsecond.
//! - SLIDING compares `prev × (period − elapsed) ≤ (limit − count − cost) ×
//!   period` in microseconds, never a float.
//! - LOG keeps one entry per request at its microsecond.
//!
//! The products are computed in `i128` here. The Lua twins, whose numbers
//! are doubles, reach the same integers with an exact multiply-divide
//! (`mdm`) wherever a product could pass 2^53; every value they keep stays
//! below 2^53 because `NOW` is at most [`MAX_NOW_MS`] and a full burst
//! refills within [`MAX_REFILL_MS`].
//!
//! Waiting times are rounded up to the next millisecond ("never rounded
//! down": a client that waits `retry-after-ms` passes), and a request that
//! is refused changes nothing.

/// Microseconds per millisecond.
pub const US: i64 = 1000;
/// The largest limit, burst or cost.
pub const MAX_COUNT: i64 = 1_000_000_000_000;
/// The longest period (ms), about 31 years.
pub const MAX_PERIOD_MS: i64 = 1_000_000_000_000;
/// The latest `NOW` (unix ms, 2112-08-30): with a refill of at most
/// [`MAX_REFILL_MS`] every time in microseconds stays below 2^53.
pub const MAX_NOW_MS: i64 = 4_500_000_000_000;
/// The longest time a full burst takes to refill (`burst × period /
/// limit`, ms, about 142 years) for GCRA, BUCKET, RATE.MULTI and
/// RATE.THROTTLE.
pub const MAX_REFILL_MS: i64 = 4_500_000_000_000;
/// The latest instant a stored state may name (unix ms): every stored
/// time in microseconds is below 2^53.
pub const MAX_STORED_MS: i64 = 9_000_000_000_000;
/// [`MAX_STORED_MS`] in microseconds.
pub const MAX_STORED_US: i64 = MAX_STORED_MS * US;

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
    pub fn parse(s: &[u8]) -> Option<Algo> {
        [
            Algo::Gcra,
            Algo::Fixed,
            Algo::Sliding,
            Algo::Log,
            Algo::Bucket,
        ]
        .into_iter()
        .find(|a| a.name().as_bytes().eq_ignore_ascii_case(s))
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
    /// Returns the period in microseconds.
    pub fn period_us(&self) -> i128 {
        self.period_ms as i128 * US as i128
    }

    /// Returns true when the rule's values stay exact (see
    /// [`MAX_REFILL_MS`]) for `algo`: a full burst of GCRA or BUCKET must
    /// refill within about 142 years. The window algorithms take any rule.
    pub fn fits(&self, algo: Algo) -> bool {
        match algo {
            Algo::Gcra | Algo::Bucket => {
                (self.burst as i128) * (self.period_ms as i128)
                    <= MAX_REFILL_MS as i128 * self.limit as i128
            }
            Algo::Fixed | Algo::Sliding | Algo::Log => true,
        }
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

/// Returns `floor(a / b)` for `b > 0`. The values nearly always fit in 64
/// bits, where a division is one instruction instead of a call into the
/// 128-bit division routine (about 60 instructions): this runs several
/// times per request.
#[inline(always)]
fn floor_div(a: i128, b: i128) -> i128 {
    match (i64::try_from(a), i64::try_from(b)) {
        (Ok(x), Ok(y)) => x.div_euclid(y) as i128,
        _ => a.div_euclid(b),
    }
}

/// Returns `a mod b` in `[0, b)` for `b > 0`.
#[inline(always)]
fn floor_mod(a: i128, b: i128) -> i128 {
    a - floor_div(a, b) * b
}

/// Returns `ceil(a / b)` for `b > 0` (any sign of `a`).
#[inline(always)]
fn ceil_div(a: i128, b: i128) -> i128 {
    -floor_div(-a, b)
}

/// Returns microseconds rounded up to whole milliseconds.
fn ms_up(us: i128) -> i64 {
    to_i64(ceil_div(us, US as i128))
}

fn to_i64(v: i128) -> i64 {
    v.clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// Parses a stored non-negative integer the way the module writes it:
/// digits only, no sign, no leading zero, at most 18 digits. Hand-rolled
/// because it runs on every request (the standard parser costs several
/// times more).
pub fn parse_nonneg(b: &[u8]) -> Option<i64> {
    if b.is_empty() || b.len() > 18 || (b.len() > 1 && b[0] == b'0') {
        return None;
    }
    let mut n: i64 = 0;
    for &c in b {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        n = n * 10 + d as i64;
    }
    Some(n)
}

/// Splits `a:b:c…` after `prefix` into exactly `N` non-negative integers
/// (each as [`parse_nonneg`] reads it). Each field's digits are read in
/// one loop that stops at the first non-digit: this runs on every request
/// (about 400 instructions for a GCRA state; measured against a
/// two-pass split and a byte-state machine, which take 550 and 780).
fn parse_fields<const N: usize>(v: &[u8], prefix: &[u8]) -> Option<[i64; N]> {
    let rest = v.strip_prefix(prefix)?;
    let mut out = [0i64; N];
    let mut i = 0;
    for (f, slot) in out.iter_mut().enumerate() {
        let start = i;
        let mut n: i64 = 0;
        while i < rest.len() {
            let d = rest[i].wrapping_sub(b'0');
            if d > 9 {
                break;
            }
            n = n.wrapping_mul(10).wrapping_add(d as i64);
            i += 1;
        }
        let len = i - start;
        if len == 0 || len > 18 || (len > 1 && rest[start] == b'0') {
            return None;
        }
        *slot = n;
        // Fields are separated by ':' and the last one ends the value.
        if f + 1 < N {
            if rest.get(i) != Some(&b':') {
                return None;
            }
            i += 1;
        }
    }
    (i == rest.len()).then_some(out)
}

/// A small stack buffer for formatting stored values without allocating
/// (the longest state, `bucket:` and three integers, fits in 64 bytes).
pub struct Buf {
    bytes: [u8; 64],
    len: usize,
}

impl Buf {
    /// Returns `prefix` followed by the integers separated by `:`.
    #[inline]
    fn of(prefix: &[u8], vals: &[i64]) -> Buf {
        let mut b = Buf {
            bytes: [0; 64],
            len: prefix.len(),
        };
        b.bytes[..prefix.len()].copy_from_slice(prefix);
        let mut f = itoa::Buffer::new();
        for (i, v) in vals.iter().enumerate() {
            if i > 0 {
                b.bytes[b.len] = b':';
                b.len += 1;
            }
            let t = f.format(*v).as_bytes();
            b.bytes[b.len..b.len + t.len()].copy_from_slice(t);
            b.len += t.len();
        }
        b
    }

    /// Returns the formatted bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// What a String limiter key holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Text {
    Gcra(Tat),
    Fixed(Window),
    Sliding(Sliding),
    Bucket(Bucket),
    /// A value that starts like a limiter (`gcra:`, `fixed:`, `sliding:`,
    /// `bucket:`) but is not one: hand-edited or damaged.
    Corrupt,
    /// Any other String: not a limiter at all.
    Foreign,
}

impl Text {
    /// Returns the algorithm of a limiter state.
    pub fn algo(&self) -> Option<Algo> {
        match self {
            Text::Gcra(_) => Some(Algo::Gcra),
            Text::Fixed(_) => Some(Algo::Fixed),
            Text::Sliding(_) => Some(Algo::Sliding),
            Text::Bucket(_) => Some(Algo::Bucket),
            Text::Corrupt | Text::Foreign => None,
        }
    }
}

/// Classifies a String value.
pub fn parse_text(v: &[u8]) -> Text {
    let parsed = match v.first() {
        Some(b'g') if v.starts_with(b"gcra:") => Tat::parse(v).map(Text::Gcra),
        Some(b'f') if v.starts_with(b"fixed:") => Window::parse(v).map(Text::Fixed),
        Some(b's') if v.starts_with(b"sliding:") => Sliding::parse(v).map(Text::Sliding),
        Some(b'b') if v.starts_with(b"bucket:") => Bucket::parse(v).map(Text::Bucket),
        _ => return Text::Foreign,
    };
    parsed.unwrap_or(Text::Corrupt)
}

// ---------------------------------------------------------------- GCRA --

/// A GCRA theoretical arrival time, `ms + num/den` milliseconds. Written
/// with `den = 1000 × limit` (so `num/limit` microseconds); a state written
/// with another denominator (an older millisecond state has `den = limit`)
/// is read exactly when it can be and otherwise rounded up. Stored as
/// `gcra:<ms>:<num>:<den>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Tat {
    pub ms: i64,
    pub num: i64,
    pub den: i64,
}

impl Tat {
    /// Parses the stored form; None when it is not a valid GCRA state.
    pub fn parse(v: &[u8]) -> Option<Tat> {
        let [ms, num, den] = parse_fields::<3>(v, b"gcra:")?;
        let valid = ms <= MAX_STORED_MS && (1..=MAX_COUNT * US).contains(&den) && num < den;
        valid.then_some(Tat { ms, num, den })
    }

    /// Returns the stored form.
    pub fn format(&self) -> Buf {
        Buf::of(b"gcra:", &[self.ms, self.num, self.den])
    }

    /// Returns `(tat − now) × limit` in units of `1/limit` µs, at least 0.
    /// A fraction in another denominator than `1000 × limit` is rounded up
    /// to the next unit, which can only make the limiter stricter; an older
    /// millisecond state (`den = limit`) converts exactly.
    pub fn debt(&self, now_us: i64, limit: i64) -> i128 {
        let l = limit as i128;
        let (num, den) = (self.num as i128, self.den as i128);
        let frac = if den == US as i128 * l {
            num
        } else {
            ceil_div(num * US as i128 * l, den)
        };
        ((self.ms as i128 * US as i128 - now_us as i128) * l + frac).max(0)
    }

    /// Returns the arrival time `now + debt/limit` µs in the stored form.
    pub fn from_debt(now_us: i64, limit: i64, debt: i128) -> Tat {
        let l = limit as i128;
        let q = floor_div(debt, l);
        let t = now_us as i128 + q;
        let us = US as i128;
        let ms = floor_div(t, us);
        Tat {
            ms: to_i64(ms),
            num: to_i64((t - ms * us) * l + (debt - q * l)),
            den: to_i64(us * l),
        }
    }
}

/// The outcome of one GCRA step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GcraStep {
    pub reply: Reply,
    /// The debt after the step, in 1/limit µs.
    pub debt: i128,
    /// A refused request's exact wait in 1/limit µs (0 otherwise).
    pub wait: i128,
    /// The new state when something was consumed.
    pub new: Option<Tat>,
    limit: i64,
}

impl GcraStep {
    /// Returns the microseconds until the limiter is full again (the key's
    /// time to live), rounded up.
    pub fn reset_us(&self) -> i64 {
        to_i64(ceil_div(self.debt, self.limit as i128))
    }
}

/// GCRA: spacing `period/limit`, tolerance `burst × spacing`. A fresh key
/// lets `burst` requests through at once, then one every spacing.
pub fn gcra(rule: Rule, tat: Option<Tat>, now_us: i64, cost: i64) -> GcraStep {
    let l = rule.limit as i128;
    let p = rule.period_us();
    let cap = rule.burst as i128 * p;
    let debt = tat.map_or(0, |t| t.debt(now_us, rule.limit));
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
        remaining: to_i64(floor_div(cap - after, p).max(0)),
        retry_ms: if allowed || !possible {
            -1
        } else {
            ms_up(ceil_div(wait, l))
        },
        reset_ms: ms_up(ceil_div(after, l)),
    };
    let new = (allowed && cost > 0).then(|| Tat::from_debt(now_us, rule.limit, after));
    GcraStep {
        reply,
        debt: after,
        wait,
        new,
        limit: rule.limit,
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
    let ms_units = rule.limit as i128 * US as i128;
    let secs = |units: i128| to_i64(ceil_div(floor_div(units, ms_units), 1000));
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
/// state of each distinct key (None: not written) with its time to live.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MultiOutcome {
    pub reply: Reply,
    pub new: Vec<Option<(Tat, i64)>>,
}

/// Checks every rule against its key's state (keys shared by several rules
/// see the earlier rules' consumption) and consumes only when all allow.
///
/// The reply is the tightest rule's: when refused, the refused rule with
/// the longest wait (a rule that can never pass counts as longest), so a
/// client that waits `retry-after-ms` passes every rule; when allowed, the
/// rule with the fewest remaining requests (the first on ties).
pub fn multi(rules: &[MultiRule], states: &[Option<Tat>], now_us: i64, cost: i64) -> MultiOutcome {
    let mut cur: Vec<Option<Tat>> = states.to_vec();
    let mut ttl: Vec<Option<i64>> = vec![None; states.len()];
    let mut all = true;
    let mut best: Option<Reply> = None;
    for r in rules {
        let step = gcra(r.rule, cur[r.key], now_us, cost);
        let reply = step.reply;
        if let Some(t) = step.new {
            cur[r.key] = Some(t);
            ttl[r.key] = Some(step.reset_us());
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
        cur.iter().zip(&ttl).map(|(t, ttl)| t.zip(*ttl)).collect()
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
    /// Parses the stored form; None when it is not a valid FIXED state.
    pub fn parse(v: &[u8]) -> Option<Window> {
        let [start, count] = parse_fields::<2>(v, b"fixed:")?;
        (start <= MAX_STORED_MS && count <= MAX_COUNT).then_some(Window { start, count })
    }

    /// Returns the stored form.
    pub fn format(&self) -> Buf {
        Buf::of(b"fixed:", &[self.start, self.count])
    }
}

/// FIXED: a counter per window, windows aligned to multiples of the period
/// (a window starts at `now − now mod period`, in milliseconds). Returns
/// the reply, the new state and its time to live in µs.
pub fn fixed(
    limit: i64,
    period_ms: i64,
    state: Option<Window>,
    now_us: i64,
    cost: i64,
) -> (Reply, Option<(Window, i64)>) {
    let now_ms = now_us.div_euclid(US);
    let start = now_ms - now_ms.rem_euclid(period_ms);
    let count = state.filter(|w| w.start == start).map_or(0, |w| w.count);
    let possible = cost <= limit;
    let allowed = possible && count + cost <= limit;
    let after = if allowed { count + cost } else { count };
    let end_us = (start as i128 + period_ms as i128) * US as i128 - now_us as i128;
    let reply = Reply {
        allowed,
        limit,
        remaining: (limit - after).max(0),
        retry_ms: if allowed || !possible {
            -1
        } else {
            ms_up(end_us)
        },
        reset_ms: if after > 0 { ms_up(end_us) } else { 0 },
    };
    let new = (allowed && cost > 0).then_some((
        Window {
            start,
            count: after,
        },
        to_i64(end_us),
    ));
    (reply, new)
}

// ------------------------------------------------------------- SLIDING --

/// A sliding window's two counters: the current window's and the previous
/// one's. Stored as `sliding:<window-start-ms>:<count>:<prev>` (the
/// millisecond version stored a Hash `algo sliding window … count … prev
/// …` with the same values).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Sliding {
    pub window: i64,
    pub count: i64,
    pub prev: i64,
}

impl Sliding {
    /// Parses the stored form; None when it is not a valid SLIDING state.
    pub fn parse(v: &[u8]) -> Option<Sliding> {
        let [window, count, prev] = parse_fields::<3>(v, b"sliding:")?;
        (window <= MAX_STORED_MS && count <= MAX_COUNT && prev <= MAX_COUNT).then_some(Sliding {
            window,
            count,
            prev,
        })
    }

    /// Returns the stored form.
    pub fn format(&self) -> Buf {
        Buf::of(b"sliding:", &[self.window, self.count, self.prev])
    }
}

/// SLIDING: the weighted two-window estimate `prev × (period − elapsed) /
/// period + count` must stay within `limit` after the request. Returns the
/// reply and the new state; a written state expires at the end of the
/// window after its own (`window + 2 × period`), when it has nothing left
/// to count.
pub fn sliding(
    limit: i64,
    period_ms: i64,
    state: Option<Sliding>,
    now_us: i64,
    cost: i64,
) -> (Reply, Option<Sliding>) {
    let now_ms = now_us.div_euclid(US);
    let start = now_ms - now_ms.rem_euclid(period_ms);
    let (count, prev) = match state {
        Some(s) if s.window == start => (s.count, s.prev),
        Some(s) if s.window == start - period_ms => (0, s.count),
        _ => (0, 0),
    };
    let p = period_ms as i128 * US as i128;
    let (l, c, pv, k) = (limit as i128, count as i128, prev as i128, cost as i128);
    let e = now_us as i128 - start as i128 * US as i128; // elapsed µs
    let weighted = pv * (p - e); // prev's share, in 1/period requests
    let room = l - c - k;
    let possible = k <= l;
    let allowed = possible && room >= 0 && weighted <= room * p;
    let after = if allowed { c + k } else { c };
    let retry_us = if allowed || !possible {
        None
    } else if room >= 0 {
        // Within this window, once prev's weight has shrunk enough.
        Some(p - floor_div(room * p, pv) - e)
    } else {
        // In the next window, where this window's count becomes prev.
        Some(p - e + p - floor_div((l - k) * p, c))
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
        retry_ms: retry_us.map_or(-1, ms_up),
        reset_ms: ms_up(reset),
    };
    let new = (allowed && cost > 0).then_some(Sliding {
        window: start,
        count: to_i64(after),
        prev,
    });
    (reply, new)
}

// ----------------------------------------------------------------- LOG --

/// What LOG needs to know about its Sorted Set of request times (µs).
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

/// How a LOG's entries are written. Entries of this version are scored
/// by their microsecond (an integer, which a small Sorted Set keeps as an
/// integer: a fractional score would be re-parsed with `strtod` on every
/// comparison) and named `<µs, 16 digits>-<n>`. A LOG written by the
/// millisecond version (scores in ms, members `<ms>-<n>`) keeps working at
/// millisecond resolution, exactly as before, until it expires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogScale {
    Micros,
    Millis,
}

impl LogScale {
    /// Returns the scale a LOG's newest member was written at.
    pub fn of_member(m: &[u8]) -> LogScale {
        let micros = m.len() > 17 && m[16] == b'-' && m[..16].iter().all(u8::is_ascii_digit);
        if micros {
            LogScale::Micros
        } else {
            LogScale::Millis
        }
    }

    /// Returns microseconds per score unit.
    pub fn unit(self) -> i64 {
        match self {
            LogScale::Micros => 1,
            LogScale::Millis => US,
        }
    }

    /// Returns the instant the scale can express at or before `now_us`.
    pub fn truncate(self, now_us: i64) -> i64 {
        now_us - now_us.rem_euclid(self.unit())
    }

    /// Returns the score of the instant `us` (a multiple of the unit).
    pub fn score(self, us: i64) -> f64 {
        us.div_euclid(self.unit()) as f64
    }

    /// Returns the microsecond a score stands for, or None when it is not
    /// a score the module writes (not an integer, or out of range).
    pub fn time(self, score: f64) -> Option<i64> {
        let limit = match self {
            LogScale::Micros => MAX_STORED_US,
            LogScale::Millis => MAX_STORED_MS,
        };
        let valid = score.is_finite() && score.fract() == 0.0 && score.abs() <= limit as f64;
        valid.then(|| score as i64 * self.unit())
    }

    /// Writes the member `<time>-<n>` into `out`.
    pub fn member(self, us: i64, n: i64, out: &mut Vec<u8>) {
        out.clear();
        let mut f = itoa::Buffer::new();
        match self {
            LogScale::Micros => {
                let t = f.format(us);
                out.extend(std::iter::repeat_n(b'0', 16usize.saturating_sub(t.len())));
                out.extend_from_slice(t.as_bytes());
            }
            LogScale::Millis => out.extend_from_slice(f.format(us / US).as_bytes()),
        }
        out.push(b'-');
        out.extend_from_slice(f.format(n).as_bytes());
    }
}

/// LOG: an exact sliding log. A request passes when the entries of the
/// last `period` (times after `now − period`) plus its cost stay within
/// `limit`; it then adds `cost` entries at `now`. Returns the reply and
/// whether entries are to be added.
pub fn log(limit: i64, period_ms: i64, log: &impl Log, now_us: i64, cost: i64) -> (Reply, bool) {
    let p = period_ms * US;
    let cutoff = now_us - p;
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
            .unwrap_or(now_us);
        ms_up((t as i128 + p as i128 - now_us as i128).max(1))
    };
    let newest = match (log.newest(), allowed && cost > 0) {
        (Some(t), true) => Some(t.max(now_us)),
        (None, true) => Some(now_us),
        (t, false) => t,
    };
    let reset_ms = match newest {
        Some(t) if after > 0 => ms_up((t as i128 + p as i128 - now_us as i128).max(0)),
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

/// A token bucket: whole `tokens`, a `carry` of `1/period-µs` tokens, and
/// the time `ts` (µs) they were counted at. Stored as
/// `bucket:<tokens>:<carry>:<ts-µs>` (the millisecond version stored a
/// Hash `algo bucket tokens … carry … ts …`, see [`Bucket::from_ms`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bucket {
    pub tokens: i64,
    pub carry: i64,
    pub ts: i64,
}

impl Bucket {
    /// Parses the stored form; None when it is not a valid BUCKET state.
    pub fn parse(v: &[u8]) -> Option<Bucket> {
        let [tokens, carry, ts] = parse_fields::<3>(v, b"bucket:")?;
        (tokens <= MAX_COUNT && carry <= MAX_STORED_US && ts <= MAX_STORED_US).then_some(Bucket {
            tokens,
            carry,
            ts,
        })
    }

    /// Returns the stored form.
    pub fn format(&self) -> Buf {
        Buf::of(b"bucket:", &[self.tokens, self.carry, self.ts])
    }

    /// Returns the bucket an older, millisecond state stands for (`carry`
    /// in `1/period-ms` tokens, `ts` in ms): the same bucket, exactly.
    pub fn from_ms(tokens: i64, carry: i64, ts_ms: i64, period_ms: i64) -> Bucket {
        Bucket {
            tokens,
            // A carry of a whole token or more is cut to just under one
            // token by `bucket` anyway; cut first so that it cannot grow.
            carry: carry.min(period_ms) * US,
            ts: ts_ms * US,
        }
    }
}

/// The outcome of one BUCKET step: the reply, and the new state with its
/// time to live (µs) when something was consumed.
pub type BucketStep = (Reply, Option<(Bucket, i64)>);

/// BUCKET: a bucket of `burst` tokens refilling `limit` tokens per period
/// (continuously, exactly); a request takes `cost` tokens.
pub fn bucket(rule: Rule, state: Option<Bucket>, now_us: i64, cost: i64) -> BucketStep {
    let (l, p, b) = (rule.limit as i128, rule.period_us(), rule.burst as i128);
    let now = now_us as i128;
    let (mut tokens, mut carry, mut ts) = match state {
        None => (b, 0i128, now),
        Some(s) => (s.tokens as i128, (s.carry as i128).min(p - 1), s.ts as i128),
    };
    if tokens >= b {
        tokens = b;
        carry = 0;
        ts = ts.max(now);
    } else if now > ts {
        let need = (b - tokens) * p - carry; // units to full
        let e = now - ts;
        if e >= ceil_div(need, l) {
            tokens = b;
            carry = 0;
        } else {
            let total = carry + e * l;
            tokens += floor_div(total, p);
            carry = floor_mod(total, p);
        }
        ts = now;
    }
    let k = cost as i128;
    let possible = k <= b;
    let allowed = possible && k <= tokens;
    if allowed {
        tokens -= k;
    }
    let ahead = ts - now; // > 0 only if the clock went back
    let retry_ms = if allowed || !possible {
        -1
    } else {
        ms_up(ahead + ceil_div((k - tokens) * p - carry, l))
    };
    let reset_us = if tokens >= b {
        0
    } else {
        ahead + ceil_div((b - tokens) * p - carry, l)
    };
    let reply = Reply {
        allowed,
        limit: rule.limit,
        remaining: to_i64(tokens),
        retry_ms,
        reset_ms: ms_up(reset_us),
    };
    let new = (allowed && cost > 0).then_some((
        Bucket {
            tokens: to_i64(tokens),
            carry: to_i64(carry),
            ts: to_i64(ts),
        },
        to_i64(reset_us),
    ));
    (reply, new)
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    /// A multiple of a day, in ms.
    const T0: i64 = 1_764_700_000_000;

    /// Returns the instant `T0 + ms` in microseconds.
    fn at(ms: i64) -> i64 {
        (T0 + ms) * US
    }

    fn rule(limit: i64, period_ms: i64, burst: i64) -> Rule {
        Rule {
            limit,
            period_ms,
            burst,
        }
    }

    /// Runs GCRA requests of cost 1 at `times` (µs), returning the replies.
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
        let out = run_gcra(r, &[at(0); 11]);
        for (i, f) in out.iter().take(10).enumerate() {
            assert_eq!(f, &[1, 10, 9 - i as i64, -1, 100 * (i as i64 + 1)]);
        }
        assert_eq!(out[10], [0, 10, 0, 100, 1000], "the 11th waits one spacing");
        let mut tat = None;
        for _ in 0..10 {
            tat = gcra(r, tat, at(0), 1).new;
        }
        assert!(!gcra(r, tat, at(100) - 1, 1).reply.allowed, "1 µs early");
        assert_eq!(
            gcra(r, tat, at(100), 1).reply.fields(),
            [1, 10, 0, -1, 1000]
        );
    }

    #[test]
    fn gcra_burst_of_one_spaces_from_each_request() {
        // 3 per second, one at a time: spacing 333,333⅓ µs, kept exact.
        // With no tolerance a late request restarts the schedule from
        // itself.
        let r = rule(3, 1000, 1);
        let out = run_gcra(r, &[at(0), at(333), at(334), at(667), at(668)]);
        assert_eq!(out[0], [1, 3, 0, -1, 334]);
        assert_eq!(
            out[1],
            [0, 3, 0, 1, 1],
            "333 ms is ⅓ ms early: retry rounds up to 1"
        );
        assert_eq!(out[2][0], 1);
        assert_eq!(out[3], [0, 3, 0, 1, 1], "the next slot is 334 + 333⅓");
        assert_eq!(out[4][0], 1);
        // The exact slot: 333,333⅓ µs after the first request.
        let first = gcra(r, None, at(0), 1).new;
        assert!(!gcra(r, first, at(0) + 333_333, 1).reply.allowed);
        assert!(gcra(r, first, at(0) + 333_334, 1).reply.allowed);
    }

    #[test]
    fn gcra_is_exact_below_the_millisecond() {
        // 100,000 per second with no tolerance: one request every 10 µs.
        // Requests every 2.5 µs for 50 ms pass once every 10 µs exactly,
        // where a millisecond clock let one through per millisecond.
        let r = rule(100_000, 1000, 1);
        let mut tat = None;
        let mut n = 0;
        for i in 0..20_000 {
            let t = at(0) + i * 5 / 2;
            let s = gcra(r, tat, t, 1);
            if s.reply.allowed {
                n += 1;
                tat = s.new;
            }
        }
        assert_eq!(n, 5000);
        // A fresh state starts at the exact instant, not the millisecond.
        let s = gcra(r, None, at(0) + 999, 1);
        // 999 + 10 µs = 1 ms + 9 µs = 1 ms + 900,000 / 100,000,000 ms.
        let t = s.new.unwrap();
        assert_eq!(
            t.format().as_bytes(),
            format!("gcra:{}:900000:100000000", T0 + 1).as_bytes()
        );
        assert!(!gcra(r, s.new, at(1) + 8, 1).reply.allowed);
        assert!(gcra(r, s.new, at(1) + 9, 1).reply.allowed);
    }

    #[test]
    fn gcra_is_exact_at_100k_per_second() {
        let r = rule(100_000, 1000, 100_000);
        let mut tat = None;
        for _ in 0..100_000 {
            let s = gcra(r, tat, at(0), 1);
            assert!(s.reply.allowed);
            tat = s.new;
        }
        let denied = gcra(r, tat, at(0), 1).reply;
        assert_eq!(
            denied.fields(),
            [0, 100_000, 0, 1, 1000],
            "a 10 µs wait rounds up to 1 ms"
        );
        // One millisecond later exactly 100 more pass.
        let mut n = 0;
        loop {
            let s = gcra(r, tat, at(1), 1);
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
        let first = gcra(r, None, at(0), 1);
        let second = gcra(r, first.new, at(0), 1).reply;
        assert_eq!(second.retry_ms, 12_342_858, "ceil(86400000/7)");
        // Hammered every second for a week with a burst of 2: 2 + 7×7 pass,
        // no more, no less (the fractions of a microsecond add up exactly).
        let r = rule(7, day, 2);
        let mut tat = None;
        let mut n = 0;
        let mut t = 0;
        while t <= 7 * day {
            let s = gcra(r, tat, at(t), 1);
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
            // At most one slot per microsecond (limit ≤ period-µs), so
            // that demand on every microsecond can use every slot. A burst
            // of 1 has no tolerance: a request arriving later than its slot
            // restarts the schedule, so the exact count holds from 2.
            let limit = rng.gen_range(1..5000);
            let period = rng.gen_range(limit / 1000 + 1..40);
            let burst = rng.gen_range(2..20);
            let r = rule(limit, period, burst);
            let m = rng.gen_range(0..20_000i64);
            let mut tat = None;
            let mut n = 0i64;
            for t in 0..=m {
                loop {
                    let s = gcra(r, tat, at(0) + t, 1);
                    if !s.reply.allowed {
                        break;
                    }
                    tat = s.new;
                    n += 1;
                }
            }
            assert_eq!(n, burst + m * limit / (period * US), "{r:?} over {m} µs");
        }
    }

    #[test]
    fn cost_and_refusal_consume_nothing() {
        let r = rule(5, 1000, 5);
        let s = gcra(r, None, at(0), 3);
        assert_eq!(s.reply.fields(), [1, 5, 2, -1, 600]);
        let refused = gcra(r, s.new, at(0), 3);
        assert_eq!(refused.reply.fields(), [0, 5, 2, 200, 600]);
        assert_eq!(refused.new, None);
        let never = gcra(r, s.new, at(0), 6);
        assert_eq!(
            never.reply.fields(),
            [0, 5, 2, -1, 600],
            "more than the burst never passes"
        );
        let peek = gcra(r, s.new, at(0), 0);
        assert_eq!(peek.reply.fields(), [1, 5, 2, -1, 600]);
        assert_eq!(peek.new, None);
    }

    #[test]
    fn tat_round_trips_and_rejects_garbage() {
        let t = Tat {
            ms: T0,
            num: 2,
            den: 3000,
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
            b"gcra:9000000000001:0:1",
            b"gcra:1:0:1000000000000001",
            b"gcra:1:0:1:",
        ] {
            assert_eq!(Tat::parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        assert_eq!(parse_text(b"gcra:x"), Text::Corrupt);
        assert_eq!(parse_text(b"fixed:1"), Text::Corrupt);
        assert_eq!(parse_text(b"hello"), Text::Foreign);
        assert_eq!(parse_text(b"12345"), Text::Foreign);
        // 2/3000 ms (⅔ µs) with another limit (5) is rounded up to the
        // next 1/5 µs: 0.8 µs = 4 units.
        assert_eq!(t.debt(at(0), 5), 4);
    }

    #[test]
    fn millisecond_states_read_exactly() {
        // The format of the previous version: `ms + num/limit` ms. Its
        // debt is the same in microseconds, so an upgrade changes nothing.
        let old = Tat {
            ms: T0 + 72_000,
            num: 2,
            den: 3,
        };
        let r = rule(3, 60_000, 5);
        let s = gcra(r, Some(old), at(0), 1);
        // 72,000⅔ ms of debt at 20,000 ms per request: 3.6 requests, so
        // 1 more passes (4.6 ≤ 5) and none after it.
        assert!(s.reply.allowed);
        assert_eq!(s.reply.remaining, 0);
        let t = s.new.unwrap();
        assert_eq!((t.ms, t.num, t.den), (T0 + 92_000, 2000, 3000));
        assert_eq!(
            t.debt(at(0), 3),
            old.debt(at(0), 3) + 20_000 * US as i128 * 3
        );
    }

    #[test]
    fn throttle_matches_redis_cell_documented_reply() {
        // CL.THROTTLE user123 15 30 60 on a fresh key → 0 16 15 -1 2
        let r = rule(30, 60_000, 16);
        let s = gcra(r, None, at(0), 1);
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
        for (i, (t, qty, want)) in cases.iter().enumerate() {
            let s = gcra(r, tat, at(*t), *qty);
            if s.new.is_some() {
                tat = s.new;
            }
            assert_eq!(throttle_reply(r, &s), *want, "case {i}");
        }
    }

    #[test]
    fn throttle_cuts_to_milliseconds_before_rounding_to_seconds() {
        // 1 per second, no burst: a wait of 999,999 µs is 999 ms, so 1 s;
        // a wait of 1,000,500 µs is 1,000 ms, so still 1 s (redis-cell
        // looks at the millisecond part only).
        let r = rule(1, 1000, 1);
        let first = gcra(r, None, at(0), 1);
        let s = gcra(r, first.new, at(0) + 1, 1);
        assert_eq!(throttle_reply(r, &s)[3], 1);
        let s = gcra(r, first.new, at(0), 2);
        assert_eq!(throttle_reply(r, &s)[3], -1, "more than the burst");
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
        let mut st: Vec<Option<Tat>> = vec![None, None];
        let merge = |st: &[Option<Tat>], o: &MultiOutcome| -> Vec<Option<Tat>> {
            o.new
                .iter()
                .zip(st)
                .map(|(n, old)| n.map(|(t, _)| t).or(*old))
                .collect()
        };
        for _ in 0..2 {
            let o = multi(&rules, &st, at(0), 1);
            assert!(o.reply.allowed);
            st = merge(&st, &o);
        }
        let o = multi(&rules, &st, at(0), 1);
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
        let o = multi(&rules, &st, at(500), 1);
        assert!(o.reply.allowed);
        assert_eq!(
            (o.reply.limit, o.reply.remaining),
            (2, 0),
            "both have none left: the first wins the tie"
        );
        assert_eq!(
            o.new[0].unwrap().1,
            1000 * US,
            "time to live of the first key"
        );
        st = merge(&st, &o);
        let o = multi(&rules, &st, at(1000), 1);
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
        let o = multi(&rules, &[None], at(0), 1);
        assert!(!o.reply.allowed);
        assert_eq!(o.new, vec![None]);
    }

    #[test]
    fn fixed_counts_per_aligned_window() {
        let mut st = None;
        let mut call = |t: i64, c: i64| {
            let (r, n) = fixed(3, 1000, st, t, c);
            if let Some((w, _)) = n {
                st = Some(w);
            }
            r.fields()
        };
        let t = 5_000_900 * US;
        assert_eq!(call(t, 1), [1, 3, 2, -1, 100]);
        assert_eq!(call(t + 50 * US, 2), [1, 3, 0, -1, 50]);
        assert_eq!(
            call(t + 99 * US + 1, 1),
            [0, 3, 0, 1, 1],
            "the window ends at the next multiple; 999 µs round up"
        );
        assert_eq!(
            call(t + 100 * US, 3),
            [1, 3, 0, -1, 1000],
            "a new window starts full"
        );
        assert_eq!(
            call(t + 100 * US, 4),
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
        assert_eq!(Window::parse(b"fixed:1:1000000000001"), None);
        let (_, n) = fixed(3, 1000, None, t + 1, 1);
        assert_eq!(
            n.unwrap().1,
            100 * US - 1,
            "time to live: the end of the window"
        );
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
        let ms = |t: i64| t * US;
        let (r1, st1) = sliding(10, 1000, st, ms(4_001_250), 1);
        assert_eq!(r1.fields(), [1, 10, 1, -1, 1750]);
        let (r2, st2) = sliding(10, 1000, st1, ms(4_001_250), 1);
        assert_eq!(r2.fields(), [1, 10, 0, -1, 1750]);
        let (r3, none) = sliding(10, 1000, st2, ms(4_001_250), 1);
        assert_eq!(
            r3.fields(),
            [0, 10, 0, 50, 1750],
            "at 300 ms 10×0.7 + 3 = 10"
        );
        assert_eq!(none, None);
        assert!(!sliding(10, 1000, st2, ms(4_001_300) - 1, 1).0.allowed);
        assert!(sliding(10, 1000, st2, ms(4_001_300), 1).0.allowed);
        // Over the limit in this window alone: wait for the next one.
        let full = Some(Sliding {
            window: 4_001_000,
            count: 10,
            prev: 0,
        });
        let (r5, _) = sliding(10, 1000, full, ms(4_001_400), 1);
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
            let (r, add) = log(3, 1000, &entries, at(t), 1);
            assert!(r.allowed && add);
            entries.push(at(t));
        }
        let (r, add) = log(3, 1000, &entries, at(999), 1);
        assert_eq!((r.fields(), add), ([0, 3, 0, 1, 201], false));
        let (r, _) = log(3, 1000, &entries, at(999), 2);
        assert_eq!(r.retry_ms, 101, "two must leave: the second oldest at 100");
        assert!(
            !log(3, 1000, &entries, at(1000) - 1, 1).0.allowed,
            "1 µs early"
        );
        let (r, _) = log(3, 1000, &entries, at(1000), 1);
        assert_eq!(r.fields(), [1, 3, 0, -1, 1000]);
    }

    #[test]
    fn log_scales_name_and_score_entries() {
        let t = at(0) + 123;
        let mut m = Vec::new();
        LogScale::Micros.member(t, 7, &mut m);
        assert_eq!(m, format!("{t}-7").as_bytes());
        assert_eq!(LogScale::of_member(&m), LogScale::Micros);
        LogScale::Micros.member(5, 0, &mut m);
        assert_eq!(m, b"0000000000000005-0", "zero-padded: names sort by time");
        assert_eq!(LogScale::of_member(&m), LogScale::Micros);
        LogScale::Millis.member(at(0), 3, &mut m);
        assert_eq!(m, format!("{T0}-3").as_bytes());
        assert_eq!(LogScale::of_member(&m), LogScale::Millis);
        assert_eq!(LogScale::Micros.score(t), t as f64);
        assert_eq!(LogScale::Micros.time(t as f64), Some(t));
        assert_eq!(LogScale::Millis.truncate(t), at(0));
        assert_eq!(LogScale::Millis.score(at(0)), T0 as f64);
        assert_eq!(LogScale::Millis.time(T0 as f64), Some(at(0)));
        assert_eq!(LogScale::Micros.time(1.5), None);
        assert_eq!(LogScale::Micros.time(f64::INFINITY), None);
        assert_eq!(LogScale::Micros.time(1e17), None);
    }

    #[test]
    fn string_states_round_trip() {
        let s = Sliding {
            window: T0,
            count: 3,
            prev: 10,
        };
        assert_eq!(parse_text(s.format().as_bytes()), Text::Sliding(s));
        let b = Bucket {
            tokens: 4,
            carry: 999,
            ts: at(0) + 5,
        };
        assert_eq!(parse_text(b.format().as_bytes()), Text::Bucket(b));
        for bad in [
            &b"sliding:1:2"[..],
            b"sliding:1:2:x",
            b"bucket:",
            b"bucket:1:2:3:4",
            b"sliding:1:2:1000000000001",
        ] {
            assert_eq!(
                parse_text(bad),
                Text::Corrupt,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(parse_text(b"slidingx"), Text::Foreign);
    }

    #[test]
    fn log_matches_brute_force() {
        let mut rng = StdRng::seed_from_u64(11);
        for _ in 0..50 {
            let limit = rng.gen_range(1..8);
            let period = rng.gen_range(1..200);
            let mut entries: Vec<i64> = Vec::new();
            let mut t = at(0);
            for _ in 0..300 {
                t += rng.gen_range(0..40_000);
                let cost = rng.gen_range(0..4);
                let inside = entries
                    .iter()
                    .filter(|&&e| e > t - period * US && e <= t)
                    .count() as i64;
                let (r, add) = log(limit, period, &entries, t, cost);
                assert_eq!(r.allowed, cost <= limit && inside + cost <= limit);
                if add {
                    entries.extend(std::iter::repeat_n(t, cost as usize));
                }
                if !r.allowed && r.retry_ms > 0 {
                    let later = t + r.retry_ms * US;
                    let (ok, _) = log(limit, period, &entries, later, cost);
                    assert!(ok.allowed, "waiting retry-after passes");
                    let (early, _) = log(limit, period, &entries, later - US, cost);
                    assert!(!early.allowed, "retry-after is the earliest millisecond");
                }
            }
        }
    }

    #[test]
    fn bucket_refills_continuously() {
        let r = rule(1, 1000, 5);
        let mut st = None;
        for i in 0..5 {
            let (rep, n) = bucket(r, st, at(0), 1);
            assert_eq!(rep.fields(), [1, 1, 4 - i, -1, 1000 * (i + 1)]);
            st = n.map(|(b, _)| b);
        }
        let (rep, n) = bucket(r, st, at(0), 1);
        assert_eq!((rep.fields(), n), ([0, 1, 0, 1000, 5000], None));
        assert_eq!(bucket(r, st, at(500), 1).0.retry_ms, 500);
        assert!(!bucket(r, st, at(1000) - 1, 1).0.allowed);
        assert!(bucket(r, st, at(1000), 1).0.allowed);
        assert_eq!(bucket(r, st, at(1000), 2).0.fields(), [0, 1, 1, 1000, 4000]);
    }

    #[test]
    fn bucket_reads_millisecond_states_exactly() {
        // tokens 2, carry 400 of 1000 (0.4 token) at T0 in ms, 1 per
        // second, burst 5: the same bucket in µs.
        let r = rule(1, 1000, 5);
        let old = Bucket::from_ms(2, 400, T0, 1000);
        assert_eq!(
            old,
            Bucket {
                tokens: 2,
                carry: 400_000,
                ts: at(0)
            }
        );
        let (rep, _) = bucket(r, Some(old), at(600), 3);
        assert!(rep.allowed, "2.4 + 0.6 = 3 tokens");
        assert!(!bucket(r, Some(old), at(600) - 1, 3).0.allowed);
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
            let mut t = at(0);
            for _ in 0..200 {
                t += rng.gen_range(0..60_000);
                let cost = rng.gen_range(0..4);
                let g = gcra(r, tat, t, cost);
                let (k, nb) = bucket(r, b, t, cost);
                assert_eq!(g.reply, k, "{r:?} at {t} cost {cost}");
                if g.new.is_some() {
                    tat = g.new;
                }
                if let Some((nb, ttl)) = nb {
                    assert_eq!(ttl, g.reset_us(), "both expire when full");
                    b = Some(nb);
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
            let mut t = at(0);
            for _ in 0..100 {
                t += rng.gen_range(0..50_000);
                let cost = rng.gen_range(1..4);
                let g = gcra(r, tat, t, cost);
                if let Some(n) = g.new {
                    tat = Some(n);
                } else if g.reply.retry_ms > 0 {
                    let later = t + g.reply.retry_ms * US;
                    assert!(gcra(r, tat, later, cost).reply.allowed);
                    assert!(!gcra(r, tat, later - US, cost).reply.allowed);
                }
                let (s, n) = sliding(r.limit, r.period_ms, sl, t, cost);
                if n.is_some() {
                    sl = n;
                } else if s.retry_ms > 0 {
                    let later = t + s.retry_ms * US;
                    assert!(sliding(r.limit, r.period_ms, sl, later, cost).0.allowed);
                    assert!(
                        !sliding(r.limit, r.period_ms, sl, later - US, cost)
                            .0
                            .allowed
                    );
                }
            }
        }
    }

    #[test]
    fn millisecond_instants_give_the_previous_replies() {
        // With NOW in whole milliseconds every algorithm answers as the
        // millisecond version did (checked on a few known replies).
        let r = rule(7, 86_400_000, 1);
        assert_eq!(
            gcra(r, None, at(0), 1).reply.fields(),
            [1, 7, 0, -1, 12_342_858]
        );
        // A multiple of a minute.
        assert_eq!(
            sliding(100, 60_000, None, 1_764_720_000_000 * US, 1)
                .0
                .fields(),
            [1, 100, 99, -1, 120_000]
        );
        assert_eq!(
            bucket(rule(5, 1000, 50), None, at(0), 20).0.fields(),
            [1, 5, 30, -1, 4000]
        );
    }

    #[test]
    fn rule_bounds() {
        assert!(
            !rule(1, 86_400_000, 1_000_000).fits(Algo::Gcra),
            "one per day with a burst of a million: 2,700 years to refill"
        );
        assert!(rule(1_000_000, 86_400_000, 1_000_000).fits(Algo::Gcra));
        assert!(rule(100_000_000, 86_400_000, 50_000_000).fits(Algo::Gcra));
        assert!(rule(1000, 1000, 1_000_000_000_000).fits(Algo::Bucket));
        assert!(
            !rule(1, 1_000_000_000_000, 10).fits(Algo::Gcra),
            "317 years"
        );
        assert!(rule(1, 1_000_000_000_000, 4).fits(Algo::Gcra));
        assert!(rule(10_000, 1_000_000_000_000, 1).fits(Algo::Sliding));
        assert!(rule(10_000, 1_000_000_000_000, 1).fits(Algo::Fixed));
    }

    #[test]
    fn extreme_rules_stay_exact() {
        // The largest values the handlers accept: no overflow, and the
        // replies stay consistent.
        let r = rule(MAX_COUNT, MAX_PERIOD_MS, MAX_COUNT);
        assert!(r.fits(Algo::Gcra));
        let now = MAX_NOW_MS * US;
        let s = gcra(r, None, now, MAX_COUNT);
        assert_eq!(s.reply.fields(), [1, MAX_COUNT, 0, -1, MAX_PERIOD_MS]);
        let t = s.new.unwrap();
        assert!(t.ms <= MAX_STORED_MS);
        assert_eq!(Tat::parse(t.format().as_bytes()), Some(t));
        let refused = gcra(r, Some(t), now, 1);
        assert_eq!(refused.reply.retry_ms, 1);
        let (rep, _) = sliding(MAX_COUNT, MAX_PERIOD_MS, None, now, MAX_COUNT);
        assert!(rep.allowed);
        let (rep, n) = bucket(r, None, now, MAX_COUNT);
        assert_eq!(rep.fields(), [1, MAX_COUNT, 0, -1, MAX_PERIOD_MS]);
        assert!(n.unwrap().0.ts <= MAX_STORED_US);
    }
}
