//! Large operations in bounded slices, the way Redis rehashes a dict.
//!
//! A command whose work grows with the size of the data (POLL.SYNC of a
//! million-candidate board, RANK.MERGE of million-member boards) runs as a
//! [`Job`]. The command does the first slice itself and, when that slice
//! finishes the job (small data), replies at once. Otherwise it blocks only
//! its own client (`RM_BlockClient`) and a thread finishes the job: it
//! takes the server lock for one slice of about [`SLICE`] at a time, so no
//! other client waits more than one slice, and does the work that needs no
//! data (merging, sorting, building the reply) without the lock, on the
//! machine's other core. Each slice replicates its own effects as native
//! commands when it releases the lock, so replicas and the AOF follow
//! slice by slice; the blocked client gets its reply when the job is over.
//!
//! Where a client cannot block (inside MULTI or a script, or the stream of
//! a master), the job runs to its end at once, as a large native command
//! would.

use std::collections::HashMap;
use std::ffi::CStr;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use redis_module::{raw, Context, ContextFlags, RedisError, RedisResult, RedisValue};

use crate::error;

/// How long one slice holds the server lock.
pub const SLICE: Duration = Duration::from_micros(800);
/// How long the command itself works before it hands a job to the worker:
/// shorter than a slice, since the command also pays its own setup.
const FIRST_SLICE: Duration = Duration::from_micros(300);
/// How long the worker waits between two slices, so that the main thread
/// (and the clients it serves) gets the lock.
const PAUSE: Duration = Duration::from_micros(200);

/// What a slice of a job ended with.
pub enum Step {
    /// Work is left for the next slice.
    More,
    /// The job is over; this is the client's reply.
    Done(RedisResult),
}

/// A large operation cut into slices.
///
/// A job moves to a worker thread, but every Redis object it holds (keys,
/// strings, scan cursors) is only touched in [`Job::step`] and when the job
/// is dropped, both under the server lock; [`Job::compute`] only touches
/// the job's own Rust data.
pub trait Job: 'static {
    /// Works on the data until `deadline` (looking at the clock every few
    /// dozen items), with the server lock held, and returns whether work is
    /// left. A slice leaves the data in a state other commands may read
    /// and write.
    fn step(&mut self, ctx: &Context, deadline: Instant) -> Step;

    /// Does the work that needs no data (merging, sorting), without the
    /// server lock; called before every slice.
    fn compute(&mut self) {}

    /// Returns the job's claim on the key it works on, if it holds one:
    /// clients that attached to the job there ([`claim_or_attach`]) get
    /// its reply too.
    fn claim(&self) -> Option<&Claim> {
        None
    }

    /// Returns the latency-monitor event of the job's slices, e.g.
    /// `hotpath-rank-merge`: a slice that runs over
    /// `latency-monitor-threshold` shows in `LATENCY LATEST`.
    fn event(&self) -> &'static CStr;
}

/// A slice's time budget, for loops whose steps vary in size (a scan step
/// may visit an empty bucket or a dozen members): the clock is read every
/// eight steps.
pub struct Budget {
    deadline: Instant,
    steps: u32,
}

impl Budget {
    /// Returns a budget that ends at `deadline`.
    pub fn until(deadline: Instant) -> Budget {
        Budget { deadline, steps: 0 }
    }

    /// Counts a step; returns true when the budget is spent.
    pub fn spent(&mut self) -> bool {
        self.steps = self.steps.wrapping_add(1);
        self.steps.is_multiple_of(8) && Instant::now() >= self.deadline
    }
}

