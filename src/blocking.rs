//! Blocked clients and wake-up timers, for the commands that can wait
//! (`LOCK.ACQUIRE … BLOCK`, `DELAYQ.POLL … BLOCK`).
//!
//! A waiting client is blocked with `RedisModule_BlockClient` and queued in
//! memory, first come first served, per `(db, key)`. Nothing polls: a
//! command that frees what waiters want (a lock release, a job added)
//! serves the queue itself, in its own execution unit, and a module timer
//! (`RedisModule_CreateTimer`) fires at the next instant something can
//! change by time alone (a lease ending, a job falling due). A served
//! waiter is unblocked with its reply; the writes made for it belong to
//! the command or timer that served it and replicate with it.
//!
//! The queues and timers live on the master only: they are neither
//! persisted nor replicated, and the data alone decides every outcome. A
//! restart or a failover drops them with the connections that were
//! waiting, and the next client that blocks arms a timer again from the
//! data.
//!
//! Every callback runs on the main thread; the registry's mutex is never
//! held while calling into Redis.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::c_void;
use std::os::raw::c_int;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use redis_module::{raw, Context, ContextFlags, RedisResult, RedisValue};

/// A family whose commands can wait.
pub trait Waiting: Sized + Send + 'static {
    /// Returns the family's waiters and timers.
    fn registry() -> &'static Registry<Self>;
    /// Returns the reply of a waiter whose timeout passed.
    fn timeout_reply() -> RedisValue;
    /// Serves the waiters of `key` (selected db) when its timer fires; may
    /// arm the timer again.
    fn on_timer(ctx: &Context, key: &[u8]);
    /// Called when a waiter's timeout passed, just before its client gets
    /// [`Waiting::timeout_reply`] (in the timeout's own callback, with
    /// the waiter's database selected): a write made here replicates with
    /// that reply.
    fn timed_out(_ctx: &Context, _req: &Self) {}
}

/// `(db, key)`: waiters and timers are per key of one database.
type Slot = (i32, Vec<u8>);

/// One blocked client and what it asked for.
struct Waiter<T> {
    bc: usize,
    req: T,
}

struct Timer {
    id: raw::RedisModuleTimerID,
    at: i64,
    gen: u64,
}

struct Inner<T> {
    queues: BTreeMap<Slot, VecDeque<Waiter<T>>>,
    /// Blocked client handle -> its queue, for timeouts and disconnects.
    by_client: BTreeMap<usize, Slot>,
    timers: BTreeMap<Slot, Timer>,
    gen: u64,
}

/// A family's waiters and timers.
pub struct Registry<T> {
    inner: Mutex<Inner<T>>,
    /// Clients queued, all keys together: most commands only need to know
    /// that nobody waits, without a lookup.
    queued: AtomicUsize,
}

impl<T> Registry<T> {
    /// Returns an empty registry.
    pub const fn new() -> Self {
        Registry {
            inner: Mutex::new(Inner {
                queues: BTreeMap::new(),
                by_client: BTreeMap::new(),
                timers: BTreeMap::new(),
                gen: 0,
            }),
            queued: AtomicUsize::new(0),
        }
    }

    fn with<R>(&self, f: impl FnOnce(&mut Inner<T>) -> R) -> R {
        // A poisoned lock only means an earlier panic was caught: the maps
        // themselves are still consistent (every update is one step).
        let mut guard = match self.inner.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
        f(&mut guard)
    }
}

impl<T> Default for Registry<T> {
    fn default() -> Self {
        Self::new()
    }
}

/// Returns the database the context has selected.
pub fn db(ctx: &Context) -> i32 {
    unsafe { raw::RedisModule_GetSelectedDb.unwrap()(ctx.ctx) }
}

/// Returns true when this command may block its client: not inside MULTI,
/// a script or any other context that denies blocking, and not a command
/// replayed from the master or the AOF. Elsewhere a `BLOCK` option acts as
/// an immediate try, as `BLPOP` does inside `MULTI`.
pub fn can_block(ctx: &Context) -> bool {
    can_block_with(&ctx.get_flags())
}

/// [`can_block`] for context flags already read.
pub fn can_block_with(f: &ContextFlags) -> bool {
    !f.intersects(
        ContextFlags::MULTI
            | ContextFlags::LUA
            | ContextFlags::DENY_BLOCKING
            | ContextFlags::REPLICATED
            | ContextFlags::LOADING,
    ) && serving_with(f)
}

