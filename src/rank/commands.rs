//! RANK handlers: parse every argument, validate, open and type-check the
//! keys (every type check before any value check), apply the model, reply,
//! replicate the effects, notify.

use std::ffi::CStr;
use std::time::Instant;

use redis_module::{Context, RedisError, RedisResult, RedisString, RedisValue};

use crate::args::{parse_i64, Cursor};
use crate::argv::{is, Args};
use crate::keys::call::zrevrange_withscores;
use crate::keys::{derived, HashField, Key, KeyType, ZScan};
use crate::rank::model::{
    self, Aggregate, Condition, Entry, Layout, Merger, Plan, RankError, Tiebreak, Unit, EXACT_MAX,
    MAX_DIGITS, MAX_TTL_S,
};
use crate::rank::{IMPORTED, KEPT, MERGES, REFUSED, REMOVED, UPDATES};
use crate::slices::{self, Job, Step};
use crate::spread::{route, scope, shard};
use crate::{config, error, replicate, util};

const FAMILY: &str = "rank";

/// TOP walks the skiplist itself up to this offset; beyond it `ZREVRANGE`
/// finds the start by rank in O(log N).
const WALK_MAX_OFFSET: i64 = 1024;
/// Members per replicated `ZADD` of a MERGE or an IMPORT.
const ZADD_CHUNK: usize = 512;
/// Members a MERGE slice writes between two looks at the clock (one
/// replicated `ZADD` each).
const WRITE_CHUNK: usize = 128;
/// Members IMPORT packs per call unless COUNT says otherwise.
const IMPORT_COUNT: i64 = 100;

fn rank_error(e: RankError) -> RedisError {
    if e != RankError::BadLayout {
        REFUSED.incr();
    }
    error::family(FAMILY, &e.message())
}

/// `ERR rank: corrupt data in '<key>' field '<field>'`: for a board, the
/// field is the member whose score the module never wrote.
fn corrupt(key: &[u8], field: &[u8]) -> RedisError {
    error::corrupt(FAMILY, key, Some(&error::key_text(field)))
}

fn importing() -> RedisError {
    error::family(
        FAMILY,
        "board is being imported (call RANK.IMPORT until it replies 0)",
    )
}

fn now_option(c: &mut Cursor) -> Result<i64, RedisError> {
    c.option_i64(0, EXACT_MAX)
}

fn member_arg(m: &[u8]) -> Result<(), RedisError> {
    if m.is_empty() {
        return Err(error::empty_user(FAMILY));
    }
    Ok(())
}

/// A board opened for a command: `B`, `B:meta` and the layout.
struct Board {
    board: Key,
    meta: Key,
    layout: Layout,
    /// The shard this board is, for a shard of a spread board.
    spread: Option<shard::Shard>,
    /// `B:time` of a LAYOUT WIDE board (member → achievement unix ms).
    times: Option<Key>,
}

impl Board {
    /// Returns a stored score's entry, or the corrupt-data error naming the
    /// member.
    fn decode(&self, score: f64, member: &[u8]) -> Result<Entry, RedisError> {
        self.layout
            .decode(score)
            .ok_or_else(|| corrupt(self.board.name().as_slice(), member))
    }

    /// Refuses a member of another shard of a spread board, naming the
    /// shard key it belongs to.
    fn check_owner(&self, member: &[u8]) -> Result<(), RedisError> {
        match self.spread {
            Some(sh) => {
                shard::check_owner(FAMILY, "member", self.board.name().as_slice(), sh, member)
            }
            None => Ok(()),
        }
    }
}

// ---- spread boards (docs/spread.md) ----

/// A spread board's data: the Sorted Set under the shard key itself.
const BOARD: scope::Family = scope::Family {
    name: FAMILY,
    data: &[""],
};

/// Returns the shard an opened board is, from the count the call declared
/// (`SPREAD n`) and the record in its `B:meta`; `None` for a single-slot
/// board. A key that neither declares a count nor looks like a shard key
/// costs one byte comparison; when such a board does not exist at all, the
/// base key of a spread board is refused.
#[inline]
fn spread_of(
    ctx: &Context,
    base: &[u8],
    declared: Option<u32>,
    board: &Key,
    meta: &Key,
) -> Result<Option<shard::Shard>, RedisError> {
    let found = board.exists() || meta.exists();
    scope::resolve(ctx, &BOARD, base, declared, Some(meta), Some(found), None)
}

/// Refuses a shard of a spread board, or the base key of one, to a command
/// that has no spread form (MERGE, IMPORT).
fn refuse_spread(
    ctx: &Context,
    cmd: &str,
    key: &[u8],
    board: &Key,
    meta: &Key,
) -> Result<(), RedisError> {
    if shard::looks_like_shard(key) && scope::record(FAMILY, key, meta)?.is_some() {
        return Err(error::family(
            FAMILY,
            &format!(
                "{cmd} does not take a shard of a spread board ('{}'): see docs/rank.md",
                error::key_text(key)
            ),
        ));
    }
    if !board.exists() && !meta.exists() {
        scope::refuse_base(ctx, &BOARD, key)?;
    }
    Ok(())
}

/// Opens `B` and `B:meta` and checks their types, without reading the
/// layout (MERGE type-checks every key before it reads any value).
fn open_keys(
    ctx: &Context,
    base: &RedisString,
    write_board: bool,
    write_meta: bool,
) -> Result<(Key, Key), RedisError> {
    let board = Key::open_arg(ctx, base, write_board);
    board.check(KeyType::ZSet)?;
    let meta = Key::derived_hot(ctx, base.as_slice(), "meta", write_meta);
    meta.check(KeyType::Hash)?;
    Ok((board, meta))
}

/// Reads the layout of a type-checked `B:meta`.
fn read_layout(meta: &Key, base: &[u8]) -> Result<(Layout, Option<i64>), RedisError> {
    if !meta.exists() {
        return Ok((Layout::default(), None));
    }
    thread_local! {
        /// The field name, made once: a C-string field costs a string per
        /// call inside Redis.
        static LAYOUT: RedisString = RedisString::create_from_slice(std::ptr::null_mut(), b"layout");
    }
    let v = LAYOUT.with(|f| meta.hget_arg(HashField::Arg(f)));
    parse_layout(v.as_ref().map(|s| s.as_slice()))
        .ok_or_else(|| corrupt(&derived(base, "meta"), model::META_FIELD.as_bytes()))
}

/// A board's layout and, while RANK.IMPORT packs it, the import's time.
type LayoutState = (Layout, Option<i64>);

/// Parses a `layout` field, reusing the last result when the field is the
/// same as last time (a hot board): the parse is a pure function of the
/// bytes, so the cache is never stale.
fn parse_layout(v: Option<&[u8]>) -> Option<LayoutState> {
    thread_local! {
        static LAST: std::cell::RefCell<(Vec<u8>, Option<LayoutState>)> =
            const { std::cell::RefCell::new((Vec::new(), None)) };
    }
    let Some(v) = v else {
        return Some((Layout::default(), None));
    };
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if last.1.is_none() || last.0 != v {
            let parsed = Layout::from_field_state(Some(v)).ok()?;
            last.0.clear();
            last.0.extend_from_slice(v);
            last.1 = Some(parsed);
        }
        last.1
    })
}

/// Opens a board for any command but IMPORT: a board being imported is
/// refused.
fn open_board(
    ctx: &Context,
    base: &RedisString,
    write_board: bool,
    write_meta: bool,
) -> Result<Board, RedisError> {
    open_shard(ctx, base, write_board, write_meta, None)
}

/// [`open_board`] for a command that takes `SPREAD n`: `declared` is the
/// count the call gave.
fn open_shard(
    ctx: &Context,
    base: &RedisString,
    write_board: bool,
    write_meta: bool,
    declared: Option<u32>,
) -> Result<Board, RedisError> {
    let (board, meta) = open_keys(ctx, base, write_board, write_meta)?;
    let spread = spread_of(ctx, base.as_slice(), declared, &board, &meta)?;
    let (layout, import) = read_layout(&meta, base.as_slice())?;
    if import.is_some() {
        return Err(importing());
    }
    // The index of a LAYOUT WIDE board: its type is checked once the
    // layout says the board has one.
    let times = if layout.wide {
        let t = Key::derived_hot(ctx, base.as_slice(), TIMES, write_board);
        t.check(KeyType::Hash)?;
        Some(t)
    } else {
        None
    };
    Ok(Board {
        board,
        meta,
        layout,
        spread,
        times,
    })
}

