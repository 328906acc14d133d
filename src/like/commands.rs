//! LIKE handlers: parse and validate every argument, check the type of
//! every key the command reads or writes, then apply the change, reply,
//! replicate and raise the keyspace event.
//!
//! # Replication
//!
//! A write's own change depends only on the data (which range holds the
//! id, whether the range is being migrated, the count), so it replicates
//! verbatim (`RedisModule_ReplicateVerbatim`, nearly free). Everything that
//! depends on the master's configuration or clock runs on the master only
//! and replicates as explicit native commands after it, in the same
//! MULTI/EXEC: the promotion steps (`like-promote-at` decides when),
//! recording recent likers (`like-recent`, the clock). A replica or an AOF
//! replay (context flags REPLICATED, LOADING) applies the verbatim command
//! without that work, and accepts ids above its own `like-max-id`, so it
//! needs neither the master's configs nor its clock.
//!
//! # Cost of the hot path
//!
//! A like opens two keys (the id's chunk and `B:count`), plus, in a range
//! in set form, one `RedisModule_Call` (`SADD`/`SREM`: modules have no Set
//! API). Counts are rewritten in place, arguments are passed to
//! `RedisModule_Call` without copies, nothing else is allocated.

use std::ffi::CStr;

use redis_module::{Context, ContextFlags, RedisError, RedisResult, RedisString, RedisValue};

use crate::args::{parse_i64_plain, Cursor};
use crate::argv::Args;
use crate::config;
use crate::error;
use crate::keys::call::{are_members, call, call2, is_member, sscan, Arg};
use crate::keys::{derived_name, Key, KeyType, Name};
use crate::like::model::{self, CHUNK_BYTES, MIGRATING_BYTES};
use crate::like::{CHECKS, LIKES, PROMOTIONS, STEPS, STEP_MAX_US, UNLIKES};
use crate::replicate;
use crate::reply;
use crate::spread::{route, scope, shard};
use crate::util;

mod promote;
pub use promote::like_migrate;
use promote::promotion_step;

const FAMILY: &str = "like";

fn max_id() -> u64 {
    (config::get(&config::LIKE_MAX_ID).max(0) as u64).min(model::MAX_ID)
}

fn bad_user(max: u64) -> RedisError {
    error::family(FAMILY, &model::bad_user_message(max))
}

/// Parses an id of a read or of LIKE.MIGRATE: empty is refused as in every
/// family, anything else that is not an id up to `max` names the range.
fn parse_id(bytes: &[u8], max: u64) -> Result<u64, RedisError> {
    if bytes.is_empty() {
        return Err(error::empty_user(FAMILY));
    }
    model::parse_user(bytes, max).ok_or_else(|| bad_user(max))
}

/// Returns `B:bits:<range>`, the name of a range's chunk.
fn chunk_name(base: &[u8], range: u64) -> Name {
    let mut n = derived_name(base, "bits:");
    n.extend_from_slice(itoa::Buffer::new().format(range).as_bytes());
    n
}

/// A key name of a post built on the stack: `B:<suffix>[<number>]`. The
/// hot path builds two per call; `Name` (a SmallVec) costs about 300
/// instructions per name to fill, plain copies into a buffer a fraction.
struct StackName {
    buf: [u8; 96],
    len: usize,
    long: Vec<u8>,
}

impl StackName {
    fn new(base: &[u8], suffix: &[u8], number: Option<u64>) -> StackName {
        let mut digits = itoa::Buffer::new();
        let tail: &[u8] = number.map_or(&[][..], |n| digits.format(n).as_bytes());
        let len = base.len() + 1 + suffix.len() + tail.len();
        let mut n = StackName {
            buf: [0; 96],
            len,
            long: Vec::new(),
        };
        if len > n.buf.len() {
            n.long.reserve_exact(len);
            n.long.extend_from_slice(base);
            n.long.push(b':');
            n.long.extend_from_slice(suffix);
            n.long.extend_from_slice(tail);
            return n;
        }
        let (a, rest) = n.buf.split_at_mut(base.len());
        a.copy_from_slice(base);
        rest[0] = b':';
        rest[1..1 + suffix.len()].copy_from_slice(suffix);
        rest[1 + suffix.len()..len - base.len()].copy_from_slice(tail);
        n
    }

    fn as_slice(&self) -> &[u8] {
        if self.long.is_empty() {
            &self.buf[..self.len]
        } else {
            &self.long
        }
    }
}

/// Returns true when the command runs on a replica (from its master) or in
/// an AOF replay: it must then apply exactly what the master applied.
fn follower(ctx: &Context) -> bool {
    ctx.get_flags()
        .intersects(ContextFlags::REPLICATED | ContextFlags::LOADING | ContextFlags::ASYNC_LOADING)
}

// ---- spread posts (docs/spread.md) ----

/// A shard of a spread post, as a command on it needs it.
#[derive(Clone, Copy)]
struct Spread {
    n: u32,
    i: u32,
    /// The expiry of the shard's record (its `B:meta`).
    expires_at: Option<i64>,
}

impl Spread {
    fn shard(&self) -> shard::Shard {
        shard::Shard {
            n: self.n,
            i: self.i,
        }
    }
}

/// A spread post's data keys besides `B:meta`.
const POST: scope::Family = scope::Family {
    name: FAMILY,
    data: &["count", "set", "chunks"],
};

