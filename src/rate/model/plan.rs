//! RATE's plans: from the parsed arguments and the state read, what to
//! write and reply, or the refusal (a refusal writes nothing). The
//! handlers in commands.rs parse, read the clock once, open the key, look
//! at what it holds ([`Stored`]), call a plan here and apply it. No Redis
//! types: a Hash of the millisecond version is read through a closure,
//! only when the key is one.

use std::ops::Deref;

use super::{
    bucket, expire_at, fixed, gcra, multi, parse_nonneg, parse_text, sliding, throttle_reply, Algo,
    Bucket, Buf, MultiRule, Reply, Rule, Sliding, Tat, Text, MAX_COUNT, MAX_REFILL_MS,
    MAX_STORED_MS, MAX_STORED_US, US,
};

/// LOG keeps one entry per request: its limit is capped so that a window
/// never holds more than this many entries.
pub const MAX_LOG_LIMIT: i64 = 100_000;
/// The most entries one LOG request adds (its COST), so that one call
/// does a bounded amount of work.
pub const MAX_LOG_COST: i64 = 100;

/// Why a RATE command refuses. Every refusal comes before any write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// `WRONGTYPE …`: another Redis type, or a value that is not a limiter.
    WrongType,
    /// `ERR rate: key holds a <algo> limiter`.
    Holds(Algo),
    /// The corrupt-data error naming the key (and the Hash field, if any).
    Corrupt(Option<&'static str>),
    /// `ERR rate: burst * period-ms / limit exceeds …`.
    TooLarge,
    /// `ERR rate: BURST applies only to GCRA and BUCKET`.
    BurstNotApplicable,
    /// `ERR rate: LOG limit must be at most 100000`.
    LogLimit,
    /// `ERR rate: LOG cost must be at most 100`.
    LogCost,
}

impl Refusal {
    /// Returns the text after `rate: ` of a refusal of the family's own
    /// with a fixed text (None: WRONGTYPE, HOLDS and corrupt data, whose
    /// errors the handler builds).
    pub fn message(self) -> Option<String> {
        Some(match self {
            Refusal::TooLarge => {
                format!("burst * period-ms / limit exceeds {MAX_REFILL_MS}")
            }
            Refusal::BurstNotApplicable => "BURST applies only to GCRA and BUCKET".into(),
            Refusal::LogLimit => format!("LOG limit must be at most {MAX_LOG_LIMIT}"),
            Refusal::LogCost => format!("LOG cost must be at most {MAX_LOG_COST}"),
            Refusal::WrongType | Refusal::Holds(_) | Refusal::Corrupt(_) => return None,
        })
    }
}

/// The instant a command computes at (`now`, µs) and the server clock it
/// counts expiry times from (`clock`, µs): the same reading unless the
/// client gave `NOW`/`NOWUS`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Time {
    pub now: i64,
    pub clock: i64,
}

impl Time {
    /// Returns the time of a command that read the server clock `clock`
    /// and was given `explicit` (`NOW`/`NOWUS`, µs) or not.
    #[inline]
    pub fn new(clock: i64, explicit: Option<i64>) -> Time {
        Time {
            now: explicit.unwrap_or(clock),
            clock,
        }
    }

    /// Returns the absolute expiry (unix ms) of a state full again `ttl_us`
    /// after the clock.
    #[inline]
    pub fn expire_at(&self, ttl_us: i64) -> i64 {
        expire_at(self.clock, ttl_us)
    }
}

/// RATE.CHECK's rule options as parsed (`burst` None: not given).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckRule {
    pub algo: Algo,
    pub limit: i64,
    pub period_ms: i64,
    pub burst: Option<i64>,
    pub cost: i64,
}