/// The suffix of a LAYOUT WIDE board's index: `B:time`, member →
/// achievement time in unix ms.
const TIMES: &str = "time";

/// A member's state on a LAYOUT WIDE board: its points, its achievement
/// time and the name it is stored under in `B`.
struct WideEntry {
    points: i64,
    at_ms: i64,
    name: Vec<u8>,
}

impl Board {
    /// Returns a member's entry on a LAYOUT WIDE board (None when it is
    /// not on the board), read through `B:time`.
    ///
    /// Occurs as the corrupt-data error naming `B:time` and the member when
    /// its time is not one the module writes or `B` has no entry under the
    /// name it gives, and naming `B` and the stored name for a score the
    /// module never writes.
    fn wide_entry(&self, member: &[u8]) -> Result<Option<WideEntry>, RedisError> {
        let times = self.times.as_ref().expect("a wide board has B:time");
        let Some(v) = times.hget(member) else {
            return Ok(None);
        };
        Ok(Some(self.wide_entry_at(member, &v)?.0))
    }

    /// [`Board::wide_entry`] on the write path: the member is the client's
    /// string (looked up in `B:time` without a copy), and the entry comes
    /// with the stored name as the Redis string its lookup in `B` made,
    /// which the write reuses to remove it.
    fn wide_current(
        &self,
        member: &RedisString,
    ) -> Result<Option<(WideEntry, RedisString)>, RedisError> {
        let times = self.times.as_ref().expect("a wide board has B:time");
        let Some(v) = times.hget_arg(HashField::Arg(member)) else {
            return Ok(None);
        };
        self.wide_entry_at(member.as_slice(), v.as_slice())
            .map(Some)
    }

    /// The entry of `member` whose `B:time` value is `v`, and its stored
    /// name as a Redis string.
    fn wide_entry_at(
        &self,
        member: &[u8],
        v: &[u8],
    ) -> Result<(WideEntry, RedisString), RedisError> {
        let base = self.board.name().as_slice();
        let bad_time = || corrupt(&derived(base, TIMES), member);
        let at_ms = parse_i64(v, 0, EXACT_MAX).map_err(|_| bad_time())?;
        let name = self.layout.wide_name(at_ms, member);
        let stored = RedisString::create_from_slice(std::ptr::null_mut(), &name);
        let score = self.board.zscore_arg(&stored).ok_or_else(bad_time)?;
        let points = Layout::wide_points(score).ok_or_else(|| corrupt(base, &name))?;
        Ok((
            WideEntry {
                points,
                at_ms,
                name,
            },
            stored,
        ))
    }

    /// Returns the member and points of an entry `B` holds, decoded by the
    /// board's layout, or the corrupt-data error naming what is stored.
    fn entry_of(&self, stored: Vec<u8>, score: f64) -> Result<(Vec<u8>, i64), RedisError> {
        if !self.layout.wide {
            let points = self.decode(score, &stored)?.points;
            return Ok((stored, points));
        }
        let base = self.board.name().as_slice();
        let points = Layout::wide_points(score).ok_or_else(|| corrupt(base, &stored))?;
        let Some((_, member)) = self.layout.wide_split(&stored) else {
            return Err(corrupt(base, &stored));
        };
        Ok((member.to_vec(), points))
    }

    /// Applies a write of a LAYOUT WIDE board: the old name out, the new
    /// one in `B`, the time in `B:time`; keys it creates take the expiry
    /// of `B:meta`. `old` is the member's stored name as its lookup made
    /// it ([`Board::wide_current`]), reused to remove it.
    fn apply_wide(&self, member: &RedisString, w: &model::WideWrite, old: Option<&RedisString>) {
        let times = self.times.as_ref().expect("a wide board has B:time");
        let (new_board, new_times) = (!self.board.exists(), !times.exists());
        // The new name first: a board whose only member moves never
        // empties (the key would go, and its expiry with it).
        self.board.zadd(&w.name, w.points as f64);
        if let Some(name) = &w.remove {
            match old {
                Some(s) if s.as_slice() == name.as_slice() => self.board.zrem_arg(s),
                _ => self.board.zrem(name),
            };
        }
        times.hput_arg(member, itoa::Buffer::new().format(w.at_ms).as_bytes());
        if let Some(at) = self.meta.abs_expire_ms() {
            if new_board {
                self.board.set_abs_expire_ms(at);
            }
            if new_times {
                times.set_abs_expire_ms(at);
            }
        }
        UPDATES.incr();
    }
}

/// Gives a board that was just created the expiry of its `B:meta`, so that
/// every key of the board goes at the same instant. Not replicated: the
/// write that created the board replicates itself, and a replica or an
/// AOF replay gives the board the same absolute expiry from the same meta.
fn inherit_expiry(b: &Board) {
    if let Some(at) = b.meta.abs_expire_ms() {
        b.board.set_abs_expire_ms(at);
    }
}

fn replicate_pexpireat(ctx: &Context, key: &[u8], at: i64) {
    let at = at.to_string();
    ctx.replicate("PEXPIREAT", &[key, at.as_bytes()]);
}

fn ttl_instant(ttl_s: i64) -> i64 {
    util::now_ms() + ttl_s * 1000
}