/// Returns the shard `base` is, when the call declared `SPREAD n` or the
/// key looks like a shard key and records one; `None` for a single-slot
/// post. Errors for a missing shard, a deleted record, other counts.
fn spread_of(
    ctx: &Context,
    base: &[u8],
    declared: Option<u32>,
) -> Result<Option<Spread>, RedisError> {
    if !scope::may_spread(base, declared) {
        return Ok(None);
    }
    let meta = scope::open_meta(ctx, base)?;
    let sh = scope::resolve(ctx, &POST, base, declared, Some(&meta), None, None)?;
    Ok(sh.map(|s| Spread {
        n: s.n,
        i: s.i,
        expires_at: meta.abs_expire_ms(),
    }))
}

/// Refuses a shard of a spread post to a command that has no spread form.
fn refuse_shard(ctx: &Context, cmd: &str, base: &[u8]) -> Result<(), RedisError> {
    if spread_of(ctx, base, None)?.is_some() {
        return Err(error::family(
            FAMILY,
            &format!(
                "{cmd} does not take a shard of a spread post ('{}')",
                error::key_text(base)
            ),
        ));
    }
    Ok(())
}

// ---- effects replicated after the verbatim command ----

/// The native commands a master-only step replicates, in the order it
/// applied them, and the post's expiry, given to every key the step
/// creates.
struct Effects<'c> {
    ctx: &'c Context,
    ops: Vec<(&'static CStr, Vec<RedisString>)>,
    expires_at: Option<i64>,
}

impl<'c> Effects<'c> {
    fn new(ctx: &'c Context, expires_at: Option<i64>) -> Self {
        Effects {
            ctx,
            ops: Vec::new(),
            expires_at,
        }
    }

    fn push(&mut self, cmd: &'static CStr, args: &[&[u8]]) {
        let args = args
            .iter()
            .map(|a| RedisString::create_from_slice(self.ctx.ctx, a))
            .collect();
        self.ops.push((cmd, args));
    }

    fn push_owned(&mut self, cmd: &'static CStr, args: Vec<RedisString>) {
        self.ops.push((cmd, args));
    }

    /// Gives a key the step just created the post's expiry (the same
    /// absolute instant on the replica).
    fn created(&mut self, key: &Key, name: &[u8]) {
        if let Some(at) = self.expires_at {
            key.set_abs_expire_ms(at);
            self.push(c"PEXPIREAT", &[name, at.to_string().as_bytes()]);
        }
    }

    fn replicate(&self) {
        for (cmd, args) in &self.ops {
            let argv: Vec<Arg> = args.iter().map(|a| a.inner).collect();
            replicate::command(self.ctx, cmd, &argv);
        }
    }
}

// ---- counts ----

/// The error for a `B:count` that is not a count. Type errors come first:
/// when `B:set` holds another type, that is the error.
fn corrupt_count(ctx: &Context, base: &[u8]) -> RedisError {
    if let Err(e) = Key::open(ctx, &derived_name(base, "set"), false).check(KeyType::Set) {
        return e;
    }
    error::corrupt(FAMILY, &derived_name(base, "count"), None)
}

/// Reads `B:count` from its open key: `Some(n)`, `None` when missing, or the
/// corrupt-data error.
fn stored_count(ctx: &Context, base: &[u8], count: &Key) -> Result<Option<i64>, RedisError> {
    if !count.exists() {
        return Ok(None);
    }
    match model::parse_count(count.bytes()) {
        Some(v) => Ok(Some(v)),
        None => Err(corrupt_count(ctx, base)),
    }
}

/// The count of a post whose `B:count` is missing: 0 for a post without
/// likers, `SCARD` for a post all in set form (the count was deleted by
/// hand; O(1)). A post with chunks cannot be counted in bounded time, so a
/// missing count there is corrupt data.
fn missing_count(
    ctx: &Context,
    base: &[u8],
    has_chunk: bool,
) -> Result<(i64, Option<i64>), RedisError> {
    let set = Key::open(ctx, &derived_name(base, "set"), false);
    set.check(KeyType::Set)?;
    let index = Key::open(ctx, &derived_name(base, "chunks"), false);
    // Every type check before any value check: the index's type is
    // checked even when the chunk alone already makes the count corrupt.
    let has_index = index.check(KeyType::String)?;
    if has_chunk || has_index {
        return Err(error::corrupt(FAMILY, &derived_name(base, "count"), None));
    }
    Ok((set.len() as i64, set.abs_expire_ms()))
}

// ---- writes ----

use model::Op;

/// The keyspace event of a write that changed the likes: named after the
/// command, as in every family (a promotion raises no event of its own;
/// `like_promoted` in INFO counts it).
fn event(op: Op) -> &'static str {
    match op {
        Op::Toggle => "hotpath.like.toggle",
        Op::Add => "hotpath.like.add",
        Op::Rem => "hotpath.like.rem",
    }
}

/// One user's like in a post, on the post's keys ([`model::LikeStore`]):
/// the Set through `RedisModule_Call` (modules have no Set API), the bit
/// in the chunk's bytes, accessed once.
struct PostStore<'a> {
    ctx: &'a Context,
    base: &'a [u8],
    user: &'a RedisString,
    /// `B:set`: the kept name, or one built on first use.
    set_kept: Option<KeptView>,
    set_built: std::cell::OnceCell<RedisString>,
    chunk: &'a Key,
    bytes: &'a mut [u8],
    off: u64,
}

impl PostStore<'_> {
    fn set_name(&self) -> &RedisString {
        match &self.set_kept {
            Some(v) => &v.0,
            None => self.set_built.get_or_init(|| {
                RedisString::create_from_slice(
                    self.ctx.ctx,
                    StackName::new(self.base, b"set", None).as_slice(),
                )
            }),
        }
    }

    fn member(&self, cmd: &CStr) -> Result<bool, RedisError> {
        Ok(call2(self.ctx, cmd, self.set_name(), self.user)? == 1)
    }
}

