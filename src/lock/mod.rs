//! LOCK — distributed locks and semaphores with fencing tokens: reentrant,
//! renewable with a hard cap (a watchdog cannot hold for ever), released
//! and renewed only by their owner, and fair blocking acquisition (first
//! come, first served, woken by a release or a lease end, never by
//! polling).
//!
//! Keys: `B` only (no derived keys, so no hash tag is needed):
//! - a mutex (`LIMIT 1`, the default) is a String
//!   `<fence>:<count>:<expires>:<until>:<owner>`;
//! - a semaphore (`LIMIT n`, 2 ≤ n ≤ 100) is a Hash: `fence`, `limit`,
//!   `next`, and `holder:<owner>` = `<token>:<count>:<expires>:<until>`.
//!
//! `B` never expires: its fence (the last token issued) must outlive every
//! lease, so that tokens strictly increase for the whole life of the lock
//! name, across lease ends, restarts, AOF replay and failover.
//!
//! Commands:
//! - `LOCK.ACQUIRE B owner ttl-ms [LIMIT n] [MAXHOLD ms] [BLOCK timeout-ms] [NOW unix-ms]`
//! - `LOCK.RELEASE B owner [NOW unix-ms]`
//! - `LOCK.RENEW B owner ttl-ms [NOW unix-ms]`
//! - `LOCK.INFO B [NOW unix-ms]`
//! - `LOCK.CHECK B token [NOW unix-ms]`

pub mod commands;
pub mod model;

use crate::registry::{CommandSpec, Keys};
use crate::stats::Counter;

/// The family's name in errors (`ERR lock: …`).
pub const FAMILY: &str = "lock";

/// New holds (a new token).
pub static COUNT_ACQUIRED: Counter = Counter::new("lock_acquired");
/// Reentrant acquisitions (same owner, same token).
pub static COUNT_REENTERED: Counter = Counter::new("lock_reentered");
/// Acquisitions refused (held by others, semaphore full) without waiting.
pub static COUNT_BUSY: Counter = Counter::new("lock_busy");
/// Clients that blocked waiting for a lock.
pub static COUNT_WAITS: Counter = Counter::new("lock_waits");
/// Waiting clients handed the lock (by a release, a lease end, a timer).
pub static COUNT_HANDOFFS: Counter = Counter::new("lock_handoffs");
/// Releases by the owner.
pub static COUNT_RELEASED: Counter = Counter::new("lock_released");
/// Renewals by the owner.
pub static COUNT_RENEWED: Counter = Counter::new("lock_renewed");

/// The family's counters, shown by `INFO hotpath`.
pub static COUNTERS: &[&Counter] = &[
    &COUNT_ACQUIRED,
    &COUNT_REENTERED,
    &COUNT_BUSY,
    &COUNT_WAITS,
    &COUNT_HANDOFFS,
    &COUNT_RELEASED,
    &COUNT_RENEWED,
];

const B: Keys = Keys::Range { first: 1, last: 1 };

/// The family's commands.
pub const COMMANDS: &[CommandSpec] = &[
    crate::borrowed_command! {
        name: "lock.acquire",
        handler: commands::lock_acquire,
        flags: "write deny-oom blocking",
        arity: -4,
        keys: B,
        acl: "write blocking",
        summary: "Acquires a lock or semaphore slot for an owner and replies its fencing token (nil when busy); reentrant; BLOCK waits in line",
        complexity: "O(1); a semaphore of N holders: O(N) when a lease has ended",
        syntax: "key owner ttl-ms [LIMIT n] [MAXHOLD ms] [BLOCK timeout-ms] [NOW unix-ms] [IDEM token]",
        reply: "integer", idem: true
    },
    crate::borrowed_command! {
        name: "lock.release",
        handler: commands::lock_release,
        flags: "write fast",
        arity: -3,
        keys: B,
        acl: "write fast",
        summary: "Releases one acquisition by its owner (1), or changes nothing for anyone else (0)",
        complexity: "O(1); a semaphore of N holders: O(N) when a lease has ended",
        syntax: "key owner [NOW unix-ms]",
        reply: "integer"
    },
    crate::borrowed_command! {
        name: "lock.renew",
        handler: commands::lock_renew,
        flags: "write deny-oom fast",
        arity: -4,
        keys: B,
        acl: "write fast",
        summary: "Restarts the owner's lease (never past MAXHOLD) and replies the ms left, or 0 for anyone else",
        complexity: "O(1)",
        syntax: "key owner ttl-ms [NOW unix-ms]",
        reply: "integer"
    },
    crate::borrowed_command! {
        name: "lock.info",
        handler: commands::lock_info,
        flags: "readonly fast",
        arity: -2,
        keys: B,
        acl: "read fast",
        summary: "Replies owner, token, count and ms left of every live holder",
        complexity: "O(1); a semaphore: O(N) for N holders",
        syntax: "key [NOW unix-ms]",
        reply: "array [owner, token, count, ttl_ms, …]"
    },
    crate::borrowed_command! {
        name: "lock.check",
        handler: commands::lock_check,
        flags: "readonly fast",
        arity: -3,
        keys: B,
        acl: "read fast",
        summary: "Replies 1 when a fencing token belongs to a live hold, else 0",
        complexity: "O(1); a semaphore: O(N) for N holders",
        syntax: "key token [NOW unix-ms]",
        reply: "integer"
    },
];
