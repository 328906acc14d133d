//! LIKE handlers: parse and validate every argument, check every derived
//! key's type, then apply the change, reply, replicate the effects and
//! raise the keyspace event.
//!
//! Writes replicate their concrete effects (`SADD`, `SETBIT`, `SET … KEEPTTL`,
//! `ZADD`, the promotion as `DEL` + `SET`), never the command itself: the
//! clock (`B:recent` scores) and the configs (`like-recent`,
//! `like-promote-at`, `like-max-id`) may differ on a replica, the effects
//! do not.

use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args::{parse_i64_plain, Cursor};
use crate::config;
use crate::error;
use crate::keys::{derived, Key, KeyType};
use crate::like::model;
use crate::like::{CHECKS, LIKES, PROMOTIONS, UNLIKES};
use crate::util;

const FAMILY: &str = "like";

/// Which structure holds a post's likers.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Form {
    None,
    Set,
    Bitmap,
}

impl Form {
    fn name(self) -> &'static str {
        match self {
            Form::None => "none",
            Form::Set => "set",
            Form::Bitmap => "bitmap",
        }
    }
}

/// The derived keys of a base key.
struct Names {
    set: Vec<u8>,
    bits: Vec<u8>,
    count: Vec<u8>,
    recent: Vec<u8>,
}

impl Names {
    fn of(base: &[u8]) -> Names {
        Names {
            set: derived(base, "set"),
            bits: derived(base, "bits"),
            count: derived(base, "count"),
            recent: derived(base, "recent"),
        }
    }
}

/// The commands a write replicates, in the order it applied them. The
/// arguments become Redis strings once, when pushed, and are handed to
/// `RedisModule_Replicate` without another copy.
struct Effects<'c> {
    ctx: &'c Context,
    ops: Vec<(&'static str, Vec<RedisString>)>,
}

impl<'c> Effects<'c> {
    fn new(ctx: &'c Context) -> Self {
        Effects {
            ctx,
            ops: Vec::with_capacity(4),
        }
    }

    fn push(&mut self, cmd: &'static str, args: &[&[u8]]) {
        let args = args
            .iter()
            .map(|a| RedisString::create_from_slice(self.ctx.ctx, a))
            .collect();
        self.ops.push((cmd, args));
    }

    fn replicate(&self) {
        for (cmd, args) in &self.ops {
            let refs: Vec<&RedisString> = args.iter().collect();
            self.ctx.replicate(cmd, refs.as_slice());
        }
    }
}

fn max_id() -> u64 {
    config::get(&config::LIKE_MAX_ID).max(0) as u64
}

fn parse_user(bytes: &[u8], max: u64) -> Result<u64, RedisError> {
    model::parse_user(bytes, max)
        .ok_or_else(|| error::family(FAMILY, &model::bad_user_message(max)))
}

/// Returns the form of `B`'s likes, or `WRONGTYPE` when `B:set` or `B:bits`
/// holds another type. A bitmap wins if both exist (the commands never
/// leave both).
fn form_of(ctx: &Context, n: &Names) -> Result<Form, RedisError> {
    let has_set = Key::open(ctx, &n.set, false).check(KeyType::Set)?;
    let has_bits = Key::open(ctx, &n.bits, false).check(KeyType::String)?;
    Ok(if has_bits {
        Form::Bitmap
    } else if has_set {
        Form::Set
    } else {
        Form::None
    })
}

fn call_i64(ctx: &Context, cmd: &str, args: &[&[u8]]) -> Result<i64, RedisError> {
    int_reply(ctx.call(cmd, args)?)
}

/// Calls a set command with the client's own argument strings (no copies:
/// the hot path's `SADD`/`SREM`/`SMISMEMBER`).
fn call_strings(ctx: &Context, cmd: &str, args: &[&RedisString]) -> RedisResult {
    ctx.call(cmd, args)
}

