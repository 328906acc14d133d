//! The pure rules of a lucky bag: shard placement, scores, pool-cap
//! filtering, the rules kept in `B:meta`, and the draw's merge of per-shard
//! top lists. Nothing here touches Redis, a clock or a global RNG: the
//! handlers pass the random source in, so every rule is testable and
//! deterministic under a seeded generator.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use rand::Rng;

/// Default number of shards (`SHARDS`).
pub const DEFAULT_SHARDS: u64 = 16;
/// Largest number of shards.
pub const MAX_SHARDS: u64 = 1024;
/// Default pool cap (`POOLCAP`).
pub const DEFAULT_POOLCAP: i64 = 700_000;
/// Default high score (`HIGHSCORE`), as stored in `B:meta`.
pub const DEFAULT_HIGHSCORE: &str = "0.99";
/// Largest `WINNERS`: a draw reads up to `WINNERS` members of every shard
/// while the server waits, so the bound keeps one call's work reasonable.
pub const MAX_WINNERS: i64 = 100_000;
/// Scores are `r / SCALE` with `r` in `0 .. SCALE`.
pub const SCALE: u32 = 1_000_000;
/// Score of a joined user whose task is still pending.
pub const PENDING_SCORE: f64 = -2.0;
/// Score of a user who is out of the room.
pub const AWAY_SCORE: f64 = -1.0;

/// Occurs when the command needs a bag that was never created (or expired).
pub const ERR_NO_BAG: &str = "no such bag";
/// Occurs when `CREATE` names a bag that already exists.
pub const ERR_EXISTS: &str = "bag already exists";
/// Occurs when a write other than `DRAW` reaches a drawn bag.
pub const ERR_CLOSED: &str = "bag is closed";
/// Occurs when `SHARDS` is not a power of two in `1 ..= 1024`.
pub const ERR_SHARDS: &str = "shards must be a power of two up to 1024";
/// Occurs when `WINNERS` is outside `1 ..= 100000`.
pub const ERR_WINNERS: &str = "winners must be between 1 and 100000";
/// Occurs when `HIGHSCORE` is a number outside `[0, 1]`.
pub const ERR_HIGHSCORE: &str = "highscore must be between 0 and 1";
/// Occurs when `B:meta` was edited by hand into something unreadable.
pub const ERR_CORRUPT: &str = "bag metadata is corrupt";

/// Returns the shard of a user: `user & (shards − 1)` for an integer id
/// (as Redis parses integers: optional `-`, digits, no leading zero, in
/// `i64` range; negative ids use two's complement), otherwise the low bits
/// of the 32-bit FNV-1a hash of the id's bytes. `shards` is a power of two.
pub fn shard_of(user: &[u8], shards: u64) -> u64 {
    let mask = shards.saturating_sub(1);
    match crate::args::parse_i64_plain(user) {
        Some(id) => (id as u64) & mask,
        None => u64::from(fnv1a32(user)) & mask,
    }
}

/// Returns the 32-bit FNV-1a hash of `bytes`.
pub fn fnv1a32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 2_166_136_261;
    for &b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(16_777_619);
    }
    h
}

/// Returns true when `n` is a valid shard count.
pub fn valid_shards(n: i64) -> bool {
    n >= 1 && n as u64 <= MAX_SHARDS && (n as u64).is_power_of_two()
}

/// Parses a `HIGHSCORE`: plain decimal digits with an optional fraction
/// (`1`, `0.99`, `.5`; no sign, exponent or spaces; at most 32 bytes).
/// Returns `None` for anything else (a "not a valid float" error), and
/// `Some(Err(()))` for a well-formed number outside `[0, 1]`.
pub fn parse_highscore(bytes: &[u8]) -> Option<Result<f64, ()>> {
    if bytes.is_empty() || bytes.len() > 32 {
        return None;
    }
    let dot = bytes.iter().position(|&c| c == b'.');
    let (int, frac) = match dot {
        Some(i) => (&bytes[..i], &bytes[i + 1..]),
        None => (bytes, &b""[..]),
    };
    let digits = |s: &[u8]| s.iter().all(u8::is_ascii_digit);
    let ok = match dot {
        None => !int.is_empty() && digits(int),
        Some(_) => !frac.is_empty() && digits(int) && digits(frac),
    };
    if !ok {
        return None;
    }
    let v: f64 = std::str::from_utf8(bytes).ok()?.parse().ok()?;
    Some(if (0.0..=1.0).contains(&v) {
        Ok(v)
    } else {
        Err(())
    })
}

