//! The pure logic of locks and semaphores: holds, leases, reentrance,
//! fencing tokens and the stored forms. Nothing here reads a clock or
//! touches Redis: every function takes `now` (unix ms) and returns what
//! changed, so the handlers can write it and replicate it exactly.
//!
//! A lock `B` with one holder (a mutex, `LIMIT 1`) is a String
//! `<fence>:<count>:<expires>:<until>:<owner>`; the holder's token is the
//! fence itself, since a new hold always takes the next token. A free
//! mutex keeps its fence: `<fence>:0:0:0:`.
//!
//! A semaphore (`LIMIT n`, n ≥ 2) is a Hash: `fence`, `limit`, `next` (a
//! lower bound of every live holder's expiry, 0 when none) and one field
//! `holder:<owner>` = `<token>:<count>:<expires>:<until>` per holder.
//!
//! A hold is live while `now < expires`. `until` (0: none) is the hard end
//! set by `MAXHOLD`: renewals never move `expires` past it, so a stuck
//! holder's watchdog cannot keep the lock for ever.
//!
//! Every integer stays below 2^53 ([`MAX_INT`]) so that the Lua twins,
//! whose numbers are doubles, compute the same values.

use smallvec::SmallVec;

use crate::args::parse_i64_plain;

/// Bytes kept on the stack when short (owners, stored states): a lock
/// command allocates nothing for them.
pub type Bytes = SmallVec<[u8; 64]>;

/// The largest integer stored (fence, count, instants): 2^53 − 1.
pub const MAX_INT: i64 = (1 << 53) - 1;
/// The largest semaphore size. A semaphore's holders are fields of one
/// Hash, scanned whole when a lease has ended (to drop the ended holds and
/// find the next lease end): at 1,000 holders that scan and its deletions
/// took about 1.5 ms, at 100 well under the 1 ms every command must stay
/// below.
pub const MAX_LIMIT: i64 = 100;
/// The longest TTL, MAXHOLD or BLOCK timeout, 100 years in ms.
pub const MAX_TTL_MS: i64 = 3_153_600_000_000;
/// The latest `NOW` accepted, 9999-12-31T23:59:59.999Z in unix ms.
pub const MAX_TIME_MS: i64 = 253_402_300_799_999;
/// The prefix of a semaphore's holder fields.
pub const HOLDER_PREFIX: &[u8] = b"holder:";

/// One owner's hold on a lock or semaphore.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hold {
    /// The fencing token of this hold.
    pub token: i64,
    /// Acquisitions not yet released (reentrance), at least 1.
    pub count: i64,
    /// The lease end (unix ms): the hold is live while `now < expires`.
    pub expires: i64,
    /// The hard end set by MAXHOLD (unix ms), 0 for none.
    pub until: i64,
}

impl Hold {
    /// Returns true while the lease runs.
    pub fn live(&self, now: i64) -> bool {
        self.count > 0 && now < self.expires
    }

    /// Returns the stored form `<token>:<count>:<expires>:<until>`.
    pub fn format(&self) -> SmallVec<[u8; 64]> {
        let mut out = SmallVec::new();
        push_int(&mut out, self.token);
        out.push(b':');
        push_int(&mut out, self.count);
        out.push(b':');
        push_int(&mut out, self.expires);
        out.push(b':');
        push_int(&mut out, self.until);
        out
    }

    /// Parses `<token>:<count>:<expires>:<until>` (a semaphore holder).
    pub fn parse(v: &[u8]) -> Option<Hold> {
        let mut it = v.split(|&c| c == b':');
        let h = Hold {
            token: int(it.next()?)?,
            count: int(it.next()?)?,
            expires: int(it.next()?)?,
            until: int(it.next()?)?,
        };
        if it.next().is_some() || h.token < 1 || h.count < 1 || h.expires < 1 {
            return None;
        }
        Some(h)
    }
}

fn push_int<A: smallvec::Array<Item = u8>>(out: &mut SmallVec<A>, v: i64) {
    out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
}

/// Parses a stored integer in `0 ..= MAX_INT`.
fn int(b: &[u8]) -> Option<i64> {
    parse_i64_plain(b).filter(|&v| (0..=MAX_INT).contains(&v))
}

