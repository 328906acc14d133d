//! The slot-migration guard: while a slot is being moved between masters,
//! commands of families that derive keys (`B:voted`, `B:set`, …) on that
//! slot answer `TRYAGAIN` instead of running.
//!
//! Why: Redis Cluster decides where a command runs from its *declared*
//! keys only. Our commands declare the base key `B`, which for most
//! families never exists (only `B:<suffix>` keys do). While a slot is
//! `MIGRATING`, the source answers `ASK` for any declared key it does not
//! hold, so every command of such an entity goes to the target, which runs
//! it with `ASKING` against whatever part of the entity has arrived there:
//! a vote is counted again in an empty poll, and the later `MIGRATE` of
//! the source's keys fails with `BUSYKEY` (measured in
//! tests/cluster_ha.rs before this guard). The guard makes the entity
//! unavailable for the few moments its slot is half-moved, the way Redis
//! answers `TRYAGAIN` to multi-key commands in that state; clients retry
//! `TRYAGAIN` on their own.
//!
//! How: a command filter notices `CLUSTER SETSLOT` (the only command that
//! starts or ends a migration on a node) and marks the slot table dirty;
//! the next guarded command reads this node's `MIGRATING`/`IMPORTING`
//! slots from `CLUSTER NODES`. While some slot is moving, the list is read
//! again at most every [`REFRESH_MS`], so a migration that ended through
//! the cluster bus (not through a `SETSLOT` sent here) stops being guarded
//! soon after. With no migration, a command pays one atomic load.

use std::os::raw::c_int;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::sync::Mutex;

use redis_module::{raw, Context, ContextFlags, RedisError, RedisValue};

/// How often the moving slots are re-read while some slot is moving.
pub const REFRESH_MS: i64 = 100;
/// For this long after a `CLUSTER SETSLOT`, the moving slots are re-read
/// at most every [`GRACE_REFRESH_MS`], even when none was found: Valkey 8+
/// replicates SETSLOT and applies it only once its replicas answered, so
/// a command that runs in between reads the old state (measured: a spread
/// entity's slot moved under load on Valkey 9 let commands with `ASKING`
/// run on the importing node, and the later `MIGRATE` failed with
/// `BUSYKEY`).
pub const GRACE_MS: i64 = 2000;
/// The re-read interval during [`GRACE_MS`].
pub const GRACE_REFRESH_MS: i64 = 1;

/// True while a refresh is due or some slot of this node is moving.
static ACTIVE: AtomicBool = AtomicBool::new(true);
/// True when a `CLUSTER SETSLOT` ran since the last refresh (and at load:
/// a restarted node reads its migrations from nodes.conf).
static DIRTY: AtomicBool = AtomicBool::new(true);
/// When the moving slots were last read (unix ms).
static LAST_REFRESH: AtomicI64 = AtomicI64::new(0);
/// When the last `CLUSTER SETSLOT` was seen (unix ms).
static SETSLOT_AT: AtomicI64 = AtomicI64::new(0);
/// The slots this node is migrating or importing, sorted.
static MOVING: Mutex<Vec<u16>> = Mutex::new(Vec::new());

/// Registers the `CLUSTER SETSLOT` watcher. A server without command
/// filters (none that loads this module) simply keeps the guard on the
/// timed refresh.
pub fn register(ctx: &Context) {
    // A standalone server moves no slots: no filter there, since a command
    // filter runs before every command of the server, native ones too.
    if !crate::util::cluster_mode(ctx) {
        ACTIVE.store(false, Ordering::Relaxed);
        DIRTY.store(false, Ordering::Relaxed);
        return;
    }
    if let Some(reg) = unsafe { raw::RedisModule_RegisterCommandFilter } {
        let flags = raw::REDISMODULE_CMDFILTER_NOSELF as c_int;
        unsafe { reg(ctx.ctx, Some(watch_setslot), flags) };
    }
}

fn filter_arg(fctx: *mut raw::RedisModuleCommandFilterCtx, pos: c_int) -> &'static [u8] {
    unsafe {
        let Some(get) = raw::RedisModule_CommandFilterArgGet else {
            return &[];
        };
        let s = get(fctx, pos);
        if s.is_null() {
            return &[];
        }
        let mut len = 0usize;
        let p = raw::RedisModule_StringPtrLen.unwrap()(s, &mut len);
        std::slice::from_raw_parts(p.cast::<u8>(), len)
    }
}

/// Runs before every command of the server: it must stay cheap, so it
/// looks at the first argument's length before anything else.
extern "C" fn watch_setslot(fctx: *mut raw::RedisModuleCommandFilterCtx) {
    let count = match unsafe { raw::RedisModule_CommandFilterArgsCount } {
        Some(f) => unsafe { f(fctx) },
        None => return,
    };
    if count < 2 {
        return;
    }
    let name = filter_arg(fctx, 0);
    if name.len() != 7 || !name.eq_ignore_ascii_case(b"cluster") {
        return;
    }
    if filter_arg(fctx, 1).eq_ignore_ascii_case(b"setslot") {
        SETSLOT_AT.store(crate::util::now_ms(), Ordering::Relaxed);
        DIRTY.store(true, Ordering::Relaxed);
        ACTIVE.store(true, Ordering::Relaxed);
    }
}

