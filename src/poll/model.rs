//! POLL's pure logic: rules, calendar days, ballot records, the per-user
//! vote list and write-back deltas. No Redis types here.

/// How many votes a user may cast.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// One vote per user in the poll.
    Once,
    /// One vote per user per calendar day (at UTC+TZ).
    Daily,
    /// Up to `maxvotes` distinct candidates per user, once each.
    Multi,
}

impl Mode {
    /// Returns the keyword as stored in `B:meta` and shown by `POLL.INFO`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Once => "ONCE",
            Mode::Daily => "DAILY",
            Mode::Multi => "MULTI",
        }
    }

    /// Parses a keyword (any case); None when unknown.
    pub fn parse(s: &[u8]) -> Option<Mode> {
        [Mode::Once, Mode::Daily, Mode::Multi]
            .into_iter()
            .find(|m| m.as_str().as_bytes().eq_ignore_ascii_case(s))
    }
}

/// The default MAXVOTES of MULTI polls.
pub const DEFAULT_MAXVOTES: i64 = 3;
/// The largest MAXVOTES accepted.
pub const MAX_MAXVOTES: i64 = 1000;
/// The most candidates CREATE accepts.
pub const MAX_CANDIDATES: i64 = 100_000;
/// The largest timestamp accepted (9999-12-31T23:59:59.999Z), so that every
/// time is exact in a Lua number too.
pub const MAX_TIME_MS: i64 = 253_402_300_799_999;
/// The largest TZ offset in minutes (±24 h).
pub const MAX_TZ_MINUTES: i64 = 1440;
/// The largest TTL in seconds (100 years).
pub const MAX_TTL_S: i64 = 3_153_600_000;

/// A poll's rules, as kept in `B:meta`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rules {
    pub mode: Mode,
    pub maxvotes: i64,
    /// Opening time (unix ms), 0 for none.
    pub start: i64,
    /// Closing time (unix ms, exclusive), 0 for none.
    pub end: i64,
    pub tz_minutes: i64,
    /// Only the candidates given at CREATE may receive votes.
    pub closed: bool,
    /// Absolute expiry (unix ms) of every key of the poll, 0 for none.
    pub expires: i64,
}

impl Default for Rules {
    /// The rules of a poll that was never created: ONCE, any candidate, no
    /// window, no TTL.
    fn default() -> Self {
        Rules {
            mode: Mode::Once,
            maxvotes: 1,
            start: 0,
            end: 0,
            tz_minutes: 0,
            closed: false,
            expires: 0,
        }
    }
}

impl Rules {
    /// Returns the packed form kept in `B:meta`'s `rules` field:
    /// `<MODE> <maxvotes> <start> <end> <tz> <closed 0|1> <expires>`.
    pub fn pack(&self) -> String {
        format!(
            "{} {} {} {} {} {} {}",
            self.mode.as_str(),
            self.maxvotes,
            self.start,
            self.end,
            self.tz_minutes,
            self.closed as i64,
            self.expires
        )
    }

    /// Parses [`Rules::pack`]'s form; None when malformed or when a value
    /// is outside what CREATE accepts (the field was edited by hand).
    pub fn unpack(s: &[u8]) -> Option<Rules> {
        // Read on every vote: split by hand, no UTF-8 pass, no allocation.
        let mut parts = s.split(|&c| c == b' ');
        let mode = match parts.next()? {
            b"ONCE" => Mode::Once,
            b"DAILY" => Mode::Daily,
            b"MULTI" => Mode::Multi,
            _ => return None,
        };
        let mut n = [0i64; 6];
        for v in n.iter_mut() {
            *v = parse_int(parts.next()?)?;
        }
        if parts.next().is_some() {
            return None;
        }
        let [maxvotes, start, end, tz_minutes, closed, expires] = n;
        let max_votes = if mode == Mode::Multi { MAX_MAXVOTES } else { 1 };
        let time = 0..=MAX_TIME_MS;
        let valid = (1..=max_votes).contains(&maxvotes)
            && (mode == Mode::Multi || maxvotes == 1)
            && time.contains(&start)
            && time.contains(&end)
            && (-MAX_TZ_MINUTES..=MAX_TZ_MINUTES).contains(&tz_minutes)
            && (closed == 0 || closed == 1)
            && (0..=MAX_TIME_MS + MAX_TTL_S * 1000).contains(&expires);
        valid.then_some(Rules {
            mode,
            maxvotes,
            start,
            end,
            tz_minutes,
            closed: closed == 1,
            expires,
        })
    }