/// RANK.CREATE B [TIEBREAK EARLIER|LATER|NONE] [UNIT MS|S] [DIGITS d]
/// [EPOCH unix-ms] [TTL seconds] [NOW unix-ms] [SPREAD n]
///
/// With `SPREAD n`, creates shard `i` of a board spread over `n` shards:
/// `B` must be the key of shard `i` of `n` of its base (`{<tag>}base`,
/// docs/spread.md), and `B:meta` records `spread n` and `shard i` next to
/// the layout. Creating a shard again with the same layout and count
/// answers `OK` and changes nothing, so that a creation that failed half
/// way can be run again.
pub fn rank_create(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let base = c.next_bytes()?;
    let opts = layout_options(&mut c, true)?;
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let spread = match opts.spread {
        Some(n) => Some(shard::Shard {
            n,
            i: route::shard_index(&base, n)
                .ok_or_else(|| shard::not_a_shard_key(FAMILY, &base, n))?,
        }),
        None => None,
    };
    let board = Key::open(ctx, &base, false);
    board.check(KeyType::ZSet)?;
    let meta_name = derived(&base, "meta");
    let meta = Key::open(ctx, &meta_name, true);
    let layout = opts.layout();
    let value = layout.to_field();
    if meta.check(KeyType::Hash)? {
        if let Some(sh) = spread {
            match scope::record(FAMILY, &base, &meta)? {
                // The same shard with the same layout: nothing to do.
                Some(r)
                    if r == sh
                        && meta.hget(model::META_FIELD.as_bytes()).as_deref()
                            == Some(value.as_bytes()) =>
                {
                    return Ok(RedisValue::SimpleStringStatic("OK"));
                }
                Some(r) if r.n != sh.n => {
                    return Err(shard::counts_disagree(FAMILY, &base, sh.n, r))
                }
                _ => {}
            }
        }
        return Err(error::family(FAMILY, "board already exists"));
    }
    if board.exists() {
        return Err(error::family(FAMILY, "board already exists"));
    }
    match spread {
        None => scope::refuse_base(ctx, &BOARD, &base)?,
        // Shard 0 shares its base key's slot: a single-slot board under the
        // base (in that slot when it has a hash tag, or on a standalone
        // server) must not be shadowed by a spread one.
        Some(shard::Shard { i: 0, .. }) => {
            let b = route::shard_base(&base).unwrap_or(&base);
            if (util::has_hash_tag(b) || !util::cluster_mode(ctx))
                && (Key::open(ctx, b, false).exists()
                    || Key::derived(ctx, b, "meta", false).exists())
            {
                return Err(error::family(
                    FAMILY,
                    &format!("'{}' is a single-slot board already", error::key_text(b)),
                ));
            }
        }
        Some(_) => {}
    }
    layout
        .tick(opts.now.unwrap_or_else(util::now_ms))
        .map_err(rank_error)?;

    let field = model::META_FIELD.as_bytes();
    meta.hput(field, value.as_bytes());
    let mut hset: Vec<Vec<u8>> = vec![
        meta_name.clone(),
        field.to_vec(),
        value.clone().into_bytes(),
    ];
    if let Some(sh) = spread {
        let (n, i) = (sh.n.to_string(), sh.i.to_string());
        meta.hput(shard::FIELD_SPREAD, n.as_bytes());
        meta.hput(shard::FIELD_SHARD, i.as_bytes());
        hset.extend([shard::FIELD_SPREAD.to_vec(), n.into_bytes()]);
        hset.extend([shard::FIELD_SHARD.to_vec(), i.into_bytes()]);
    }
    let hset: Vec<&[u8]> = hset.iter().map(|v| v.as_slice()).collect();
    ctx.replicate("HSET", hset.as_slice());
    if let Some(ttl) = opts.ttl {
        let at = ttl_instant(ttl);
        meta.set_abs_expire_ms(at);
        replicate_pexpireat(ctx, &meta_name, at);
    }
    util::notify(ctx, "hotpath.rank.create", &base);
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// The layout options of CREATE and IMPORT.
#[derive(Default)]
struct LayoutOptions {
    tiebreak: Option<Tiebreak>,
    unit: Option<Unit>,
    digits: Option<u32>,
    epoch: Option<i64>,
    ttl: Option<i64>,
    count: Option<i64>,
    now: Option<i64>,
    spread: Option<u32>,
    /// LAYOUT WIDE.
    wide: bool,
    /// LAYOUT was given (PACKED or WIDE).
    layout_given: bool,
}

impl LayoutOptions {
    fn layout(&self) -> Layout {
        let tiebreak = self.tiebreak.unwrap_or(Tiebreak::Earlier);
        if self.wide {
            return Layout::wide(tiebreak);
        }
        Layout {
            tiebreak,
            unit: self.unit.unwrap_or(Unit::S),
            digits: self.digits.unwrap_or(Layout::default_digits(tiebreak)),
            epoch: self.epoch.unwrap_or(0),
            wide: false,
        }
    }

    fn has_layout(&self) -> bool {
        self.layout_given
            || self.tiebreak.is_some()
            || self.unit.is_some()
            || self.digits.is_some()
            || self.epoch.is_some()
    }
}

/// Parses CREATE's options (`create`: TTL allowed) or IMPORT's (COUNT
/// allowed).
fn layout_options(c: &mut Cursor, create: bool) -> Result<LayoutOptions, RedisError> {
    let mut o = LayoutOptions::default();
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "TIEBREAK" => {
                o.tiebreak = Some(Tiebreak::parse(c.option_bytes()?).ok_or_else(error::syntax)?);
            }
            "UNIT" => o.unit = Some(Unit::parse(c.option_bytes()?).ok_or_else(error::syntax)?),
            "DIGITS" => o.digits = Some(c.option_i64(0, MAX_DIGITS as i64)? as u32),
            "EPOCH" => o.epoch = Some(c.option_i64(0, EXACT_MAX)?),
            "TTL" if create => o.ttl = Some(c.option_i64(1, MAX_TTL_S)?),
            "COUNT" if !create => o.count = Some(c.option_i64(1, i64::MAX)?),
            "SPREAD" if create => o.spread = Some(shard::parse_count(FAMILY, c.option_bytes()?)?),
            "NOW" => o.now = Some(now_option(c)?),
            "LAYOUT" => {
                o.wide = c.option_choice(&["PACKED", "WIDE"])? == "WIDE";
                o.layout_given = true;
            }
            _ => return Err(error::syntax()),
        }
    }
    if o.wide
        && (o.tiebreak == Some(Tiebreak::None)
            || o.unit.is_some()
            || o.digits.is_some()
            || o.epoch.is_some())
    {
        return Err(error::family(
            FAMILY,
            "LAYOUT WIDE takes TIEBREAK EARLIER or LATER only (no UNIT, DIGITS or EPOCH)",
        ));
    }
    Ok(o)
}

/// Writes `member` (the client's string) with `packed` on an open board,
/// and gives a new board its meta's expiry. The caller replicates the
/// command ([`replicate_write`]).
fn write_score(b: &Board, member: &RedisString, packed: i64) {
    let created = !b.board.exists();
    b.board.zadd_arg(member, packed as f64);
    if created {
        inherit_expiry(b);
    }
    UPDATES.incr();
}

/// Replicates a RANK.ADD or RANK.INCR that wrote (issue 27, decision 1):
/// the command itself, whose effect its arguments, the board and the
/// clock determine. Verbatim when the client gave `NOW` or the layout
/// keeps no time (`TIEBREAK NONE`); otherwise with the master's `NOW`
/// appended, so that a replica and an AOF replay pack the same tick.
/// Replicas and AOF replay need the module (docs/rank.md).
fn replicate_write(
    ctx: &Context,
    all: &[RedisString],
    layout: &Layout,
    now: Option<i64>,
    used: i64,
) {
    replicate::with_clock(ctx, all, used, now.is_some() || !layout.uses_time());
}

/// RANK.ADD B member points [GT|LT] [NOW unix-ms]
///
/// `GT` is the "set if better" of a best-score board: a better value
/// writes (and moves the achievement time), the same best keeps the time
/// it was first reached, a worse one writes nothing.
pub fn rank_add(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(4)?;
    c.skip(2)?;
    member_arg(c.arg(2))?;
    let points = c.next_i64(i64::MIN, i64::MAX)?;
    let mut cond = Condition::Always;
    let mut now = None;
    let mut declared = None;
    while !c.done() {
        let kw = c.keyword()?;
        if is(kw, "GT") && cond != Condition::Lt {
            cond = Condition::Gt;
        } else if is(kw, "LT") && cond != Condition::Gt {
            cond = Condition::Lt;
        } else if is(kw, "NOW") {
            now = Some(c.option_i64(0, EXACT_MAX)?);
        } else if scope::is_keyword(kw) {
            declared = Some(shard::parse_count(FAMILY, c.option_bytes()?)?);
        } else {
            return Err(error::syntax());
        }
    }
    let (base, member) = (c.string(1), c.string(2));
    util::require_hash_tag(ctx, FAMILY, base.as_slice())?;
    // Opened for writing, but a kept value writes nothing and so does not
    // signal the board as modified (WATCH, client tracking), just as a
    // ZADD that changes nothing.
    let b = open_shard(ctx, base, true, false, declared)?;
    b.check_owner(member.as_slice())?;
    let used = now.unwrap_or_else(util::now_ms);
    let t = b.layout.tick(used).map_err(rank_error)?;
    b.layout.check_points(points).map_err(rank_error)?;
    let cur = b.current(member)?;
    match model::plan_add(&b.layout, cur.points, points, cond, t).map_err(rank_error)? {
        Plan::Keep(p) => {
            KEPT.incr();
            Ok(RedisValue::Integer(p))
        }
        Plan::Write { points, t } => {
            b.write(member, &cur, points, t);
            replicate_write(ctx, c.all(), &b.layout, now, used);
            util::notify_static(ctx, c"hotpath.rank.add", base);
            Ok(RedisValue::Integer(points))
        }
    }
}

/// A member's state before a write: its points (None: not on the board)
/// and, on a LAYOUT WIDE board, its achievement time and stored name.
struct Current {
    points: Option<i64>,
    at_ms: Option<i64>,
    stored: Option<RedisString>,
}

impl Board {
    /// Returns a member's state before a write.
    fn current(&self, member: &RedisString) -> Result<Current, RedisError> {
        if self.layout.wide {
            return Ok(match self.wide_current(member)? {
                Some((e, stored)) => Current {
                    points: Some(e.points),
                    at_ms: Some(e.at_ms),
                    stored: Some(stored),
                },
                None => Current {
                    points: None,
                    at_ms: None,
                    stored: None,
                },
            });
        }
        let points = match self.board.zscore_arg(member) {
            Some(s) => Some(self.decode(s, member.as_slice())?.points),
            None => None,
        };
        Ok(Current {
            points,
            at_ms: None,
            stored: None,
        })
    }

