//! The pure logic of a red packet: validating a split, splitting an amount
//! into shares (double-mean or equal), and deciding what a grab gets.
//!
//! Nothing here talks to Redis or reads a clock or a random source of its
//! own: the handlers pass `now` and an `Rng`, so splits are reproducible
//! under test and the module replicates exactly what was drawn.

use rand::Rng;

/// The latest time accepted (`NOW`), 9999-12-31T23:59:59.999Z in unix ms:
/// exact in Lua numbers too, so the twins agree.
pub const MAX_TIME_MS: i64 = 253_402_300_799_999;
/// The longest TTL accepted, 100 years in seconds.
pub const MAX_TTL_S: i64 = 3_153_600_000;
/// The largest `redpacket-max-count` (the config's own range too): SPLIT
/// draws and pushes every share in one call (about 0.1–0.3 µs per share),
/// so this bounds its worst case to some 10–30 ms, once per packet.
pub const MAX_COUNT_LIMIT: i64 = 100_000;
/// The largest total accepted, 2^53 − 1 cents: every amount stays exact in
/// Lua numbers and JSON clients.
pub const MAX_TOTAL: i64 = 9_007_199_254_740_991;

/// How an amount is split into shares.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// The double-mean method: each share is drawn uniformly from
    /// `[1, 2 × rest/left − 1]` cents; the last share takes the rest.
    Random,
    /// Equal shares; the remainder goes one cent at a time to the first
    /// shares.
    Equal,
}

impl Mode {
    /// Returns the mode named `RANDOM` or `EQUAL` (any case).
    pub fn parse(name: &str) -> Option<Mode> {
        if name.eq_ignore_ascii_case("RANDOM") {
            Some(Mode::Random)
        } else if name.eq_ignore_ascii_case("EQUAL") {
            Some(Mode::Equal)
        } else {
            None
        }
    }
}

/// Why a split is refused (the message follows `ERR redpacket: `).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SplitError {
    /// Occurs when the count is below 1 or above `redpacket-max-count`.
    Count { max: i64 },
    /// Occurs when there are fewer cents than shares.
    TotalBelowCount,
}

impl SplitError {
    /// Returns the text after `ERR redpacket: `.
    pub fn message(&self) -> String {
        match self {
            SplitError::Count { max } => format!("count must be from 1 to {max}"),
            SplitError::TotalBelowCount => "total must be at least count cents".into(),
        }
    }
}

/// Checks a split request: `1 ≤ count ≤ max_count` and `total ≥ count`
/// (every share gets at least one cent).
pub fn validate_split(total: i64, count: i64, max_count: i64) -> Result<(), SplitError> {
    if count < 1 || count > max_count {
        return Err(SplitError::Count { max: max_count });
    }
    if total < count {
        return Err(SplitError::TotalBelowCount);
    }
    Ok(())
}

/// Returns the largest share the double-mean method may draw with `rest`
/// cents left for `left` shares (`rest ≥ left ≥ 2`): `2 × rest/left − 1`
/// (integer division), never so much that a later share would get nothing.
pub fn draw_bound(rest: i64, left: i64) -> i64 {
    let double_mean = (2 * rest as i128 / left as i128) as i64 - 1;
    double_mean.min(rest - (left - 1)).max(1)
}

/// Splits `total` cents into `count` shares in `mode`.
///
/// Expects a request that passed [`validate_split`]. The shares sum to
/// `total` exactly and each is at least 1 cent.
pub fn split(total: i64, count: i64, mode: Mode, rng: &mut impl Rng) -> Vec<i64> {
    match mode {
        Mode::Random => split_random(total, count, rng),
        Mode::Equal => split_equal(total, count),
    }
}

/// The double-mean method: share `i` is uniform in `[1, draw_bound]`, the
/// last share takes the rest. Every position has the same expected share,
/// `total / count`.
pub fn split_random(total: i64, count: i64, rng: &mut impl Rng) -> Vec<i64> {
    let mut shares = Vec::with_capacity(count.max(0) as usize);
    let mut rest = total;
    for i in 0..count {
        let left = count - i;
        let share = if left == 1 {
            rest
        } else {
            rng.gen_range(1..=draw_bound(rest, left))
        };
        shares.push(share);
        rest -= share;
    }
    shares
}

