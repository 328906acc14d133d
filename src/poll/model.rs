//! POLL's pure logic: rules, calendar days, ballot records, the per-user
//! vote list and write-back deltas. No Redis types here. The plans of
//! POLL.VOTE and POLL.REVOKE are in [`vote`].

mod sync;
mod vote;
pub use sync::{
    plan_sync, plan_syncack, sort_frozen, sync_deltas, EpochOverflow, Frozen, SyncStart,
};
pub use vote::{plan_revoke, plan_vote, RevokePlan, VotePlan, VoteRefusal};

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

// ---- POLL.CREATE: validate, then plan ----

/// POLL.CREATE's arguments, parsed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Create {
    pub mode: Mode,
    /// As given (`None`: the mode's default).
    pub maxvotes: Option<i64>,
    /// `CANDIDATES n c1 … cn`, as given (repeats kept).
    pub candidates: Option<Vec<Vec<u8>>>,
    pub start: i64,
    pub end: i64,
    pub tz: i64,
    /// Seconds, 0 for none.
    pub ttl: i64,
}

impl Default for Create {
    fn default() -> Self {
        Create {
            mode: Mode::Once,
            maxvotes: None,
            candidates: None,
            start: 0,
            end: 0,
            tz: 0,
            ttl: 0,
        }
    }
}

/// Why POLL.CREATE is refused (the text after `ERR poll: `, where it is
/// POLL's own); nothing is written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CreateRefusal {
    MaxvotesNeedsMulti,
    ColonInMulti,
    NotUtf8InMulti,
    StartNotBeforeEnd,
    /// One of the poll's keys exists already (and is not the same shard
    /// created again with the same rules).
    Exists,
    /// The shard's record says it is shard `have.1` of `have.0` shards.
    CountsDisagree {
        have: (u32, u32),
    },
}

impl CreateRefusal {
    /// Returns the text after `ERR poll: ` (not for
    /// [`CreateRefusal::CountsDisagree`], whose wording is the spread
    /// scope's).
    pub fn message(&self) -> &'static str {
        match self {
            CreateRefusal::MaxvotesNeedsMulti => "MAXVOTES needs MODE MULTI",
            CreateRefusal::ColonInMulti => "candidate must not contain ':' in MODE MULTI",
            CreateRefusal::NotUtf8InMulti => "candidate must be valid UTF-8 in MODE MULTI",
            CreateRefusal::StartNotBeforeEnd => "START must be before END",
            CreateRefusal::Exists | CreateRefusal::CountsDisagree { .. } => "poll already exists",
        }
    }
}

impl Create {
    /// Checks the arguments against each other, before any key is read.
    pub fn validate(&self) -> Result<(), CreateRefusal> {
        if self.maxvotes.is_some() && self.mode != Mode::Multi {
            return Err(CreateRefusal::MaxvotesNeedsMulti);
        }
        let cands = self.candidates.iter().flatten();
        if self.mode == Mode::Multi && cands.clone().any(|c| c.contains(&b':')) {
            return Err(CreateRefusal::ColonInMulti);
        }
        if self.mode == Mode::Multi && cands.clone().any(|c| std::str::from_utf8(c).is_err()) {
            return Err(CreateRefusal::NotUtf8InMulti);
        }
        if self.start != 0 && self.end != 0 && self.start >= self.end {
            return Err(CreateRefusal::StartNotBeforeEnd);
        }
        Ok(())
    }

    /// Returns the rules this creation records, expiring at `expires`.
    pub fn rules(&self, expires: i64) -> Rules {
        Rules {
            mode: self.mode,
            maxvotes: match self.mode {
                Mode::Multi => self.maxvotes.unwrap_or(DEFAULT_MAXVOTES),
                _ => 1,
            },
            start: self.start,
            end: self.end,
            tz_minutes: self.tz,
            closed: self.candidates.is_some(),
            expires,
        }
    }

    /// Returns the distinct candidates, in the order given.
    pub fn distinct_candidates(&self) -> Vec<&[u8]> {
        let mut seen = std::collections::HashSet::new();
        self.candidates
            .iter()
            .flatten()
            .map(Vec::as_slice)
            .filter(|c| seen.insert(*c))
            .collect()
    }
}

