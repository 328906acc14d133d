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

/// What a LOG check that passed writes: remove the `drop` oldest entries
/// (ones that left the window, a bounded number per call), add the
/// entries at `score`, named `<time>-<n>` from `n = first` on (a name
/// already taken, which happens only after the clock went back by more
/// than a period, takes the next number), and expire the log `ttl_us`
/// after the server clock.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LogWrite {
    pub drop: i64,
    pub score: f64,
    pub first: i64,
    pub ttl_us: i64,
}

/// Plans the write of a LOG check that passed ([`log`] said to add): at
/// `now_us` (the instant at the log's `scale`), from the command's own
/// instant `at_us` (what the expiry counts from), the log's `newest`
/// entry time, its `stale` entries (out of the window) and `cost`; `trim`
/// more stale entries than `cost` are removed at most. `at_now` counts the
/// entries already at `now_us`, read only when the newest entry is there.
#[allow(clippy::too_many_arguments)]
pub fn plan_log_write(
    scale: LogScale,
    now_us: i64,
    at_us: i64,
    newest: Option<i64>,
    stale: i64,
    cost: i64,
    trim: i64,
    period_ms: i64,
    at_now: impl FnOnce() -> i64,
) -> LogWrite {
    LogWrite {
        drop: stale.min(cost + trim),
        score: scale.score(now_us),
        first: if newest == Some(now_us) { at_now() } else { 0 },
        ttl_us: newest.map_or(now_us, |t| t.max(now_us)) + period_ms * US - at_us,
    }
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

/// Returns the absolute expiry (unix ms) of a state that is full again
/// `ttl_us` after `clock_us`, rounded up: the key never expires before the
/// limiter is full.
#[inline]
pub fn expire_at(clock_us: i64, ttl_us: i64) -> i64 {
    (clock_us + ttl_us.max(1) + US - 1).div_euclid(US)
}

pub mod plan;

#[cfg(test)]
mod tests;