/// Equal shares of `total / count`; the first `total % count` shares get
/// one cent more.
pub fn split_equal(total: i64, count: i64) -> Vec<i64> {
    let base = total / count;
    let extra = total % count;
    (0..count).map(|i| base + i64::from(i < extra)).collect()
}

/// Returns the unix-ms at which a packet split at `now` with `ttl_s`
/// seconds closes, or `None` when that does not fit in an `i64`.
pub fn expires_at(now: i64, ttl_s: i64) -> Option<i64> {
    ttl_s.checked_mul(1000).and_then(|ms| now.checked_add(ms))
}

/// The state of a packet as `B:meta` records it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    pub total: i64,
    pub count: i64,
    /// True after REFUND.
    pub refunded: bool,
    /// Unix-ms from which grabs are refused; 0 for never.
    pub expires: i64,
    /// Cents still in the pool: `total` at SPLIT, less each share grabbed,
    /// 0 after REFUND. A running total, so INFO and REFUND are O(1).
    pub left_cents: i64,
}

/// Parsers of stored values, each `None` for a value the module never
/// writes (the command then names the key and field in its error).
pub mod parse {
    use super::*;

    fn int(v: &[u8]) -> Option<i64> {
        crate::args::parse_i64_fast(v)
    }

    /// `total`: 1 to 2^53 − 1 cents.
    pub fn total(v: &[u8]) -> Option<i64> {
        int(v).filter(|t| (1..=MAX_TOTAL).contains(t))
    }

    /// `count`: at least one share.
    pub fn count(v: &[u8]) -> Option<i64> {
        int(v).filter(|&c| c >= 1)
    }

    /// `expires`: a unix-ms instant, or 0 for never.
    pub fn expires(v: &[u8]) -> Option<i64> {
        int(v).filter(|e| (0..=MAX_TIME_MS).contains(e))
    }

    /// `left_cents`: a non-negative amount, at most the largest total
    /// (SPLIT never writes more; the Lua twins could not hold more exactly).
    pub fn cents(v: &[u8]) -> Option<i64> {
        int(v).filter(|c| (0..=MAX_TOTAL).contains(c))
    }

    /// A share in `B:pool` or `B:grabbed`: at least one cent, at most the
    /// largest total.
    pub fn share(v: &[u8]) -> Option<i64> {
        int(v).filter(|c| (1..=MAX_TOTAL).contains(c))
    }

    /// `state`: `open` or `closed`; returns true when closed (refunded).
    pub fn refunded(v: &[u8]) -> Option<bool> {
        match v {
            b"open" => Some(false),
            b"closed" => Some(true),
            _ => None,
        }
    }
}

impl Meta {
    /// Returns true when the packet takes no more grabs at `now`: refunded,
    /// or past its expiry.
    pub fn closed_at(&self, now: i64) -> bool {
        self.refunded || (self.expires > 0 && now >= self.expires)
    }

    /// Returns the `state` INFO shows at `now`.
    pub fn state_at(&self, now: i64) -> &'static str {
        if self.closed_at(now) {
            STATE_CLOSED
        } else {
            STATE_OPEN
        }
    }
}

/// `state` of a packet that takes grabs.
pub const STATE_OPEN: &str = "open";
/// `state` of a refunded packet.
pub const STATE_CLOSED: &str = "closed";

/// The outcome of a grab, in the order the checks are made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grab {
    /// No such packet.
    NoSuch,
    /// The user already holds this share.
    Already(i64),
    /// Refunded or expired.
    Closed,
    /// Every share is gone.
    Empty,
    /// The user won this share just now.
    Won(i64),
}

impl Grab {
    /// Returns the status word of the reply.
    pub fn status(&self) -> &'static str {
        match self {
            Grab::NoSuch => "NOSUCH",
            Grab::Already(_) => "ALREADY",
            Grab::Closed => "CLOSED",
            Grab::Empty => "EMPTY",
            Grab::Won(_) => "OK",
        }
    }

    /// Returns the cents of the reply (0 when nothing is held).
    pub fn cents(&self) -> i64 {
        match self {
            Grab::Already(c) | Grab::Won(c) => *c,
            _ => 0,
        }
    }
}