    /// Writes `points` achieved at tick `t` for `member`, whose state
    /// before the write is `cur`.
    fn write(&self, member: &RedisString, cur: &Current, points: i64, t: i64) {
        if self.layout.wide {
            let w = self
                .layout
                .wide_write(member.as_slice(), cur.at_ms, points, t);
            self.apply_wide(member, &w, cur.stored.as_ref());
        } else {
            write_score(self, member, self.layout.pack_tick(points, t));
        }
    }
}

/// RANK.INCR B member delta [NOW unix-ms]
pub fn rank_incr(ctx: &Context, c: &mut Args) -> RedisResult {
    incr_or_decr(ctx, c, false)
}

/// RANK.DECR B member delta [NOW unix-ms]: RANK.INCR of −delta.
pub fn rank_decr(ctx: &Context, c: &mut Args) -> RedisResult {
    incr_or_decr(ctx, c, true)
}

fn incr_or_decr(ctx: &Context, c: &mut Args, decr: bool) -> RedisResult {
    c.require(4)?;
    c.skip(2)?;
    member_arg(c.arg(2))?;
    let delta = c.next_i64(i64::MIN, i64::MAX)?;
    let mut now = None;
    let mut declared = None;
    while !c.done() {
        let kw = c.keyword()?;
        if is(kw, "NOW") {
            now = Some(c.option_i64(0, EXACT_MAX)?);
        } else if scope::is_keyword(kw) {
            declared = Some(shard::parse_count(FAMILY, c.option_bytes()?)?);
        } else {
            return Err(error::syntax());
        }
    }
    let (base, member) = (c.string(1), c.string(2));
    util::require_hash_tag(ctx, FAMILY, base.as_slice())?;
    let b = open_shard(ctx, base, true, false, declared)?;
    b.check_owner(member.as_slice())?;
    let used = now.unwrap_or_else(util::now_ms);
    let t = b.layout.tick(used).map_err(rank_error)?;
    let cur = b.current(member)?;
    let (points, t) = match model::plan_incr(&b.layout, cur.points, delta, decr, t) {
        Ok(Plan::Write { points, t }) => (points, t),
        Ok(Plan::Keep(p)) => return Ok(RedisValue::Integer(p)),
        Err(e) => return Err(rank_error(e)),
    };
    b.write(member, &cur, points, t);
    replicate_write(ctx, c.all(), &b.layout, now, used);
    if decr {
        util::notify_static(ctx, c"hotpath.rank.decr", base);
    } else {
        util::notify_static(ctx, c"hotpath.rank.incr", base);
    }
    Ok(RedisValue::Integer(points))
}

/// Returns a member's 0-based rank, best first (`ZREVRANK`; the module API
/// has no rank lookup).
fn rev_rank(ctx: &Context, base: &[u8], member: &[u8]) -> Result<Option<i64>, RedisError> {
    match ctx.call("ZREVRANK", &[base, member])? {
        RedisValue::Integer(r) => Ok(Some(r)),
        _ => Ok(None),
    }
}

/// RANK.GET B member
pub fn rank_get(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let c = Cursor::new(args, 3)?;
    let declared = scope::only(FAMILY, c.args(), 3)?;
    member_arg(c.arg(2))?;
    let (base, member) = (&c.args()[1], &c.args()[2]);
    let b = open_shard(ctx, base, false, false, declared)?;
    b.check_owner(member.as_slice())?;
    let (e, stored) = if b.layout.wide {
        let Some(w) = b.wide_entry(member.as_slice())? else {
            return Ok(RedisValue::Null);
        };
        let e = Entry {
            points: w.points,
            achieved_ms: Some(w.at_ms),
        };
        (e, w.name)
    } else {
        let Some(score) = b.board.zscore_arg(member) else {
            return Ok(RedisValue::Null);
        };
        (
            b.decode(score, member.as_slice())?,
            member.as_slice().to_vec(),
        )
    };
    drop(b);
    let Some(rank) = rev_rank(ctx, base.as_slice(), &stored)? else {
        return Ok(RedisValue::Null);
    };
    Ok(util::record(
        ctx,
        &["points", "rank", "achieved_ms"],
        vec![
            RedisValue::Integer(e.points),
            RedisValue::Integer(rank),
            e.achieved_ms.map_or(RedisValue::Null, RedisValue::Integer),
        ],
    ))
}

fn range_max() -> i64 {
    config::get(&config::RANK_RANGE_MAX)
}

/// RANK.TOP B [count] [OFFSET o]
pub fn rank_top(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    c.skip(1)?;
    let mut count = 10;
    let mut offset = 0;
    let mut first = true;
    while !c.done() {
        let a = c.next_slice()?;
        if a.eq_ignore_ascii_case(b"OFFSET") {
            offset = c.option_i64(0, i64::MAX)?;
        } else if first {
            count = parse_i64(a, 0, i64::MAX)?;
        } else {
            return Err(error::syntax());
        }
        first = false;
    }
    let max = range_max();
    if count > max {
        return Err(error::family(
            FAMILY,
            &format!("count must be at most {max} (rank-range-max)"),
        ));
    }
    let base = &c.args()[1];
    let b = open_board(ctx, base, false, false)?;
    let len = b.board.len() as i64;
    if count == 0 || offset >= len {
        return Ok(RedisValue::Array(Vec::new()));
    }
    let entries = if offset <= WALK_MAX_OFFSET {
        b.board
            .zrange_desc(offset as usize, count.min(len) as usize)
    } else {
        zrevrange_withscores(
            ctx,
            base.as_slice(),
            offset,
            offset.saturating_add(count - 1),
        )?
    };
    let mut out = Vec::with_capacity(entries.len() * 2);
    for (stored, score) in entries {
        let (member, points) = b.entry_of(stored, score)?;
        out.push(RedisValue::StringBuffer(member));
        out.push(RedisValue::Integer(points));
    }
    Ok(util::rows(ctx, out, 2))
}

/// RANK.AROUND B member n
pub fn rank_around(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 4)?;
    c.skip(2)?;
    let n = c.next_i64(0, i64::MAX)?;
    if !c.done() {
        return Err(error::arity(&c.command()));
    }
    member_arg(c.arg(2))?;
    let max = range_max();
    if n > max {
        return Err(error::family(
            FAMILY,
            &format!("n must be at most {max} (rank-range-max)"),
        ));
    }
    let (base, member) = (&c.args()[1], &c.args()[2]);
    let b = open_board(ctx, base, false, false)?;
    let stored = if b.layout.wide {
        let Some(w) = b.wide_entry(member.as_slice())? else {
            return Ok(RedisValue::Null);
        };
        w.name
    } else {
        let Some(score) = b.board.zscore_arg(member) else {
            return Ok(RedisValue::Null);
        };
        b.decode(score, member.as_slice())?;
        member.as_slice().to_vec()
    };
    let Some(rank) = rev_rank(ctx, base.as_slice(), &stored)? else {
        return Ok(RedisValue::Null);
    };
    let start = rank.saturating_sub(n).max(0);
    let entries = zrevrange_withscores(ctx, base.as_slice(), start, rank.saturating_add(n))?;
    let mut out = Vec::with_capacity(entries.len() * 3);
    for (i, (stored, score)) in entries.into_iter().enumerate() {
        let (m, points) = b.entry_of(stored, score)?;
        out.push(RedisValue::Integer(start + i as i64));
        out.push(RedisValue::StringBuffer(m));
        out.push(RedisValue::Integer(points));
    }
    Ok(util::rows(ctx, out, 3))
}

/// Where RANK.POSITION looks on a board.
enum Position {
    /// Before every member: the board's best.
    Top,
    /// At a member of the board.
    Member(Vec<u8>),
    /// At a (packed score, member) that may be on another shard.
    At(i64, Vec<u8>),
}

/// Tie blocks up to this size are walked member by member; larger ones are
/// searched by halving (one `ZREVRANGE` of one place per step).
const TIE_WALK_MAX: i64 = 32;