fn int_reply(v: RedisValue) -> Result<i64, RedisError> {
    match v {
        RedisValue::Integer(i) => Ok(i),
        RedisValue::Null => Ok(0),
        _ => Err(RedisError::Str(error::INTERNAL)),
    }
}

fn value_bytes(v: RedisValue) -> Option<Vec<u8>> {
    match v {
        RedisValue::SimpleString(s) | RedisValue::BulkString(s) => Some(s.into_bytes()),
        RedisValue::StringBuffer(b) => Some(b),
        RedisValue::BulkRedisString(s) => Some(s.as_slice().to_vec()),
        _ => None,
    }
}

/// Returns a set's members (`SMEMBERS`, or `SINTER` of two sets).
fn call_members(ctx: &Context, cmd: &str, args: &[&[u8]]) -> Result<Vec<Vec<u8>>, RedisError> {
    match ctx.call(cmd, args)? {
        RedisValue::Array(items) => Ok(items.into_iter().filter_map(value_bytes).collect()),
        _ => Ok(Vec::new()),
    }
}

/// Returns the modelled memory of the like structure (the figure that
/// promotion compares): `64 + length` for a bitmap; for a set, the intset
/// or hashtable model, reading the members of a set small enough to be an
/// intset (at most 512) for its largest id. A member that is not an id
/// counts as the widest.
fn structure_bytes(ctx: &Context, n: &Names, form: Form) -> u64 {
    match form {
        Form::None => 0,
        Form::Bitmap => model::bitmap_memory(Key::open(ctx, &n.bits, false).len() as u64),
        Form::Set => {
            let set = Key::open(ctx, &n.set, false);
            let members = set.len() as u64;
            let mut top = 0;
            if members <= model::INTSET_MAX_ENTRIES {
                set.scan(|m| {
                    top = top.max(model::parse_user(m, u64::MAX).unwrap_or(u64::MAX));
                    true
                });
            }
            model::set_memory(members, top)
        }
    }
}

/// Returns the like count: `B:count` when it holds a non-negative integer,
/// otherwise counted from the structure (`SCARD` / popcount) without
/// writing. The flag tells whether `B:count` held it.
fn read_count(
    ctx: &Context,
    n: &Names,
    form: Form,
    count: &Key,
) -> Result<(i64, bool), RedisError> {
    if form == Form::None {
        return Ok((0, false));
    }
    if let Some(v) = parse_i64_plain(count.bytes()).filter(|v| *v >= 0) {
        return Ok((v, true));
    }
    let v = match form {
        Form::Set => call_i64(ctx, "SCARD", &[&n.set])?,
        _ => model::popcount(Key::open(ctx, &n.bits, false).bytes()) as i64,
    };
    Ok((v, false))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Toggle,
    Add,
    Rem,
}

impl Op {
    /// The keyspace event of a write that changed the likes: named after
    /// the command, as in every family (a promotion raises no event of
    /// its own; `like_promoted` in INFO counts it).
    fn event(self) -> &'static str {
        match self {
            Op::Toggle => "hotpath.like.toggle",
            Op::Add => "hotpath.like.add",
            Op::Rem => "hotpath.like.rem",
        }
    }
}

/// `LIKE.TOGGLE B user [NOW unix-ms]` → `[liked, count]`
pub fn like_toggle(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    write(ctx, args, Op::Toggle)
}

/// `LIKE.ADD B user [NOW unix-ms]` → `[changed, count]`
pub fn like_add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    write(ctx, args, Op::Add)
}

/// `LIKE.REM B user` → `[changed, count]`
pub fn like_rem(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    write(ctx, args, Op::Rem)
}

