//! LOCK's plans: the lock as one command reads it ([`State`]), the
//! acquisitions, releases and renewals decided on it in memory, and the
//! one write they make ([`State::take_write`]), or a refusal. No Redis
//! types: a semaphore's holder fields are read through a [`SemStore`]
//! the handler gives, only when a decision needs them, so every error
//! keeps its place. A refusal comes before anything of the command's own
//! request is written (waiters served before it keep what they got).

use std::collections::BTreeMap;

use super::{
    holder_field, plan_sem_write, purge, sem_acquire, sem_release, sem_renew, Acquired, Hold,
    Mutex, Request, SemMeta, SemWrite, HOLDER_PREFIX, MAX_INT, MAX_LIMIT,
};

/// Why a LOCK command refuses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// `WRONGTYPE …`: neither a String nor a Hash.
    WrongType,
    /// The corrupt-data error naming the key and, if any, the field.
    Corrupt(Option<Vec<u8>>),
    /// `ERR lock: LIMIT <asked> differs from the lock's limit <has>`.
    LimitDiffers { asked: i64, has: i64 },
    /// The integer overflow error naming the key and, if any, the field.
    Overflow(Option<Vec<u8>>),
}

/// A semaphore's Hash as a plan reads it.
pub trait SemStore {
    /// Returns the value of `field`, if any.
    fn get(&self, field: &[u8]) -> Option<Vec<u8>>;
    /// Calls `f` with each field and value (a scan: one may come twice)
    /// until it returns false.
    fn scan(&self, f: impl FnMut(&[u8], &[u8]) -> bool);
}

/// What `B` is, as the handler found it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored<'a> {
    Empty,
    String(&'a [u8]),
    /// A Hash of `len` fields.
    Hash(usize),
    Other,
}

/// A semaphore as far as one command has read it.
#[derive(Debug)]
pub struct Sem {
    pub meta: SemMeta,
    /// Holder fields present (live ones only, once purged).
    pub holders: i64,
    /// Holders read or changed: owner -> hold (None: deleted).
    seen: BTreeMap<Vec<u8>, Option<Hold>>,
    /// Owners whose field changed.
    changed: Vec<Vec<u8>>,
    meta_changed: bool,
}

impl Sem {
    fn new(meta: SemMeta, holders: i64, meta_changed: bool) -> Sem {
        Sem {
            meta,
            holders,
            seen: BTreeMap::new(),
            changed: Vec::new(),
            meta_changed,
        }
    }

    /// Returns the hold of `owner` (read once, then this command's own).
    fn hold(&mut self, store: &impl SemStore, owner: &[u8]) -> Result<Option<Hold>, Refusal> {
        if let Some(h) = self.seen.get(owner) {
            return Ok(*h);
        }
        let field = holder_field(owner);
        let h = match store.get(&field) {
            None => None,
            Some(v) => Some(Hold::parse(&v).ok_or(Refusal::Corrupt(Some(field)))?),
        };
        self.seen.insert(owner.to_vec(), h);
        Ok(h)
    }

    /// Drops the holders whose lease ended, when some may have, and
    /// recomputes `next`. Returns true when that changed the state.
    fn purge(&mut self, store: &impl SemStore, now: i64) -> Result<bool, Refusal> {
        if !self.meta.needs_purge(now, self.holders) {
            return Ok(false);
        }
        // The stored holders, with this command's own changes on top.
        let mut all: BTreeMap<Vec<u8>, Hold> = all_holders(store)?.into_iter().collect();
        for (owner, h) in &self.seen {
            match h {
                Some(h) => all.insert(owner.clone(), *h),
                None => all.remove(owner),
            };
        }
        let all: Vec<(Vec<u8>, Hold)> = all.into_iter().collect();
        let (ended, next) = purge(&all, now);
        for owner in &ended {
            self.seen.insert(owner.to_vec(), None);
            self.changed.push(owner.to_vec());
            self.holders -= 1;
        }
        if !ended.is_empty() || next != self.meta.next {
            self.meta.next = next;
            self.meta_changed = true;
            return Ok(true);
        }
        Ok(false)
    }
}

