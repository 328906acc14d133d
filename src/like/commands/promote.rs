//! LIKE's promotion on a post's keys (master only): the module's
//! [`Store`](promotion::Store) for the steps of `like::promotion` (the
//! check, chunk creation, the migration of the Set into chunks, replicated
//! as LIKE.MIGRATE, and the settling of migrated chunks), and LIKE.MIGRATE
//! itself. Split from the handlers of commands.rs, which call
//! [`promotion_step`] after a write.

use super::*;
use crate::like::promotion::{self, Chunk, Moved, Slice};

/// Advances the post's promotion by one bounded step, after a write that
/// brought the count to `count`; returns true when a promotion finished.
/// The steps are `promotion::step`; each write they make is replicated
/// through `fx` as explicit commands, in order.
///
/// A key of the wrong type or a garbled `B:meta` stops the promotion (the
/// post keeps working, LIKE.INFO reports the error).
pub(super) fn promotion_step(
    ctx: &Context,
    base: &[u8],
    count: i64,
    migrating: bool,
    fx: &mut Effects<'_>,
) -> bool {
    let meta_name = derived_name(base, "meta");
    let meta = Key::open(ctx, &meta_name, true);
    if meta.check(KeyType::Hash).is_err() {
        return false;
    }
    let cfg = promotion::Configs {
        promote_at: config::get(&config::LIKE_PROMOTE_AT),
        last_range: model::last_range(max_id()),
    };
    let mut store = PostSteps {
        ctx,
        base,
        meta: &meta,
        meta_name: &meta_name,
        fx,
        chunks: Vec::new(),
    };
    let started = thread_cpu_us();
    let ran = promotion::step(&mut store, count, migrating, cfg);
    if ran.stepped {
        STEPS.incr();
    }
    STEP_MAX_US.record_max(thread_cpu_us().saturating_sub(started));
    ran.finished
}

/// Returns the CPU time this thread has used, in µs.
fn thread_cpu_us() -> u64 {
    crate::slices::thread_cpu().as_micros() as u64
}

/// A post's keys as the promotion's store: `B:meta` open for the step,
/// the chunks a step looks at opened once each and kept open for the step
/// (a slice looks at up to 64 ranges, then writes their bits), every other
/// key opened where a step reads or writes it. Each write is also pushed
/// to `fx`, the explicit commands replicated after the write the step
/// rides on.
struct PostSteps<'a, 'c> {
    ctx: &'a Context,
    base: &'a [u8],
    meta: &'a Key,
    meta_name: &'a [u8],
    fx: &'a mut Effects<'c>,
    chunks: Vec<(u64, Key)>,
}

impl PostSteps<'_, '_> {
    /// Where the chunk key of `range` is in `chunks`, open for writing
    /// (opened on first use).
    fn open_chunk(&mut self, range: u64) -> usize {
        match self.chunks.iter().position(|(r, _)| *r == range) {
            Some(i) => i,
            None => {
                let key = Key::open(self.ctx, &chunk_name(self.base, range), true);
                self.chunks.push((range, key));
                self.chunks.len() - 1
            }
        }
    }
}

impl promotion::Store for PostSteps<'_, '_> {
    type Error = RedisError;

    fn meta(&mut self, field: &[u8]) -> Option<Vec<u8>> {
        self.meta.hget(field)
    }

    fn set_state(&mut self, state: Option<(&str, &[u8])>) {
        set_state(self.meta, self.meta_name, state, self.fx);
    }

    fn set_check(&mut self, next: u64) {
        set_check(self.meta, self.meta_name, next, self.fx);
    }

    fn set_size(&mut self) -> Option<u64> {
        let set = Key::open(self.ctx, &derived_name(self.base, "set"), false);
        set.check(KeyType::Set).ok().map(|_| set.len() as u64)
    }

    /// The members `SSCAN B:set 0 COUNT n` returns (what the Lua twin
    /// reads), read in place.
    fn sample(&mut self, n: u64, f: &mut dyn FnMut(&[u8])) -> bool {
        let set = Key::open(self.ctx, &derived_name(self.base, "set"), false);
        set.scan_first(n as usize, |m| f(m))
    }