/// Returns true when this server serves waiters and arms timers: a master
/// that is not loading data, running a command that did not come from its
/// own master.
pub fn serving(ctx: &Context) -> bool {
    serving_with(&ctx.get_flags())
}

/// [`serving`] for context flags already read.
pub fn serving_with(f: &ContextFlags) -> bool {
    f.contains(ContextFlags::MASTER)
        && !f.intersects(ContextFlags::LOADING | ContextFlags::REPLICATED)
}

/// Returns true when any client of this family waits, on any key (one
/// atomic read: most commands only need to know that nobody waits).
pub fn anyone_waiting<T: Waiting>() -> bool {
    T::registry().queued.load(Ordering::Relaxed) > 0
}

/// Returns how many clients wait on `key`.
pub fn waiting<T: Waiting>(ctx: &Context, key: &[u8]) -> usize {
    if T::registry().queued.load(Ordering::Relaxed) == 0 {
        return 0;
    }
    let slot = (db(ctx), key.to_vec());
    T::registry().with(|r| r.queues.get(&slot).map_or(0, |q| q.len()))
}

/// Blocks the calling client on `key` for `timeout_ms` (0: no timeout),
/// behind the clients already waiting there. The handler then returns
/// `RedisValue::NoReply`; the client gets its reply when served, or
/// [`Waiting::timeout_reply`] when the timeout passes.
pub fn block<T: Waiting>(ctx: &Context, key: &[u8], timeout_ms: i64, req: T) {
    let bc = unsafe {
        raw::RedisModule_BlockClient.unwrap()(
            ctx.ctx,
            Some(reply_cb),
            Some(timeout_cb::<T>),
            Some(free_cb),
            timeout_ms,
        )
    };
    if bc.is_null() {
        return;
    }
    unsafe { raw::RedisModule_SetDisconnectCallback.unwrap()(bc, Some(disconnect_cb::<T>)) };
    let slot = (db(ctx), key.to_vec());
    T::registry().queued.fetch_add(1, Ordering::Relaxed);
    T::registry().with(|r| {
        r.by_client.insert(bc as usize, slot.clone());
        r.queues.entry(slot).or_default().push_back(Waiter {
            bc: bc as usize,
            req,
        });
    });
}

/// Offers the waiters of `key`, oldest first, to `serve`: a waiter for
/// which it returns a reply is unblocked with that reply; the first one it
/// returns `None` for stays first in line and ends the round. Returns how
/// many were served.
pub fn serve<T: Waiting>(
    ctx: &Context,
    key: &[u8],
    mut serve: impl FnMut(&T) -> Option<RedisResult>,
) -> usize {
    let slot = (db(ctx), key.to_vec());
    let mut served = 0;
    loop {
        let Some(w) = T::registry().with(|r| r.queues.get_mut(&slot).and_then(|q| q.pop_front()))
        else {
            break;
        };
        match serve(&w.req) {
            Some(reply) => {
                T::registry().queued.fetch_sub(1, Ordering::Relaxed);
                T::registry().with(|r| {
                    r.by_client.remove(&w.bc);
                    if r.queues.get(&slot).is_some_and(|q| q.is_empty()) {
                        r.queues.remove(&slot);
                    }
                });
                let data = Box::into_raw(Box::new(Some(reply))) as *mut c_void;
                unsafe {
                    raw::RedisModule_UnblockClient.unwrap()(
                        w.bc as *mut raw::RedisModuleBlockedClient,
                        data,
                    )
                };
                served += 1;
            }
            None => {
                T::registry().with(|r| r.queues.entry(slot.clone()).or_default().push_front(w));
                break;
            }
        }
    }
    if served > 0 {
        T::registry().with(|r| {
            if r.queues.get(&slot).is_some_and(|q| q.is_empty()) {
                r.queues.remove(&slot);
            }
        });
    }
    served
}

/// Makes sure the timer of `key` fires at `at_ms` (unix ms) or earlier.
/// A timer already due sooner is kept; a later one is replaced.
pub fn arm<T: Waiting>(ctx: &Context, key: &[u8], at_ms: i64) {
    arm_slot::<T>(ctx, (db(ctx), key.to_vec()), at_ms);
}

