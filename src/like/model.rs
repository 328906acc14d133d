//! The pure logic of LIKE: user ids and their id ranges, the memory model,
//! the promotion plan, bit operations in Redis bit order, count arithmetic.
//! No Redis here; the handlers in `commands.rs` feed these functions what
//! they read.
//!
//! # Layout
//!
//! Ids are cut into ranges of [`RANGE_IDS`] ids: range `k` holds the ids
//! `k × 64,000 … k × 64,000 + 63,999`. A range is either in set form (its
//! likers are members of the post's one Set) or in bitmap form (it has a
//! chunk: a String of [`CHUNK_BYTES`] bytes whose bit `id − k × 64,000` is
//! set for each liker). A post's likers are the union of both; a liker is
//! never in both once a promotion has finished.
//!
//! # The memory model (the only place it lives)
//!
//! Fixed arithmetic, so that the module, its Lua twin, a replica and any
//! server build decide the same promotion (see `docs/like.md` for the
//! measurements behind the figures):
//!
//! | structure | bytes |
//! |---|---|
//! | any key | [`KEY_BYTES`] |
//! | a chunk | [`KEY_BYTES`] + [`CHUNK_BYTES`] |
//! | a Set of n ≤ 512 ids (intset), largest `top` | 64 + 8 + n × (2, 4 or 8 by `top`) |
//! | a Set of n > 512 ids (hashtable) | 64 + 48 × n |
//!
//! A range pays for a chunk when its likers, kept in a hashtable Set,
//! would take more than the chunk: more than 168 likers among its 64,000
//! ids (one id in 381).

use bitvec::prelude::*;

/// Ids per range (and bits per chunk).
pub const RANGE_IDS: u64 = 64_000;
/// The content length of a chunk: [`RANGE_IDS`] bits. With the String's
/// header the allocation is 8,006 bytes, inside jemalloc's 8 KiB class (a
/// power-of-two chunk would spill into the 10 KiB class and waste 25%).
pub const CHUNK_BYTES: usize = (RANGE_IDS / 8) as usize;
/// The length of a chunk whose range is still being migrated: one zero
/// byte past the range. Ids never reach that byte (`GETBIT` of an id's
/// offset reads the same), and a write that sees this length knows, with
/// no other key read, that the Set may still hold likers of the range.
pub const MIGRATING_BYTES: usize = CHUNK_BYTES + 1;

/// Any key: object, key name, dict entry.
pub const KEY_BYTES: u64 = 64;
/// A Set of at most this many integers is an intset (`set-max-intset-entries`).
pub const INTSET_MAX_ENTRIES: u64 = 512;
/// An intset's header.
pub const INTSET_HEADER_BYTES: u64 = 8;
/// A hashtable Set's cost per member (dict entry, sds member, table slot).
pub const HASHTABLE_MEMBER_BYTES: u64 = 48;

/// The largest `NOW`: unix-ms must stay exact as a sorted-set score.
pub const MAX_NOW_MS: i64 = (1 << 53) - 1;
/// The largest user id any configuration allows (`like-max-id`'s ceiling).
pub const MAX_ID: u64 = u32::MAX as u64;

/// Members a promotion check samples (`SSCAN B:set 0 COUNT 256`: at most
/// 2,561 table steps, whatever the Set).
pub const SAMPLE: u64 = 256;
/// Sample hits a block of ranges needs before its estimate is trusted
/// (about 35% relative error); an exact sample (the whole set) needs one.
pub const MIN_HITS: u64 = 8;
/// Members a migration step reads (`SSCAN … COUNT 64`).
pub const MOVE_STEP: u64 = 64;
/// Chunks a creation step allocates at most: 8 × 8,001 bytes.
pub const CREATE_STEP: usize = 8;
/// Chunks a settling step rewrites at most.
pub const SETTLE_STEP: usize = 16;
/// Bits of the chunk index a creation or settling step looks at, at most.
pub const WALK_STEP: u64 = 64;
/// A promotion is looked at (and advanced) by the writes that bring the
/// count to a multiple of this, and by every write to a range being
/// migrated.
pub const OBSERVE_EVERY: i64 = 32;

/// Parses a user id the way Redis parses integers, within `0 ..= max`.
/// Returns `None` for anything else (the caller replies with the family
/// error naming the range).
pub fn parse_user(bytes: &[u8], max: u64) -> Option<u64> {
    let v = parse_digits(bytes)?;
    (v <= max).then_some(v)
}

