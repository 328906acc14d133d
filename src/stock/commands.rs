//! STOCK's handlers: parse and validate everything, open and type-check
//! the stock's keys, read the records a command needs and refuse corrupt
//! ones, build the plan with the pure logic (model.rs), then write it,
//! reply, replicate and raise the event.
//!
//! Replication: RESERVE, CONFIRM and RESTOCK read the clock (a lease's
//! start, lapsed leases) and replicate themselves with the master's `NOW`
//! made explicit (verbatim when the client gave it); CREATE likewise when
//! it has a TTL; RELEASE replicates verbatim. Each one is deterministic
//! given its arguments and the data, so replicas and the AOF re-run it to
//! the same bytes. A call that wrote nothing replicates nothing.
//!
//! The sold-out fast path: RESERVE on a stock whose record begins `0:0:`
//! (nothing available, nothing reserved) answers SOLDOUT after reading
//! that one value, with no other key opened.

use redis_module::{Context, KeyType, RedisError, RedisResult, RedisString, RedisValue};

use super::model::{
    self, Open, Order, Pool, Reserve, RestockError, State, Stock, Transfer, TransferError,
    DEFAULT_AUDIT_COUNT, DEFAULT_LEASE_MS, MAX_AUDIT_COUNT, MAX_INT, MAX_LEASE_MS, MAX_RECLAIM,
    MAX_TIME_MS, MAX_TTL_S,
};
use super::{
    COUNT_CONFIRMED, COUNT_CREATED, COUNT_EXPIRED, COUNT_LIMITED, COUNT_RELEASED, COUNT_RESERVED,
    COUNT_RESTOCKED, COUNT_SOLDOUT, FAMILY,
};
use crate::argv::{is, Args};
use crate::error;
use crate::keys::{derived, expire_at_if_unset, HashField, Key};
use crate::spread::{route, scope, shard};
use crate::util;
use crate::{replicate, reply};

fn fail(msg: &str) -> RedisError {
    error::family(FAMILY, msg)
}

/// Fails on an empty user or order id.
fn non_empty(v: &[u8], what: &str) -> Result<(), RedisError> {
    if v.is_empty() {
        return Err(fail(&format!("{what} must not be empty")));
    }
    Ok(())
}

/// `B`, opened and read.
struct Head {
    key: Key,
    stock: Stock,
    /// The shard `B` is, for a shard of a spread stock.
    shard: Option<Spread>,
}

/// A shard of a spread stock, as a call found it.
#[derive(Clone, Copy)]
struct Spread {
    at: shard::Shard,
    /// The shard's record is marked dry: the pool had nothing left when
    /// it last asked (its SOLDOUT is then the whole SKU's).
    dry: bool,
}

/// A spread stock's data keys (a shard's keys besides `:meta`).
const SPREAD_STOCK: scope::Family = scope::Family {
    name: FAMILY,
    data: &["", "orders", "users", "leases", "applied"],
};

/// Decides which shard a call on `base` runs on: `None` for a single-slot
/// stock (one byte compared for a key that does not start with `{` and
/// declared no count). `found`: whether `B` is a String; `rec`: its
/// record when it parses; `member`: the user a RESERVE names.
///
/// A record with a shard's mark decides alone, from the one key the call
/// opened anyway (the hot path of a shard: no `:meta` read): the count
/// the call declared must be the mark's, the key must be that shard's
/// key, and `member` must belong to it. Any other call on a key that may
/// be a shard goes through the spread scope ([`scope::resolve`], which
/// reads `B:meta`), and a shard found there whose record has no mark is
/// corrupt data in `B`.
#[inline]
fn spread_of(
    ctx: &Context,
    base: &[u8],
    declared: Option<u32>,
    found: bool,
    rec: Option<&Stock>,
    member: Option<(&str, &[u8])>,
) -> Result<Option<Spread>, RedisError> {
    if let Some(m) = rec.and_then(|s| s.mark) {
        return marked(base, declared, m, member).map(Some);
    }
    if !scope::may_spread(base, declared) {
        if !found {
            scope::refuse_base(ctx, &SPREAD_STOCK, base)?;
        }
        return Ok(None);
    }
    let meta = scope::open_meta(ctx, base)?;
    let at = scope::resolve(
        ctx,
        &SPREAD_STOCK,
        base,
        declared,
        Some(&meta),
        Some(found),
        member,
    )?;
    if at.is_some() && rec.is_some() {
        return Err(error::corrupt(FAMILY, base, None));
    }
    Ok(at.map(|at| Spread { at, dry: false }))
}

/// The shard a record's mark `m` names, for a call on `base` that
/// declared `declared` and names `member` ([`spread_of`]).
#[inline]
fn marked(
    base: &[u8],
    declared: Option<u32>,
    m: model::Mark,
    member: Option<(&str, &[u8])>,
) -> Result<Spread, RedisError> {
    let at = shard::Shard { n: m.n, i: m.i };
    if let Some(d) = declared {
        if d != m.n {
            return Err(shard::counts_disagree(FAMILY, base, d, at));
        }
    }
    if !is_shard_key(base, m) {
        return Err(error::corrupt(FAMILY, base, None));
    }
    if let Some((what, id)) = member {
        shard::check_owner(FAMILY, what, base, at, id)?;
    }
    Ok(Spread { at, dry: m.dry })
}

thread_local! {
    /// The last key [`is_shard_key`] found to be the shard its mark names.
    static SHARD_KEY: std::cell::RefCell<(Vec<u8>, u32, u32)> =
        const { std::cell::RefCell::new((Vec::new(), 0, 0)) };
}

/// Returns true when `key` is the key of the shard mark `m` names
/// ([`route::shard_index`], three key-slot hashes), remembering the last
/// key found so: a hot shard is checked once, then compared.
fn is_shard_key(key: &[u8], m: model::Mark) -> bool {
    SHARD_KEY.with(|c| {
        let mut c = c.borrow_mut();
        if c.1 == m.n && c.2 == m.i && c.0 == key {
            return true;
        }
        if route::shard_index(key, m.n) != Some(m.i) {
            return false;
        }
        c.0.clear();
        c.0.extend_from_slice(key);
        c.1 = m.n;
        c.2 = m.i;
        true
    })
}

