//! DELAYQ — a delay queue with leases: jobs with a unique id, a payload
//! and a due time; polls that lease each job to exactly one consumer for a
//! visibility timeout; acks, nacks with delay or exponential backoff,
//! lease heartbeats, dead letters after the last attempt, and re-drive.
//! A consumer that dies loses nothing: its lease runs out and the job is
//! due again, decided by data and time alone, so replicas and restarts
//! agree. Blocking polls wait in line and are woken by new jobs or a module
//! timer at the next due instant, never by polling.
//!
//! Keys of a queue `B` (public; on a cluster `B` needs a hash tag):
//! - `B:jobs` Hash, id → `<generation>:<attempt>:<max>:<leased>:<payload>`,
//!   or `…:<leased>/<lost>/<lostmax>:<payload>` for a job added with
//!   `LOSTMAX` (lost leases counted against that cap);
//! - `B:due` Sorted Set, id → the instant (unix ms) the job can next be
//!   taken: its due time while waiting, its lease end while held;
//! - `B:dead` Sorted Set, id → the instant it went to the dead letters;
//! - `B:seq` String, the last generation issued (never expires, so a
//!   receipt, `generation × 10^6 + attempt`, names one delivery for the
//!   queue's whole life).
//!
//! Commands:
//! - `DELAYQ.ADD B id payload [DELAY ms | AT unix-ms] [ATTEMPTS n] [LOSTMAX n] [REPLACE] [NOW unix-ms]`
//! - `DELAYQ.POLL B lease-ms [COUNT n] [BLOCK timeout-ms] [NOW unix-ms]`
//! - `DELAYQ.ACK B id receipt`
//! - `DELAYQ.NACK B id receipt [DELAY ms | BACKOFF base-ms max-ms] [NOW unix-ms]`
//! - `DELAYQ.EXTEND B id receipt lease-ms [NOW unix-ms]`
//! - `DELAYQ.DEAD B [COUNT n]`
//! - `DELAYQ.REDRIVE B [COUNT n | ID id] [NOW unix-ms]`
//! - `DELAYQ.INFO B [NOW unix-ms]`
//! - `DELAYQ.CANCEL B id [FORCE] [NOW unix-ms]`
//! - `DELAYQ.PEEK B [COUNT n | ID id]`
//! - `DELAYQ.PURGE B [MAXLEN n] [MAXAGE ms] [NOW unix-ms]`

pub mod commands;
pub mod model;

use crate::registry::{CommandSpec, Keys};
use crate::stats::Counter;

/// The family's name in errors (`ERR delayq: …`) and cluster checks.
pub const FAMILY: &str = "delayq";

/// Jobs added (or replaced).
pub static COUNT_ADDED: Counter = Counter::new("delayq_added");
/// Adds refused because the id exists (idempotent adds).
pub static COUNT_DUPLICATES: Counter = Counter::new("delayq_duplicates");
/// Deliveries (a job leased to a consumer).
pub static COUNT_DELIVERED: Counter = Counter::new("delayq_delivered");
/// Jobs acked.
pub static COUNT_ACKED: Counter = Counter::new("delayq_acked");
/// Jobs given back by NACK.
pub static COUNT_NACKED: Counter = Counter::new("delayq_nacked");
/// Jobs moved to the dead letters.
pub static COUNT_DEAD: Counter = Counter::new("delayq_dead");
/// Dead letters put back in line.
pub static COUNT_REDRIVEN: Counter = Counter::new("delayq_redriven");
/// Jobs removed by DELAYQ.CANCEL.
pub static COUNT_CANCELLED: Counter = Counter::new("delayq_cancelled");
/// Dead letters removed by DELAYQ.PURGE.
pub static COUNT_PURGED: Counter = Counter::new("delayq_purged");
/// Leases that ran out without an ack or a nack, found by a poll.
pub static COUNT_LOST: Counter = Counter::new("delayq_lost");
/// Jobs moved to the dead letters for more lost leases than their
/// `LOSTMAX` (also counted in `delayq_dead`).
pub static COUNT_LOST_DEAD: Counter = Counter::new("delayq_lost_dead");
/// Consumers that blocked waiting for a job.
pub static COUNT_WAITS: Counter = Counter::new("delayq_waits");

/// The family's counters, shown by `INFO hotpath`.
pub static COUNTERS: &[&Counter] = &[
    &COUNT_ADDED,
    &COUNT_DUPLICATES,
    &COUNT_DELIVERED,
    &COUNT_ACKED,
    &COUNT_NACKED,
    &COUNT_DEAD,
    &COUNT_REDRIVEN,
    &COUNT_WAITS,
    &COUNT_CANCELLED,
    &COUNT_PURGED,
    &COUNT_LOST,
    &COUNT_LOST_DEAD,
];

const B: Keys = Keys::Range { first: 1, last: 1 };