/// Parses canonical decimal digits (no sign, no leading zero, within
/// u64): the only form LIKE writes ids and counts in. A hand-written loop:
/// this runs on every write.
fn parse_digits(bytes: &[u8]) -> Option<u64> {
    if bytes.is_empty() || bytes.len() > 20 || (bytes.len() > 1 && bytes[0] == b'0') {
        return None;
    }
    let mut v: u64 = 0;
    for &b in bytes {
        let d = b.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as u64)?;
    }
    Some(v)
}

/// Returns the text of the error for a bad user id.
pub fn bad_user_message(max: u64) -> String {
    format!("user id must be an integer from 0 to {max}")
}

/// Returns the range of an id and the id's bit within the range's chunk.
pub fn locate(id: u64) -> (u64, u64) {
    (id / RANGE_IDS, id % RANGE_IDS)
}

/// Returns the last range an id up to `max_id` can fall in.
pub fn last_range(max_id: u64) -> u64 {
    max_id / RANGE_IDS
}

/// Returns the length of the chunk index needed to hold bit `range`.
pub fn index_len(range: u64) -> usize {
    (range / 8 + 1) as usize
}

/// The largest count kept, 2^53 − 1. A post has at most 2^32 likers (ids
/// up to `u32::MAX`), so a larger count is corrupt data; the bound also
/// keeps every count exact in the Lua twins, whose numbers are doubles.
pub const MAX_COUNT: i64 = (1 << 53) - 1;

/// Parses a stored count: a canonical integer from 0 to [`MAX_COUNT`].
/// Anything else (garbage, a sign, a negative number, a larger number) is
/// corrupt.
pub fn parse_count(bytes: &[u8]) -> Option<i64> {
    parse_digits(bytes)
        .and_then(|v| i64::try_from(v).ok())
        .filter(|&v| v <= MAX_COUNT)
}

/// Why a count cannot change.
#[derive(Debug, PartialEq, Eq)]
pub enum CountError {
    /// The count would pass [`MAX_COUNT`].
    Overflow,
    /// The count would go below zero: it disagrees with the likers.
    Corrupt,
}

/// Returns `old + 1` or `old − 1` without wrapping around.
pub fn next_count(old: i64, liked: bool) -> Result<i64, CountError> {
    if liked {
        if old >= MAX_COUNT {
            return Err(CountError::Overflow);
        }
        Ok(old + 1)
    } else if old > 0 {
        Ok(old - 1)
    } else {
        Err(CountError::Corrupt)
    }
}

/// Returns the modelled memory of a Set of `members` integer ids whose
/// largest is `top`: an intset of 2, 4 or 8 bytes per id up to
/// [`INTSET_MAX_ENTRIES`] members, a hashtable beyond.
pub fn set_memory(members: u64, top: u64) -> u64 {
    if members == 0 {
        return 0;
    }
    if members <= INTSET_MAX_ENTRIES {
        let width = match top {
            0..=0x7fff => 2,
            0x8000..=0x7fff_ffff => 4,
            _ => 8,
        };
        KEY_BYTES + INTSET_HEADER_BYTES + members * width
    } else {
        KEY_BYTES + members.saturating_mul(HASHTABLE_MEMBER_BYTES)
    }
}

/// Returns the modelled memory of one chunk.
pub fn chunk_memory() -> u64 {
    KEY_BYTES + CHUNK_BYTES as u64
}

/// Returns the modelled memory of a post: its Set, its chunks and, when it
/// has chunks, the chunk index of `index_bytes` bytes.
pub fn post_memory(set_members: u64, set_top: u64, chunks: u64, index_bytes: u64) -> u64 {
    let bitmaps = if chunks > 0 {
        chunks * chunk_memory() + KEY_BYTES + index_bytes
    } else {
        0
    };
    set_memory(set_members, set_top) + bitmaps
}

/// Returns true when a write that brought the count to `count` looks at
/// the post's promotion.
pub fn observes(count: i64) -> bool {
    count % OBSERVE_EVERY == 0
}

/// Returns the set size at which a post is next checked for promotion
/// after one that holds `members` in its Set: when the Set has doubled,
/// never below `like-promote-at + 1`, and never while the Set is small
/// enough to be an intset (at most 512 ids, 2 to 8 bytes each: no range
/// of it pays for a chunk).
pub fn next_check(members: u64, promote_at: i64) -> u64 {
    let floor = (promote_at.max(0) as u64 + 1).max(INTSET_MAX_ENTRIES + 1);
    if members <= INTSET_MAX_ENTRIES {
        floor
    } else {
        members.saturating_mul(2).max(floor)
    }
}

/// Returns the set size of the check that follows a finished promotion
/// leaving `members` in the Set: at once (the sample may have missed dense
/// blocks), unless the Set is now too small to be worth it. A check that
/// promotes nothing then waits for the Set to double ([`next_check`]).
pub fn recheck(members: u64, promote_at: i64) -> u64 {
    members.max(next_check(0, promote_at))
}