/// Opens `B` and parses its record; for a spread stock, finds the shard.
///
/// Occurs as `WRONGTYPE` when `B` is not a String, the spread scope's
/// errors ([`scope::resolve`]), `no such stock` when it is missing, and as
/// corrupt data when it holds anything STOCK never writes.
fn open_head(
    ctx: &Context,
    base: &RedisString,
    write: bool,
    declared: Option<u32>,
) -> Result<Head, RedisError> {
    let key = Key::open_arg(ctx, base, write);
    let found = key.check(KeyType::String)?;
    let rec = if found {
        Stock::parse(key.bytes())
    } else {
        None
    };
    let shard = spread_of(ctx, base.as_slice(), declared, found, rec.as_ref(), None)?;
    if !found {
        return Err(fail("no such stock"));
    }
    let stock = rec.ok_or_else(|| error::corrupt(FAMILY, base.as_slice(), None))?;
    Ok(Head { key, stock, shard })
}

/// Returns true when `arg` is the keyword `upper` in any case, for a
/// keyword of the letters A–Z only: one mask per byte (a letter's two
/// cases differ in bit 0x20 alone, and no other byte masks to a capital).
#[inline(always)]
fn is_letters(arg: &[u8], upper: &[u8]) -> bool {
    arg.len() == upper.len() && arg.iter().zip(upper).all(|(&a, &u)| a & !0x20 == u)
}

/// Reads `[NOW unix-ms] [SPREAD n]` in either order (each at most once) up
/// to the last argument.
fn now_and_spread(c: &mut Args) -> Result<(Option<i64>, Option<u32>), RedisError> {
    let (mut now, mut declared) = (None, None);
    while !c.done() {
        let k = c.keyword()?;
        if is_letters(k, b"NOW") && now.is_none() {
            now = Some(c.option_i64(0, MAX_TIME_MS)?);
        } else if is_letters(k, shard::KEYWORD) && declared.is_none() {
            declared = Some(shard::parse_count(FAMILY, c.option_bytes()?)?);
        } else {
            return Err(error::syntax());
        }
    }
    Ok((now, declared))
}

/// Reads an optional trailing `SPREAD n` (nothing else) at the cursor.
fn only_spread(c: &mut Args) -> Result<Option<u32>, RedisError> {
    if c.done() {
        return Ok(None);
    }
    if !scope::is_keyword(c.keyword()?) {
        return Err(error::syntax());
    }
    let n = shard::parse_count(FAMILY, c.option_bytes()?)?;
    c.expect_done()?;
    Ok(Some(n))
}

/// The suffixes of a stock's ledger keys, in [`Ledger`]'s order.
const LEDGER: [&str; 3] = ["orders", "users", "leases"];

/// The ledger keys of a stock, opened and type-checked.
struct Ledger<'a> {
    base: &'a RedisString,
    orders: Key,
    users: Key,
    leases: Key,
}

impl<'a> Ledger<'a> {
    /// Opens `B:orders`, `B:users` and `B:leases`.
    ///
    /// Occurs as `WRONGTYPE` when any holds another type than its own.
    fn open(ctx: &Context, base: &'a RedisString, write: bool) -> Result<Ledger<'a>, RedisError> {
        let b = base.as_slice();
        let [orders, users, leases] = LEDGER.map(|suffix| Key::derived_hot(ctx, b, suffix, write));
        orders.check(KeyType::Hash)?;
        users.check(KeyType::Hash)?;
        leases.check(KeyType::ZSet)?;
        Ok(Ledger {
            base,
            orders,
            users,
            leases,
        })
    }

    fn corrupt(&self, suffix: &str, field: &[u8]) -> RedisError {
        let key = derived(self.base.as_slice(), suffix);
        error::corrupt(FAMILY, &key, Some(&error::key_text(field)))
    }

    /// Returns the record of `order`, parsed, with where its user starts.
    fn order(
        &self,
        order: &RedisString,
    ) -> Result<Option<(RedisString, Order, usize)>, RedisError> {
        match self.orders.hget_arg(HashField::Arg(order)) {
            None => Ok(None),
            Some(raw) => match Order::parse(raw.as_slice()) {
                Some((o, at)) => Ok(Some((raw, o, at))),
                None => Err(self.corrupt("orders", order.as_slice())),
            },
        }
    }

    /// Returns the units `user` holds (0 when the field is missing).
    fn held(&self, user: &[u8]) -> Result<i64, RedisError> {
        match self.users.hget(user) {
            None => Ok(0),
            Some(v) => model::parse_held(&v).ok_or_else(|| self.corrupt("users", user)),
        }
    }

    /// Returns the units held by the user the client named (its string
    /// used as the field, not copied: the hot path of a reservation).
    fn held_arg(&self, user: &RedisString) -> Result<i64, RedisError> {
        match self.users.hget_arg(HashField::Arg(user)) {
            None => Ok(0),
            Some(v) => model::parse_held(v.as_slice())
                .ok_or_else(|| self.corrupt("users", user.as_slice())),
        }
    }

    /// Reads up to [`MAX_RECLAIM`] lapsed leases (lease end at or before
    /// `now`), oldest first, each checked against its order's record.
    fn lapsed(&self, now: i64) -> Result<Vec<Lapsed>, RedisError> {
        let mut out = Vec::new();
        if self.leases.is_empty() {
            return Ok(out);
        }
        for (id, score) in self
            .leases
            .zrange_strings(0, MAX_RECLAIM, f64::NEG_INFINITY, now as f64)
        {
            let bad = || self.corrupt("leases", id.as_slice());
            let (rec, order, user_at) = self.order(&id)?.ok_or_else(bad)?;
            if order.state != State::Reserved || order.lease_end as f64 != score {
                return Err(bad());
            }
            out.push(Lapsed {
                id,
                rec,
                order,
                user_at,
            });
        }
        Ok(out)
    }

    /// Sets the stock's expiry on the ledger keys that have none (a key
    /// created by this command).
    fn expire(&self, expires: i64) {
        if expires > 0 {
            expire_at_if_unset(&self.orders, expires);
            expire_at_if_unset(&self.users, expires);
            expire_at_if_unset(&self.leases, expires);
        }
    }
}

/// A lapsed lease about to be returned.
struct Lapsed {
    id: RedisString,
    rec: RedisString,
    order: Order,
    user_at: usize,
}

impl Lapsed {
    fn user(&self) -> &[u8] {
        &self.rec.as_slice()[self.user_at..]
    }
}

/// Users' counts as a plan changes them: (user, count after).
#[derive(Default)]
struct Helds(Vec<(Vec<u8>, i64)>);

impl Helds {
    /// Returns the count of `user` in the plan, read from `B:users` the
    /// first time.
    fn get(&mut self, l: &Ledger, user: &[u8]) -> Result<i64, RedisError> {
        if let Some((_, n)) = self.0.iter().find(|(u, _)| u == user) {
            return Ok(*n);
        }
        let n = l.held(user)?;
        self.0.push((user.to_vec(), n));
        Ok(n)
    }