/// Checks RATE.CHECK's options against each other and returns its rule.
/// In this order: BURST with a window algorithm, LOG's limit, LOG's cost,
/// a GCRA or BUCKET burst too long to refill exactly.
pub fn plan_rule(c: CheckRule) -> Result<Rule, Refusal> {
    if c.burst.is_some() && !c.algo.has_burst() {
        return Err(Refusal::BurstNotApplicable);
    }
    if c.algo == Algo::Log && c.limit > MAX_LOG_LIMIT {
        return Err(Refusal::LogLimit);
    }
    if c.algo == Algo::Log && c.cost > MAX_LOG_COST {
        return Err(Refusal::LogCost);
    }
    let rule = Rule {
        limit: c.limit,
        period_ms: c.period_ms,
        burst: c.burst.unwrap_or(c.limit),
    };
    if !rule.fits(c.algo) {
        return Err(Refusal::TooLarge);
    }
    Ok(rule)
}

/// RATE.THROTTLE's rule (redis-cell's): `count` per `period_s` seconds,
/// at most `max_burst + 1` at once.
pub fn plan_throttle_rule(max_burst: i64, count: i64, period_s: i64) -> Result<Rule, Refusal> {
    let rule = Rule {
        limit: count,
        period_ms: period_s * 1000,
        burst: max_burst + 1,
    };
    if !rule.fits(Algo::Gcra) {
        return Err(Refusal::TooLarge);
    }
    Ok(rule)
}

/// RATE.MULTI's rules: each must refill exactly (a GCRA rule).
pub fn plan_multi_rules(rules: &[MultiRule]) -> Result<(), Refusal> {
    if rules.iter().any(|r| !r.rule.fits(Algo::Gcra)) {
        return Err(Refusal::TooLarge);
    }
    Ok(())
}