impl model::LikeStore for PostStore<'_> {
    type Error = RedisError;

    fn is_member(&mut self) -> Result<bool, RedisError> {
        is_member(self.ctx, self.set_name(), self.user)
    }

    fn add_member(&mut self) -> Result<bool, RedisError> {
        self.member(c"SADD")
    }

    fn remove_member(&mut self) -> Result<bool, RedisError> {
        self.member(c"SREM")
    }

    fn set_bit(&mut self, value: bool) {
        model::set_bit(self.bytes, self.off, value);
        self.chunk.mark_modified();
    }

    fn count_error(&mut self, e: model::CountError) -> RedisError {
        match e {
            model::CountError::Overflow => {
                error::overflow(FAMILY, &derived_name(self.base, "count"), None)
            }
            model::CountError::Corrupt => corrupt_count(self.ctx, self.base),
        }
    }
}

/// `LIKE.TOGGLE B user [NOW unix-ms]` → `[liked, count]`
pub fn like_toggle(ctx: &Context, args: &mut Args) -> RedisResult {
    write(ctx, args, Op::Toggle)
}

/// `LIKE.ADD B user [NOW unix-ms]` → `[changed, count]`
pub fn like_add(ctx: &Context, args: &mut Args) -> RedisResult {
    write(ctx, args, Op::Add)
}

/// `LIKE.REM B user` → `[changed, count]`
pub fn like_rem(ctx: &Context, args: &mut Args) -> RedisResult {
    write(ctx, args, Op::Rem)
}

/// Parses a user id the client sent. A replica or a replay applies ids
/// the master accepted, whatever its own `like-max-id`.
fn user_id(ctx: &Context, bytes: &[u8]) -> Result<u64, RedisError> {
    if bytes.is_empty() {
        return Err(error::empty_user(FAMILY));
    }
    let max = max_id();
    match model::parse_user(bytes, model::MAX_ID) {
        Some(v) if v <= max => Ok(v),
        Some(v) if follower(ctx) => Ok(v),
        _ => Err(bad_user(max)),
    }
}

// ---- the key names of recent posts ----
//
// A like opens `B:bits:<k>` and `B:count` (and names `B:set` in set form).
// Creating and freeing those Redis strings costs about 300 instructions
// each, a tenth of a like. A post that is liked is often liked again soon
// (a popular post in either form), so the names of recent posts are kept
// between calls in two small direct-mapped tables: each post's `count`
// and `set` names, and chunk names by post and range. A post that is not
// in the table takes its slot: its names are built once, as they would
// be for the call, and the previous post's are freed, as they would have
// been after its call, so a post liked once pays about what it paid
// before (a hash and a copy of the base's bytes into the slot's buffer).
// A name is an immutable Redis string the module owns, created without a
// context so that it outlives the command; Redis only reads it, and
// `RM_OpenKey` takes its own reference. Main thread only, like every
// command. At most 2 × 64 + 256 names are kept (a few tens of KB).

/// Posts whose `count` and `set` names are kept (a power of two).
const HOT_POSTS: usize = 64;
/// Chunk names kept, over all posts (a power of two).
const HOT_CHUNKS: usize = 256;

struct HotPost {
    base: Vec<u8>,
    count: RedisString,
    set: RedisString,
}

struct HotChunk {
    base: Vec<u8>,
    range: u64,
    name: RedisString,
}

struct HotNames {
    posts: Vec<Option<HotPost>>,
    chunks: Vec<Option<HotChunk>>,
}

thread_local! {
    static HOT: std::cell::RefCell<HotNames> = const {
        std::cell::RefCell::new(HotNames { posts: Vec::new(), chunks: Vec::new() })
    };
}

/// A Redis string that outlives the command (no context).
fn kept_name(name: &[u8]) -> RedisString {
    RedisString::create_from_slice(std::ptr::null_mut(), name)
}

/// A cheap mix of a base key's length and last bytes (posts differ there:
/// `post:1234`); entries are then compared exactly.
fn post_hash(base: &[u8]) -> usize {
    base.iter().rev().take(6).fold(base.len(), |h, &b| {
        h.wrapping_mul(31).wrapping_add(b as usize)
    })
}

fn chunk_slot(h: usize, range: u64) -> usize {
    h.wrapping_add(range as usize).wrapping_mul(0x9E37) & (HOT_CHUNKS - 1)
}

/// Opens `B:bits:<range>` and `B:count` for writing, by the names kept
/// for `base` (made now when the post is not in the table), and returns a
/// view of the kept name `B:set` with them.
fn open_post(ctx: &Context, base: &[u8], range: u64) -> (Key, Key, Option<KeptView>) {
    let h = post_hash(base);
    HOT.with(|hot| {
        // Should a server event ever come back here while the table is
        // borrowed, that call builds its names for itself.
        let Ok(mut hot) = hot.try_borrow_mut() else {
            return open_post_plain(ctx, base, range);
        };
        let hot = &mut *hot;
        if hot.posts.is_empty() {
            hot.posts.resize_with(HOT_POSTS, || None);
            hot.chunks.resize_with(HOT_CHUNKS, || None);
        }
        let p = &mut hot.posts[h & (HOT_POSTS - 1)];
        let post = match p {
            Some(e) if e.base == base => e,
            // The slot's buffer is reused: no allocation for the base.
            Some(e) => {
                e.base.clear();
                e.base.extend_from_slice(base);
                e.count = kept_name(StackName::new(base, b"count", None).as_slice());
                e.set = kept_name(StackName::new(base, b"set", None).as_slice());
                e
            }
            None => p.insert(HotPost {
                base: base.to_vec(),
                count: kept_name(StackName::new(base, b"count", None).as_slice()),
                set: kept_name(StackName::new(base, b"set", None).as_slice()),
            }),
        };
        let count = Key::open_kept(ctx, &post.count, true);
        let set = KeptView::of(ctx, &post.set);
        let c = &mut hot.chunks[chunk_slot(h, range)];
        let chunk = match c {
            Some(e) if e.range == range && e.base == base => e,
            Some(e) => {
                e.base.clear();
                e.base.extend_from_slice(base);
                e.range = range;
                e.name = kept_name(StackName::new(base, b"bits:", Some(range)).as_slice());
                e
            }
            None => c.insert(HotChunk {
                base: base.to_vec(),
                range,
                name: kept_name(StackName::new(base, b"bits:", Some(range)).as_slice()),
            }),
        };
        (Key::open_kept(ctx, &chunk.name, true), count, Some(set))
    })
}

