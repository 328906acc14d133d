//! LOCK's handlers: parse and validate everything, open `B`, serve the
//! clients already waiting (a lease that ended goes to the first in line),
//! apply the model to the state read (in memory), then write `B` once from
//! the plan (`Mutex::format`, `model::plan_sem_write`), replicate what was
//! written, reply. A refusal changes nothing in memory that is written
//! (tests/no_partial_writes.rs).
//!
//! Replication: a mutex is written and replicated as one `SET B <state>`,
//! a semaphore as `HSET B …` and, when holders left, `HDEL B …`. The state
//! carries the instants used, so replicas and the AOF end byte-identical
//! without re-reading a clock, and they need no module to replay it.

use std::collections::BTreeMap;

use redis_module::{
    Context, ContextFlags, KeyType, RedisError, RedisResult, RedisString, RedisValue,
};

use super::model::{
    self, holder_field, Acquired, Hold, Mutex, Request, SemMeta, HOLDER_PREFIX, MAX_INT, MAX_LIMIT,
    MAX_TIME_MS, MAX_TTL_MS,
};
use super::{
    COUNT_ACQUIRED, COUNT_BUSY, COUNT_HANDOFFS, COUNT_REENTERED, COUNT_RELEASED, COUNT_RENEWED,
    COUNT_WAITS, FAMILY,
};
use crate::argv::{is, Args};
use crate::blocking::{self, Waiting};
use crate::error;
use crate::keys::Key;
use crate::replicate;
use crate::reply;
use crate::util;

/// A semaphore as far as one command has read it.
struct Sem {
    meta: SemMeta,
    /// Holder fields present (live ones only, once purged).
    holders: i64,
    /// Holders read or changed: owner -> hold (None: deleted).
    seen: BTreeMap<Vec<u8>, Option<Hold>>,
    /// Owners whose field changed.
    changed: Vec<Vec<u8>>,
    meta_changed: bool,
}

/// What `B` holds.
enum Kind {
    /// No key: becomes a mutex or a semaphore on the first acquisition.
    Free,
    Mutex(Mutex),
    Sem(Sem),
}

/// An open lock: its key, what it holds, and whether it changed.
struct Lock<'a> {
    key: Key,
    /// The key as the client sent it.
    arg: &'a RedisString,
    name: &'a [u8],
    kind: Kind,
    changed: bool,
}

fn corrupt(name: &[u8], field: Option<&str>) -> RedisError {
    error::corrupt(FAMILY, name, field)
}

fn limit_differs(asked: i64, has: i64) -> RedisError {
    error::family(
        FAMILY,
        &format!("LIMIT {asked} differs from the lock's limit {has}"),
    )
}