/// What POLL.CREATE found of a shard of a spread poll whose `B:meta`
/// exists: its record (`n`, `i`; `None` when it has none), and whether its
/// rules and board are the ones asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardFound {
    pub record: Option<(u32, u32)>,
    /// The stored rules (expiry aside) equal the ones asked for.
    pub same_rules: bool,
    /// The board holds exactly the distinct candidates asked for.
    pub same_candidates: bool,
}

/// Compares the stored rules with those a creation asks for, the expiry
/// aside (a creation run again keeps the first one).
pub fn same_rules(have: &Rules, asked: &Create) -> bool {
    let want = asked.rules(have.expires);
    *have == want
}

/// Decides a creation that found some of the poll's keys, `shard` being
/// the shard `(n, i)` the call declared and what it found of it. `Ok`:
/// nothing to write, reply OK (the same shard created again).
pub fn plan_create_existing(
    declared: Option<(u32, u32)>,
    found: Option<ShardFound>,
) -> Result<(), CreateRefusal> {
    match (declared, found) {
        (Some(sh), Some(f)) => match f.record {
            Some(r) if r == sh && f.same_rules && f.same_candidates => Ok(()),
            Some(r) if r == sh => Err(CreateRefusal::Exists),
            Some(r) => Err(CreateRefusal::CountsDisagree { have: r }),
            None => Err(CreateRefusal::Exists),
        },
        _ => Err(CreateRefusal::Exists),
    }
}

/// What POLL.CREATE writes for a new poll.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CreatePlan {
    /// `NOW` + `TTL` is already past: like SET with a past PXAT, nothing is
    /// kept and nothing replicates; the reply is OK.
    BornExpired,
    /// Write `B:meta`'s fields in this order (`rules` first: every vote
    /// reads it, and a small hash is searched from its first field), add
    /// each candidate to `B:board` at 0, then give both keys the absolute
    /// expiry `expires` (0: none).
    Create {
        meta: Vec<(&'static [u8], Vec<u8>)>,
        board: Vec<Vec<u8>>,
        expires: i64,
    },
}

