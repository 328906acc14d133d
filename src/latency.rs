//! Long module work in `LATENCY LATEST`: while the latency monitor is on,
//! every command runs inside a measurement (the `command!` macro and
//! `registry::dispatch_measured`), and a call that takes at least
//! `latency-monitor-threshold` milliseconds is reported through
//! `RM_LatencyAddSample` under the event named after the command in lower
//! case, e.g. `redpacket.split` or `like.add`.
//!
//! The clock is read only while the latency monitor is on. Two clock reads
//! cost about 55 ns per call on the development machine, a few percent of
//! a one-microsecond command, so the default (monitor off) pays one relaxed
//! atomic load and a branch instead (callgrind: 3 instructions per call). The threshold is read with `CONFIG GET` at load and
//! again whenever `CONFIG SET` changes it (the server's config-change
//! event). `RM_LatencyAddSample` must not be called with the monitor off:
//! Redis's own check there (`latency >= threshold`) lets every sample
//! through when the threshold is 0.

use std::ffi::{CStr, CString};
use std::os::raw::c_void;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;

use redis_module::{raw, Context, RedisValue};

/// The server's `latency-monitor-threshold` in ms; 0 when the monitor is
/// off (the default) or the module cannot follow the setting.
static THRESHOLD_MS: AtomicI64 = AtomicI64::new(0);

const SETTING: &str = "latency-monitor-threshold";

/// Returns true while the latency monitor is on.
#[inline(always)]
pub fn on() -> bool {
    THRESHOLD_MS.load(Ordering::Relaxed) > 0
}

/// Starts measuring a command: the start instant while the latency
/// monitor is on, `None` (and no clock read) while it is off.
#[inline(always)]
pub fn start() -> Option<Instant> {
    if on() {
        Some(Instant::now())
    } else {
        None
    }
}

/// Ends a measurement begun by [`start`]: reports the call under `event`
/// (lower-cased) when it took at least the threshold.
#[inline(always)]
pub fn finish(started: Option<Instant>, event: &str) {
    if let Some(t) = started {
        let ms = t.elapsed().as_millis().min(i64::MAX as u128) as i64;
        let threshold = THRESHOLD_MS.load(Ordering::Relaxed);
        if threshold > 0 && ms >= threshold {
            report(event, ms);
        }
    }
}

/// Adds one sample to the server's latency monitor (the cold path).
#[cold]
fn report(event: &str, ms: i64) {
    if let Some(add) = unsafe { raw::RedisModule_LatencyAddSample } {
        // The server copies the event name.
        if let Ok(name) = CString::new(event.to_ascii_lowercase()) {
            unsafe { add(name.as_ptr(), ms) };
        }
    }
}

/// Reads `latency-monitor-threshold` from the server into the cache.
fn refresh(ctx: &Context) {
    let v = match ctx.call("CONFIG", &["GET", SETTING]) {
        Ok(RedisValue::Array(items)) => items.get(1).and_then(|v| match v {
            RedisValue::BulkString(s) | RedisValue::SimpleString(s) => s.parse::<i64>().ok(),
            RedisValue::BulkRedisString(s) => s.to_string_lossy().parse::<i64>().ok(),
            RedisValue::StringBuffer(b) => std::str::from_utf8(b).ok()?.parse::<i64>().ok(),
            _ => None,
        }),
        _ => None,
    };
    THRESHOLD_MS.store(v.unwrap_or(0).max(0), Ordering::Relaxed);
}

extern "C" fn on_config_change(
    ctx: *mut raw::RedisModuleCtx,
    _eid: raw::RedisModuleEvent,
    _subevent: u64,
    data: *mut c_void,
) {
    // SAFETY: the server passes a RedisModuleConfigChange (version 1) with
    // `num_changes` C strings.
    let change = unsafe { &*(data as *const raw::RedisModuleConfigChange) };
    let ours = (0..change.num_changes as isize).any(|i| {
        let name = unsafe { CStr::from_ptr(*change.config_names.offset(i)) };
        name.to_bytes().eq_ignore_ascii_case(SETTING.as_bytes())
    });
    if ours {
        refresh(&Context::new(ctx));
    }
}

/// Reads the threshold and follows its changes. Must run inside
/// `RedisModule_OnLoad`. On a server without the config-change event
/// (before Redis 7.0) the module cannot see the threshold change, so it
/// reports nothing and says so in the log.
pub fn init(ctx: &Context) {
    let subscribed = match unsafe { raw::RedisModule_SubscribeToServerEvent } {
        Some(sub) => {
            let event = raw::RedisModuleEvent {
                id: raw::REDISMODULE_EVENT_CONFIG,
                dataver: 1,
            };
            unsafe { sub(ctx.ctx, event, Some(on_config_change)) == raw::REDISMODULE_OK as i32 }
        }
        None => false,
    };
    if subscribed && unsafe { raw::RedisModule_LatencyAddSample }.is_some() {
        refresh(ctx);
    } else {
        ctx.log_notice("this server has no config-change event: module latency events are off");
    }
}