/// What an acquisition asks for.
#[derive(Clone, Copy, Debug)]
pub struct Request<'a> {
    pub owner: &'a [u8],
    pub ttl: i64,
    /// MAXHOLD in ms, if given.
    pub maxhold: Option<i64>,
    pub now: i64,
}

/// What an acquisition got.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Acquired {
    /// A new hold with a new token.
    New(i64),
    /// The owner already held it: the count went up, same token.
    Reentered(i64),
    /// Held by others (or full): nothing changed.
    Busy,
}

/// Occurs when a fence or a count would pass [`MAX_INT`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Overflow;

/// Returns the end of a lease of `ttl` from `now`, never past `until`.
fn lease_end(now: i64, ttl: i64, until: i64) -> i64 {
    let end = now + ttl;
    if until > 0 {
        end.min(until)
    } else {
        end
    }
}

/// Returns a fresh hold with `token` for `req`.
fn fresh(token: i64, req: &Request) -> Hold {
    let until = req.maxhold.map_or(0, |m| req.now + m);
    Hold {
        token,
        count: 1,
        expires: lease_end(req.now, req.ttl, until),
        until,
    }
}

/// Returns the hold re-entered once more by its owner: the count goes up
/// and the lease restarts at `ttl` (never past MAXHOLD's end).
fn reenter(h: Hold, req: &Request) -> Result<Hold, Overflow> {
    if h.count >= MAX_INT {
        return Err(Overflow);
    }
    Ok(Hold {
        count: h.count + 1,
        expires: lease_end(req.now, req.ttl, h.until),
        ..h
    })
}

/// Returns the hold with its lease restarted at `ttl` from `now`.
fn renewed(h: Hold, ttl: i64, now: i64) -> Hold {
    Hold {
        expires: lease_end(now, ttl, h.until),
        ..h
    }
}

/// A mutex: at most one holder.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Mutex {
    /// The last token issued (the current holder's token).
    pub fence: i64,
    /// The holder, empty when free.
    pub owner: Bytes,
    /// Acquisitions not released; 0 when free.
    pub count: i64,
    pub expires: i64,
    pub until: i64,
}

impl Mutex {
    /// Parses the stored String; None for anything the family never
    /// writes. (Hand-rolled: it runs on every LOCK command, and the
    /// general integer parser cost about a quarter of a release.)
    pub fn parse(v: &[u8]) -> Option<Mutex> {
        // Four canonical integers, each followed by ':', then the owner.
        let mut nums = [0i64; 4];
        let mut rest = v;
        for slot in nums.iter_mut() {
            let end = rest.iter().position(|&c| c == b':')?;
            let digits = &rest[..end];
            if digits.is_empty() || digits.len() > 16 || (digits.len() > 1 && digits[0] == b'0') {
                return None;
            }
            let mut n: i64 = 0;
            for &c in digits {
                if !c.is_ascii_digit() {
                    return None;
                }
                n = n * 10 + i64::from(c - b'0');
            }
            if n > MAX_INT {
                return None;
            }
            *slot = n;
            rest = &rest[end + 1..];
        }
        let [fence, count, expires, until] = nums;
        let m = Mutex {
            fence,
            count,
            expires,
            until,
            owner: Bytes::from_slice(rest),
        };
        let free = m.count == 0 && m.expires == 0 && m.until == 0 && m.owner.is_empty();
        let held = m.count > 0 && m.expires > 0 && m.fence > 0 && !m.owner.is_empty();
        (free || held).then_some(m)
    }

    /// Returns the stored form.
    pub fn format(&self) -> SmallVec<[u8; 128]> {
        let mut out = SmallVec::new();
        push_int(&mut out, self.fence);
        out.push(b':');
        push_int(&mut out, self.count);
        out.push(b':');
        push_int(&mut out, self.expires);
        out.push(b':');
        push_int(&mut out, self.until);
        out.push(b':');
        out.extend_from_slice(&self.owner);
        out
    }

    /// The stored form of a free mutex after its fence: `:0:0:0:`.
    pub const FREE_TAIL: &'static [u8] = b":0:0:0:";

    /// Returns true when the mutex is free (no holder, nothing but its
    /// fence stored).
    pub fn is_free(&self) -> bool {
        self.count == 0
    }

