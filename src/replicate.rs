//! Replicated commands written through `RedisModule_Replicate` with
//! arguments passed as they are: the client's own strings (shared, not
//! copied), constants made once, byte buffers and integers that Redis
//! turns into strings itself. Each function is one command shape a family
//! replicates on its write path; none builds a string on our side unless
//! it says so.

use std::ffi::CStr;
use std::os::raw::{c_char, c_int, c_longlong};
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use redis_module::{raw, Context, RedisString};

use crate::keys::call::Arg;

type ReplicateFn =
    unsafe extern "C" fn(*mut raw::RedisModuleCtx, *const c_char, *const c_char, ...) -> c_int;

#[inline]
fn replicator() -> Option<ReplicateFn> {
    unsafe { raw::RedisModule_Replicate }
}

/// Returns a Redis string for a constant argument of replicated commands
/// (`PXAT`, `KEEPTTL`), created once and kept: `RedisModule_Replicate`
/// then only counts a reference to it instead of allocating a new string
/// per call. Commands run on the main thread only.
fn constant(slot: &AtomicPtr<raw::RedisModuleString>, text: &CStr) -> *mut raw::RedisModuleString {
    let p = slot.load(Ordering::Relaxed);
    if !p.is_null() {
        return p;
    }
    let bytes = text.to_bytes();
    let s = unsafe {
        raw::RedisModule_CreateString.unwrap()(ptr::null_mut(), text.as_ptr(), bytes.len())
    };
    slot.store(s, Ordering::Relaxed);
    s
}

static PXAT: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(ptr::null_mut());
static KEEPTTL: AtomicPtr<raw::RedisModuleString> = AtomicPtr::new(ptr::null_mut());

/// Replicates `cmd args…`, every argument a Redis string (format `v`).
#[inline]
pub fn command(ctx: &Context, cmd: &CStr, args: &[Arg]) {
    let Some(f) = replicator() else { return };
    unsafe {
        f(
            ctx.ctx,
            cmd.as_ptr(),
            c"v".as_ptr(),
            args.as_ptr(),
            args.len(),
        )
    };
}

/// Replicates `cmd args…` as [`command`] does, with the format spelled
/// out (`sss`, `sssss`) for three or five arguments: Redis sizes its
/// argument vector from the format, so `v` costs a reallocation.
#[inline]
pub fn command_fixed(ctx: &Context, cmd: &CStr, args: &[Arg]) {
    let Some(f) = replicator() else { return };
    unsafe {
        match *args {
            [a, b, c] => f(ctx.ctx, cmd.as_ptr(), c"sss".as_ptr(), a, b, c),
            [a, b, c, d, e] => f(ctx.ctx, cmd.as_ptr(), c"sssss".as_ptr(), a, b, c, d, e),
            _ => f(
                ctx.ctx,
                cmd.as_ptr(),
                c"v".as_ptr(),
                args.as_ptr(),
                args.len(),
            ),
        }
    };
}

/// Replicates the client's command (`args[0]` its name) with `extra`
/// Redis strings appended, in one call: no vector on the heap for up to
/// eight arguments, no string built here.
#[inline]
pub fn client_command_with(ctx: &Context, args: &[RedisString], extra: &[Arg]) {
    let mut argv: smallvec::SmallVec<[Arg; 8]> = args[1..].iter().map(|a| a.inner).collect();
    argv.extend_from_slice(extra);
    // The command name as the client sent it: an sds, so NUL-terminated.
    let mut len = 0usize;
    let name = raw::string_ptr_len(args[0].inner, &mut len);
    unsafe {
        raw::RedisModule_Replicate.unwrap()(
            ctx.ctx,
            name,
            c"v".as_ptr(),
            argv.as_ptr(),
            argv.len(),
        );
    }
}

/// Replicates a client's command that read the clock (issue 27, decision
/// 1): verbatim when `verbatim` (the client gave `NOW`, or the effect did
/// not depend on the clock: nearly free), else with the master's `NOW`
/// appended ([`client_command_now`]). The one place every family decides
/// this.
#[inline]
pub fn with_clock(ctx: &Context, args: &[RedisString], now: i64, verbatim: bool) {
    if verbatim {
        ctx.replicate_verbatim();
    } else {
        client_command_now(ctx, args, now);
    }
}