/// Decides a grab from what is stored, before anything is popped:
/// `Ok(outcome)` when the answer is known, `Err(())` when the next share
/// must be taken from the pool (the caller then gets `Won` or `Empty`).
///
/// `now` is `None` when the clock must not be consulted: a grab re-executed
/// on a replica or from the AOF, which the master already found open.
#[allow(clippy::result_unit_err)]
pub fn precheck_grab(meta: Option<&Meta>, held: Option<i64>, now: Option<i64>) -> Result<Grab, ()> {
    let Some(meta) = meta else {
        return Ok(Grab::NoSuch);
    };
    if let Some(cents) = held {
        return Ok(Grab::Already(cents));
    }
    let closed = match now {
        Some(now) => meta.closed_at(now),
        None => meta.refunded,
    };
    if closed {
        return Ok(Grab::Closed);
    }
    Err(())
}

// ---- plans: what a write command writes, decided before it writes ----

/// Why a write command is refused once its packet was read; the command
/// turns it into its error (naming the key and field) and writes nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// SPLIT's arguments are refused ([`validate_split`]).
    Split(SplitError),
    /// SPLIT finds one of the packet's keys already there.
    Exists,
    /// The share at the head of `B:pool` is not one SPLIT writes.
    CorruptPool,
    /// `B:meta`'s `left_cents` is less than the share at the pool's head.
    CorruptLeft,
}

/// What SPLIT writes: every share pushed into `B:pool` in one `RPUSH`,
/// the fields of `B:meta` in this order (the ones GRAB reads on every call
/// first: a small hash is a listpack, searched from its head), then, when
/// `expires` is not 0, that absolute expiry on both keys. The reply is
/// the count of shares.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitPlan {
    pub shares: Vec<i64>,
    pub meta: [(&'static str, String); 5],
    pub expires: i64,
}

/// Plans a SPLIT of `total` cents into `count` shares in `mode`, closing at
/// `expires` (0: never), for a packet whose keys `exist` or not; the
/// shares are drawn from `rng`. Refused, with nothing to write, when the
/// request is invalid or the packet exists.
pub fn plan_split(
    total: i64,
    count: i64,
    max_count: i64,
    mode: Mode,
    expires: i64,
    exists: bool,
    rng: &mut impl Rng,
) -> Result<SplitPlan, Refusal> {
    validate_split(total, count, max_count).map_err(Refusal::Split)?;
    if exists {
        return Err(Refusal::Exists);
    }
    let shares = split(total, count, mode, rng);
    let meta = [
        ("expires", expires.to_string()),
        ("left_cents", total.to_string()),
        ("state", STATE_OPEN.to_string()),
        ("total", total.to_string()),
        ("count", count.to_string()),
    ];
    Ok(SplitPlan {
        shares,
        meta,
        expires,
    })
}

/// What a grab that reached the pool does (the packet exists, is open, and
/// the user holds no share yet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TakePlan {
    /// The pool is empty: reply `EMPTY 0`, write nothing.
    Empty,
    /// Pop the head share, `cents`, into `B:grabbed` for the user, and set
    /// `left_cents` to `left`; when `B:grabbed` is born now and the packet
    /// expires, give it that instant, `expire_grabbed`.
    Take {
        cents: i64,
        left: i64,
        expire_grabbed: Option<i64>,
    },
}

/// Plans the last step of a grab from the share at the head of the pool
/// (`None` for an empty pool), the running total `left` (`left_cents`),
/// whether `B:grabbed` exists and the packet's expiry. A share SPLIT never
/// writes, or more than `left`, is refused: the handler, which popped it to
/// read it, puts it back, and nothing else is written.
pub fn plan_take(
    left: i64,
    head: Option<&[u8]>,
    has_grabbed: bool,
    expires: i64,
) -> Result<TakePlan, Refusal> {
    let Some(head) = head else {
        return Ok(TakePlan::Empty);
    };
    let cents = parse::share(head).ok_or(Refusal::CorruptPool)?;
    let left = left
        .checked_sub(cents)
        .filter(|&r| r >= 0)
        .ok_or(Refusal::CorruptLeft)?;
    Ok(TakePlan::Take {
        cents,
        left,
        expire_grabbed: (!has_grabbed && expires > 0).then_some(expires),
    })
}

/// What REFUND does: return `cents` to the sender, and when `close`,
/// unlink `B:pool` and record the packet closed with nothing left (0 cents
/// and no write for an unknown or already refunded packet).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RefundPlan {
    pub cents: i64,
    pub close: bool,
}