fn open_post_plain(ctx: &Context, base: &[u8], range: u64) -> (Key, Key, Option<KeptView>) {
    let chunk = Key::open(
        ctx,
        StackName::new(base, b"bits:", Some(range)).as_slice(),
        true,
    );
    let count = Key::open(ctx, StackName::new(base, b"count", None).as_slice(), true);
    (chunk, count, None)
}

/// A view of a name kept in the table, for the command that opened the
/// post: not released (the table owns the name and keeps it until another
/// post takes the slot, which only a later command does).
struct KeptView(std::mem::ManuallyDrop<RedisString>);

impl KeptView {
    fn of(ctx: &Context, name: &RedisString) -> KeptView {
        KeptView(std::mem::ManuallyDrop::new(
            RedisString::from_redis_module_string(ctx.ctx, name.inner),
        ))
    }
}

// The hot writes read their arguments where Redis holds them (argv.rs):
// no owned copies, no vector, about 600 instructions less per call.
fn write(ctx: &Context, c: &mut Args, op: Op) -> RedisResult {
    c.require(3)?;
    c.skip(2)?;
    // REM takes no NOW: anything after its user but `SPREAD n` is an
    // arity error, as when its arity was fixed at 3 (and so found before
    // the user is read, as Redis's own arity check was).
    let remaining = c.all().len() - c.position();
    if op == Op::Rem && !c.done() && !(remaining == 2 && scope::is_keyword(c.arg(3))) {
        return Err(error::arity(&String::from_utf8_lossy(c.arg(0))));
    }
    let id = user_id(ctx, c.arg(2))?;
    let (now, declared) = scope::now_and_spread(FAMILY, c, model::MAX_NOW_MS)?;
    let args = c.all();
    let base = args[1].as_slice();
    util::require_hash_tag(ctx, FAMILY, base)?;
    // A shard of a spread post: the user must belong to it, and it stores
    // the user as `id / n` (docs/spread.md).
    let spread = spread_of(ctx, base, declared)?;
    let (id, stored_user) = match spread {
        Some(sh) => {
            let (s, stored) = route::like_slot_of(id, sh.n);
            if s != sh.i {
                return Err(shard::wrong_shard(
                    FAMILY,
                    "user",
                    base,
                    sh.shard(),
                    args[2].as_slice(),
                    s,
                ));
            }
            let digits = itoa::Buffer::new().format(stored).as_bytes().to_vec();
            (
                stored,
                Some(RedisString::create_from_slice(ctx.ctx, &digits)),
            )
        }
        None => (id, None),
    };
    let user = stored_user.as_ref().unwrap_or(&args[2]);

    let (range, off) = model::locate(id);
    let (chunk, count, set_kept) = open_post(ctx, base, range);
    let has_chunk = chunk.check(KeyType::String)?;
    let has_count = count.check(KeyType::String)?;
    // Recording recent likers is the opt-in feature: only then is
    // `B:recent` read, so its type is checked before anything is written.
    let recent_cap = config::get(&config::LIKE_RECENT).max(0) as u64;
    // A replica never reads it: the master replicates what it recorded.
    let recent = (recent_cap > 0 && !follower(ctx))
        .then(|| Key::open(ctx, &derived_name(base, "recent"), true));
    if let Some(r) = &recent {
        r.check(KeyType::ZSet)?;
    }
    // The count's type is known: its bytes are read without another type
    // lookup, through the one access that also rewrites them (below).
    // (Access for writing may turn an integer-encoded value into a plain
    // string of the same bytes, as `SETRANGE` does; the value is the same.)
    // Nothing else changes `B:count`'s value before the write: the Set
    // command below touches another key, and the slice stays valid.
    let count_bytes = count.bytes_for_write();
    let stored = if has_count {
        match model::parse_count(count_bytes) {
            Some(v) => Some(v),
            None => return Err(corrupt_count(ctx, base)),
        }
    } else {
        None
    };
    let (old, set_expiry) = match stored {
        Some(v) => (v, None),
        None => {
            if spread.is_none() {
                scope::refuse_base(ctx, &POST, base)?;
            }
            let (n, at) = missing_count(ctx, base, has_chunk)?;
            // A shard's count takes the expiry of its record, so that all
            // of its keys keep one instant.
            (n, at.or(spread.and_then(|s| s.expires_at)))
        }
    };

    // Plan and apply the change through the post's store: a bit of the
    // chunk, or the Set (model::like_write).
    let mut migrating = false;
    let mut bytes: &mut [u8] = &mut [];
    let form = if has_chunk {
        // One access to the chunk gives its length and its bits, and is
        // where the bit is written (marked as a change only then).
        bytes = chunk.bytes_for_write();
        migrating = match bytes.len() {
            CHUNK_BYTES => false,
            MIGRATING_BYTES => true,
            _ => {
                let name = StackName::new(base, b"bits:", Some(range));
                return Err(error::corrupt(FAMILY, name.as_slice(), None));
            }
        };
        model::Form::Bitmap {
            bit: model::get_bit(bytes, off),
            migrating,
        }
    } else {
        model::Form::Set
    };
    let mut store = PostStore {
        ctx,
        base,
        user,
        set_kept,
        set_built: std::cell::OnceCell::new(),
        chunk: &chunk,
        bytes,
        off,
    };
    let model::Outcome {
        was,
        liked,
        dirty,
        set_added,
        count: new,
    } = model::like_write(&mut store, op, form, old)?;
    drop(store);
    let changed = was != liked;

    if changed {
        if !has_chunk && new == 0 && !post_has_chunks(ctx, base) {
            // The last unlike of a post in set form: the Set is gone, and
            // the post leaves no keys.
            count.delete();
            let meta = Key::open(ctx, &derived_name(base, "meta"), true);
            if spread.is_some() {
                // A shard keeps its record: only the promotion's check goes.
                meta.hdel(b"check");
            } else {
                meta.delete();
            }
            drop(meta);
            // Through the open handle when there is one: a second handle
            // deleting the key would leave the first one dangling.
            match &recent {
                Some(r) => r.delete(),
                None => Key::open(ctx, &derived_name(base, "recent"), true).delete(),
            }
        } else {
            let created = stored.is_none();
            let mut digits = itoa::Buffer::new();
            let digits = digits.format(new).as_bytes();
            // The common case: as many digits as before, rewritten in place.
            if count_bytes.len() == digits.len() {
                count_bytes.copy_from_slice(digits);
                count.mark_modified();
            } else {
                count.write_in_place(digits);
            }
            if created {
                if let Some(at) = set_expiry {
                    count.set_abs_expire_ms(at);
                }
            }
        }
    }
    // A Set created again in a post with an expiry takes the post's
    // expiry, the instant `B:count` holds (the same on a replica).
    let step = changed && (recent.is_some() || model::observes(new) || migrating);
    let expires_at = if set_added || step {
        count.abs_expire_ms()
    } else {
        None
    };
    if set_added {
        if let Some(at) = expires_at {
            let set = Key::open(ctx, &derived_name(base, "set"), true);
            if set.abs_expire_ms().is_none() {
                set.set_abs_expire_ms(at);
            }
        }
    }
    drop(chunk);
    drop(count);

    // Master-only work, replicated as explicit effects after the command.
    let mut fx = None;
    let mut promoted = false;
    if step && !follower(ctx) {
        let fx = fx.insert(Effects::new(ctx, expires_at));
        if let Some(r) = &recent {
            // Recent likers are kept under their own ids, also in a shard.
            record_recent(r, base, args[2].as_slice(), liked, now, recent_cap, fx);
        }
        drop(recent);
        if model::observes(new) || migrating {
            promoted = promotion_step(ctx, base, new, migrating, fx);
        }
    }
    if dirty {
        ctx.replicate_verbatim();
    }
    if let Some(fx) = &fx {
        fx.replicate();
    }
    if changed {
        if liked {
            LIKES.incr();
            util::notify(ctx, event(op), base);
        } else {
            UNLIKES.incr();
            util::notify(ctx, event(op), base);
        }
    }
    if promoted {
        PROMOTIONS.incr();
    }
    let first = if op == Op::Toggle { liked } else { changed };
    // Replied here rather than through a RedisValue::Array, which would
    // allocate a vector on every call.
    reply::ints(ctx, &[first as i64, new]);
    Ok(RedisValue::NoReply)
}