    fn set(&mut self, user: &[u8], n: i64) {
        if let Some(e) = self.0.iter_mut().find(|(u, _)| u == user) {
            e.1 = n;
        }
    }

    /// Returns the count of `user` when the plan already holds it.
    fn find(&self, user: &[u8]) -> Option<i64> {
        self.0.iter().find(|(u, _)| u == user).map(|(_, n)| *n)
    }

    /// Takes `qty` units off `user`'s count; a count that would go below 0
    /// does not match the ledger.
    fn take(&mut self, l: &Ledger, user: &[u8], qty: i64) -> Result<(), RedisError> {
        let n = self.get(l, user)?;
        if n < qty {
            return Err(l.corrupt("users", user));
        }
        self.set(user, n - qty);
        Ok(())
    }

    /// Writes every count (a 0 removes the field).
    fn write(&self, l: &Ledger) {
        let mut b = itoa::Buffer::new();
        for (user, n) in &self.0 {
            if *n == 0 {
                l.users.hdel(user);
            } else {
                l.users.hput(user, b.format(*n).as_bytes());
            }
        }
    }
}

/// Plans the return of `lapsed` leases: the stock and users' counts after.
fn plan_returns(
    l: &Ledger,
    base: &[u8],
    stock: &mut Stock,
    lapsed: &[Lapsed],
    helds: &mut Helds,
) -> Result<(), RedisError> {
    for x in lapsed {
        stock
            .give_back(x.order.qty)
            .ok_or_else(|| error::corrupt(FAMILY, base, None))?;
        helds.take(l, x.user(), x.order.qty)?;
    }
    Ok(())
}

/// Writes the return of `lapsed` leases (their orders to `E`).
fn write_returns(l: &Ledger, lapsed: &[Lapsed], buf: &mut Vec<u8>) {
    for x in lapsed {
        x.order.with(State::Expired).write(x.user(), buf);
        l.orders.hput_arg(&x.id, buf);
        l.leases.zrem_arg(&x.id);
    }
    COUNT_EXPIRED.add(lapsed.len() as u64);
}

/// Replies `[SOLDOUT, left, 0]`, or on a shard of a spread stock not
/// marked dry `[REFILL, left, 0]`: the shard lacks units, the SKU may not.
fn reply_soldout(ctx: &Context, spread: Option<Spread>, left: i64) -> RedisResult {
    if spread.is_some_and(|s| !s.dry) {
        return reply_reserve(ctx, b"REFILL", left, 0);
    }
    COUNT_SOLDOUT.incr();
    reply_reserve(ctx, b"SOLDOUT", left, 0)
}

/// Replies `[status, left, lease-end]`.
fn reply_reserve(ctx: &Context, status: &[u8], left: i64, lease_end: i64) -> RedisResult {
    reply::array(ctx, 3);
    reply::bytes(ctx, status);
    reply::int(ctx, left);
    reply::int(ctx, lease_end);
    Ok(RedisValue::NoReply)
}

/// STOCK.CREATE B total [LIMIT per-user] [LEASE lease-ms] [TTL seconds] [NOW unix-ms]
///
/// Creates the stock; replies OK.
pub fn stock_create(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(3)?;
    c.skip(1)?;
    let total = c.next_i64(0, MAX_INT)?;
    let (mut limit, mut lease, mut ttl, mut now) = (0, DEFAULT_LEASE_MS, None, None);
    let mut declared = None;
    while !c.done() {
        let k = c.keyword()?;
        if scope::is_keyword(k) {
            declared = Some(shard::parse_count(FAMILY, c.option_bytes()?)?);
        } else if is(k, "LIMIT") {
            limit = c.option_i64(0, MAX_INT)?;
        } else if is(k, "LEASE") {
            lease = c.option_i64(1, MAX_LEASE_MS)?;
        } else if is(k, "TTL") {
            ttl = Some(c.option_i64(1, MAX_TTL_S)?);
        } else if is(k, "NOW") {
            now = Some(c.option_i64(0, MAX_TIME_MS)?);
        } else {
            return Err(error::syntax());
        }
    }
    let args = c.all();
    let base = &args[1];
    util::require_hash_tag(ctx, FAMILY, base.as_slice())?;
    let had_now = now.is_some();
    let now = now.unwrap_or_else(util::now_ms);
    let expires = ttl.map_or(0, |t| now + t * 1000);
    let b = base.as_slice();
    let at = match declared {
        Some(n) => Some(shard::Shard {
            n,
            i: route::shard_index(b, n).ok_or_else(|| shard::not_a_shard_key(FAMILY, b, n))?,
        }),
        None => None,
    };
    let key = Key::open_arg(ctx, base, true);
    if key.check(KeyType::String)? {
        return Err(fail("already exists"));
    }
    let meta = Key::derived(ctx, b, "meta", true);
    meta.check(KeyType::Hash)?;
    match at {
        // A meta without a stock record: a shard whose record was deleted.
        Some(_) if meta.exists() => return Err(error::corrupt(FAMILY, b, None)),
        None => scope::refuse_base(ctx, &SPREAD_STOCK, b)?,
        // Shard 0 shares its base key's slot: a single-slot stock under
        // the base must not be shadowed by a spread one.
        Some(shard::Shard { i: 0, .. }) => {
            let base_b = route::shard_base(b).unwrap_or(b);
            if (util::has_hash_tag(base_b) || !util::cluster_mode(ctx))
                && Key::open(ctx, base_b, false).exists()
            {
                return Err(fail(&format!(
                    "'{}' is a single-slot stock already",
                    error::key_text(base_b)
                )));
            }
        }
        Some(_) => {}
    }
    // Leftovers of an earlier stock of this name would join the new one.
    for suffix in [
        "orders",
        "users",
        "leases",
        "applied",
        "pool",
        "transfers",
        "open",
    ] {
        Key::derived(ctx, b, suffix, true).unlink();
    }
    // A shard starts empty: every unit it sells comes from the pool by a
    // transfer (shard 0 holds the pool of all `total` units). Its record
    // carries its mark (which shard of how many, not dry).
    let own = if at.is_some() { 0 } else { total };
    let mut rec = Stock::new(own, limit, lease, expires);
    rec.mark = at.map(|at| model::Mark {
        n: at.n,
        i: at.i,
        dry: false,
    });
    key.write_in_place(&rec.format());
    if expires > 0 {
        key.set_abs_expire_ms(expires);
    }
    drop(key);
    if let Some(at) = at {
        let mut ib = itoa::Buffer::new();
        meta.hput(shard::FIELD_SPREAD, ib.format(at.n).as_bytes());
        meta.hput(shard::FIELD_SHARD, ib.format(at.i).as_bytes());
        if expires > 0 {
            meta.set_abs_expire_ms(expires);
        }
        if at.i == 0 {
            let pool = Key::derived(ctx, b, "pool", true);
            pool.write_in_place(&Pool::new(total, expires).format());
            if expires > 0 {
                pool.set_abs_expire_ms(expires);
            }
        }
    }
    drop(meta);
    if ttl.is_some() {
        replicate::with_clock(ctx, args, now, had_now);
    } else {
        ctx.replicate_verbatim();
    }
    util::notify_static(ctx, c"hotpath.stock.create", base);
    COUNT_CREATED.incr();
    Ok(RedisValue::SimpleStringStatic("OK"))
}

/// STOCK.RESERVE B user order quantity [NOW unix-ms]
///
/// Replies `[OK, left, lease-end]`, `[SOLDOUT, available, 0]` or
/// `[LIMIT, available, 0]`; a known order gets its first reply again.
pub fn stock_reserve(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(5)?;
    c.skip(3)?;
    let qty = c.next_i64(1, MAX_INT)?;
    let (now, declared) = now_and_spread(c)?;
    let args = c.all();
    let (base, user, order) = (&args[1], &args[2], &args[3]);
    // Each argument's bytes read once (every read is a call into Redis).
    let (b, u) = (base.as_slice(), user.as_slice());
    non_empty(u, "user")?;
    non_empty(order.as_slice(), "order")?;
    util::require_hash_tag(ctx, FAMILY, b)?;
    // The client's own string names the handle, not retained: it outlives
    // the call, and RM_OpenKey holds its own reference while `B` is open.
    let key = Key::open_kept(ctx, base, true);
    let found = key.check(KeyType::String)?;
    // The record, read once: it aliases `B`'s value, which nothing below
    // changes before the record is rewritten (the last write).
    let raw = if found { key.bytes() } else { &[] };
    // A key that may be a shard: its record (and mark) parsed now, once.
    // A single-slot stock parses its record after the sold-out fast path.
    let (spread, rec) = if scope::may_spread(b, declared) {
        // A sold-out shard answers from its mark alone.
        if found && model::finished(raw) {
            if let Some(m) = model::Mark::read(raw) {
                let s = marked(b, declared, m, Some(("user", u)))?;
                return reply_soldout(ctx, Some(s), 0);
            }
        }
        let rec = if found { Stock::parse_split(raw) } else { None };
        let member = Some(("user", u));
        (
            spread_of(ctx, b, declared, found, rec.as_ref().map(|r| &r.0), member)?,
            rec,
        )
    } else {
        if !found {
            scope::refuse_base(ctx, &SPREAD_STOCK, b)?;
        }
        (None, None)
    };
    if !found {
        return Err(fail("no such stock"));
    }
    if model::finished(raw) {
        return reply_soldout(ctx, spread, 0);
    }
    let (stock, tail) = match rec {
        Some(s) => s,
        None => Stock::parse_split(raw).ok_or_else(|| error::corrupt(FAMILY, b, None))?,
    };
    let had_now = now.is_some();
    let now = now.unwrap_or_else(util::now_ms);
    let l = Ledger::open(ctx, base, true)?;
    if let Some((rec, o, at)) = l.order(order)? {
        if &rec.as_slice()[at..] != u || o.qty != qty {
            return Err(fail("order exists with another user or quantity"));
        }
        return reply_reserve(ctx, b"OK", o.left, o.lease_end);
    }
    let lapsed = l.lapsed(now)?;
    let mut next = stock;
    let mut helds = Helds::default();
    plan_returns(&l, b, &mut next, &lapsed, &mut helds)?;
    // The buyer's count: from the plan when a lapsed lease of theirs is
    // being returned, else read with the client's string as the field.
    let planned = helds.find(u);
    let held = match planned {
        Some(n) => n,
        None => l.held_arg(user)?,
    };
    let decision = model::reserve(&mut next, held, qty, now);
    let mut buf = Vec::with_capacity(64);
    write_returns(&l, &lapsed, &mut buf);
    if let Reserve::Ok { left, lease_end } = decision {
        if planned.is_some() {
            helds.set(u, held + qty);
        } else {
            l.users
                .hput_arg(user, itoa::Buffer::new().format(held + qty).as_bytes());
        }
        Order {
            state: State::Reserved,
            qty,
            lease_end,
            left,
        }
        .write(u, &mut buf);
        l.orders.hput_arg(order, &buf);
        l.leases.zadd_arg(order, lease_end as f64);
    }
    helds.write(&l);
    // A lapsed lease returned and a new one of the same quantity leave the
    // counts as they were, yet the ledger changed: it is a write all the
    // same (replicated, notified, its keys given the stock's expiry, since
    // emptying B:leases deleted it and the ZADD made it again).
    let stock_changed = next != stock;
    let wrote = stock_changed || !lapsed.is_empty() || matches!(decision, Reserve::Ok { .. });
    if stock_changed {
        next.rewrite(&stock, raw, tail, &mut buf);
        key.write_in_place(&buf);
    }
    if wrote {
        l.expire(next.expires);
    }
    drop(l);
    drop(key);
    if wrote {
        replicate::with_clock(ctx, args, now, had_now);
        util::notify_static(ctx, c"hotpath.stock.reserve", base);
    }
    match decision {
        Reserve::Ok { left, lease_end } => {
            COUNT_RESERVED.incr();
            reply_reserve(ctx, b"OK", left, lease_end)
        }
        Reserve::SoldOut { left } => reply_soldout(ctx, spread, left),
        Reserve::Limit { left } => {
            COUNT_LIMITED.incr();
            reply_reserve(ctx, b"LIMIT", left, 0)
        }
    }
}

/// STOCK.CONFIRM B order [NOW unix-ms]
///
/// Replies 1 when the reservation became a sale, 0 when it was already
/// confirmed.
pub fn stock_confirm(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(3)?;
    c.skip(2)?;
    let (now, declared) = now_and_spread(c)?;
    let args = c.all();
    let (base, order) = (&args[1], &args[2]);
    non_empty(order.as_slice(), "order")?;
    util::require_hash_tag(ctx, FAMILY, base.as_slice())?;
    let head = open_head(ctx, base, true, declared)?;
    let had_now = now.is_some();
    let now = now.unwrap_or_else(util::now_ms);
    let l = Ledger::open(ctx, base, true)?;
    let Some((rec, o, at)) = l.order(order)? else {
        return Err(fail("no such order"));
    };
    match model::confirm(&o, now) {
        Ok(false) => return Ok(RedisValue::Integer(0)),
        Err(model::ConfirmError::LeaseExpired) => return Err(fail("lease expired")),
        Err(model::ConfirmError::Released) => return Err(fail("order released")),
        Ok(true) => {}
    }
    if l.leases.zscore_arg(order) != Some(o.lease_end as f64) {
        return Err(l.corrupt("orders", order.as_slice()));
    }
    let lapsed = l.lapsed(now)?;
    let mut next = head.stock;
    let mut helds = Helds::default();
    plan_returns(&l, base.as_slice(), &mut next, &lapsed, &mut helds)?;
    next.sell(o.qty)
        .ok_or_else(|| error::corrupt(FAMILY, base.as_slice(), None))?;
    let mut buf = Vec::with_capacity(64);
    write_returns(&l, &lapsed, &mut buf);
    helds.write(&l);
    o.with(State::Sold).write(&rec.as_slice()[at..], &mut buf);
    l.orders.hput_arg(order, &buf);
    l.leases.zrem_arg(order);
    next.write(&mut buf);
    head.key.write_in_place(&buf);
    drop(rec);
    drop(l);
    drop(head);
    replicate::with_clock(ctx, args, now, had_now);
    util::notify_static(ctx, c"hotpath.stock.confirm", base);
    COUNT_CONFIRMED.incr();
    Ok(RedisValue::Integer(1))
}

/// STOCK.RELEASE B order
///
/// Gives a reservation's units back: 1, or 0 when there is nothing to give
/// back (unknown, released, lapsed and returned).
pub fn stock_release(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(3)?;
    c.skip(2)?;
    let declared = only_spread(c)?;
    let args = c.all();
    let (base, order) = (&args[1], &args[2]);
    non_empty(order.as_slice(), "order")?;
    util::require_hash_tag(ctx, FAMILY, base.as_slice())?;
    let head = open_head(ctx, base, true, declared)?;
    let l = Ledger::open(ctx, base, true)?;
    let Some((rec, o, at)) = l.order(order)? else {
        return Ok(RedisValue::Integer(0));
    };
    match o.state {
        State::Sold => return Err(fail("order is confirmed")),
        State::Released | State::Expired => return Ok(RedisValue::Integer(0)),
        State::Reserved => {}
    }
    let user = &rec.as_slice()[at..];
    let mut next = head.stock;
    next.give_back(o.qty)
        .ok_or_else(|| error::corrupt(FAMILY, base.as_slice(), None))?;
    let mut helds = Helds::default();
    helds.take(&l, user, o.qty)?;
    let mut buf = Vec::with_capacity(64);
    helds.write(&l);
    o.with(State::Released).write(user, &mut buf);
    l.orders.hput_arg(order, &buf);
    l.leases.zrem_arg(order);
    next.write(&mut buf);
    head.key.write_in_place(&buf);
    drop(rec);
    drop(l);
    drop(head);
    ctx.replicate_verbatim();
    util::notify_static(ctx, c"hotpath.stock.release", base);
    COUNT_RELEASED.incr();
    Ok(RedisValue::Integer(1))
}

/// STOCK.RESTOCK B delta [NOW unix-ms]
///
/// Returns lapsed leases, then adds `delta` units (or removes −delta
/// available ones); replies the units available after.
pub fn stock_restock(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(3)?;
    c.skip(1)?;
    let delta = c.next_i64(-MAX_INT, MAX_INT)?;
    let (now, declared) = now_and_spread(c)?;
    let args = c.all();
    let base = &args[1];
    util::require_hash_tag(ctx, FAMILY, base.as_slice())?;
    let head = open_head(ctx, base, true, declared)?;
    if head.shard.is_some() && delta != 0 {
        return Err(fail(
            "a shard of a spread stock takes units only by transfers (RESTOCK 0 returns lapsed leases)",
        ));
    }
    let had_now = now.is_some();
    let now = now.unwrap_or_else(util::now_ms);
    let l = Ledger::open(ctx, base, true)?;
    let lapsed = l.lapsed(now)?;
    let mut next = head.stock;
    let mut helds = Helds::default();
    plan_returns(&l, base.as_slice(), &mut next, &lapsed, &mut helds)?;
    match model::restock(&mut next, delta) {
        Ok(()) => {}
        Err(RestockError::NotEnough) => return Err(fail("not enough available units")),
        Err(RestockError::Overflow) => return Err(error::overflow(FAMILY, base.as_slice(), None)),
    }
    let mut buf = Vec::with_capacity(64);
    write_returns(&l, &lapsed, &mut buf);
    helds.write(&l);
    let wrote = next != head.stock;
    if wrote {
        next.write(&mut buf);
        head.key.write_in_place(&buf);
    }
    drop(l);
    drop(head);
    if wrote {
        replicate::with_clock(ctx, args, now, had_now);
        util::notify_static(ctx, c"hotpath.stock.restock", base);
        if delta != 0 {
            COUNT_RESTOCKED.incr();
        }
    }
    Ok(RedisValue::Integer(next.available))
}

/// STOCK.INFO B
///
/// Replies the map `total, available, reserved, sold, limit, lease_ms,
/// orders` (empty for an unknown stock).
pub fn stock_info(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(2)?;
    c.skip(1)?;
    let declared = only_spread(c)?;
    let base = c.string(1);
    util::require_hash_tag(ctx, FAMILY, base.as_slice())?;
    let key = Key::open_arg(ctx, base, false);
    let found = key.check(KeyType::String)?;
    let rec = if found {
        Stock::parse(key.bytes())
    } else {
        None
    };
    if declared.is_some() || found {
        spread_of(ctx, base.as_slice(), declared, true, rec.as_ref(), None)?;
    }
    if !found {
        return Ok(util::map(ctx, Vec::new()));
    }
    let s = rec.ok_or_else(|| error::corrupt(FAMILY, base.as_slice(), None))?;
    let orders = Key::derived_hot(ctx, base.as_slice(), "orders", false);
    orders.check(KeyType::Hash)?;
    let n = orders.len() as i64;
    let names = [
        "total",
        "available",
        "reserved",
        "sold",
        "limit",
        "lease_ms",
        "orders",
    ];
    let values = [
        s.total,
        s.available,
        s.reserved,
        s.sold,
        s.limit,
        s.lease_ms,
        n,
    ];
    reply::map(ctx, names.len());
    for (name, v) in names.iter().zip(values) {
        reply::bytes(ctx, name.as_bytes());
        reply::int(ctx, v);
    }
    Ok(RedisValue::NoReply)
}

/// STOCK.AUDIT B cursor [COUNT count]
///
/// Replies `[next-cursor, checked, problem, …]`.
pub fn stock_audit(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(3)?;
    c.skip(1)?;
    let cursor = c.next_slice()?;
    if !is_cursor(cursor) {
        return Err(error::not_integer());
    }
    let mut count = DEFAULT_AUDIT_COUNT;
    let mut declared = None;
    while !c.done() {
        let k = c.keyword()?;
        if is(k, "COUNT") {
            count = c.option_i64(1, MAX_AUDIT_COUNT)?;
        } else if scope::is_keyword(k) {
            declared = Some(shard::parse_count(FAMILY, c.option_bytes()?)?);
        } else {
            return Err(error::syntax());
        }
    }
    let base = c.string(1);
    util::require_hash_tag(ctx, FAMILY, base.as_slice())?;
    let head = open_head(ctx, base, false, declared)?;
    let s = head.stock;
    drop(head);
    let l = Ledger::open(ctx, base, false)?;
    drop(l);
    let mut problems: Vec<String> = Vec::new();
    // A record the parser accepts satisfies the law; the checks stay
    // explicit so that the audit says which part failed.
    if s.available < 0 || s.reserved < 0 || s.sold < 0 {
        problems.push("counts: negative".into());
    }
    if !s.conserved() {
        problems.push("counts: available + reserved + sold != total".into());
    }
    // One HSCAN step over the orders, every key handle closed.
    let orders_name = derived(base.as_slice(), "orders");
    let count_s = count.to_string();
    let step = ctx.call(
        "HSCAN",
        &[&orders_name[..], cursor, b"COUNT", count_s.as_bytes()][..],
    )?;
    let (next, flat) = match step {
        RedisValue::Array(mut v) if v.len() == 2 => {
            let items = v.pop().unwrap();
            let next = v.pop().unwrap();
            (value_bytes(&next), items)
        }
        _ => return Err(RedisError::Str(error::INTERNAL)),
    };
    let items = match flat {
        RedisValue::Array(v) => v,
        _ => Vec::new(),
    };
    let whole = cursor == b"0" && next == b"0";
    let l = Ledger::open(ctx, base, false)?;
    let mut checked = 0i64;
    let (mut reserved, mut sold, mut live) = (0i64, 0i64, 0i64);
    let mut per_user: std::collections::HashMap<Vec<u8>, i64> = Default::default();
    for pair in items.chunks(2) {
        let [id, rec] = pair else { continue };
        let (id, rec) = (value_bytes(id), value_bytes(rec));
        checked += 1;
        let lease = l.leases.zscore(&id);
        let Some((o, at)) = Order::parse(&rec) else {
            problems.push(format!("order '{}': corrupt record", error::key_text(&id)));
            continue;
        };
        let user = rec[at..].to_vec();
        match o.state {
            State::Reserved => {
                reserved += o.qty;
                live += 1;
                *per_user.entry(user.clone()).or_default() += o.qty;
                if lease != Some(o.lease_end as f64) {
                    problems.push(format!(
                        "order '{}': reserved without its lease",
                        error::key_text(&id)
                    ));
                }
            }
            _ => {
                if o.state == State::Sold {
                    sold += o.qty;
                    *per_user.entry(user.clone()).or_default() += o.qty;
                }
                if lease.is_some() {
                    problems.push(format!(
                        "order '{}': lease on an order not reserved",
                        error::key_text(&id)
                    ));
                }
            }
        }
        per_user.entry(user).or_default();
    }
    // Users of the orders checked: the limit.
    let mut users: Vec<(&Vec<u8>, &i64)> = per_user.iter().collect();
    users.sort();
    for (user, _) in &users {
        let held = l
            .users
            .hget(user)
            .and_then(|v| model::parse_held(&v))
            .unwrap_or(0);
        if s.limit > 0 && held > s.limit {
            problems.push(format!(
                "user '{}': holds {held} over the limit {}",
                error::key_text(user),
                s.limit
            ));
        }
    }
    if whole {
        if reserved != s.reserved {
            problems.push(format!(
                "ledger: reserved orders hold {reserved}, reserved is {}",
                s.reserved
            ));
        }
        if sold != s.sold {
            problems.push(format!(
                "ledger: confirmed orders hold {sold}, sold is {}",
                s.sold
            ));
        }
        let leases = l.leases.len() as i64;
        if leases != live {
            problems.push(format!(
                "ledger: {leases} leases for {live} reserved orders"
            ));
        }
        // Each user's stored count against what their orders hold (a
        // user with orders but no count is compared with 0).
        let mut stored: std::collections::HashMap<Vec<u8>, i64> = Default::default();
        l.users.scan_pairs(|u, v| {
            stored.insert(u.to_vec(), model::parse_held(v).unwrap_or(-1));
            true
        });
        for (u, _) in &users {
            stored.entry((*u).clone()).or_insert(0);
        }
        let mut stored: Vec<(Vec<u8>, i64)> = stored.into_iter().collect();
        stored.sort();
        for (u, n) in stored {
            let own = per_user.get(&u).copied().unwrap_or(0);
            if own != n {
                problems.push(format!(
                    "ledger: user '{}' holds {n}, orders hold {own}",
                    error::key_text(&u)
                ));
            }
        }
    }
    drop(l);
    reply::array(ctx, 2 + problems.len());
    reply::bytes(ctx, &next);
    reply::int(ctx, checked);
    for p in &problems {
        reply::bytes(ctx, p.as_bytes());
    }
    Ok(RedisValue::NoReply)
}

/// Returns true for an `HSCAN` cursor: a decimal of the u64 range.
fn is_cursor(v: &[u8]) -> bool {
    !v.is_empty()
        && v.iter().all(u8::is_ascii_digit)
        && std::str::from_utf8(v).is_ok_and(|t| t.parse::<u64>().is_ok())
}

/// The bytes of a string element of a call's reply.
fn value_bytes(v: &RedisValue) -> Vec<u8> {
    match v {
        RedisValue::SimpleString(s) | RedisValue::BulkString(s) => s.as_bytes().to_vec(),
        RedisValue::StringBuffer(b) => b.clone(),
        RedisValue::BulkRedisString(s) => s.as_slice().to_vec(),
        RedisValue::Integer(n) => n.to_string().into_bytes(),
        _ => Vec::new(),
    }
}

// ---------------------------------------------------------------------
// The spread form's transfers: opened on the pool (shard 0), applied on a
// shard, settled on the pool; each step idempotent on the transfer id.
// ---------------------------------------------------------------------

/// Reads the trailing `SPREAD n` a transfer command requires.
fn required_spread(c: &mut Args) -> Result<u32, RedisError> {
    match only_spread(c)? {
        Some(n) => Ok(n),
        None => Err(error::syntax()),
    }
}

/// Fails unless `s` is shard 0, the one holding the pool.
fn require_pool_shard(base: &[u8], s: Option<Spread>, n: u32) -> Result<(), RedisError> {
    match s {
        Some(s) if s.at.i == 0 => Ok(()),
        _ => Err(fail(&format!(
            "the pool is on shard 0 of {n} ('{}'), not on '{}'",
            error::key_text(&shard::first_shard_key(
                route::shard_base(base).unwrap_or(base)
            )),
            error::key_text(base)
        ))),
    }
}

/// The pool keys of shard 0, opened and read.
struct PoolKeys {
    pool: Key,
    rec: Pool,
    transfers: Key,
    open: Key,
}

/// Opens `K_0:pool`, `K_0:transfers` and `K_0:open` and reads the pool.
///
/// Occurs as `WRONGTYPE` for a key of another type, and as corrupt data
/// when the pool is missing or not a record STOCK writes.
fn open_pool(ctx: &Context, base: &[u8], write: bool) -> Result<PoolKeys, RedisError> {
    let pool = Key::derived_hot(ctx, base, "pool", write);
    let transfers = Key::derived_hot(ctx, base, "transfers", write);
    let open = Key::derived_hot(ctx, base, "open", write);
    let present = pool.check(KeyType::String)?;
    transfers.check(KeyType::Hash)?;
    open.check(KeyType::ZSet)?;
    let corrupt = || error::corrupt(FAMILY, &derived(base, "pool"), None);
    if !present {
        return Err(corrupt());
    }
    let rec = Pool::parse(pool.bytes()).ok_or_else(corrupt)?;
    Ok(PoolKeys {
        pool,
        rec,
        transfers,
        open,
    })
}

impl PoolKeys {
    /// Returns the record of transfer `id` (None when unknown).
    fn transfer(&self, base: &[u8], id: &RedisString) -> Result<Option<Transfer>, RedisError> {
        match self.transfers.hget_arg(HashField::Arg(id)) {
            None => Ok(None),
            Some(v) => Transfer::parse(v.as_slice()).map(Some).ok_or_else(|| {
                error::corrupt(
                    FAMILY,
                    &derived(base, "transfers"),
                    Some(&error::key_text(id.as_slice())),
                )
            }),
        }
    }