    /// Returns the number of decimal digits of the fence.
    pub fn fence_digits(&self) -> usize {
        itoa::Buffer::new().format(self.fence).len()
    }

    /// Returns the live hold, if any.
    pub fn hold(&self, now: i64) -> Option<Hold> {
        let h = Hold {
            token: self.fence,
            count: self.count,
            expires: self.expires,
            until: self.until,
        };
        h.live(now).then_some(h)
    }

    fn set_hold(&mut self, owner: &[u8], h: Hold) {
        self.fence = h.token;
        self.count = h.count;
        self.expires = h.expires;
        self.until = h.until;
        if self.owner.as_slice() != owner {
            self.owner = Bytes::from_slice(owner);
        }
    }

    fn clear(&mut self) {
        self.count = 0;
        self.expires = 0;
        self.until = 0;
        self.owner.clear();
    }

    /// Acquires for `req.owner`: a new token when the mutex is free or its
    /// lease ended, the same token (count + 1) for its live holder, Busy
    /// otherwise.
    pub fn acquire(&mut self, req: &Request) -> Result<Acquired, Overflow> {
        match self.hold(req.now) {
            Some(h) if self.owner.as_slice() == req.owner => {
                let h = reenter(h, req)?;
                self.set_hold(req.owner, h);
                Ok(Acquired::Reentered(h.token))
            }
            Some(_) => Ok(Acquired::Busy),
            None => {
                if self.fence >= MAX_INT {
                    return Err(Overflow);
                }
                let h = fresh(self.fence + 1, req);
                self.set_hold(req.owner, h);
                Ok(Acquired::New(h.token))
            }
        }
    }

    /// Releases one acquisition of `owner`; returns false (changing
    /// nothing) when `owner` holds no live lease.
    pub fn release(&mut self, owner: &[u8], now: i64) -> bool {
        match self.hold(now) {
            Some(h) if self.owner.as_slice() == owner => {
                if h.count > 1 {
                    self.count -= 1;
                } else {
                    self.clear();
                }
                true
            }
            _ => false,
        }
    }

    /// Restarts `owner`'s lease at `ttl` (never past MAXHOLD's end);
    /// returns the new remaining ms, or None when `owner` holds nothing.
    pub fn renew(&mut self, owner: &[u8], ttl: i64, now: i64) -> Option<i64> {
        match self.hold(now) {
            Some(h) if self.owner.as_slice() == owner => {
                let h = renewed(h, ttl, now);
                self.expires = h.expires;
                Some(h.expires - now)
            }
            _ => None,
        }
    }

    /// Returns true when `token` is the live holder's token.
    pub fn check(&self, token: i64, now: i64) -> bool {
        self.hold(now).is_some_and(|h| h.token == token)
    }

    /// Returns true when the stored form changes if the ended lease is
    /// cleared (a free mutex is written back clean only when something
    /// else changes).
    pub fn lease_ended(&self, now: i64) -> bool {
        self.count > 0 && now >= self.expires
    }
}

/// A semaphore's own fields (its holders are separate fields).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SemMeta {
    pub fence: i64,
    pub limit: i64,
    /// A lower bound of every live holder's expiry; 0 when none.
    pub next: i64,
}

impl SemMeta {
    /// Lowers `next` to cover a hold that now expires at `expires`.
    pub fn cover(&mut self, expires: i64) {
        if self.next == 0 || expires < self.next {
            self.next = expires;
        }
    }

    /// Returns true when the `holders` fields must be scanned at `now`:
    /// some lease may have ended, or `next` is 0 while holder fields exist
    /// (a hand edit: LOCK never leaves holders without a next lease end),
    /// so that a corrupt holder is found rather than counted.
    pub fn needs_purge(&self, now: i64, holders: i64) -> bool {
        (self.next > 0 && now >= self.next) || (self.next == 0 && holders > 0)
    }
}

/// Splits a semaphore's holders into the ended ones (to delete) and
/// returns the new `next` (the earliest live expiry, 0 when none).
pub fn purge(holders: &[(Vec<u8>, Hold)], now: i64) -> (Vec<&[u8]>, i64) {
    let mut ended = Vec::new();
    let mut next = 0;
    for (owner, h) in holders {
        if h.live(now) {
            if next == 0 || h.expires < next {
                next = h.expires;
            }
        } else {
            ended.push(owner.as_slice());
        }
    }
    (ended, next)
}

