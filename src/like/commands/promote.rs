//! LIKE's promotion, in bounded steps (master only): the check, chunk
//! creation, the migration of the Set into chunks (replicated as
//! LIKE.MIGRATE) and the settling of migrated chunks. Split from the
//! handlers of commands.rs, which call [`promotion_step`] after a write.

use super::*;

/// Advances the post's promotion by one bounded step, after a write that
/// brought the count to `count`; returns true when a promotion finished.
///
/// The state lives in `B:meta` (`state` create|move|settle, `at` its
/// position, `check` the set size of the next check). A promotion is:
/// a check (sample the Set, plan the ranges that pay for a chunk, mark
/// them in `B:chunks`), creating the planned chunks a few at a time (born
/// migrating), moving the Set's members of chunked ranges a slice at a
/// time (`SSCAN` cursor), and settling the migrated chunks. Each step is
/// bounded (see `model`), so no write waits for more than a slice.
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
    let state = meta.hget(b"state");
    let at = match state {
        Some(_) => meta.hget(b"at").unwrap_or_default(),
        None => Vec::new(),
    };
    // A position is a cursor or a range: digits only. Anything else (an
    // edit by hand) stops the promotion rather than feeding SSCAN garbage.
    if state.is_some() && (at.is_empty() || at.len() > 20 || !at.iter().all(u8::is_ascii_digit)) {
        return false;
    }
    let started = thread_cpu_us();
    let r = match state.as_deref() {
        None if migrating => {
            // A migrating chunk with no promotion under way (the state was
            // deleted by hand): migrate the Set again from the start.
            set_state(&meta, &meta_name, Some(("move", b"0")), fx);
            Ok(false)
        }
        None => check(ctx, base, count, &meta, &meta_name, fx),
        Some(b"create") => create_step(ctx, base, &at, &meta, &meta_name, fx),
        Some(b"move") => move_step(ctx, base, &at, &meta, &meta_name, fx),
        Some(b"settle") => settle_step(ctx, base, &at, &meta, &meta_name, fx),
        Some(_) => Ok(false),
    };
    STEP_MAX_US.record_max(thread_cpu_us().saturating_sub(started));
    r.unwrap_or(false)
}

