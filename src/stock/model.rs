//! The pure logic of flash-sale stock: the stock record and its
//! conservation law, order records, and the plans of a reservation, a
//! confirmation, a release, a lapsed lease and a restock. Nothing here
//! reads a clock or touches Redis; the handlers pass `now` (unix ms) and
//! the records they read, then write what a plan says.
//!
//! The law, kept by every plan: `available + reserved + sold = total`,
//! no count negative, and no user holding more than the limit through a
//! reservation (a restock or a removal never changes what users hold).

/// The largest count stored (totals, quantities, limits, instants):
/// 2^53 − 1, exact in the Lua twins' doubles.
pub const MAX_INT: i64 = (1 << 53) - 1;
/// The latest `NOW` accepted, 9999-12-31T23:59:59.999Z in unix ms.
pub const MAX_TIME_MS: i64 = 253_402_300_799_999;
/// The longest lease: 100 years in ms.
pub const MAX_LEASE_MS: i64 = 3_153_600_000_000;
/// The longest `TTL`: 100 years in seconds.
pub const MAX_TTL_S: i64 = 3_153_600_000;
/// The lease when CREATE gives none: 15 minutes.
pub const DEFAULT_LEASE_MS: i64 = 900_000;
/// The most lapsed leases one write returns, so that a backlog of unpaid
/// orders never makes one call long.
pub const MAX_RECLAIM: usize = 100;
/// The most orders one AUDIT step asks `HSCAN` for: a step of 500 orders
/// (each checked against its lease and its user) measured 0.3–0.8 ms,
/// one of 1,000 up to 1.6 ms on a loaded machine, over the 1 ms every
/// command keeps to.
pub const MAX_AUDIT_COUNT: i64 = 500;
/// AUDIT's step when COUNT is not given.
pub const DEFAULT_AUDIT_COUNT: i64 = 100;

/// The stock record, the value of `B`:
/// `<available>:<reserved>:<sold>:<total>:<limit>:<lease-ms>:<expires>`,
/// and on a shard of a spread stock `…:<n>:<i>:<dry>` after it (the
/// shard's mark, so that a call on a shard reads one key: see [`Mark`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stock {
    /// Units that can be reserved.
    pub available: i64,
    /// Units held by reservations not yet confirmed or returned.
    pub reserved: i64,
    /// Units confirmed.
    pub sold: i64,
    /// Units created plus restocked minus removed.
    pub total: i64,
    /// The most units one user may hold (0: no limit).
    pub limit: i64,
    /// A reservation's lease.
    pub lease_ms: i64,
    /// The instant every key of the stock expires (0: never).
    pub expires: i64,
    /// On a shard of a spread stock: which shard it is and its dry mark.
    pub mark: Option<Mark>,
}

/// The mark of a shard of a spread stock, the last three fields of its
/// record: shard `i` of `n`, and `dry` (1 while the pool had nothing left
/// for it when it last asked: its SOLDOUT is then the whole SKU's).
/// `K_i:meta` records `spread` n and `shard` i too (for the spread kit's
/// base-key checks); the record is what the shard's own calls read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    pub n: u32,
    pub i: u32,
    pub dry: bool,
}

impl Mark {
    /// Reads the mark alone from a record, without the counts before it
    /// (the sold-out fast path of a shard, after [`finished`]): Some only
    /// for a value of ten ':'-separated fields whose last three are a
    /// mark. The full path parses the rest (and refuses it if corrupt).
    pub fn read(v: &[u8]) -> Option<Mark> {
        // Counted 16 bytes at a time (byte-wide sums the compiler
        // vectorizes); the mark is after the third ':' from the end.
        let colons: usize = v
            .chunks(16)
            .map(|c| usize::from(c.iter().map(|&b| u8::from(b == b':')).sum::<u8>()))
            .sum();
        if colons != 9 {
            return None;
        }
        let mut at = v.len();
        for _ in 0..3 {
            at = v[..at].iter().rposition(|&c| c == b':')?;
        }
        let n = field(v, &mut at)?;
        let i = field(v, &mut at)?;
        let dry = field(v, &mut at)?;
        (at == v.len() && (1..=MAX_MARK_SHARDS).contains(&n) && i < n && dry <= 1).then_some(Mark {
            n: n as u32,
            i: i as u32,
            dry: dry == 1,
        })
    }
}

/// The most shards a spread stock has (as `SPREAD n` takes).
const MAX_MARK_SHARDS: i64 = 1024;

/// Reads one canonical non-negative integer (1 to 16 digits, no leading
/// zero, at most [`MAX_INT`]) at `v[*i..]`, moving `*i` past its digits.
/// One compare per digit: a longer run of digits wraps, then is refused
/// by its length.
#[inline(always)]
fn int_at(v: &[u8], i: &mut usize) -> Option<i64> {
    let start = *i;
    let mut n: u64 = 0;
    while let Some(&c) = v.get(*i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        n = n.wrapping_mul(10).wrapping_add(u64::from(d));
        *i += 1;
    }
    let digits = *i - start;
    if digits == 0 || digits > 16 || (digits > 1 && v[start] == b'0') || n > MAX_INT as u64 {
        return None;
    }
    Some(n as i64)
}

/// Reads ':' and one integer ([`int_at`]) at `v[*i..]`.
#[inline(always)]
fn field(v: &[u8], i: &mut usize) -> Option<i64> {
    if v.get(*i) != Some(&b':') {
        return None;
    }
    *i += 1;
    int_at(v, i)
}

/// Reads `N` canonical non-negative integers separated by ':' from the
/// start of `v`, stopping right after the last one; returns them and
/// where it stopped.
#[inline(always)]
fn ints_prefix<const N: usize>(v: &[u8]) -> Option<([i64; N], usize)> {
    let mut out = [0i64; N];
    let mut i = 0;
    for (k, slot) in out.iter_mut().enumerate() {
        if k > 0 {
            if v.get(i) != Some(&b':') {
                return None;
            }
            i += 1;
        }
        *slot = int_at(v, &mut i)?;
    }
    Some((out, i))
}

