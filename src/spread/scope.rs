//! One spread scope (issue 26): everything a family's command needs to
//! run on a shard of a spread entity, written once for LIKE, LUCKYBAG,
//! POLL and RANK (and the next family to spread).
//!
//! - [`is_keyword`], [`trailing`], [`only`], [`now_and_spread`]: reading
//!   `SPREAD n` from the arguments, the same for the owned
//!   ([`Cursor`](crate::args::Cursor)) and the in-place
//!   ([`Args`](crate::argv::Args)) arguments: both hand out the whole
//!   argument slice, and both are [`Options`] cursors.
//! - [`resolve`]: which shard a call on `base` runs on, from the declared
//!   count and the record in `base:meta`; or the error (no such shard, a
//!   deleted record, other counts, a member of another shard, the base key
//!   of a spread entity).
//! - [`refuse_base`]: the base-key refusal, for a family that finds out
//!   only later that the single-slot entity does not exist.
//!
//! A key that declares no count and does not start with `{` costs one
//! byte comparison here ([`resolve`] is inlined up to that test).

use redis_module::{Context, RedisError, RedisString};

use crate::argv::Options;
use crate::error;
use crate::keys::{derived_name, Field, Key, KeyType};
use crate::spread::shard::{self, Shard};

/// A family that spreads.
pub struct Family {
    /// Its name in errors (`ERR <name>: …`).
    pub name: &'static str,
    /// The keys a shard may hold data in besides `:meta`, as suffixes of
    /// the shard key (`""` is the shard key itself): data there without a
    /// record means the record was deleted.
    pub data: &'static [&'static str],
}

/// The record's fields, made into Redis strings once.
static F_SPREAD: Field = Field::new(c"spread");
static F_SHARD: Field = Field::new(c"shard");

/// Returns true when `arg` is the keyword `SPREAD` (ASCII case ignored).
#[inline]
pub fn is_keyword(arg: &[u8]) -> bool {
    arg.eq_ignore_ascii_case(shard::KEYWORD)
}

/// An argument as the readers see it: the bytes of a Redis string, or of
/// a plain slice (the unit tests).
pub trait Arg {
    fn bytes(&self) -> &[u8];
}

