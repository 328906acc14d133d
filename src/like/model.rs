//! The pure logic of LIKE: user ids, bitmap sizes, the promotion rule,
//! bit operations in Redis bit order, the recent-likers cap. No Redis here;
//! the handlers in `commands.rs` feed these functions what they read.

use bitvec::prelude::*;

/// The largest string Redis stores (`proto-max-bulk-len` default), which
/// bounds a bitmap: ids up to 2^32 − 1 fit exactly.
pub const MAX_BITMAP_BYTES: u64 = 512 * 1024 * 1024;

/// Bytes Redis spends on a string key besides its content allocation
/// (object, key name, dict entry), as `MEMORY USAGE` shows it: measured 48
/// for short key names, rounded up so the estimate stays an upper bound.
pub const STRING_OVERHEAD: u64 = 64;

/// Upper bound of what a Set spends per member (measured 40–60 bytes for a
/// hashtable Set of integer ids, 2–10 for an intset), used to skip a
/// promotion check that cannot succeed without reading the Set.
pub const SET_BYTES_PER_MEMBER_MAX: u64 = 64;

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

/// Returns the allocation jemalloc makes for `n` bytes: its size classes
/// are 8, multiples of 16 up to 128, then four classes per doubling.
pub fn size_class(n: u64) -> u64 {
    if n <= 8 {
        8
    } else if n <= 128 {
        n.div_ceil(16) * 16
    } else {
        let lg = 63 - (n - 1).leading_zeros();
        let delta = 1u64 << (lg - 2);
        n.div_ceil(delta) * delta
    }
}

/// Returns the memory a bitmap of `len` content bytes takes as `MEMORY
/// USAGE` reports it under jemalloc: the sds allocation (header and
/// terminator included) rounded to its size class, plus the key's fixed
/// overhead. With libc malloc (Valkey wheels) it is an upper bound.
pub fn bitmap_memory(len: u64) -> u64 {
    size_class(len + 10) + STRING_OVERHEAD
}

/// Returns true when a like that brought the set to `count` members should
/// look at promotion: when the set first grows past `promote_at`, and again
/// each time its size reaches a power of two, so a set whose ids were too
/// sparse at first is looked at again as it fills, at O(1) amortized cost.
pub fn promotion_due(count: i64, promote_at: i64) -> bool {
    count > promote_at && (count == promote_at + 1 || (count as u64).is_power_of_two())
}

/// Returns false when a set of `members` cannot be larger than the bitmap
/// that must reach `top` (no need to read the set).
pub fn promotion_possible(members: i64, top: u64) -> bool {
    let set_max = (members.max(0) as u64).saturating_mul(SET_BYTES_PER_MEMBER_MAX) + 1024;
    bitmap_memory(bitmap_len(top)) < set_max
}

/// Returns true when the bitmap reaching `top` takes less memory than a set
/// measured at `set_bytes`: the promotion rule.
pub fn promotion_wins(top: u64, set_bytes: u64) -> bool {
    top / 8 < MAX_BITMAP_BYTES && bitmap_memory(bitmap_len(top)) < set_bytes
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
    fn size_classes_match_jemalloc() {
        assert_eq!(size_class(1), 8);
        assert_eq!(size_class(17), 32);
        assert_eq!(size_class(129), 160);
        assert_eq!(size_class(1_269_541), 1_310_720);
        assert_eq!(size_class(1 << 20), 1 << 20);
        assert_eq!(size_class((1 << 20) + 1), 1_310_720);
        // Measured: a 1,269,531-byte bitmap is 1,310,768 bytes in MEMORY USAGE.
        assert!(bitmap_memory(1_269_531) >= 1_310_768);
    }

    #[test]
    fn promotion_wins_only_when_the_bitmap_is_smaller() {
        // 32768 likes with ids below 10M: measured Set 1,546,528 bytes.
        assert!(promotion_wins(9_999_999, 1_546_528));
        // 10000 likes, ids below 10M: Set 588,920 bytes stays a set.
        assert!(!promotion_wins(9_999_999, 588_920));
        // Sparse huge ids never fit a reasonable bitmap.
        assert!(!promotion_wins(u32::MAX as u64, 5_572_816));
        assert!(!promotion_possible(600, u32::MAX as u64));
        assert!(promotion_possible(100_000, 9_999_999));
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