/// Returns how many members of a board rank above the position
/// `(score, member)`: a higher score, or the same score and a byte-wise
/// greater member (the order of `ZREVRANGE`).
fn above_position(ctx: &Context, b: &Board, score: i64, member: &[u8]) -> Result<i64, RedisError> {
    let base = b.board.name().as_slice();
    let count = |min: &str, max: &str| -> Result<i64, RedisError> {
        match ctx.call("ZCOUNT", &[base, min.as_bytes(), max.as_bytes()])? {
            RedisValue::Integer(v) => Ok(v),
            _ => Err(RedisError::Str(error::INTERNAL)),
        }
    };
    let higher = count(&format!("({score}"), "+inf")?;
    let s = score.to_string();
    let ties = count(&s, &s)?;
    if ties == 0 {
        return Ok(higher);
    }
    // The tie block holds places `higher .. higher + ties`, greater members
    // first: count the members greater than `member` in it.
    if ties <= TIE_WALK_MAX {
        let mut greater = 0;
        if b.board.zwalk_desc(score as f64, score as f64) {
            loop {
                match b.board.zwalk_current() {
                    Some((m, _)) if m.as_slice() > member => greater += 1,
                    _ => break,
                }
                if !b.board.zwalk_prev() {
                    break;
                }
            }
            b.board.zwalk_stop();
        }
        return Ok(higher + greater);
    }
    let (mut lo, mut hi) = (higher, higher + ties);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match zrevrange_withscores(ctx, base, mid, mid)?.first() {
            Some((m, _)) if m.as_slice() > member => lo = mid + 1,
            _ => hi = mid,
        }
    }
    Ok(lo)
}

/// `[member, points, score]` of an entry; on a LAYOUT WIDE board
/// `[member, points, stored-name]`, the name (`<16 digits>:<member>`)
/// being what orders equal points across shards.
fn position_entry(b: &Board, stored: Vec<u8>, score: f64) -> Result<[RedisValue; 3], RedisError> {
    if b.layout.wide {
        let (member, points) = b.entry_of(stored.clone(), score)?;
        return Ok([
            RedisValue::StringBuffer(member),
            RedisValue::Integer(points),
            RedisValue::StringBuffer(stored),
        ]);
    }
    let points = b.decode(score, &stored)?.points;
    Ok([
        RedisValue::StringBuffer(stored),
        RedisValue::Integer(points),
        RedisValue::Integer(score as i64),
    ])
}

/// RANK.POSITION B count [MEMBER member | AT score member] [SPREAD n]
///
/// The per-shard read behind a spread board's global rank, top and
/// around (docs/spread.md): how many members of this board rank above a
/// position, the entry at it, and the `count` entries just above and just
/// below it, each with its packed score so that a client can merge the
/// shards in the board's exact order.
pub fn rank_position(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    c.skip(1)?;
    let count = c.next_i64(0, i64::MAX)?;
    let mut pos = Position::Top;
    let mut declared = None;
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "MEMBER" if matches!(pos, Position::Top) => {
                let m = c.option_bytes()?.to_vec();
                member_arg(&m)?;
                pos = Position::Member(m);
            }
            "AT" if matches!(pos, Position::Top) => {
                let score = c.option_i64(-EXACT_MAX, EXACT_MAX)?;
                let m = c.option_bytes()?.to_vec();
                member_arg(&m)?;
                pos = Position::At(score, m);
            }
            "SPREAD" => declared = Some(shard::parse_count(FAMILY, c.option_bytes()?)?),
            _ => return Err(error::syntax()),
        }
    }
    let max = range_max();
    if count > max {
        return Err(error::family(
            FAMILY,
            &format!("count must be at most {max} (rank-range-max)"),
        ));
    }
    let base = &c.args()[1];
    let b = open_shard(ctx, base, false, false, declared)?;
    // `place`: the place the position takes on this board; `at`: the
    // entry there when the board holds the position itself. On a LAYOUT
    // WIDE board a position is (points, stored name): MEMBER finds the
    // name through `B:time`, AT takes it as given.
    let (place, at) = match &pos {
        Position::Top => (0, None),
        Position::Member(m) => {
            b.check_owner(m)?;
            let (stored, score) = if b.layout.wide {
                let Some(w) = b.wide_entry(m)? else {
                    return Ok(RedisValue::Null);
                };
                (w.name, w.points as f64)
            } else {
                let Some(score) = b.board.zscore(m) else {
                    return Ok(RedisValue::Null);
                };
                b.decode(score, m)?;
                (m.clone(), score)
            };
            let Some(r) = rev_rank(ctx, base.as_slice(), &stored)? else {
                return Ok(RedisValue::Null);
            };
            (r, Some((stored, score)))
        }
        Position::At(score, m) => {
            let place = above_position(ctx, &b, *score, m)?;
            let here = b.board.zscore(m).filter(|s| *s == *score as f64);
            (place, here.map(|s| (m.clone(), s)))
        }
    };
    let mut above = Vec::new();
    let mut below = Vec::new();
    if count > 0 {
        let start = place.saturating_sub(count).max(0);
        let stop = place
            .saturating_add(count)
            .saturating_add(i64::from(at.is_some()));
        let entries = if stop < WALK_MAX_OFFSET {
            b.board.zrange_desc(start as usize, (stop - start) as usize)
        } else {
            zrevrange_withscores(ctx, base.as_slice(), start, stop - 1)?
        };
        for (k, (m, score)) in entries.into_iter().enumerate() {
            let p = start + k as i64;
            if p < place {
                above.extend(position_entry(&b, m, score)?);
            } else if p == place && at.is_some() {
                continue;
            } else if (below.len() as i64) < count * 3 {
                below.extend(position_entry(&b, m, score)?);
            }
        }
    }
    let at = match at {
        Some((m, score)) => RedisValue::Array(position_entry(&b, m, score)?.to_vec()),
        None => RedisValue::Null,
    };
    Ok(RedisValue::Array(vec![
        RedisValue::Integer(place),
        at,
        RedisValue::Array(above),
        RedisValue::Array(below),
    ]))
}

/// RANK.REM B member [member ...]
pub fn rank_rem(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let c = Cursor::new(args, 3)?;
    let (end, declared) = scope::trailing(FAMILY, c.args(), 3)?;
    let base = c.arg(1).to_vec();
    let mut members = Vec::with_capacity(end - 2);
    for m in &c.args()[2..end] {
        member_arg(m.as_slice())?;
        members.push(m.as_slice().to_vec());
    }
    let b = open_shard(ctx, &c.args()[1], true, false, declared)?;
    for m in &members {
        b.check_owner(m)?;
    }
    if b.layout.wide {
        return rem_wide(ctx, &b, &base, &members);
    }
    let removed = members.iter().filter(|m| b.board.zrem(m)).count() as i64;
    if removed > 0 {
        let mut zrem: Vec<&[u8]> = vec![&base];
        zrem.extend(members.iter().map(|m| m.as_slice()));
        ctx.replicate("ZREM", zrem.as_slice());
        REMOVED.add(removed as u64);
        util::notify(ctx, "hotpath.rank.rem", &base);
    }
    Ok(RedisValue::Integer(removed))
}

/// RANK.REM on a LAYOUT WIDE board: every member's entry is read (and
/// checked) before anything is removed from `B` and `B:time`. Replicated
/// verbatim: its effect is determined by its arguments and the data.
fn rem_wide(ctx: &Context, b: &Board, base: &[u8], members: &[Vec<u8>]) -> RedisResult {
    let mut found = Vec::with_capacity(members.len());
    for m in members {
        if let Some(e) = b.wide_entry(m)? {
            found.push((m, e.name));
        }
    }
    let mut removed = 0;
    if let Some(times) = &b.times {
        for (m, name) in &found {
            b.board.zrem(name);
            if times.hdel(m) {
                removed += 1;
            }
        }
    }
    if removed > 0 {
        ctx.replicate_verbatim();
        REMOVED.add(removed as u64);
        util::notify(ctx, "hotpath.rank.rem", base);
    }
    Ok(RedisValue::Integer(removed))
}

