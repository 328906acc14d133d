//! Spread shards on the module side, the parts that read no key: the
//! `SPREAD n` option, the record every shard keeps in its meta Hash
//! (`spread` = n, `shard` = its index), the decision of [`resolve`], the
//! routing check of a write. [`scope`](super::scope) reads the keys and is
//! what the families call.
//!
//! A shard of a spread entity is a complete single-slot entity whose base
//! key is the shard key `{<tag>}B` (docs/spread.md). The family's commands
//! run on it unchanged but for three things (here and in `scope.rs`):
//!
//! - **Which shard this is.** The shard's `<K>:meta` Hash records `spread`
//!   and `shard`, written by the family's create with `SPREAD n`. A call
//!   may declare `SPREAD n` (the client libraries always do): the shard
//!   must then exist with that count, so a missing shard, a hand-deleted
//!   record or a client with another count is an error, never a silent
//!   single-slot entity. Without the option, a key that looks like a shard
//!   key (`{<tag of its slot>}…`: one comparison for every other key)
//!   is looked up, so a raw call on a shard is routed too.
//! - **Routing.** A write of an id that belongs to another shard is
//!   refused with an error naming the right shard key.
//! - **The base key.** Shard 0's key `{TAG[slot(B)]}B` does not depend on
//!   the shard count and shares `B`'s slot, so a single-slot command on
//!   `B` that finds no entity looks there, and refuses a spread `B`.

use redis_module::RedisError;

use crate::error;
use crate::keys::derived_name;
use crate::spread::route;

/// The meta field holding the shard count.
pub const FIELD_SPREAD: &[u8] = b"spread";
/// The meta field holding the shard's index.
pub const FIELD_SHARD: &[u8] = b"shard";
/// The option keyword.
pub const KEYWORD: &[u8] = b"SPREAD";

/// A shard of a spread entity: index `i` of `n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shard {
    pub n: u32,
    pub i: u32,
}

/// Parses the value of `SPREAD n`.
///
/// Occurs as `ERR value is not an integer or out of range` for a value that
/// is not an integer, and `ERR <family>: SPREAD must be from 1 to 1024`
/// outside that range.
pub fn parse_count(family: &str, bytes: &[u8]) -> Result<u32, RedisError> {
    // One digit, the common count: valid whatever it is but 0.
    if let [d @ b'1'..=b'9'] = bytes {
        return Ok(u32::from(d - b'0'));
    }
    let v = crate::args::parse_i64_fast(bytes).ok_or_else(error::not_integer)?;
    if !route::valid_shards(v) {
        return Err(error::family(
            family,
            &format!("SPREAD must be from 1 to {}", route::MAX_SHARDS),
        ));
    }
    Ok(v as u32)
}

/// Returns true when `key` may be a shard key: it starts with `{` and the
/// table's tag of its own slot. Cheap for every other key (one byte).
#[inline]
pub fn looks_like_shard(key: &[u8]) -> bool {
    key.first() == Some(&b'{') && route::split_shard_key(key).is_some()
}

/// Parses the shard record of `key` from the values of its meta fields
/// `spread` and `shard` ([`scope::record`](super::scope::record) reads
/// them): `None` when there is no `spread` field.
///
/// Occurs as `ERR <family>: corrupt data in '<K>:meta' field 'spread'` (or
/// `'shard'`) for a record that is not one, or that belongs to another key
/// (a meta copied by hand).
pub fn parse_record(
    family: &str,
    key: &[u8],
    spread: Option<&[u8]>,
    shard: Option<&[u8]>,
) -> Result<Option<Shard>, RedisError> {
    let meta_name = || derived_name(key, "meta");
    let Some(n) = spread else {
        if shard.is_some() {
            return Err(error::corrupt(family, &meta_name(), Some("spread")));
        }
        return Ok(None);
    };
    let n = match crate::args::parse_i64_plain(n) {
        Some(v) if route::valid_shards(v) => v as u32,
        _ => return Err(error::corrupt(family, &meta_name(), Some("spread"))),
    };
    let i = match shard.and_then(crate::args::parse_i64_plain) {
        Some(v) if (0..i64::from(n)).contains(&v) => v as u32,
        _ => return Err(error::corrupt(family, &meta_name(), Some("shard"))),
    };
    if route::shard_index(key, n) != Some(i) {
        return Err(error::corrupt(family, &meta_name(), Some("shard")));
    }
    Ok(Some(Shard { n, i }))
}

/// Returns shard `i`'s share of a total `c` split over `n` shards:
/// `floor(c (i+1) / n) − floor(c i / n)`; the shares add up to `c`
/// exactly and differ by at most one.
pub fn share(c: i64, n: u32, i: u32) -> i64 {
    let c = i128::from(c);
    let (n, i) = (i128::from(n), i128::from(i));
    (c * (i + 1) / n - c * i / n) as i64
}