/// Acquires a semaphore slot. `mine` is the owner's current hold (live,
/// since ended holds were purged), `live` the number of live holders.
/// Returns the outcome and the owner's new hold.
pub fn sem_acquire(
    meta: &mut SemMeta,
    live: i64,
    mine: Option<Hold>,
    req: &Request,
) -> Result<(Acquired, Option<Hold>), Overflow> {
    if let Some(h) = mine.filter(|h| h.live(req.now)) {
        let h = reenter(h, req)?;
        meta.cover(h.expires);
        return Ok((Acquired::Reentered(h.token), Some(h)));
    }
    if live >= meta.limit {
        return Ok((Acquired::Busy, None));
    }
    if meta.fence >= MAX_INT {
        return Err(Overflow);
    }
    meta.fence += 1;
    let h = fresh(meta.fence, req);
    meta.cover(h.expires);
    Ok((Acquired::New(h.token), Some(h)))
}

/// Releases one acquisition of a semaphore hold: `Some(hold left)`
/// (`Some(None)` when the last acquisition was released), or None when
/// there is no live hold.
pub fn sem_release(mine: Option<Hold>, now: i64) -> Option<Option<Hold>> {
    match mine.filter(|h| h.live(now)) {
        Some(h) if h.count > 1 => Some(Some(Hold {
            count: h.count - 1,
            ..h
        })),
        Some(_) => Some(None),
        None => None,
    }
}

/// Renews a semaphore hold: the new hold, or None when not live.
pub fn sem_renew(meta: &mut SemMeta, mine: Option<Hold>, ttl: i64, now: i64) -> Option<Hold> {
    let h = renewed(mine.filter(|h| h.live(now))?, ttl, now);
    meta.cover(h.expires);
    Some(h)
}

/// Returns the Hash field of a semaphore holder: `holder:<owner>`.
pub fn holder_field(owner: &[u8]) -> Vec<u8> {
    let mut f = Vec::with_capacity(HOLDER_PREFIX.len() + owner.len());
    f.extend_from_slice(HOLDER_PREFIX);
    f.extend_from_slice(owner);
    f
}

/// What a semaphore command writes to `B`, once every check passed: the
/// fields set (one `HSET`, in this order) and the holder fields deleted
/// (one `HDEL`). Empty when nothing changed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SemWrite {
    pub set: Vec<(Vec<u8>, Vec<u8>)>,
    pub del: Vec<Vec<u8>>,
}

/// Plans a semaphore's write: its own fields when `meta` is given (they
/// changed), then each owner whose hold changed, in the order given: its
/// hold set, or, when it has none left (released, or its lease ended),
/// its field deleted.
pub fn plan_sem_write<'a>(
    meta: Option<SemMeta>,
    holders: impl IntoIterator<Item = (&'a [u8], Option<Hold>)>,
) -> SemWrite {
    let mut w = SemWrite::default();
    if let Some(m) = meta {
        for (f, v) in [("fence", m.fence), ("limit", m.limit), ("next", m.next)] {
            w.set
                .push((f.as_bytes().to_vec(), v.to_string().into_bytes()));
        }
    }
    for (owner, hold) in holders {
        match hold {
            Some(h) => w.set.push((holder_field(owner), h.format().to_vec())),
            None => w.del.push(holder_field(owner)),
        }
    }
    w
}

pub mod plan;

#[cfg(test)]
mod tests {
    use super::*;

