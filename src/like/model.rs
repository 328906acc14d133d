//! The pure logic of LIKE: user ids, bitmap sizes, the promotion rule,
//! bit operations in Redis bit order, the recent-likers cap. No Redis here;
//! the handlers in `commands.rs` feed these functions what they read.

use bitvec::prelude::*;

/// The largest string Redis stores (`proto-max-bulk-len` default), which
/// bounds a bitmap: ids up to 2^32 − 1 fit exactly.
pub const MAX_BITMAP_BYTES: u64 = 512 * 1024 * 1024;

/// The memory model of promotion, in bytes. It follows what `MEMORY
/// USAGE` shows for Redis 7 under jemalloc closely enough to pick the
/// smaller form, but it is fixed arithmetic, so the module, its Lua twin, a
/// replica and any server build (jemalloc or libc malloc, Redis or Valkey)
/// decide the same promotion. See `docs/like.md` for the measurements.
///
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

/// Parses a user id the way Redis parses integers, within `0 ..= max`.
/// Returns `None` for anything else (the caller replies with the family
/// error naming the range).
pub fn parse_user(bytes: &[u8], max: u64) -> Option<u64> {
    if bytes.is_empty() || bytes.len() > 20 {
        return None;
    }
    if !bytes.iter().all(u8::is_ascii_digit) || (bytes.len() > 1 && bytes[0] == b'0') {
        return None;
    }
    let v: u64 = std::str::from_utf8(bytes).ok()?.parse().ok()?;
    (v <= max).then_some(v)
}

/// Returns the text of the error for a bad user id.
pub fn bad_user_message(max: u64) -> String {
    format!("user id must be an integer from 0 to {max}")
}

/// Returns the content length of a bitmap that must hold bit `top`: the
/// bytes up to that bit plus 1/64 of slack, so that likes by slightly
/// larger ids (new users) do not grow the string one byte at a time.
/// Capped at [`MAX_BITMAP_BYTES`].
pub fn bitmap_len(top: u64) -> u64 {
    let need = top / 8 + 1;
    (need + need / 64).min(MAX_BITMAP_BYTES)
}

/// Returns the new content length when bit `user` does not fit in a
/// bitmap of `len` bytes, or `None` when it fits.
pub fn grown_len(user: u64, len: u64) -> Option<u64> {
    (user / 8 >= len).then(|| bitmap_len(user))
}

/// Returns the modelled memory of a bitmap of `len` content bytes.
pub fn bitmap_memory(len: u64) -> u64 {
    KEY_BYTES + len
}