/// Replicates the client's command with `NOW <now>` appended, with every
/// argument passed as a Redis string (`RM_Replicate` format `vss`: the
/// client's strings, the string `NOW` made once, the instant's string
/// kept while the clock stays on the same millisecond).
/// On a hot path this saves about two thousand instructions per call.
pub fn client_command_now(ctx: &Context, args: &[RedisString], now: i64) {
    thread_local! {
        /// The argument `NOW`, made once (main thread only).
        static NOW: RedisString = RedisString::create_from_slice(std::ptr::null_mut(), b"NOW");
    }
    let argv: smallvec::SmallVec<[*mut redis_module::raw::RedisModuleString; 8]> =
        args[1..].iter().map(|a| a.inner).collect();
    // A command name's string is an sds, which is always NUL-terminated.
    let mut len = 0usize;
    let name = redis_module::raw::string_ptr_len(args[0].inner, &mut len);
    let replicate = unsafe { redis_module::raw::RedisModule_Replicate.unwrap() };
    let at = instant_string(now);
    NOW.with(|now_arg| unsafe {
        if let [a, b, c] = argv[..] {
            // Three arguments (POLL.VOTE): Redis sizes its argument vector
            // from the format, so `v` would cost a reallocation.
            replicate(ctx.ctx, name, c"sssss".as_ptr(), a, b, c, now_arg.inner, at);
        } else {
            replicate(
                ctx.ctx,
                name,
                c"vss".as_ptr(),
                argv.as_ptr(),
                argv.len(),
                now_arg.inner,
                at,
            );
        }
    });
}

/// Returns a Redis string of `now` (decimal), kept between calls while
/// `now` stays the same: the writes of one millisecond (hundreds on a hot
/// server) share one string, which `RM_Replicate` only counts a reference
/// to, instead of Redis making and freeing one per call for format `l`
/// (about 700 instructions). The string is never changed once made (a
/// new instant makes a new one; the old one lives on in any replicated
/// command that still holds it). Commands run on the main thread only.
fn instant_string(now: i64) -> *mut raw::RedisModuleString {
    thread_local! {
        static LAST: std::cell::RefCell<Option<(i64, RedisString)>> =
            const { std::cell::RefCell::new(None) };
    }
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        match &*last {
            Some((at, s)) if *at == now => s.inner,
            _ => {
                let s = RedisString::create_from_slice(
                    ptr::null_mut(),
                    itoa::Buffer::new().format(now).as_bytes(),
                );
                let inner = s.inner;
                *last = Some((now, s));
                inner
            }
        }
    })
}

/// Replicates `cmd args… NOW <now>` with `NOW` a C string and `now` an
/// integer (format `vcl`): no string built here.
#[inline]
pub fn command_now(ctx: &Context, cmd: &CStr, args: &[RedisString], now: i64) {
    let Some(f) = replicator() else { return };
    let argv: smallvec::SmallVec<[Arg; 8]> = args.iter().map(|a| a.inner).collect();
    unsafe {
        f(
            ctx.ctx,
            cmd.as_ptr(),
            c"vcl".as_ptr(),
            argv.as_ptr(),
            argv.len(),
            c"NOW".as_ptr(),
            now as c_longlong,
        )
    };
}

/// Replicates `cmd args… <kw> <v> NOW <now>` with the keyword a C string
/// and the numbers integers (format `vclcl`): a command that read a config
/// (`kw v`, e.g. `TTL`) and the clock, made explicit for replicas and the
/// AOF.
#[inline]
pub fn command_kw_now(
    ctx: &Context,
    cmd: &CStr,
    args: &[RedisString],
    kw: &CStr,
    v: i64,
    now: i64,
) {
    let Some(f) = replicator() else { return };
    let argv: smallvec::SmallVec<[Arg; 8]> = args.iter().map(|a| a.inner).collect();
    unsafe {
        f(
            ctx.ctx,
            cmd.as_ptr(),
            c"vclcl".as_ptr(),
            argv.as_ptr(),
            argv.len(),
            kw.as_ptr(),
            v as c_longlong,
            c"NOW".as_ptr(),
            now as c_longlong,
        )
    };
}

/// Replicates `cmd key <n> [<kw> <m>] NOW <now>`: the key the client's own
/// string, the keyword a C string, the numbers integers (formats `slcl`,
/// `slclcl`).
#[inline]
pub fn key_int_now(
    ctx: &Context,
    cmd: &CStr,
    key: &RedisString,
    n: i64,
    kw: Option<(&CStr, i64)>,
    now: i64,
) {
    let Some(f) = replicator() else { return };
    unsafe {
        match kw {
            None => f(
                ctx.ctx,
                cmd.as_ptr(),
                c"slcl".as_ptr(),
                key.inner,
                n as c_longlong,
                c"NOW".as_ptr(),
                now as c_longlong,
            ),
            Some((kw, m)) => f(
                ctx.ctx,
                cmd.as_ptr(),
                c"slclcl".as_ptr(),
                key.inner,
                n as c_longlong,
                kw.as_ptr(),
                m as c_longlong,
                c"NOW".as_ptr(),
                now as c_longlong,
            ),
        };
    }
}