fn write(ctx: &Context, args: Vec<RedisString>, op: Op) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let base = c.next_bytes()?;
    let user_arg = c.next()?;
    let max = max_id();
    let user = parse_user(user_arg.as_slice(), max)?;
    let mut now = None;
    if op == Op::Rem {
        c.expect_done()?;
    } else {
        while !c.done() {
            match c.next_keyword()?.as_str() {
                "NOW" => now = Some(c.option_i64(0, model::MAX_NOW_MS)?),
                _ => return Err(error::syntax()),
            }
        }
    }
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let n = Names::of(&base);
    let form = form_of(ctx, &n)?;
    let count_key = Key::open(ctx, &n.count, true);
    count_key.check(KeyType::String)?;
    let recent = Key::open(ctx, &n.recent, true);
    recent.check(KeyType::ZSet)?;
    // Everything is valid: from here on the command writes.
    let (old, _) = read_count(ctx, &n, form, &count_key)?;
    // The id is canonical (parse_user refuses anything else), so the
    // client's own string is the member.
    let u = user_arg.as_slice();
    let mut fx = Effects::new(ctx);
    let (changed, liked) = match form {
        Form::None | Form::Set => {
            let set = RedisString::create_from_slice(ctx.ctx, &n.set);
            let call = |cmd| -> Result<bool, RedisError> {
                Ok(int_reply(call_strings(ctx, cmd, &[&set, &user_arg])?)? == 1)
            };
            match op {
                Op::Add => (call("SADD")?, true),
                Op::Rem if form == Form::None => (false, false),
                Op::Rem => (call("SREM")?, false),
                Op::Toggle => {
                    if call("SADD")? {
                        (true, true)
                    } else {
                        call("SREM")?;
                        (true, false)
                    }
                }
            }
        }
        Form::Bitmap => {
            let bits = Key::open(ctx, &n.bits, true);
            let was = model::get_bit(bits.bytes(), user);
            let want = match op {
                Op::Add => true,
                Op::Rem => false,
                Op::Toggle => !was,
            };
            if was != want {
                let len = bits.len() as u64;
                let grown = if want {
                    model::grown_len(user, len)
                } else {
                    None
                };
                let bytes = bits.bytes_mut(grown.unwrap_or(len) as usize);
                model::set_bit(bytes, user, want);
                if let Some(g) = grown {
                    fx.push(
                        "SETRANGE",
                        &[&n.bits, (g - 1).to_string().as_bytes(), b"\0"],
                    );
                }
                fx.push("SETBIT", &[&n.bits, u, if want { b"1" } else { b"0" }]);
            }
            (was != want, want)
        }
    };
    if form != Form::Bitmap && changed {
        fx.push(if liked { "SADD" } else { "SREM" }, &[&n.set, u]);
    }
    let count = match (changed, liked) {
        (false, _) => old,
        (true, true) => old + 1,
        (true, false) => (old - 1).max(0),
    };
    if changed {
        if form != Form::Bitmap && count == 0 {
            count_key.delete();
            fx.push("DEL", &[&n.count]);
        } else {
            let v = count.to_string();
            count_key.set_keep_ttl(v.as_bytes());
            fx.push("SET", &[&n.count, v.as_bytes(), b"KEEPTTL"]);
        }
        update_recent(&recent, &n, u, liked, now, &mut fx);
    }
    drop(recent);
    drop(count_key);
    let promoted = changed
        && liked
        && form != Form::Bitmap
        && model::promotion_due(count, config::get(&config::LIKE_PROMOTE_AT))
        && model::promotion_possible(count as u64, user)
        && promote(ctx, &n, &mut fx)?;
    if changed {
        fx.replicate();
        if liked {
            LIKES.incr();
            util::notify(ctx, op.event(), &base);
        } else {
            UNLIKES.incr();
            util::notify(ctx, op.event(), &base);
        }
    }
    if promoted {
        PROMOTIONS.incr();
    }
    let first = if op == Op::Toggle { liked } else { changed };
    Ok(RedisValue::Array(vec![
        RedisValue::Integer(first as i64),
        RedisValue::Integer(count),
    ]))
}

