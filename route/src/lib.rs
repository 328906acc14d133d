//! The routing rules of spread entities, as a spec any client can follow
//! (docs/spread.md states the same rules in prose, with test vectors).
//!
//! This crate is plain Rust with nothing outside `std`, so that the
//! hotpath module and its Rust client depend on the very same code: both
//! compute identical slots, shard keys and shards.
//!
//! - [`key_slot`]: the Redis Cluster slot of a key: CRC16 (XMODEM) of the
//!   key, or of its hash tag (the bytes between the first `{` and the next
//!   `}`, when that is not empty), modulo 16384.
//! - [`slot_tag`]: a short alphanumeric tag for every slot: the first tag,
//!   shortest first and then in ASCII order over `0-9A-Za-z`, whose key
//!   slot is that slot. [`slot_tags`] computes the table once, on first
//!   use (about 242,000 CRC16 steps of one byte each, well under a
//!   millisecond); a lookup after that is an index into it.
//! - [`shard_slot`] and [`shard_key`]: shard `i` of `n` of a base key `B`
//!   lives in slot `(key_slot(B) + floor(i × 16384 / n)) mod 16384`, and its
//!   keys are derived from the shard key `{<tag>}B`, so the `n` shards are
//!   spaced evenly around the slot ring whatever `B` is.
//! - [`shard_of`]: the shard of an id: `id mod n` (Euclidean, so never
//!   negative) for an integer as Redis reads one, else the 32-bit FNV-1a
//!   hash of the id's bytes mod `n`.
//! - [`like_slot_of`]: a spread LIKE shard stores user `id` as bit `id / n`,
//!   so each shard's bitmap is dense.

use std::sync::OnceLock;

/// Number of hash slots in a Redis Cluster.
pub const SLOTS: u32 = 16384;
/// Largest shard count of a spread entity.
pub const MAX_SHARDS: u32 = 1024;

/// Returns the CRC16 of `bytes` as Redis Cluster computes it (XMODEM:
/// polynomial 0x1021, initial value 0, no reflection, no final xor).
pub fn crc16(bytes: &[u8]) -> u16 {
    bytes.iter().fold(0, |crc, &b| crc16_step(crc, b))
}

/// Returns the part of `key` that Redis Cluster hashes: the bytes between
/// the first `{` and the first `}` after it, when there are any; otherwise
/// (no `{`, no `}` after it, or `{}`) the whole key.
pub fn hashed_part(key: &[u8]) -> &[u8] {
    if let Some(open) = key.iter().position(|&c| c == b'{') {
        if let Some(len) = key[open + 1..].iter().position(|&c| c == b'}') {
            if len > 0 {
                return &key[open + 1..open + 1 + len];
            }
        }
    }
    key
}

/// Returns the cluster slot of `key` (`CLUSTER KEYSLOT`).
pub fn key_slot(key: &[u8]) -> u16 {
    crc16(hashed_part(key)) & 0x3fff
}

/// Returns the short tag of `slot`: `key_slot(tag) == slot`, and
/// `{tag}` put in front of any key moves that key to `slot`.
///
/// # Panics
/// Occurs when `slot` is 16384 or more.
pub fn slot_tag(slot: u16) -> &'static str {
    slot_tags()[usize::from(slot)]
}

