//! RATE — every common rate-limit algorithm in one atomic, exactly
//! replicated call, at microsecond resolution.
//!
//! Keys: the limiter `B` itself, no derived keys (so no hash tag needed):
//! - GCRA: String `gcra:<ms>:<num>:<den>` — the theoretical arrival time
//!   `ms + num/den` ms, exact (`den` is `1000 × limit`).
//! - FIXED: String `fixed:<window-start-ms>:<count>`.
//! - SLIDING: String `sliding:<window-start-ms>:<count>:<prev>`.
//! - LOG: Sorted Set of `<µs, 16 digits>-<n>` members scored by request
//!   time (µs).
//! - BUCKET: String `bucket:<tokens>:<carry>:<ts-µs>`.
//!
//! Every write sets the key to expire when the limiter would be back to
//! full, so idle limiters vanish by themselves. States written by the
//! millisecond version are read (docs/rate.md, "Migration").
//!
//! Commands: RATE.CHECK, RATE.MULTI, RATE.THROTTLE (redis-cell's
//! `CL.THROTTLE` reply), RATE.RESET.

pub mod commands;
pub mod model;

use crate::registry::{CommandSpec, Keys};
use crate::stats::Counter;

use commands::*;

pub static ALLOWED: Counter = Counter::new("rate_allowed");
pub static LIMITED: Counter = Counter::new("rate_limited");
pub static RESETS: Counter = Counter::new("rate_resets");

/// `INFO hotpath` counters of RATE.
pub static COUNTERS: &[&Counter] = &[&ALLOWED, &LIMITED, &RESETS];

const B: Keys = Keys::Range { first: 1, last: 1 };

/// RATE's command table.
pub const COMMANDS: &[CommandSpec] = &[
    crate::borrowed_command!(name: "rate.check", handler: rate_check, flags: "write deny-oom fast", arity: -4, keys: B,
        acl: "write fast", summary: "Checks and consumes one request against a rate limit",
        complexity: "O(1); LOG: O((C + 128) log N) for cost C (at most 100)",
        syntax: "key limit period-ms [ALGO GCRA|FIXED|SLIDING|LOG|BUCKET] [BURST burst] [COST cost] [PEEK] [NOW unix-ms | NOWUS unix-us] [IDEM token]",
        reply: "array [allowed, limit, remaining, retry_after_ms, reset_after_ms]", idem: true),
    crate::command!(name: "rate.multi", handler: rate_multi, flags: "write deny-oom fast", arity: -6,
        keys: Keys::Numkeys { numkeys: 1 }, acl: "write fast",
        summary: "Checks several GCRA rules together, consuming only if all allow",
        complexity: "O(N) for N rules (at most 100)",
        syntax: "numkeys key [key ...] LIMITS limit period-ms [limit period-ms ...] [COST cost] [PEEK] [NOW unix-ms | NOWUS unix-us] [IDEM token]",
        reply: "the five integers of RATE.CHECK", idem: true),
    crate::borrowed_command!(name: "rate.throttle", handler: rate_throttle, flags: "write deny-oom fast", arity: -5, keys: B,
        acl: "write fast", summary: "redis-cell's CL.THROTTLE, reply for reply", complexity: "O(1)",
        syntax: "key max-burst count period-s [quantity] [NOW unix-ms | NOWUS unix-us] [IDEM token]",
        reply: "array [limited, limit, remaining, retry-after-s, reset-after-s]", idem: true),
    crate::borrowed_command!(name: "rate.reset", handler: rate_reset, flags: "write fast", arity: 2, keys: B,
        acl: "write fast", summary: "Drops a limiter's state", complexity: "O(1): a long LOG is freed in the background",
        syntax: "key",
        reply: "integer"),
];