/// What a limiter key holds, as the handler found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored<'a> {
    /// No key.
    Empty,
    /// A String with this value.
    String(&'a [u8]),
    /// A Hash whose `algo` field is this (None: no such field).
    Hash(Option<&'a [u8]>),
    /// A Sorted Set (a LOG limiter).
    ZSet,
    /// Any other type.
    Other,
}

/// Returns the kind of a Hash limiter of the millisecond version from its
/// `algo` field; WRONGTYPE for a Hash that is not one of ours.
pub fn hash_kind(algo: Option<&[u8]>) -> Result<Algo, Refusal> {
    match algo {
        Some(b"sliding") => Ok(Algo::Sliding),
        Some(b"bucket") => Ok(Algo::Bucket),
        _ => Err(Refusal::WrongType),
    }
}

/// Parses a stored Hash field as an integer within `[0, max]`; a missing
/// or malformed field is corrupt data, named.
fn field<S: Deref<Target = [u8]>>(
    v: &Option<S>,
    name: &'static str,
    max: i64,
) -> Result<i64, Refusal> {
    v.as_ref()
        .and_then(|s| parse_nonneg(s))
        .filter(|&n| n <= max)
        .ok_or(Refusal::Corrupt(Some(name)))
}

/// Reads a SLIDING or BUCKET Hash of the millisecond version (`algo
/// sliding window <ms> count <n> prev <n>`, `algo bucket tokens <n> carry
/// <n> ts <ms>`) as the state it stands for. `fields` reads the three
/// fields of `kind` (window, count, prev; or tokens, carry, ts).
pub fn old_hash<S: Deref<Target = [u8]>>(
    kind: Algo,
    period_ms: i64,
    fields: impl FnOnce(Algo) -> [Option<S>; 3],
) -> Result<Text, Refusal> {
    let v = fields(kind);
    if kind == Algo::Sliding {
        Ok(Text::Sliding(Sliding {
            window: field(&v[0], "window", MAX_STORED_MS)?,
            count: field(&v[1], "count", MAX_COUNT)?,
            prev: field(&v[2], "prev", MAX_COUNT)?,
        }))
    } else {
        let tokens = field(&v[0], "tokens", MAX_COUNT)?;
        let carry = field(&v[1], "carry", MAX_STORED_US)?;
        let ts = field(&v[2], "ts", MAX_STORED_MS)?;
        Ok(Text::Bucket(Bucket::from_ms(tokens, carry, ts, period_ms)))
    }
}

/// Reads the state of a limiter of one of the String algorithms: None
/// when the key is missing; WRONGTYPE for another Redis type or a String
/// that is not a limiter; HOLDS for another algorithm's state; corrupt
/// data for a damaged limiter. A SLIDING or BUCKET Hash of the
/// millisecond version is read too (the bool is then true: the next write
/// replaces it with a String).
#[inline]
pub fn read_state<S: Deref<Target = [u8]>>(
    stored: Stored,
    algo: Algo,
    period_ms: i64,
    fields: impl FnOnce(Algo) -> [Option<S>; 3],
) -> Result<(Option<Text>, bool), Refusal> {
    match stored {
        Stored::Empty => Ok((None, false)),
        Stored::String(v) => match parse_text(v) {
            Text::Foreign => Err(Refusal::WrongType),
            Text::Corrupt => Err(Refusal::Corrupt(None)),
            t if t.algo() == Some(algo) => Ok((Some(t), false)),
            t => Err(Refusal::Holds(t.algo().unwrap_or(algo))),
        },
        Stored::Hash(a) => {
            let old = old_hash(hash_kind(a)?, period_ms, fields)?;
            match old.algo() {
                Some(a) if a == algo => Ok((Some(old), true)),
                Some(a) => Err(Refusal::Holds(a)),
                None => Err(Refusal::WrongType),
            }
        }
        Stored::ZSet | Stored::Other => Err(Refusal::WrongType),
    }
}

/// Reads a GCRA state (RATE.THROTTLE's and RATE.MULTI's), refusing any
/// other kind of value.
#[inline]
pub fn read_tat<S: Deref<Target = [u8]>>(
    stored: Stored,
    fields: impl FnOnce(Algo) -> [Option<S>; 3],
) -> Result<Option<Tat>, Refusal> {
    match read_state(stored, Algo::Gcra, 1, fields)?.0 {
        Some(Text::Gcra(t)) => Ok(Some(t)),
        _ => Ok(None),
    }
}

/// RATE.MULTI's type check of one key, done for every key before any
/// state is read: a missing key, a limiter String (or a damaged one) and
/// a Hash of the millisecond version pass, anything else is WRONGTYPE.
pub fn multi_kind(stored: Stored) -> Result<(), Refusal> {
    match stored {
        Stored::Empty => Ok(()),
        Stored::String(v) if parse_text(v) != Text::Foreign => Ok(()),
        Stored::Hash(a) => hash_kind(a).map(|_| ()),
        _ => Err(Refusal::WrongType),
    }
}

/// A String state to write: `value`, expiring at `at` (unix ms). With
/// `keep_same_ttl` (a state whose expiry moves once per window), an
/// expiry already at `at` is left alone (replicated as `KEEPTTL`).
pub struct TextWrite {
    pub value: Buf,
    pub at: i64,
    pub keep_same_ttl: bool,
}

/// What a String algorithm's RATE.CHECK does: reply `reply`, write
/// `write` if any.
pub struct CheckPlan {
    pub reply: Reply,
    pub write: Option<TextWrite>,
}

/// Plans RATE.CHECK of a String algorithm (LOG is not one) over the `state` read
/// (`old`: it was a Hash of the millisecond version). A PEEK writes
/// nothing; a request that is refused or costs 0 changes nothing.
#[inline]
pub fn plan_check(
    algo: Algo,
    rule: Rule,
    state: Option<Text>,
    old: bool,
    time: Time,
    cost: i64,
    peek: bool,
) -> CheckPlan {
    let now = time.now;
    let (reply, write) = match algo {
        Algo::Gcra => {
            let tat = match state {
                Some(Text::Gcra(t)) => Some(t),
                _ => None,
            };
            let step = gcra(rule, tat, now, cost);
            let w = step.new.map(|t| TextWrite {
                value: t.format(),
                at: time.expire_at(step.reset_us()),
                keep_same_ttl: false,
            });
            (step.reply, w)
        }
        Algo::Fixed => {
            let w = match state {
                Some(Text::Fixed(w)) => Some(w),
                _ => None,
            };
            let (r, new) = fixed(rule.limit, rule.period_ms, w, now, cost);
            // The expiry is the window's end: it moves once per window.
            let w = new.map(|(w, ttl)| TextWrite {
                value: w.format(),
                at: time.expire_at(ttl),
                keep_same_ttl: true,
            });
            (r, w)
        }
        Algo::Sliding => {
            let s = match state {
                Some(Text::Sliding(s)) => Some(s),
                _ => None,
            };
            let (r, new) = sliding(rule.limit, rule.period_ms, s, now, cost);
            // The state is needed until the end of the window after its
            // own: the expiry moves once per window.
            let w = new.map(|s| TextWrite {
                value: s.format(),
                at: time.expire_at((s.window + 2 * rule.period_ms) * US - now),
                keep_same_ttl: !old,
            });
            (r, w)
        }
        // LOG is planned by `plan_log_write` over its Sorted Set: given
        // here, nothing is consumed and nothing written.
        Algo::Log => (
            Reply {
                allowed: false,
                limit: rule.limit,
                remaining: 0,
                retry_ms: -1,
                reset_ms: 0,
            },
            None,
        ),
        Algo::Bucket => {
            let b = match state {
                Some(Text::Bucket(b)) => Some(b),
                _ => None,
            };
            let (r, new) = bucket(rule, b, now, cost);
            let w = new.map(|(b, ttl)| TextWrite {
                value: b.format(),
                at: time.expire_at(ttl),
                keep_same_ttl: false,
            });
            (r, w)
        }
    };
    CheckPlan {
        reply,
        write: if peek { None } else { write },
    }
}

/// What RATE.THROTTLE does: reply `fields` (redis-cell's array), count
/// `allowed`, write `write` if any.
pub struct ThrottlePlan {
    pub fields: [i64; 5],
    pub allowed: bool,
    pub write: Option<TextWrite>,
}

/// Plans RATE.THROTTLE of `qty` over the GCRA state read.
#[inline]
pub fn plan_throttle(rule: Rule, tat: Option<Tat>, time: Time, qty: i64) -> ThrottlePlan {
    let step = gcra(rule, tat, time.now, qty);
    ThrottlePlan {
        fields: throttle_reply(rule, &step),
        allowed: step.reply.allowed,
        write: step.new.map(|t| TextWrite {
            value: t.format(),
            at: time.expire_at(step.reset_us()),
            keep_same_ttl: false,
        }),
    }
}

/// What RATE.MULTI does: reply `reply`; write each distinct key's new
/// state, [`MultiPlan::write`] (none for a PEEK or a refusal).
pub struct MultiPlan {
    pub reply: Reply,
    new: Vec<Option<(Tat, i64)>>,
    time: Time,
}

impl MultiPlan {
    /// Returns the write of the `i`-th distinct key (None: not written).
    #[inline]
    pub fn write(&self, i: usize) -> Option<TextWrite> {
        let (t, ttl) = (*self.new.get(i)?)?;
        Some(TextWrite {
            value: t.format(),
            at: self.time.expire_at(ttl),
            keep_same_ttl: false,
        })
    }
}

/// Plans RATE.MULTI over the distinct keys' GCRA `states`.
pub fn plan_multi(
    rules: &[MultiRule],
    states: &[Option<Tat>],
    time: Time,
    cost: i64,
    peek: bool,
) -> MultiPlan {
    let mut out = multi(rules, states, time.now, cost);
    if peek {
        out.new.iter_mut().for_each(|n| *n = None);
    }
    MultiPlan {
        reply: out.reply,
        new: out.new,
        time,
    }
}

/// Plans RATE.RESET: true when the key is a limiter to drop (a damaged
/// one too: resetting it is the remedy the corrupt-data error points
/// to), false when there is none; WRONGTYPE for anything else.
pub fn plan_reset(stored: Stored) -> Result<bool, Refusal> {
    match stored {
        Stored::Empty => Ok(false),
        Stored::String(v) => match parse_text(v) {
            Text::Foreign => Err(Refusal::WrongType),
            _ => Ok(true),
        },
        Stored::Hash(a) => hash_kind(a).map(|_| true),
        Stored::ZSet => Ok(true),
        Stored::Other => Err(Refusal::WrongType),
    }
}

#[cfg(test)]
mod tests {
    use super::super::Window;
    use super::*;

    const NOW: i64 = 1_764_720_060_000_000;
    type F = [Option<&'static [u8]>; 3];

    fn none(_: Algo) -> F {
        [None, None, None]
    }

    fn rule(algo: Algo, limit: i64, period_ms: i64, burst: Option<i64>, cost: i64) -> CheckRule {
        CheckRule {
            algo,
            limit,
            period_ms,
            burst,
            cost,
        }
    }

    #[test]
    fn rule_refusals_in_order() {
        use Refusal::*;
        let r = |a, l, b, c| plan_rule(rule(a, l, 1000, b, c));
        assert_eq!(r(Algo::Fixed, 10, Some(5), 1), Err(BurstNotApplicable));
        assert_eq!(r(Algo::Sliding, 10, Some(5), 1), Err(BurstNotApplicable));
        // BURST is checked before LOG's limit and cost.
        assert_eq!(r(Algo::Log, 200_000, Some(5), 500), Err(BurstNotApplicable));
        assert_eq!(r(Algo::Log, 100_001, None, 500), Err(LogLimit));
        assert_eq!(r(Algo::Log, 100_000, None, 101), Err(LogCost));
        assert!(r(Algo::Log, 100_000, None, 100).is_ok());
        // A burst that cannot refill within MAX_REFILL_MS.
        let big = plan_rule(rule(Algo::Gcra, 1, MAX_REFILL_MS, Some(2), 1));
        assert_eq!(big, Err(TooLarge));
        let big = plan_rule(rule(Algo::Bucket, 1, MAX_REFILL_MS, Some(2), 1));
        assert_eq!(big, Err(TooLarge));
        // The window algorithms take any rule.
        assert!(plan_rule(rule(Algo::Fixed, 1, MAX_REFILL_MS * 2, None, 1)).is_ok());
        assert_eq!(
            r(Algo::Gcra, 10, Some(3), 1),
            Ok(Rule {
                limit: 10,
                period_ms: 1000,
                burst: 3
            })
        );
        assert_eq!(r(Algo::Bucket, 10, None, 1).unwrap().burst, 10);
    }

    #[test]
    fn refusal_messages() {
        assert_eq!(
            Refusal::TooLarge.message().unwrap(),
            "burst * period-ms / limit exceeds 4500000000000"
        );
        assert_eq!(
            Refusal::LogLimit.message().unwrap(),
            "LOG limit must be at most 100000"
        );
        assert_eq!(
            Refusal::LogCost.message().unwrap(),
            "LOG cost must be at most 100"
        );
        assert_eq!(
            Refusal::BurstNotApplicable.message().unwrap(),
            "BURST applies only to GCRA and BUCKET"
        );
        assert_eq!(Refusal::WrongType.message(), None);
        assert_eq!(Refusal::Holds(Algo::Gcra).message(), None);
        assert_eq!(Refusal::Corrupt(None).message(), None);
    }

    #[test]
    fn throttle_and_multi_rules() {
        let r = plan_throttle_rule(14, 30, 60).unwrap();
        assert_eq!((r.limit, r.period_ms, r.burst), (30, 60_000, 15));
        let huge = MAX_REFILL_MS / 1000 + 1;
        assert_eq!(plan_throttle_rule(1, 1, huge), Err(Refusal::TooLarge));
        let ok = MultiRule {
            rule: Rule {
                limit: 10,
                period_ms: 1000,
                burst: 10,
            },
            key: 0,
        };
        let bad = MultiRule {
            rule: Rule {
                limit: 1,
                period_ms: MAX_REFILL_MS + 1,
                burst: 1,
            },
            key: 1,
        };
        assert_eq!(plan_multi_rules(&[ok]), Ok(()));
        assert_eq!(plan_multi_rules(&[ok, bad]), Err(Refusal::TooLarge));
    }

    #[test]
    fn state_reads_and_refusals() {
        let gcra = Stored::String(b"gcra:1764720060000:12000:20000");
        let (t, old) = read_state(gcra, Algo::Gcra, 1000, none).unwrap();
        assert!(matches!(t, Some(Text::Gcra(_))) && !old);
        assert_eq!(
            read_state(Stored::Empty, Algo::Gcra, 1000, none),
            Ok((None, false))
        );
        // Another algorithm's state, a foreign String, a damaged limiter.
        assert_eq!(
            read_state(gcra, Algo::Fixed, 1000, none),
            Err(Refusal::Holds(Algo::Gcra))
        );
        assert_eq!(
            read_state(Stored::String(b"hello"), Algo::Gcra, 1000, none),
            Err(Refusal::WrongType)
        );
        assert_eq!(
            read_state(Stored::String(b"gcra:x"), Algo::Gcra, 1000, none),
            Err(Refusal::Corrupt(None))
        );
        for s in [Stored::ZSet, Stored::Other] {
            assert_eq!(
                read_state(s, Algo::Gcra, 1000, none),
                Err(Refusal::WrongType)
            );
        }
        // A Hash that is not ours, with or without an algo field.
        for a in [None, Some(&b"gcra"[..]), Some(&b"x"[..])] {
            assert_eq!(
                read_state(Stored::Hash(a), Algo::Sliding, 1000, none),
                Err(Refusal::WrongType)
            );
        }
        // The millisecond version's Hashes.
        let sliding = |_: Algo| -> F { [Some(b"1000"), Some(b"3"), Some(b"2")] };
        let got = read_state(Stored::Hash(Some(b"sliding")), Algo::Sliding, 1000, sliding);
        let want = Sliding {
            window: 1000,
            count: 3,
            prev: 2,
        };
        assert_eq!(got, Ok((Some(Text::Sliding(want)), true)));
        assert_eq!(
            read_state(Stored::Hash(Some(b"sliding")), Algo::Gcra, 1000, sliding),
            Err(Refusal::Holds(Algo::Sliding))
        );
        let bucket = |_: Algo| -> F { [Some(b"4"), Some(b"7"), Some(b"1000")] };
        let got = read_state(Stored::Hash(Some(b"bucket")), Algo::Bucket, 1000, bucket);
        let want = Bucket::from_ms(4, 7, 1000, 1000);
        assert_eq!(got, Ok((Some(Text::Bucket(want)), true)));
        // Each damaged field is named.
        let cases: [(&[u8], F, &str); 6] = [
            (b"sliding", [None, Some(b"3"), Some(b"2")], "window"),
            (b"sliding", [Some(b"1"), Some(b"x"), Some(b"2")], "count"),
            (b"sliding", [Some(b"1"), Some(b"3"), Some(b"-2")], "prev"),
            (b"bucket", [Some(b"x"), Some(b"3"), Some(b"2")], "tokens"),
            (b"bucket", [Some(b"1"), None, Some(b"2")], "carry"),
            (
                b"bucket",
                [Some(b"1"), Some(b"3"), Some(b"9000000000001")],
                "ts",
            ),
        ];
        for (kind, f, name) in cases {
            let algo = hash_kind(Some(kind)).unwrap();
            assert_eq!(
                read_state(Stored::Hash(Some(kind)), algo, 1000, |_| f),
                Err(Refusal::Corrupt(Some(name)))
            );
        }
        // THROTTLE's and MULTI's read.
        assert!(read_tat(gcra, none).unwrap().is_some());
        assert_eq!(read_tat(Stored::Empty, none), Ok(None));
        assert_eq!(
            read_tat(Stored::Hash(Some(b"bucket")), bucket),
            Err(Refusal::Holds(Algo::Bucket))
        );
    }

    #[test]
    fn multi_kinds_and_reset() {
        assert_eq!(multi_kind(Stored::Empty), Ok(()));
        assert_eq!(multi_kind(Stored::String(b"fixed:1:1")), Ok(()));
        // A damaged limiter passes the type check (its read refuses it).
        assert_eq!(multi_kind(Stored::String(b"gcra:x")), Ok(()));
        assert_eq!(multi_kind(Stored::String(b"x")), Err(Refusal::WrongType));
        assert_eq!(multi_kind(Stored::Hash(Some(b"bucket"))), Ok(()));
        assert_eq!(multi_kind(Stored::Hash(None)), Err(Refusal::WrongType));
        assert_eq!(multi_kind(Stored::ZSet), Err(Refusal::WrongType));
        assert_eq!(multi_kind(Stored::Other), Err(Refusal::WrongType));

        assert_eq!(plan_reset(Stored::Empty), Ok(false));
        assert_eq!(plan_reset(Stored::String(b"gcra:x")), Ok(true));
        assert_eq!(plan_reset(Stored::String(b"x")), Err(Refusal::WrongType));
        assert_eq!(plan_reset(Stored::Hash(Some(b"sliding"))), Ok(true));
        assert_eq!(
            plan_reset(Stored::Hash(Some(b"x"))),
            Err(Refusal::WrongType)
        );
        assert_eq!(plan_reset(Stored::ZSet), Ok(true));
        assert_eq!(plan_reset(Stored::Other), Err(Refusal::WrongType));
    }

    fn r(limit: i64, period_ms: i64) -> Rule {
        Rule {
            limit,
            period_ms,
            burst: limit,
        }
    }

    #[test]
    fn check_plans_write_what_the_algorithm_consumed() {
        let t = Time::new(NOW, None);
        let g = plan_check(Algo::Gcra, r(10, 1000), None, false, t, 1, false);
        assert!(g.reply.allowed);
        let w = g.write.unwrap();
        let step = gcra(r(10, 1000), None, NOW, 1);
        assert_eq!(w.value.as_bytes(), step.new.unwrap().format().as_bytes());
        assert_eq!(w.at, expire_at(NOW, step.reset_us()));
        assert!(!w.keep_same_ttl);
        // PEEK, a cost of 0 and a refusal write nothing, with the reply.
        let p = plan_check(Algo::Gcra, r(10, 1000), None, false, t, 1, true);
        assert_eq!((p.reply, p.write.is_none()), (g.reply, true));
        let z = plan_check(Algo::Gcra, r(10, 1000), None, false, t, 0, false);
        assert!(z.write.is_none() && z.reply.allowed);
        let no = plan_check(Algo::Gcra, r(10, 1000), None, false, t, 11, false);
        assert!(no.write.is_none() && !no.reply.allowed);

        // FIXED keeps an unchanged expiry; its expiry is the window's end.
        let f = plan_check(Algo::Fixed, r(10, 60_000), None, false, t, 1, false);
        let w = f.write.unwrap();
        let (_, new) = fixed(10, 60_000, None, NOW, 1);
        assert_eq!(w.value.as_bytes(), new.unwrap().0.format().as_bytes());
        assert_eq!(w.at, expire_at(NOW, new.unwrap().1));
        assert!(w.keep_same_ttl);
        let state = Some(Text::Fixed(Window {
            start: new.unwrap().0.start,
            count: 10,
        }));
        let full = plan_check(Algo::Fixed, r(10, 60_000), state, false, t, 1, false);
        assert!(!full.reply.allowed && full.write.is_none());

        // SLIDING keeps an unchanged expiry, unless it replaces a Hash.
        let s = plan_check(Algo::Sliding, r(10, 60_000), None, false, t, 1, false);
        let w = s.write.unwrap();
        assert!(w.keep_same_ttl);
        let start = NOW / 1000 - (NOW / 1000) % 60_000;
        assert_eq!(w.at, expire_at(NOW, (start + 120_000) * US - NOW));
        let old = Some(Text::Sliding(Sliding {
            window: start,
            count: 1,
            prev: 0,
        }));
        let s = plan_check(Algo::Sliding, r(10, 60_000), old, true, t, 1, false);
        assert!(!s.write.unwrap().keep_same_ttl);

        // BUCKET.
        let b = plan_check(Algo::Bucket, r(10, 1000), None, false, t, 3, false);
        let (reply, new) = bucket(r(10, 1000), None, NOW, 3);
        let w = b.write.unwrap();
        assert_eq!(b.reply, reply);
        assert_eq!(w.value.as_bytes(), new.unwrap().0.format().as_bytes());
        assert_eq!(w.at, expire_at(NOW, new.unwrap().1));

        // LOG is not planned here: nothing consumed, nothing written.
        let l = plan_check(Algo::Log, r(10, 1000), None, false, t, 1, false);
        assert!(!l.reply.allowed && l.write.is_none());

        // NOW moves the instant computed at, not the clock expiries count from.
        let later = Time::new(NOW, Some(NOW + 5_000_000));
        let g = plan_check(Algo::Gcra, r(10, 1000), None, false, later, 1, false);
        let step = gcra(r(10, 1000), None, NOW + 5_000_000, 1);
        assert_eq!(g.write.unwrap().at, expire_at(NOW, step.reset_us()));
    }

    #[test]
    fn throttle_and_multi_plans() {
        let t = Time::new(NOW, None);
        let rule = plan_throttle_rule(14, 30, 60).unwrap();
        let p = plan_throttle(rule, None, t, 1);
        let step = gcra(rule, None, NOW, 1);
        assert_eq!(p.fields, throttle_reply(rule, &step));
        assert!(p.allowed);
        assert_eq!(p.write.unwrap().at, expire_at(NOW, step.reset_us()));
        let no = plan_throttle(rule, None, t, 16);
        assert!(!no.allowed && no.write.is_none());

        let rules = [
            MultiRule {
                rule: r(10, 1000),
                key: 0,
            },
            MultiRule {
                rule: r(1, 1000),
                key: 1,
            },
        ];
        let m = plan_multi(&rules, &[None, None], t, 1, false);
        assert!(m.reply.allowed);
        let out = multi(&rules, &[None, None], NOW, 1);
        for i in 0..2 {
            let (tat, ttl) = out.new[i].unwrap();
            let w = m.write(i).unwrap();
            assert_eq!(w.value.as_bytes(), tat.format().as_bytes());
            assert_eq!(w.at, expire_at(NOW, ttl));
        }
        assert!(m.write(2).is_none());
        let peek = plan_multi(&rules, &[None, None], t, 1, true);
        assert_eq!(peek.reply, m.reply);
        assert!(peek.write(0).is_none() && peek.write(1).is_none());
        // One rule refusing: nothing is written, the refused rule replies.
        let m = plan_multi(&rules, &[None, None], t, 2, false);
        assert!(!m.reply.allowed && m.reply.limit == 1);
        assert!(m.write(0).is_none() && m.write(1).is_none());
    }
}