/// The family's commands.
pub const COMMANDS: &[CommandSpec] = &[
    crate::borrowed_command! {
        name: "delayq.add",
        handler: commands::delayq_add,
        flags: "write deny-oom fast",
        arity: -4,
        keys: B,
        acl: "write fast",
        summary: "Adds a job with a unique id, a payload and a due time; idempotent on the id unless REPLACE",
        complexity: "O(log N)",
        syntax: "key id payload [DELAY ms | AT unix-ms] [ATTEMPTS n] [LOSTMAX n] [REPLACE] [NOW unix-ms] [IDEM token]",
        reply: "integer", idem: true
    },
    crate::borrowed_command! {
        name: "delayq.poll",
        handler: commands::delayq_poll,
        flags: "write deny-oom blocking",
        arity: -3,
        keys: B,
        acl: "write blocking",
        summary: "Leases up to COUNT due jobs to the caller for a visibility timeout; BLOCK waits in line for one",
        complexity: "O(log N) per job taken or moved to the dead letters",
        syntax: "key lease-ms [COUNT n] [BLOCK timeout-ms] [NOW unix-ms]",
        reply: "array [id, payload, attempt, receipt, …]"
    },
    crate::borrowed_command! {
        name: "delayq.ack",
        handler: commands::delayq_ack,
        flags: "write fast",
        arity: 4,
        keys: B,
        acl: "write fast",
        summary: "Removes a job delivered with this receipt (1), or changes nothing for a stale receipt (0)",
        complexity: "O(log N)",
        syntax: "key id receipt",
        reply: "integer"
    },
    crate::borrowed_command! {
        name: "delayq.nack",
        handler: commands::delayq_nack,
        flags: "write deny-oom fast",
        arity: -4,
        keys: B,
        acl: "write fast",
        summary: "Gives a job back after a delay or backoff (1), or to the dead letters after its last attempt (2); 0 for a stale receipt",
        complexity: "O(log N)",
        syntax: "key id receipt [DELAY ms | BACKOFF base-ms max-ms] [NOW unix-ms] [IDEM token]",
        reply: "integer", idem: true
    },
    crate::borrowed_command! {
        name: "delayq.extend",
        handler: commands::delayq_extend,
        flags: "write deny-oom fast",
        arity: -5,
        keys: B,
        acl: "write fast",
        summary: "Restarts the lease of a delivery (a consumer's heartbeat); 0 for a stale receipt",
        complexity: "O(log N)",
        syntax: "key id receipt lease-ms [NOW unix-ms]",
        reply: "integer"
    },
    crate::borrowed_command! {
        name: "delayq.dead",
        handler: commands::delayq_dead,
        flags: "readonly",
        arity: -2,
        keys: B,
        acl: "read",
        summary: "Lists the oldest dead letters: id, payload, attempts, dead-at",
        complexity: "O(log N + C) for C listed",
        syntax: "key [COUNT n]",
        reply: "array [id, payload, attempts, dead_at_ms, …]"
    },
    crate::borrowed_command! {
        name: "delayq.redrive",
        handler: commands::delayq_redrive,
        flags: "write deny-oom",
        arity: -2,
        keys: B,
        acl: "write",
        summary: "Puts dead letters back in line, due now, attempts reset",
        complexity: "O(C log N) for C re-driven",
        syntax: "key [COUNT n | ID id] [NOW unix-ms]",
        reply: "integer"
    },
    crate::borrowed_command! {
        name: "delayq.info",
        handler: commands::delayq_info,
        flags: "readonly",
        arity: -2,
        keys: B,
        acl: "read",
        summary: "Replies the jobs, ready, scheduled and dead counts of a queue",
        complexity: "O(log N)",
        syntax: "key [NOW unix-ms]",
        reply: "array [jobs, n, ready, n, scheduled, n, dead, n]"
    },
    crate::borrowed_command! {
        name: "delayq.cancel",
        handler: commands::delayq_cancel,
        flags: "write fast",
        arity: -3,
        keys: B,
        acl: "write fast",
        summary: "Removes a job by id, waiting or dead (1), or 0 when there is none; a running lease only with FORCE",
        complexity: "O(log N)",
        syntax: "key id [FORCE] [NOW unix-ms]",
        reply: "integer",
        since: "2.0.0"
    },
    crate::borrowed_command! {
        name: "delayq.peek",
        handler: commands::delayq_peek,
        flags: "readonly",
        arity: -2,
        keys: B,
        acl: "read",
        summary: "Lists the jobs in line, earliest first, or one by id: id, payload, attempt, at, leased",
        complexity: "O(log N + C) for C listed",
        syntax: "key [COUNT n | ID id]",
        reply: "array [id, payload, attempt, at_ms, leased, …]",
        since: "2.0.0"
    },
    crate::borrowed_command! {
        name: "delayq.purge",
        handler: commands::delayq_purge,
        flags: "write",
        arity: -2,
        keys: B,
        acl: "write",
        summary: "Removes the oldest dead letters beyond MAXLEN or older than MAXAGE, at most 100 per call",
        complexity: "O(C log N) for C removed",
        syntax: "key [MAXLEN n] [MAXAGE ms] [NOW unix-ms]",
        reply: "integer",
        since: "2.0.0"
    },
];