/// Reads up to `N` canonical non-negative integers separated by ':' from
/// the start of `v`, each followed by ':' but the last of a record
/// (`last_ends` tells whether the value must end after the last one).
/// Returns the numbers and where parsing stopped.
fn ints<const N: usize>(v: &[u8], last_ends: bool) -> Option<([i64; N], usize)> {
    let mut out = [0i64; N];
    let mut i = 0;
    for (k, slot) in out.iter_mut().enumerate() {
        *slot = int_at(v, &mut i)?;
        if k + 1 < N || !last_ends {
            if v.get(i) != Some(&b':') {
                return None;
            }
            i += 1;
        } else if i != v.len() {
            return None;
        }
    }
    Some((out, i))
}

/// What the sold-out fast path reads from `B`: true when the value begins
/// `0:0:` (nothing available, nothing reserved: the sale is over), false
/// for anything else, which the full path parses (and refuses if corrupt).
pub fn finished(v: &[u8]) -> bool {
    v.len() > 4 && v[..4] == *b"0:0:"
}

impl Stock {
    /// Returns a new stock of `total` units.
    pub fn new(total: i64, limit: i64, lease_ms: i64, expires: i64) -> Stock {
        Stock {
            available: total,
            reserved: 0,
            sold: 0,
            total,
            limit,
            lease_ms,
            expires,
            mark: None,
        }
    }

    /// Parses the stored record; None for anything STOCK never writes
    /// (the law broken included).
    pub fn parse(v: &[u8]) -> Option<Stock> {
        Stock::parse_split(v).map(|(s, _)| s)
    }

    /// [`Stock::parse`], also returning where the record's tail begins:
    /// the ':' before `sold`, after which nothing a reservation or a
    /// lapsed lease changes is written ([`Stock::rewrite`]).
    pub fn parse_split(v: &[u8]) -> Option<(Stock, usize)> {
        let ([available, reserved], tail) = ints_prefix::<2>(v)?;
        let mut at = tail;
        let sold = field(v, &mut at)?;
        let total = field(v, &mut at)?;
        let limit = field(v, &mut at)?;
        let lease_ms = field(v, &mut at)?;
        let expires = field(v, &mut at)?;
        let mark = if at == v.len() {
            None
        } else {
            let n = field(v, &mut at)?;
            let i = field(v, &mut at)?;
            let dry = field(v, &mut at)?;
            if at != v.len() || !(1..=MAX_MARK_SHARDS).contains(&n) || i >= n || dry > 1 {
                return None;
            }
            Some(Mark {
                n: n as u32,
                i: i as u32,
                dry: dry == 1,
            })
        };
        let s = Stock {
            available,
            reserved,
            sold,
            total,
            limit,
            lease_ms,
            expires,
            mark,
        };
        let ok = s.conserved() && (1..=MAX_LEASE_MS).contains(&lease_ms);
        ok.then_some((s, tail))
    }

    /// Writes the stored record of this stock into `out` (cleared first),
    /// given the record `old_raw` it was parsed from as `old` with its tail
    /// at `tail` ([`Stock::parse_split`]): when only `available` and
    /// `reserved` changed (a reservation, a lapsed lease), the two counts
    /// and the old record's tail, copied; else the whole record, as
    /// [`Stock::write`]. The bytes are the same either way.
    pub fn rewrite(&self, old: &Stock, old_raw: &[u8], tail: usize, out: &mut Vec<u8>) {
        let same_tail = self.sold == old.sold
            && self.total == old.total
            && self.limit == old.limit
            && self.lease_ms == old.lease_ms
            && self.expires == old.expires
            && self.mark == old.mark;
        if !same_tail || tail > old_raw.len() {
            return self.write(out);
        }
        out.clear();
        let mut b = itoa::Buffer::new();
        out.extend_from_slice(b.format(self.available).as_bytes());
        out.push(b':');
        out.extend_from_slice(b.format(self.reserved).as_bytes());
        out.extend_from_slice(&old_raw[tail..]);
    }

    /// Returns true when no count is negative and
    /// `available + reserved + sold = total`.
    pub fn conserved(&self) -> bool {
        self.available >= 0
            && self.reserved >= 0
            && self.sold >= 0
            && self.total >= 0
            && self
                .available
                .checked_add(self.reserved)
                .and_then(|x| x.checked_add(self.sold))
                == Some(self.total)
    }

    /// Writes the stored record into `out` (cleared first).
    pub fn write(&self, out: &mut Vec<u8>) {
        out.clear();
        let mut b = itoa::Buffer::new();
        let vals = [
            self.available,
            self.reserved,
            self.sold,
            self.total,
            self.limit,
            self.lease_ms,
            self.expires,
        ];
        for (k, v) in vals.iter().enumerate() {
            if k > 0 {
                out.push(b':');
            }
            out.extend_from_slice(b.format(*v).as_bytes());
        }
        if let Some(m) = self.mark {
            for v in [m.n, m.i, u32::from(m.dry)] {
                out.push(b':');
                out.extend_from_slice(b.format(v).as_bytes());
            }
        }
    }

    /// Returns the stored record.
    pub fn format(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(48);
        self.write(&mut out);
        out
    }

    /// Takes back the `qty` units of a reservation (released or lapsed).
    /// None when fewer are reserved (the record does not match the
    /// ledger).
    pub fn give_back(&mut self, qty: i64) -> Option<()> {
        if qty <= 0 || self.reserved < qty {
            return None;
        }
        self.reserved -= qty;
        self.available += qty;
        Some(())
    }

    /// Turns `qty` reserved units into sold ones; None when fewer are
    /// reserved.
    pub fn sell(&mut self, qty: i64) -> Option<()> {
        if qty <= 0 || self.reserved < qty {
            return None;
        }
        self.reserved -= qty;
        self.sold += qty;
        Some(())
    }
}

/// An order's state, the first byte of its record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// `R`: units reserved, lease running (or lapsed, not yet returned).
    Reserved,
    /// `S`: confirmed, the units are sold.
    Sold,
    /// `X`: released, the units went back.
    Released,
    /// `E`: the lease lapsed and the units went back.
    Expired,
}

