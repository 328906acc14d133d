//! The pure rules of a lucky bag: shard placement, keyed scores
//! ([`keyed`](super::keyed)), pool-cap filtering, the rules kept in
//! `B:meta`, the plans of the writes (what JOIN, TASK, LEAVE and ENTER
//! change, given what they read), and the draw's merge of per-shard top
//! lists. Nothing here touches Redis, a clock or an RNG: the handlers
//! pass the seed in, so every rule is testable and deterministic.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// Default number of shards (`SHARDS`).
pub const DEFAULT_SHARDS: u64 = 16;
/// Largest number of shards.
pub const MAX_SHARDS: u64 = 1024;
/// Default pool cap (`POOLCAP`).
pub const DEFAULT_POOLCAP: i64 = 700_000;
/// Default high score (`HIGHSCORE`), as stored in `B:meta`.
pub const DEFAULT_HIGHSCORE: &str = "0.99";
/// Largest `WINNERS`. DRAW picks, writes and replies every winner in one
/// call while the server waits (about a microsecond per winner), and its
/// reply is the whole list: this bound keeps a draw near a millisecond.
/// A bag with more prizes runs several bags (or several draws of one
/// audience split by shard ranges).
pub const MAX_WINNERS: i64 = 1_000;
/// Shortest seed (`SEED`, and the seed CREATE draws: 16 bytes from the
/// OS's CSPRNG as 32 hex digits).
pub const SEED_MIN: usize = 16;
/// Longest seed: an HMAC-SHA1 key up to one block is used as it is.
pub const SEED_MAX: usize = 64;
/// Occurs when `SEED` is not 16 to 64 bytes.
pub const ERR_SEED: &str = "seed must be 16 to 64 bytes";
/// Occurs when a write that gives scores reaches a bag with no `seed`
/// (created by hotpath before keyed scores).
pub const ERR_NO_SEED: &str =
    "bag has no seed (created by an older hotpath): draw it, or create a new bag";
/// Score of a user who is out of the room with the task still pending
/// (ENTER gives back -2).
pub const AWAY_PENDING_SCORE: f64 = -1.5;
/// Score of a joined user whose task is still pending.
pub const PENDING_SCORE: f64 = -2.0;
/// Score of a user who is out of the room.
pub const AWAY_SCORE: f64 = -1.0;
/// Score of a participant who joined past the pool cap without a high
/// enough score: counted and remembered (the candidate pool is also the
/// participant list), never drawn, and not "pooled".
pub const CAPPED_SCORE: f64 = -3.0;

/// Occurs when the command needs a bag that was never created (or expired).
pub const ERR_NO_BAG: &str = "no such bag";
/// Occurs when `CREATE` names a bag that already exists, or whose keys are
/// still there.
pub const ERR_EXISTS: &str = "bag already exists";
/// Occurs when a write other than `DRAW` reaches a drawn bag.
pub const ERR_CLOSED: &str = "bag is closed";
/// Occurs when `SHARDS` is not a power of two in `1 ..= 1024`.
pub const ERR_SHARDS: &str = "shards must be a power of two up to 1024";
/// Occurs when `HIGHSCORE` is a number outside `[0, 1]`.
pub const ERR_HIGHSCORE: &str = "highscore must be between 0 and 1";

/// Returns `ERR luckybag: winners must be between 1 and <MAX_WINNERS>`'s
/// message.
pub fn err_winners() -> String {
    format!("winners must be between 1 and {MAX_WINNERS}")
}