/// The CPU time of the calling thread.
pub fn thread_cpu() -> Duration {
    let mut t = libc_timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // CLOCK_THREAD_CPUTIME_ID is 3 on Linux.
    unsafe { clock_gettime(3, &mut t) };
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

#[repr(C)]
struct libc_timespec {
    tv_sec: i64,
    tv_nsec: i64,
}

extern "C" {
    fn clock_gettime(clock: i32, t: *mut libc_timespec) -> i32;
}

/// A slice's start: wall clock and the thread's CPU clock.
#[derive(Clone, Copy)]
struct Started {
    wall: Instant,
    cpu: Duration,
}

impl Started {
    fn now() -> Started {
        Started {
            wall: Instant::now(),
            cpu: thread_cpu(),
        }
    }
}

/// Reports a slice to the latency monitor: its wall time as `event` (what
/// other clients waited, preemption by other processes included) and its
/// CPU time as `event-cpu` (the work the slice did, which [`SLICE`]
/// bounds). Nothing while the latency monitor is off: the server's own
/// check (`latency >= threshold`) lets every sample through at threshold 0.
fn report(event: &CStr, start: Started) {
    if !crate::latency::on() {
        return;
    }
    if let Some(add) = unsafe { raw::RedisModule_LatencyAddSample } {
        let wall = start.wall.elapsed().as_millis() as raw::mstime_t;
        let cpu = thread_cpu().saturating_sub(start.cpu).as_millis() as raw::mstime_t;
        let mut cpu_event = event.to_bytes().to_vec();
        cpu_event.extend_from_slice(b"-cpu\0");
        unsafe {
            add(event.as_ptr(), wall);
            add(cpu_event.as_ptr().cast(), cpu);
        }
    }
}

fn can_block(ctx: &Context) -> bool {
    let refuse = ContextFlags::MULTI
        | ContextFlags::LUA
        | ContextFlags::DENY_BLOCKING
        | ContextFlags::LOADING
        | ContextFlags::REPLICATED;
    !ctx.get_flags().intersects(refuse)
        && unsafe { raw::RedisModule_BlockClient }.is_some()
        && unsafe { raw::RedisModule_GetThreadSafeContext }.is_some()
        && unsafe { raw::RedisModule_ThreadSafeContextLock }.is_some()
}

/// Runs `job` for the command being executed: to the end within this call
/// when it fits in one slice (or the client cannot block), otherwise on a
/// worker thread with the client blocked. Returns the command's reply (no
/// reply when the client was blocked: it gets the reply at the end).
pub fn run(ctx: &Context, mut job: Box<dyn Job>) -> RedisResult {
    let start = Started::now();
    job.compute();
    let first = job.step(ctx, start.wall + FIRST_SLICE);
    report(job.event(), start);
    if let Step::Done(r) = first {
        return r;
    }
    if !can_block(ctx) {
        let far = Instant::now() + Duration::from_secs(365 * 86_400);
        loop {
            job.compute();
            if let Step::Done(r) = job.step(ctx, far) {
                return r;
            }
        }
    }
    let bc = unsafe { raw::RedisModule_BlockClient.unwrap()(ctx.ctx, None, None, None, 0) };
    // One context for both the slices (under the lock; it keeps the
    // client's database) and the reply (which needs no lock).
    let tsc = unsafe { raw::RedisModule_GetThreadSafeContext.unwrap()(bc) };
    // Clients that attach to the job later wait on its claim's list, which
    // the worker answers at the end, also when the job drops its claim
    // before it ends (POLL.SYNC does, once the snapshot is frozen).
    let waiters = job.claim().map(|c| c.attached.clone());
    let worker = Worker {
        job,
        bc,
        tsc,
        waiters,
    };
    std::thread::Builder::new()
        .name("hotpath-job".into())
        .spawn(move || worker.run())
        .map_err(|_| RedisError::Str(error::INTERNAL))?;
    Ok(RedisValue::NoReply)
}

/// A job on its worker thread, with its blocked client.
struct Worker {
    job: Box<dyn Job>,
    bc: *mut raw::RedisModuleBlockedClient,
    tsc: *mut raw::RedisModuleCtx,
    waiters: Option<Waiters>,
}

// Safety: the job's Redis objects and the contexts are used only under
// the server lock (see `Job`); replies to a blocked client's context need
// no lock, and unblocking is thread-safe.
unsafe impl Send for Worker {}

impl Worker {
    fn lock(&self) {
        unsafe { raw::RedisModule_ThreadSafeContextLock.unwrap()(self.tsc) };
    }

    fn unlock(&self) {
        // Releasing the lock also sends the slice's replicated commands to
        // replicas and the AOF.
        unsafe { raw::RedisModule_ThreadSafeContextUnlock.unwrap()(self.tsc) };
    }

    fn run(mut self) {
        let ctx = Context::new(self.tsc);
        let reply = loop {
            let computed = catch_unwind(AssertUnwindSafe(|| self.job.compute()));
            if computed.is_err() {
                break Err(RedisError::Str(error::INTERNAL));
            }
            self.lock();
            let start = Started::now();
            let step = catch_unwind(AssertUnwindSafe(|| self.job.step(&ctx, start.wall + SLICE)));
            report(self.job.event(), start);
            self.unlock();
            match step {
                Ok(Step::More) => {
                    // The server lock is a plain mutex: a thread that takes
                    // it again at once can starve the main thread waiting
                    // for it. A pause hands it over.
                    std::thread::sleep(PAUSE);
                    continue;
                }
                Ok(Step::Done(r)) => break r,
                Err(_) => break Err(RedisError::Str(error::INTERNAL)),
            }
        };
        // Clients that attached to the job (a retry of the same command)
        // get the same reply. The key is released first, under the lock,
        // so that no client attaches to a job that has its reply: a
        // command from now on starts a new job.
        self.lock();
        let attached = take(&self.waiters);
        if let Some(w) = &self.waiters {
            release(w);
        }
        self.unlock();
        answer(attached, &reply);
        // A long reply is built here, without the lock: Redis appends it to
        // the client's output in one move when the client is unblocked.
        ctx.reply(reply);
        // The job's Redis objects go under the lock.
        self.lock();
        let Worker { job, bc, tsc, .. } = self;
        drop(job);
        unsafe {
            raw::RedisModule_ThreadSafeContextUnlock.unwrap()(tsc);
            raw::RedisModule_FreeThreadSafeContext.unwrap()(tsc);
            raw::RedisModule_UnblockClient.unwrap()(bc, std::ptr::null_mut());
        }
    }
}

/// The clients attached to a job.
type Waiters = std::sync::Arc<Mutex<Vec<Attached>>>;

/// Takes the clients attached so far (called under the server lock, which
/// attaching also holds).
fn take(w: &Option<Waiters>) -> Vec<Attached> {
    match w {
        Some(w) => std::mem::take(&mut *w.lock().unwrap_or_else(|p| p.into_inner())),
        None => Vec::new(),
    }
}

/// Gives `reply` to clients attached to a job, and unblocks them.
fn answer(attached: Vec<Attached>, reply: &RedisResult) {
    for other in attached {
        let r = match reply {
            Ok(v) => Ok(v.clone()),
            Err(e) => Err(RedisError::String(e.to_string())),
        };
        unsafe {
            let octx = raw::RedisModule_GetThreadSafeContext.unwrap()(other.0);
            Context::new(octx).reply(r);
            raw::RedisModule_FreeThreadSafeContext.unwrap()(octx);
            raw::RedisModule_UnblockClient.unwrap()(other.0, std::ptr::null_mut());
        }
    }
}

/// A key in a database: (database, key name).
type DbKey = (i32, Vec<u8>);

/// Bumped whenever the dataset is replaced under the jobs' feet (FLUSHALL,
/// FLUSHDB, SWAPDB, loading an RDB or a full resync): a job that started
/// before refuses to go on, rather than write into a dataset it never read.
static GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Returns the dataset generation (see [`GENERATION`]).
pub fn generation() -> u64 {
    GENERATION.load(std::sync::atomic::Ordering::SeqCst)
}

fn bump() {
    GENERATION.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
}

#[redis_module_macros::flush_event_handler]
fn on_flush(_ctx: &Context, _e: redis_module::server_events::FlushSubevent) {
    bump();
}

#[redis_module_macros::loading_event_handler]
fn on_loading(_ctx: &Context, _e: redis_module::server_events::LoadingSubevent) {
    bump();
}

/// Subscribes to SWAPDB (the crate's event lists do not cover it); called
/// once at load. A module has one callback per event, so this one also
/// tells the blocked clients (see [`crate::blocking::dataset_replaced`]).
pub fn subscribe(ctx: &Context) {
    extern "C" fn on_swapdb(
        ctx: *mut raw::RedisModuleCtx,
        _e: raw::RedisModuleEvent,
        _sub: u64,
        _data: *mut std::ffi::c_void,
    ) {
        bump();
        let context = Context::new(ctx);
        let _ = catch_unwind(AssertUnwindSafe(|| {
            crate::blocking::dataset_replaced(&context)
        }));
    }
    if let Some(subscribe) = unsafe { raw::RedisModule_SubscribeToServerEvent } {
        let event = raw::RedisModuleEvent {
            id: raw::REDISMODULE_EVENT_SWAPDB,
            dataver: 1,
        };
        unsafe { subscribe(ctx.ctx, event, Some(on_swapdb)) };
    }
}

/// How long a job's work-in-progress key (`B:merging`, a `B:syncing`
/// being frozen) lives after the slice that last wrote it. A job writes
/// slice after slice, so a live one never gets near this; a job cut short
/// by a crash (SIGKILL, power loss) leaves a key that goes by itself
/// instead of staying until the next job on that key.
pub const WORK_TTL_MS: i64 = 3_600_000;

/// Gives `key` (named `name`) the expiry of work in progress
/// ([`WORK_TTL_MS`] from now), as one absolute instant replicated with
/// `PEXPIREAT`, so replicas and the AOF hold the same `PEXPIRETIME`. The
/// job sets the key's final expiry (or none) when it is complete.
pub fn mark_work_in_progress(ctx: &Context, key: &crate::keys::Key, name: &[u8]) {
    if !key.exists() {
        return;
    }
    let at = crate::util::now_ms() + WORK_TTL_MS;
    key.set_abs_expire_ms(at);
    let at = at.to_string();
    ctx.replicate("PEXPIREAT", &[name, at.as_bytes()]);
}

/// A client blocked on a job it attached to.
struct Attached(*mut raw::RedisModuleBlockedClient);

// Safety: a blocked client handle may be replied to and unblocked from
// any thread.
unsafe impl Send for Attached {}

/// A key a job works on: the request that started the job, and the
/// clients that attached to it since.
struct Busy {
    request: Vec<u8>,
    attached: Waiters,
}

/// The keys jobs are working on.
static BUSY: Mutex<Option<HashMap<DbKey, Busy>>> = Mutex::new(None);

/// A key a job works on until it drops this claim.
pub struct Claim {
    key: DbKey,
    attached: Waiters,
}

/// Claims `key` in the client's database for a job; `busy` is the error
/// when another job holds it.
pub fn claim(ctx: &Context, key: &[u8], busy: RedisError) -> Result<Claim, RedisError> {
    match claim_or_attach(ctx, key, None, busy)? {
        Some(c) => Ok(c),
        None => unreachable!("attaches only with a request"),
    }
}

/// Returns the request of a command, its arguments (the command name
/// included, as the client sent them): a retry of the same command has
/// the same request.
pub fn request_of(args: &[redis_module::RedisString]) -> Vec<u8> {
    let mut out = Vec::new();
    for a in args {
        let b = a.as_slice();
        out.extend_from_slice(&(b.len() as u64).to_le_bytes());
        out.extend_from_slice(b);
    }
    out
}

/// Claims `key` like [`claim`]; when a job already holds it for the same
/// `request` (a client retrying a command whose reply it gave up waiting
/// for), blocks this client until that job ends and gives it the job's
/// reply: `None`, and the command replies nothing now. Another request on
/// a busy key, or a client that cannot block, gets `busy`.
pub fn claim_or_attach(
    ctx: &Context,
    key: &[u8],
    request: Option<&[u8]>,
    busy: RedisError,
) -> Result<Option<Claim>, RedisError> {
    let db = unsafe { raw::RedisModule_GetSelectedDb.unwrap()(ctx.ctx) };
    let k = (db, key.to_vec());
    let mut map = BUSY.lock().unwrap_or_else(|p| p.into_inner());
    let map = map.get_or_insert_with(HashMap::new);
    match map.get_mut(&k) {
        None => {
            let attached = Waiters::default();
            map.insert(
                k.clone(),
                Busy {
                    request: request.map(<[u8]>::to_vec).unwrap_or_default(),
                    attached: attached.clone(),
                },
            );
            Ok(Some(Claim { key: k, attached }))
        }
        Some(b) if request.is_some_and(|r| r == b.request) && can_block(ctx) => {
            let bc = unsafe { raw::RedisModule_BlockClient.unwrap()(ctx.ctx, None, None, None, 0) };
            b.attached
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push(Attached(bc));
            Ok(None)
        }
        Some(_) => Err(busy),
    }
}

/// Releases the key whose claim has the list `w`, if it is still claimed
/// (a job's worker releases it before the job drops its claim).
fn release(w: &Waiters) {
    let mut map = BUSY.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(map) = map.as_mut() {
        map.retain(|_, b| !std::sync::Arc::ptr_eq(&b.attached, w));
    }
}

impl Drop for Claim {
    fn drop(&mut self) {
        // The key may have been released already, and claimed since by
        // another job: only this claim's entry goes.
        let mut map = BUSY.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(map) = map.as_mut() {
            if map
                .get(&self.key)
                .is_some_and(|b| std::sync::Arc::ptr_eq(&b.attached, &self.attached))
            {
                map.remove(&self.key);
            }
        }
    }
}

/// Replicates `cmd` with `args`, Redis strings passed as they are (format
/// `v`): a slice's `ZADD` of a thousand members creates no string here.
pub fn replicate(ctx: &Context, cmd: &CStr, args: &[redis_module::RedisString]) {
    let argv: Vec<*mut raw::RedisModuleString> = args.iter().map(|a| a.inner).collect();
    unsafe {
        raw::RedisModule_Replicate.unwrap()(
            ctx.ctx,
            cmd.as_ptr(),
            c"v".as_ptr(),
            argv.as_ptr(),
            argv.len(),
        );
    }
}