/// Reads every holder of a semaphore, in owner order; a field that is
/// neither one of its own nor a valid holder is corrupt data.
pub fn all_holders(store: &impl SemStore) -> Result<Vec<(Vec<u8>, Hold)>, Refusal> {
    let mut out: Vec<(Vec<u8>, Hold)> = Vec::new();
    let mut bad: Option<Vec<u8>> = None;
    store.scan(|f, v| {
        if let Some(owner) = f.strip_prefix(HOLDER_PREFIX) {
            match Hold::parse(v) {
                Some(h) => out.push((owner.to_vec(), h)),
                None => {
                    bad = Some(f.to_vec());
                    return false;
                }
            }
        } else if !matches!(f, b"fence" | b"limit" | b"next") {
            bad = Some(f.to_vec());
            return false;
        }
        true
    });
    if let Some(f) = bad {
        return Err(Refusal::Corrupt(Some(f)));
    }
    // A scan may repeat an element (while the table rehashes).
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out.dedup_by(|a, b| a.0 == b.0);
    Ok(out)
}

/// What `B` holds.
#[derive(Debug)]
pub enum Kind {
    /// No key: becomes a mutex or a semaphore on the first acquisition.
    Free,
    Mutex(Mutex),
    Sem(Sem),
}

/// The lock as one command reads and changes it, in memory.
#[derive(Debug)]
pub struct State {
    pub kind: Kind,
    changed: bool,
}

/// The one write of a command: a mutex's new state (one `SET`), or a
/// semaphore's fields ([`SemWrite`]: one `HSET`, one `HDEL`).
#[derive(Debug, PartialEq, Eq)]
pub enum Write<'a> {
    Mutex(&'a Mutex),
    Sem(SemWrite),
}

/// Returns the error of a mutex asked for another LIMIT than 1.
fn mutex_limit(limit: Option<i64>) -> Result<(), Refusal> {
    match limit {
        Some(n) if n != 1 => Err(Refusal::LimitDiffers { asked: n, has: 1 }),
        _ => Ok(()),
    }
}

impl State {
    /// Reads `B`: a mutex's String, or a semaphore's own fields (`field`
    /// reads one; each must be an integer in 0 … 2^53 − 1, its limit in 2
    /// … 100). Anything LOCK never writes is corrupt data.
    pub fn read(stored: Stored, field: impl Fn(&str) -> Option<Vec<u8>>) -> Result<State, Refusal> {
        let kind = match stored {
            Stored::Empty => Kind::Free,
            Stored::String(v) => Kind::Mutex(Mutex::parse(v).ok_or(Refusal::Corrupt(None))?),
            Stored::Hash(len) => {
                let int = |f: &str| -> Result<i64, Refusal> {
                    field(f)
                        .and_then(|v| crate::args::parse_i64_plain(&v))
                        .filter(|v| (0..=MAX_INT).contains(v))
                        .ok_or_else(|| Refusal::Corrupt(Some(f.as_bytes().to_vec())))
                };
                let meta = SemMeta {
                    fence: int("fence")?,
                    limit: int("limit")?,
                    next: int("next")?,
                };
                if !(2..=MAX_LIMIT).contains(&meta.limit) {
                    return Err(Refusal::Corrupt(Some(b"limit".to_vec())));
                }
                Kind::Sem(Sem::new(meta, len as i64 - 3, false))
            }
            Stored::Other => return Err(Refusal::WrongType),
        };
        Ok(State {
            kind,
            changed: false,
        })
    }

    /// Returns true for a mutex.
    pub fn is_mutex(&self) -> bool {
        matches!(self.kind, Kind::Mutex(_))
    }