impl State {
    fn byte(self) -> u8 {
        match self {
            State::Reserved => b'R',
            State::Sold => b'S',
            State::Released => b'X',
            State::Expired => b'E',
        }
    }

    fn from_byte(b: u8) -> Option<State> {
        Some(match b {
            b'R' => State::Reserved,
            b'S' => State::Sold,
            b'X' => State::Released,
            b'E' => State::Expired,
            _ => return None,
        })
    }
}

/// An order record, a field of `B:orders`:
/// `<state>:<quantity>:<lease-end>:<left>:<user>`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Order {
    pub state: State,
    /// Units the order reserved.
    pub qty: i64,
    /// The instant its lease ends.
    pub lease_end: i64,
    /// The units its reservation left available (its reply).
    pub left: i64,
}

impl Order {
    /// Parses a stored record; returns it and where the user starts. None
    /// for anything STOCK never writes.
    pub fn parse(v: &[u8]) -> Option<(Order, usize)> {
        if v.len() < 2 || v[1] != b':' {
            return None;
        }
        let state = State::from_byte(v[0])?;
        let ([qty, lease_end, left], at) = ints::<3>(&v[2..], false)?;
        let at = at + 2;
        if qty < 1 || at >= v.len() {
            return None;
        }
        Some((
            Order {
                state,
                qty,
                lease_end,
                left,
            },
            at,
        ))
    }

    /// Writes the stored record for `user` into `out` (cleared first).
    pub fn write(&self, user: &[u8], out: &mut Vec<u8>) {
        out.clear();
        out.push(self.state.byte());
        let mut b = itoa::Buffer::new();
        for v in [self.qty, self.lease_end, self.left] {
            out.push(b':');
            out.extend_from_slice(b.format(v).as_bytes());
        }
        out.push(b':');
        out.extend_from_slice(user);
    }

    /// Returns this record with another state.
    pub fn with(&self, state: State) -> Order {
        Order { state, ..*self }
    }

    /// Returns true while the lease is alive at `now`.
    pub fn alive(&self, now: i64) -> bool {
        now < self.lease_end
    }
}

/// Parses a user's count in `B:users`: a positive canonical integer.
pub fn parse_held(v: &[u8]) -> Option<i64> {
    let ([n], _) = ints::<1>(v, true)?;
    (n > 0).then_some(n)
}

/// A reservation's outcome.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reserve {
    /// Reserved: the units left, the lease end.
    Ok { left: i64, lease_end: i64 },
    /// Fewer than the quantity available: the units available.
    SoldOut { left: i64 },
    /// The user would pass the limit: the units available.
    Limit { left: i64 },
}

/// Decides a new reservation of `qty` units for a user holding `held`,
/// at `now`, and applies it to `stock` when it is OK. SOLDOUT comes before
/// LIMIT: a user over the limit of a sold-out stock hears SOLDOUT.
pub fn reserve(stock: &mut Stock, held: i64, qty: i64, now: i64) -> Reserve {
    if stock.available < qty {
        return Reserve::SoldOut {
            left: stock.available,
        };
    }
    if stock.limit > 0 && held.saturating_add(qty) > stock.limit {
        return Reserve::Limit {
            left: stock.available,
        };
    }
    stock.available -= qty;
    stock.reserved += qty;
    Reserve::Ok {
        left: stock.available,
        lease_end: now.saturating_add(stock.lease_ms),
    }
}

/// Why a restock is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RestockError {
    /// A removal larger than the available units.
    NotEnough,
    /// The total would pass [`MAX_INT`].
    Overflow,
}

/// Adds `delta` units (or removes −delta available units) to `stock`.
pub fn restock(stock: &mut Stock, delta: i64) -> Result<(), RestockError> {
    if delta < 0 && stock.available < -delta {
        return Err(RestockError::NotEnough);
    }
    if delta > 0 && stock.total > MAX_INT - delta {
        return Err(RestockError::Overflow);
    }
    stock.available += delta;
    stock.total += delta;
    Ok(())
}

/// Why a confirmation is refused (nothing changes).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConfirmError {
    LeaseExpired,
    Released,
}

/// What CONFIRM does with an order at `now`: `Ok(true)` sell it,
/// `Ok(false)` nothing (already confirmed), or a refusal.
pub fn confirm(order: &Order, now: i64) -> Result<bool, ConfirmError> {
    match order.state {
        State::Sold => Ok(false),
        State::Released => Err(ConfirmError::Released),
        State::Expired => Err(ConfirmError::LeaseExpired),
        State::Reserved if !order.alive(now) => Err(ConfirmError::LeaseExpired),
        State::Reserved => Ok(true),
    }
}

// ---------------------------------------------------------------------
// The spread form: a pool on shard 0, shards refilled (and handing units
// back) by transfers that are opened on the pool, applied on the shard
// and settled on the pool, each step idempotent on the transfer id.
// ---------------------------------------------------------------------

/// The pool record, the value of `K_0:pool`:
/// `<free>:<transit>:<total>:<expires>`.
///
/// - `free`: units in the pool (not allotted to any shard);
/// - `transit`: units of refills opened and not yet settled (they left
///   the pool; the shard may or may not have applied them yet);
/// - `total`: the units of the whole SKU;
/// - `expires`: the instant every key expires (0: never).
///
/// The pool alone can check only `free ≤ total`: `transit` counts a
/// refill until it is settled, so a refill applied on its shard and not
/// yet settled is in `transit` and in the shard's total at once (and its
/// units may even have been handed back and granted again). The law
/// across shards counts in-transit units by the ledgers: a refill is in
/// transit until its shard applied it, a handback from when its shard
/// applied it until it is settled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pool {
    pub free: i64,
    pub transit: i64,
    pub total: i64,
    pub expires: i64,
}

impl Pool {
    pub fn new(total: i64, expires: i64) -> Pool {
        Pool {
            free: total,
            transit: 0,
            total,
            expires,
        }
    }

    /// Parses the stored record; None for anything STOCK never writes.
    pub fn parse(v: &[u8]) -> Option<Pool> {
        let ([free, transit, total, expires], _) = ints::<4>(v, true)?;
        let p = Pool {
            free,
            transit,
            total,
            expires,
        };
        (free <= total).then_some(p)
    }