    /// Returns true when votes are accepted at `now`: `start <= now < end`.
    pub fn is_open(&self, now: i64) -> bool {
        (self.start == 0 || now >= self.start) && (self.end == 0 || now < self.end)
    }
}

/// Returns the calendar day `yyyymmdd` of `now_ms` at UTC+`tz_minutes`.
pub fn day_of(now_ms: i64, tz_minutes: i64) -> i64 {
    let local = now_ms + tz_minutes * 60_000;
    let days = local.div_euclid(86_400_000);
    let (y, m, d) = civil_from_days(days);
    y * 10_000 + m * 100 + d
}

/// Returns (year, month, day) of a day count since 1970-01-01 (proleptic
/// Gregorian; Howard Hinnant's days-to-civil algorithm).
pub fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

/// A short byte string kept on the stack (ballot fields and records).
pub type Bytes = smallvec::SmallVec<[u8; 96]>;

/// Returns the dedup member (a field of `B:voted`) of a vote.
pub fn ballot_field(mode: Mode, user: &[u8], candidate: &[u8], day: i64) -> Bytes {
    let mut f = Bytes::from_slice(user);
    match mode {
        Mode::Once => {}
        Mode::Daily => {
            f.push(b':');
            push_int(&mut f, day);
        }
        Mode::Multi => {
            f.push(b':');
            f.extend_from_slice(candidate);
        }
    }
    f
}

/// Returns the audit record of a ballot: `<candidate>:<unix-ms>`.
pub fn ballot_value(candidate: &[u8], now: i64) -> Bytes {
    let mut v = Bytes::from_slice(candidate);
    v.push(b':');
    push_int(&mut v, now);
    v
}

/// Appends the decimal form of `n` without allocating.
fn push_int(out: &mut Bytes, n: i64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    let neg = n < 0;
    let mut m = n.unsigned_abs();
    loop {
        i -= 1;
        buf[i] = b'0' + (m % 10) as u8;
        m /= 10;
        if m == 0 {
            break;
        }
    }
    if neg {
        out.push(b'-');
    }
    out.extend_from_slice(&buf[i..]);
}

/// Returns the candidate of an audit record `<candidate>:<unix-ms>`
/// (everything before the last `:`, so candidates may contain colons);
/// None when the record is not of that form (edited by hand).
pub fn ballot_candidate(value: &[u8]) -> Option<&[u8]> {
    let i = value.iter().rposition(|&c| c == b':')?;
    let t = parse_int(&value[i + 1..])?;
    (i > 0 && (0..=MAX_TIME_MS).contains(&t)).then(|| &value[..i])
}

/// The largest board count: 2^53 − 1, beyond which doubles stop being
/// exact (a vote past it is refused as an overflow).
pub const MAX_VOTES: f64 = 9_007_199_254_740_991.0;

/// Returns a board count as an integer; None for a score the module never
/// writes (a fraction, or beyond 2^53 where doubles stop being exact).
pub fn votes_of(score: f64) -> Option<i64> {
    (score.fract() == 0.0 && score.abs() <= MAX_VOTES).then_some(score as i64)
}

/// Returns true when a count that became `score` after a vote went past
/// [`MAX_VOTES`]: the vote must be refused, or every read of the board
/// would refuse it.
pub fn vote_overflows(score: f64) -> bool {
    score > MAX_VOTES
}

