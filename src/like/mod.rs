//! LIKE: likes with an exact O(1) count, batch checks for feeds, recent
//! likers, and automatic promotion of a post's likers from a Set to a
//! bitmap once that saves memory (SPEC §4).
//!
//! Keys of a post `B` (derived keys are public; users read them with
//! `redis-cli`, the Lua twins write the same ones):
//! - `B:set` Set of user ids (small form), or `B:bits` String bitmap with
//!   bit `user` set (large form), never both;
//! - `B:count` String integer, the exact count, kept in both forms;
//! - `B:recent` Sorted Set of the latest `like-recent` likers, user →
//!   unix-ms.
//!
//! Commands: `LIKE.TOGGLE`, `LIKE.ADD`, `LIKE.REM`, `LIKE.CHECK`,
//! `LIKE.COUNT`, `LIKE.RECENT`, `LIKE.COMMON`, `LIKE.INFO`.
//!
//! Promotion: a like that brings the set past `like-promote-at` members,
//! or to a power-of-two size beyond it, compares the modelled memory of the
//! set (`model::set_memory`) with the bitmap reaching its largest id and
//! converts when the bitmap is smaller, in the same atomic step. Bitmaps never demote. See
//! `docs/like.md` for the measured crossover.

pub mod commands;
pub mod model;

use crate::registry::{CommandSpec, Keys};
use crate::stats::Counter;

use commands::{
    like_add, like_check, like_common, like_count, like_info, like_recent, like_rem, like_toggle,
};

/// Likes recorded (a user started liking a post).
pub static LIKES: Counter = Counter::new("like_likes");
/// Likes taken back.
pub static UNLIKES: Counter = Counter::new("like_unlikes");
/// Sets converted into bitmaps.
pub static PROMOTIONS: Counter = Counter::new("like_promoted");
/// Users looked up by `LIKE.CHECK`.
pub static CHECKS: Counter = Counter::new("like_checks");

/// The family's `INFO hotpath` counters.
pub static COUNTERS: &[&Counter] = &[&LIKES, &UNLIKES, &PROMOTIONS, &CHECKS];

/// The family's commands.
pub const COMMANDS: &[CommandSpec] = &[
    crate::command! {
        name: "like.toggle", handler: like_toggle, flags: "write deny-oom",
        arity: -3, keys: Keys::Range { first: 1, last: 1 }, acl: "write",
        summary: "Likes or unlikes B for a user; returns [liked, count]",
        complexity: "O(1) amortized; O(N) when the like promotes N likers to a bitmap",
    },
    crate::command! {
        name: "like.add", handler: like_add, flags: "write deny-oom",
        arity: -3, keys: Keys::Range { first: 1, last: 1 }, acl: "write",
        summary: "Records that a user likes B (idempotent); returns [changed, count]",
        complexity: "O(1) amortized; O(N) when the like promotes N likers to a bitmap",
    },
    crate::command! {
        name: "like.rem", handler: like_rem, flags: "write fast",
        arity: 3, keys: Keys::Range { first: 1, last: 1 }, acl: "write fast",
        summary: "Takes a user's like of B back (idempotent); returns [changed, count]",
        complexity: "O(1)",
    },
    crate::command! {
        name: "like.check", handler: like_check, flags: "readonly fast",
        arity: -3, keys: Keys::Range { first: 1, last: 1 }, acl: "read fast",
        summary: "Returns 1 or 0 for each user: does the user like B",
        complexity: "O(K) for K users",
    },
    crate::command! {
        name: "like.count", handler: like_count, flags: "readonly fast",
        arity: 2, keys: Keys::Range { first: 1, last: 1 }, acl: "read fast",
        summary: "Returns the number of users who like B",
        complexity: "O(1)",
    },
    crate::command! {
        name: "like.recent", handler: like_recent, flags: "readonly",
        arity: -2, keys: Keys::Range { first: 1, last: 1 }, acl: "read",
        summary: "Returns the latest likers of B with their unix-ms, newest first",
        complexity: "O(log(N) + M) for M likers returned",
    },
    crate::command! {
        name: "like.common", handler: like_common, flags: "readonly",
        arity: 3, keys: Keys::Range { first: 1, last: 2 }, acl: "read",
        summary: "Returns the users who like both B1 and B2, ascending",
        complexity: "O(N) in the likers (or bitmap bytes) of both",
    },
    crate::command! {
        name: "like.info", handler: like_info, flags: "readonly fast",
        arity: 2, keys: Keys::Range { first: 1, last: 1 }, acl: "read fast",
        summary: "Returns encoding (set|bitmap|none), count and bytes of B's likes",
        complexity: "O(1) (O(512) at most to find the largest id of a small set)",
    },
];