/// Plans a REFUND of the packet whose `B:meta` reads `meta` (`None`: no
/// packet).
pub fn plan_refund(meta: Option<&Meta>) -> RefundPlan {
    match meta {
        Some(m) if !m.refunded => RefundPlan {
            cents: m.left_cents,
            close: true,
        },
        _ => RefundPlan {
            cents: 0,
            close: false,
        },
    }
}

#[cfg(test)]
mod tests {
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    use super::*;

    #[test]
    fn validate_refuses_bad_counts_and_small_totals() {
        assert_eq!(
            validate_split(100, 0, 10_000),
            Err(SplitError::Count { max: 10_000 })
        );
        assert_eq!(
            validate_split(100, -3, 10_000),
            Err(SplitError::Count { max: 10_000 })
        );
        assert_eq!(
            validate_split(100_000, 10_001, 10_000),
            Err(SplitError::Count { max: 10_000 })
        );
        assert_eq!(
            validate_split(9, 10, 10_000),
            Err(SplitError::TotalBelowCount)
        );
        assert_eq!(
            validate_split(-1, 1, 10_000),
            Err(SplitError::TotalBelowCount)
        );
        assert_eq!(validate_split(10, 10, 10_000), Ok(()));
        assert_eq!(validate_split(MAX_TOTAL, 10_000, 10_000), Ok(()));
        assert_eq!(
            SplitError::Count { max: 5 }.message(),
            "count must be from 1 to 5"
        );
    }

    #[test]
    fn random_split_sums_exactly_and_gives_every_share_a_cent() {
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..20_000 {
            let count = rng.gen_range(1..=200i64);
            let total = match rng.gen_range(0..4) {
                0 => count,
                1 => count + rng.gen_range(0..10),
                2 => rng.gen_range(count..=1_000_000),
                _ => rng.gen_range(count..=i64::MAX / 2),
            };
            let shares = split_random(total, count, &mut rng);
            assert_eq!(shares.len() as i64, count);
            assert_eq!(
                shares.iter().map(|&s| s as i128).sum::<i128>(),
                total as i128
            );
            assert!(shares.iter().all(|&s| s >= 1), "{total} {count} {shares:?}");
        }
    }

    #[test]
    fn random_draws_stay_within_the_double_mean_bound() {
        let mut rng = StdRng::seed_from_u64(11);
        for _ in 0..5_000 {
            let count = rng.gen_range(2..=100i64);
            let total = rng.gen_range(count..=100_000);
            let shares = split_random(total, count, &mut rng);
            let mut rest = total;
            for (i, &s) in shares.iter().enumerate() {
                let left = count - i as i64;
                if left > 1 {
                    let bound = 2 * rest / left - 1;
                    assert!(
                        s >= 1 && s <= bound,
                        "share {s} above {bound} (rest {rest}, left {left})"
                    );
                    assert!(rest - s >= left - 1, "later shares starved");
                }
                rest -= s;
            }
        }
    }

    #[test]
    fn draw_bound_never_starves_later_shares() {
        for left in 2..60i64 {
            for rest in left..left * 5 {
                let b = draw_bound(rest, left);
                assert!(b >= 1);
                assert!(rest - b >= left - 1, "rest {rest} left {left} bound {b}");
            }
        }
        // Huge totals do not overflow.
        assert_eq!(draw_bound(i64::MAX, 2), i64::MAX - 1);
    }

    #[test]
    fn one_share_takes_everything() {
        let mut rng = StdRng::seed_from_u64(1);
        assert_eq!(split_random(12345, 1, &mut rng), vec![12345]);
        assert_eq!(split_random(3, 3, &mut rng), vec![1, 1, 1]);
        assert_eq!(split_equal(12345, 1), vec![12345]);
    }

    #[test]
    fn equal_split_spreads_the_remainder_one_cent_at_a_time() {
        assert_eq!(split_equal(10, 3), vec![4, 3, 3]);
        assert_eq!(split_equal(11, 3), vec![4, 4, 3]);
        assert_eq!(split_equal(12, 3), vec![4, 4, 4]);
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..5_000 {
            let count = rng.gen_range(1..=500i64);
            let total = rng.gen_range(count..=10_000_000);
            let shares = split_equal(total, count);
            assert_eq!(shares.iter().sum::<i64>(), total);
            let (min, max) = (*shares.iter().min().unwrap(), *shares.iter().max().unwrap());
            assert!(max - min <= 1, "{total}/{count}: {min}..{max}");
            // The extra cents go first, one each.
            let extra = total % count;
            assert_eq!(
                shares.iter().filter(|&&s| s == min + 1).count() as i64,
                if max > min { extra } else { 0 }
            );
            assert!(shares.windows(2).all(|w| w[0] >= w[1]));
        }
    }