/// RANK.COUNT B
pub fn rank_count(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let c = Cursor::new(args, 2)?;
    let declared = scope::only(FAMILY, c.args(), 2)?;
    let b = open_shard(ctx, &c.args()[1], false, false, declared)?;
    Ok(RedisValue::Integer(b.board.len() as i64))
}

/// RANK.MERGE as a job (see slices.rs). With the server lock, a slice at
/// a time: every source is scanned (each score checked against its
/// layout), then the union is written into `dest:merging`, which replaces
/// `dest` at the end (RENAME: other clients never see a half-written
/// board). Without the lock: adding the scanned entries to the [`Merger`]
/// and checking every entry against the destination's layout, before
/// anything is written.
struct MergeJob {
    dest: Vec<u8>,
    temp: Vec<u8>,
    /// The destination is a LAYOUT WIDE board: the union's index is
    /// written into `temp_times` (`dest:merging:time`), which replaces
    /// `dest:time` with the board.
    wide: bool,
    temp_times: Vec<u8>,
    sources: Vec<(Vec<u8>, Layout)>,
    ttl: Option<i64>,
    merger: Option<Merger>,
    /// Entries scanned but not yet added to the merger: (source, member,
    /// entry).
    scanned: Vec<(u32, Vec<u8>, Entry)>,
    phase: MergePhase,
    /// An error found without the lock, replied by the next slice.
    error: Option<RedisError>,
    /// Lists done with, freed without the lock.
    garbage: Option<model::Union>,
    /// The dataset generation the job started in (see slices.rs).
    generation: u64,
    /// The source being read existed in an earlier slice.
    seen: bool,
    _claim: slices::Claim,
}

enum MergePhase {
    Read {
        source: usize,
        scan: ZScan,
    },
    /// Every source read: the union is checked (without the lock).
    Check,
    Write {
        /// The names stored in `dest` (see [`model::Union`]).
        members: Vec<Vec<u8>>,
        packed: Vec<i64>,
        /// On a wide destination, each member's time (unix ms).
        times: Vec<i64>,
        next: usize,
    },
    Swap,
}

/// Members up to this many are checked within the last reading slice.
const INLINE_CHECK: usize = 4096;

impl MergeJob {
    fn read(&mut self, ctx: &Context, deadline: Instant) -> Result<(), RedisError> {
        let MergePhase::Read { source, scan } = &mut self.phase else {
            return Ok(());
        };
        let mut budget = slices::Budget::until(deadline);
        while *source < self.sources.len() {
            let (name, layout) = &self.sources[*source];
            let key = Key::open(ctx, name, false);
            key.check(KeyType::ZSet)?;
            // Deleted between two slices: the union would hold half of it.
            if self.seen && !key.exists() {
                return Err(error::family(
                    FAMILY,
                    "a source was deleted or flushed during MERGE",
                ));
            }
            self.seen |= key.exists();
            let mut bad: Option<Vec<u8>> = None;
            let mut more = true;
            let scanned = &mut self.scanned;
            while more && bad.is_none() && !budget.spent() {
                more = scan.step(&key, &mut |member, score| {
                    // The first corrupt member is the one reported.
                    if bad.is_some() {
                        return;
                    }
                    let stored = member.as_slice();
                    match score
                        .parse_float()
                        .ok()
                        .and_then(|s| layout.decode_stored(stored, s))
                    {
                        Some((m, e)) => scanned.push((*source as u32, m.to_vec(), e)),
                        None => bad = Some(stored.to_vec()),
                    }
                });
            }
            if let Some(m) = bad {
                return Err(corrupt(name, &m));
            }
            if more {
                return Ok(());
            }
            *source += 1;
            *scan = ZScan::new();
            self.seen = false;
        }
        self.phase = MergePhase::Check;
        Ok(())
    }

    /// Adds the scanned entries to the union and, once every source is
    /// read, checks the whole union against the destination's layout.
    fn merge(&mut self) -> Result<(), RedisError> {
        if let Some(merger) = self.merger.as_mut() {
            for (source, member, e) in self.scanned.drain(..) {
                merger.add(source, &member, e);
            }
        }
        if !matches!(self.phase, MergePhase::Check) {
            return Ok(());
        }
        let merger = self.merger.take().expect("merger");
        // Written best first, each insert lands at the head of the
        // skiplist instead of searching it (the board's own order).
        let union = merger.into_union().map_err(rank_error)?;
        self.phase = MergePhase::Write {
            members: union.names,
            packed: union.scores,
            times: union.times,
            next: 0,
        };
        Ok(())
    }

    fn write(&mut self, ctx: &Context, deadline: Instant) {
        let MergePhase::Write {
            members,
            packed,
            times,
            next,
        } = &mut self.phase
        else {
            return;
        };
        let temp = Key::open(ctx, &self.temp, true);
        let name = temp.name().safe_clone(ctx);
        // The index of a wide union: member → time.
        let index = self.wide.then(|| Key::open(ctx, &self.temp_times, true));
        let index_name = index.as_ref().map(|k| k.name().safe_clone(ctx));
        while *next < members.len() {
            let end = (*next + WRITE_CHUNK).min(members.len());
            let mut argv = Vec::with_capacity(1 + 2 * (end - *next));
            argv.push(name.safe_clone(ctx));
            let mut hset = Vec::new();
            if let Some(n) = &index_name {
                hset.reserve(1 + 2 * (end - *next));
                hset.push(n.safe_clone(ctx));
            }
            for i in *next..end {
                let stored = std::mem::take(&mut members[i]);
                if let Some(index) = &index {
                    let member = &stored[model::WIDE_PREFIX..];
                    let at = itoa::Buffer::new().format(times[i]).as_bytes().to_vec();
                    index.hput(member, &at);
                    hset.push(RedisString::create_from_slice(ctx.ctx, member));
                    hset.push(RedisString::create_from_slice(ctx.ctx, &at));
                }
                let m = RedisString::create_from_slice(ctx.ctx, &stored);
                temp.zadd_arg(&m, packed[i] as f64);
                let score = itoa::Buffer::new().format(packed[i]).as_bytes().to_vec();
                argv.push(RedisString::create_from_slice(ctx.ctx, &score));
                argv.push(m);
            }
            slices::replicate(ctx, c"ZADD", &argv);
            if hset.len() > 1 {
                slices::replicate(ctx, c"HSET", &hset);
            }
            *next = end;
            if Instant::now() >= deadline {
                break;
            }
        }
        // Until the swap renames it, the union is work in progress: one
        // that outlives this slice gets an expiry, so that a crash leaves
        // it to expire rather than stay until the next MERGE.
        if *next < members.len() {
            slices::mark_work_in_progress(ctx, &temp, &self.temp);
            if let Some(index) = &index {
                slices::mark_work_in_progress(ctx, index, &self.temp_times);
            }
        }
        if *next >= members.len() {
            // The written lists (tens of megabytes for a large union) are
            // freed without the lock, in `compute`.
            if let MergePhase::Write {
                members,
                packed,
                times,
                ..
            } = std::mem::replace(&mut self.phase, MergePhase::Swap)
            {
                self.garbage = Some(model::Union {
                    names: members,
                    scores: packed,
                    times,
                });
            }
        }
    }

