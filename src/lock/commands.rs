//! LOCK's handlers: parse and validate everything, open `B` and read it,
//! serve the clients already waiting (a lease that ended goes to the first
//! in line), decide on the state read (model/plan.rs: `State`, in memory,
//! holder fields read through the key only when needed), then write `B`
//! once from the plan (`State::take_write`), replicate what was written,
//! reply. A refusal changes nothing in memory that is written
//! (tests/no_partial_writes.rs).
//!
//! Replication: a mutex is written and replicated as one `SET B <state>`,
//! a semaphore as `HSET B …` and, when holders left, `HDEL B …`. The state
//! carries the instants used, so replicas and the AOF end byte-identical
//! without re-reading a clock, and they need no module to replay it.

use redis_module::{
    Context, ContextFlags, KeyType, RedisError, RedisResult, RedisString, RedisValue,
};

use super::model::plan::{Refusal, SemStore, State, Stored, Write};
use super::model::{self, Acquired, Hold, Mutex, Request, MAX_LIMIT, MAX_TIME_MS, MAX_TTL_MS};
use super::{
    COUNT_ACQUIRED, COUNT_BUSY, COUNT_HANDOFFS, COUNT_REENTERED, COUNT_RELEASED, COUNT_RENEWED,
    COUNT_WAITS, FAMILY,
};
use crate::argv::{is, Args};
use crate::blocking::{self, Waiting};
use crate::error;
use crate::idem_token;
use crate::keys::Key;
use crate::replicate;
use crate::reply;
use crate::util;

/// A semaphore's Hash read through its open key.
struct Fields<'k>(&'k Key);

impl SemStore for Fields<'_> {
    fn get(&self, field: &[u8]) -> Option<Vec<u8>> {
        self.0.hget(field)
    }
    fn scan(&self, f: impl FnMut(&[u8], &[u8]) -> bool) {
        self.0.scan_pairs(f);
    }
}

/// An open lock: its key and the state the plans decide on.
struct Lock<'a> {
    key: Key,
    /// The key as the client sent it.
    arg: &'a RedisString,
    name: &'a [u8],
    state: State,
}

fn corrupt(name: &[u8], field: Option<&str>) -> RedisError {
    error::corrupt(FAMILY, name, field)
}

/// Returns the error of a plan's refusal on the lock `name`.
#[cold]
fn refused(name: &[u8], r: Refusal) -> RedisError {
    match r {
        Refusal::WrongType => error::wrongtype(),
        Refusal::Corrupt(f) => corrupt(name, f.map(|f| error::key_text(&f)).as_deref()),
        Refusal::LimitDiffers { asked, has } => error::family(
            FAMILY,
            &format!("LIMIT {asked} differs from the lock's limit {has}"),
        ),
        Refusal::Overflow(f) => {
            error::overflow(FAMILY, name, f.map(|f| error::key_text(&f)).as_deref())
        }
    }
}