/// Returns true when the post has a chunk index (some range in bitmap
/// form, or planned to be).
fn post_has_chunks(ctx: &Context, base: &[u8]) -> bool {
    Key::open(ctx, &derived_name(base, "chunks"), false).exists()
}

/// Records a like in `B:recent` (capped at `cap`, oldest dropped), or takes
/// an unliking user out of it. The master's clock is the score, replicated
/// as `ZADD`.
fn record_recent(
    recent: &Key,
    base: &[u8],
    u: &[u8],
    liked: bool,
    now: Option<i64>,
    cap: u64,
    fx: &mut Effects<'_>,
) {
    let name = derived_name(base, "recent");
    if !liked {
        if recent.zrem(u) {
            fx.push(c"ZREM", &[&name, u]);
        }
        return;
    }
    let existed = recent.exists();
    let now = now.unwrap_or_else(util::now_ms);
    recent.zadd(u, now as f64);
    fx.push(c"ZADD", &[&name, now.to_string().as_bytes(), u]);
    if !existed {
        fx.created(recent, &name);
    }
    let drop = model::recent_overflow(recent.len() as u64, cap);
    if drop > 0 {
        for (m, _) in recent.zrange_asc(0, drop as usize) {
            recent.zrem(&m);
            fx.push(c"ZREM", &[&name, &m]);
        }
    }
}

// ---- reads ----

/// What a read needs to know of a post: its count and the keys that hold
/// its likers, every type checked.
struct Post {
    count: i64,
    set_members: u64,
    index: Vec<u8>,
}