    /// Replaces `dest` with the union (or deletes it for an empty union)
    /// and sets its expiry. The old board is freed in the background.
    fn swap(&mut self, ctx: &Context) -> Result<i64, RedisError> {
        let dest = self.dest.as_slice();
        if let RedisValue::Integer(1) = ctx.call("UNLINK", &[dest][..])? {
            ctx.replicate("UNLINK", &[dest]);
        }
        let dest_times = derived(dest, TIMES);
        if self.wide {
            if let RedisValue::Integer(1) = ctx.call("UNLINK", &[dest_times.as_slice()][..])? {
                ctx.replicate("UNLINK", &[dest_times.as_slice()]);
            }
        }
        let temp = Key::open(ctx, &self.temp, false);
        let count = temp.len() as i64;
        let made = temp.exists();
        let marked = temp.abs_expire_ms().is_some();
        drop(temp);
        if made {
            ctx.call("RENAME", &[self.temp.as_slice(), dest][..])?;
            ctx.replicate("RENAME", &[self.temp.as_slice(), dest]);
            if self.wide {
                let (from, to) = (self.temp_times.as_slice(), dest_times.as_slice());
                ctx.call("RENAME", &[from, to][..])?;
                ctx.replicate("RENAME", &[from, to]);
            }
        }
        let times = self.wide.then(|| Key::open(ctx, &dest_times, true));

        let meta_name = derived(dest, "meta");
        let meta = Key::open(ctx, &meta_name, true);
        let board = Key::open(ctx, dest, true);
        let at = match self.ttl {
            Some(ttl) => {
                let at = ttl_instant(ttl);
                if meta.exists() {
                    meta.set_abs_expire_ms(at);
                    replicate_pexpireat(ctx, &meta_name, at);
                }
                Some(at)
            }
            None => meta.abs_expire_ms(),
        };
        match at {
            Some(at) if board.exists() => {
                board.set_abs_expire_ms(at);
                replicate_pexpireat(ctx, dest, at);
                if let Some(t) = times.as_ref().filter(|t| t.exists()) {
                    t.set_abs_expire_ms(at);
                    replicate_pexpireat(ctx, &dest_times, at);
                }
            }
            // The union came with the expiry of work in progress.
            None if marked => {
                board.persist();
                ctx.replicate("PERSIST", &[dest]);
                if let Some(t) = times.as_ref().filter(|t| t.exists()) {
                    t.persist();
                    ctx.replicate("PERSIST", &[dest_times.as_slice()]);
                }
            }
            _ => {}
        }
        MERGES.incr();
        util::notify(ctx, "hotpath.rank.merge", dest);
        Ok(count)
    }

    fn slice(&mut self, ctx: &Context, deadline: Instant) -> Result<Option<i64>, RedisError> {
        if slices::generation() != self.generation {
            return Err(error::family(
                FAMILY,
                "a source was deleted or flushed during MERGE",
            ));
        }
        self.read(ctx, deadline)?;
        if matches!(self.phase, MergePhase::Read { .. }) {
            return Ok(None);
        }
        if matches!(self.phase, MergePhase::Check) {
            // A small union is checked at once; a large one without the
            // lock, before the next slice.
            if self.scanned.len() + self.merger.as_ref().map_or(0, Merger::len) > INLINE_CHECK {
                return Ok(None);
            }
            self.merge()?;
        }
        if matches!(self.phase, MergePhase::Write { .. }) {
            self.write(ctx, deadline);
            // The swap comes in a slice of its own, after `compute` has
            // freed the written lists.
            if self
                .garbage
                .as_ref()
                .is_some_and(|g| g.names.len() > INLINE_CHECK)
            {
                let temp = Key::open(ctx, &self.temp, true);
                slices::mark_work_in_progress(ctx, &temp, &self.temp);
                return Ok(None);
            }
        }
        if matches!(self.phase, MergePhase::Write { .. }) {
            return Ok(None);
        }
        self.swap(ctx).map(Some)
    }
}

impl Job for MergeJob {
    fn claim(&self) -> Option<&slices::Claim> {
        Some(&self._claim)
    }

    fn step(&mut self, ctx: &Context, deadline: Instant) -> Step {
        match self
            .error
            .take()
            .map_or_else(|| self.slice(ctx, deadline), Err)
        {
            Ok(None) => Step::More,
            Ok(Some(n)) => Step::Done(Ok(RedisValue::Integer(n))),
            Err(e) => {
                // Nothing reached `dest`; drop what was written so far.
                let n = 1 + usize::from(self.wide);
                for k in [&self.temp, &self.temp_times].into_iter().take(n) {
                    if let Ok(RedisValue::Integer(1)) = ctx.call("UNLINK", &[k.as_slice()][..]) {
                        ctx.replicate("UNLINK", &[k.as_slice()]);
                    }
                }
                Step::Done(Err(e))
            }
        }
    }

    fn compute(&mut self) {
        self.garbage = None;
        if let Err(e) = self.merge() {
            self.error = Some(e);
        }
        // Room for the next slice's entries, made here without the lock.
        if self.scanned.capacity() < 1 << 16 {
            self.scanned.reserve(1 << 16);
        }
    }

    fn event(&self) -> &'static CStr {
        c"hotpath-rank-merge"
    }
}

/// RANK.MERGE dest numkeys src [src ...] [AGGREGATE SUM|MAX] [TTL seconds]
/// [NOW unix-ms]
pub fn rank_merge(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 4)?;
    let request = slices::request_of(c.args());
    let dest = c.next_bytes()?;
    let numkeys = c.next_i64(1, i64::MAX)?;
    if numkeys as u64 > c.remaining() as u64 {
        return Err(error::syntax());
    }
    let mut sources = Vec::with_capacity(numkeys as usize);
    for _ in 0..numkeys {
        sources.push(c.next_bytes()?);
    }
    let mut agg = Aggregate::Sum;
    let mut ttl = None;
    let mut now = None;
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "AGGREGATE" => {
                agg = match c.option_choice(&["SUM", "MAX"])? {
                    "SUM" => Aggregate::Sum,
                    _ => Aggregate::Max,
                }
            }
            "TTL" => ttl = Some(c.option_i64(1, MAX_TTL_S)?),
            "NOW" => now = Some(now_option(&mut c)?),
            _ => return Err(error::syntax()),
        }
    }
    util::require_hash_tag(ctx, FAMILY, &dest)?;
    for s in &sources {
        util::require_hash_tag(ctx, FAMILY, s)?;
    }
    // Every type check first (dest, the sources and their metas), then the
    // layouts.
    let dest_s = RedisString::create_from_slice(ctx.ctx, &dest);
    let (dest_board, dest_meta) = open_keys(ctx, &dest_s, false, false)?;
    let mut opened = Vec::with_capacity(sources.len());
    for s in &sources {
        let name = RedisString::create_from_slice(ctx.ctx, s);
        opened.push(open_keys(ctx, &name, false, false)?);
    }
    // A spread board has no MERGE: its shards live in other slots than
    // any single-slot board (docs/rank.md).
    refuse_spread(ctx, "RANK.MERGE", &dest, &dest_board, &dest_meta)?;
    for (s, (board, meta)) in sources.iter().zip(&opened) {
        refuse_spread(ctx, "RANK.MERGE", s, board, meta)?;
    }
    drop(dest_board);
    let (dest_layout, dest_import) = read_layout(&dest_meta, &dest)?;
    if dest_import.is_some() {
        return Err(importing());
    }
    // A wide destination's index is replaced with the board.
    if dest_layout.wide {
        Key::derived(ctx, &dest, TIMES, false).check(KeyType::Hash)?;
    }
    let mut layouts = Vec::with_capacity(sources.len());
    for (s, (_, meta)) in sources.iter().zip(&opened) {
        let (layout, import) = read_layout(meta, s)?;
        if import.is_some() {
            return Err(importing());
        }
        layouts.push(layout);
    }
    drop((dest_meta, opened));
    let temp = derived(&dest, "merging");
    let temp_times = derived(&temp, TIMES);
    // A retry of the same MERGE (a client whose timeout fired) waits for
    // the running one and gets its reply.
    let Some(claim) = slices::claim_or_attach(
        ctx,
        &temp,
        Some(&request),
        error::family(FAMILY, "a MERGE into this board is already running"),
    )?
    else {
        return Ok(RedisValue::NoReply);
    };
    // A temporary board left by an interrupted MERGE (a restart) goes first.
    for k in [&temp, &temp_times]
        .into_iter()
        .take(1 + usize::from(dest_layout.wide))
    {
        if let RedisValue::Integer(1) = ctx.call("UNLINK", &[k.as_slice()][..])? {
            ctx.replicate("UNLINK", &[k.as_slice()]);
        }
    }
    let job = MergeJob {
        dest,
        temp,
        wide: dest_layout.wide,
        temp_times,
        sources: sources.into_iter().zip(layouts).collect(),
        ttl,
        merger: Some(Merger::new(
            dest_layout,
            agg,
            now.unwrap_or_else(util::now_ms),
        )),
        scanned: Vec::new(),
        error: None,
        garbage: None,
        generation: slices::generation(),
        seen: false,
        phase: MergePhase::Read {
            source: 0,
            scan: ZScan::new(),
        },
        _claim: claim,
    };
    slices::run(ctx, Box::new(job))
}