    fn scan(&mut self, cursor: &[u8], n: u64) -> Result<Slice, RedisError> {
        let set_name =
            RedisString::create_from_slice(self.ctx.ctx, &derived_name(self.base, "set"));
        let scan = sscan(self.ctx, &set_name, cursor, n)?;
        Ok(Slice {
            ids: scan
                .members()
                .filter_map(|m| model::parse_user(m, model::MAX_ID))
                .collect(),
            cursor: scan.cursor().to_vec(),
        })
    }

    fn index(&mut self) -> Option<Vec<u8>> {
        let index = Key::open(self.ctx, &derived_name(self.base, "chunks"), false);
        index.check(KeyType::String).ok()?;
        Some(index.bytes().to_vec())
    }

    /// Marks the planned ranges in the chunk index (at most 8,389 bytes).
    fn mark(&mut self, plan: &[(u64, u64)]) -> bool {
        let index_name = derived_name(self.base, "chunks");
        let index = Key::open(self.ctx, &index_name, true);
        if index.check(KeyType::String).is_err() {
            return false;
        }
        let existed = index.exists();
        let top = plan.last().map_or(0, |p| p.1);
        let bytes = index.bytes_mut(model::index_len(top));
        for &(lo, hi) in plan {
            for r in lo..=hi {
                model::set_bit(bytes, r, true);
            }
        }
        self.fx
            .push(c"SETRANGE", &[&index_name, b"0", index.bytes()]);
        if !existed {
            self.fx.created(&index, &index_name);
        }
        true
    }

    fn chunk(&mut self, range: u64) -> Chunk {
        let i = self.open_chunk(range);
        let key = &self.chunks[i].1;
        match key.check(KeyType::String) {
            Ok(true) => Chunk::Bytes(key.len()),
            Ok(false) => Chunk::Missing,
            Err(_) => Chunk::Other,
        }
    }

    fn create_chunk(&mut self, range: u64) {
        let name = chunk_name(self.base, range);
        let i = self.open_chunk(range);
        let key = &self.chunks[i].1;
        key.truncate(MIGRATING_BYTES);
        self.fx.push(
            c"SETRANGE",
            &[
                &name,
                itoa::Buffer::new().format(CHUNK_BYTES).as_bytes(),
                b"\0",
            ],
        );
        self.fx.created(key, &name);
    }

    fn settle_chunk(&mut self, range: u64) {
        let name = chunk_name(self.base, range);
        let i = self.open_chunk(range);
        let key = &self.chunks[i].1;
        key.truncate(CHUNK_BYTES);
        self.fx.push(c"SET", &[&name, key.bytes(), b"KEEPTTL"]);
    }

    /// One `SREM` of the moved members, their bits set, replicated as one
    /// `LIKE.MIGRATE B user…`.
    fn migrate(&mut self, moved: &[Moved]) -> Result<(), RedisError> {
        let set_name =
            RedisString::create_from_slice(self.ctx.ctx, &derived_name(self.base, "set"));
        let users: Vec<RedisString> = moved
            .iter()
            .map(|m| {
                RedisString::create_from_slice(
                    self.ctx.ctx,
                    itoa::Buffer::new().format(m.id).as_bytes(),
                )
            })
            .collect();
        let mut a = vec![set_name.inner];
        a.extend(users.iter().map(|u| u.inner));
        call(self.ctx, c"SREM", &a)?;
        for m in moved {
            let i = self.open_chunk(m.range);
            let key = &self.chunks[i].1;
            model::set_bit(key.bytes_mut(key.len()), m.off, true);
        }
        let mut args = vec![RedisString::create_from_slice(self.ctx.ctx, self.base)];
        args.extend(users);
        self.fx.push_owned(c"LIKE.MIGRATE", args);
        Ok(())
    }
}

/// Sets (or clears) `B:meta`'s `state` and `at`.
fn set_state(meta: &Key, name: &[u8], state: Option<(&str, &[u8])>, fx: &mut Effects<'_>) {
    let existed = meta.exists();
    match state {
        Some((s, at)) => {
            meta.hput(b"state", s.as_bytes());
            meta.hput(b"at", at);
            fx.push(c"HSET", &[name, b"state", s.as_bytes(), b"at", at]);
            if !existed {
                fx.created(meta, name);
            }
        }
        None => {
            meta.hdel(b"state");
            meta.hdel(b"at");
            fx.push(c"HDEL", &[name, b"state", b"at"]);
        }
    }
}

fn set_check(meta: &Key, name: &[u8], next: u64, fx: &mut Effects<'_>) {
    let existed = meta.exists();
    let v = next.to_string();
    meta.hput(b"check", v.as_bytes());
    fx.push(c"HSET", &[name, b"check", v.as_bytes()]);
    if !existed {
        fx.created(meta, name);
    }
}