/// Replicates `cmd key`, the key the client's own string.
#[inline]
pub fn key_only(ctx: &Context, cmd: &CStr, name: &RedisString) {
    let Some(f) = replicator() else { return };
    unsafe {
        f(ctx.ctx, cmd.as_ptr(), c"s".as_ptr(), name.inner);
    }
}

/// Replicates `cmd key bytes`: the key the client's own string (format
/// `s`, shared), the other argument a byte buffer (format `b`).
#[inline]
fn key_bytes(ctx: &Context, cmd: &CStr, key: &RedisString, bytes: &[u8]) {
    let Some(f) = replicator() else { return };
    unsafe {
        f(
            ctx.ctx,
            cmd.as_ptr(),
            c"sb".as_ptr(),
            key.inner,
            bytes.as_ptr() as *const c_char,
            bytes.len(),
        )
    };
}

/// Replicates `SET key value`, the value a byte buffer: no module string
/// is built for the key or the value (the LOCK mutex hot path).
#[inline]
pub fn set(ctx: &Context, key: &RedisString, value: &[u8]) {
    key_bytes(ctx, c"SET", key, value);
}

/// Replicates `PEXPIREAT key at`, the instant as text.
#[inline]
pub fn pexpireat(ctx: &Context, name: &RedisString, at: i64) {
    key_bytes(
        ctx,
        c"PEXPIREAT",
        name,
        itoa::Buffer::new().format(at).as_bytes(),
    );
}

/// Replicates `SET key value PXAT at`, or `SET key value KEEPTTL` when `at`
/// is None (the expiry did not move). The instant goes as text: an integer
/// argument (`l`) costs Redis a conversion and an allocation more.
#[inline]
pub fn set_at(ctx: &Context, name: &RedisString, value: &[u8], at: Option<i64>) {
    let Some(f) = replicator() else { return };
    let v = value.as_ptr() as *const c_char;
    let mut buf = itoa::Buffer::new();
    unsafe {
        match at {
            Some(at) => {
                let t = buf.format(at);
                f(
                    ctx.ctx,
                    c"SET".as_ptr(),
                    c"sbsb".as_ptr(),
                    name.inner,
                    v,
                    value.len(),
                    constant(&PXAT, c"PXAT"),
                    t.as_ptr() as *const c_char,
                    t.len(),
                )
            }
            None => f(
                ctx.ctx,
                c"SET".as_ptr(),
                c"sbs".as_ptr(),
                name.inner,
                v,
                value.len(),
                constant(&KEEPTTL, c"KEEPTTL"),
            ),
        };
    }
}

/// Replicates `ZREMRANGEBYRANK key 0 <n-1>`: removes the `n` lowest
/// members (nothing when `n` is 0).
#[inline]
pub fn zremrangebyrank_first(ctx: &Context, name: &RedisString, n: i64) {
    if n <= 0 {
        return;
    }
    let Some(f) = replicator() else { return };
    let mut buf = itoa::Buffer::new();
    let stop = buf.format(n - 1);
    unsafe {
        f(
            ctx.ctx,
            c"ZREMRANGEBYRANK".as_ptr(),
            c"scb".as_ptr(),
            name.inner,
            c"0".as_ptr(),
            stop.as_ptr() as *const c_char,
            stop.len(),
        );
    }
}

/// Replicates `ZADD key score m …`, every member with the same integer
/// score (given as text). One member goes without a vector; several share
/// one score string.
pub fn zadd_same_score(ctx: &Context, name: &RedisString, score: i64, members: &[RedisString]) {
    let Some(f) = replicator() else { return };
    let mut buf = itoa::Buffer::new();
    let s = buf.format(score);
    if members.len() == 1 {
        unsafe {
            f(
                ctx.ctx,
                c"ZADD".as_ptr(),
                c"sbs".as_ptr(),
                name.inner,
                s.as_ptr() as *const c_char,
                s.len(),
                members[0].inner,
            );
        }
    } else {
        let sc = RedisString::create_from_slice(ctx.ctx, s.as_bytes());
        let mut argv: Vec<Arg> = Vec::with_capacity(members.len() * 2);
        for m in members {
            argv.push(sc.inner);
            argv.push(m.inner);
        }
        unsafe {
            f(
                ctx.ctx,
                c"ZADD".as_ptr(),
                c"sv".as_ptr(),
                name.inner,
                argv.as_ptr(),
                argv.len(),
            );
        }
    }
}