/// Returns a fresh score `r / 1000000`, `r` uniform in `0 ..= 999999`.
pub fn random_score<R: Rng + ?Sized>(rng: &mut R) -> f64 {
    score_of(random_r(rng))
}

/// Returns a fresh `r`, uniform in `0 ..= 999999`.
pub fn random_r<R: Rng + ?Sized>(rng: &mut R) -> u32 {
    rng.gen_range(0..SCALE)
}

/// Returns the score for the integer draw `r`.
pub fn score_of(r: u32) -> f64 {
    f64::from(r) / f64::from(SCALE)
}

/// Formats a score the way replies and replication carry it: fixed six
/// decimals (`0.123456`, `-1.000000`), exact for every `r / 1000000`.
pub fn format_score(score: f64) -> String {
    format!("{score:.6}")
}

/// Returns whether a newly joined user enters the candidate pool: always
/// while `participants` (this user included) is at most `poolcap`, and
/// after that only with a score of at least `highscore`. A pending task
/// (score −2) is below every `highscore`, so pending users joining past the
/// cap are counted but never pooled.
pub fn enters_pool(participants: i64, poolcap: i64, score: f64, highscore: f64) -> bool {
    participants <= poolcap || score >= highscore
}

/// The rules and state of a bag, as kept in `B:meta`.
#[derive(Clone, Debug, PartialEq)]
pub struct Rules {
    pub winners: i64,
    pub shards: u64,
    pub poolcap: i64,
    /// `HIGHSCORE` as given (stored verbatim).
    pub highscore_text: Vec<u8>,
    pub highscore: f64,
    pub restore: bool,
    pub drawn: bool,
}

/// `B:meta` field names.
pub mod field {
    pub const WINNERS: &[u8] = b"winners";
    pub const SHARDS: &[u8] = b"shards";
    pub const POOLCAP: &[u8] = b"poolcap";
    pub const HIGHSCORE: &[u8] = b"highscore";
    pub const RESTORE: &[u8] = b"restore";
    pub const STATE: &[u8] = b"state";
}

/// `B:meta` values of `state`.
pub const OPEN: &[u8] = b"open";
/// `B:meta` value of `state` once drawn.
pub const DRAWN: &[u8] = b"drawn";

impl Rules {
    /// Returns the `B:meta` fields and values that describe these rules.
    pub fn fields(&self) -> Vec<(&'static [u8], Vec<u8>)> {
        vec![
            (field::WINNERS, self.winners.to_string().into_bytes()),
            (field::SHARDS, self.shards.to_string().into_bytes()),
            (field::POOLCAP, self.poolcap.to_string().into_bytes()),
            (field::HIGHSCORE, self.highscore_text.clone()),
            (
                field::RESTORE,
                if self.restore {
                    b"yes".to_vec()
                } else {
                    b"no".to_vec()
                },
            ),
            (
                field::STATE,
                if self.drawn {
                    DRAWN.to_vec()
                } else {
                    OPEN.to_vec()
                },
            ),
        ]
    }