impl<'a> Lock<'a> {
    /// Opens `B` and reads it (model/plan.rs, `State::read`).
    ///
    /// Occurs as `WRONGTYPE` when `B` is neither a String nor a Hash, and
    /// as a corrupt-data error when it holds a value LOCK never writes.
    fn open(ctx: &Context, arg: &'a RedisString, write: bool) -> Result<Lock<'a>, RedisError> {
        let name = arg.as_slice();
        let key = Key::open_arg(ctx, arg, write);
        let stored = match key.kind() {
            KeyType::Empty => Stored::Empty,
            KeyType::String => Stored::String(key.bytes()),
            KeyType::Hash => Stored::Hash(key.len()),
            _ => Stored::Other,
        };
        let state =
            State::read(stored, |f| key.hget(f.as_bytes())).map_err(|r| refused(name, r))?;
        Ok(Lock {
            key,
            arg,
            name,
            state,
        })
    }

    /// Acquires for one request (a client's or a waiter's).
    fn acquire(&mut self, req: &Request, limit: Option<i64>) -> Result<Acquired, RedisError> {
        let name = self.name;
        self.state
            .acquire(&Fields(&self.key), req, limit)
            .map_err(|r| refused(name, r))
    }

    /// Releases one acquisition of `owner`; false when it holds nothing.
    fn release(&mut self, owner: &[u8], now: i64) -> Result<bool, RedisError> {
        let name = self.name;
        self.state
            .release(&Fields(&self.key), owner, now)
            .map_err(|r| refused(name, r))
    }

    /// Renews `owner`'s lease; the new remaining ms, or 0.
    fn renew(&mut self, owner: &[u8], ttl: i64, now: i64) -> Result<i64, RedisError> {
        let name = self.name;
        self.state
            .renew(&Fields(&self.key), owner, ttl, now)
            .map_err(|r| refused(name, r))
    }

    /// Returns true when a new acquisition could succeed now.
    fn has_room(&mut self, now: i64) -> Result<bool, RedisError> {
        let name = self.name;
        self.state
            .has_room(&Fields(&self.key), now)
            .map_err(|r| refused(name, r))
    }

    /// Returns the instant the next lease ends, if any is held.
    fn next_end(&self) -> Option<i64> {
        self.state.next_end()
    }

    /// Writes what changed to `B` and replicates it.
    fn commit(&mut self, ctx: &Context) {
        self.commit_as(ctx, false);
    }

    /// Applies the write the plans made, if any; replicates the command
    /// itself when `verbatim` (a mutex release the master decided, see
    /// [`lock_release`]), else the state written. A release that frees
    /// the mutex and is replicated verbatim keeps the stored fence and
    /// rewrites only what follows it.
    fn commit_as(&mut self, ctx: &Context, verbatim: bool) {
        match self.state.take_write() {
            None => {}
            Some(Write::Mutex(m)) if verbatim => {
                if m.is_free() {
                    self.key.write_tail(m.fence_digits(), Mutex::FREE_TAIL);
                } else {
                    self.key.write_in_place(&m.format());
                }
                ctx.replicate_verbatim();
            }
            Some(Write::Mutex(m)) => {
                let v = m.format();
                self.key.write_in_place(&v);
                replicate::set(ctx, self.arg, &v);
            }
            // A semaphore's write is always replicated as its state.
            Some(Write::Sem(w)) => apply_sem_write(ctx, &self.key, self.name, &w),
        }
    }

    /// Returns the live holds, by token: (owner, hold).
    fn live(&self, now: i64) -> Result<Vec<(Vec<u8>, Hold)>, RedisError> {
        self.state
            .live(&Fields(&self.key), now)
            .map_err(|r| refused(self.name, r))
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
    /// `IDEM token` of the call: stored with the reply it finally gets.
    idem: Option<idem_token::Pending>,
}

static WAITERS: blocking::Registry<LockWaiter> = blocking::Registry::new();

impl Waiting for LockWaiter {
    fn registry() -> &'static blocking::Registry<Self> {
        &WAITERS
    }

    fn timeout_reply() -> RedisValue {
        RedisValue::Null
    }

    fn timed_out(ctx: &Context, w: &Self) {
        if let Some(p) = &w.idem {
            idem_token::store_late(ctx, p, &Ok(Self::timeout_reply()));
        }
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
                blocking::serve::<LockWaiter>(ctx, key, |w| {
                    let r = Err(RedisError::String(msg.clone()));
                    if let Some(p) = &w.idem {
                        idem_token::store_late(ctx, p, &r);
                    }
                    Some(r)
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
        let r = match lock.acquire(&req, w.limit) {
            Ok(Acquired::Busy) => return None,
            Ok(Acquired::New(t)) | Ok(Acquired::Reentered(t)) => {
                handed += 1;
                Ok(RedisValue::Integer(t))
            }
            Err(e) => Err(e),
        };
        // The token goes with the reply, in this execution unit, which
        // replicates the acquire too.
        if let Some(p) = &w.idem {
            idem_token::store_late(ctx, p, &r);
        }
        Some(r)
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
                    idem: idem_token::take_pending(),
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
    let verbatim = served == 0 && lock.state.is_mutex();
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
    let ok = lock
        .state
        .check(&Fields(&lock.key), token, now)
        .map_err(|r| refused(lock.name, r))?;
    Ok(RedisValue::Integer(ok as i64))
}