/// Subscribes to the keyspace events that remove or replace a key by
/// other means than the family's own commands (DEL, UNLINK, RENAME, an
/// expiry or an eviction: generic, expired and evicted events only, so
/// ordinary writes never reach the callback), and looks again at the
/// waiters of `T` on such a key ([`recheck`]). Called once at load.
pub fn watch_key_events<T: Waiting>(ctx: &Context) {
    extern "C" fn on_key_event<T: Waiting>(
        ctx: *mut raw::RedisModuleCtx,
        _type: c_int,
        _event: *const std::os::raw::c_char,
        key: *mut raw::RedisModuleString,
    ) -> c_int {
        if anyone_waiting::<T>() && !key.is_null() {
            let context = Context::new(ctx);
            let mut len = 0;
            let p = unsafe { raw::RedisModule_StringPtrLen.unwrap()(key, &mut len) };
            let name = unsafe { std::slice::from_raw_parts(p as *const u8, len) };
            let _ = catch_unwind(AssertUnwindSafe(|| recheck::<T>(&context, name)));
        }
        raw::REDISMODULE_OK as c_int
    }
    if let Some(subscribe) = unsafe { raw::RedisModule_SubscribeToKeyspaceEvents } {
        let types = raw::REDISMODULE_NOTIFY_GENERIC
            | raw::REDISMODULE_NOTIFY_EXPIRED
            | raw::REDISMODULE_NOTIFY_EVICTED;
        unsafe { subscribe(ctx.ctx, types as c_int, Some(on_key_event::<T>)) };
    }
}

/// Has the waiters of `key` (selected db) looked at again at the next
/// tick, when any wait there: the key changed by other means than the
/// family's commands (deleted, expired, renamed away by hand).
pub fn recheck<T: Waiting>(ctx: &Context, key: &[u8]) {
    if T::registry().queued.load(Ordering::Relaxed) == 0 {
        return;
    }
    let slot = (db(ctx), key.to_vec());
    if T::registry().with(|r| r.queues.contains_key(&slot)) {
        arm_slot::<T>(ctx, slot, crate::util::now_ms());
    }
}

/// Has every waiter of the family, in every database, looked at again at
/// the next tick: the dataset was replaced (FLUSHALL, FLUSHDB, SWAPDB).
pub fn recheck_all<T: Waiting>(ctx: &Context) {
    if T::registry().queued.load(Ordering::Relaxed) == 0 {
        return;
    }
    let slots: Vec<Slot> = T::registry().with(|r| r.queues.keys().cloned().collect());
    let now = crate::util::now_ms();
    for slot in slots {
        arm_slot::<T>(ctx, slot, now);
    }
}

/// Has the waiters of every family re-check their keys after the dataset
/// was replaced under them (FLUSHALL, FLUSHDB, SWAPDB): a lock that held
/// them may be gone, a queue may have due jobs. Nothing else would wake
/// them before their old timer, or ever for a free lock.
pub fn dataset_replaced(ctx: &Context) {
    recheck_all::<crate::lock::commands::LockWaiter>(ctx);
    recheck_all::<crate::delayq::commands::PollWaiter>(ctx);
}

#[redis_module_macros::flush_event_handler]
fn on_flush(ctx: &Context, e: redis_module::server_events::FlushSubevent) {
    if e == redis_module::server_events::FlushSubevent::Ended {
        dataset_replaced(ctx);
    }
}

/// [`arm`] for a key of any database.
fn arm_slot<T: Waiting>(ctx: &Context, slot: Slot, at_ms: i64) {
    let old = T::registry().with(|r| match r.timers.get(&slot) {
        Some(t) if t.at <= at_ms => None,
        Some(_) => r.timers.remove(&slot).map(|t| t.id),
        None => Some(0),
    });
    let Some(old) = old else { return };
    if old != 0 {
        let mut data: *mut c_void = std::ptr::null_mut();
        let rc = unsafe { raw::RedisModule_StopTimer.unwrap()(ctx.ctx, old, &mut data) };
        if rc == raw::REDISMODULE_OK as c_int && !data.is_null() {
            drop(unsafe { Box::from_raw(data as *mut TimerData) });
        }
    }
    let delay = (at_ms - crate::util::now_ms()).max(1);
    let gen = T::registry().with(|r| {
        r.gen += 1;
        r.gen
    });
    let data = Box::into_raw(Box::new(TimerData {
        db: slot.0,
        key: slot.1.clone(),
        gen,
    })) as *mut c_void;
    let id =
        unsafe { raw::RedisModule_CreateTimer.unwrap()(ctx.ctx, delay, Some(timer_cb::<T>), data) };
    T::registry().with(|r| {
        r.timers.insert(slot, Timer { id, at: at_ms, gen });
    });
}