/// Plans a new poll (none of its keys exists) from the validated
/// arguments, the shard `(n, i)` it is when spread, the time the call runs
/// at (`now`: its `NOW`, or the clock) and the server clock (`clock`).
pub fn plan_create(args: &Create, shard: Option<(u32, u32)>, now: i64, clock: i64) -> CreatePlan {
    let expires = if args.ttl > 0 {
        now + args.ttl * 1000
    } else {
        0
    };
    if expires > 0 && expires <= clock {
        return CreatePlan::BornExpired;
    }
    let rules = args.rules(expires);
    let mut meta: Vec<(&'static [u8], Vec<u8>)> = vec![
        (b"rules", rules.pack().into_bytes()),
        (b"mode", rules.mode.as_str().into()),
        (b"maxvotes", rules.maxvotes.to_string().into_bytes()),
        (b"start", rules.start.to_string().into_bytes()),
        (b"end", rules.end.to_string().into_bytes()),
        (b"tz", rules.tz_minutes.to_string().into_bytes()),
        (b"closed", (rules.closed as i64).to_string().into_bytes()),
        (b"expires", expires.to_string().into_bytes()),
    ];
    if let Some((n, i)) = shard {
        meta.push((b"spread", n.to_string().into_bytes()));
        meta.push((b"shard", i.to_string().into_bytes()));
    }
    let board = args
        .distinct_candidates()
        .into_iter()
        .map(<[u8]>::to_vec)
        .collect();
    CreatePlan::Create {
        meta,
        board,
        expires,
    }
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

    fn cands(list: &[&str]) -> Option<Vec<Vec<u8>>> {
        Some(list.iter().map(|c| c.as_bytes().to_vec()).collect())
    }

    #[test]
    fn create_validation_refuses_each_bad_combination() {
        let ok = Create::default();
        assert_eq!(ok.validate(), Ok(()));
        let multi = Create {
            mode: Mode::Multi,
            ..Create::default()
        };
        let cases = [
            (
                Create {
                    maxvotes: Some(2),
                    ..Create::default()
                },
                CreateRefusal::MaxvotesNeedsMulti,
            ),
            (
                Create {
                    candidates: cands(&["a", "b:c"]),
                    ..multi.clone()
                },
                CreateRefusal::ColonInMulti,
            ),
            (
                Create {
                    candidates: Some(vec![b"a".to_vec(), vec![0xff]]),
                    ..multi.clone()
                },
                CreateRefusal::NotUtf8InMulti,
            ),
            (
                Create {
                    start: 5,
                    end: 5,
                    ..Create::default()
                },
                CreateRefusal::StartNotBeforeEnd,
            ),
        ];
        for (args, refusal) in cases {
            assert_eq!(args.validate(), Err(refusal.clone()), "{args:?}");
            assert!(!refusal.message().is_empty());
        }
        // ':' and bytes that are not UTF-8 are fine outside MULTI.
        let once = Create {
            candidates: Some(vec![b"a:b".to_vec(), vec![0xff]]),
            ..Create::default()
        };
        assert_eq!(once.validate(), Ok(()));
        assert_eq!(CreateRefusal::Exists.message(), "poll already exists");
    }

    type Created = (Vec<(&'static [u8], Vec<u8>)>, Vec<Vec<u8>>, i64);

    /// The writes of a plan that creates the poll.
    fn created(plan: CreatePlan) -> Created {
        match plan {
            CreatePlan::Create {
                meta,
                board,
                expires,
            } => (meta, board, expires),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn plan_create_writes_rules_first_and_each_candidate_once() {
        let args = Create {
            mode: Mode::Multi,
            maxvotes: Some(2),
            candidates: cands(&["b", "a", "b"]),
            start: 10,
            end: 20,
            tz: 60,
            ttl: 5,
        };
        let (meta, board, expires) = created(plan_create(&args, Some((4, 1)), 1_000, 1_000));
        assert_eq!(expires, 6_000);
        let meta: Vec<(&str, String)> = meta
            .iter()
            .map(|(f, v)| {
                (
                    std::str::from_utf8(f).unwrap(),
                    String::from_utf8(v.clone()).unwrap(),
                )
            })
            .collect();
        let want = [
            ("rules", "MULTI 2 10 20 60 1 6000"),
            ("mode", "MULTI"),
            ("maxvotes", "2"),
            ("start", "10"),
            ("end", "20"),
            ("tz", "60"),
            ("closed", "1"),
            ("expires", "6000"),
            ("spread", "4"),
            ("shard", "1"),
        ];
        let got: Vec<(&str, &str)> = meta.iter().map(|(f, v)| (*f, v.as_str())).collect();
        assert_eq!(got, want);
        assert_eq!(board, vec![b"b".to_vec(), b"a".to_vec()]);
        // The defaults: ONCE, one vote, open, no candidates, no expiry.
        let (meta, board, expires) = created(plan_create(&Create::default(), None, 1_000, 1_000));
        assert_eq!(meta[0].1, b"ONCE 1 0 0 0 0 0".to_vec());
        assert_eq!(meta.len(), 8);
        assert!(board.is_empty());
        assert_eq!(expires, 0);
    }

    #[test]
    fn plan_create_of_a_poll_born_expired_writes_nothing() {
        let args = Create {
            ttl: 1,
            ..Create::default()
        };
        assert_eq!(
            plan_create(&args, None, 1_000, 2_000),
            CreatePlan::BornExpired
        );
        assert_eq!(
            plan_create(&args, None, 1_000, 3_000),
            CreatePlan::BornExpired
        );
        assert!(matches!(
            plan_create(&args, None, 1_000, 1_999),
            CreatePlan::Create { expires: 2_000, .. }
        ));
    }

    #[test]
    fn a_shard_created_again_alike_is_ok_and_anything_else_exists() {
        let same = ShardFound {
            record: Some((4, 1)),
            same_rules: true,
            same_candidates: true,
        };
        assert_eq!(plan_create_existing(Some((4, 1)), Some(same)), Ok(()));
        for other in [
            ShardFound {
                same_rules: false,
                ..same
            },
            ShardFound {
                same_candidates: false,
                ..same
            },
            ShardFound {
                record: None,
                ..same
            },
        ] {
            assert_eq!(
                plan_create_existing(Some((4, 1)), Some(other)),
                Err(CreateRefusal::Exists)
            );
        }
        assert_eq!(
            plan_create_existing(Some((8, 1)), Some(same)),
            Err(CreateRefusal::CountsDisagree { have: (4, 1) })
        );
        assert_eq!(plan_create_existing(None, None), Err(CreateRefusal::Exists));
        let stored = Create::default().rules(77);
        assert!(same_rules(&stored, &Create::default()));
        assert!(!same_rules(
            &stored,
            &Create {
                tz: 1,
                ..Create::default()
            }
        ));
    }
}