/// Decides how a command on `key` runs, from the count the call declared
/// (`SPREAD n`) and the shard's record:
///
/// - neither: a single-slot entity (`None`), but for the key of a shard 0
///   ([`is_first_shard_key`]) that holds data (`has_data`): its record
///   was deleted (`corrupt data in '<K>:meta' field 'spread'`);
/// - a record only: that shard (a raw call on a shard key);
/// - both, equal counts: that shard;
/// - both, other counts: `ERR <family>: shard counts disagree: '<K>' is
///   shard i of n, the call says m`;
/// - a declared count only: `ERR <family>: '<K>' is not a shard key of
///   <n> shards` when the key is not one; else, when the shard has data
///   (`has_data`) the record was deleted (`corrupt data in '<K>:meta'
///   field 'spread'`), and otherwise the shard does not exist
///   (`ERR <family>: shard '<K>' (i of n) does not exist`).
pub fn resolve(
    family: &str,
    key: &[u8],
    declared: Option<u32>,
    record: Option<Shard>,
    has_data: impl FnOnce() -> bool,
) -> Result<Option<Shard>, RedisError> {
    match (declared, record) {
        // Shard 0's key names it whatever the count: holding data
        // without its record, it is a shard whose record was deleted.
        (None, None) => {
            if is_first_shard_key(key) && has_data() {
                return Err(error::corrupt(
                    family,
                    &derived_name(key, "meta"),
                    Some("spread"),
                ));
            }
            Ok(None)
        }
        (None, r) => Ok(r),
        (Some(n), Some(r)) if r.n == n => Ok(Some(r)),
        (Some(n), Some(r)) => Err(counts_disagree(family, key, n, r)),
        (Some(n), None) => match route::shard_index(key, n) {
            None => Err(not_a_shard_key(family, key, n)),
            Some(_) if has_data() => Err(error::corrupt(
                family,
                &derived_name(key, "meta"),
                Some("spread"),
            )),
            Some(i) => Err(error::family(
                family,
                &format!(
                    "shard '{}' ({i} of {n}) does not exist",
                    error::key_text(key)
                ),
            )),
        },
    }
}

/// Returns `ERR <family>: shard counts disagree: '<K>' is shard i of n,
/// the call says m`, for a record `r` and a call that declared `m`.
pub fn counts_disagree(family: &str, key: &[u8], m: u32, r: Shard) -> RedisError {
    error::family(
        family,
        &format!(
            "shard counts disagree: '{}' is shard {} of {}, the call says {m}",
            error::key_text(key),
            r.i,
            r.n
        ),
    )
}

/// Returns `ERR <family>: '<K>' is not a shard key of <n> shards`.
pub fn not_a_shard_key(family: &str, key: &[u8], n: u32) -> RedisError {
    error::family(
        family,
        &format!(
            "'{}' is not a shard key of {n} shards (see docs/spread.md)",
            error::key_text(key)
        ),
    )
}

/// Refuses an id that belongs to another shard:
/// `ERR <family>: wrong shard: <what> '<id>' belongs to '<K_j>' (shard j
/// of n)`, naming the key the call should have gone to.
pub fn check_owner(
    family: &str,
    what: &str,
    key: &[u8],
    shard: Shard,
    id: &[u8],
) -> Result<(), RedisError> {
    let j = route::shard_of(id, shard.n);
    if j == shard.i {
        return Ok(());
    }
    Err(wrong_shard(family, what, key, shard, id, j))
}

/// The error of [`check_owner`] for an id whose shard `j` is known.
pub fn wrong_shard(
    family: &str,
    what: &str,
    key: &[u8],
    shard: Shard,
    id: &[u8],
    j: u32,
) -> RedisError {
    let base = route::shard_base(key).unwrap_or(key);
    let right = route::shard_key(base, shard.n, j);
    error::family(
        family,
        &format!(
            "wrong shard: {what} '{}' belongs to '{}' (shard {j} of {})",
            error::key_text(id),
            error::key_text(&right),
            shard.n
        ),
    )
}

/// Returns the key of shard 0 of a spread entity with base `base`: the
/// same for every shard count, and in `base`'s slot.
pub fn first_shard_key(base: &[u8]) -> Vec<u8> {
    route::shard_key(base, 1, 0)
}

/// Returns true when `key` is the key of shard 0 of its base (`{<tag>}B`
/// with `<tag>` the table's tag of `B`'s own slot): the same key for every
/// shard count, so a key of that shape is a shard 0 whatever count its
/// entity has.
pub fn is_first_shard_key(key: &[u8]) -> bool {
    route::shard_index(key, 1) == Some(0)
}