impl Arg for RedisString {
    #[inline]
    fn bytes(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Arg for &[u8] {
    #[inline]
    fn bytes(&self) -> &[u8] {
        self
    }
}

/// Splits a trailing `SPREAD n` off a command's arguments (the command
/// name first), when at least `first` arguments stand before it: returns
/// how many arguments remain before it and the declared count.
pub fn trailing<A: Arg>(
    family: &str,
    args: &[A],
    first: usize,
) -> Result<(usize, Option<u32>), RedisError> {
    let len = args.len();
    if len >= first + 2 && is_keyword(args[len - 2].bytes()) {
        let n = shard::parse_count(family, args[len - 1].bytes())?;
        return Ok((len - 2, Some(n)));
    }
    Ok((len, None))
}

/// Reads an optional `SPREAD n` after the first `fixed` arguments (the
/// command name first) of a command that takes nothing else there:
/// anything else is the arity error (those commands had a fixed arity
/// before the option).
pub fn only<A: Arg>(family: &str, args: &[A], fixed: usize) -> Result<Option<u32>, RedisError> {
    match args.len().saturating_sub(fixed) {
        0 => Ok(None),
        2 if is_keyword(args[fixed].bytes()) => {
            Ok(Some(shard::parse_count(family, args[fixed + 1].bytes())?))
        }
        _ => {
            let name = args.first().map(|a| a.bytes()).unwrap_or(b"");
            Err(error::arity(&String::from_utf8_lossy(name)))
        }
    }
}

/// Reads `[NOW unix-ms] [SPREAD n]` in either order up to the last
/// argument (a master appends `NOW` after `SPREAD n` when it replicates a
/// call that read its clock): the `NOW` value (0 … `max_now`) and the
/// declared count. Anything else there is a syntax error.
#[inline]
pub fn now_and_spread(
    family: &str,
    c: &mut impl Options,
    max_now: i64,
) -> Result<(Option<i64>, Option<u32>), RedisError> {
    let mut now = None;
    let mut declared = None;
    while !c.done() {
        let kw = c.next_slice()?;
        if kw.eq_ignore_ascii_case(b"NOW") {
            now = Some(c.option_i64(0, max_now)?);
        } else if is_keyword(kw) {
            declared = Some(shard::parse_count(family, c.option_bytes()?)?);
        } else {
            return Err(error::syntax());
        }
    }
    Ok((now, declared))
}

/// Returns true when a call on `base` may run on a shard: it declared a
/// count, or `base` looks like a shard key. One byte for any other key.
#[inline]
pub fn may_spread(base: &[u8], declared: Option<u32>) -> bool {
    declared.is_some() || shard::looks_like_shard(base)
}

/// Opens `base:meta` for reading and checks that it is a Hash (or none).
pub fn open_meta(ctx: &Context, base: &[u8]) -> Result<Key, RedisError> {
    let meta = Key::open(ctx, &derived_name(base, "meta"), false);
    meta.check(KeyType::Hash)?;
    Ok(meta)
}

/// Reads the shard record of `key` from its open, type-checked meta Hash
/// ([`shard::parse_record`]): `None` when it records none.
pub fn record(family: &str, key: &[u8], meta: &Key) -> Result<Option<Shard>, RedisError> {
    let [n, i] = meta.hget_fields([&F_SPREAD, &F_SHARD]);
    shard::parse_record(
        family,
        key,
        n.as_ref().map(|v| v.as_slice()),
        i.as_ref().map(|v| v.as_slice()),
    )
}

/// Returns true when one of `family`'s data keys of `key` exists.
pub fn holds_data(ctx: &Context, family: &Family, key: &[u8]) -> bool {
    family.data.iter().any(|s| {
        if s.is_empty() {
            Key::open(ctx, key, false).exists()
        } else {
            Key::open(ctx, &derived_name(key, s), false).exists()
        }
    })
}

/// Decides the scope of a call on `base`: the shard it runs on (`None`
/// for a single-slot entity), or the error.
///
/// - `declared`: the count of the call's `SPREAD n`.
/// - `meta`: `base:meta`, open and type-checked; `None` when the caller
///   knows it does not exist.
/// - `found`: whether the single-slot entity under `base` exists, when
///   the caller knows it now: `Some(false)` and no shard refuses the base
///   key of a spread entity ([`refuse_base`]). `None`: the caller refuses
///   it later, if need be.
/// - `member`: `(what, id)`, an id the call writes or reads, that must
///   belong to this shard (`wrong shard: <what> '<id>' belongs to …`).
///
/// The errors, in this order: a corrupt record; the errors of
/// [`shard::resolve`] (other counts, not a shard key, a deleted record, a
/// missing shard); the wrong shard; the base-key refusal.
#[inline]
pub fn resolve(
    ctx: &Context,
    family: &Family,
    base: &[u8],
    declared: Option<u32>,
    meta: Option<&Key>,
    found: Option<bool>,
    member: Option<(&str, &[u8])>,
) -> Result<Option<Shard>, RedisError> {
    if !may_spread(base, declared) {
        if found == Some(false) {
            refuse_base(ctx, family, base)?;
        }
        return Ok(None);
    }
    let rec = match meta {
        Some(m) => record(family.name, base, m)?,
        None => None,
    };
    let sh = shard::resolve(family.name, base, declared, rec, || {
        holds_data(ctx, family, base)
    })?;
    match (sh, member) {
        (Some(sh), Some((what, id))) => shard::check_owner(family.name, what, base, sh, id)?,
        (None, _) if found == Some(false) => refuse_base(ctx, family, base)?,
        _ => {}
    }
    Ok(sh)
}

/// For a single-slot command on `base` that found no entity there: fails
/// when `base` is the base key of a spread entity (its shard 0 records
/// one), with `ERR <family>: '<B>' is spread over n shards: call its shard
/// keys ('<K_0>' is shard 0) or use a client library`; or when shard 0
/// holds data without a record ([`no_record`]).
pub fn refuse_base(ctx: &Context, family: &Family, base: &[u8]) -> Result<(), RedisError> {
    let k0 = shard::first_shard_key(base);
    let meta = Key::open(ctx, &derived_name(&k0, "meta"), false);
    match meta.kind() {
        KeyType::Hash => {}
        KeyType::Empty => return no_record(ctx, family, &k0),
        _ => return Ok(()),
    }
    let [n] = meta.hget_fields([&F_SPREAD]);
    let Some(n) = n else {
        return no_record(ctx, family, &k0);
    };
    Err(error::family(
        family.name,
        &format!(
            "'{}' is spread over {} shards: call its shard keys ('{}' is shard 0) or use a client library",
            error::key_text(base),
            String::from_utf8_lossy(n.as_slice()),
            error::key_text(&k0)
        ),
    ))
}

/// Shard 0 `k0` records no spread entity: fine while it holds no data
/// either; with data, its record was deleted by hand and the base key is
/// refused as that corrupt shard (`ERR <family>: corrupt data in
/// '<K_0>:meta' field 'spread'`), rather than used beside it.
fn no_record(ctx: &Context, family: &Family, k0: &[u8]) -> Result<(), RedisError> {
    if holds_data(ctx, family, k0) {
        return Err(error::corrupt(
            family.name,
            &derived_name(k0, "meta"),
            Some("spread"),
        ));
    }
    Ok(())
}