    #[test]
    fn every_position_gets_a_fair_share_on_average() {
        // 100,000 rounds of 100 yuan (10000 cents) among 10: each position's
        // mean share is within 1% of 1000 cents.
        let mut rng = StdRng::seed_from_u64(2025);
        let rounds = 100_000;
        let mut sums = [0i64; 10];
        for _ in 0..rounds {
            for (i, s) in split_random(10_000, 10, &mut rng).into_iter().enumerate() {
                sums[i] += s;
            }
        }
        let means: Vec<f64> = sums.iter().map(|&s| s as f64 / rounds as f64).collect();
        eprintln!("mean share by position: {means:?}");
        for (i, &mean) in means.iter().enumerate() {
            assert!((mean - 1000.0).abs() < 10.0, "position {i}: mean {mean}");
        }
    }

    #[test]
    fn split_is_reproducible_from_the_seed() {
        let a = split(10_000, 10, Mode::Random, &mut StdRng::seed_from_u64(5));
        let b = split(10_000, 10, Mode::Random, &mut StdRng::seed_from_u64(5));
        assert_eq!(a, b);
        assert_eq!(
            split(10, 4, Mode::Equal, &mut StdRng::seed_from_u64(5)),
            vec![3, 3, 2, 2]
        );
    }

    #[test]
    fn modes_parse_without_regard_to_case() {
        assert_eq!(Mode::parse("random"), Some(Mode::Random));
        assert_eq!(Mode::parse("EQUAL"), Some(Mode::Equal));
        assert_eq!(Mode::parse("fair"), None);
    }

    #[test]
    fn expiry_is_checked_for_overflow() {
        assert_eq!(expires_at(1_000, 60), Some(61_000));
        assert!(expires_at(MAX_TIME_MS, MAX_TTL_S).is_some());
        assert_eq!(expires_at(i64::MAX - 10, 1), None);
        assert_eq!(expires_at(0, i64::MAX), None);
    }