impl<'a> Lock<'a> {
    /// Opens `B` and reads its kind.
    ///
    /// Occurs as `WRONGTYPE` when `B` is neither a String nor a Hash, and
    /// as a corrupt-data error when it holds a value LOCK never writes.
    fn open(ctx: &Context, arg: &'a RedisString, write: bool) -> Result<Lock<'a>, RedisError> {
        let name = arg.as_slice();
        let key = Key::open_arg(ctx, arg, write);
        let kind = match key.kind() {
            KeyType::Empty => Kind::Free,
            KeyType::String => {
                Kind::Mutex(Mutex::parse(key.bytes()).ok_or_else(|| corrupt(name, None))?)
            }
            KeyType::Hash => {
                let field = |f: &str| -> Result<i64, RedisError> {
                    key.hget(f.as_bytes())
                        .and_then(|v| crate::args::parse_i64_plain(&v))
                        .filter(|v| (0..=MAX_INT).contains(v))
                        .ok_or_else(|| corrupt(name, Some(f)))
                };
                let meta = SemMeta {
                    fence: field("fence")?,
                    limit: field("limit")?,
                    next: field("next")?,
                };
                if !(2..=MAX_LIMIT).contains(&meta.limit) {
                    return Err(corrupt(name, Some("limit")));
                }
                let holders = key.len() as i64 - 3;
                Kind::Sem(Sem {
                    meta,
                    holders,
                    seen: BTreeMap::new(),
                    changed: Vec::new(),
                    meta_changed: false,
                })
            }
            _ => return Err(error::wrongtype()),
        };
        Ok(Lock {
            key,
            arg,
            name,
            kind,
            changed: false,
        })
    }

    /// Returns the semaphore hold of `owner` (read once, then cached).
    fn sem_hold(&self, sem: &mut Sem, owner: &[u8]) -> Result<Option<Hold>, RedisError> {
        if let Some(h) = sem.seen.get(owner) {
            return Ok(*h);
        }
        let field = holder_field(owner);
        let h = match self.key.hget(&field) {
            None => None,
            Some(v) => Some(
                Hold::parse(&v)
                    .ok_or_else(|| corrupt(self.name, Some(&error::key_text(&field))))?,
            ),
        };
        sem.seen.insert(owner.to_vec(), h);
        Ok(h)
    }

    /// Reads every holder of a semaphore, in owner order.
    fn sem_all(&self) -> Result<Vec<(Vec<u8>, Hold)>, RedisError> {
        let mut out: Vec<(Vec<u8>, Hold)> = Vec::with_capacity(self.key.len());
        let mut bad: Option<Vec<u8>> = None;
        self.key.scan_pairs(|f, v| {
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
            return Err(corrupt(self.name, Some(&error::key_text(&f))));
        }
        // A scan may repeat an element (while the table rehashes).
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out.dedup_by(|a, b| a.0 == b.0);
        Ok(out)
    }

    /// Drops the holders whose lease ended, when some may have, and
    /// recomputes `next`.
    fn sem_purge(&mut self, sem: &mut Sem, now: i64) -> Result<(), RedisError> {
        if !sem.meta.needs_purge(now, sem.holders) {
            return Ok(());
        }
        // The stored holders, with this command's own changes on top.
        let mut all: BTreeMap<Vec<u8>, Hold> = self.sem_all()?.into_iter().collect();
        for (owner, h) in &sem.seen {
            match h {
                Some(h) => all.insert(owner.clone(), *h),
                None => all.remove(owner),
            };
        }
        let all: Vec<(Vec<u8>, Hold)> = all.into_iter().collect();
        let (ended, next) = model::purge(&all, now);
        for owner in &ended {
            sem.seen.insert(owner.to_vec(), None);
            sem.changed.push(owner.to_vec());
            sem.holders -= 1;
        }
        if !ended.is_empty() || next != sem.meta.next {
            sem.meta.next = next;
            sem.meta_changed = true;
            self.changed = true;
        }
        Ok(())
    }

    /// Acquires for one request (a client's or a waiter's).
    fn acquire(&mut self, req: &Request, limit: Option<i64>) -> Result<Acquired, RedisError> {
        let asked = limit.unwrap_or(1);
        if matches!(self.kind, Kind::Free) {
            self.kind = if asked == 1 {
                Kind::Mutex(Mutex::default())
            } else {
                Kind::Sem(Sem {
                    meta: SemMeta {
                        fence: 0,
                        limit: asked,
                        next: 0,
                    },
                    holders: 0,
                    seen: BTreeMap::new(),
                    changed: Vec::new(),
                    meta_changed: true,
                })
            };
        }
        let name = self.name;
        if let Kind::Mutex(m) = &mut self.kind {
            if limit.is_some_and(|n| n != 1) {
                return Err(limit_differs(asked, 1));
            }
            let r = m
                .acquire(req)
                .map_err(|_| error::overflow(FAMILY, name, None))?;
            self.changed |= r != Acquired::Busy;
            return Ok(r);
        }
        let mut kind = std::mem::replace(&mut self.kind, Kind::Free);
        let out = match &mut kind {
            Kind::Free => unreachable!(),
            Kind::Mutex(m) => {
                if limit.is_some_and(|n| n != 1) {
                    Err(limit_differs(asked, 1))
                } else {
                    let r = m
                        .acquire(req)
                        .map_err(|_| error::overflow(FAMILY, name, None))?;
                    if r != Acquired::Busy {
                        self.changed = true;
                    }
                    Ok(r)
                }
            }
            Kind::Sem(sem) => self.sem_acquire(sem, req, limit),
        };
        self.kind = kind;
        out
    }

    fn sem_acquire(
        &mut self,
        sem: &mut Sem,
        req: &Request,
        limit: Option<i64>,
    ) -> Result<Acquired, RedisError> {
        self.sem_purge(sem, req.now)?;
        if let Some(n) = limit {
            if n == 1 {
                return Err(limit_differs(1, sem.meta.limit));
            }
            if n != sem.meta.limit {
                if sem.holders > 0 {
                    return Err(limit_differs(n, sem.meta.limit));
                }
                sem.meta.limit = n;
                sem.meta_changed = true;
                self.changed = true;
            }
        }
        let mine = self.sem_hold(sem, req.owner)?;
        let field = || error::key_text(&holder_field(req.owner));
        let (r, hold) =
            model::sem_acquire(&mut sem.meta, sem.holders, mine, req).map_err(|_| {
                let f = if mine.is_some() {
                    field()
                } else {
                    "fence".into()
                };
                error::overflow(FAMILY, self.name, Some(&f))
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

    /// Releases one acquisition of `owner`; false when it holds nothing.
    fn release(&mut self, owner: &[u8], now: i64) -> Result<bool, RedisError> {
        if let Kind::Mutex(m) = &mut self.kind {
            let released = m.release(owner, now);
            self.changed |= released;
            return Ok(released);
        }
        let mut kind = std::mem::replace(&mut self.kind, Kind::Free);
        let out = match &mut kind {
            Kind::Free => Ok(false),
            Kind::Mutex(m) => Ok(m.release(owner, now)),
            Kind::Sem(sem) => (|| {
                let mine = self.sem_hold(sem, owner)?;
                match model::sem_release(mine, now) {
                    None => Ok(false),
                    Some(left) => {
                        if left.is_none() {
                            sem.holders -= 1;
                        }
                        sem.seen.insert(owner.to_vec(), left);
                        sem.changed.push(owner.to_vec());
                        Ok(true)
                    }
                }
            })(),
        };
        self.kind = kind;
        if matches!(out, Ok(true)) {
            self.changed = true;
        }
        out
    }

    /// Renews `owner`'s lease; the new remaining ms, or 0.
    fn renew(&mut self, owner: &[u8], ttl: i64, now: i64) -> Result<i64, RedisError> {
        if let Kind::Mutex(m) = &mut self.kind {
            let left = m.renew(owner, ttl, now).unwrap_or(0);
            self.changed |= left > 0;
            return Ok(left);
        }
        let mut kind = std::mem::replace(&mut self.kind, Kind::Free);
        let out = match &mut kind {
            Kind::Free => Ok(0),
            Kind::Mutex(m) => Ok(m.renew(owner, ttl, now).unwrap_or(0)),
            Kind::Sem(sem) => (|| {
                let mine = self.sem_hold(sem, owner)?;
                match model::sem_renew(&mut sem.meta, mine, ttl, now) {
                    None => Ok(0),
                    Some(h) => {
                        sem.seen.insert(owner.to_vec(), Some(h));
                        sem.changed.push(owner.to_vec());
                        sem.meta_changed = true;
                        Ok(h.expires - now)
                    }
                }
            })(),
        };
        self.kind = kind;
        if matches!(out, Ok(n) if n > 0) {
            self.changed = true;
        }
        out
    }

    /// Returns true when a new acquisition could succeed now.
    fn has_room(&mut self, now: i64) -> Result<bool, RedisError> {
        let mut kind = std::mem::replace(&mut self.kind, Kind::Free);
        let out = match &mut kind {
            Kind::Free => Ok(true),
            Kind::Mutex(m) => Ok(m.hold(now).is_none()),
            Kind::Sem(sem) => self
                .sem_purge(sem, now)
                .map(|_| sem.holders < sem.meta.limit),
        };
        self.kind = kind;
        out
    }

    /// Returns the instant the next lease ends, if any is held.
    fn next_end(&self) -> Option<i64> {
        match &self.kind {
            Kind::Free => None,
            Kind::Mutex(m) => (m.count > 0).then_some(m.expires),
            Kind::Sem(s) => (s.meta.next > 0).then_some(s.meta.next),
        }
    }

    /// Writes what changed to `B` and replicates it.
    fn commit(&mut self, ctx: &Context) {
        self.commit_as(ctx, false);
    }

    /// Writes what changed to `B`; replicates the command itself when
    /// `verbatim` (a release the master decided, see [`lock_release`]),
    /// else the state written.
    fn commit_as(&mut self, ctx: &Context, verbatim: bool) {
        if !self.changed {
            return;
        }
        self.changed = false;
        if verbatim {
            self.write_only();
            ctx.replicate_verbatim();
            return;
        }
        match &mut self.kind {
            Kind::Free => {}
            Kind::Mutex(m) => {
                let v = m.format();
                self.key.write_in_place(&v);
                replicate::set(ctx, self.arg, &v);
            }
            Kind::Sem(sem) => {
                sem.changed.sort();
                sem.changed.dedup();
                let plan = model::plan_sem_write(
                    sem.meta_changed.then_some(sem.meta),
                    sem.changed
                        .iter()
                        .map(|o| (o.as_slice(), sem.seen.get(o).copied().flatten())),
                );
                apply_sem_write(ctx, &self.key, self.name, &plan);
                sem.changed.clear();
                sem.meta_changed = false;
            }
        }
    }

    /// Writes a mutex's state without replicating it. A release that
    /// frees the mutex keeps the stored fence and rewrites only what
    /// follows it.
    fn write_only(&mut self) {
        if let Kind::Mutex(m) = &self.kind {
            if m.is_free() {
                self.key.write_tail(m.fence_digits(), Mutex::FREE_TAIL);
            } else {
                self.key.write_in_place(&m.format());
            }
        }
    }

    /// Returns the live holds, by token: (owner, hold).
    fn live(&self, now: i64) -> Result<Vec<(Vec<u8>, Hold)>, RedisError> {
        match &self.kind {
            Kind::Free => Ok(Vec::new()),
            Kind::Mutex(m) => Ok(m
                .hold(now)
                .map(|h| vec![(m.owner.to_vec(), h)])
                .unwrap_or_default()),
            Kind::Sem(_) => {
                let mut all = self.sem_all()?;
                all.retain(|(_, h)| h.live(now));
                all.sort_by_key(|(_, h)| h.token);
                Ok(all)
            }
        }
    }
}

/// Writes a semaphore's planned fields to `B` and replicates them as one
/// `HSET` and one `HDEL` (each only when it has fields).
fn apply_sem_write(ctx: &Context, key: &Key, name: &[u8], plan: &model::SemWrite) {
    for (f, v) in &plan.set {
        key.hput(f, v);
    }
    for f in &plan.del {
        key.hdel(f);
    }
    if !plan.set.is_empty() {
        let mut args: Vec<&[u8]> = vec![name];
        for (f, v) in &plan.set {
            args.push(f);
            args.push(v);
        }
        ctx.replicate("HSET", args.as_slice());
    }
    if !plan.del.is_empty() {
        let mut args: Vec<&[u8]> = vec![name];
        args.extend(plan.del.iter().map(|f| f.as_slice()));
        ctx.replicate("HDEL", args.as_slice());
    }
}

/// A client waiting for a lock (`LOCK.ACQUIRE … BLOCK`).
pub struct LockWaiter {
    owner: Vec<u8>,
    ttl: i64,
    maxhold: Option<i64>,
    limit: Option<i64>,
}

static WAITERS: blocking::Registry<LockWaiter> = blocking::Registry::new();

impl Waiting for LockWaiter {
    fn registry() -> &'static blocking::Registry<Self> {
        &WAITERS
    }

    fn timeout_reply() -> RedisValue {
        RedisValue::Null
    }

    fn on_timer(ctx: &Context, key: &[u8]) {
        let now = util::now_ms();
        let arg = RedisString::create_from_slice(ctx.ctx, key);
        match Lock::open(ctx, &arg, true) {
            Ok(mut lock) => {
                serve(ctx, &mut lock, now);
                lock.commit(ctx);
                rearm(ctx, &lock, now);
            }
            // Hand-edited data: the waiters get the error rather than
            // waiting for a state that cannot be read.
            Err(e) => {
                let msg = e.to_string();
                blocking::serve::<LockWaiter>(ctx, key, |_| {
                    Some(Err(RedisError::String(msg.clone())))
                });
            }
        }
    }
}

/// Watches keys deleted or replaced by other means than LOCK's commands
/// (DEL, UNLINK, RENAME, an expiry or eviction set by hand): the waiters
/// of such a lock are looked at again at the next tick, since nothing
/// else would wake them before the old lease end (or ever, with
/// `BLOCK 0` and a lock deleted while held). Called once at load.
pub fn watch_keys(ctx: &Context) {
    blocking::watch_key_events::<LockWaiter>(ctx);
}

/// Hands the lock to the clients waiting for it, first come first served,
/// while it has room. Their writes join the lock's pending state.
fn serve(ctx: &Context, lock: &mut Lock, now: i64) -> usize {
    if blocking::waiting::<LockWaiter>(ctx, lock.name) == 0 {
        return 0;
    }
    let arg = lock.arg;
    let mut handed = 0u64;
    let served = blocking::serve::<LockWaiter>(ctx, lock.name, |w| {
        let req = Request {
            owner: &w.owner,
            ttl: w.ttl,
            maxhold: w.maxhold,
            now,
        };
        match lock.acquire(&req, w.limit) {
            Ok(Acquired::Busy) => None,
            Ok(Acquired::New(t)) | Ok(Acquired::Reentered(t)) => {
                handed += 1;
                Some(Ok(RedisValue::Integer(t)))
            }
            Err(e) => Some(Err(e)),
        }
    });
    // Each waiter handed the lock is one LOCK.ACQUIRE call that completes
    // now: it raises its one event, as a call that acquired at once does.
    // A waiter answered with an error changed nothing and raises none.
    COUNT_HANDOFFS.add(handed);
    for _ in 0..handed {
        util::notify_static(ctx, c"hotpath.lock.acquire", arg);
    }
    served
}

/// Arms the lock's timer at its next lease end while clients wait.
fn rearm(ctx: &Context, lock: &Lock, now: i64) {
    if blocking::waiting::<LockWaiter>(ctx, lock.name) == 0 {
        return;
    }
    blocking::arm::<LockWaiter>(ctx, lock.name, wake_at(lock.next_end(), now));
}

/// Returns when to look at a lock again for its waiters: at its next lease
/// end. A busy lock with no lease end can only be hand-edited state; it is
/// looked at again each second rather than in a tight loop.
fn wake_at(end: Option<i64>, now: i64) -> i64 {
    match end {
        Some(t) => t.max(now + 1),
        None => now + 1000,
    }
}

/// Fails with `ERR lock: user must not be empty` for an empty owner.
fn check_owner(owner: &[u8]) -> Result<(), RedisError> {
    if owner.is_empty() {
        return Err(error::empty_user(FAMILY));
    }
    Ok(())
}

/// LOCK.ACQUIRE B owner ttl-ms [LIMIT n] [MAXHOLD ms] [BLOCK timeout-ms] [NOW unix-ms]
///
/// Replies the fencing token, or nil when the lock is held by others (or
/// the semaphore is full) and, with BLOCK, the timeout passed.
pub fn lock_acquire(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(4)?;
    c.skip(2)?;
    check_owner(c.arg(2))?;
    let ttl = c.next_i64(1, MAX_TTL_MS)?;
    let (mut limit, mut maxhold, mut block, mut now) = (None, None, None, None);
    // Each option is given once (the reference repeats none): a second
    // one is a syntax error, as an unknown word is.
    while !c.done() {
        let k = c.keyword()?;
        if is(k, "LIMIT") && limit.is_none() {
            limit = Some(c.option_i64(1, MAX_LIMIT)?);
        } else if is(k, "MAXHOLD") && maxhold.is_none() {
            maxhold = Some(c.option_i64(1, MAX_TTL_MS)?);
        } else if is(k, "BLOCK") && block.is_none() {
            block = Some(c.option_i64(0, MAX_TTL_MS)?);
        } else if is(k, "NOW") && now.is_none() {
            now = Some(c.option_i64(0, MAX_TIME_MS)?);
        } else {
            return Err(error::syntax());
        }
    }
    let now = now.unwrap_or_else(util::now_ms);
    let args = c.all();
    let (key, owner) = (&args[1], args[2].as_slice());
    let mut lock = Lock::open(ctx, key, true)?;
    // The context flags are read only when someone waits or may wait.
    let flags =
        (blocking::anyone_waiting::<LockWaiter>() || block.is_some()).then(|| ctx.get_flags());
    let served = match &flags {
        Some(f) if blocking::serving_with(f) => serve(ctx, &mut lock, now),
        _ => 0,
    };
    let req = Request {
        owner,
        ttl,
        maxhold,
        now,
    };
    let got = match lock.acquire(&req, limit) {
        Ok(r) => r,
        Err(e) => {
            // Waiters served above keep what they got; otherwise a refused
            // request writes nothing.
            if served > 0 {
                lock.commit(ctx);
            }
            return Err(e);
        }
    };
    lock.commit(ctx);
    match got {
        Acquired::New(t) | Acquired::Reentered(t) => {
            if matches!(got, Acquired::New(_)) {
                COUNT_ACQUIRED.incr();
            } else {
                COUNT_REENTERED.incr();
            }
            util::notify_static(ctx, c"hotpath.lock.acquire", key);
            Ok(RedisValue::Integer(t))
        }
        Acquired::Busy => match block {
            Some(timeout) if flags.as_ref().is_some_and(blocking::can_block_with) => {
                COUNT_WAITS.incr();
                let end = lock.next_end();
                drop(lock);
                let waiter = LockWaiter {
                    owner: owner.to_vec(),
                    ttl,
                    maxhold,
                    limit,
                };
                blocking::block(ctx, key.as_slice(), timeout, waiter);
                blocking::arm::<LockWaiter>(ctx, key.as_slice(), wake_at(end, now));
                Ok(RedisValue::NoReply)
            }
            _ => {
                COUNT_BUSY.incr();
                Ok(RedisValue::Null)
            }
        },
    }
}

/// Returns true when the command replays a decision the master already
/// made (it comes from the master link or the AOF): then the local clock
/// must not overrule it.
fn replayed(flags: &ContextFlags) -> bool {
    flags.intersects(ContextFlags::REPLICATED | ContextFlags::LOADING)
}

/// LOCK.RELEASE B owner [NOW unix-ms]
///
/// Replies 1 when one acquisition of `owner` was released (the lock is
/// free once all are), 0 when `owner` holds nothing (nothing changes).
///
/// A release is replicated as itself: it reaches replicas and the AOF only
/// when the master released, so a replay releases without looking at its
/// own clock (which may be past the lease end by then).
pub fn lock_release(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(3)?;
    c.skip(2)?;
    check_owner(c.arg(2))?;
    let now_arg = c.trailing_now(MAX_TIME_MS)?;
    let flags = ctx.get_flags();
    let now = if replayed(&flags) {
        // Every stored hold reads as live.
        i64::MIN
    } else {
        now_arg.unwrap_or_else(util::now_ms)
    };
    let args = c.all();
    let (key, owner) = (&args[1], args[2].as_slice());
    let mut lock = Lock::open(ctx, key, true)?;
    let released = lock.release(owner, now)?;
    if !released {
        return Ok(RedisValue::Integer(0));
    }
    COUNT_RELEASED.incr();
    util::notify_static(ctx, c"hotpath.lock.release", key);
    // Only clients already waiting can use the room just made; handing it
    // over writes more than the release, so the state is replicated.
    let mut served = 0;
    if blocking::serving_with(&flags)
        && blocking::waiting::<LockWaiter>(ctx, key.as_slice()) > 0
        && lock.has_room(now)?
    {
        served = serve(ctx, &mut lock, now);
    }
    let verbatim = served == 0 && matches!(lock.kind, Kind::Mutex(_));
    lock.commit_as(ctx, verbatim);
    rearm(ctx, &lock, now);
    Ok(RedisValue::Integer(1))
}

/// LOCK.RENEW B owner ttl-ms [NOW unix-ms]
///
/// Restarts `owner`'s lease at `ttl-ms` (never past MAXHOLD's end) and
/// replies the remaining ms, or 0 when `owner` holds nothing.
pub fn lock_renew(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(4)?;
    c.skip(2)?;
    check_owner(c.arg(2))?;
    let ttl = c.next_i64(1, MAX_TTL_MS)?;
    let now = c.trailing_now(MAX_TIME_MS)?.unwrap_or_else(util::now_ms);
    let args = c.all();
    let (key, owner) = (&args[1], args[2].as_slice());
    let mut lock = Lock::open(ctx, key, true)?;
    let left = lock.renew(owner, ttl, now)?;
    lock.commit(ctx);
    if left > 0 {
        COUNT_RENEWED.incr();
        util::notify_static(ctx, c"hotpath.lock.renew", key);
        // A renew may shorten the lease: the waiters' timer must then fire
        // at the new end, not the old one (arming only ever moves it
        // earlier).
        if blocking::anyone_waiting::<LockWaiter>() && blocking::serving(ctx) {
            rearm(ctx, &lock, now);
        }
    }
    Ok(RedisValue::Integer(left))
}

/// The names of a holder's fields in LOCK.INFO's RESP3 reply.
const HOLDER_FIELDS: [&str; 3] = ["token", "count", "ttl_ms"];

/// LOCK.INFO B [NOW unix-ms]
///
/// Replies every live holder, by token: in RESP2 the flat array
/// `[owner, token, count, ttl-ms, …]`; in RESP3 a map
/// `owner → {token, count, ttl_ms}` in the same order. Empty when the
/// lock is free.
pub fn lock_info(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(2)?;
    c.skip(1)?;
    let now = c.trailing_now(MAX_TIME_MS)?.unwrap_or_else(util::now_ms);
    let lock = Lock::open(ctx, c.string(1), false)?;
    let live = lock.live(now)?;
    drop(lock);
    let three = util::resp3(ctx);
    if three {
        reply::map(ctx, live.len());
    } else {
        reply::array(ctx, live.len() * 4);
    }
    for (owner, h) in &live {
        reply::bytes(ctx, owner);
        let values = [h.token, h.count, h.expires - now];
        if three {
            reply::map(ctx, HOLDER_FIELDS.len());
        }
        for (name, v) in HOLDER_FIELDS.iter().zip(values) {
            if three {
                reply::bytes(ctx, name.as_bytes());
            }
            reply::int(ctx, v);
        }
    }
    Ok(RedisValue::NoReply)
}

/// LOCK.CHECK B token [NOW unix-ms]
///
/// Replies 1 when `token` belongs to a live hold, else 0: a storage layer
/// asks before it accepts a write fenced by `token`.
pub fn lock_check(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(3)?;
    c.skip(1)?;
    let token = c.next_i64(i64::MIN, i64::MAX)?;
    let now = c.trailing_now(MAX_TIME_MS)?.unwrap_or_else(util::now_ms);
    let lock = Lock::open(ctx, c.string(1), false)?;
    let ok = match &lock.kind {
        Kind::Free => false,
        Kind::Mutex(m) => m.check(token, now),
        Kind::Sem(_) => lock.live(now)?.iter().any(|(_, h)| h.token == token),
    };
    Ok(RedisValue::Integer(ok as i64))
}