    pub fn format(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32);
        let mut b = itoa::Buffer::new();
        for (k, v) in [self.free, self.transit, self.total, self.expires]
            .iter()
            .enumerate()
        {
            if k > 0 {
                out.push(b':');
            }
            out.extend_from_slice(b.format(*v).as_bytes());
        }
        out
    }
}

/// A transfer's direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// `R`: pool → shard.
    Refill,
    /// `H`: shard → pool.
    Handback,
}

/// A transfer record on the pool, a field of `K_0:transfers`:
/// `<O|C>:<R|H>:<shard>:<asked>:<units>`.
///
/// - `open`: `O` until settled, then `C`;
/// - `asked`: the units asked for (a refill's or a handback's size);
/// - `units`: a refill's granted units (taken from the pool when it was
///   opened); a handback's units taken off the shard (0 until settled).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transfer {
    pub open: bool,
    pub dir: Dir,
    pub shard: u32,
    pub asked: i64,
    pub units: i64,
}

impl Transfer {
    pub fn parse(v: &[u8]) -> Option<Transfer> {
        if v.len() < 4 || v[1] != b':' || v[3] != b':' {
            return None;
        }
        let open = match v[0] {
            b'O' => true,
            b'C' => false,
            _ => return None,
        };
        let dir = match v[2] {
            b'R' => Dir::Refill,
            b'H' => Dir::Handback,
            _ => return None,
        };
        let ([shard, asked, units], _) = ints::<3>(&v[4..], true)?;
        let t = Transfer {
            open,
            dir,
            shard: u32::try_from(shard).ok()?,
            asked,
            units,
        };
        let ok = asked >= 1
            && units <= asked
            && match dir {
                Dir::Refill => units >= 1,
                Dir::Handback => !open || units == 0,
            };
        ok.then_some(t)
    }

    pub fn format(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32);
        out.push(if self.open { b'O' } else { b'C' });
        out.push(b':');
        out.push(match self.dir {
            Dir::Refill => b'R',
            Dir::Handback => b'H',
        });
        let mut b = itoa::Buffer::new();
        for v in [i64::from(self.shard), self.asked, self.units] {
            out.push(b':');
            out.extend_from_slice(b.format(v).as_bytes());
        }
        out
    }

    /// The signed units the transfer moves into its shard: a refill's
    /// granted units, minus a handback's (what APPLY replies).
    pub fn signed(&self) -> i64 {
        match self.dir {
            Dir::Refill => self.units,
            Dir::Handback => -self.units,
        }
    }
}

/// What opening a transfer does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Open {
    /// A new transfer: write the record (and the pool when it changed).
    New(Transfer),
    /// The id is known with the same shard and size: its record, unchanged.
    Known(Transfer),
    /// A refill of an empty pool: nothing written.
    Dry,
}

/// Why a transfer step is refused (nothing written).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TransferError {
    /// The id is known with another shard, direction or size.
    Mismatch,
    /// SETTLE with units the shard cannot have applied.
    BadUnits,
    /// A count would pass [`MAX_INT`].
    Overflow,
}

/// Opens transfer `known` (its record when the id exists) for `shard`,
/// `delta` units (> 0: a refill of up to `delta` from the pool; < 0: a
/// handback of up to −delta). A refill takes its units off the pool now
/// (`free` → `transit`); a handback changes the pool only when settled.
pub fn open_transfer(
    pool: &mut Pool,
    known: Option<Transfer>,
    shard: u32,
    delta: i64,
) -> Result<Open, TransferError> {
    let dir = if delta > 0 {
        Dir::Refill
    } else {
        Dir::Handback
    };
    let asked = delta.abs();
    if let Some(t) = known {
        if t.shard != shard || t.dir != dir || t.asked != asked {
            return Err(TransferError::Mismatch);
        }
        return Ok(Open::Known(t));
    }
    match dir {
        Dir::Refill => {
            let g = asked.min(pool.free);
            if g == 0 {
                return Ok(Open::Dry);
            }
            pool.free -= g;
            pool.transit += g;
            Ok(Open::New(Transfer {
                open: true,
                dir,
                shard,
                asked,
                units: g,
            }))
        }
        Dir::Handback => Ok(Open::New(Transfer {
            open: true,
            dir,
            shard,
            asked,
            units: 0,
        })),
    }
}

/// Marks a shard dry (APPLY with delta 0: the pool had nothing left for
/// it); returns true when that changed the record (false for a stock
/// that is no shard, or one marked already).
pub fn mark_dry(stock: &mut Stock) -> bool {
    match stock.mark.as_mut() {
        Some(m) if !m.dry => {
            m.dry = true;
            true
        }
        _ => false,
    }
}

/// Applies a transfer of `delta` units on a shard's stock, once per id
/// (`known`: the units recorded when it was applied before): > 0 adds
/// them (the shard's `total` and `available`); < 0 takes up to −delta
/// available units off. Returns the signed units applied and whether
/// anything is to be written.
pub fn apply_transfer(
    stock: &mut Stock,
    known: Option<i64>,
    delta: i64,
) -> Result<(i64, bool), TransferError> {
    if let Some(a) = known {
        // A replay: the same sign and at most the size asked.
        let same = if delta > 0 {
            a == delta
        } else {
            a <= 0 && -a <= -delta
        };
        return if same {
            Ok((a, false))
        } else {
            Err(TransferError::Mismatch)
        };
    }
    if delta > 0 {
        if stock.total > MAX_INT - delta {
            return Err(TransferError::Overflow);
        }
        stock.available += delta;
        stock.total += delta;
        // Units came: the shard's SOLDOUT is no longer the SKU's.
        if let Some(m) = stock.mark.as_mut() {
            m.dry = false;
        }
        Ok((delta, true))
    } else {
        let t = (-delta).min(stock.available);
        stock.available -= t;
        stock.total -= t;
        Ok((-t, true))
    }
}