struct TimerData {
    db: i32,
    key: Vec<u8>,
    gen: u64,
}

extern "C" fn timer_cb<T: Waiting>(ctx: *mut raw::RedisModuleCtx, data: *mut c_void) {
    if data.is_null() {
        return;
    }
    let data = unsafe { Box::from_raw(data as *mut TimerData) };
    let context = Context::new(ctx);
    // A timer runs in the database it was created from; one armed for
    // another database (after a flush or a swap) selects the key's own.
    if db(&context) != data.db {
        unsafe { raw::RedisModule_SelectDb.unwrap()(ctx, data.db) };
    }
    let slot = (data.db, data.key.clone());
    T::registry().with(|r| {
        if r.timers.get(&slot).is_some_and(|t| t.gen == data.gen) {
            r.timers.remove(&slot);
        }
    });
    // A replica (after a failover the other way) or a loading server has
    // no waiters to serve and must not write.
    if !serving(&context) {
        return;
    }
    let _ = catch_unwind(AssertUnwindSafe(|| T::on_timer(&context, &data.key)));
}

/// The reply a served waiter was unblocked with.
type Pending = Option<RedisResult>;

extern "C" fn reply_cb(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    let context = Context::new(ctx);
    let p = unsafe { raw::RedisModule_GetBlockedClientPrivateData.unwrap()(ctx) };
    let reply = if p.is_null() {
        None
    } else {
        unsafe { (*(p as *mut Pending)).take() }
    };
    match reply {
        Some(r) => crate::error::reply(&context, r),
        None => context.reply(Ok(RedisValue::Null)) as c_int,
    }
}

extern "C" fn free_cb(_ctx: *mut raw::RedisModuleCtx, p: *mut c_void) {
    if !p.is_null() {
        drop(unsafe { Box::from_raw(p as *mut Pending) });
    }
}

/// Removes the waiter with handle `bc`; returns its database and request
/// if it was queued.
fn forget<T: Waiting>(bc: usize) -> Option<(i32, T)> {
    T::registry().with(|r| {
        let slot = r.by_client.remove(&bc)?;
        T::registry().queued.fetch_sub(1, Ordering::Relaxed);
        let mut req = None;
        if let Some(q) = r.queues.get_mut(&slot) {
            if let Some(i) = q.iter().position(|w| w.bc == bc) {
                req = q.remove(i).map(|w| w.req);
            }
            if q.is_empty() {
                r.queues.remove(&slot);
            }
        }
        req.map(|req| (slot.0, req))
    })
}

extern "C" fn timeout_cb<T: Waiting>(
    ctx: *mut raw::RedisModuleCtx,
    _argv: *mut *mut raw::RedisModuleString,
    _argc: c_int,
) -> c_int {
    let context = Context::new(ctx);
    let bc = unsafe { raw::RedisModule_GetBlockedClientHandle.unwrap()(ctx) };
    // The handle must be released by the module (a client blocked without
    // keys is never freed by Redis itself); the reply is given here.
    if let Some((db_of, req)) = forget::<T>(bc as usize) {
        unsafe { raw::RedisModule_UnblockClient.unwrap()(bc, std::ptr::null_mut()) };
        // The callback runs on the blocked client, in the database it
        // blocked from; anywhere else nothing is written.
        if db(&context) == db_of && serving(&context) {
            let _ = catch_unwind(AssertUnwindSafe(|| T::timed_out(&context, &req)));
        }
    }
    context.reply(Ok(T::timeout_reply())) as c_int
}

extern "C" fn disconnect_cb<T: Waiting>(
    _ctx: *mut raw::RedisModuleCtx,
    bc: *mut raw::RedisModuleBlockedClient,
) {
    // A client served just before it went away was already unblocked:
    // only a client still queued is released here.
    if forget::<T>(bc as usize).is_some() {
        unsafe { raw::RedisModule_UnblockClient.unwrap()(bc, std::ptr::null_mut()) };
    }
}
