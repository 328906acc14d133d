//! IDEM — application idempotency keys for work done outside Redis (a
//! payment, an email): BEGIN claims a key for one request (identified by
//! the caller's fingerprint) with a fencing number and an in-progress
//! lease; a retry is told the request is running, gets the stored result
//! once it is done, or is told it reuses the key for another request.
//! COMPLETE stores the result only under the fence that holds the record,
//! so a worker that stalled past its lease and was taken over cannot
//! overwrite it.
//!
//! Keys: `B` only, a Hash (no derived keys, so no hash tag is needed):
//! `state` (`running` | `done` | `aborted`), `fp`, `fence`, `lease`,
//! `ttl` and, once done, `result`. `B` expires `ttl` seconds after the
//! BEGIN that created or took it over (never before its lease end), and
//! again `ttl` seconds after COMPLETE.
//!
//! Commands:
//! - `IDEM.BEGIN B fingerprint lease-ms [TTL seconds] [NOW unix-ms]`
//! - `IDEM.COMPLETE B fence result [NOW unix-ms]`
//! - `IDEM.ABORT B fence`
//! - `IDEM.GET B [NOW unix-ms]`

pub mod commands;
pub mod model;

use crate::registry::{CommandSpec, Keys};
use crate::stats::Counter;

/// The family's name in errors (`ERR idem: …`).
pub const FAMILY: &str = "idem";

/// BEGINs that answered NEW (a new or taken-over record).
pub static COUNT_BEGUN: Counter = Counter::new("idem_begun");
/// BEGINs that took over a record whose lease was over.
pub static COUNT_TAKEN_OVER: Counter = Counter::new("idem_taken_over");
/// BEGINs that answered RUNNING (the 409 of the IETF draft).
pub static COUNT_RUNNING: Counter = Counter::new("idem_running");
/// BEGINs that answered DONE with the stored result.
pub static COUNT_REPLAYED: Counter = Counter::new("idem_replayed");
/// BEGINs that answered MISMATCH (the 422 of the IETF draft).
pub static COUNT_MISMATCHED: Counter = Counter::new("idem_mismatched");
/// Results stored by COMPLETE.
pub static COUNT_COMPLETED: Counter = Counter::new("idem_completed");
/// COMPLETEs refused for a stale fence.
pub static COUNT_STALE: Counter = Counter::new("idem_stale");
/// Records aborted.
pub static COUNT_ABORTED: Counter = Counter::new("idem_aborted");

/// The family's counters, shown by `INFO hotpath`.
pub static COUNTERS: &[&Counter] = &[
    &COUNT_BEGUN,
    &COUNT_TAKEN_OVER,
    &COUNT_RUNNING,
    &COUNT_REPLAYED,
    &COUNT_MISMATCHED,
    &COUNT_COMPLETED,
    &COUNT_STALE,
    &COUNT_ABORTED,
    // `IDEM token` on the other families' writes (src/idem_token/).
    &crate::idem_token::STORED,
    &crate::idem_token::REPLAYED,
    &crate::idem_token::MISMATCHED,
    &crate::idem_token::SWEPT,
    &crate::idem_token::EVICTED,
];

const B: Keys = Keys::Range { first: 1, last: 1 };

/// The family's commands.
pub const COMMANDS: &[CommandSpec] = &[
    crate::borrowed_command! {
        name: "idem.begin",
        handler: commands::idem_begin,
        flags: "write deny-oom fast",
        arity: -4,
        keys: B,
        acl: "write fast",
        summary: "Begins a request under an idempotency key: NEW with a fence, RUNNING with the lease left, DONE with the stored result, or MISMATCH",
        complexity: "O(1)",
        syntax: "key fingerprint lease-ms [TTL seconds] [NOW unix-ms]",
        reply: "array [status, value]",
        since: "2.0.0"
    },
    crate::borrowed_command! {
        name: "idem.complete",
        handler: commands::idem_complete,
        flags: "write deny-oom fast",
        arity: -4,
        keys: B,
        acl: "write fast",
        summary: "Stores the result of the request begun with this fence (1), or 0 when that exact result is stored already; a stale fence is refused",
        complexity: "O(1)",
        syntax: "key fence result [NOW unix-ms]",
        reply: "integer",
        since: "2.0.0"
    },
    crate::borrowed_command! {
        name: "idem.abort",
        handler: commands::idem_abort,
        flags: "write deny-oom fast",
        arity: 3,
        keys: B,
        acl: "write fast",
        summary: "Gives up the request begun with this fence, so that the next BEGIN starts again (1), or changes nothing (0)",
        complexity: "O(1)",
        syntax: "key fence",
        reply: "integer",
        since: "2.0.0"
    },
    crate::borrowed_command! {
        name: "idem.get",
        handler: commands::idem_get,
        flags: "readonly fast",
        arity: -2,
        keys: B,
        acl: "read fast",
        summary: "Replies a record's state, fingerprint, fence, lease left and result, or nil",
        complexity: "O(1)",
        syntax: "key [NOW unix-ms]",
        reply: "array [state, fingerprint, fence, lease_ms, result]",
        since: "2.0.0"
    },
];