/// Records a like in `B:recent` (capped at `like-recent`, oldest dropped),
/// or takes an unliking user out of it.
fn update_recent(
    recent: &Key,
    n: &Names,
    u: &[u8],
    liked: bool,
    now: Option<i64>,
    fx: &mut Effects<'_>,
) {
    let cap = config::get(&config::LIKE_RECENT).max(0) as u64;
    if !liked {
        if recent.zrem(u) {
            fx.push("ZREM", &[&n.recent, u]);
        }
        return;
    }
    if cap == 0 {
        return;
    }
    let now = now.unwrap_or_else(util::now_ms);
    recent.zadd(u, now as f64);
    fx.push("ZADD", &[&n.recent, now.to_string().as_bytes(), u]);
    let drop = model::recent_overflow(recent.len() as u64, cap);
    if drop > 0 {
        for (m, _) in recent.zrange_asc(0, drop as usize) {
            recent.zrem(&m);
            fx.push("ZREM", &[&n.recent, &m]);
        }
    }
}

/// Converts `B:set` into `B:bits` when the bitmap reaching the largest id
/// takes less memory than the set, by the memory model of
/// [`model::set_memory`] and [`model::bitmap_memory`]; returns true if it
/// did. The new bitmap keeps the set's TTL. Reading the set stops at the
/// first id whose bitmap could not be smaller, so a sparse set is settled
/// after a member or two.
fn promote(ctx: &Context, n: &Names, fx: &mut Effects<'_>) -> Result<bool, RedisError> {
    let set = Key::open(ctx, &n.set, false);
    let members = set.len() as u64;
    let mut ids = Vec::with_capacity(members as usize);
    let complete = set.scan(|m| match model::parse_user(m, u64::MAX) {
        Some(v) if model::promotion_possible(members, v) => {
            ids.push(v);
            true
        }
        // Too large an id, or a member that is not an id: stays a set.
        _ => false,
    });
    let top = ids.iter().copied().max().unwrap_or(0);
    if !complete || !model::promotion_wins(members, top) {
        return Ok(false);
    }
    let len = model::bitmap_len(top) as usize;
    let expires_at = set.abs_expire_ms();
    drop(set);
    // UNLINK rather than the key API's synchronous delete: freeing a set of
    // many thousand members would otherwise add to the time the server is
    // blocked; UNLINK hands it to the lazy-free thread.
    call_i64(ctx, "UNLINK", &[&n.set])?;
    let bits = Key::open(ctx, &n.bits, true);
    model::fill_bitmap(bits.bytes_mut(len), &ids);
    fx.push("UNLINK", &[&n.set]);
    fx.push("SET", &[&n.bits, bits.bytes()]);
    if let Some(at) = expires_at {
        // The bitmap expires at the set's own instant, on replicas too.
        bits.set_abs_expire_ms(at);
        fx.push("PEXPIREAT", &[&n.bits, at.to_string().as_bytes()]);
    }
    Ok(true)
}

/// `LIKE.CHECK B user [user …]` → `[0|1, …]`
pub fn like_check(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let base = c.next_bytes()?;
    let max = max_id();
    let mut users = Vec::with_capacity(c.remaining());
    let mut raw = Vec::with_capacity(c.remaining());
    while !c.done() {
        let a = c.next()?;
        users.push(parse_user(a.as_slice(), max)?);
        raw.push(a);
    }
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let n = Names::of(&base);
    let form = form_of(ctx, &n)?;
    CHECKS.add(users.len() as u64);
    let flags: Vec<i64> = match form {
        Form::None => vec![0; users.len()],
        Form::Bitmap => {
            let bits = Key::open(ctx, &n.bits, false);
            let bytes = bits.bytes();
            users
                .iter()
                .map(|&u| model::get_bit(bytes, u) as i64)
                .collect()
        }
        Form::Set => {
            let set = RedisString::create_from_slice(ctx.ctx, &n.set);
            let mut a: Vec<&RedisString> = Vec::with_capacity(raw.len() + 1);
            a.push(&set);
            a.extend(raw.iter());
            match call_strings(ctx, "SMISMEMBER", &a)? {
                RedisValue::Array(items) => items
                    .into_iter()
                    .map(|v| matches!(v, RedisValue::Integer(1)) as i64)
                    .collect(),
                _ => return Err(RedisError::Str(error::INTERNAL)),
            }
        }
    };
    Ok(RedisValue::Array(
        flags.into_iter().map(RedisValue::Integer).collect(),
    ))
}

