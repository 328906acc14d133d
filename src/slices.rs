//! Large operations in bounded slices, the way Redis rehashes a dict.
//!
//! A command whose work grows with the size of the data (POLL.SYNC of a
//! million-candidate board, RANK.MERGE of million-member boards) runs as a
//! [`Job`]. The command does the first slice itself and, when that slice
//! finishes the job (small data), replies at once. Otherwise it blocks only
//! its own client (`RM_BlockClient`) and the rest of the job runs in slices
//! of about [`SLICE`] each, from a module timer on the main thread, between
//! the other clients' commands. No other client waits more than one slice.
//! Each slice replicates its own effects as native commands, so replicas
//! and the AOF follow slice by slice; the blocked client gets its reply
//! when the last slice is done, and a long reply is itself handed over in
//! slices.
//!
//! Where a client cannot block (inside MULTI or a script, or the stream of
//! a master), the job runs to its end at once, as a large native command
//! would.
//!
//! The slices run on the main thread rather than on a thread that takes the
//! server lock: the work reads and writes keys in every slice, so a thread
//! would hold the lock for the same time and add a hand-over per slice.
//! Between two slices the timer waits one millisecond (the resolution of
//! module timers), so a job's wall time is about twice its work.

use std::cell::RefCell;
use std::collections::HashSet;
use std::ffi::CStr;
use std::os::raw::c_long;
use std::time::{Duration, Instant};

use redis_module::{raw, Context, ContextFlags, RedisError, RedisResult, RedisValue};

/// How long one slice works before it yields to other clients.
pub const SLICE: Duration = Duration::from_micros(800);

/// What a slice of a job ended with.
pub enum Step {
    /// Work is left for the next slice.
    More,
    /// The job is over; this is the client's reply.
    Done(RedisResult),
}

/// A large operation cut into slices.
pub trait Job: 'static {
    /// Works until `deadline` (looking at the clock every few dozen items)
    /// and returns whether work is left. A slice leaves the data in a state
    /// other commands may read and write.
    fn step(&mut self, ctx: &Context, deadline: Instant) -> Step;

    /// Returns the latency-monitor event of the job's slices, e.g.
    /// `hotpath-rank-merge`: a slice that runs over
    /// `latency-monitor-threshold` shows in `LATENCY LATEST`.
    fn event(&self) -> &'static CStr;
}

/// Returns true when `deadline` has passed; called every `every` items.
pub fn due(n: usize, deadline: Instant) -> bool {
    n % 32 == 31 && Instant::now() >= deadline
}

fn report(event: &CStr, start: Instant) {
    if let Some(add) = unsafe { raw::RedisModule_LatencyAddSample } {
        let ms = start.elapsed().as_millis() as raw::mstime_t;
        unsafe { add(event.as_ptr(), ms) };
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
        && unsafe { raw::RedisModule_CreateTimer }.is_some()
}

/// Runs `job` for the command being executed: to the end within this call
/// when it fits in one slice (or the client cannot block), otherwise in
/// slices with the client blocked. Returns the command's reply (no reply
/// when the client was blocked: it gets the reply at the end).
pub fn run(ctx: &Context, mut job: Box<dyn Job>) -> RedisResult {
    let start = Instant::now();
    let first = job.step(ctx, start + SLICE);
    report(job.event(), start);
    if let Step::Done(r) = first {
        return r;
    }
    if !can_block(ctx) {
        let far = Instant::now() + Duration::from_secs(365 * 86_400);
        loop {
            if let Step::Done(r) = job.step(ctx, far) {
                return r;
            }
        }
    }
    let bc = unsafe { raw::RedisModule_BlockClient.unwrap()(ctx.ctx, None, None, None, 0) };
    schedule(
        ctx,
        Running {
            job,
            bc,
            emit: None,
        },
    );
    Ok(RedisValue::NoReply)
}

/// A job in progress with its blocked client.
struct Running {
    job: Box<dyn Job>,
    bc: *mut raw::RedisModuleBlockedClient,
    /// A long array reply being handed over: (reply context, items, next).
    emit: Option<(*mut raw::RedisModuleCtx, Vec<RedisValue>, usize)>,
}

fn schedule(ctx: &Context, r: Running) {
    ctx.create_timer(Duration::ZERO, tick, r);
}

fn tick(ctx: &Context, mut r: Running) {
    let start = Instant::now();
    let deadline = start + SLICE;
    if r.emit.is_none() {
        match r.job.step(ctx, deadline) {
            Step::More => {
                report(r.job.event(), start);
                return schedule(ctx, r);
            }
            Step::Done(reply) => {
                let tsc = unsafe { raw::RedisModule_GetThreadSafeContext.unwrap()(r.bc) };
                match reply {
                    Ok(RedisValue::Array(items)) => {
                        unsafe {
                            raw::RedisModule_ReplyWithArray.unwrap()(tsc, items.len() as c_long)
                        };
                        r.emit = Some((tsc, items, 0));
                    }
                    other => {
                        Context::new(tsc).reply(other);
                        return finish(r.bc, tsc, r.job.event(), start);
                    }
                }
            }
        }
    }
    // Hand a long reply over in slices: building it is work too.
    let (tsc, items, next) = r.emit.as_mut().expect("emitting");
    let rctx = Context::new(*tsc);
    while *next < items.len() {
        emit_one(
            &rctx,
            std::mem::replace(&mut items[*next], RedisValue::Null),
        );
        *next += 1;
        if due(*next, deadline) {
            break;
        }
    }
    if *next < items.len() {
        report(r.job.event(), start);
        return schedule(ctx, r);
    }
    let tsc = *tsc;
    finish(r.bc, tsc, r.job.event(), start)
}

fn finish(
    bc: *mut raw::RedisModuleBlockedClient,
    tsc: *mut raw::RedisModuleCtx,
    event: &CStr,
    start: Instant,
) {
    unsafe {
        raw::RedisModule_FreeThreadSafeContext.unwrap()(tsc);
        raw::RedisModule_UnblockClient.unwrap()(bc, std::ptr::null_mut());
    }
    report(event, start);
}

fn emit_one(ctx: &Context, v: RedisValue) {
    match v {
        RedisValue::Integer(i) => unsafe {
            raw::RedisModule_ReplyWithLongLong.unwrap()(ctx.ctx, i);
        },
        RedisValue::StringBuffer(b) => unsafe {
            raw::RedisModule_ReplyWithStringBuffer.unwrap()(ctx.ctx, b.as_ptr().cast(), b.len());
        },
        other => {
            ctx.reply(Ok(other));
        }
    }
}

thread_local! {
    /// The (database, key) pairs a job is working on; main thread only.
    static BUSY: RefCell<HashSet<(i32, Vec<u8>)>> = RefCell::new(HashSet::new());
}

/// A key a job works on until it drops this claim.
pub struct Claim {
    key: (i32, Vec<u8>),
}

/// Claims `key` in the client's database for a job; `busy` is the error
/// when another job holds it.
pub fn claim(ctx: &Context, key: &[u8], busy: RedisError) -> Result<Claim, RedisError> {
    let db = unsafe { raw::RedisModule_GetSelectedDb.unwrap()(ctx.ctx) };
    let k = (db, key.to_vec());
    BUSY.with(|b| {
        if b.borrow_mut().insert(k.clone()) {
            Ok(Claim { key: k })
        } else {
            Err(busy)
        }
    })
}

impl Drop for Claim {
    fn drop(&mut self) {
        BUSY.with(|b| {
            b.borrow_mut().remove(&self.key);
        });
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