    /// Acquires for one request (a client's or a waiter's). A free key
    /// becomes a mutex (no LIMIT, or LIMIT 1) or a semaphore of LIMIT n.
    pub fn acquire(
        &mut self,
        store: &impl SemStore,
        req: &Request,
        limit: Option<i64>,
    ) -> Result<Acquired, Refusal> {
        let asked = limit.unwrap_or(1);
        if matches!(self.kind, Kind::Free) {
            self.kind = if asked == 1 {
                Kind::Mutex(Mutex::default())
            } else {
                let meta = SemMeta {
                    fence: 0,
                    limit: asked,
                    next: 0,
                };
                Kind::Sem(Sem::new(meta, 0, true))
            };
        }
        match &mut self.kind {
            Kind::Free => Ok(Acquired::Busy),
            Kind::Mutex(m) => {
                mutex_limit(limit)?;
                let r = m.acquire(req).map_err(|_| Refusal::Overflow(None))?;
                self.changed |= r != Acquired::Busy;
                Ok(r)
            }
            Kind::Sem(sem) => {
                self.changed |= sem.purge(store, req.now)?;
                if let Some(n) = limit {
                    if n == 1 {
                        return Err(Refusal::LimitDiffers {
                            asked: 1,
                            has: sem.meta.limit,
                        });
                    }
                    if n != sem.meta.limit {
                        if sem.holders > 0 {
                            return Err(Refusal::LimitDiffers {
                                asked: n,
                                has: sem.meta.limit,
                            });
                        }
                        sem.meta.limit = n;
                        sem.meta_changed = true;
                        self.changed = true;
                    }
                }
                let mine = sem.hold(store, req.owner)?;
                let (r, hold) =
                    sem_acquire(&mut sem.meta, sem.holders, mine, req).map_err(|_| {
                        Refusal::Overflow(Some(match mine {
                            Some(_) => holder_field(req.owner),
                            None => b"fence".to_vec(),
                        }))
                    })?;
                if r == Acquired::Busy {
                    return Ok(r);
                }
                if mine.is_none() {
                    sem.holders += 1;
                }
                sem.seen.insert(req.owner.to_vec(), hold);
                sem.changed.push(req.owner.to_vec());
                sem.meta_changed = true;
                self.changed = true;
                Ok(r)
            }
        }
    }

    /// Releases one acquisition of `owner`; false when it holds nothing.
    pub fn release(
        &mut self,
        store: &impl SemStore,
        owner: &[u8],
        now: i64,
    ) -> Result<bool, Refusal> {
        let released = match &mut self.kind {
            Kind::Free => false,
            Kind::Mutex(m) => m.release(owner, now),
            Kind::Sem(sem) => {
                let mine = sem.hold(store, owner)?;
                match sem_release(mine, now) {
                    None => false,
                    Some(left) => {
                        if left.is_none() {
                            sem.holders -= 1;
                        }
                        sem.seen.insert(owner.to_vec(), left);
                        sem.changed.push(owner.to_vec());
                        true
                    }
                }
            }
        };
        self.changed |= released;
        Ok(released)
    }

    /// Renews `owner`'s lease; the new remaining ms, or 0.
    pub fn renew(
        &mut self,
        store: &impl SemStore,
        owner: &[u8],
        ttl: i64,
        now: i64,
    ) -> Result<i64, Refusal> {
        let left = match &mut self.kind {
            Kind::Free => 0,
            Kind::Mutex(m) => m.renew(owner, ttl, now).unwrap_or(0),
            Kind::Sem(sem) => {
                let mine = sem.hold(store, owner)?;
                match sem_renew(&mut sem.meta, mine, ttl, now) {
                    None => 0,
                    Some(h) => {
                        sem.seen.insert(owner.to_vec(), Some(h));
                        sem.changed.push(owner.to_vec());
                        sem.meta_changed = true;
                        h.expires - now
                    }
                }
            }
        };
        self.changed |= left > 0;
        Ok(left)
    }