/// Returns true while some slot may be moving (the only time [`check`]
/// has anything to do): one relaxed atomic load.
#[inline]
pub fn active() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Fails with `TRYAGAIN …` when the slot of `key` is being migrated to or
/// from this node.
pub fn check(ctx: &Context, key: &[u8]) -> Result<(), RedisError> {
    if !ACTIVE.load(Ordering::Relaxed) {
        return Ok(());
    }
    // What the master sends, and the AOF, must always run: a replica that
    // refused a replicated command would silently differ from its master
    // (Valkey 8+ replicates SETSLOT, so replicas can see moving slots too).
    let flags = ctx.get_flags();
    if flags.contains(ContextFlags::REPLICATED)
        || flags.contains(ContextFlags::LOADING)
        || !flags.contains(ContextFlags::MASTER)
    {
        return Ok(());
    }
    let now = crate::util::now_ms();
    let every = if now - SETSLOT_AT.load(Ordering::Relaxed) < GRACE_MS {
        GRACE_REFRESH_MS
    } else {
        REFRESH_MS
    };
    if DIRTY.swap(false, Ordering::Relaxed) || now - LAST_REFRESH.load(Ordering::Relaxed) >= every {
        refresh(ctx, now);
    }
    let slot = crate::spread::route::key_slot(key);
    let moving = MOVING.lock().unwrap_or_else(|e| e.into_inner());
    if moving.binary_search(&slot).is_ok() {
        return Err(RedisError::String(format!(
            "TRYAGAIN hotpath: slot {slot} is being migrated; retry when it has moved"
        )));
    }
    Ok(())
}

fn refresh(ctx: &Context, now: i64) {
    let slots = if ctx.get_flags().contains(ContextFlags::CLUSTER) {
        match ctx.call("CLUSTER", &["NODES"]) {
            Ok(RedisValue::SimpleString(s)) => moving_slots(s.as_bytes()),
            Ok(RedisValue::BulkString(s)) => moving_slots(s.as_bytes()),
            Ok(RedisValue::StringBuffer(b)) => moving_slots(&b),
            Ok(RedisValue::BulkRedisString(s)) => moving_slots(s.as_slice()),
            // Unreadable: stay on guard and read again next time.
            _ => {
                DIRTY.store(true, Ordering::Relaxed);
                return;
            }
        }
    } else {
        Vec::new()
    };
    LAST_REFRESH.store(now, Ordering::Relaxed);
    // Shortly after a SETSLOT the guard stays on even with nothing moving
    // yet: the SETSLOT may not be applied (see GRACE_MS).
    let recent = now - SETSLOT_AT.load(Ordering::Relaxed) < GRACE_MS;
    ACTIVE.store(!slots.is_empty() || recent, Ordering::Relaxed);
    *MOVING.lock().unwrap_or_else(|e| e.into_inner()) = slots;
}

/// Returns the slots that `CLUSTER NODES` shows this node (`myself`)
/// migrating (`[slot->-id]`) or importing (`[slot-<-id]`), sorted.
pub fn moving_slots(nodes: &[u8]) -> Vec<u16> {
    let mut out = Vec::new();
    for line in nodes.split(|&c| c == b'\n') {
        let fields: Vec<&[u8]> = line
            .split(|&c| c == b' ')
            .filter(|f| !f.is_empty())
            .collect();
        let myself = fields
            .get(2)
            .is_some_and(|flags| flags.split(|&c| c == b',').any(|f| f == b"myself"));
        if !myself {
            continue;
        }
        for f in fields.iter().skip(8) {
            let Some(inner) = f.strip_prefix(b"[") else {
                continue;
            };
            let digits: Vec<u8> = inner
                .iter()
                .take_while(|c| c.is_ascii_digit())
                .copied()
                .collect();
            if let Some(slot) = std::str::from_utf8(&digits)
                .ok()
                .and_then(|s| s.parse::<u16>().ok())
            {
                out.push(slot);
            }
        }
    }
    out.sort_unstable();
    out.dedup();
    out
}

#[cfg(test)]
mod tests {
    use super::moving_slots;

    #[test]
    fn reads_migrating_and_importing_slots_of_myself_only() {
        let nodes = b"07c3 127.0.0.1:30004@40004 slave e7d1 0 1426238317239 4 connected\n\
67ed 127.0.0.1:30002@40002 master - 0 1426238316232 2 connected 5461-10922 [93-<-292f]\n\
292f 127.0.0.1:30001@40001 myself,master - 0 0 1 connected 0-5460 [5798->-67ed] [77-<-e7d1]\n";
        assert_eq!(moving_slots(nodes), vec![77, 5798]);
        assert_eq!(
            moving_slots(b"292f 127.0.0.1:1@2 myself,master - 0 0 1 connected 0-16383\n"),
            Vec::<u16>::new()
        );
        assert_eq!(moving_slots(b""), Vec::<u16>::new());
    }
}
