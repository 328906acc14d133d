//! RATE — every common rate-limit algorithm in one atomic, exactly
//! replicated call.
//!
//! Keys: the limiter `B` itself, no derived keys (so no hash tag needed):
//! - GCRA: String `gcra:<tat-ms>:<num>:<den>` — the theoretical arrival
//!   time `tat-ms + num/den` ms, exact (`den` is the limit).
//! - FIXED: String `fixed:<window-start-ms>:<count>`.
//! - SLIDING: Hash `algo sliding window <start-ms> count <n> prev <n>`.
//! - LOG: Sorted Set of `<ms>-<seq>` members scored by request time (ms).
//! - BUCKET: Hash `algo bucket tokens <n> carry <n> ts <ms>`.
//!
//! Every write sets the key to expire when the limiter would be back to
//! full, so idle limiters vanish by themselves.
//!
//! Commands: RATE.CHECK, RATE.MULTI, RATE.THROTTLE (redis-cell's
//! `CL.THROTTLE` reply), RATE.RESET.

pub mod commands;
pub mod model;

use crate::command;
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
    command!(name: "rate.check", handler: rate_check, flags: "write deny-oom fast", arity: -4, keys: B,
        acl: "write fast", summary: "Checks and consumes one request against a rate limit",
        complexity: "O(1); LOG: O(log N + C) for cost C"),
    command!(name: "rate.multi", handler: rate_multi, flags: "write deny-oom fast", arity: -6,
        keys: Keys::Numkeys { numkeys: 1 }, acl: "write fast",
        summary: "Checks several GCRA rules together, consuming only if all allow",
        complexity: "O(N) for N rules"),
    command!(name: "rate.throttle", handler: rate_throttle, flags: "write deny-oom fast", arity: -5, keys: B,
        acl: "write fast", summary: "redis-cell's CL.THROTTLE, reply for reply", complexity: "O(1)"),
    command!(name: "rate.reset", handler: rate_reset, flags: "write fast", arity: 2, keys: B,
        acl: "write fast", summary: "Drops a limiter's state", complexity: "O(1); LOG: O(N)"),
];