/// Settles transfer `t` on the pool with the signed units its shard
/// applied (APPLY's reply): a refill's units leave `transit`; a
/// handback's enter `free`. Returns the record after, or None when it was
/// settled before (a replay: nothing to write).
pub fn settle_transfer(
    pool: &mut Pool,
    t: Transfer,
    applied: i64,
) -> Result<Option<Transfer>, TransferError> {
    if !t.open {
        return Ok(None);
    }
    match t.dir {
        Dir::Refill => {
            if applied != t.units || pool.transit < t.units {
                return Err(TransferError::BadUnits);
            }
            pool.transit -= t.units;
            Ok(Some(Transfer { open: false, ..t }))
        }
        Dir::Handback => {
            if applied > 0 || -applied > t.asked {
                return Err(TransferError::BadUnits);
            }
            let units = -applied;
            if pool.free + units > pool.total {
                return Err(TransferError::BadUnits);
            }
            pool.free += units;
            Ok(Some(Transfer {
                open: false,
                units,
                ..t
            }))
        }
    }
}

/// Parses a shard's record of an applied transfer (`K_i:transfers`): a
/// canonical signed integer.
pub fn parse_applied(v: &[u8]) -> Option<i64> {
    let (neg, digits) = match v.first() {
        Some(b'-') => (true, &v[1..]),
        _ => (false, v),
    };
    let ([n], _) = ints::<1>(digits, true)?;
    if neg {
        (n > 0).then_some(-n)
    } else {
        Some(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn stock_record_round_trips() {
        let s = Stock::new(10, 2, 60_000, 0);
        assert_eq!(s.format(), b"10:0:0:10:2:60000:0");
        assert_eq!(Stock::parse(&s.format()), Some(s));
        let mut k = Stock::new(0, 2, 60_000, 0);
        k.mark = Some(Mark {
            n: 8,
            i: 3,
            dry: false,
        });
        assert_eq!(k.format(), b"0:0:0:0:2:60000:0:8:3:0");
        assert_eq!(Stock::parse(&k.format()), Some(k));
        assert!(mark_dry(&mut k));
        assert!(!mark_dry(&mut k));
        assert_eq!(k.format(), b"0:0:0:0:2:60000:0:8:3:1");
        assert_eq!(Stock::parse(&k.format()), Some(k));
        // A refill clears the mark; a handback leaves it.
        assert_eq!(apply_transfer(&mut k, None, -1), Ok((0, true)));
        assert!(k.mark.unwrap().dry);
        assert_eq!(apply_transfer(&mut k, None, 4), Ok((4, true)));
        assert_eq!(k.format(), b"4:0:0:4:2:60000:0:8:3:0");
        assert!(!mark_dry(&mut Stock::new(1, 0, 1, 0)));
        // A shard that still holds units, fewer than its buyer asked for,
        // is marked too: that buyer (2 units beside 1) hears SOLDOUT, as on
        // a single-slot stock, instead of asking for refills forever; a
        // buyer of 1 still gets the unit (the mark counts only where the
        // shard lacks the units).
        let mut short = Stock::new(1, 0, 1, 0);
        short.mark = Some(Mark {
            n: 2,
            i: 1,
            dry: false,
        });
        assert!(mark_dry(&mut short));
        assert_eq!(short.available, 1);
        // The mark alone, as the sold-out fast path reads it: the parsed
        // record's own, and none on a record without one.
        for (n, i, dry) in [
            (1, 0, false),
            (1024, 1023, true),
            (8, 3, false),
            (10, 9, true),
        ] {
            let mark = Some(Mark { n, i, dry });
            for s in [
                Stock {
                    mark,
                    ..Stock::new(0, 0, 1, 0)
                },
                Stock {
                    mark,
                    ..Stock::new(MAX_INT, 7, MAX_LEASE_MS, MAX_TIME_MS)
                },
            ] {
                assert_eq!(Mark::read(&s.format()), mark);
                assert_eq!(Mark::read(&Stock { mark: None, ..s }.format()), None);
            }
        }
        assert_eq!(
            Mark::read(b"0:0:0:0:2:60000:0:8:3:1"),
            Some(Mark {
                n: 8,
                i: 3,
                dry: true
            })
        );
        for bad in [
            &b"0:0:5:5:0:60000:0"[..],
            b"0:0:0:0:2:60000:0:8:3:1:",
            b"0:0:0:0:2:60000:0:8:8:1",
            b"0:0:0:0:2:60000:0:8:3:2",
            b"0:0:0:0:2:60000:0:0:0:0",
            b"0:0:0:0:2:60000:0:8:03:1",
            b"0:0:0:0:2:60000:0:8::1",
            b"0:0:0:0:2:60000:0:8:3:",
            b"0:0:0:0:2:60000:0:8:3:1x",
            b"0:0:0:0:2:60000:0:8:3:1:0",
            b":::::::::",
        ] {
            assert_eq!(Mark::read(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn rewrite_writes_the_bytes_write_does() {
        let marks = [
            None,
            Some(Mark {
                n: 8,
                i: 3,
                dry: false,
            }),
            Some(Mark {
                n: 1024,
                i: 1023,
                dry: true,
            }),
        ];
        let counts = [0, 1, 9, 10, 99, 1000, 999_999_999_999, MAX_INT];
        for mark in marks {
            for &a in &counts {
                for &r in &counts[..4] {
                    let Some(total) = a.checked_add(r).and_then(|t| t.checked_add(7)) else {
                        continue;
                    };
                    if total > MAX_INT {
                        continue;
                    }
                    let old = Stock {
                        available: a,
                        reserved: r,
                        sold: 7,
                        total,
                        limit: 3,
                        lease_ms: 900_000,
                        expires: 1_700_000_000_000,
                        mark,
                    };
                    let raw = old.format();
                    let (parsed, tail) = Stock::parse_split(&raw).unwrap();
                    assert_eq!(parsed, old);
                    assert_eq!(raw[tail], b':');
                    let mut changed = [old; 4];
                    // A reservation, a lapsed lease, a sale, a restock.
                    if a > 0 {
                        changed[0].available -= 1;
                        changed[0].reserved += 1;
                    }
                    if r > 0 {
                        changed[1].reserved -= 1;
                        changed[1].available += 1;
                        changed[2].reserved -= 1;
                        changed[2].sold += 1;
                    }
                    if total < MAX_INT {
                        changed[3].available += 1;
                        changed[3].total += 1;
                    }
                    for next in changed {
                        let mut out = vec![b'x'; 3];
                        next.rewrite(&old, &raw, tail, &mut out);
                        assert_eq!(out, next.format(), "{next:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn stock_record_refuses_what_stock_never_writes() {
        for bad in [
            &b""[..],
            b"1:0:0:1:0:60000",
            b"1:0:0:1:0:60000:0:",
            b"1:0:0:2:0:60000:0",
            b"01:0:0:1:0:60000:0",
            b"-1:1:0:0:0:60000:0",
            b"1:0:0:1:0:0:0",
            b"1:0:0:1:0:60000:x",
            b"9007199254740992:0:0:9007199254740992:0:1:0",
            // A shard's mark: n from 1 to 1024, i below n, dry 0 or 1.
            b"0:0:0:0:0:60000:0:8:3",
            b"0:0:0:0:0:60000:0:8:3:0:",
            b"0:0:0:0:0:60000:0:0:0:0",
            b"0:0:0:0:0:60000:0:1025:3:0",
            b"0:0:0:0:0:60000:0:8:8:0",
            b"0:0:0:0:0:60000:0:8:3:2",
            b"0:0:0:0:0:60000:0:08:3:0",
            b"0:0:0:0:0:60000:0x8:3:0",
        ] {
            assert_eq!(Stock::parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn finished_reads_only_the_first_two_counts() {
        assert!(finished(b"0:0:5:5:0:60000:0"));
        assert!(!finished(b"0:1:4:5:0:60000:0"));
        assert!(!finished(b"1:0:4:5:0:60000:0"));
        assert!(!finished(b"0:0:"));
        assert!(!finished(b"10:0:0:10:0:1:0"));
    }

    #[test]
    fn order_record_round_trips_with_any_user() {
        let o = Order {
            state: State::Reserved,
            qty: 2,
            lease_end: 1_767_225_660_000,
            left: 1,
        };
        let mut buf = Vec::new();
        o.write(b"al:ice", &mut buf);
        assert_eq!(buf, b"R:2:1767225660000:1:al:ice");
        let (p, at) = Order::parse(&buf).unwrap();
        assert_eq!(p, o);
        assert_eq!(&buf[at..], b"al:ice");
        for bad in [
            &b"R:2:1:1:"[..],
            b"Q:2:1:1:u",
            b"R:0:1:1:u",
            b"R:2:1:u",
            b"R2:1:1:u",
        ] {
            assert_eq!(Order::parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn reserve_says_soldout_before_limit() {
        let mut s = Stock::new(3, 2, 1000, 0);
        assert_eq!(
            reserve(&mut s, 0, 2, 5),
            Reserve::Ok {
                left: 1,
                lease_end: 1005
            }
        );
        assert_eq!(reserve(&mut s, 2, 1, 6), Reserve::Limit { left: 1 });
        assert_eq!(reserve(&mut s, 2, 2, 6), Reserve::SoldOut { left: 1 });
        assert!(s.conserved());
        assert_eq!((s.available, s.reserved), (1, 2));
    }

    #[test]
    fn confirm_refuses_a_lapsed_or_released_order() {
        let o = Order {
            state: State::Reserved,
            qty: 1,
            lease_end: 100,
            left: 0,
        };
        assert_eq!(confirm(&o, 99), Ok(true));
        assert_eq!(confirm(&o, 100), Err(ConfirmError::LeaseExpired));
        assert_eq!(confirm(&o.with(State::Sold), 200), Ok(false));
        assert_eq!(
            confirm(&o.with(State::Expired), 50),
            Err(ConfirmError::LeaseExpired)
        );
        assert_eq!(
            confirm(&o.with(State::Released), 50),
            Err(ConfirmError::Released)
        );
    }

    #[test]
    fn restock_removes_only_available_units() {
        let mut s = Stock::new(3, 0, 1000, 0);
        reserve(&mut s, 0, 2, 0);
        assert_eq!(restock(&mut s, -2), Err(RestockError::NotEnough));
        assert_eq!(restock(&mut s, -1), Ok(()));
        assert_eq!((s.available, s.total), (0, 2));
        assert_eq!(restock(&mut s, MAX_INT), Err(RestockError::Overflow));
        assert!(s.conserved());
    }

    /// A small deterministic generator (no dependency needed).
    struct Lcg(u64);
    impl Lcg {
        fn next(&mut self, n: u64) -> u64 {
            self.0 = self
                .0
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (self.0 >> 33) % n
        }
    }

    /// The conservation law as a property: random reservations,
    /// confirmations, releases, lapses and restocks over a model ledger
    /// (the command layer's data, in maps), checked after every step: the
    /// law holds, the ledger's sums equal the counts, no user passes the
    /// limit, and every order is returned at most once.
    #[test]
    fn conservation_holds_under_random_operations() {
        for seed in 0..200u64 {
            let mut rng = Lcg(seed);
            let limit = rng.next(4) as i64; // 0: no limit
            let mut s = Stock::new(rng.next(20) as i64, limit, 50, 0);
            let mut orders: HashMap<u64, (Order, u64)> = HashMap::new();
            let mut held: HashMap<u64, i64> = HashMap::new();
            let mut now = 0i64;
            let mut next_order = 0u64;
            for _ in 0..400 {
                now += rng.next(20) as i64;
                match rng.next(6) {
                    0 | 1 => {
                        let user = rng.next(5);
                        let qty = 1 + rng.next(3) as i64;
                        let h = held.get(&user).copied().unwrap_or(0);
                        if let Reserve::Ok { left, lease_end } = reserve(&mut s, h, qty, now) {
                            orders.insert(
                                next_order,
                                (
                                    Order {
                                        state: State::Reserved,
                                        qty,
                                        lease_end,
                                        left,
                                    },
                                    user,
                                ),
                            );
                            *held.entry(user).or_default() += qty;
                        }
                        next_order += 1;
                    }
                    2 if next_order > 0 => {
                        let id = rng.next(next_order);
                        if let Some((o, _)) = orders.get_mut(&id) {
                            if confirm(o, now) == Ok(true) {
                                s.sell(o.qty).unwrap();
                                *o = o.with(State::Sold);
                            }
                        }
                    }
                    3 if next_order > 0 => {
                        let id = rng.next(next_order);
                        if let Some((o, user)) = orders.get_mut(&id) {
                            if o.state == State::Reserved {
                                s.give_back(o.qty).unwrap();
                                *held.get_mut(user).unwrap() -= o.qty;
                                *o = o.with(State::Released);
                            }
                        }
                    }
                    4 => {
                        // The lapsed leases a write returns (all of them
                        // here; the handlers cap it at MAX_RECLAIM).
                        for (o, user) in orders.values_mut() {
                            if o.state == State::Reserved && !o.alive(now) {
                                s.give_back(o.qty).unwrap();
                                *held.get_mut(user).unwrap() -= o.qty;
                                *o = o.with(State::Expired);
                            }
                        }
                    }
                    _ => {
                        let delta = rng.next(7) as i64 - 3;
                        let before = s;
                        if restock(&mut s, delta).is_err() {
                            assert_eq!(s, before);
                        }
                    }
                }
                assert!(s.conserved(), "seed {seed}: {s:?}");
                let sum = |st: State| -> i64 {
                    orders
                        .values()
                        .filter(|(o, _)| o.state == st)
                        .map(|(o, _)| o.qty)
                        .sum()
                };
                assert_eq!(sum(State::Reserved), s.reserved, "seed {seed}");
                assert_eq!(sum(State::Sold), s.sold, "seed {seed}");
                for (user, h) in &held {
                    assert!(*h >= 0);
                    if limit > 0 {
                        assert!(*h <= limit, "seed {seed}: user {user} holds {h}");
                    }
                    let own: i64 = orders
                        .values()
                        .filter(|(o, u)| {
                            u == user && matches!(o.state, State::Reserved | State::Sold)
                        })
                        .map(|(o, _)| o.qty)
                        .sum();
                    assert_eq!(own, *h, "seed {seed}");
                }
            }
        }
    }

    #[test]
    fn pool_and_transfer_records_round_trip() {
        let p = Pool::new(10_000, 0);
        assert_eq!(p.format(), b"10000:0:10000:0");
        assert_eq!(Pool::parse(&p.format()), Some(p));
        for bad in [&b"11:0:10:0"[..], b"1:0:1", b"-1:0:1:0", b"1:0:1:0:"] {
            assert_eq!(Pool::parse(bad), None, "{}", String::from_utf8_lossy(bad));
        }
        let t = Transfer {
            open: true,
            dir: Dir::Refill,
            shard: 3,
            asked: 50,
            units: 20,
        };
        assert_eq!(t.format(), b"O:R:3:50:20");
        assert_eq!(Transfer::parse(&t.format()), Some(t));
        for bad in [
            &b"O:R:3:50:0"[..],
            b"O:H:3:50:2",
            b"C:R:3:50:51",
            b"X:R:3:50:20",
            b"O:R:3:50",
            b"O:R:-3:50:20",
        ] {
            assert_eq!(
                Transfer::parse(bad),
                None,
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(parse_applied(b"-7"), Some(-7));
        assert_eq!(parse_applied(b"0"), Some(0));
        assert_eq!(parse_applied(b"12"), Some(12));
        for bad in [&b"-0"[..], b"+1", b"", b"01", b"-"] {
            assert_eq!(parse_applied(bad), None);
        }
    }

    #[test]
    fn a_refill_is_granted_once_applied_once_settled_once() {
        let mut pool = Pool::new(30, 0);
        let Ok(Open::New(t)) = open_transfer(&mut pool, None, 1, 20) else {
            panic!()
        };
        assert_eq!((pool.free, pool.transit, t.units), (10, 20, 20));
        // Opening again: the record, nothing taken twice; other sizes refused.
        assert_eq!(open_transfer(&mut pool, Some(t), 1, 20), Ok(Open::Known(t)));
        assert_eq!(
            open_transfer(&mut pool, Some(t), 2, 20),
            Err(TransferError::Mismatch)
        );
        assert_eq!((pool.free, pool.transit), (10, 20));
        let mut s = Stock::new(0, 0, 1000, 0);
        assert_eq!(apply_transfer(&mut s, None, 20), Ok((20, true)));
        assert_eq!(apply_transfer(&mut s, Some(20), 20), Ok((20, false)));
        assert_eq!((s.available, s.total), (20, 20));
        assert_eq!(
            settle_transfer(&mut pool, t, 19),
            Err(TransferError::BadUnits)
        );
        let closed = settle_transfer(&mut pool, t, 20).unwrap().unwrap();
        assert!(!closed.open);
        assert_eq!(settle_transfer(&mut pool, closed, 20), Ok(None));
        assert_eq!((pool.free, pool.transit), (10, 0));
        // A bigger ask than the pool holds gets what is there; then dry.
        let Ok(Open::New(t2)) = open_transfer(&mut pool, None, 0, 50) else {
            panic!()
        };
        assert_eq!(t2.units, 10);
        assert_eq!(open_transfer(&mut pool, None, 0, 5), Ok(Open::Dry));
    }

    #[test]
    fn a_handback_takes_only_available_units() {
        let mut s = Stock::new(5, 0, 1000, 0);
        reserve(&mut s, 0, 3, 0);
        let mut pool = Pool {
            free: 0,
            transit: 0,
            total: 5,
            expires: 0,
        };
        let Ok(Open::New(t)) = open_transfer(&mut pool, None, 2, -4) else {
            panic!()
        };
        assert_eq!(pool.free, 0);
        assert_eq!(apply_transfer(&mut s, None, -4), Ok((-2, true)));
        assert_eq!((s.available, s.reserved, s.total), (0, 3, 3));
        assert_eq!(apply_transfer(&mut s, Some(-2), -4), Ok((-2, false)));
        assert_eq!(
            settle_transfer(&mut pool, t, -5),
            Err(TransferError::BadUnits)
        );
        let c = settle_transfer(&mut pool, t, -2).unwrap().unwrap();
        assert_eq!((c.units, pool.free), (2, 2));
        assert!(s.conserved());
    }

    /// The cross-shard law as a property: a pool and `n` shards, random
    /// reservations, confirmations, releases and lapses on the shards,
    /// refills and handbacks whose three steps run in any interleaving
    /// (a dance can stop after any step and be finished later by a
    /// replay), and replays of any step of any transfer. After every
    /// step: each shard keeps its own law, and
    /// `free + in-transit + Σ shards total = total`, where in-transit is
    /// an open refill not yet applied on its shard (granted units) or an
    /// open handback applied on its shard (units taken); so nothing is
    /// ever sold twice (Σ sold + reserved ≤ total), and once every
    /// transfer is settled, `free + transit` on the pool and the shards'
    /// totals add up to the SKU exactly.
    #[test]
    fn the_cross_shard_law_holds_under_random_interleavings() {
        for seed in 0..300u64 {
            let mut rng = Lcg(seed ^ 0x5eed);
            let n = 1 + rng.next(4) as usize;
            let total = rng.next(60) as i64;
            let mut pool = Pool::new(total, 0);
            let mut shards: Vec<Stock> = (0..n).map(|_| Stock::new(0, 0, 30, 0)).collect();
            // Per shard: live orders (qty, lease end).
            let mut orders: Vec<Vec<(i64, i64)>> = vec![Vec::new(); n];
            let mut ledger: Vec<(Transfer, i64)> = Vec::new(); // pool records, asked delta
            let mut applied: Vec<HashMap<usize, i64>> = vec![HashMap::new(); n];
            let mut now = 0i64;
            for step in 0..500 {
                now += rng.next(5) as i64;
                let i = rng.next(n as u64) as usize;
                match rng.next(8) {
                    0 | 1 => {
                        let qty = 1 + rng.next(3) as i64;
                        if let Reserve::Ok { lease_end, .. } = reserve(&mut shards[i], 0, qty, now)
                        {
                            orders[i].push((qty, lease_end));
                        }
                    }
                    2 if !orders[i].is_empty() => {
                        let k = rng.next(orders[i].len() as u64) as usize;
                        let (qty, end) = orders[i].swap_remove(k);
                        if end > now {
                            shards[i].sell(qty).unwrap();
                        } else {
                            shards[i].give_back(qty).unwrap();
                        }
                    }
                    3 if !orders[i].is_empty() => {
                        let k = rng.next(orders[i].len() as u64) as usize;
                        let (qty, _) = orders[i].swap_remove(k);
                        shards[i].give_back(qty).unwrap();
                    }
                    4 => {
                        // Open a new transfer (refill or handback).
                        let delta = rng.next(12) as i64 - 4;
                        let delta = if delta == 0 { 1 } else { delta };
                        match open_transfer(&mut pool, None, i as u32, delta).unwrap() {
                            Open::New(t) => ledger.push((t, delta)),
                            Open::Dry => assert_eq!(pool.free, 0),
                            Open::Known(_) => unreachable!(),
                        }
                    }
                    _ if !ledger.is_empty() => {
                        // Any step of any transfer, again or for the first time.
                        let k = rng.next(ledger.len() as u64) as usize;
                        let (t, delta) = ledger[k];
                        let s = t.shard as usize;
                        let before = (pool, shards[s]);
                        match rng.next(3) {
                            0 => {
                                assert_eq!(
                                    open_transfer(&mut pool, Some(t), t.shard, delta),
                                    Ok(Open::Known(t))
                                );
                                assert_eq!(before.0, pool);
                            }
                            1 if t.open => {
                                // The shard step, once per id: a refill's
                                // granted units, a handback's size asked.
                                let d = match t.dir {
                                    Dir::Refill => t.units,
                                    Dir::Handback => delta,
                                };
                                let known = applied[s].get(&k).copied();
                                let (a, write) = apply_transfer(&mut shards[s], known, d).unwrap();
                                assert_eq!(write, known.is_none());
                                applied[s].insert(k, a);
                            }
                            _ => {
                                if let Some(&a) = applied[s].get(&k) {
                                    let after = settle_transfer(&mut pool, t, a).unwrap();
                                    match after {
                                        Some(c) => ledger[k].0 = c,
                                        None => assert_eq!(before.0, pool),
                                    }
                                }
                            }
                        }
                    }
                    _ => {}
                }
                // The law.
                let in_transit: i64 = ledger
                    .iter()
                    .enumerate()
                    .filter(|(_, (t, _))| t.open)
                    .map(|(k, (t, _))| {
                        let a = applied[t.shard as usize].get(&k);
                        match (t.dir, a) {
                            (Dir::Refill, None) => t.units,
                            (Dir::Handback, Some(a)) => -a,
                            _ => 0,
                        }
                    })
                    .sum();
                let in_shards: i64 = shards.iter().map(|s| s.total).sum();
                for s in &shards {
                    assert!(s.conserved(), "seed {seed} step {step}: {s:?}");
                }
                assert_eq!(
                    pool.free + in_transit + in_shards,
                    total,
                    "seed {seed} step {step}: {pool:?} {shards:?}"
                );
                let held: i64 = shards.iter().map(|s| s.reserved + s.sold).sum();
                assert!(held <= total);
                assert!(pool.free >= 0 && pool.transit >= 0);
            }
            // Finish every open transfer (the recovery a client runs).
            #[allow(clippy::needless_range_loop)]
            for k in 0..ledger.len() {
                let (t, delta) = ledger[k];
                if !t.open {
                    continue;
                }
                let s = t.shard as usize;
                let d = match t.dir {
                    Dir::Refill => t.units,
                    Dir::Handback => delta,
                };
                let known = applied[s].get(&k).copied();
                let (a, _) = apply_transfer(&mut shards[s], known, d).unwrap();
                applied[s].insert(k, a);
                ledger[k].0 = settle_transfer(&mut pool, t, a).unwrap().unwrap();
            }
            let in_shards: i64 = shards.iter().map(|s| s.total).sum();
            assert_eq!(pool.transit, 0, "seed {seed}");
            assert_eq!(pool.free + in_shards, total, "seed {seed}");
        }
    }
}