    /// Returns true when a new acquisition could succeed now.
    pub fn has_room(&mut self, store: &impl SemStore, now: i64) -> Result<bool, Refusal> {
        match &mut self.kind {
            Kind::Free => Ok(true),
            Kind::Mutex(m) => Ok(m.hold(now).is_none()),
            Kind::Sem(sem) => {
                self.changed |= sem.purge(store, now)?;
                Ok(sem.holders < sem.meta.limit)
            }
        }
    }

    /// Returns the instant the next lease ends, if any is held.
    pub fn next_end(&self) -> Option<i64> {
        match &self.kind {
            Kind::Free => None,
            Kind::Mutex(m) => (m.count > 0).then_some(m.expires),
            Kind::Sem(s) => (s.meta.next > 0).then_some(s.meta.next),
        }
    }

    /// Returns the write of what changed since the last one (None:
    /// nothing did), and starts over.
    pub fn take_write(&mut self) -> Option<Write<'_>> {
        if !std::mem::take(&mut self.changed) {
            return None;
        }
        match &mut self.kind {
            Kind::Free => None,
            Kind::Mutex(m) => Some(Write::Mutex(m)),
            Kind::Sem(sem) => {
                sem.changed.sort();
                sem.changed.dedup();
                let w = plan_sem_write(
                    sem.meta_changed.then_some(sem.meta),
                    sem.changed
                        .iter()
                        .map(|o| (o.as_slice(), sem.seen.get(o).copied().flatten())),
                );
                sem.changed.clear();
                sem.meta_changed = false;
                Some(Write::Sem(w))
            }
        }
    }

    /// Returns the live holds, by token: (owner, hold).
    pub fn live(&self, store: &impl SemStore, now: i64) -> Result<Vec<(Vec<u8>, Hold)>, Refusal> {
        match &self.kind {
            Kind::Free => Ok(Vec::new()),
            Kind::Mutex(m) => Ok(m
                .hold(now)
                .map(|h| vec![(m.owner.to_vec(), h)])
                .unwrap_or_default()),
            Kind::Sem(_) => {
                let mut all = all_holders(store)?;
                all.retain(|(_, h)| h.live(now));
                all.sort_by_key(|(_, h)| h.token);
                Ok(all)
            }
        }
    }

    /// Returns true when `token` belongs to a live hold.
    pub fn check(&self, store: &impl SemStore, token: i64, now: i64) -> Result<bool, Refusal> {
        Ok(match &self.kind {
            Kind::Free => false,
            Kind::Mutex(m) => m.check(token, now),
            Kind::Sem(_) => self.live(store, now)?.iter().any(|(_, h)| h.token == token),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;

    /// A semaphore's Hash in memory.
    #[derive(Default)]
    struct Mem(RefCell<BTreeMap<Vec<u8>, Vec<u8>>>);

    impl SemStore for Mem {
        fn get(&self, field: &[u8]) -> Option<Vec<u8>> {
            self.0.borrow().get(field).cloned()
        }
        fn scan(&self, mut f: impl FnMut(&[u8], &[u8]) -> bool) {
            for (k, v) in self.0.borrow().iter() {
                if !f(k, v) {
                    break;
                }
            }
        }
    }

    impl Mem {
        fn apply(&self, w: &SemWrite) {
            let mut m = self.0.borrow_mut();
            for (f, v) in &w.set {
                m.insert(f.clone(), v.clone());
            }
            for f in &w.del {
                m.remove(f);
            }
        }
        fn stored(&self) -> Stored<'static> {
            Stored::Hash(self.0.borrow().len())
        }
        fn field(&self) -> impl Fn(&str) -> Option<Vec<u8>> + '_ {
            |f| self.get(f.as_bytes())
        }
    }

    fn req(owner: &[u8], ttl: i64, now: i64) -> Request<'_> {
        Request {
            owner,
            ttl,
            maxhold: None,
            now,
        }
    }

    fn none(_: &str) -> Option<Vec<u8>> {
        None
    }

    #[test]
    fn reads_refuse_what_lock_never_writes() {
        let mem = Mem::default();
        assert_eq!(
            State::read(Stored::Other, none).unwrap_err(),
            Refusal::WrongType
        );
        assert_eq!(
            State::read(Stored::String(b"x"), none).unwrap_err(),
            Refusal::Corrupt(None)
        );
        assert!(State::read(Stored::String(b"0:0:0:0:"), none)
            .unwrap()
            .is_mutex());
        // A semaphore's own fields: each must be there and an integer.
        for (f, v) in [("fence", "1"), ("limit", "3"), ("next", "0")] {
            mem.0
                .borrow_mut()
                .insert(f.as_bytes().to_vec(), v.as_bytes().to_vec());
        }
        assert!(State::read(mem.stored(), mem.field()).is_ok());
        for (f, bad) in [
            ("fence", "-1"),
            ("next", "x"),
            ("limit", "1"),
            ("limit", "101"),
        ] {
            let old = mem.get(f.as_bytes()).unwrap();
            mem.0
                .borrow_mut()
                .insert(f.as_bytes().to_vec(), bad.as_bytes().to_vec());
            assert_eq!(
                State::read(mem.stored(), mem.field()).unwrap_err(),
                Refusal::Corrupt(Some(f.as_bytes().to_vec())),
                "{f} {bad}"
            );
            mem.0.borrow_mut().insert(f.as_bytes().to_vec(), old);
        }
        mem.0.borrow_mut().remove(&b"next"[..]);
        assert_eq!(
            State::read(mem.stored(), mem.field()).unwrap_err(),
            Refusal::Corrupt(Some(b"next".to_vec()))
        );
    }

    #[test]
    fn a_free_key_becomes_a_mutex_or_a_semaphore() {
        let mem = Mem::default();
        let mut s = State::read(Stored::Empty, none).unwrap();
        assert!(s.take_write().is_none());
        assert_eq!(
            s.acquire(&mem, &req(b"a", 100, 1000), None),
            Ok(Acquired::New(1))
        );
        match s.take_write() {
            Some(Write::Mutex(m)) => assert_eq!(m.format().as_slice(), b"1:1:1100:0:a"),
            w => panic!("{w:?}"),
        }
        // A second write only once something changes again.
        assert!(s.take_write().is_none());
        assert_eq!(
            s.acquire(&mem, &req(b"b", 100, 1000), None),
            Ok(Acquired::Busy)
        );
        assert!(s.take_write().is_none());
        assert_eq!(
            s.acquire(&mem, &req(b"a", 100, 1000), Some(2)),
            Err(Refusal::LimitDiffers { asked: 2, has: 1 })
        );
        assert_eq!(s.release(&mem, b"b", 1000), Ok(false));
        assert_eq!(s.renew(&mem, b"a", 500, 1000), Ok(500));
        assert_eq!(s.release(&mem, b"a", 1000), Ok(true));
        assert_eq!(s.next_end(), None);

        let mut s = State::read(Stored::Empty, none).unwrap();
        assert_eq!(
            s.acquire(&mem, &req(b"a", 100, 1000), Some(2)),
            Ok(Acquired::New(1))
        );
        let Some(Write::Sem(w)) = s.take_write() else {
            panic!()
        };
        let fields: Vec<&[u8]> = w.set.iter().map(|(f, _)| f.as_slice()).collect();
        assert_eq!(fields, [&b"fence"[..], b"limit", b"next", b"holder:a"]);
        assert!(w.del.is_empty());
    }

    #[test]
    fn semaphore_decisions_and_refusals() {
        let mem = Mem::default();
        let mut s = State::read(Stored::Empty, none).unwrap();
        s.acquire(&mem, &req(b"a", 100, 1000), Some(2)).unwrap();
        s.acquire(&mem, &req(b"b", 200, 1000), Some(2)).unwrap();
        let Some(Write::Sem(w)) = s.take_write() else {
            panic!()
        };
        mem.apply(&w);
        // Read back from the store: full, then a LIMIT that differs.
        let mut s = State::read(mem.stored(), mem.field()).unwrap();
        assert_eq!(s.next_end(), Some(1100));
        assert_eq!(
            s.acquire(&mem, &req(b"c", 100, 1050), None),
            Ok(Acquired::Busy)
        );
        assert_eq!(s.has_room(&mem, 1050), Ok(false));
        assert_eq!(
            s.acquire(&mem, &req(b"c", 100, 1050), Some(1)),
            Err(Refusal::LimitDiffers { asked: 1, has: 2 })
        );
        assert_eq!(
            s.acquire(&mem, &req(b"c", 100, 1050), Some(3)),
            Err(Refusal::LimitDiffers { asked: 3, has: 2 })
        );
        assert!(s.take_write().is_none());
        // a's lease ended: purged, c gets a's slot, a's field goes.
        assert_eq!(s.has_room(&mem, 1100), Ok(true));
        assert_eq!(
            s.acquire(&mem, &req(b"c", 100, 1100), None),
            Ok(Acquired::New(3))
        );
        let Some(Write::Sem(w)) = s.take_write() else {
            panic!()
        };
        assert_eq!(w.del, [b"holder:a".to_vec()]);
        mem.apply(&w);
        let s = State::read(mem.stored(), mem.field()).unwrap();
        let owners: Vec<Vec<u8>> = s
            .live(&mem, 1100)
            .unwrap()
            .into_iter()
            .map(|x| x.0)
            .collect();
        assert_eq!(owners, [b"b".to_vec(), b"c".to_vec()]);
        assert_eq!(s.check(&mem, 3, 1100), Ok(true));
        assert_eq!(s.check(&mem, 1, 1100), Ok(false));

        // Renew and release of a semaphore holder.
        let mut s = State::read(mem.stored(), mem.field()).unwrap();
        assert_eq!(s.renew(&mem, b"b", 1000, 1150), Ok(1000));
        assert_eq!(s.renew(&mem, b"x", 1000, 1150), Ok(0));
        assert_eq!(s.release(&mem, b"c", 1150), Ok(true));
        assert_eq!(s.release(&mem, b"c", 1150), Ok(false));
        let Some(Write::Sem(w)) = s.take_write() else {
            panic!()
        };
        assert_eq!(w.del, [b"holder:c".to_vec()]);

        // A damaged holder, and a field LOCK never writes.
        mem.0
            .borrow_mut()
            .insert(b"holder:b".to_vec(), b"nope".to_vec());
        let mut s = State::read(mem.stored(), mem.field()).unwrap();
        assert_eq!(
            s.release(&mem, b"b", 1150),
            Err(Refusal::Corrupt(Some(b"holder:b".to_vec())))
        );
        mem.0.borrow_mut().remove(&b"holder:b"[..]);
        mem.0.borrow_mut().insert(b"odd".to_vec(), b"1".to_vec());
        let s = State::read(mem.stored(), mem.field()).unwrap();
        assert_eq!(
            s.live(&mem, 1150),
            Err(Refusal::Corrupt(Some(b"odd".to_vec())))
        );
    }

    #[test]
    fn overflows_name_their_field() {
        let mem = Mem::default();
        let top = MAX_INT.to_string();
        let m = format!("{top}:0:0:0:");
        let mut s = State::read(Stored::String(m.as_bytes()), none).unwrap();
        assert_eq!(
            s.acquire(&mem, &req(b"a", 100, 1000), None),
            Err(Refusal::Overflow(None))
        );
        for (f, v) in [("fence", top.as_str()), ("limit", "2"), ("next", "0")] {
            mem.0
                .borrow_mut()
                .insert(f.as_bytes().to_vec(), v.as_bytes().to_vec());
        }
        let mut s = State::read(mem.stored(), mem.field()).unwrap();
        assert_eq!(
            s.acquire(&mem, &req(b"a", 100, 1000), None),
            Err(Refusal::Overflow(Some(b"fence".to_vec())))
        );
        assert!(s.take_write().is_none());
    }
}