/// Reads a post: the type of each of its keys, then `B:count` (see
/// [`missing_count`] for a missing one).
///
/// A single-slot read (`single`) of a post with no keys at all checks that
/// `base` is not the base key of a spread post.
fn read_post(
    ctx: &Context,
    base: &[u8],
    need_count: bool,
    single: bool,
) -> Result<Post, RedisError> {
    let set = Key::open(ctx, &derived_name(base, "set"), false);
    set.check(KeyType::Set)?;
    let index = Key::open(ctx, &derived_name(base, "chunks"), false);
    let has_index = index.check(KeyType::String)?;
    let count = Key::open(ctx, &derived_name(base, "count"), false);
    count.check(KeyType::String)?;
    if single && !has_index && !count.exists() && !set.exists() {
        scope::refuse_base(ctx, &POST, base)?;
    }
    if !need_count {
        return Ok(Post {
            count: 0,
            set_members: set.len() as u64,
            index: index.bytes().to_vec(),
        });
    }
    let count = match stored_count(ctx, base, &count)? {
        Some(v) => v,
        None if has_index => {
            return Err(error::corrupt(FAMILY, &derived_name(base, "count"), None))
        }
        None => set.len() as i64,
    };
    Ok(Post {
        count,
        set_members: set.len() as u64,
        index: index.bytes().to_vec(),
    })
}

/// The chunks a read opened, by range.
struct Chunks<'a> {
    ctx: &'a Context,
    base: &'a [u8],
    open: Vec<(u64, Option<Key>)>,
}

impl<'a> Chunks<'a> {
    fn new(ctx: &'a Context, base: &'a [u8]) -> Self {
        Chunks {
            ctx,
            base,
            open: Vec::new(),
        }
    }

    /// Returns the chunk of `range` (None when the range is in set form)
    /// and whether it is migrating; WRONGTYPE or corrupt-data errors for a
    /// chunk that is not one.
    fn get(&mut self, index: &[u8], range: u64) -> Result<Option<(&[u8], bool)>, RedisError> {
        if !model::get_bit(index, range) {
            return Ok(None);
        }
        let i = match self.open.iter().position(|(r, _)| *r == range) {
            Some(i) => i,
            None => {
                let name = chunk_name(self.base, range);
                let key = Key::open(self.ctx, &name, false);
                let key = if key.check(KeyType::String)? {
                    if !matches!(key.len(), CHUNK_BYTES | MIGRATING_BYTES) {
                        return Err(error::corrupt(FAMILY, &name, None));
                    }
                    Some(key)
                } else {
                    None
                };
                self.open.push((range, key));
                self.open.len() - 1
            }
        };
        Ok(self.open[i]
            .1
            .as_ref()
            .map(|k| (k.bytes(), k.len() == MIGRATING_BYTES)))
    }
}

/// Answers, for each id, whether it likes the post: bits from the chunks,
/// the rest with one `SMISMEMBER` (batched) of the Set.
fn likes_of(
    ctx: &Context,
    base: &[u8],
    post: &Post,
    ids: &[u64],
    given: Option<&[RedisString]>,
) -> Result<Vec<bool>, RedisError> {
    let mut out = vec![false; ids.len()];
    let mut ask: Vec<usize> = Vec::new();
    let mut chunks = Chunks::new(ctx, base);
    for (i, &id) in ids.iter().enumerate() {
        let (range, off) = model::locate(id);
        match chunks.get(&post.index, range)? {
            Some((bytes, migrating)) => {
                out[i] = model::get_bit(bytes, off);
                if !out[i] && migrating {
                    ask.push(i);
                }
            }
            None => ask.push(i),
        }
    }
    drop(chunks);
    if post.set_members > 0 && !ask.is_empty() {
        let set = RedisString::create_from_slice(ctx.ctx, &derived_name(base, "set"));
        // The client's own strings when it sent the ids (canonical, so the
        // same members), else strings made once here.
        let made: Vec<RedisString> = match given {
            Some(_) => Vec::new(),
            None => ask
                .iter()
                .map(|&i| {
                    RedisString::create_from_slice(
                        ctx.ctx,
                        itoa::Buffer::new().format(ids[i]).as_bytes(),
                    )
                })
                .collect(),
        };
        let users: Vec<Arg> = match given {
            Some(g) => ask.iter().map(|&i| g[i].inner).collect(),
            None => made.iter().map(|u| u.inner).collect(),
        };
        for (j, yes) in are_members(ctx, &set, &users)?.into_iter().enumerate() {
            out[ask[j]] = yes;
        }
    }
    Ok(out)
}

/// `LIKE.CHECK B user [user …]` → `[0|1, …]`
pub fn like_check(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let c = Cursor::new(args, 3)?;
    let (end, declared) = scope::trailing(FAMILY, c.args(), 3)?;
    let max = max_id();
    let given = &c.args()[2..end];
    let ids = given
        .iter()
        .map(|a| parse_id(a.as_slice(), max))
        .collect::<Result<Vec<u64>, RedisError>>()?;
    let base = c.arg(1);
    util::require_hash_tag(ctx, FAMILY, base)?;
    let spread = spread_of(ctx, base, declared)?;
    let ids = match spread {
        // Every user must belong to this shard; the shard holds `id / n`.
        Some(sh) => ids
            .iter()
            .zip(given)
            .map(|(&id, g)| {
                let (s, stored) = route::like_slot_of(id, sh.n);
                if s != sh.i {
                    return Err(shard::wrong_shard(
                        FAMILY,
                        "user",
                        base,
                        sh.shard(),
                        g.as_slice(),
                        s,
                    ));
                }
                Ok(stored)
            })
            .collect::<Result<Vec<u64>, RedisError>>()?,
        None => ids,
    };
    let post = read_post(ctx, base, false, spread.is_none())?;
    CHECKS.add(ids.len() as u64);
    // The client's own strings are the members when they are the ids
    // stored (a single-slot post).
    let given = spread.is_none().then_some(given);
    let flags = likes_of(ctx, base, &post, &ids, given)?;
    Ok(RedisValue::Array(
        flags
            .into_iter()
            .map(|f| RedisValue::Integer(f as i64))
            .collect(),
    ))
}