/// Returns the modelled memory of a Set of `members` integer ids whose
/// largest is `top`: an intset of 2, 4 or 8 bytes per id up to
/// [`INTSET_MAX_ENTRIES`] members, a hashtable beyond.
pub fn set_memory(members: u64, top: u64) -> u64 {
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

/// Returns true when a like that brought the set to `count` members should
/// look at promotion: when the set first grows past `promote_at`, and again
/// each time its size reaches a power of two, so a set whose ids were too
/// sparse at first is looked at again as it fills, at O(1) amortized cost.
pub fn promotion_due(count: i64, promote_at: i64) -> bool {
    count > promote_at && (count == promote_at + 1 || (count as u64).is_power_of_two())
}

/// Returns false when no set of `members` ids holding `id` can be promoted:
/// the bitmap reaching `id` is already no smaller than the largest such set
/// could be. A cheap test that needs no read of the set; the scan of the
/// set stops at the first member that fails it.
pub fn promotion_possible(members: u64, id: u64) -> bool {
    id / 8 < MAX_BITMAP_BYTES && bitmap_memory(bitmap_len(id)) < set_memory(members, u64::MAX)
}

/// Returns true when the bitmap reaching `top` takes less memory than a
/// set of `members` ids whose largest is `top`: the promotion rule.
pub fn promotion_wins(members: u64, top: u64) -> bool {
    top / 8 < MAX_BITMAP_BYTES && bitmap_memory(bitmap_len(top)) < set_memory(members, top)
}

/// Returns the bitmap of `len` bytes with the bits of `ids` set.
pub fn build_bitmap(ids: &[u64], len: u64) -> Vec<u8> {
    let mut bytes = vec![0u8; len as usize];
    fill_bitmap(&mut bytes, ids);
    bytes
}

/// Sets the bits of `ids` (those that fit) in `bytes`.
pub fn fill_bitmap(bytes: &mut [u8], ids: &[u64]) {
    let bits = bytes.view_bits_mut::<Msb0>();
    for &u in ids {
        if let Some(mut b) = bits.get_mut(u as usize) {
            *b = true;
        }
    }
}

/// Returns bit `user` of a bitmap (false beyond its end).
pub fn get_bit(bytes: &[u8], user: u64) -> bool {
    bytes
        .view_bits::<Msb0>()
        .get(user as usize)
        .map(|b| *b)
        .unwrap_or(false)
}

/// Sets bit `user` to `value`; returns true if it changed. A bit beyond the
/// end is left alone (the caller grows the bitmap first to set it).
pub fn set_bit(bytes: &mut [u8], user: u64, value: bool) -> bool {
    match bytes.view_bits_mut::<Msb0>().get_mut(user as usize) {
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
    bytes.view_bits::<Msb0>().count_ones() as u64
}

/// Returns the ids whose bits are set in both bitmaps, ascending.
pub fn common_bits(a: &[u8], b: &[u8]) -> Vec<u64> {
    let mut out = Vec::new();
    for (i, (x, y)) in a.iter().zip(b.iter()).enumerate() {
        let both = x & y;
        if both != 0 {
            for j in 0..8 {
                if both & (0x80 >> j) != 0 {
                    out.push((i as u64) * 8 + j as u64);
                }
            }
        }
    }
    out
}

/// Returns the ids of `ids` whose bits are set, ascending.
pub fn filter_bits(bytes: &[u8], ids: &[u64]) -> Vec<u64> {
    let mut out: Vec<u64> = ids.iter().copied().filter(|&u| get_bit(bytes, u)).collect();
    out.sort_unstable();
    out
}

/// Parses set members as ids, skipping anything that is not a canonical
/// non-negative integer (the commands only ever store canonical ids).
pub fn parse_members<'a>(members: impl IntoIterator<Item = &'a [u8]>) -> Vec<u64> {
    members
        .into_iter()
        .filter_map(|m| parse_user(m, u64::MAX))
        .collect()
}

/// Returns how many of the oldest recent likers to drop so that at most
/// `cap` remain of `len`.
pub fn recent_overflow(len: u64, cap: u64) -> u64 {
    len.saturating_sub(cap)
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
        assert_eq!(
            parse_user(b"4294967295", 4_294_967_295),
            Some(4_294_967_295)
        );
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
        assert_eq!(build_bitmap(&[0, 9], 2), b);
    }

    #[test]
    fn bitmap_len_covers_the_top_id_with_slack() {
        assert_eq!(bitmap_len(0), 1);
        assert_eq!(bitmap_len(7), 1);
        assert_eq!(bitmap_len(8), 2);
        assert_eq!(bitmap_len(9_999_999), 1_250_000 + 1_250_000 / 64);
        assert_eq!(bitmap_len(u32::MAX as u64), MAX_BITMAP_BYTES);
        assert_eq!(grown_len(7, 1), None);
        assert_eq!(grown_len(8, 1), Some(2));
    }

    #[test]
    fn promotion_is_due_past_the_threshold_and_at_each_doubling() {
        let due: Vec<i64> = (1..=5000).filter(|&c| promotion_due(c, 512)).collect();
        assert_eq!(due, vec![513, 1024, 2048, 4096]);
        assert!(promotion_due(2, 1));
        assert!(!promotion_due(1, 1));
    }

    #[test]
    fn the_memory_model_follows_the_set_encodings() {
        // Intsets: 16-bit ids up to 32767, 32-bit up to 2^31 - 1, then 64.
        assert_eq!(set_memory(17, 16), 64 + 8 + 17 * 2);
        assert_eq!(set_memory(512, 32_768), 64 + 8 + 512 * 4);
        assert_eq!(set_memory(512, u32::MAX as u64), 64 + 8 + 512 * 8);
        // A hashtable beyond 512 members, whatever the ids.
        assert_eq!(set_memory(513, 0), 64 + 513 * 48);
        assert_eq!(bitmap_memory(3), 67);
        // Non-decreasing in both members and the largest id.
        for m in [1u64, 100, 512, 513, 10_000] {
            for t in [0u64, 32_767, 32_768, 1 << 31, 1 << 40] {
                assert!(set_memory(m, t) <= set_memory(m + 1, t));
                assert!(set_memory(m, t) <= set_memory(m, t.saturating_mul(2) + 1));
            }
        }
    }

    #[test]
    fn promotion_wins_only_when_the_bitmap_is_smaller() {
        // 17 ids 0..16: a 3-byte bitmap (67) against a 106-byte intset.
        assert!(promotion_wins(17, 16));
        // 9 ids up to 300: a 38-byte bitmap (102) against 90: stays.
        assert!(!promotion_wins(9, 300));
        // 32768 likes with ids below 10M: 1.57 MB set, 1.29 MB bitmap.
        assert!(promotion_wins(32_768, 9_999_999));
        // 10000 likes, ids below 10M: a 480 KB set stays a set.
        assert!(!promotion_wins(10_000, 9_999_999));
        // Sparse huge ids never fit a reasonable bitmap.
        assert!(!promotion_wins(100_000, u32::MAX as u64));
        assert!(!promotion_possible(600, u32::MAX as u64));
        assert!(promotion_possible(100_000, 9_999_999));
    }

    /// The cheap gate never refuses a promotion the full rule would make:
    /// for random sets, `promotion_wins(n, top)` implies that every member
    /// passes `promotion_possible(n, member)`.
    #[test]
    fn the_cheap_gate_never_refuses_a_winning_promotion() {
        let mut rng = StdRng::seed_from_u64(9);
        for _ in 0..2000 {
            let n: u64 = rng.gen_range(1..5000);
            let bits: u32 = rng.gen_range(1..34);
            let top: u64 = rng.gen_range(0..1u64 << bits);
            if promotion_wins(n, top) {
                let member = rng.gen_range(0..=top);
                assert!(promotion_possible(n, member), "n={n} top={top} id={member}");
            }
        }
    }

    #[test]
    fn common_bits_and_filter_find_the_intersection() {
        let a = build_bitmap(&[1, 5, 8, 30], 4);
        let b = build_bitmap(&[5, 8, 9], 2);
        assert_eq!(common_bits(&a, &b), vec![5, 8]);
        assert_eq!(filter_bits(&a, &[30, 2, 1, 99]), vec![1, 30]);
    }

    #[test]
    fn members_that_are_not_ids_are_skipped() {
        let m: Vec<&[u8]> = vec![b"3", b"x", b"007", b"12"];
        assert_eq!(parse_members(m), vec![3, 12]);
    }

    #[test]
    fn recent_overflow_counts_what_to_drop() {
        assert_eq!(recent_overflow(11, 10), 1);
        assert_eq!(recent_overflow(3, 10), 0);
        assert_eq!(recent_overflow(3, 0), 3);
    }

    /// A random sequence of likes and unlikes on a set that is promoted to
    /// a bitmap part way: membership, counts and intersections agree with
    /// a plain set at every step.
    #[test]
    fn random_likes_through_promotion_keep_membership_and_count() {
        let mut rng = StdRng::seed_from_u64(4);
        for round in 0..50 {
            let max_id: u64 = rng.gen_range(1..5000);
            let mut reference = BTreeSet::new();
            let mut bits: Option<Vec<u8>> = None;
            let mut set = BTreeSet::new();
            for step in 0..2000 {
                let u = rng.gen_range(0..=max_id);
                let like = rng.gen_bool(0.7);
                if like {
                    reference.insert(u);
                } else {
                    reference.remove(&u);
                }
                match bits.as_mut() {
                    None => {
                        if like {
                            set.insert(u);
                        } else {
                            set.remove(&u);
                        }
                        if step == 500 + round {
                            let ids: Vec<u64> = set.iter().copied().collect();
                            let top = ids.iter().copied().max().unwrap_or(0);
                            bits = Some(build_bitmap(&ids, bitmap_len(top)));
                            set.clear();
                        }
                    }
                    Some(b) => {
                        if like {
                            if let Some(n) = grown_len(u, b.len() as u64) {
                                b.resize(n as usize, 0);
                            }
                            set_bit(b, u, true);
                        } else {
                            set_bit(b, u, false);
                        }
                    }
                }
                let count = match &bits {
                    Some(b) => popcount(b),
                    None => set.len() as u64,
                };
                assert_eq!(count, reference.len() as u64);
            }
            if let Some(b) = &bits {
                let all: Vec<u64> = reference.iter().copied().collect();
                assert_eq!(common_bits(b, b), all);
                assert_eq!(filter_bits(b, &(0..=max_id).collect::<Vec<_>>()), all);
            }
        }
    }
}