/// Returns the CPU time this thread has used, in µs.
fn thread_cpu_us() -> u64 {
    crate::slices::thread_cpu().as_micros() as u64
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

/// The check: when the Set has reached `B:meta`'s `check` size (at first
/// `like-promote-at + 1`), sample it and plan. A failed check is not
/// repeated before the Set has doubled.
fn check(
    ctx: &Context,
    base: &[u8],
    count: i64,
    meta: &Key,
    meta_name: &[u8],
    fx: &mut Effects<'_>,
) -> Result<bool, RedisError> {
    let promote_at = config::get(&config::LIKE_PROMOTE_AT);
    let threshold = match meta.hget(b"check") {
        None => model::next_check(0, promote_at),
        Some(v) => match parse_i64_plain(&v) {
            Some(n) if n >= 0 => n as u64,
            _ => return Ok(false),
        },
    };
    // The Set never holds more members than the post has likers.
    if (count as u64) < threshold {
        return Ok(false);
    }
    let set = Key::open(ctx, &derived_name(base, "set"), false);
    if set.check(KeyType::Set).is_err() {
        return Ok(false);
    }
    let size = set.len() as u64;
    if size < threshold {
        return Ok(false);
    }
    STEPS.incr();
    // The members `SSCAN B:set 0 COUNT 256` returns (what the Lua twin
    // reads), read in place.
    let mut ids: Vec<u64> = Vec::with_capacity(model::SAMPLE as usize + 64);
    let complete = set.scan_first(model::SAMPLE as usize, |m| {
        if let Some(id) = model::parse_user(m, model::MAX_ID) {
            ids.push(id);
        }
    });
    drop(set);
    let plan = model::plan(&ids, size, complete, model::last_range(max_id()));
    if plan.is_empty() {
        set_check(meta, meta_name, model::next_check(size, promote_at), fx);
        return Ok(false);
    }
    // Mark the planned ranges in the chunk index (at most 8,389 bytes).
    let index_name = derived_name(base, "chunks");
    let index = Key::open(ctx, &index_name, true);
    if index.check(KeyType::String).is_err() {
        return Ok(false);
    }
    let existed = index.exists();
    let top = plan.last().map_or(0, |p| p.1);
    let bytes = index.bytes_mut(model::index_len(top));
    for &(lo, hi) in &plan {
        for r in lo..=hi {
            model::set_bit(bytes, r, true);
        }
    }
    fx.push(c"SETRANGE", &[&index_name, b"0", index.bytes()]);
    if !existed {
        fx.created(&index, &index_name);
    }
    drop(index);
    // The chunks are created by the next steps: the check has done its
    // share of work.
    let first = plan[0].0.to_string();
    set_state(meta, meta_name, Some(("create", first.as_bytes())), fx);
    Ok(false)
}

/// Walks the chunk index from `at`: at most [`model::WALK_STEP`] ranges
/// marked, calling `f` with each whose chunk key it opens (write), until
/// `f` has returned true `limit` times. Returns the position after the
/// last range looked at, or `None` when the walk reached the end.
fn walk_index(
    ctx: &Context,
    base: &[u8],
    at: &[u8],
    limit: usize,
    mut f: impl FnMut(u64, &Key, &[u8]) -> bool,
) -> Option<u64> {
    // Digits only (checked by the caller); past u64 means past the end.
    let start = std::str::from_utf8(at)
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
        .unwrap_or(u64::MAX);
    let index = Key::open(ctx, &derived_name(base, "chunks"), false);
    if index.check(KeyType::String).is_err() {
        return None;
    }
    let bytes = index.bytes().to_vec();
    drop(index);
    let bits = bytes.len() as u64 * 8;
    let (mut looked, mut done) = (0u64, 0usize);
    let mut p = start;
    while p < bits {
        if bytes[(p / 8) as usize] == 0 {
            p = (p / 8 + 1) * 8;
            continue;
        }
        if model::get_bit(&bytes, p) {
            if looked == model::WALK_STEP || done == limit {
                return Some(p);
            }
            looked += 1;
            let name = chunk_name(base, p);
            let key = Key::open(ctx, &name, true);
            if key.check(KeyType::String).is_ok() && f(p, &key, &name) {
                done += 1;
            }
        }
        p += 1;
    }
    None
}

/// Creates the planned chunks that do not exist yet, a few per step, born
/// migrating (zeroed, [`MIGRATING_BYTES`] long). Then the migration starts.
fn create_step(
    ctx: &Context,
    base: &[u8],
    at: &[u8],
    meta: &Key,
    meta_name: &[u8],
    fx: &mut Effects<'_>,
) -> Result<bool, RedisError> {
    STEPS.incr();
    let next = walk_index(ctx, base, at, model::CREATE_STEP, |_, key, name| {
        if key.exists() {
            return false;
        }
        key.truncate(MIGRATING_BYTES);
        fx.push(
            c"SETRANGE",
            &[
                name,
                itoa::Buffer::new().format(CHUNK_BYTES).as_bytes(),
                b"\0",
            ],
        );
        fx.created(key, name);
        true
    });
    match next {
        Some(p) => set_state(
            meta,
            meta_name,
            Some(("create", p.to_string().as_bytes())),
            fx,
        ),
        None => set_state(meta, meta_name, Some(("move", b"0")), fx),
    }
    Ok(false)
}

/// Moves one slice of the Set (`SSCAN … COUNT 64` from the saved cursor)
/// into the chunks of the ranges that have one: one `SREM` of the moved
/// members, their bits set, replicated as one `LIKE.MIGRATE B user…`. A
/// full pass of the cursor sees every member that was there when it began,
/// and new likes of a chunked range go to its chunk, so after the pass no
/// member of a chunked range is left.
fn move_step(
    ctx: &Context,
    base: &[u8],
    at: &[u8],
    meta: &Key,
    meta_name: &[u8],
    fx: &mut Effects<'_>,
) -> Result<bool, RedisError> {
    STEPS.incr();
    let set_key = derived_name(base, "set");
    if Key::open(ctx, &set_key, false).check(KeyType::Set).is_err() {
        return Ok(false);
    }
    let set_name = RedisString::create_from_slice(ctx.ctx, &set_key);
    let scan = sscan(ctx, &set_name, at, model::MOVE_STEP)?;
    let mut chunks = Migration::new(ctx, base, false);
    let mut moved: Vec<(usize, u64, &[u8])> = Vec::new();
    for m in scan.members() {
        let Some(id) = model::parse_user(m, model::MAX_ID) else {
            continue;
        };
        if let Some((slot, off)) = chunks.target(id)? {
            if !moved.iter().any(|(_, _, u)| *u == m) {
                moved.push((slot, off, m));
            }
        }
    }
    if !moved.is_empty() {
        let users: Vec<RedisString> = moved
            .iter()
            .map(|(_, _, u)| RedisString::create_from_slice(ctx.ctx, u))
            .collect();
        let mut a = vec![set_name.inner];
        a.extend(users.iter().map(|u| u.inner));
        call(ctx, c"SREM", &a)?;
        chunks.set_bits(moved.iter().map(|&(slot, off, _)| (slot, off)));
        let mut args = vec![RedisString::create_from_slice(ctx.ctx, base)];
        args.extend(users);
        fx.push_owned(c"LIKE.MIGRATE", args);
    }
    let next = scan.cursor().to_vec();
    drop(scan);
    drop(chunks);
    if next == b"0" {
        set_state(meta, meta_name, Some(("settle", b"0")), fx);
    } else {
        set_state(meta, meta_name, Some(("move", &next)), fx);
    }
    Ok(false)
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

/// Cuts the migrated chunks back to [`CHUNK_BYTES`]: their ranges no longer
/// need the Set. When all are settled the promotion is over, and the next
/// check waits for the remaining Set to double.
fn settle_step(
    ctx: &Context,
    base: &[u8],
    at: &[u8],
    meta: &Key,
    meta_name: &[u8],
    fx: &mut Effects<'_>,
) -> Result<bool, RedisError> {
    STEPS.incr();
    let next = walk_index(ctx, base, at, model::SETTLE_STEP, |_, key, name| {
        if key.len() != MIGRATING_BYTES {
            return false;
        }
        key.truncate(CHUNK_BYTES);
        fx.push(c"SET", &[name, key.bytes(), b"KEEPTTL"]);
        true
    });
    if let Some(p) = next {
        set_state(
            meta,
            meta_name,
            Some(("settle", p.to_string().as_bytes())),
            fx,
        );
        return Ok(false);
    }
    set_state(meta, meta_name, None, fx);
    let set = Key::open(ctx, &derived_name(base, "set"), false);
    let left = if set.kind() == KeyType::Set {
        set.len() as u64
    } else {
        0
    };
    drop(set);
    let promote_at = config::get(&config::LIKE_PROMOTE_AT);
    set_check(meta, meta_name, model::recheck(left, promote_at), fx);
    Ok(true)
}