    fn req(owner: &[u8], ttl: i64, now: i64) -> Request<'_> {
        Request {
            owner,
            ttl,
            maxhold: None,
            now,
        }
    }

    #[test]
    fn mutex_round_trips_its_stored_form() {
        let mut m = Mutex::default();
        assert_eq!(m.format().as_slice(), b"0:0:0:0:");
        assert_eq!(m.acquire(&req(b"a:b", 100, 1000)), Ok(Acquired::New(1)));
        assert_eq!(m.format().as_slice(), b"1:1:1100:0:a:b");
        assert_eq!(Mutex::parse(&m.format()), Some(m.clone()));
        assert_eq!(Mutex::parse(b"0:0:0:0:"), Some(Mutex::default()));
    }

    #[test]
    fn mutex_refuses_what_it_never_writes() {
        for bad in [
            &b""[..],
            b"1",
            b"1:1:1:0",
            b"1:1:1:0:",
            b"0:1:5:0:a",
            b"1:0:0:0:a",
            b"1:0:5:0:",
            b"-1:0:0:0:",
            b"1:-1:5:0:a",
            b"01:1:5:0:a",
            b"1:1:0:0:a",
            b"9007199254740992:1:5:0:a",
            b"x:1:5:0:a",
        ] {
            assert_eq!(
                Mutex::parse(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn only_one_holder_and_tokens_strictly_increase() {
        let mut m = Mutex::default();
        assert_eq!(m.acquire(&req(b"a", 100, 0)), Ok(Acquired::New(1)));
        assert_eq!(m.acquire(&req(b"b", 100, 50)), Ok(Acquired::Busy));
        // Reentrant: same token, count up, lease restarted.
        assert_eq!(m.acquire(&req(b"a", 100, 60)), Ok(Acquired::Reentered(1)));
        assert_eq!((m.count, m.expires), (2, 160));
        // The lease ends: anyone gets a new, larger token.
        assert_eq!(m.acquire(&req(b"b", 100, 160)), Ok(Acquired::New(2)));
        // The former holder releases nothing of the new hold.
        assert!(!m.release(b"a", 170));
        assert!(m.release(b"b", 170));
        assert_eq!(m.format().as_slice(), b"2:0:0:0:");
        // Even its own earlier owner gets a new token after a release.
        assert_eq!(m.acquire(&req(b"b", 100, 180)), Ok(Acquired::New(3)));
    }

    #[test]
    fn release_counts_down_reentrant_holds() {
        let mut m = Mutex::default();
        m.acquire(&req(b"a", 100, 0)).unwrap();
        m.acquire(&req(b"a", 100, 0)).unwrap();
        assert!(m.release(b"a", 10));
        assert_eq!(m.count, 1);
        assert!(m.release(b"a", 10));
        assert_eq!(m.count, 0);
        assert!(!m.release(b"a", 10));
    }

    #[test]
    fn an_ended_lease_is_not_released_or_renewed() {
        let mut m = Mutex::default();
        m.acquire(&req(b"a", 100, 0)).unwrap();
        assert!(!m.release(b"a", 100));
        assert_eq!(m.renew(b"a", 100, 100), None);
        assert!(!m.check(1, 100));
        assert!(m.check(1, 99));
        assert!(!m.check(2, 99));
        assert!(m.lease_ended(100));
    }

    #[test]
    fn maxhold_caps_every_renewal() {
        let mut m = Mutex::default();
        let r = Request {
            owner: b"a",
            ttl: 100,
            maxhold: Some(250),
            now: 1000,
        };
        assert_eq!(m.acquire(&r), Ok(Acquired::New(1)));
        assert_eq!((m.expires, m.until), (1100, 1250));
        assert_eq!(m.renew(b"a", 100, 1090), Some(100));
        assert_eq!(m.renew(b"a", 100, 1150), Some(100));
        assert_eq!(m.renew(b"a", 100, 1200), Some(50));
        assert_eq!(m.expires, 1250);
        assert_eq!(m.renew(b"a", 100, 1250), None);
        // Reentering keeps the original hard end.
        let mut m = Mutex::default();
        m.acquire(&r).unwrap();
        let again = Request {
            ttl: 1000,
            maxhold: Some(10_000),
            now: 1050,
            ..r
        };
        assert_eq!(m.acquire(&again), Ok(Acquired::Reentered(1)));
        assert_eq!((m.expires, m.until), (1250, 1250));
    }

    #[test]
    fn renew_restarts_the_lease_from_now() {
        let mut m = Mutex::default();
        m.acquire(&req(b"a", 100, 0)).unwrap();
        assert_eq!(m.renew(b"a", 500, 50), Some(500));
        assert_eq!(m.expires, 550);
        assert_eq!(m.renew(b"b", 500, 50), None);
    }

    #[test]
    fn counters_never_pass_2_pow_53() {
        let mut m = Mutex {
            fence: MAX_INT,
            ..Mutex::default()
        };
        assert_eq!(m.acquire(&req(b"a", 1, 0)), Err(Overflow));
        assert_eq!(m.fence, MAX_INT);
        let mut m = Mutex {
            fence: 3,
            owner: Bytes::from_slice(b"a"),
            count: MAX_INT,
            expires: 10,
            until: 0,
        };
        assert_eq!(m.acquire(&req(b"a", 1, 0)), Err(Overflow));
    }

    #[test]
    fn semaphore_admits_up_to_its_limit() {
        let mut meta = SemMeta {
            fence: 0,
            limit: 2,
            next: 0,
        };
        let (a, ha) = sem_acquire(&mut meta, 0, None, &req(b"a", 100, 0)).unwrap();
        assert_eq!(a, Acquired::New(1));
        assert_eq!(meta.next, 100);
        let (b, hb) = sem_acquire(&mut meta, 1, None, &req(b"b", 50, 10)).unwrap();
        assert_eq!(b, Acquired::New(2));
        assert_eq!(meta.next, 60);
        let (c, _) = sem_acquire(&mut meta, 2, None, &req(b"c", 50, 10)).unwrap();
        assert_eq!(c, Acquired::Busy);
        let (a2, ha2) = sem_acquire(&mut meta, 2, ha, &req(b"a", 100, 20)).unwrap();
        assert_eq!(a2, Acquired::Reentered(1));
        assert_eq!(ha2.unwrap().count, 2);
        assert!(meta.needs_purge(60, 2));
        assert!(!meta.needs_purge(59, 2));
        let empty = SemMeta {
            fence: 2,
            limit: 2,
            next: 0,
        };
        assert!(!empty.needs_purge(60, 0));
        assert!(empty.needs_purge(60, 1), "holders without a next lease end");
        let holders = vec![(b"a".to_vec(), ha2.unwrap()), (b"b".to_vec(), hb.unwrap())];
        let (ended, next) = purge(&holders, 60);
        assert_eq!(ended, vec![&b"b"[..]]);
        assert_eq!(next, 120);
        assert_eq!(
            sem_release(ha2, 70),
            Some(Some(Hold {
                count: 1,
                ..ha2.unwrap()
            }))
        );
        assert_eq!(sem_release(ha, 70).map(|h| h.map(|h| h.count)), Some(None));
        assert_eq!(sem_release(hb, 70), None);
    }

    #[test]
    fn semaphore_holds_round_trip() {
        let h = Hold {
            token: 7,
            count: 2,
            expires: 1_764_720_000_000,
            until: 0,
        };
        assert_eq!(h.format().as_slice(), b"7:2:1764720000000:0");
        assert_eq!(Hold::parse(&h.format()), Some(h));
        for bad in [
            &b"7:2:5"[..],
            b"7:2:5:0:1",
            b"0:1:5:0",
            b"7:0:5:0",
            b"7:1:0:0",
            b"a:1:5:0",
        ] {
            assert_eq!(Hold::parse(bad), None);
        }
        assert_eq!(holder_field(b"x"), b"holder:x");
    }

    #[test]
    fn plan_sem_write_sets_meta_and_holds_and_deletes_the_rest() {
        let hold = Hold {
            token: 7,
            count: 2,
            expires: 9_000,
            until: 0,
        };
        let meta = SemMeta {
            fence: 7,
            limit: 3,
            next: 9_000,
        };
        let w = plan_sem_write(Some(meta), [(&b"a"[..], Some(hold)), (b"b", None)]);
        let text = |v: &[u8]| String::from_utf8(v.to_vec()).unwrap();
        let set: Vec<(String, String)> = w.set.iter().map(|(f, v)| (text(f), text(v))).collect();
        assert_eq!(
            set,
            [
                ("fence".to_string(), "7".to_string()),
                ("limit".into(), "3".into()),
                ("next".into(), "9000".into()),
                ("holder:a".into(), text(&hold.format())),
            ]
        );
        assert_eq!(w.del, vec![b"holder:b".to_vec()]);
        // Nothing changed: nothing to write (an error is no plan at all).
        assert_eq!(plan_sem_write(None, []), SemWrite::default());
        let w = plan_sem_write(None, [(&b"c"[..], None)]);
        assert!(w.set.is_empty());
        assert_eq!(w.del, vec![b"holder:c".to_vec()]);
    }
}