/// `LIKE.COUNT B` → count
pub fn like_count(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let c = Cursor::new(args, 2)?;
    let declared = scope::only(FAMILY, c.args(), 2)?;
    let base = c.arg(1);
    util::require_hash_tag(ctx, FAMILY, base)?;
    let spread = spread_of(ctx, base, declared)?;
    Ok(RedisValue::Integer(
        read_post(ctx, base, true, spread.is_none())?.count,
    ))
}

/// `LIKE.RECENT B [n]` → `[user, unix-ms, …]`, newest first
pub fn like_recent(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    c.skip(1)?;
    let mut want = i64::MAX;
    let mut declared = None;
    if !c.done() && !scope::is_keyword(c.arg(2)) {
        want = c.next_i64(0, i64::MAX)?;
    }
    if !c.done() {
        if !scope::is_keyword(c.next_slice()?) {
            return Err(error::syntax());
        }
        declared = Some(shard::parse_count(FAMILY, c.option_bytes()?)?);
    }
    c.expect_done()?;
    let base = c.arg(1);
    util::require_hash_tag(ctx, FAMILY, base)?;
    let spread = spread_of(ctx, base, declared)?;
    let recent = Key::derived(ctx, base, "recent", false);
    recent.check(KeyType::ZSet)?;
    if spread.is_none() && !recent.exists() {
        scope::refuse_base(ctx, &POST, base)?;
    }
    let mut out = Vec::new();
    for (m, score) in recent.zrange_desc(0, usize::try_from(want).unwrap_or(usize::MAX)) {
        out.push(match parse_i64_plain(&m) {
            Some(i) => RedisValue::Integer(i),
            None => util::bulk(m),
        });
        out.push(RedisValue::Integer(score as i64));
    }
    Ok(RedisValue::Array(out))
}

/// `LIKE.COMMON B1 B2` → the users who like both, ascending.
///
/// Reads the likers of the post with fewer (its chunks and its Set) and
/// looks each up in the other post; refused when that post has more than
/// `like-common-max` likers or chunks worth as much (each chunk reads
/// 8,000 bytes, counted as 64 likers), so one call stays bounded.
pub fn like_common(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let c = Cursor::new(args, 3)?;
    let (b1, b2) = (c.arg(1), c.arg(2));
    util::require_hash_tag(ctx, FAMILY, b1)?;
    util::require_hash_tag(ctx, FAMILY, b2)?;
    refuse_shard(ctx, "LIKE.COMMON", b1)?;
    refuse_shard(ctx, "LIKE.COMMON", b2)?;
    let (p1, p2) = (
        read_post(ctx, b1, true, true)?,
        read_post(ctx, b2, true, true)?,
    );
    let ((pb, p), (qb, q)) = if p1.count <= p2.count {
        ((b1, &p1), (b2, &p2))
    } else {
        ((b2, &p2), (b1, &p1))
    };
    let chunks_of = |post: &Post| model::popcount(&post.index) as i64;
    let work = p.count.saturating_add(chunks_of(p).saturating_mul(64));
    let cap = config::get(&config::LIKE_COMMON_MAX);
    if work > cap {
        return Err(error::family(
            FAMILY,
            &format!("LIKE.COMMON would read {work} likers (a chunk counts as 64), more than like-common-max ({cap})"),
        ));
    }
    // The likers of p: bits of its chunks, then its Set.
    let mut mine: Vec<u64> = Vec::new();
    let mut pc = Chunks::new(ctx, pb);
    let mut r = 0u64;
    while r < p.index.len() as u64 * 8 {
        if let Some((bytes, _)) = pc.get(&p.index, r)? {
            model::each_bit(bytes, |off| {
                if off < model::RANGE_IDS {
                    mine.push(r * model::RANGE_IDS + off)
                }
            });
        }
        r += 1;
    }
    drop(pc);
    if p.set_members > 0 {
        Key::open(ctx, &derived_name(pb, "set"), false).scan(|m| {
            if let Some(id) = model::parse_user(m, model::MAX_ID) {
                mine.push(id);
            }
            true
        });
    }
    let flags = likes_of(ctx, qb, q, &mine, None)?;
    let mut out: Vec<u64> = mine
        .into_iter()
        .zip(flags)
        .filter_map(|(u, f)| f.then_some(u))
        .collect();
    out.sort_unstable();
    out.dedup();
    Ok(RedisValue::Array(
        out.into_iter()
            .map(|u| RedisValue::Integer(u as i64))
            .collect(),
    ))
}