/// RANK.IMPORT B [TIEBREAK …] [UNIT …] [DIGITS d] [EPOCH unix-ms]
/// [COUNT n] [NOW unix-ms]
///
/// Packs a board of plain scores (points written with ZADD) in place, at
/// most COUNT members per call; replies the members still to pack (0:
/// done). The first call moves the plain board to `B:import` (RENAME, O(1))
/// and records the layout and the import's time in `B:meta`; every call
/// moves up to COUNT members back into `B`, packed. Until the reply is 0,
/// the other RANK commands refuse the board.
pub fn rank_import(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let base = c.next_bytes()?;
    let opts = layout_options(&mut c, false)?;
    let count = opts.count.unwrap_or(IMPORT_COUNT);
    let max = range_max();
    if count > max {
        return Err(error::family(
            FAMILY,
            &format!("COUNT must be at most {max} (rank-range-max)"),
        ));
    }
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let import_name = derived(&base, "import");
    let meta_name = derived(&base, "meta");
    let base_s = RedisString::create_from_slice(ctx.ctx, &base);
    let (board, meta) = open_keys(ctx, &base_s, true, true)?;
    let plain = Key::open(ctx, &import_name, true);
    plain.check(KeyType::ZSet)?;
    refuse_spread(ctx, "RANK.IMPORT", &base, &board, &meta)?;
    let state = read_layout(&meta, &base)?;
    // The index a LAYOUT WIDE import writes (the layout of a later call
    // is in B:meta, of a first one in the options).
    let times = Key::derived(ctx, &base, TIMES, true);
    let wide = match state {
        (l, Some(_)) => l.wide,
        _ => opts.wide,
    };
    if wide {
        times.check(KeyType::Hash)?;
    }
    let (layout, import_at) = match state {
        (l, Some(at)) => {
            if opts.has_layout() || opts.now.is_some() {
                return Err(error::family(
                    FAMILY,
                    "import in progress: only COUNT may be given",
                ));
            }
            (l, at)
        }
        (_, None) if meta.exists() => return Err(error::family(FAMILY, "board already exists")),
        (_, None) => {
            if !board.exists() {
                return Ok(RedisValue::Integer(0));
            }
            let layout = opts.layout();
            // A wide import writes B:time: one already there is another
            // board's index (or a leftover) it must not mix with.
            if layout.wide && times.exists() {
                return Err(error::family(FAMILY, "board already exists"));
            }
            let at = opts.now.unwrap_or_else(util::now_ms);
            layout.tick(at).map_err(rank_error)?;
            // The first batch is checked before anything moves, so that a
            // refused first call writes nothing.
            import_batch(&board, &base, layout, at, count)?;
            // Start: the plain board moves aside (keeping its expiry) and
            // B:meta records the layout and the import's time.
            let expiry = board.abs_expire_ms();
            drop((board, meta, plain, times));
            ctx.call("RENAME", &[base.as_slice(), import_name.as_slice()][..])?;
            ctx.replicate("RENAME", &[base.as_slice(), import_name.as_slice()]);
            let meta = Key::open(ctx, &meta_name, true);
            let value = format!("{} IMPORT {at}", layout.to_field());
            let field = model::META_FIELD.as_bytes();
            meta.hput(field, value.as_bytes());
            ctx.replicate("HSET", &[&meta_name[..], field, value.as_bytes()]);
            if let Some(e) = expiry {
                meta.set_abs_expire_ms(e);
                replicate_pexpireat(ctx, &meta_name, e);
            }
            drop(meta);
            return import_step(ctx, &base, layout, at, count);
        }
    };
    drop((board, meta, plain, times));
    import_step(ctx, &base, layout, import_at, count)
}

/// A batch of an import: up to `count` members of a plain board (lowest
/// first: any order would do, a range read is the cheapest) and their
/// packed scores at `at`.
///
/// Occurs as a corrupt-data error for a score that is not an integer, and
/// as the range error for points the layout cannot hold.
#[allow(clippy::type_complexity)]
fn import_batch(
    plain: &Key,
    name: &[u8],
    layout: Layout,
    at: i64,
    count: i64,
) -> Result<(Vec<(Vec<u8>, f64)>, Vec<i64>), RedisError> {
    let t = layout.tick(at).map_err(rank_error)?;
    let batch = plain.zrange_asc(0, count as usize);
    let mut packed = Vec::with_capacity(batch.len());
    for (member, score) in &batch {
        let points = Some(*score)
            .filter(|s| s.fract() == 0.0 && s.abs() <= EXACT_MAX as f64)
            .map(|s| s as i64)
            .ok_or_else(|| corrupt(name, member))?;
        layout.check_points(points).map_err(rank_error)?;
        packed.push(layout.pack_tick(points, t));
    }
    Ok((batch, packed))
}

/// Moves up to `count` members from `B:import` into `B`, packed at
/// `at`; finishes the import when none is left.
fn import_step(ctx: &Context, base: &[u8], layout: Layout, at: i64, count: i64) -> RedisResult {
    let import_name = derived(base, "import");
    let meta_name = derived(base, "meta");
    let plain = Key::open(ctx, &import_name, true);
    let board = Key::open(ctx, base, true);
    let meta = Key::open(ctx, &meta_name, true);
    let (batch, packed) = import_batch(&plain, &import_name, layout, at, count)?;
    // A LAYOUT WIDE board stores each member under its name at the
    // import's time, and indexes it in B:time.
    let times_name = derived(base, TIMES);
    let times = layout.wide.then(|| Key::open(ctx, &times_name, true));
    let names: Vec<Vec<u8>> = batch
        .iter()
        .map(|(m, _)| {
            if layout.wide {
                layout.wide_name(at, m)
            } else {
                m.clone()
            }
        })
        .collect();
    let at_text = itoa::Buffer::new().format(at).to_string();
    let created = !board.exists();
    let times_created = times.as_ref().is_some_and(|t| !t.exists());
    for (((member, _), p), name) in batch.iter().zip(&packed).zip(&names) {
        board.zadd(name, *p as f64);
        if let Some(t) = &times {
            t.hput(member, at_text.as_bytes());
        }
        plain.zrem(member);
    }
    for chunk in batch
        .iter()
        .zip(&packed)
        .zip(&names)
        .collect::<Vec<_>>()
        .chunks(ZADD_CHUNK)
    {
        let scores: Vec<String> = chunk.iter().map(|((_, p), _)| p.to_string()).collect();
        let mut zadd: Vec<&[u8]> = vec![base];
        let mut zrem: Vec<&[u8]> = vec![&import_name];
        let mut hset: Vec<&[u8]> = vec![&times_name];
        for ((((member, _), _), name), score) in chunk.iter().zip(&scores) {
            zadd.push(score.as_bytes());
            zadd.push(name);
            zrem.push(member);
            hset.push(member);
            hset.push(at_text.as_bytes());
        }
        ctx.replicate("ZADD", zadd.as_slice());
        if layout.wide {
            ctx.replicate("HSET", hset.as_slice());
        }
        ctx.replicate("ZREM", zrem.as_slice());
    }
    if let Some(e) = meta.abs_expire_ms() {
        if created && board.exists() {
            board.set_abs_expire_ms(e);
            replicate_pexpireat(ctx, base, e);
        }
        if let Some(t) = times.as_ref().filter(|t| times_created && t.exists()) {
            t.set_abs_expire_ms(e);
            replicate_pexpireat(ctx, &times_name, e);
        }
    }
    IMPORTED.add(batch.len() as u64);
    let left = plain.len() as i64;
    if left == 0 {
        let value = layout.to_field();
        let field = model::META_FIELD.as_bytes();
        meta.hput(field, value.as_bytes());
        ctx.replicate("HSET", &[&meta_name[..], field, value.as_bytes()]);
    }
    util::notify(ctx, "hotpath.rank.import", base);
    Ok(RedisValue::Integer(left))
}