    #[test]
    fn stored_values_parse_and_garbage_is_refused() {
        assert_eq!(parse::total(b"10000"), Some(10_000));
        assert_eq!(parse::total(b"9007199254740992"), None);
        assert_eq!(parse::count(b"0"), None);
        assert_eq!(parse::expires(b"0"), Some(0));
        assert_eq!(parse::expires(b"-1"), None);
        assert_eq!(parse::cents(b"0"), Some(0));
        assert_eq!(parse::share(b"0"), None);
        assert_eq!(parse::share(b"-5"), None);
        assert_eq!(parse::share(b"7"), Some(7));
        // Beyond 2^53 − 1 no amount is ever written (and the twins could
        // not read one exactly): corrupt data.
        assert_eq!(parse::cents(b"9007199254740991"), Some(MAX_TOTAL));
        assert_eq!(parse::cents(b"9007199254740992"), None);
        assert_eq!(parse::share(b"9007199254740992"), None);
        assert_eq!(parse::refunded(b"closed"), Some(true));
        assert_eq!(parse::refunded(b"CLOSED"), None);
        for bad in [&b""[..], b"x", b"1.5", b" 1", b"01", b"9223372036854775808"] {
            assert_eq!(parse::total(bad), None, "{bad:?}");
            assert_eq!(parse::cents(bad), None, "{bad:?}");
            assert_eq!(parse::share(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn grab_checks_come_in_order() {
        let open = Meta {
            total: 100,
            count: 2,
            refunded: false,
            expires: 5_000,
            left_cents: 100,
        };
        let refunded = Meta {
            refunded: true,
            ..open
        };
        assert_eq!(precheck_grab(None, Some(7), Some(0)), Ok(Grab::NoSuch));
        assert_eq!(
            precheck_grab(Some(&refunded), Some(7), Some(0)),
            Ok(Grab::Already(7))
        );
        assert_eq!(
            precheck_grab(Some(&refunded), None, Some(0)),
            Ok(Grab::Closed)
        );
        assert_eq!(precheck_grab(Some(&open), None, Some(4_999)), Err(()));
        assert_eq!(
            precheck_grab(Some(&open), None, Some(5_000)),
            Ok(Grab::Closed)
        );
        let forever = Meta { expires: 0, ..open };
        assert_eq!(precheck_grab(Some(&forever), None, Some(i64::MAX)), Err(()));
        // Without a clock (re-executed from the master) only REFUND closes.
        assert_eq!(precheck_grab(Some(&open), None, None), Err(()));
        assert_eq!(precheck_grab(Some(&refunded), None, None), Ok(Grab::Closed));
        assert_eq!(open.state_at(0), "open");
        assert_eq!(open.state_at(5_000), "closed");
        assert_eq!(Grab::Won(5).status(), "OK");
        assert_eq!(Grab::Empty.cents(), 0);
        assert_eq!(Grab::Already(9).cents(), 9);
    }

    #[test]
    fn plan_split_writes_shares_meta_and_expiry() {
        let mut rng = StdRng::seed_from_u64(7);
        let p = plan_split(100, 3, 10_000, Mode::Equal, 5_000, false, &mut rng).unwrap();
        assert_eq!(p.shares, vec![34, 33, 33]);
        let fields: Vec<(&str, &str)> = p.meta.iter().map(|(f, v)| (*f, v.as_str())).collect();
        assert_eq!(
            fields,
            [
                ("expires", "5000"),
                ("left_cents", "100"),
                ("state", "open"),
                ("total", "100"),
                ("count", "3")
            ]
        );
        assert_eq!(p.expires, 5_000);
        let p = plan_split(1_000, 7, 10_000, Mode::Random, 0, false, &mut rng).unwrap();
        assert_eq!(p.shares.iter().sum::<i64>(), 1_000);
        assert_eq!(p.expires, 0);
    }

    #[test]
    fn plan_split_refusals_write_nothing() {
        let mut rng = StdRng::seed_from_u64(7);
        // An error is a plan with no writes: there is no plan at all.
        assert_eq!(
            plan_split(100, 3, 10_000, Mode::Equal, 0, true, &mut rng),
            Err(Refusal::Exists)
        );
        assert_eq!(
            plan_split(1, 2, 10_000, Mode::Equal, 0, false, &mut rng),
            Err(Refusal::Split(SplitError::TotalBelowCount))
        );
        assert_eq!(
            plan_split(100, 0, 10_000, Mode::Random, 0, true, &mut rng),
            Err(Refusal::Split(SplitError::Count { max: 10_000 }))
        );
    }

    #[test]
    fn plan_take_pops_a_valid_share_only() {
        assert_eq!(plan_take(100, None, false, 9), Ok(TakePlan::Empty));
        assert_eq!(
            plan_take(100, Some(b"34"), false, 9),
            Ok(TakePlan::Take {
                cents: 34,
                left: 66,
                expire_grabbed: Some(9)
            })
        );
        // B:grabbed exists already, or the packet never expires: its
        // expiry is left alone.
        assert_eq!(
            plan_take(34, Some(b"34"), true, 9),
            Ok(TakePlan::Take {
                cents: 34,
                left: 0,
                expire_grabbed: None
            })
        );
        assert_eq!(
            plan_take(34, Some(b"34"), false, 0),
            Ok(TakePlan::Take {
                cents: 34,
                left: 0,
                expire_grabbed: None
            })
        );
        for bad in [&b"x"[..], b"0", b"-5", b"", b"9007199254740992", b"1.5"] {
            assert_eq!(
                plan_take(100, Some(bad), false, 0),
                Err(Refusal::CorruptPool)
            );
        }
        assert_eq!(
            plan_take(5, Some(b"34"), false, 0),
            Err(Refusal::CorruptLeft)
        );
    }

    #[test]
    fn plan_refund_closes_an_open_packet_once() {
        let open = Meta {
            total: 100,
            count: 3,
            refunded: false,
            expires: 0,
            left_cents: 66,
        };
        assert_eq!(
            plan_refund(Some(&open)),
            RefundPlan {
                cents: 66,
                close: true
            }
        );
        let closed = Meta {
            refunded: true,
            left_cents: 0,
            ..open
        };
        let nothing = RefundPlan {
            cents: 0,
            close: false,
        };
        assert_eq!(plan_refund(Some(&closed)), nothing);
        assert_eq!(plan_refund(None), nothing);
    }
}