/// `LIKE.INFO B` → `[encoding, none|set|bitmap|mixed, count, n, bytes, n,
/// set, n, chunks, n, promotion, none|create|move|settle]`
pub fn like_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let c = Cursor::new(args, 2)?;
    let declared = scope::only(FAMILY, c.args(), 2)?;
    let base = c.arg(1);
    util::require_hash_tag(ctx, FAMILY, base)?;
    let spread = spread_of(ctx, base, declared)?;
    let meta_name = derived_name(base, "meta");
    let meta = Key::open(ctx, &meta_name, false);
    meta.check(KeyType::Hash)?;
    let post = read_post(ctx, base, true, spread.is_none())?;
    let promotion = match meta.hget(b"state") {
        None => "none".to_string(),
        Some(s) if matches!(s.as_slice(), b"create" | b"move" | b"settle") => {
            String::from_utf8_lossy(&s).into_owned()
        }
        Some(_) => return Err(error::corrupt(FAMILY, &meta_name, Some("state"))),
    };
    let chunks = model::popcount(&post.index);
    // The largest id matters for an intset (at most 512 members): one scan
    // step reads an intset whole. A Set of that size that is still a
    // hashtable (it was large and shrank, keeping a big sparse table that
    // took milliseconds to walk) is never finished in one step: the model
    // then takes the widest (8-byte) ids. The twin asks OBJECT ENCODING,
    // which gives the same answer.
    let mut top = 0;
    if post.set_members > 0 && post.set_members <= model::INTSET_MAX_ENTRIES {
        let set = Key::open(ctx, &derived_name(base, "set"), false);
        let whole = set.scan_first(0, |m| {
            top = top.max(model::parse_user(m, u64::MAX).unwrap_or(u64::MAX));
        });
        if !whole {
            top = u64::MAX;
        }
    }
    let bytes = model::post_memory(post.set_members, top, chunks, post.index.len() as u64);
    let encoding = match (post.set_members > 0, chunks > 0) {
        (false, false) if post.count == 0 => "none",
        (_, false) => "set",
        (false, true) => "bitmap",
        (true, true) => "mixed",
    };
    let mut out = vec![
        util::bulk("encoding"),
        util::bulk(encoding),
        util::bulk("count"),
        RedisValue::Integer(post.count),
        util::bulk("bytes"),
        RedisValue::Integer(bytes as i64),
        util::bulk("set"),
        RedisValue::Integer(post.set_members as i64),
        util::bulk("chunks"),
        RedisValue::Integer(chunks as i64),
        util::bulk("promotion"),
        util::bulk(promotion),
    ];
    // A shard says which one it is.
    if let Some(sh) = spread {
        out.extend([
            util::bulk("spread"),
            RedisValue::Integer(i64::from(sh.n)),
            util::bulk("shard"),
            RedisValue::Integer(i64::from(sh.i)),
        ]);
    }
    Ok(util::map(ctx, out))
}

/// `LIKE.CREATE K SPREAD n` → `OK`
///
/// Creates shard `i` of a post spread over `n` shards: `K` must be the key
/// of shard `i` of `n` of its base (`{<tag>}B`, docs/spread.md), and
/// `K:meta` records `spread n` and `shard i`. A client library creates
/// every shard (shard 0 first). Creating a shard again with the same
/// count answers `OK` and changes nothing, so a create that failed half
/// way can be run again; another count, or a key that holds a post
/// already, is an error. A single-slot post needs no creation.
pub fn like_create(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    c.skip(1)?;
    let mut declared = None;
    while !c.done() {
        if !scope::is_keyword(c.next_slice()?) {
            return Err(error::syntax());
        }
        declared = Some(shard::parse_count(FAMILY, c.option_bytes()?)?);
    }
    let Some(n) = declared else {
        return Err(error::family(
            FAMILY,
            "LIKE.CREATE needs SPREAD n (a single-slot post needs no creation)",
        ));
    };
    let key = c.arg(1);
    let Some(i) = route::shard_index(key, n) else {
        return Err(shard::not_a_shard_key(FAMILY, key, n));
    };
    // Every key of the shard is type-checked before anything is written.
    let meta_name = derived_name(key, "meta");
    let meta = Key::open(ctx, &meta_name, true);
    meta.check(KeyType::Hash)?;
    let kinds = || {
        [
            ("set", KeyType::Set),
            ("count", KeyType::String),
            ("chunks", KeyType::String),
            ("recent", KeyType::ZSet),
        ]
    };
    let mut in_use = false;
    for (suffix, kind) in kinds() {
        in_use |= Key::open(ctx, &derived_name(key, suffix), false).check(kind)?;
    }
    match scope::record(FAMILY, key, &meta)? {
        Some(r) if r.n == n => return Ok(RedisValue::SimpleStringStatic("OK")),
        Some(r) => {
            return Err(shard::resolve(FAMILY, key, Some(n), Some(r), || true)
                .err()
                .unwrap_or(RedisError::Str(error::INTERNAL)))
        }
        None => {}
    }
    if in_use || meta.exists() {
        return Err(error::family(
            FAMILY,
            &format!(
                "'{}' already holds a single-slot post",
                error::key_text(key)
            ),
        ));
    }
    // Shard 0 shares its base key's slot: a single-slot post under the
    // base (whose keys are in that slot when it has a hash tag, or on a
    // standalone server) must not be shadowed by a spread one.
    if i == 0 {
        let base = route::shard_base(key).unwrap_or(key);
        if util::has_hash_tag(base) || !util::cluster_mode(ctx) {
            for (suffix, _) in kinds().into_iter().take(3) {
                if Key::open(ctx, &derived_name(base, suffix), false).exists() {
                    return Err(error::family(
                        FAMILY,
                        &format!("'{}' is a single-slot post already", error::key_text(base)),
                    ));
                }
            }
        }
    }
    meta.hput(
        shard::FIELD_SPREAD,
        itoa::Buffer::new().format(n).as_bytes(),
    );
    meta.hput(shard::FIELD_SHARD, itoa::Buffer::new().format(i).as_bytes());
    drop(meta);
    ctx.replicate_verbatim();
    util::notify(ctx, "hotpath.like.create", key);
    Ok(RedisValue::SimpleStringStatic("OK"))
}