/// Returns the shard of a user: `user & (shards − 1)` for an integer id
/// (as Redis parses integers: optional `-`, digits, no leading zero, in
/// `i64` range; negative ids use two's complement), otherwise the low bits
/// of the 32-bit FNV-1a hash of the id's bytes. `shards` is a power of two.
pub fn shard_of(user: &[u8], shards: u64) -> u64 {
    let mask = shards.saturating_sub(1);
    match crate::args::parse_i64_fast(user) {
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

/// Formats a score the way replies carry it: C's `%.17g` (17 significant
/// digits, trailing zeros dropped, the exponent form below 1e-4), which
/// is what the Lua twins' `string.format('%.17g', s)` prints. 17 digits
/// identify every double: the text parses back to the very same score.
pub fn format_score(score: f64) -> String {
    if !score.is_finite() {
        return if score.is_nan() {
            "nan".into()
        } else if score > 0.0 {
            "inf".into()
        } else {
            "-inf".into()
        };
    }
    if score == 0.0 {
        return if score.is_sign_negative() { "-0" } else { "0" }.into();
    }
    // The exponent of the E-style conversion with 17 digits decides the
    // style (C11 7.21.6.1: fixed when -4 <= X < 17).
    let e_style = format!("{score:.16e}");
    let (mantissa, exp) = e_style.split_once('e').unwrap_or((&e_style, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let strip = |t: &str| -> String {
        if t.contains('.') {
            t.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            t.to_string()
        }
    };
    if (-4..17).contains(&exp) {
        strip(&format!("{score:.*}", (16 - exp) as usize))
    } else {
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{}e{sign}{:02}", strip(mantissa), exp.unsigned_abs())
    }
}

/// Parses a score as replies and the spread draw carry it
/// ([`format_score`]'s text of a score in `[0, 1]`). `None` for anything
/// else, also for another spelling of the same number: every side of a
/// spread draw compares the texts it was given.
pub fn parse_score(v: &[u8]) -> Option<f64> {
    if v.is_empty() || v.len() > 32 {
        return None;
    }
    let t = std::str::from_utf8(v).ok()?;
    if !t
        .bytes()
        .all(|c| c.is_ascii_digit() || b".e-+".contains(&c))
    {
        return None;
    }
    let s: f64 = t.parse().ok()?;
    (eligible(s) && format_score(s) == t).then_some(s)
}

/// Returns whether a newly joined user enters the candidate pool: always
/// while `participants` (this user included) is at most `poolcap`, and
/// after that only with a score of at least `highscore`. A pending task
/// (score −2) is below every `highscore`, so pending users joining past the
/// cap are counted but never pooled.
pub fn enters_pool(participants: i64, poolcap: i64, score: f64, highscore: f64) -> bool {
    participants <= poolcap || score >= highscore
}

/// The rules and state of a bag, as `CREATE` writes them to `B:meta`.
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
    /// The key of the bag's scores (see [`keyed`](super::keyed)).
    pub seed: Vec<u8>,
}

/// `B:meta` field names.
pub mod field {
    pub const WINNERS: &str = "winners";
    pub const SHARDS: &str = "shards";
    pub const POOLCAP: &str = "poolcap";
    pub const HIGHSCORE: &str = "highscore";
    pub const RESTORE: &str = "restore";
    pub const STATE: &str = "state";
    /// Participants who entered the pool after the pool cap was reached
    /// (their score was at least HIGHSCORE): with `B:count` it gives the
    /// pooled total in O(1), see [`super::pooled_total`].
    pub const LATEPOOLED: &str = "latepooled";
    /// The key of the bag's keyed scores: readable by anyone with access
    /// to the keys, as the scores themselves are; no reply shows it.
    pub const SEED: &str = "seed";
}

/// `B:meta` values of `state`.
pub const OPEN: &[u8] = b"open";
/// `B:meta` value of `state` once drawn.
pub const DRAWN: &[u8] = b"drawn";
/// `B:meta` value of `state` of a spread bag's shard whose pool the draw
/// has read: it takes no more writes, and is not drawn yet.
pub const FROZEN: &[u8] = b"frozen";

/// The state of a bag (or of a spread bag's shard).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Open,
    /// A shard of a spread bag whose draw has started (see docs/spread.md).
    Frozen,
    Drawn,
}

impl State {
    /// Returns the `state` value.
    pub fn word(self) -> &'static [u8] {
        match self {
            State::Open => OPEN,
            State::Frozen => FROZEN,
            State::Drawn => DRAWN,
        }
    }
}

/// Checks a winner list of the spread draw: at most `max` entries, no
/// empty user, in the draw's order (score descending, then user
/// descending byte-wise) with no user twice. Returns the reason when it
/// is not one.
pub fn check_winner_list(list: &[Published<'_>], max: usize) -> Result<(), &'static str> {
    if list.len() > max {
        return Err("bad winner list: more winners than the bag has prizes");
    }
    for (i, (u, _)) in list.iter().enumerate() {
        if u.is_empty() {
            return Err("bad winner list: a winner with an empty user");
        }
        if i > 0 {
            let (pu, pr) = list[i - 1];
            let before = pr > list[i].1 || (pr == list[i].1 && pu > *u);
            if !before {
                return Err("bad winner list: winners out of order or repeated");
            }
        }
    }
    Ok(())
}

/// A spread shard's draw entry as PUBLISH compares it: user and score.
pub type Published<'a> = (&'a [u8], f64);

/// Returns true when `a` ranks before `b` in the draw's order (higher
/// score, then the byte-wise greater user).
pub fn ranks_first(a: Published<'_>, b: Published<'_>) -> bool {
    a.1 > b.1 || (a.1 == b.1 && a.0 > b.0)
}

/// Why PUBLISH refuses a shard's winners: a candidate of the shard that
/// is left out although it ranks before `above` (a published winner or
/// the global list's last one), or, with `above` = `None`, although the
/// global list is shorter than WINNERS (every eligible candidate wins).
#[derive(Debug, PartialEq)]
pub struct LeftOut {
    pub user: Vec<u8>,
    pub score: f64,
    pub above: Option<(Vec<u8>, f64)>,
}

/// Checks at PUBLISH that a shard's winners are the true top (issue 11,
/// docs/spread.md): `list` is the shard's published winners (in the
/// draw's order, each a candidate of the shard with that score), `top`
/// the shard's own best `list.len() + 1` eligible candidates over all its
/// internal pools in the draw's order (fewer when it has fewer), and
/// `last` the global list's last winner, or `None` when the global list is
/// shorter than WINNERS. The winners must be exactly the shard's best
/// `list.len()`, and its best non-winner must rank after `last` (with no
/// `last`, there must be none). Together over every shard this makes the
/// committed list the exact global top: a candidate left out that ranks
/// before some winner ranks before the last one.
pub fn check_true_top(
    list: &[Published<'_>],
    top: &[Published<'_>],
    last: Option<Published<'_>>,
) -> Result<(), LeftOut> {
    let left_out = |c: Published<'_>, above: Option<Published<'_>>| LeftOut {
        user: c.0.to_vec(),
        score: c.1,
        above: above.map(|(u, s)| (u.to_vec(), s)),
    };
    for (p, &w) in list.iter().enumerate() {
        match top.get(p) {
            Some(&t) if t == w => {}
            // The shard's p-th best is not the p-th winner: it ranks
            // before it (it is the best), and it is not a later winner
            // (those rank after the p-th).
            Some(&t) => return Err(left_out(t, Some(w))),
            // Cannot happen for a list of eligible candidates; refused
            // all the same.
            None => return Err(left_out(w, None)),
        }
    }
    match (top.get(list.len()), last) {
        (None, _) => Ok(()),
        (Some(&t), Some(l)) if ranks_first(l, t) => Ok(()),
        (Some(&t), l) => Err(left_out(t, l)),
    }
}

impl Rules {
    /// Returns the `B:meta` fields and values of a new bag with these
    /// rules.
    /// The fields JOIN reads on every call come first: a small hash is a
    /// listpack, searched from its head.
    pub fn fields(&self) -> Vec<(&'static str, Vec<u8>)> {
        vec![
            (field::SHARDS, self.shards.to_string().into_bytes()),
            (
                field::STATE,
                if self.drawn {
                    DRAWN.to_vec()
                } else {
                    OPEN.to_vec()
                },
            ),
            (field::POOLCAP, self.poolcap.to_string().into_bytes()),
            (field::SEED, self.seed.clone()),
            (field::HIGHSCORE, self.highscore_text.clone()),
            (
                field::RESTORE,
                if self.restore {
                    b"yes".to_vec()
                } else {
                    b"no".to_vec()
                },
            ),
            (field::WINNERS, self.winners.to_string().into_bytes()),
            (field::LATEPOOLED, b"0".to_vec()),
        ]
    }
}

/// Parsers of the `B:meta` values, each `None` for a value `CREATE` never
/// writes (the command then names the key and the field in its error).
pub mod parse {
    use super::*;

    /// `winners`: an integer in `1 ..= MAX_WINNERS`.
    pub fn winners(v: &[u8]) -> Option<i64> {
        crate::args::parse_i64_fast(v).filter(|w| (1..=MAX_WINNERS).contains(w))
    }

    /// `shards`: a power of two in `1 ..= 1024`.
    pub fn shards(v: &[u8]) -> Option<u64> {
        crate::args::parse_i64_fast(v)
            .filter(|&s| valid_shards(s))
            .map(|s| s as u64)
    }

    /// `poolcap` and `latepooled`: a non-negative integer.
    pub fn non_negative(v: &[u8]) -> Option<i64> {
        crate::args::parse_i64_fast(v).filter(|&c| c >= 0)
    }

    /// `highscore`: a plain decimal in `[0, 1]`.
    pub fn highscore(v: &[u8]) -> Option<f64> {
        parse_highscore(v)?.ok()
    }

    /// `restore`: `yes` or `no`.
    pub fn restore(v: &[u8]) -> Option<bool> {
        match v {
            b"yes" => Some(true),
            b"no" => Some(false),
            _ => None,
        }
    }

    /// `state`: `open`, `frozen` (a spread bag's shard) or `drawn`.
    pub fn state(v: &[u8]) -> Option<State> {
        match v {
            s if s == OPEN => Some(State::Open),
            s if s == FROZEN => Some(State::Frozen),
            s if s == DRAWN => Some(State::Drawn),
            _ => None,
        }
    }

    /// `state`: `open` or `drawn`; returns true when drawn.
    pub fn drawn(v: &[u8]) -> Option<bool> {
        match v {
            s if s == OPEN => Some(false),
            s if s == DRAWN => Some(true),
            _ => None,
        }
    }

    /// `B:count`: a non-negative integer, at most [`MAX_COUNT`](super::MAX_COUNT).
    pub fn participants(v: &[u8]) -> Option<i64> {
        non_negative(v).filter(|&c| c <= super::MAX_COUNT)
    }

    /// `latepooled`: a non-negative integer, at most [`MAX_COUNT`](super::MAX_COUNT).
    pub fn latepooled(v: &[u8]) -> Option<i64> {
        non_negative(v).filter(|&c| c <= super::MAX_COUNT)
    }

    /// `seed`: 16 to 64 bytes.
    pub fn seed(v: &[u8]) -> Option<&[u8]> {
        (SEED_MIN..=SEED_MAX).contains(&v.len()).then_some(v)
    }
}

/// Returns the number of pool members (of every state: a score, −1 or −2)
/// from the participants counted and the participants pooled after the
/// cap: everyone up to `poolcap` entered the pool. `None` on overflow
/// (possible only with hand-edited values).
pub fn pooled_total(participants: i64, poolcap: i64, latepooled: i64) -> Option<i64> {
    participants
        .min(poolcap)
        .checked_add(latepooled)
        .filter(|&n| n <= MAX_COUNT)
}

/// The largest participant count (`B:count`) and `latepooled`: 2^53 − 1.
/// No bag gets near it; the bound keeps every count exact in the Lua
/// twins, whose numbers are doubles, so both sides refuse a larger one
/// as corrupt data and overflow at the same join.
pub const MAX_COUNT: i64 = (1 << 53) - 1;

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

/// A pool entry as the draw compares it: by score, then by member.
pub trait Ranked {
    fn score(&self) -> f64;
    fn member(&self) -> &[u8];
}

impl Ranked for Entry {
    fn score(&self) -> f64 {
        self.1
    }
    fn member(&self) -> &[u8] {
        &self.0
    }
}

/// The draw's order on [`Ranked`] entries: `Greater` when `a` ranks
/// before `b` (higher score, then byte-wise greater member).
fn ranks_before<E: Ranked>(a: &E, b: &E) -> Ordering {
    a.score()
        .partial_cmp(&b.score())
        .unwrap_or(Ordering::Equal)
        .then_with(|| a.member().cmp(b.member()))
}

struct Head<E> {
    entry: E,
    source: usize,
}

impl<E: Ranked> PartialEq for Head<E> {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl<E: Ranked> Eq for Head<E> {}
impl<E: Ranked> PartialOrd for Head<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E: Ranked> Ord for Head<E> {
    // BinaryHeap pops the greatest: the entry that ranks first.
    fn cmp(&self, other: &Self) -> Ordering {
        ranks_before(&self.entry, &other.entry)
    }
}

/// Returns the global top `n` of several streams, each already in
/// [`rank_order`] (a shard's eligible members read from its best, as
/// `ZREVRANGEBYSCORE 1 0` gives them), in the same order. `heads` holds
/// each stream's first entry and `next(i)` yields stream `i`'s following
/// one. A k-way heap merge that pulls an entry only when the previous one
/// from its stream was taken: it reads at most `n + streams` entries and
/// costs O((n + streams) log streams), however the best scores are spread
/// over the shards. Because a member lives in exactly one shard, the
/// result equals the top `n` of all shards together.
pub fn merge_lazy<E: Ranked>(
    heads: Vec<Option<E>>,
    mut next: impl FnMut(usize) -> Option<E>,
    n: usize,
) -> Vec<E> {
    let mut heap = BinaryHeap::with_capacity(heads.len());
    for (source, h) in heads.into_iter().enumerate() {
        if let Some(entry) = h {
            heap.push(Head { entry, source });
        }
    }
    let mut out = Vec::with_capacity(n.min(1024));
    while out.len() < n {
        let Some(Head { entry, source }) = heap.pop() else {
            break;
        };
        out.push(entry);
        if out.len() < n {
            if let Some(entry) = next(source) {
                heap.push(Head { entry, source });
            }
        }
    }
    out
}

// ---- the plans of the writes: what each changes, given what it read ----

/// Why a JOIN is refused after its type checks: stored data it read is
/// corrupt (a `B:meta` field, named), or a counter would pass
/// [`MAX_COUNT`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A `B:meta` field is missing or garbage.
    Corrupt(&'static str),
    /// `B:count` would pass 2^53 − 1.
    CountOverflow,
    /// `latepooled` would pass 2^53 − 1.
    LateOverflow,
}

/// What a first JOIN writes: the user's entry in its shard's pool
/// (`kept`: the score, −2, or −3 past the cap), `B:count` =
/// `participants`, and `latepooled` when it is `Some`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct JoinPlan {
    pub kept: f64,
    pub pooled: bool,
    pub participants: i64,
    pub latepooled: Option<i64>,
}

/// Plans a first JOIN: `before` participants, the pool cap, the user's
/// `score` (its keyed score, or −2 with the task pending). `highscore`
/// and `latepooled` read those `B:meta` fields (`None`: corrupt) and are
/// called only past the cap, as the command reads them only then. A
/// user already in the pool is answered by [`plan_duplicate`] instead,
/// before the score is computed.
pub fn plan_join(
    before: i64,
    poolcap: i64,
    score: f64,
    highscore: impl FnOnce() -> Option<f64>,
    latepooled: impl FnOnce() -> Option<i64>,
) -> Result<JoinPlan, Refusal> {
    let participants = Some(before + 1)
        .filter(|&n| n <= MAX_COUNT)
        .ok_or(Refusal::CountOverflow)?;
    let pooled = participants <= poolcap || {
        let h = highscore().ok_or(Refusal::Corrupt(field::HIGHSCORE))?;
        enters_pool(participants, poolcap, score, h)
    };
    let latepooled = if pooled && participants > poolcap {
        let n = latepooled().ok_or(Refusal::Corrupt(field::LATEPOOLED))?;
        Some(
            Some(n + 1)
                .filter(|&n| n <= MAX_COUNT)
                .ok_or(Refusal::LateOverflow)?,
        )
    } else {
        None
    };
    Ok(JoinPlan {
        kept: if pooled { score } else { CAPPED_SCORE },
        pooled,
        participants,
        latepooled,
    })
}

/// Answers a JOIN of a user already in its shard's pool, with pool score
/// `existing`: nothing is written, and the reply says whether the user
/// counts as pooled (every score but −3). A duplicate is refused where
/// any JOIN is (a `B:count` at the bound too), but it needs neither the
/// keyed score nor HIGHSCORE or `latepooled`: the command looks the user
/// up before computing the score, so a duplicate costs one lookup.
pub fn plan_duplicate(before: i64, existing: f64) -> Result<bool, Refusal> {
    if before >= MAX_COUNT {
        return Err(Refusal::CountOverflow);
    }
    Ok(existing != CAPPED_SCORE)
}

/// Plans TASK: a user whose pool score is −2 (pending, in the room) gets
/// its keyed score. Returns the new score, or `None` (reply 0, nothing
/// written).
pub fn plan_task(current: Option<f64>, keyed: impl FnOnce() -> f64) -> Option<f64> {
    (current == Some(PENDING_SCORE)).then(keyed)
}

/// Plans LEAVE: a participant in the pool and in the room goes out: −1,
/// or −1.5 when its task is pending (so that ENTER knows to give back
/// −2). Nothing is kept aside: the score is the keyed function of the
/// user, computed again on ENTER. `None` for a user not in the pool,
/// already out, or kept out by the cap.
pub fn plan_leave(current: Option<f64>) -> Option<f64> {
    match current? {
        s if s == AWAY_SCORE || s == AWAY_PENDING_SCORE || s == CAPPED_SCORE => None,
        s if s == PENDING_SCORE => Some(AWAY_PENDING_SCORE),
        _ => Some(AWAY_SCORE),
    }
}

/// Plans ENTER (RESTORE YES): a user out of the room gets back its keyed
/// score (the same as before it left: rerolling by leaving is not
/// possible), or −2 if its task was pending. `None` with RESTORE NO or
/// for a user who is not out of the room.
pub fn plan_enter(restore: bool, current: Option<f64>, keyed: impl FnOnce() -> f64) -> Option<f64> {
    if !restore {
        return None;
    }
    match current? {
        s if s == AWAY_SCORE => Some(keyed()),
        s if s == AWAY_PENDING_SCORE => Some(PENDING_SCORE),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::super::keyed;

    fn brute_top(all: &[Entry], n: usize) -> Vec<Entry> {
        let mut v: Vec<Entry> = all.iter().filter(|e| eligible(e.1)).cloned().collect();
        v.sort_by(rank_order);
        v.truncate(n);
        v
    }

    /// A pool score: `k / 2^52`.
    fn score_of(k: u64) -> f64 {
        k as f64 / keyed::SCORE_DENOM
    }

    #[test]
    fn score_texts_parse_back_exactly() {
        assert_eq!(parse_score(b"0.5"), Some(0.5));
        assert_eq!(parse_score(b"0"), Some(0.0));
        assert_eq!(parse_score(b"1"), Some(1.0));
        assert_eq!(parse_score(b"2.2204460492503131e-16"), Some(f64::EPSILON));
        for bad in [
            &b"1.0000000000000002"[..],
            b"-1",
            b"0.50",
            b"00.5",
            b".5",
            b"0,5",
            b"2",
            b"",
            b"nan",
            b"inf",
            b" 0.5",
            b"5e-1",
            b"0.1",
        ] {
            assert_eq!(parse_score(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        let mut rng = StdRng::seed_from_u64(3);
        for _ in 0..100_000 {
            let s = score_of(rng.gen_range(0..1u64 << 52));
            assert_eq!(parse_score(format_score(s).as_bytes()), Some(s));
        }
    }

    #[test]
    fn winner_lists_must_be_in_draw_order() {
        let ok: Vec<Published<'_>> = vec![(b"b", 0.9), (b"z", 0.5), (b"a", 0.5), (b"q", 0.0)];
        assert_eq!(check_winner_list(&ok, 4), Ok(()));
        assert!(check_winner_list(&ok, 3).is_err());
        assert_eq!(check_winner_list(&[], 1), Ok(()));
        let swapped: Vec<Published<'_>> = vec![(b"a", 0.5), (b"z", 0.5)];
        assert!(check_winner_list(&swapped, 5).is_err());
        let twice: Vec<Published<'_>> = vec![(b"a", 0.5), (b"a", 0.5)];
        assert!(check_winner_list(&twice, 5).is_err());
        let empty: Vec<Published<'_>> = vec![(b"", 0.5)];
        assert!(check_winner_list(&empty, 5).is_err());
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
    fn scores_print_with_17_significant_digits() {
        // C's `%.17g` (the Lua twins' `string.format`) is compared in
        // parser_fuzz.rs: a family folder holds no `unsafe`.
        for (s, want) in [
            (0.5, "0.5"),
            (0.0, "0"),
            (1.0, "1"),
            (-1.5, "-1.5"),
            (-2.0, "-2"),
            (0.1, "0.10000000000000001"),
            (f64::EPSILON, "2.2204460492503131e-16"),
            (1e-4, "0.0001"),
            (1e-5, "1.0000000000000001e-05"),
            (1.0 - f64::EPSILON / 2.0, "0.99999999999999989"),
        ] {
            assert_eq!(format_score(s), want);
        }
    }

    #[test]
    fn keyed_scores_are_uniform() {
        let h = keyed::Hmac::new(b"0123456789abcdef0123");
        let n = 200_000;
        let mut buckets = [0u32; 10];
        for u in 0..n {
            let s = h.score(format!("user:{u}").as_bytes());
            assert!((0.0..1.0).contains(&s));
            buckets[(s * 10.0) as usize] += 1;
        }
        // Chi-square with 9 degrees of freedom: 27.88 is the 0.1% quantile
        // (the seed is fixed: this is one deterministic sample).
        let expect = f64::from(n) / 10.0;
        let chi: f64 = buckets
            .iter()
            .map(|&c| (f64::from(c) - expect).powi(2) / expect)
            .sum();
        assert!(chi < 27.88, "chi-square {chi}: {buckets:?}");
    }

    #[test]
    fn join_plans_follow_the_pool_cap() {
        let never = || -> Option<f64> { panic!("highscore read below the cap") };
        let never_late = || -> Option<i64> { panic!("latepooled read below the cap") };
        assert_eq!(
            plan_join(0, 10, 0.25, never, never_late),
            Ok(JoinPlan {
                kept: 0.25,
                pooled: true,
                participants: 1,
                latepooled: None
            })
        );
        // Past the cap: a high score enters and counts in latepooled.
        assert_eq!(
            plan_join(10, 10, 0.995, || Some(0.99), || Some(4)),
            Ok(JoinPlan {
                kept: 0.995,
                pooled: true,
                participants: 11,
                latepooled: Some(5)
            })
        );
        // A low score (or a pending task) is counted, kept at -3.
        for score in [0.5, PENDING_SCORE] {
            assert_eq!(
                plan_join(10, 10, score, || Some(0.99), never_late),
                Ok(JoinPlan {
                    kept: CAPPED_SCORE,
                    pooled: false,
                    participants: 11,
                    latepooled: None
                })
            );
        }
        // HIGHSCORE compares the full-precision score.
        let just_below = 0.99 - f64::EPSILON;
        assert!(
            !plan_join(10, 10, just_below, || Some(0.99), never_late)
                .unwrap()
                .pooled
        );
        assert_eq!(
            plan_join(10, 10, 0.5, || None, never_late),
            Err(Refusal::Corrupt(field::HIGHSCORE))
        );
        assert_eq!(
            plan_join(10, 10, 0.999, || Some(0.99), || None),
            Err(Refusal::Corrupt(field::LATEPOOLED))
        );
        assert_eq!(
            plan_join(10, 10, 0.999, || Some(0.99), || Some(MAX_COUNT)),
            Err(Refusal::LateOverflow)
        );
        assert_eq!(
            plan_join(MAX_COUNT, i64::MAX, 0.5, never, never_late),
            Err(Refusal::CountOverflow)
        );
    }

    #[test]
    fn a_duplicate_join_is_pooled_unless_capped_and_refused_at_the_count_bound() {
        for s in [0.0, 0.5, PENDING_SCORE, AWAY_SCORE, AWAY_PENDING_SCORE] {
            assert_eq!(plan_duplicate(7, s), Ok(true), "{s}");
        }
        assert_eq!(plan_duplicate(7, CAPPED_SCORE), Ok(false));
        assert_eq!(plan_duplicate(MAX_COUNT - 1, 0.5), Ok(true));
        assert_eq!(plan_duplicate(MAX_COUNT, 0.5), Err(Refusal::CountOverflow));
    }

    #[test]
    fn task_leave_and_enter_plans_give_back_the_same_score() {
        let keyed = || 0.375;
        let never = || -> f64 { panic!("keyed score computed for nothing") };
        assert_eq!(plan_task(Some(PENDING_SCORE), keyed), Some(0.375));
        for other in [
            None,
            Some(0.1),
            Some(AWAY_SCORE),
            Some(AWAY_PENDING_SCORE),
            Some(CAPPED_SCORE),
        ] {
            assert_eq!(plan_task(other, never), None);
        }
        assert_eq!(plan_leave(Some(0.375)), Some(AWAY_SCORE));
        assert_eq!(plan_leave(Some(0.0)), Some(AWAY_SCORE));
        assert_eq!(plan_leave(Some(PENDING_SCORE)), Some(AWAY_PENDING_SCORE));
        for no in [
            None,
            Some(AWAY_SCORE),
            Some(AWAY_PENDING_SCORE),
            Some(CAPPED_SCORE),
        ] {
            assert_eq!(plan_leave(no), None);
        }
        assert_eq!(plan_enter(true, Some(AWAY_SCORE), keyed), Some(0.375));
        assert_eq!(
            plan_enter(true, Some(AWAY_PENDING_SCORE), never),
            Some(PENDING_SCORE)
        );
        for no in [None, Some(0.375), Some(PENDING_SCORE), Some(CAPPED_SCORE)] {
            assert_eq!(plan_enter(true, no, never), None);
        }
        assert_eq!(plan_enter(false, Some(AWAY_SCORE), never), None);
        // Leave then enter: the score the user had, whatever the path.
        let s = plan_task(Some(PENDING_SCORE), keyed);
        let back = plan_enter(true, plan_leave(s), keyed);
        assert_eq!(back, s);
        let pending_back = plan_enter(true, plan_leave(Some(PENDING_SCORE)), never);
        assert_eq!(pending_back, Some(PENDING_SCORE));
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
    fn meta_values_parse_back_and_garbage_is_refused() {
        let r = Rules {
            winners: 3,
            shards: 64,
            poolcap: 10,
            highscore_text: b".75".to_vec(),
            highscore: 0.75,
            restore: false,
            drawn: true,
            seed: b"0123456789abcdef".to_vec(),
        };
        let f = r.fields();
        let get = |k: &str| {
            f.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.clone())
                .unwrap()
        };
        assert_eq!(parse::winners(&get(field::WINNERS)), Some(3));
        assert_eq!(parse::shards(&get(field::SHARDS)), Some(64));
        assert_eq!(parse::non_negative(&get(field::POOLCAP)), Some(10));
        assert_eq!(parse::highscore(&get(field::HIGHSCORE)), Some(0.75));
        assert_eq!(parse::restore(&get(field::RESTORE)), Some(false));
        assert_eq!(parse::drawn(&get(field::STATE)), Some(true));
        assert_eq!(parse::non_negative(&get(field::LATEPOOLED)), Some(0));
        for bad in [&b""[..], b"x", b"-1", b"1.5", b" 3", b"9223372036854775808"] {
            assert_eq!(parse::non_negative(bad), None, "{bad:?}");
        }
        assert_eq!(parse::winners(b"0"), None);
        assert_eq!(parse::winners(b"1001"), None);
        assert_eq!(parse::shards(b"12"), None);
        assert_eq!(parse::highscore(b"2"), None);
        assert_eq!(parse::restore(b"YES"), None);
        assert_eq!(parse::drawn(b"closed"), None);
        assert_eq!(
            parse::seed(&get(field::SEED)),
            Some(&b"0123456789abcdef"[..])
        );
        assert_eq!(parse::seed(b"short"), None);
        assert_eq!(parse::seed(&[b'x'; 65]), None);
        assert!(parse::seed(&[0u8; 64]).is_some());
    }

    #[test]
    fn pooled_total_counts_everyone_up_to_the_cap_and_the_late_high_scores() {
        assert_eq!(pooled_total(0, 700_000, 0), Some(0));
        assert_eq!(pooled_total(5, 700_000, 0), Some(5));
        assert_eq!(pooled_total(1_000_000, 700_000, 3_000), Some(703_000));
        assert_eq!(pooled_total(i64::MAX, i64::MAX, 1), None);
        assert_eq!(pooled_total(MAX_COUNT, MAX_COUNT, 0), Some(MAX_COUNT));
        assert_eq!(pooled_total(MAX_COUNT, MAX_COUNT, 1), None);
        assert_eq!(parse::participants(b"9007199254740991"), Some(MAX_COUNT));
        assert_eq!(parse::participants(b"9007199254740992"), None);
        assert_eq!(parse::latepooled(b"9007199254740992"), None);
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

    /// Runs [`merge_lazy`] over per-shard pools, counting the entries read.
    fn lazy_top(pools: &[Vec<Entry>], n: usize) -> (Vec<Entry>, usize) {
        let streams: Vec<Vec<Entry>> = pools.iter().map(|p| brute_top(p, usize::MAX)).collect();
        let mut pos = vec![0usize; streams.len()];
        let mut read = 0usize;
        let heads: Vec<Option<Entry>> = streams
            .iter()
            .map(|s| {
                read += usize::from(!s.is_empty());
                s.first().cloned()
            })
            .collect();
        let got = merge_lazy(
            heads,
            |i| {
                pos[i] += 1;
                let e = streams[i].get(pos[i]).cloned();
                read += usize::from(e.is_some());
                e
            },
            n,
        );
        (got, read)
    }

    #[test]
    fn lazy_merge_equals_brute_force_top_and_reads_little() {
        let mut rng = StdRng::seed_from_u64(2025);
        for round in 0..600 {
            let shards = 1u64 << rng.gen_range(0..7);
            let users = rng.gen_range(0..600);
            // Few distinct scores in some rounds, to force many ties.
            let distinct = if round % 2 == 0 { 5 } else { 1_000_000 };
            // Some rounds crowd the best scores into one shard.
            let skew = round % 4 == 1;
            let mut all: Vec<Entry> = Vec::new();
            let mut pools: Vec<Vec<Entry>> = vec![Vec::new(); shards as usize];
            for u in 0..users {
                let id = if rng.gen_bool(0.5) {
                    format!("{u}")
                } else {
                    format!("user:{u}")
                }
                .into_bytes();
                let s = shard_of(&id, shards) as usize;
                let score = match rng.gen_range(0..12) {
                    0 => PENDING_SCORE,
                    1 => AWAY_SCORE,
                    2 => CAPPED_SCORE,
                    _ if skew && s == 0 => score_of(999_999 - rng.gen_range(0..distinct.min(1000))),
                    _ => score_of(rng.gen_range(0..distinct)),
                };
                pools[s].push((id.clone(), score));
                all.push((id, score));
            }
            let n = rng.gen_range(1..80);
            let (got, read) = lazy_top(&pools, n);
            assert_eq!(
                got,
                brute_top(&all, n),
                "round {round}: shards {shards}, n {n}"
            );
            assert!(read <= n + shards as usize, "read {read} for n {n}");
        }
    }

    #[test]
    fn true_top_is_the_shards_best_and_nothing_left_out_ranks_first() {
        let top: Vec<Published<'_>> = vec![(b"a", 0.9), (b"b", 0.8), (b"c", 0.8), (b"d", 0.01)];
        let last_global: Published<'_> = (b"z", 0.5);
        // The exact top 2 (b ranks before c: equal scores, user descending
        // is not the order here: c > b byte-wise, so c comes first).
        let mut sorted = top.clone();
        sorted.sort_by(|x, y| y.1.total_cmp(&x.1).then(y.0.cmp(x.0)));
        assert_eq!(
            check_true_top(&sorted[..2], &sorted[..3], Some(last_global)),
            Err(LeftOut {
                user: b"b".to_vec(),
                score: 0.8,
                above: Some((b"z".to_vec(), 0.5)),
            })
        );
        // With the global cut-off above the shard's third, the two are fine.
        assert_eq!(
            check_true_top(&sorted[..2], &sorted[..3], Some((b"q", 0.8))),
            Ok(())
        );
        assert_eq!(
            check_true_top(&sorted[..3], &sorted[..4], Some(last_global)),
            Ok(())
        );
        // A winner list that skips the shard's best.
        assert_eq!(
            check_true_top(&[sorted[1]], &sorted[..2], Some((b"q", 0.001))),
            Err(LeftOut {
                user: b"a".to_vec(),
                score: 0.9,
                above: Some((sorted[1].0.to_vec(), 0.8))
            })
        );
        // A short global list: every candidate must win.
        assert!(check_true_top(&sorted[..3], &sorted[..4], None).is_err());
        assert_eq!(check_true_top(&sorted, &sorted, None), Ok(()));
        // A shard without candidates publishes nothing, whatever the cut-off.
        assert_eq!(check_true_top(&[], &[], None), Ok(()));
        assert_eq!(check_true_top(&[], &[], Some(last_global)), Ok(()));
        // The global last winner itself is not "after" itself.
        assert!(check_true_top(&[], &[(b"z", 0.5)], Some(last_global)).is_err());
    }

    #[test]
    fn merge_of_nothing_is_empty() {
        let none: Vec<Option<Entry>> = vec![];
        assert!(merge_lazy(none, |_| None, 5).is_empty());
        assert!(merge_lazy(vec![None, None], |_: usize| -> Option<Entry> { None }, 5).is_empty());
    }
}