/// `LIKE.COUNT B` → count
pub fn like_count(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let base = c.next_bytes()?;
    c.expect_done()?;
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let n = Names::of(&base);
    let form = form_of(ctx, &n)?;
    let count = Key::open(ctx, &n.count, false);
    count.check(KeyType::String)?;
    Ok(RedisValue::Integer(read_count(ctx, &n, form, &count)?.0))
}

/// `LIKE.RECENT B [n]` → `[user, unix-ms, …]`, newest first
pub fn like_recent(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let base = c.next_bytes()?;
    let want = if c.done() {
        config::get(&config::LIKE_RECENT).max(0)
    } else {
        c.next_i64(0, i64::MAX)?
    };
    c.expect_done()?;
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let recent = Key::derived(ctx, &base, "recent", false);
    recent.check(KeyType::ZSet)?;
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

/// `LIKE.COMMON B1 B2` → the users who like both, ascending
pub fn like_common(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let b1 = c.next_bytes()?;
    let b2 = c.next_bytes()?;
    c.expect_done()?;
    util::require_hash_tag(ctx, FAMILY, &b1)?;
    util::require_hash_tag(ctx, FAMILY, &b2)?;
    let (n1, n2) = (Names::of(&b1), Names::of(&b2));
    let (f1, f2) = (form_of(ctx, &n1)?, form_of(ctx, &n2)?);
    let mut ids = match (f1, f2) {
        (Form::None, _) | (_, Form::None) => Vec::new(),
        (Form::Set, Form::Set) => {
            let m = call_members(ctx, "SINTER", &[&n1.set, &n2.set])?;
            model::parse_members(m.iter().map(|m| m.as_slice()))
        }
        (Form::Bitmap, Form::Bitmap) => {
            let a = Key::open(ctx, &n1.bits, false);
            let b = Key::open(ctx, &n2.bits, false);
            model::common_bits(a.bytes(), b.bytes())
        }
        (Form::Set, Form::Bitmap) | (Form::Bitmap, Form::Set) => {
            let (set, bits) = if f1 == Form::Set {
                (&n1.set, &n2.bits)
            } else {
                (&n2.set, &n1.bits)
            };
            let bits = Key::open(ctx, bits, false);
            let bytes = bits.bytes();
            let mut out = Vec::new();
            Key::open(ctx, set, false).scan(|m| {
                if let Some(u) = model::parse_user(m, u64::MAX) {
                    if model::get_bit(bytes, u) {
                        out.push(u);
                    }
                }
                true
            });
            out
        }
    };
    ids.sort_unstable();
    Ok(RedisValue::Array(
        ids.into_iter()
            .map(|u| RedisValue::Integer(u as i64))
            .collect(),
    ))
}

/// `LIKE.INFO B` → `[encoding, set|bitmap|none, count, n, bytes, n]`
pub fn like_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let base = c.next_bytes()?;
    c.expect_done()?;
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let n = Names::of(&base);
    let form = form_of(ctx, &n)?;
    let count_key = Key::open(ctx, &n.count, false);
    count_key.check(KeyType::String)?;
    let (count, _) = read_count(ctx, &n, form, &count_key)?;
    let bytes = structure_bytes(ctx, &n, form) as i64;
    Ok(util::map(ctx, vec![
        util::bulk("encoding"),
        util::bulk(form.name()),
        util::bulk("count"),
        RedisValue::Integer(count),
        util::bulk("bytes"),
        RedisValue::Integer(bytes),
    ]))
}
