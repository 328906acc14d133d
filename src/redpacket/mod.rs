//! REDPACKET — the WeChat-style red packet: the sender's amount is split
//! once into integer-cent shares, every user grabs at most one share,
//! atomically, and what is left can be refunded. Money is conserved under
//! any concurrency: sum of `B:grabbed` + sum of `B:pool` = `total`.
//!
//! Keys of a packet `B` (all public, read them with `redis-cli`):
//! - `B:pool` List of the shares not yet grabbed, in cents, in the order
//!   they will be handed out;
//! - `B:grabbed` Hash, user → the cents that user won;
//! - `B:meta` Hash: `total`, `count`, `state` (`open`|`closed`), `expires`
//!   (unix-ms; 0 for never), `left_cents` (the cents still in the pool, a
//!   running total kept by SPLIT, GRAB and REFUND).
//!
//! With `TTL`, every one of these keys expires at `expires` (`B:grabbed`
//! gets it when the first grab creates it).
//!
//! Commands:
//! - `REDPACKET.SPLIT B total-cents count [MODE RANDOM|EQUAL] [TTL seconds] [NOW unix-ms]`
//! - `REDPACKET.GRAB B user [NOW unix-ms]`
//! - `REDPACKET.INFO B [NOW unix-ms]`
//! - `REDPACKET.GRABBED B`
//! - `REDPACKET.REFUND B`
//!
//! The splitting (double-mean or equal) and the grab decision are pure
//! logic in [`model`]; the handlers are in [`commands`].

pub mod commands;
pub mod model;

use crate::registry::{CommandSpec, Keys};
use crate::stats::Counter;

/// The family's name in errors (`ERR redpacket: …`) and cluster checks.
pub const FAMILY: &str = "redpacket";

/// Packets split.
pub static COUNT_SPLITS: Counter = Counter::new("redpacket_splits");
/// Shares grabbed (GRAB replied `OK`).
pub static COUNT_GRABBED: Counter = Counter::new("redpacket_grabbed");
/// Grabs answered `ALREADY` (a second grab by the same user).
pub static COUNT_ALREADY: Counter = Counter::new("redpacket_already");
/// Grabs answered `EMPTY`.
pub static COUNT_EMPTY: Counter = Counter::new("redpacket_empty");
/// Grabs answered `CLOSED` (refunded or expired).
pub static COUNT_CLOSED: Counter = Counter::new("redpacket_closed");
/// Packets refunded.
pub static COUNT_REFUNDS: Counter = Counter::new("redpacket_refunds");
/// Cents returned to senders by REFUND.
pub static COUNT_REFUNDED_CENTS: Counter = Counter::new("redpacket_refunded_cents");

/// The family's counters, shown by `INFO hotpath`.
pub static COUNTERS: &[&Counter] = &[
    &COUNT_SPLITS,
    &COUNT_GRABBED,
    &COUNT_ALREADY,
    &COUNT_EMPTY,
    &COUNT_CLOSED,
    &COUNT_REFUNDS,
    &COUNT_REFUNDED_CENTS,
];

const ONE_KEY: Keys = Keys::Range { first: 1, last: 1 };

/// The family's commands.
pub const COMMANDS: &[CommandSpec] = &[
    crate::command! {
        name: "redpacket.split",
        handler: commands::redpacket_split,
        flags: "write deny-oom",
        arity: -4,
        keys: ONE_KEY,
        acl: "write",
        summary: "Splits an amount once into count shares (double-mean or equal) and opens the packet",
        complexity: "O(N) where N is the count (at most redpacket-max-count)",
        syntax: "key total-cents count [MODE RANDOM|EQUAL] [TTL seconds] [NOW unix-ms] [IDEM token]",
        reply: "integer", idem: true
    },
    crate::borrowed_command! {
        name: "redpacket.grab",
        handler: commands::redpacket_grab,
        flags: "write deny-oom fast",
        arity: -3,
        keys: ONE_KEY,
        acl: "write fast",
        summary: "Grabs one share for a user, at most one per user: OK, ALREADY, EMPTY, CLOSED or NOSUCH",
        complexity: "O(1)",
        syntax: "key user [NOW unix-ms] [IDEM token]",
        reply: "array [status, cents]", idem: true
    },
    crate::command! {
        name: "redpacket.info",
        handler: commands::redpacket_info,
        flags: "readonly fast",
        arity: -2,
        keys: ONE_KEY,
        acl: "read fast",
        summary: "Returns total, count, left_cents, left_count, state and expires of a packet",
        complexity: "O(1)",
        syntax: "key [NOW unix-ms]",
        reply: "array [total, n, count, n, left_cents, n, left_count, n, state, open|closed, expires, unix-ms]"
    },
    crate::command! {
        name: "redpacket.grabbed",
        handler: commands::redpacket_grabbed,
        flags: "readonly",
        arity: 2,
        keys: ONE_KEY,
        acl: "read",
        summary: "Returns every user who grabbed a share, with the cents won",
        complexity: "O(N) where N is the number of users who grabbed",
        syntax: "key",
        reply: "array [user, cents, …]"
    },
    crate::command! {
        name: "redpacket.refund",
        handler: commands::redpacket_refund,
        flags: "write fast",
        arity: 2,
        keys: ONE_KEY,
        acl: "write fast",
        summary: "Returns the cents left to the sender and closes the packet",
        complexity: "O(1): the pool is unlinked (a large one freed in the background)",
        syntax: "key",
        reply: "integer"
    },
];