    /// Writes a transfer's record, the pool and the open set.
    fn write(&self, id: &RedisString, t: &Transfer, pool: &Pool) {
        self.transfers.hput_arg(id, &t.format());
        if t.open {
            self.open.zadd_arg(id, 0.0);
        } else {
            self.open.zrem_arg(id);
        }
        if *pool != self.rec {
            self.pool.write_in_place(&pool.format());
        }
        if pool.expires > 0 {
            expire_at_if_unset(&self.transfers, pool.expires);
            expire_at_if_unset(&self.open, pool.expires);
        }
    }
}

fn transfer_error(e: TransferError, base: &[u8]) -> RedisError {
    match e {
        TransferError::Mismatch => fail("transfer exists with another shard or quantity"),
        TransferError::BadUnits => fail("units do not match the transfer"),
        TransferError::Overflow => error::overflow(FAMILY, base, None),
    }
}

/// STOCK.TRANSFER K_0 transfer shard delta SPREAD n
///
/// Opens a transfer on the pool: a refill of up to `delta` units for
/// `shard` (taken off the pool now), or a handback of up to −delta units
/// from it. Replies `[status, units, free, open]`.
pub fn stock_transfer(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(7)?;
    c.skip(2)?;
    let sh = c.next_i64(0, i64::from(route::MAX_SHARDS) - 1)?;
    let delta = c.next_i64(-MAX_INT, MAX_INT)?;
    let n = required_spread(c)?;
    let args = c.all();
    let (base, id) = (&args[1], &args[2]);
    non_empty(id.as_slice(), "transfer")?;
    if delta == 0 {
        return Err(fail("delta must not be 0"));
    }
    if sh >= i64::from(n) {
        return Err(fail(&format!("shard must be from 0 to {}", n - 1)));
    }
    let b = base.as_slice();
    let head = open_head(ctx, base, false, Some(n))?;
    require_pool_shard(b, head.shard, n)?;
    drop(head);
    let pk = open_pool(ctx, b, true)?;
    let known = pk.transfer(b, id)?;
    let mut next = pk.rec;
    let plan = model::open_transfer(&mut next, known, sh as u32, delta)
        .map_err(|e| transfer_error(e, b))?;
    let (status, units): (&[u8], i64) = match plan {
        Open::New(t) => {
            pk.write(id, &t, &next);
            (b"OPEN", t.units)
        }
        Open::Known(t) if t.open => (b"OPEN", t.units),
        Open::Known(t) => (b"CLOSED", t.units),
        Open::Dry => (b"DRY", 0),
    };
    let open = pk.open.len() as i64;
    drop(pk);
    if matches!(plan, Open::New(_)) {
        ctx.replicate_verbatim();
        util::notify_static(ctx, c"hotpath.stock.transfer", base);
    }
    reply::array(ctx, 4);
    reply::bytes(ctx, status);
    reply::int(ctx, units);
    reply::int(ctx, next.free);
    reply::int(ctx, open);
    Ok(RedisValue::NoReply)
}

/// STOCK.APPLY K_i transfer delta SPREAD n
///
/// Applies a transfer on a shard, once per id: `delta` > 0 adds a
/// refill's units, < 0 takes up to −delta available units for a handback;
/// 0 marks the shard dry (the pool had nothing for it). Replies
/// `[applied, available]`.
pub fn stock_apply(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(6)?;
    c.skip(2)?;
    let delta = c.next_i64(-MAX_INT, MAX_INT)?;
    let n = required_spread(c)?;
    let args = c.all();
    let (base, id) = (&args[1], &args[2]);
    non_empty(id.as_slice(), "transfer")?;
    let b = base.as_slice();
    let head = open_head(ctx, base, true, Some(n))?;
    if head.shard.is_none() {
        return Err(RedisError::Str(error::INTERNAL));
    }
    let applied = Key::derived_hot(ctx, b, "applied", true);
    applied.check(KeyType::Hash)?;
    if delta == 0 {
        // The dry notice: nothing moves; SOLDOUT becomes final here (the
        // mark in the shard's record).
        drop(applied);
        let mut next = head.stock;
        if model::mark_dry(&mut next) {
            head.key.write_in_place(&next.format());
            drop(head);
            ctx.replicate_verbatim();
            util::notify_static(ctx, c"hotpath.stock.apply", base);
        }
        return reply_applied(ctx, 0, next.available);
    }
    let known = match applied.hget_arg(HashField::Arg(id)) {
        None => None,
        Some(v) => Some(model::parse_applied(v.as_slice()).ok_or_else(|| {
            error::corrupt(
                FAMILY,
                &derived(b, "applied"),
                Some(&error::key_text(id.as_slice())),
            )
        })?),
    };
    let mut next = head.stock;
    let (a, write) =
        model::apply_transfer(&mut next, known, delta).map_err(|e| transfer_error(e, b))?;
    if !write {
        let available = head.stock.available;
        return reply_applied(ctx, a, available);
    }
    applied.hput_arg(id, itoa::Buffer::new().format(a).as_bytes());
    if next.expires > 0 {
        expire_at_if_unset(&applied, next.expires);
    }
    head.key.write_in_place(&next.format());
    drop(applied);
    drop(head);
    ctx.replicate_verbatim();
    util::notify_static(ctx, c"hotpath.stock.apply", base);
    reply_applied(ctx, a, next.available)
}

fn reply_applied(ctx: &Context, applied: i64, available: i64) -> RedisResult {
    reply::array(ctx, 2);
    reply::int(ctx, applied);
    reply::int(ctx, available);
    Ok(RedisValue::NoReply)
}

/// STOCK.SETTLE K_0 transfer applied SPREAD n
///
/// Settles an open transfer on the pool with the units its shard applied
/// (APPLY's reply): 1, or 0 when it was settled before.
pub fn stock_settle(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(6)?;
    c.skip(2)?;
    let applied = c.next_i64(-MAX_INT, MAX_INT)?;
    let n = required_spread(c)?;
    let args = c.all();
    let (base, id) = (&args[1], &args[2]);
    non_empty(id.as_slice(), "transfer")?;
    let b = base.as_slice();
    let head = open_head(ctx, base, false, Some(n))?;
    require_pool_shard(b, head.shard, n)?;
    drop(head);
    let pk = open_pool(ctx, b, true)?;
    let Some(t) = pk.transfer(b, id)? else {
        return Err(fail("no such transfer"));
    };
    let mut next = pk.rec;
    let after = model::settle_transfer(&mut next, t, applied).map_err(|e| transfer_error(e, b))?;
    let Some(closed) = after else {
        return Ok(RedisValue::Integer(0));
    };
    pk.write(id, &closed, &next);
    drop(pk);
    ctx.replicate_verbatim();
    util::notify_static(ctx, c"hotpath.stock.settle", base);
    Ok(RedisValue::Integer(1))
}

/// The most open transfers STOCK.POOL lists.
const MAX_POOL_LIST: usize = 100;

/// STOCK.POOL K_0 SPREAD n
///
/// Replies the pool: `total, free, transit, open` and `pending`, the open
/// transfers (up to 100) as `transfer, shard, delta` triples, each with
/// the delta its shard's APPLY takes.
pub fn stock_pool(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(4)?;
    c.skip(1)?;
    let n = required_spread(c)?;
    let base = c.string(1);
    let b = base.as_slice();
    let head = open_head(ctx, base, false, Some(n))?;
    require_pool_shard(b, head.shard, n)?;
    drop(head);
    let pk = open_pool(ctx, b, false)?;
    let mut pending = Vec::new();
    if !pk.open.is_empty() {
        for (id, _) in pk
            .open
            .zrange_strings(0, MAX_POOL_LIST, f64::NEG_INFINITY, f64::INFINITY)
        {
            let t = pk.transfer(b, &id)?.filter(|t| t.open).ok_or_else(|| {
                error::corrupt(
                    FAMILY,
                    &derived(b, "open"),
                    Some(&error::key_text(id.as_slice())),
                )
            })?;
            let d = match t.dir {
                model::Dir::Refill => t.units,
                model::Dir::Handback => -t.asked,
            };
            pending.push((id, t.shard, d));
        }
    }
    let p = pk.rec;
    let open = pk.open.len() as i64;
    drop(pk);
    reply::map(ctx, 5);
    for (name, v) in [
        ("total", p.total),
        ("free", p.free),
        ("transit", p.transit),
        ("open", open),
    ] {
        reply::bytes(ctx, name.as_bytes());
        reply::int(ctx, v);
    }
    reply::bytes(ctx, b"pending");
    reply::array(ctx, pending.len() * 3);
    for (id, sh, d) in &pending {
        reply::string(ctx, id);
        reply::int(ctx, i64::from(*sh));
        reply::int(ctx, *d);
    }
    Ok(RedisValue::NoReply)
}

#[cfg(test)]
mod tests {
    use super::is_letters;

    #[test]
    fn is_letters_ignores_case_and_nothing_else() {
        for k in [&b"NOW"[..], b"now", b"NoW", b"nOw"] {
            assert!(is_letters(k, b"NOW"));
        }
        for k in [&b"NO"[..], b"NOWX", b"", b"N0W", b"SPREAD"] {
            assert!(!is_letters(k, b"NOW"));
        }
        // Only 'N' and 'n' mask to 'N'.
        for b in 0..=255u8 {
            let k = [b, b'O', b'W'];
            assert_eq!(is_letters(&k, b"NOW"), b == b'N' || b == b'n', "{b}");
        }
        assert!(is_letters(b"spread", b"SPREAD"));
        assert!(is_letters(b"Spread", b"SPREAD"));
    }
}