/// Returns the slot-tag table, slot 0 first: computed by
/// [`compute_slot_tags`] on the first call, shared by every call after it.
pub fn slot_tags() -> &'static [&'static str] {
    static TAGS: OnceLock<Box<[&'static str]>> = OnceLock::new();
    TAGS.get_or_init(compute_slot_tags)
}

/// Returns true when `n` is a valid shard count (`1 ..= 1024`).
pub fn valid_shards(n: i64) -> bool {
    (1..=i64::from(MAX_SHARDS)).contains(&n)
}

/// Returns the slot of shard `i` of `n` for the base key `base`:
/// `(key_slot(base) + floor(i × 16384 / n)) mod 16384`. The offset
/// `key_slot(base)` keeps the shard 0 of different entities on different
/// nodes; the step spaces the shards evenly around the ring (consecutive
/// shards are `floor(16384 / n)` or `ceil(16384 / n)` slots apart).
///
/// # Panics
/// Occurs when `n` is 0 or `i >= n` (a caller's bug, not user input:
/// commands validate both first).
pub fn shard_slot(base: &[u8], n: u32, i: u32) -> u16 {
    assert!(n >= 1 && i < n, "shard {i} of {n}");
    let step = (u64::from(i) * u64::from(SLOTS) / u64::from(n)) as u32;
    ((u32::from(key_slot(base)) + step) % SLOTS) as u16
}

/// Returns the shard key of shard `i` of `n`: `{<tag>}` + `base`, where
/// `<tag>` is the [`slot_tag`] of [`shard_slot`]. The tag comes first so
/// that it is the key's hash tag whatever `base` holds (`post:{9}` works
/// as well as `post:9`); the shard's own keys are derived from the shard
/// key the way a single-slot entity's are from its base key.
pub fn shard_key(base: &[u8], n: u32, i: u32) -> Vec<u8> {
    let tag = slot_tag(shard_slot(base, n, i)).as_bytes();
    let mut key = Vec::with_capacity(base.len() + tag.len() + 2);
    key.push(b'{');
    key.extend_from_slice(tag);
    key.push(b'}');
    key.extend_from_slice(base);
    key
}

/// Returns the shard keys of all `n` shards, shard 0 first.
pub fn shard_keys(base: &[u8], n: u32) -> Vec<Vec<u8>> {
    (0..n).map(|i| shard_key(base, n, i)).collect()
}

/// Parses an id the way Redis reads an integer argument: an optional `-`,
/// then decimal digits with no leading zero (`0` itself is fine, `-0` is
/// not), within the signed 64-bit range. Returns `None` for anything else
/// (`007`, `+5`, ` 5`, `1e3`, `alice`, the empty string).
pub fn parse_int_id(id: &[u8]) -> Option<i64> {
    let digits = id.strip_prefix(b"-").unwrap_or(id);
    let neg = digits.len() != id.len();
    if digits.is_empty() || digits.len() > 19 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if digits[0] == b'0' && (digits.len() > 1 || neg) {
        return None;
    }
    // Accumulate negatively so that i64::MIN parses without overflow.
    let mut v: i64 = 0;
    for &d in digits {
        v = v.checked_mul(10)?.checked_sub(i64::from(d - b'0'))?;
    }
    if neg {
        Some(v)
    } else {
        v.checked_neg()
    }
}

/// Returns the 32-bit FNV-1a hash of `bytes` (offset basis 2166136261,
/// prime 16777619).
pub fn fnv1a32(bytes: &[u8]) -> u32 {
    let mut h: u32 = 2_166_136_261;
    for &b in bytes {
        h ^= u32::from(b);
        h = h.wrapping_mul(16_777_619);
    }
    h
}

/// Returns the shard (`0 .. n`) of an id: `id mod n` for an integer id
/// ([`parse_int_id`]; the Euclidean remainder, so `-1` goes to shard
/// `n − 1`), else `fnv1a32(id) mod n`. For a power-of-two `n` this is the
/// same shard as `id & (n − 1)`, the rule of LUCKYBAG's internal shards and
/// of the designs we replace.
///
/// # Panics
/// Occurs when `n` is 0.
pub fn shard_of(id: &[u8], n: u32) -> u32 {
    assert!(n >= 1, "no shards");
    match parse_int_id(id) {
        Some(v) => v.rem_euclid(i64::from(n)) as u32,
        None => fnv1a32(id) % n,
    }
}

/// Returns `(shard, stored)` for a LIKE user id: the shard is `id mod n`
/// and the shard stores the user as `id / n`, so that the `n` shards of a
/// post whose likers have ids `0 … m` each keep a bitmap of `m / n` bits.
///
/// # Panics
/// Occurs when `n` is 0.
pub fn like_slot_of(id: u64, n: u32) -> (u32, u64) {
    assert!(n >= 1, "no shards");
    ((id % u64::from(n)) as u32, id / u64::from(n))
}

/// Returns the user id that shard `shard` of `n` stores as `stored`: the
/// inverse of [`like_slot_of`], `stored × n + shard`; `None` on overflow.
pub fn like_id_of(shard: u32, stored: u64, n: u32) -> Option<u64> {
    stored
        .checked_mul(u64::from(n))?
        .checked_add(u64::from(shard))
}

/// Returns the tag and the base key of a shard key `{<tag>}<base>`, or
/// `None` when `key` does not start with a tag of the table, or when the
/// base would be empty: a base key is never empty, so a bare hash tag
/// (`{bm}`, `{42}`: most short tags are their own slot's tag) is never a
/// shard key, and a call on it never looks for a shard record.
pub fn split_shard_key(key: &[u8]) -> Option<(&str, &[u8])> {
    let rest = key.strip_prefix(b"{")?;
    // A tag of the table has 1 to [`MAX_TAG_LEN`] characters: a longer
    // hash tag (`{user:42}x`) is told apart without hashing it.
    let close = rest.iter().take(MAX_TAG_LEN + 1).position(|&c| c == b'}')?;
    let base = &rest[close + 1..];
    if base.is_empty() {
        return None;
    }
    let tag = std::str::from_utf8(&rest[..close]).ok()?;
    if tag.is_empty() || slot_tag(key_slot(tag.as_bytes())) != tag {
        return None;
    }
    Some((tag, base))
}

/// Returns `i` when `key` is the key of shard `i` of `n` of its base: it
/// is `{<tag>}<base>` ([`split_shard_key`]) and its slot is
/// [`shard_slot`]`(base, n, i)`. `None` for any other key, and for an
/// invalid `n`.
pub fn shard_index(key: &[u8], n: u32) -> Option<u32> {
    if !(1..=MAX_SHARDS).contains(&n) {
        return None;
    }
    let (tag, base) = split_shard_key(key)?;
    let slot = u32::from(key_slot(tag.as_bytes()));
    let offset = (slot + SLOTS - u32::from(key_slot(base))) % SLOTS;
    // The one `i` with floor(i × 16384 / n) == offset, if any: the
    // smallest i with i × 16384 / n >= offset (the step is at least 1).
    let i = (u64::from(offset) * u64::from(n)).div_ceil(u64::from(SLOTS)) as u32;
    (i < n && u32::from(shard_slot(base, n, i)) == slot).then_some(i)
}

/// Returns the base key of a shard key `{<tag>}<base>`, or `None` when
/// `key` does not start with a tag of the table.
pub fn shard_base(key: &[u8]) -> Option<&[u8]> {
    split_shard_key(key).map(|(_, base)| base)
}

/// The longest tag of the slot-tag table (checked by a unit test).
pub const MAX_TAG_LEN: usize = 3;

/// The characters of slot tags, in the order the generator tries them.
pub const TAG_ALPHABET: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// Computes the slot-tag table from its definition: for every slot, the
/// first string over [`TAG_ALPHABET`], shortest first and then in the
/// alphabet's order, whose [`key_slot`] is that slot. This is the table's
/// definition, written plainly (a key slot per candidate string);
/// [`slot_tags`] uses the faster [`compute_slot_tags`], and a unit test
/// checks that the two agree.
pub fn generate_slot_tags() -> Vec<String> {
    let base = TAG_ALPHABET.len();
    let mut table: Vec<Option<String>> = vec![None; SLOTS as usize];
    let mut missing = SLOTS as usize;
    let mut len: u32 = 1;
    while missing > 0 {
        // Every string of `len` characters, as the numbers 0 .. base^len
        // written in base `base` (first character most significant).
        for k in 0..base.pow(len) {
            let mut tag = vec![0u8; len as usize];
            let mut rest = k;
            for c in tag.iter_mut().rev() {
                *c = TAG_ALPHABET[rest % base];
                rest /= base;
            }
            let slot = usize::from(key_slot(&tag));
            if table[slot].is_none() {
                table[slot] = Some(String::from_utf8(tag).expect("ascii"));
                missing -= 1;
            }
        }
        len += 1;
    }
    table.into_iter().map(|t| t.expect("filled")).collect()
}

/// The CRC16 (XMODEM) of one more byte: `crc16(bytes + [b])` from
/// `crc16(bytes)`.
#[inline]
fn crc16_step(crc: u16, b: u8) -> u16 {
    let mut crc = crc ^ (u16::from(b) << 8);
    for _ in 0..8 {
        crc = if crc & 0x8000 != 0 {
            (crc << 1) ^ 0x1021
        } else {
            crc << 1
        };
    }
    crc
}

/// Computes the same table as [`generate_slot_tags`], faster: the strings
/// of each length are visited in the same order, but each one's CRC16 is
/// one step from its prefix's (62 + 3,844 + 238,328 steps of one byte for
/// the three lengths the table needs), and the tags share one string that
/// lives as long as the program (about 45 KB, allocated once).
pub fn compute_slot_tags() -> Box<[&'static str]> {
    let base = TAG_ALPHABET.len();
    // (start, len) of each slot's tag in `text`; len 0 while missing.
    let mut found = vec![(0usize, 0usize); SLOTS as usize];
    let mut text: Vec<u8> = Vec::with_capacity(3 * SLOTS as usize);
    let mut missing = SLOTS as usize;
    // The CRC16s of every string of `len` characters, in the generator's
    // order: string `k` is the number `k` written in base `base`.
    let mut crcs: Vec<u16> = vec![0];
    let mut len = 0;
    while missing > 0 {
        len += 1;
        let mut next = Vec::with_capacity(crcs.len() * base);
        for &prefix in &crcs {
            for &c in TAG_ALPHABET {
                let crc = crc16_step(prefix, c);
                let slot = usize::from(crc & 0x3fff);
                if found[slot].1 == 0 {
                    let start = text.len();
                    text.resize(start + len, 0);
                    // This string is number `next.len()` of its length.
                    let mut rest = next.len();
                    for d in text[start..].iter_mut().rev() {
                        *d = TAG_ALPHABET[rest % base];
                        rest /= base;
                    }
                    found[slot] = (start, len);
                    missing -= 1;
                }
                next.push(crc);
            }
        }
        crcs = next;
    }
    let text: &'static str = String::from_utf8(text).expect("ascii").leak();
    found
        .into_iter()
        .map(|(start, len)| &text[start..start + len])
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_computed_table_is_the_definition() {
        let table = slot_tags();
        assert_eq!(table.len(), SLOTS as usize);
        for (slot, (t, d)) in table.iter().zip(generate_slot_tags()).enumerate() {
            assert_eq!(*t, d, "slot {slot}");
            assert_eq!(usize::from(key_slot(t.as_bytes())), slot);
        }
        assert_eq!((slot_tag(0), slot_tag(16383)), ("06S", "6ZJ"));
        assert_eq!(table.iter().map(|t| t.len()).max(), Some(MAX_TAG_LEN));
    }
}