/// The chunks a migration writes, opened once each.
struct Migration<'a> {
    ctx: &'a Context,
    base: &'a [u8],
    /// Refuse a chunk key that is not a chunk (LIKE.MIGRATE), or pass over
    /// it (a promotion step, which must not fail the write it rides on).
    strict: bool,
    open: Vec<(u64, Option<Key>)>,
}

impl<'a> Migration<'a> {
    fn new(ctx: &'a Context, base: &'a [u8], strict: bool) -> Self {
        Migration {
            ctx,
            base,
            strict,
            open: Vec::new(),
        }
    }

    /// Returns where a liker moves to: the slot of its range's chunk and
    /// its bit, or None when the range has no chunk. When strict, WRONGTYPE
    /// or corrupt data for a chunk key that is not a chunk.
    fn target(&mut self, id: u64) -> Result<Option<(usize, u64)>, RedisError> {
        let (range, off) = model::locate(id);
        let slot = match self.open.iter().position(|(r, _)| *r == range) {
            Some(i) => i,
            None => {
                let name = chunk_name(self.base, range);
                let key = Key::open(self.ctx, &name, true);
                let usable = match key.check(KeyType::String) {
                    Ok(true) if matches!(key.len(), CHUNK_BYTES | MIGRATING_BYTES) => true,
                    Ok(false) => false,
                    Ok(true) if self.strict => return Err(error::corrupt(FAMILY, &name, None)),
                    Err(e) if self.strict => return Err(e),
                    _ => false,
                };
                self.open.push((range, usable.then_some(key)));
                self.open.len() - 1
            }
        };
        Ok(self.open[slot].1.is_some().then_some((slot, off)))
    }

    fn set_bits(&mut self, bits: impl Iterator<Item = (usize, u64)>) {
        for (slot, off) in bits {
            if let Some(key) = &self.open[slot].1 {
                model::set_bit(key.bytes_mut(key.len()), off, true);
            }
        }
    }
}

/// `LIKE.MIGRATE B user [user …]` → users moved
///
/// Moves users who like `B` from its Set into the chunks of their ranges,
/// where the range has one; others are left alone. This is how a master
/// replicates a migration step (one command naming the moved users); it
/// changes no like and no count, so calling it by hand is harmless.
pub fn like_migrate(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let c = Cursor::new(args, 3)?;
    let ids = c.args()[2..]
        .iter()
        .map(|a| parse_id(a.as_slice(), model::MAX_ID))
        .collect::<Result<Vec<u64>, RedisError>>()?;
    let base = c.arg(1);
    util::require_hash_tag(ctx, FAMILY, base)?;
    let set_key = derived_name(base, "set");
    if !Key::open(ctx, &set_key, false).check(KeyType::Set)? {
        return Ok(RedisValue::Integer(0));
    }
    let mut chunks = Migration::new(ctx, base, true);
    let mut want: Vec<(usize, u64, usize)> = Vec::new();
    for (i, &id) in ids.iter().enumerate() {
        if let Some((slot, off)) = chunks.target(id)? {
            want.push((slot, off, i));
        }
    }
    if want.is_empty() {
        return Ok(RedisValue::Integer(0));
    }
    let set_name = RedisString::create_from_slice(ctx.ctx, &set_key);
    let users: Vec<RedisString> = want
        .iter()
        .map(|w| {
            RedisString::create_from_slice(ctx.ctx, itoa::Buffer::new().format(ids[w.2]).as_bytes())
        })
        .collect();
    let ptrs: Vec<Arg> = users.iter().map(|u| u.inner).collect();
    let members = are_members(ctx, &set_name, &ptrs)?;
    let mut a = vec![set_name.inner];
    let mut bits = Vec::new();
    for (j, yes) in members.into_iter().enumerate() {
        if yes && !bits.contains(&(want[j].0, want[j].1)) {
            a.push(users[j].inner);
            bits.push((want[j].0, want[j].1));
        }
    }
    if bits.is_empty() {
        return Ok(RedisValue::Integer(0));
    }
    call(ctx, c"SREM", &a)?;
    chunks.set_bits(bits.iter().copied());
    ctx.replicate_verbatim();
    Ok(RedisValue::Integer(bits.len() as i64))
}
