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
/// `<available>:<reserved>:<sold>:<total>:<limit>:<lease-ms>:<expires>`.
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
}

/// Reads up to `N` canonical non-negative integers separated by ':' from
/// the start of `v`, each followed by ':' but the last of a record
/// (`last_ends` tells whether the value must end after the last one).
/// Returns the numbers and where parsing stopped.
fn ints<const N: usize>(v: &[u8], last_ends: bool) -> Option<([i64; N], usize)> {
    let mut out = [0i64; N];
    let mut i = 0;
    for (k, slot) in out.iter_mut().enumerate() {
        let start = i;
        let mut n: i64 = 0;
        while i < v.len() && v[i].is_ascii_digit() && i - start < 16 {
            n = n * 10 + i64::from(v[i] - b'0');
            i += 1;
        }
        let digits = i - start;
        if digits == 0 || (digits > 1 && v[start] == b'0') || n > MAX_INT {
            return None;
        }
        *slot = n;
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
        }
    }

    /// Parses the stored record; None for anything STOCK never writes
    /// (the law broken included).
    pub fn parse(v: &[u8]) -> Option<Stock> {
        let ([available, reserved, sold, total, limit, lease_ms, expires], _) = ints::<7>(v, true)?;
        let s = Stock {
            available,
            reserved,
            sold,
            total,
            limit,
            lease_ms,
            expires,
        };
        let ok = s.conserved() && (1..=MAX_LEASE_MS).contains(&lease_ms);
        ok.then_some(s)
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    #[test]
    fn stock_record_round_trips() {
        let s = Stock::new(10, 2, 60_000, 0);
        assert_eq!(s.format(), b"10:0:0:10:2:60000:0");
        assert_eq!(Stock::parse(&s.format()), Some(s));
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
}