/// Decides which ranges to promote from a sample of the Set.
///
/// `sample` holds ids read from the Set (`SSCAN B:set 0 COUNT 256`; the
/// order and duplicates do not matter), `set_size` its `SCARD`, `exact`
/// whether the sample is the whole Set, `last` the last range an id may
/// fall in. Returns the ranges to promote as disjoint intervals
/// `(first, last)`, ascending.
///
/// A range is promoted when the Set members it holds would take more
/// memory than a chunk. With the whole Set at hand that is exact. From a
/// sample, each hit stands for `set_size / sample` members; single ranges
/// rarely collect enough hits to be trusted, so the estimate also looks at
/// aligned blocks of 2, 4, … 2^17 ranges: when the hits of a block outside
/// ranges already promoted are enough, and win over the span from the
/// first to the last range they fall in, that span is promoted. A dense
/// core is thus promoted whole, while a sparse tail, or one far outlier,
/// is not: their blocks never hold enough members to pay for their
/// chunks. The arithmetic is integer and stays below 2^53, so the
/// Lua twin decides alike.
pub fn plan(sample: &[u64], set_size: u64, exact: bool, last: u64) -> Vec<(u64, u64)> {
    let mut ids: Vec<u64> = sample.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let m = ids.len() as u64;
    // A Set of at most 512 ids is an intset, 2 to 8 bytes an id: no range
    // of it pays for an 8,064-byte chunk.
    if m == 0 || set_size <= INTSET_MAX_ENTRIES {
        return Vec::new();
    }
    // h hits over `ranges` ranges win when h × (set_size / m) members, at
    // 48 bytes each, outweigh that many chunks.
    let wins =
        |h: u64, ranges: u64| h * set_size * HASHTABLE_MEMBER_BYTES > ranges * chunk_memory() * m;
    let trusted = |h: u64| exact || h >= MIN_HITS;
    let mut promoted: Vec<(u64, u64)> = Vec::new();
    // Per block: (block, hits outside promoted ranges, ranges promoted,
    // first and last range holding those hits), by block.
    let mut blocks: Vec<(u64, u64, u64, u64, u64)> = Vec::new();
    for id in ids {
        let r = id / RANGE_IDS;
        if r > last {
            continue;
        }
        match blocks.last_mut() {
            Some(b) if b.0 == r => b.1 += 1,
            _ => blocks.push((r, 1, 0, r, r)),
        }
    }
    for b in blocks.iter_mut() {
        if trusted(b.1) && wins(b.1, 1) {
            promoted.push((b.0, b.0));
            *b = (b.0, 0, 1, u64::MAX, 0);
        }
    }
    if !exact {
        for _level in 1..=17u32 {
            let mut up: Vec<(u64, u64, u64, u64, u64)> = Vec::new();
            for &(b, h, done, lo, hi) in &blocks {
                match up.last_mut() {
                    Some(e) if e.0 == b >> 1 => {
                        e.1 += h;
                        e.2 += done;
                        e.3 = e.3.min(lo);
                        e.4 = e.4.max(hi);
                    }
                    _ => up.push((b >> 1, h, done, lo, hi)),
                }
            }
            for e in up.iter_mut() {
                if e.1 == 0 {
                    continue;
                }
                // Only the span from the first to the last range hit is
                // promoted: a block's empty end stays in set form.
                let (lo, hi) = (e.3, e.4);
                let inside: u64 = promoted
                    .iter()
                    .map(|&(a, b)| b.min(hi).saturating_add(1).saturating_sub(a.max(lo)))
                    .sum();
                let open = hi - lo + 1 - inside;
                if trusted(e.1) && wins(e.1, open) {
                    promoted.push((lo, hi));
                    *e = (e.0, 0, e.2 + open, u64::MAX, 0);
                }
            }
            blocks = up;
        }
    }
    // Blocks promoted at a coarser level contain those promoted before.
    promoted.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::new();
    for (lo, hi) in promoted {
        match out.last_mut() {
            Some(last) if lo <= last.1 + 1 => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// Returns the number of ranges in a plan.
pub fn plan_ranges(plan: &[(u64, u64)]) -> u64 {
    plan.iter().map(|(lo, hi)| hi - lo + 1).sum()
}

/// Returns bit `off` of a chunk (false beyond its end).
pub fn get_bit(bytes: &[u8], off: u64) -> bool {
    bytes
        .view_bits::<Msb0>()
        .get(off as usize)
        .map(|b| *b)
        .unwrap_or(false)
}

/// Sets bit `off` to `value`; returns true if it changed. A bit beyond the
/// end is left alone.
pub fn set_bit(bytes: &mut [u8], off: u64, value: bool) -> bool {
    match bytes.view_bits_mut::<Msb0>().get_mut(off as usize) {
        Some(mut b) => {
            let old = *b;
            *b = value;
            old != value
        }
        None => false,
    }
}

/// Returns the number of bits set (`BITCOUNT`).
pub fn popcount(bytes: &[u8]) -> u64 {
    bytes.iter().map(|b| b.count_ones() as u64).sum()
}

/// Calls `f` with the offset of every bit set in both, ascending.
pub fn common_bits(a: &[u8], b: &[u8], mut f: impl FnMut(u64)) {
    for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
        let both = x & y;
        if both != 0 {
            for j in 0..8 {
                if both & (0x80 >> j) != 0 {
                    f((i as u64) * 8 + j as u64);
                }
            }
        }
    }
}

/// Calls `f` with the offset of every bit set, ascending.
pub fn each_bit(a: &[u8], mut f: impl FnMut(u64)) {
    for (i, x) in a.iter().enumerate() {
        if *x != 0 {
            for j in 0..8 {
                if x & (0x80 >> j) != 0 {
                    f((i as u64) * 8 + j as u64);
                }
            }
        }
    }
}

/// Returns how many of the oldest recent likers to drop so that at most
/// `cap` remain of `len`.
pub fn recent_overflow(len: u64, cap: u64) -> u64 {
    len.saturating_sub(cap)
}

// ---- one user's like, in either form (the write's plan) ----

/// A write command's change of one user's like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Toggle,
    Add,
    Rem,
}

impl Op {
    /// Whether the user likes the post after the write, given before.
    pub fn want(self, was: bool) -> bool {
        match self {
            Op::Add => true,
            Op::Rem => false,
            Op::Toggle => !was,
        }
    }
}

/// Where the user's like lives, as read before the write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// The user's range has a chunk: the user's bit, and whether the range
    /// is being migrated (its likers may still be members of the Set).
    Bitmap { bit: bool, migrating: bool },
    /// The user's range is in set form.
    Set,
}