    /// Reads rules back from `B:meta` through `get(field)`; `None` when a
    /// field is missing or unreadable.
    pub fn from_fields(get: impl Fn(&[u8]) -> Option<Vec<u8>>) -> Option<Rules> {
        let int = |f: &[u8]| get(f).and_then(|v| crate::args::parse_i64_plain(&v));
        let winners = int(field::WINNERS).filter(|w| (1..=MAX_WINNERS).contains(w))?;
        let shards = int(field::SHARDS).filter(|&s| valid_shards(s))? as u64;
        let poolcap = int(field::POOLCAP).filter(|&c| c >= 0)?;
        let highscore_text = get(field::HIGHSCORE)?;
        let highscore = parse_highscore(&highscore_text)?.ok()?;
        let restore = match get(field::RESTORE)?.as_slice() {
            b"yes" => true,
            b"no" => false,
            _ => return None,
        };
        let drawn = match get(field::STATE)?.as_slice() {
            s if s == OPEN => false,
            s if s == DRAWN => true,
            _ => return None,
        };
        Some(Rules {
            winners,
            shards,
            poolcap,
            highscore_text,
            highscore,
            restore,
            drawn,
        })
    }
}

/// What `RESULT` answers for a user.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Joined, the bag is not drawn yet.
    Pending,
    Won,
    Lost,
    /// Never joined (or no such bag).
    Absent,
}

impl Outcome {
    /// Returns the reply word.
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Pending => "PENDING",
            Outcome::Won => "WON",
            Outcome::Lost => "LOST",
            Outcome::Absent => "ABSENT",
        }
    }

    /// Returns the outcome from what is known about the user.
    pub fn of(joined: bool, drawn: bool, won: bool) -> Outcome {
        match (joined, drawn, won) {
            (false, _, _) => Outcome::Absent,
            (true, false, _) => Outcome::Pending,
            (true, true, true) => Outcome::Won,
            (true, true, false) => Outcome::Lost,
        }
    }
}

/// A pool entry: user and score.
pub type Entry = (Vec<u8>, f64);

/// The draw's order, the order `ZREVRANGE` gives: higher score first, and
/// among equal scores the byte-wise greater member first. Returns `Less`
/// when `a` ranks before `b`.
pub fn rank_order(a: &Entry, b: &Entry) -> Ordering {
    b.1.partial_cmp(&a.1)
        .unwrap_or(Ordering::Equal)
        .then_with(|| b.0.cmp(&a.0))
}

/// Returns true when a score may win: within `[0, 1]`.
pub fn eligible(score: f64) -> bool {
    (0.0..=1.0).contains(&score)
}

struct Head<'a> {
    entry: &'a Entry,
    list: usize,
    pos: usize,
}

impl PartialEq for Head<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Head<'_> {}
impl PartialOrd for Head<'_> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Head<'_> {
    // BinaryHeap pops the greatest: the entry that ranks first.
    fn cmp(&self, other: &Self) -> Ordering {
        rank_order(other.entry, self.entry)
    }
}

/// Merges per-shard lists, each already in [`rank_order`] (as each shard's
/// `ZREVRANGEBYSCORE 1 0 LIMIT 0 n` returns them), and returns the global
/// top `n` in the same order. Because a member lives in exactly one shard,
/// the global top `n` is always contained in the union of the shards'
/// top `n`.
pub fn merge_top(lists: &[Vec<Entry>], n: usize) -> Vec<Entry> {
    let mut heap = BinaryHeap::with_capacity(lists.len());
    for (i, l) in lists.iter().enumerate() {
        if let Some(e) = l.first() {
            heap.push(Head {
                entry: e,
                list: i,
                pos: 0,
            });
        }
    }
    let mut out = Vec::with_capacity(n.min(lists.iter().map(Vec::len).sum()));
    while out.len() < n {
        let Some(h) = heap.pop() else { break };
        out.push(h.entry.clone());
        if let Some(e) = lists[h.list].get(h.pos + 1) {
            heap.push(Head {
                entry: e,
                list: h.list,
                pos: h.pos + 1,
            });
        }
    }
    out
}

/// Returns how many members to read first from each of `shards` shards
/// for a draw of `n`: about twice a shard's fair share, so that a second
/// read is practically never needed (the share of a shard in the top `n`
/// is binomial with mean `n / shards`).
pub fn first_read(n: usize, shards: usize) -> usize {
    (2 * n / shards.max(1) + 16).min(n)
}