/// Parses a base-10 integer the way Redis's `string2ll` does (optional
/// `-`, digits, no `+`, no spaces, no leading zeros, no `-0`), without a
/// UTF-8 pass: the rules are read on every vote.
pub fn parse_int(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first()? {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 19 || (digits[0] == b'0' && (digits.len() > 1 || neg)) {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        let d = (d - b'0') as i64;
        // Accumulate downwards so that i64::MIN parses too.
        v = v.checked_mul(10)?.checked_sub(d)?;
    }
    if neg {
        Some(v)
    } else {
        v.checked_neg()
    }
}

/// Parses a MULTI user's vote list (`B:uservotes`, a JSON array of
/// strings); None when it is anything else (edited by hand).
pub fn parse_user_votes(json: &[u8]) -> Option<Vec<String>> {
    serde_json::from_slice::<Vec<String>>(json).ok()
}

/// Returns the JSON array of a MULTI user's votes.
pub fn format_user_votes(votes: &[String]) -> String {
    serde_json::to_string(votes).unwrap_or_else(|_| "[]".into())
}

/// Returns the write-back deltas: for every candidate of the frozen
/// snapshot (in its given order) then every acknowledged one missing from
/// it, `frozen - acknowledged`, leaving out zero changes.
pub fn deltas(frozen: &[(Vec<u8>, i64)], acked: &[(Vec<u8>, i64)]) -> Vec<(Vec<u8>, i64)> {
    let base: std::collections::HashMap<&[u8], i64> =
        acked.iter().map(|(c, n)| (c.as_slice(), *n)).collect();
    let mut out = Vec::new();
    for (c, n) in frozen {
        let d = n - base.get(c.as_slice()).copied().unwrap_or(0);
        if d != 0 {
            out.push((c.clone(), d));
        }
    }
    let in_frozen: std::collections::HashSet<&[u8]> =
        frozen.iter().map(|(c, _)| c.as_slice()).collect();
    for (c, n) in acked {
        if !in_frozen.contains(c.as_slice()) && *n != 0 {
            out.push((c.clone(), -n));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn a_vote_past_2_53_overflows() {
        assert!(!vote_overflows(9_007_199_254_740_990.0 + 1.0));
        assert!(vote_overflows(9_007_199_254_740_991.0 + 1.0));
        assert!(vote_overflows(1e300 + 1.0));
        assert!(!vote_overflows(1.0));
        assert_eq!(votes_of(MAX_VOTES), Some(9_007_199_254_740_991));
        assert_eq!(votes_of(MAX_VOTES + 1.0), None);
    }

    #[test]
    fn days_match_known_dates() {
        assert_eq!(day_of(0, 0), 19700101);
        assert_eq!(day_of(1_735_689_599_999, 0), 20241231);
        assert_eq!(day_of(1_735_689_600_000, 0), 20250101);
        // 2025-01-01T00:30Z is still 2024-12-31 in New York (UTC-5h).
        assert_eq!(day_of(1_735_691_400_000, -300), 20241231);
        // 2024-12-31T16:00Z is already 2025-01-01 in Beijing (UTC+8h).
        assert_eq!(day_of(1_735_660_800_000, 480), 20250101);
        assert_eq!(day_of(951_782_400_000, 0), 20000229);
        assert_eq!(day_of(-1, 0), 19691231);
        assert_eq!(day_of(MAX_TIME_MS, 0), 99991231);
    }

    #[test]
    fn days_advance_one_at_a_time() {
        let mut prev = day_of(0, 0);
        for d in 1..200_000i64 {
            let cur = day_of(d * 86_400_000, 0);
            assert!(cur > prev, "{prev} -> {cur}");
            let (m, dd) = ((cur / 100) % 100, cur % 100);
            assert!((1..=12).contains(&m) && (1..=31).contains(&dd));
            prev = cur;
        }
    }

    #[test]
    fn ballot_fields_follow_the_spec() {
        assert_eq!(&ballot_field(Mode::Once, b"u1", b"c", 20250101)[..], b"u1");
        assert_eq!(
            &ballot_field(Mode::Daily, b"u1", b"c", 20250101)[..],
            b"u1:20250101"
        );
        assert_eq!(
            &ballot_field(Mode::Multi, b"u1", b"c", 20250101)[..],
            b"u1:c"
        );
        assert_eq!(&ballot_value(b"c", -12)[..], b"c:-12");
        assert_eq!(&ballot_value(b"c", 0)[..], b"c:0");
        assert_eq!(&ballot_value(b"c", i64::MIN)[..], b"c:-9223372036854775808");
    }

    #[test]
    fn audit_record_round_trips_candidates_with_colons() {
        let v = ballot_value(b"a:b", 1700000000000);
        assert_eq!(&v[..], b"a:b:1700000000000");
        assert_eq!(ballot_candidate(&v), Some(&b"a:b"[..]));
        for bad in [&b"nocolon"[..], b"c:", b"c:x", b":5", b"c:-1", b"c:01"] {
            assert_eq!(
                ballot_candidate(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn user_votes_round_trip() {
        let v = vec!["x".to_string(), "y:z".to_string(), "\"q\"".to_string()];
        assert_eq!(parse_user_votes(format_user_votes(&v).as_bytes()), Some(v));
        for bad in [
            &b"not json"[..],
            b"",
            b"{}",
            b"[1]",
            b"[\"a\",null]",
            b"\"a\"",
        ] {
            assert_eq!(parse_user_votes(bad), None);
        }
        assert_eq!(parse_user_votes(b"[]"), Some(vec![]));
    }

    #[test]
    fn rules_pack_round_trips() {
        let r = Rules {
            mode: Mode::Multi,
            maxvotes: 5,
            start: 1,
            end: 2,
            tz_minutes: -300,
            closed: true,
            expires: 9,
        };
        assert_eq!(r.pack(), "MULTI 5 1 2 -300 1 9");
        assert_eq!(Rules::unpack(r.pack().as_bytes()), Some(r));
        assert_eq!(Rules::unpack(b"MULTI 5 1"), None);
        assert_eq!(Rules::unpack(b"ONCE x 0 0 0 0 0"), None);
        assert!(Rules::unpack(b"ONCE 1 0 0 0 0 0").is_some());
        for bad in [
            &b"once 1 0 0 0 0 0"[..],
            b"ONCE 2 0 0 0 0 0",
            b"MULTI 0 0 0 0 0 0",
            b"MULTI 1001 0 0 0 0 0",
            b"ONCE 1 -1 0 0 0 0",
            b"ONCE 1 0 0 1441 0 0",
            b"ONCE 1 0 0 0 2 0",
            b"ONCE 1 0 0 0 0 -5",
            b"ONCE 1 0 0 0 0 0 ",
            b"ONCE  1 0 0 0 0 0",
            b"",
        ] {
            assert_eq!(
                Rules::unpack(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn integers_parse_like_redis() {
        assert_eq!(parse_int(b"0"), Some(0));
        assert_eq!(parse_int(b"-12"), Some(-12));
        assert_eq!(parse_int(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_int(b"-9223372036854775808"), Some(i64::MIN));
        for bad in [
            &b""[..],
            b"-",
            b"+1",
            b"01",
            b"-0",
            b"1 ",
            b"9223372036854775808",
            b"1a",
        ] {
            assert_eq!(parse_int(bad), None);
        }
        let mut rng = rand::rngs::StdRng::seed_from_u64(3);
        for _ in 0..100_000 {
            let n: i64 = rng.gen::<i64>() >> rng.gen_range(0..63);
            assert_eq!(parse_int(n.to_string().as_bytes()), Some(n));
        }
        assert_eq!(votes_of(3.0), Some(3));
        assert_eq!(votes_of(-3.0), Some(-3));
        assert_eq!(votes_of(0.5), None);
        assert_eq!(votes_of(f64::INFINITY), None);
        assert_eq!(votes_of(1e300), None);
    }

    #[test]
    fn window_is_half_open() {
        let r = Rules {
            start: 100,
            end: 200,
            ..Rules::default()
        };
        assert!(!r.is_open(99));
        assert!(r.is_open(100));
        assert!(r.is_open(199));
        assert!(!r.is_open(200));
        assert!(Rules::default().is_open(0));
    }

    #[test]
    fn deltas_apply_to_the_base_give_the_snapshot() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        for _ in 0..500 {
            let names: Vec<Vec<u8>> = (0..8).map(|i| format!("c{i}").into_bytes()).collect();
            let mut pick = |p: f64, max: i64| -> Vec<(Vec<u8>, i64)> {
                let mut out = Vec::new();
                for c in &names {
                    if rng.gen_bool(p) {
                        out.push((c.clone(), rng.gen_range(0..max)));
                    }
                }
                out
            };
            let acked = pick(0.6, 50);
            let frozen = pick(0.8, 80);
            let d = deltas(&frozen, &acked);
            let mut state: std::collections::BTreeMap<Vec<u8>, i64> =
                acked.iter().cloned().collect();
            for (c, x) in &d {
                assert_ne!(*x, 0);
                *state.entry(c.clone()).or_default() += x;
            }
            state.retain(|_, v| *v != 0);
            let want: std::collections::BTreeMap<Vec<u8>, i64> =
                frozen.iter().filter(|&(_, v)| *v != 0).cloned().collect();
            assert_eq!(state, want);
        }
    }
}