/// The store of one user's like in one post: `B:set` (the user as a
/// member) and the user's bit in its chunk. The command layer implements
/// it on the post's keys; the unit tests on a plain struct.
pub trait LikeStore {
    type Error;
    /// Returns whether the user is a member of the Set (a read).
    fn is_member(&mut self) -> Result<bool, Self::Error>;
    /// Adds the user to the Set: true when it was not a member.
    fn add_member(&mut self) -> Result<bool, Self::Error>;
    /// Removes the user from the Set: true when it was a member.
    fn remove_member(&mut self) -> Result<bool, Self::Error>;
    /// Sets or clears the user's bit (a post in bitmap form only).
    fn set_bit(&mut self, value: bool);
    /// The error of a count that cannot change.
    fn count_error(&mut self, e: CountError) -> Self::Error;
}

/// What a write did to one user's like.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outcome {
    /// Whether the user liked the post before.
    pub was: bool,
    /// Whether the user likes it after.
    pub liked: bool,
    /// Whether a key changed (the write replicates then): a bit, or the Set.
    pub dirty: bool,
    /// Whether the Set gained the user (a Set created again takes the
    /// post's expiry).
    pub set_added: bool,
    /// The count after the write.
    pub count: i64,
}

/// Applies `op` for one user through `store`, from what was read: the
/// form of the user's range and the count `old`. A count that cannot
/// change (past [`MAX_COUNT`], below zero) is refused before anything is
/// written: where the membership is not known, it is read first (a Set
/// write answers it only once done).
///
/// - Bitmap form: the bit answers; in a range being migrated the user may
///   still be a member of the Set, and `SREM` answers and moves the like
///   to the bit at once (an unlike that would take a zero count below
///   zero is refused first).
/// - Set form: one `SADD` (ADD; a TOGGLE, then `SREM` when it answered 0)
///   or `SREM` (REM) answers and writes, unless the count is at a limit.
pub fn like_write<S: LikeStore>(
    store: &mut S,
    op: Op,
    form: Form,
    old: i64,
) -> Result<Outcome, S::Error> {
    let (was, liked, dirty, set_added) = match form {
        Form::Bitmap { bit, migrating } => {
            let in_set = if !bit && migrating {
                if old == 0 && op != Op::Add && store.is_member()? {
                    return Err(store.count_error(CountError::Corrupt));
                }
                store.remove_member()?
            } else {
                false
            };
            let was = bit || in_set;
            let want = op.want(was);
            if want != was {
                // Nothing is written yet (a SREM that answered 0 removed
                // nothing).
                if let Err(e) = next_count(old, want) {
                    return Err(store.count_error(e));
                }
            }
            if want != bit {
                store.set_bit(want);
            }
            (was, want, in_set || want != bit, false)
        }
        Form::Set => {
            // A count at a limit needs the membership before writing.
            let at_limit = (old == MAX_COUNT && op != Op::Rem) || (old == 0 && op != Op::Add);
            if at_limit {
                let was = store.is_member()?;
                let want = op.want(was);
                if was != want {
                    if let Err(e) = next_count(old, want) {
                        return Err(store.count_error(e));
                    }
                    if want {
                        store.add_member()?;
                    } else {
                        store.remove_member()?;
                    }
                }
                (was, want, was != want, was != want && want)
            } else {
                match op {
                    Op::Add => {
                        let added = store.add_member()?;
                        (!added, true, added, added)
                    }
                    Op::Rem => {
                        let removed = store.remove_member()?;
                        (removed, false, removed, false)
                    }
                    Op::Toggle => {
                        let added = store.add_member()?;
                        if !added {
                            store.remove_member()?;
                        }
                        (!added, added, true, added)
                    }
                }
            }
        }
    };
    let count = if was != liked {
        // Refused above before anything was written, when it would fail.
        match next_count(old, liked) {
            Ok(n) => n,
            Err(e) => return Err(store.count_error(e)),
        }
    } else {
        old
    };
    Ok(Outcome {
        was,
        liked,
        dirty,
        set_added,
        count,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use rand::rngs::StdRng;
    use rand::{Rng, SeedableRng};

    use super::*;

    #[test]
    fn user_ids_parse_like_redis_integers_within_the_range() {
        assert_eq!(parse_user(b"0", 10), Some(0));
        assert_eq!(parse_user(b"10", 10), Some(10));
        assert_eq!(parse_user(b"4294967295", MAX_ID), Some(MAX_ID));
        for bad in [
            &b""[..],
            b"11",
            b"-1",
            b"+1",
            b"01",
            b" 1",
            b"1.0",
            b"abc",
            b"99999999999999999999999",
        ] {
            assert_eq!(
                parse_user(bad, 10),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(
            bad_user_message(7),
            "user id must be an integer from 0 to 7"
        );
    }

    #[test]
    fn ids_fall_in_ranges_of_64000() {
        assert_eq!(locate(0), (0, 0));
        assert_eq!(locate(63_999), (0, 63_999));
        assert_eq!(locate(64_000), (1, 0));
        assert_eq!(locate(MAX_ID), (67_108, 55_295));
        assert_eq!(last_range(MAX_ID), 67_108);
        assert_eq!(index_len(67_108), 8_389);
        assert_eq!(CHUNK_BYTES * 8, RANGE_IDS as usize);
        // The last id of a range is the last bit of its chunk.
        let mut c = vec![0u8; CHUNK_BYTES];
        assert!(set_bit(&mut c, 63_999, true));
        assert_eq!(c[CHUNK_BYTES - 1], 1);
    }

    #[test]
    fn counts_parse_strictly_and_never_wrap() {
        assert_eq!(parse_count(b"0"), Some(0));
        assert_eq!(parse_count(b"9007199254740991"), Some(MAX_COUNT));
        assert_eq!(parse_count(b"9007199254740992"), None);
        assert_eq!(parse_count(b"9223372036854775807"), None);
        for bad in [&b""[..], b"-1", b"x", b"01", b" 1", b"9223372036854775808"] {
            assert_eq!(parse_count(bad), None);
        }
        assert_eq!(next_count(5, true), Ok(6));
        assert_eq!(next_count(5, false), Ok(4));
        assert_eq!(next_count(MAX_COUNT - 1, true), Ok(MAX_COUNT));
        assert_eq!(next_count(MAX_COUNT, true), Err(CountError::Overflow));
        assert_eq!(next_count(0, false), Err(CountError::Corrupt));
    }

    #[test]
    fn bits_follow_redis_order() {
        // SETBIT k 0 1 sets the top bit of byte 0; SETBIT k 9 1 bit 6 of byte 1.
        let mut b = vec![0u8; 2];
        assert!(set_bit(&mut b, 0, true));
        assert!(set_bit(&mut b, 9, true));
        assert_eq!(b, vec![0x80, 0x40]);
        assert!(!set_bit(&mut b, 9, true));
        assert!(get_bit(&b, 9) && !get_bit(&b, 8) && !get_bit(&b, 100));
        assert!(!set_bit(&mut b, 100, true), "beyond the end is left alone");
        assert_eq!(popcount(&b), 2);
        let mut seen = Vec::new();
        each_bit(&b, |o| seen.push(o));
        assert_eq!(seen, vec![0, 9]);
    }

    #[test]
    fn the_memory_model_follows_the_set_encodings() {
        // Intsets: 16-bit ids up to 32767, 32-bit up to 2^31 - 1, then 64.
        assert_eq!(set_memory(17, 16), 64 + 8 + 17 * 2);
        assert_eq!(set_memory(512, 32_768), 64 + 8 + 512 * 4);
        assert_eq!(set_memory(512, u32::MAX as u64), 64 + 8 + 512 * 8);
        // A hashtable beyond 512 members, whatever the ids.
        assert_eq!(set_memory(513, 0), 64 + 513 * 48);
        assert_eq!(set_memory(0, 0), 0);
        assert_eq!(chunk_memory(), 8_064);
        assert_eq!(post_memory(0, 0, 2, 1), 2 * 8_064 + 64 + 1);
        // A range pays for its chunk from 169 hashtable members on.
        assert_eq!(168 * HASHTABLE_MEMBER_BYTES, chunk_memory());
        assert!(169 * HASHTABLE_MEMBER_BYTES > chunk_memory());
        // Non-decreasing in both members and the largest id.
        for m in [1u64, 100, 512, 513, 10_000] {
            for t in [0u64, 32_767, 32_768, 1 << 31, 1 << 40] {
                assert!(set_memory(m, t) <= set_memory(m + 1, t));
                assert!(set_memory(m, t) <= set_memory(m, t.saturating_mul(2) + 1));
            }
        }
    }

    #[test]
    fn checks_come_at_multiples_and_after_doubling() {
        assert!(observes(32) && observes(0) && !observes(16) && !observes(33));
        assert_eq!(next_check(0, 512), 513);
        assert_eq!(next_check(300, 512), 513);
        assert_eq!(next_check(512, 8), 513, "an intset is never worth a check");
        assert_eq!(next_check(600, 8), 1_200);
        assert_eq!(next_check(1_000, 512), 2_000);
        assert_eq!(next_check(1_000, 5_000), 5_001);
        assert_eq!(next_check(u64::MAX, 512), u64::MAX);
        assert_eq!(recheck(100, 512), 513);
        assert_eq!(recheck(40_000, 512), 40_000);
    }

    /// A whole-set sample is exact: exactly the ranges with more than 168
    /// members are promoted, and never those of an intset.
    #[test]
    fn an_exact_plan_promotes_ranges_that_pay_for_their_chunk() {
        let mut ids: Vec<u64> = (0..169).collect(); // range 0: 169 members
        ids.extend(64_000..64_000 + 168); // range 1: 168
        ids.extend([5 * 64_000, 9_000_000]); // two loners
        assert!(plan(&ids, ids.len() as u64, true, last_range(MAX_ID)).is_empty());
        ids.extend((0..200).map(|i| 2_560_000 + i * 300)); // range 40: 200, total 539
        let s = ids.len() as u64;
        assert_eq!(
            plan(&ids, s, true, last_range(MAX_ID)),
            vec![(0, 0), (40, 40)]
        );
        // Duplicates (SSCAN may repeat members while rehashing) count once.
        let mut dup = ids.clone();
        dup.extend(64_000..64_010);
        assert_eq!(
            plan(&dup, s, true, last_range(MAX_ID)),
            vec![(0, 0), (40, 40)]
        );
        assert!(plan(&[], 10, true, 5).is_empty());
    }

    fn sample_of(rng: &mut StdRng, ids: &[u64]) -> Vec<u64> {
        (0..SAMPLE)
            .map(|_| ids[rng.gen_range(0..ids.len())])
            .collect()
    }

    /// Promotes like the module: a check samples the Set, plans, the
    /// planned ranges leave the Set, and the Set left is checked again at
    /// once, until a check plans nothing. Returns the ranges promoted.
    fn promote_all(rng: &mut StdRng, ids: &[u64]) -> BTreeSet<u64> {
        let mut left: Vec<u64> = ids.to_vec();
        let mut done = BTreeSet::new();
        for _ in 0..20 {
            if left.len() as u64 <= INTSET_MAX_ENTRIES {
                break;
            }
            let p = plan(
                &sample_of(rng, &left),
                left.len() as u64,
                false,
                last_range(MAX_ID),
            );
            if p.is_empty() {
                break;
            }
            for (lo, hi) in p {
                done.extend(lo..=hi);
            }
            left.retain(|&u| !done.contains(&(u / RANGE_IDS)));
        }
        done
    }

    /// Sampled plans on the shapes that matter: a dense post is promoted
    /// whole, likers spread over 4 billion ids are not, one far outlier
    /// does not block a dense core, and a dense core with a sparse tail
    /// promotes the core only.
    #[test]
    fn sampled_plans_promote_dense_ranges_only() {
        let mut rng = StdRng::seed_from_u64(7);
        let uniform = |rng: &mut StdRng, n: usize, top: u64| -> Vec<u64> {
            (0..n).map(|_| rng.gen_range(0..top)).collect()
        };
        // 1M likers below 100M: about 640 per range, every range pays.
        let ids = uniform(&mut rng, 1_000_000, 100_000_000);
        let done = promote_all(&mut rng, &ids);
        assert!(
            done.len() >= 1_540 && done.iter().all(|&r| r < 1_563),
            "{}",
            done.len()
        );
        // 1M likers below 4e9: 15 per range, a chunk never pays.
        let ids = uniform(&mut rng, 1_000_000, MAX_ID);
        assert!(promote_all(&mut rng, &ids).is_empty());
        // 2^20 - 1 likers below 20M and one at 4e9: the core is promoted,
        // the outlier's range is not.
        let mut ids = uniform(&mut rng, (1 << 20) - 1, 20_000_000);
        ids.push(4_000_000_000);
        let done = promote_all(&mut rng, &ids);
        assert!(
            done.len() >= 310 && done.iter().all(|&r| r < 313),
            "{}",
            done.len()
        );
        // 900k likers below 10M and 100k spread over 4e9: the core only.
        let mut ids = uniform(&mut rng, 900_000, 10_000_000);
        ids.extend(uniform(&mut rng, 100_000, MAX_ID));
        let done = promote_all(&mut rng, &ids);
        assert!(
            done.len() >= 150 && done.iter().all(|&r| r < 157),
            "{}",
            done.len()
        );
        // Ranges past the last one allowed are never planned.
        let ids = uniform(&mut rng, 100_000, 1_000_000);
        assert!(plan(&sample_of(&mut rng, &ids), 100_000, false, 3)
            .iter()
            .all(|&(_, hi)| hi <= 3));
    }

    #[test]
    fn common_bits_find_the_intersection() {
        let mut a = vec![0u8; 4];
        let mut b = vec![0u8; 2];
        for u in [1, 5, 8, 30] {
            set_bit(&mut a, u, true);
        }
        for u in [5, 8, 9] {
            set_bit(&mut b, u, true);
        }
        let mut out = Vec::new();
        common_bits(&a, &b, |o| out.push(o));
        assert_eq!(out, vec![5, 8]);
    }

    #[test]
    fn recent_overflow_counts_what_to_drop() {
        assert_eq!(recent_overflow(11, 10), 1);
        assert_eq!(recent_overflow(3, 10), 0);
        assert_eq!(recent_overflow(3, 0), 3);
    }

    /// Random likes and unlikes over a post whose ranges are promoted one
    /// by one (set members moved in slices, as the migration does):
    /// membership and count agree with a plain set at every step, and no
    /// liker is ever in both forms.
    #[test]
    fn random_likes_through_range_promotions_keep_membership_and_count() {
        let mut rng = StdRng::seed_from_u64(4);
        for _ in 0..20 {
            let mut reference = BTreeSet::new();
            let mut set = BTreeSet::new();
            let mut chunks: std::collections::BTreeMap<u64, (Vec<u8>, bool)> = Default::default();
            let mut pending: Vec<u64> = Vec::new();
            let mut count = 0i64;
            for step in 0..4000 {
                let u = rng.gen_range(0..4 * RANGE_IDS);
                let like = rng.gen_bool(0.7);
                let (k, off) = locate(u);
                let was = match chunks.get_mut(&k) {
                    Some((c, migrating)) => {
                        let bit = get_bit(c, off);
                        let in_set = !bit && *migrating && set.remove(&u);
                        if in_set {
                            set_bit(c, off, true);
                        }
                        bit || in_set
                    }
                    None => set.contains(&u),
                };
                if like != was {
                    match chunks.get_mut(&k) {
                        Some((c, _)) => {
                            set_bit(c, off, like);
                        }
                        None => {
                            if like {
                                set.insert(u);
                            } else {
                                set.remove(&u);
                            }
                        }
                    }
                    count = next_count(count, like).unwrap();
                }
                if like {
                    reference.insert(u);
                } else {
                    reference.remove(&u);
                }
                // Now and then a range is promoted, then migrated in slices.
                if step % 500 == 250 {
                    let r = rng.gen_range(0..4);
                    chunks.entry(r).or_insert((vec![0; MIGRATING_BYTES], true));
                    pending = set.iter().copied().collect();
                }
                for _ in 0..3 {
                    if let Some(m) = pending.pop() {
                        let (k, off) = locate(m);
                        if let Some((c, _)) = chunks.get_mut(&k) {
                            if set.remove(&m) {
                                set_bit(c, off, true);
                            }
                        }
                    }
                }
                if pending.is_empty() {
                    for (c, migrating) in chunks.values_mut() {
                        *migrating = false;
                        c.truncate(CHUNK_BYTES);
                    }
                }
                assert_eq!(count, reference.len() as i64);
                let held: u64 =
                    set.len() as u64 + chunks.values().map(|(c, _)| popcount(c)).sum::<u64>();
                assert_eq!(held, reference.len() as u64, "a liker in both forms");
            }
        }
    }

    /// One user's like in memory: Set membership, the bit when the range
    /// has a chunk, and every write, in order.
    struct Mem {
        member: bool,
        bit: Option<bool>,
        writes: Vec<&'static str>,
    }

    impl LikeStore for Mem {
        type Error = CountError;
        fn is_member(&mut self) -> Result<bool, CountError> {
            Ok(self.member)
        }
        // A Set command that changes nothing (SADD of a member, SREM of
        // none) writes nothing: Redis neither signals nor propagates it.
        fn add_member(&mut self) -> Result<bool, CountError> {
            let added = !std::mem::replace(&mut self.member, true);
            if added {
                self.writes.push("SADD");
            }
            Ok(added)
        }
        fn remove_member(&mut self) -> Result<bool, CountError> {
            let removed = std::mem::replace(&mut self.member, false);
            if removed {
                self.writes.push("SREM");
            }
            Ok(removed)
        }
        fn set_bit(&mut self, value: bool) {
            self.writes.push("SETBIT");
            self.bit = Some(value);
        }
        fn count_error(&mut self, e: CountError) -> CountError {
            e
        }
    }

    /// Every op, in both forms (and a range being migrated with the user
    /// still in the Set), from every count class: the outcome is the
    /// like's definition, the store ends holding the like in one place
    /// only, a refused write wrote nothing, and `dirty` says whether
    /// anything was written.
    #[test]
    fn like_write_plans_every_op_in_both_forms() {
        let ops = [Op::Toggle, Op::Add, Op::Rem];
        // (member, bit, migrating)
        let states = [
            (false, None, false),
            (true, None, false),
            (false, Some(false), false),
            (false, Some(true), false),
            (false, Some(false), true),
            (true, Some(false), true),
            (false, Some(true), true),
        ];
        for op in ops {
            for &(member, bit, migrating) in &states {
                for old in [0, 1, 5, MAX_COUNT - 1, MAX_COUNT] {
                    let mut m = Mem {
                        member,
                        bit,
                        writes: Vec::new(),
                    };
                    let form = match bit {
                        Some(b) => Form::Bitmap { bit: b, migrating },
                        None => Form::Set,
                    };
                    let was = member || bit == Some(true);
                    let want = op.want(was);
                    let case = format!(
                        "{op:?} member={member} bit={bit:?} migrating={migrating} old={old}"
                    );
                    let r = like_write(&mut m, op, form, old);
                    let expect_err = if want == was {
                        None
                    } else if want && old == MAX_COUNT {
                        Some(CountError::Overflow)
                    } else if !want && old == 0 {
                        Some(CountError::Corrupt)
                    } else {
                        None
                    };
                    match (r, expect_err) {
                        (Err(e), Some(x)) => {
                            assert_eq!(e, x, "{case}");
                            assert!(m.writes.is_empty(), "{case}: wrote {:?}", m.writes);
                            continue;
                        }
                        (Ok(o), None) => {
                            assert_eq!((o.was, o.liked), (was, want), "{case}");
                            let count = if was == want {
                                old
                            } else if want {
                                old + 1
                            } else {
                                old - 1
                            };
                            assert_eq!(o.count, count, "{case}");
                            let dirty = match bit {
                                None => member != want,
                                Some(b) => (!b && migrating && member) || want != b,
                            };
                            assert_eq!(o.dirty, dirty, "{case}: {:?}", m.writes);
                            assert_eq!(o.set_added, bit.is_none() && !member && want, "{case}");
                            // The like ends in one place: the bit when the
                            // range has a chunk (a migrating range's Set
                            // gives the user up), else the Set.
                            match bit {
                                Some(b) => {
                                    assert_eq!(m.bit, Some(want), "{case}");
                                    let left = if !b && migrating { false } else { member };
                                    assert_eq!(m.member, left, "{case}");
                                }
                                None => assert_eq!(m.member, want, "{case}"),
                            }
                        }
                        (r, x) => panic!("{case}: {r:?} expected error {x:?}"),
                    }
                }
            }
        }
    }
}