/// Draws the global top `n` over `shards` shards, reading each shard's
/// best members through `fetch(shard, count)` (which returns the shard's
/// top `count` eligible members in [`rank_order`], like
/// `ZREVRANGEBYSCORE 1 0 LIMIT 0 count`). Reads [`first_read`] members per
/// shard first and reads deeper only from a shard whose last member read
/// still made the cut: every member it did not read ranks below that one.
/// The result equals [`merge_top`] of every shard's full top `n`.
pub fn draw_top(
    shards: usize,
    n: usize,
    mut fetch: impl FnMut(usize, usize) -> Vec<Entry>,
) -> Vec<Entry> {
    let mut want = vec![first_read(n, shards); shards];
    let mut tops: Vec<Vec<Entry>> = (0..shards).map(|s| fetch(s, want[s])).collect();
    loop {
        let merged = merge_top(&tops, n);
        let mut again = false;
        for s in 0..shards {
            // A shard that returned fewer than asked has nothing more.
            if tops[s].len() < want[s] || want[s] >= n {
                continue;
            }
            let last = &tops[s][tops[s].len() - 1];
            let made_cut = merged.len() < n
                || merged
                    .last()
                    .is_some_and(|cut| rank_order(last, cut) != Ordering::Greater);
            if made_cut {
                want[s] = (want[s] * 2).min(n);
                tops[s] = fetch(s, want[s]);
                again = true;
            }
        }
        if !again {
            return merged;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::SeedableRng;

    fn brute_top(all: &[Entry], n: usize) -> Vec<Entry> {
        let mut v: Vec<Entry> = all.iter().filter(|e| eligible(e.1)).cloned().collect();
        v.sort_by(rank_order);
        v.truncate(n);
        v
    }

    #[test]
    fn integer_ids_shard_by_low_bits() {
        assert_eq!(shard_of(b"0", 16), 0);
        assert_eq!(shard_of(b"17", 16), 1);
        assert_eq!(shard_of(b"1023", 1024), 1023);
        assert_eq!(shard_of(b"1024", 1024), 0);
        assert_eq!(shard_of(b"-1", 16), 15);
        assert_eq!(shard_of(b"9223372036854775807", 16), 15);
        assert_eq!(shard_of(b"-9223372036854775808", 16), 0);
        assert_eq!(shard_of(b"12345", 1), 0);
    }

    #[test]
    fn other_ids_shard_by_fnv1a() {
        // Reference values of 32-bit FNV-1a.
        assert_eq!(fnv1a32(b""), 0x811c_9dc5);
        assert_eq!(fnv1a32(b"a"), 0xe40c_292c);
        assert_eq!(fnv1a32(b"foobar"), 0xbf9c_f968);
        assert_eq!(shard_of(b"foobar", 16), 0x8);
        // Not integers as Redis reads them: hashed.
        for id in [
            &b"007"[..],
            b"+1",
            b" 1",
            b"1.0",
            b"-0",
            b"9223372036854775808",
        ] {
            assert_eq!(shard_of(id, 1024), u64::from(fnv1a32(id)) & 1023);
        }
    }

    #[test]
    fn hashed_shard_needs_only_low_bits() {
        // The Lua twin computes the hash modulo 1024 with small numbers;
        // this is the same arithmetic.
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..2000 {
            let len = rng.gen_range(0..12);
            let id: Vec<u8> = (0..len).map(|_| rng.gen()).collect();
            let mut h: u32 = 2_166_136_261 % 1024;
            for &b in &id {
                h = ((h ^ u32::from(b)) * 403) % 1024;
            }
            assert_eq!(u64::from(h), u64::from(fnv1a32(&id)) & 1023);
        }
    }

    #[test]
    fn shard_counts_are_powers_of_two_up_to_1024() {
        for ok in [1, 2, 4, 16, 512, 1024] {
            assert!(valid_shards(ok), "{ok}");
        }
        for bad in [0, -16, 3, 12, 2048, i64::MIN] {
            assert!(!valid_shards(bad), "{bad}");
        }
    }

    #[test]
    fn highscore_accepts_plain_decimals_in_unit_range() {
        assert_eq!(parse_highscore(b"0.99"), Some(Ok(0.99)));
        assert_eq!(parse_highscore(b"1"), Some(Ok(1.0)));
        assert_eq!(parse_highscore(b"0"), Some(Ok(0.0)));
        assert_eq!(parse_highscore(b".5"), Some(Ok(0.5)));
        assert_eq!(parse_highscore(b"00.25"), Some(Ok(0.25)));
        assert_eq!(parse_highscore(b"1.5"), Some(Err(())));
        assert_eq!(parse_highscore(b"2"), Some(Err(())));
        for bad in [
            &b""[..],
            b"-0.5",
            b"+0.5",
            b"1e-2",
            b"0.",
            b".",
            b"abc",
            b" 0.5",
            b"0x1",
            b"inf",
            b"nan",
        ] {
            assert_eq!(
                parse_highscore(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn scores_are_micro_steps_below_one() {
        assert_eq!(score_of(0), 0.0);
        assert_eq!(score_of(999_999), 0.999999);
        assert_eq!(format_score(score_of(123_456)), "0.123456");
        assert_eq!(format_score(score_of(7)), "0.000007");
        assert_eq!(format_score(PENDING_SCORE), "-2.000000");
        for r in (0..SCALE).step_by(997) {
            let s = score_of(r);
            // The text form parses back to the very same double.
            assert_eq!(format_score(s).parse::<f64>().unwrap(), s);
        }
    }

    #[test]
    fn random_scores_are_uniform() {
        let mut rng = StdRng::seed_from_u64(42);
        let n = 200_000;
        let mut buckets = [0u32; 10];
        for _ in 0..n {
            let s = random_score(&mut rng);
            assert!((0.0..1.0).contains(&s));
            buckets[(s * 10.0) as usize] += 1;
        }
        // Chi-square with 9 degrees of freedom: 27.88 is the 0.1% quantile.
        let expect = f64::from(n) / 10.0;
        let chi: f64 = buckets
            .iter()
            .map(|&c| (f64::from(c) - expect).powi(2) / expect)
            .sum();
        assert!(chi < 27.88, "chi-square {chi}: {buckets:?}");
    }

    #[test]
    fn pool_cap_lets_only_high_scores_in() {
        assert!(enters_pool(700_000, 700_000, 0.1, 0.99));
        assert!(!enters_pool(700_001, 700_000, 0.1, 0.99));
        assert!(enters_pool(700_001, 700_000, 0.99, 0.99));
        assert!(!enters_pool(700_001, 700_000, PENDING_SCORE, 0.0));
        assert!(enters_pool(1, 0, 1.0, 1.0));
        assert!(!enters_pool(1, 0, 0.999999, 1.0));
    }

    #[test]
    fn rules_round_trip_through_meta_fields() {
        let r = Rules {
            winners: 3,
            shards: 64,
            poolcap: 10,
            highscore_text: b".75".to_vec(),
            highscore: 0.75,
            restore: false,
            drawn: true,
        };
        let f = r.fields();
        let back = Rules::from_fields(|k| f.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone()));
        assert_eq!(back, Some(r));
        assert_eq!(Rules::from_fields(|_| None), None);
    }

    #[test]
    fn outcome_follows_join_draw_and_win() {
        assert_eq!(Outcome::of(false, true, false), Outcome::Absent);
        assert_eq!(Outcome::of(true, false, false), Outcome::Pending);
        assert_eq!(Outcome::of(true, true, true), Outcome::Won);
        assert_eq!(Outcome::of(true, true, false), Outcome::Lost);
        assert_eq!(Outcome::Lost.word(), "LOST");
    }

    #[test]
    fn ties_rank_by_member_descending() {
        let mut v: Vec<Entry> = vec![
            (b"a".to_vec(), 0.5),
            (b"b".to_vec(), 0.5),
            (b"c".to_vec(), 0.9),
            (b"ab".to_vec(), 0.5),
        ];
        v.sort_by(rank_order);
        let names: Vec<&[u8]> = v.iter().map(|e| e.0.as_slice()).collect();
        assert_eq!(names, vec![&b"c"[..], b"b", b"ab", b"a"]);
    }

    #[test]
    fn merged_shard_tops_equal_brute_force_top() {
        let mut rng = StdRng::seed_from_u64(2025);
        for round in 0..500 {
            let shards = 1u64 << rng.gen_range(0..6);
            let users = rng.gen_range(0..400);
            // Few distinct scores in some rounds, to force many ties.
            let distinct = if round % 2 == 0 { 5 } else { SCALE };
            let mut all: Vec<Entry> = Vec::new();
            let mut pools: Vec<Vec<Entry>> = vec![Vec::new(); shards as usize];
            for u in 0..users {
                let id = if rng.gen_bool(0.5) {
                    format!("{u}")
                } else {
                    format!("user:{u}")
                }
                .into_bytes();
                let score = match rng.gen_range(0..10) {
                    0 => PENDING_SCORE,
                    1 => AWAY_SCORE,
                    _ => score_of(rng.gen_range(0..distinct)),
                };
                pools[shard_of(&id, shards) as usize].push((id.clone(), score));
                all.push((id, score));
            }
            let n = rng.gen_range(1..60);
            // Each shard's top n among eligible scores, as the server gives it.
            let tops: Vec<Vec<Entry>> = pools.iter().map(|p| brute_top(p, n)).collect();
            let merged = merge_top(&tops, n);
            assert_eq!(
                merged,
                brute_top(&all, n),
                "round {round}: shards {shards}, n {n}"
            );
            assert!(merged.len() <= n);
        }
    }

    #[test]
    fn adaptive_draw_equals_brute_force_and_reads_little() {
        let mut rng = StdRng::seed_from_u64(99);
        for round in 0..400 {
            let shards = 1usize << rng.gen_range(0..6);
            let users = rng.gen_range(0..600);
            let distinct = if round % 3 == 0 { 4 } else { SCALE };
            let mut all: Vec<Entry> = Vec::new();
            let mut pools: Vec<Vec<Entry>> = vec![Vec::new(); shards];
            // Some rounds crowd the best scores into one shard.
            let skew = round % 4 == 1;
            for u in 0..users {
                let id = format!("{u}").into_bytes();
                let s = shard_of(&id, shards as u64) as usize;
                let score = match rng.gen_range(0..10) {
                    0 => PENDING_SCORE,
                    1 => AWAY_SCORE,
                    _ if skew && s == 0 => {
                        score_of(SCALE - 1 - rng.gen_range(0..distinct.min(1000)))
                    }
                    _ => score_of(rng.gen_range(0..distinct)),
                };
                pools[s].push((id.clone(), score));
                all.push((id, score));
            }
            let n = rng.gen_range(1..120);
            let mut read = 0usize;
            let got = draw_top(shards, n, |s, count| {
                let t = brute_top(&pools[s], count);
                read += t.len();
                t
            });
            assert_eq!(
                got,
                brute_top(&all, n),
                "round {round}: shards {shards}, n {n}"
            );
            let full: Vec<Vec<Entry>> = pools.iter().map(|p| brute_top(p, n)).collect();
            assert_eq!(got, merge_top(&full, n));
            if !skew {
                assert!(read <= 4 * (n + 16 * shards), "read {read} for n {n}");
            }
        }
    }

    #[test]
    fn merge_of_nothing_is_empty() {
        assert!(merge_top(&[], 5).is_empty());
        assert!(merge_top(&[vec![], vec![]], 5).is_empty());
    }
}
