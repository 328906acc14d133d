//! LIKE: likes with an exact O(1) count, batch checks for feeds, recent
//! likers on request, and promotion of a post's likers from a Set to
//! bitmaps, range by range, once that saves memory (SPEC §4, docs/like.md).
//!
//! Keys of a post `B` (derived keys are public; users read them with
//! `redis-cli`, the Lua twins write the same ones):
//! - `B:set` Set of the likers whose id range is in set form (all of them
//!   while the post is small);
//! - `B:bits:<k>` String of 8,000 bytes, the chunk of range `k`: bit
//!   `id − 64,000 k` set for each liker `id` of ids `64,000 k … 64,000 k +
//!   63,999`;
//! - `B:chunks` String bitmap, the chunk index: bit `k` set when range `k`
//!   has (or is about to have) a chunk;
//! - `B:count` String integer, the exact count;
//! - `B:meta` Hash, the promotion's state (`check`, `state`, `at`);
//! - `B:recent` Sorted Set of the latest `like-recent` likers, user →
//!   unix-ms (only when `like-recent` > 0).
//!
//! Commands: `LIKE.TOGGLE`, `LIKE.ADD`, `LIKE.REM`, `LIKE.CHECK`,
//! `LIKE.COUNT`, `LIKE.RECENT`, `LIKE.COMMON`, `LIKE.INFO`, and
//! `LIKE.MIGRATE`, the command a master replicates a migration step as.
//!
//! Promotion runs in bounded steps carried by the writes (see
//! `commands::promotion_step`): no command reads more than a slice of the
//! Set, and no command allocates more than 64 KB of bitmap.

pub mod commands;
pub mod model;
pub mod promotion;

use crate::registry::{CommandSpec, Keys};
use crate::stats::Counter;

use commands::{
    like_add, like_check, like_common, like_count, like_create, like_info, like_migrate,
    like_recent, like_rem, like_toggle,
};

/// Likes recorded (a user started liking a post).
pub static LIKES: Counter = Counter::new("like_likes");
/// Likes taken back.
pub static UNLIKES: Counter = Counter::new("like_unlikes");
/// Sets converted into bitmaps.
pub static PROMOTIONS: Counter = Counter::new("like_promoted");
/// Users looked up by `LIKE.CHECK`.
pub static CHECKS: Counter = Counter::new("like_checks");
/// Promotion steps run (checks, chunk creations, migration slices, settles).
pub static STEPS: Counter = Counter::new("like_promotion_steps");
/// The most CPU time one promotion step took, in µs (the thread's own CPU
/// clock: time spent waiting for a CPU on a busy machine is not counted).
pub static STEP_MAX_US: Counter = Counter::new("like_promotion_step_max_cpu_us");

/// The family's `INFO hotpath` counters.
pub static COUNTERS: &[&Counter] = &[&LIKES, &UNLIKES, &PROMOTIONS, &CHECKS, &STEPS, &STEP_MAX_US];

/// The family's commands.
pub const COMMANDS: &[CommandSpec] = &[
    crate::command! {
        name: "like.create", handler: like_create, flags: "write deny-oom fast",
        arity: -2, keys: Keys::Range { first: 1, last: 1 }, acl: "write fast",
        summary: "Creates one shard of a post spread over n shards (LIKE.CREATE K SPREAD n)",
        complexity: "O(1)",
        syntax: "key SPREAD n",
        reply: "OK"
    },
    crate::borrowed_command! {
        name: "like.toggle", handler: like_toggle, flags: "write deny-oom fast",
        arity: -3, keys: Keys::Range { first: 1, last: 1 }, acl: "write fast",
        summary: "Likes or unlikes B for a user; returns [liked, count]",
        complexity: "O(1): at most one bounded promotion step (128 Set members or 8 chunks)",
        syntax: "key user [NOW unix-ms] [SPREAD n] [IDEM token]",
        reply: "array [liked, count]", idem: true
    },
    crate::borrowed_command! {
        name: "like.add", handler: like_add, flags: "write deny-oom fast",
        arity: -3, keys: Keys::Range { first: 1, last: 1 }, acl: "write fast",
        summary: "Records that a user likes B (idempotent); returns [changed, count]",
        complexity: "O(1): at most one bounded promotion step (128 Set members or 8 chunks)",
        syntax: "key user [NOW unix-ms] [SPREAD n]",
        reply: "array [changed, count]"
    },
    crate::borrowed_command! {
        name: "like.rem", handler: like_rem, flags: "write deny-oom fast",
        arity: -3, keys: Keys::Range { first: 1, last: 1 }, acl: "write fast",
        summary: "Takes a user's like of B back (idempotent); returns [changed, count]",
        complexity: "O(1): at most one bounded promotion step (128 Set members or 8 chunks)",
        syntax: "key user [SPREAD n]",
        reply: "array [changed, count]"
    },
    crate::command! {
        name: "like.migrate", handler: like_migrate, flags: "write deny-oom fast",
        arity: -3, keys: Keys::Range { first: 1, last: 1 }, acl: "write fast",
        summary: "Moves users who like B from its Set into their range's chunk (how promotion steps replicate); returns the users moved",
        complexity: "O(K) for K users",
        syntax: "key user [user ...]",
        reply: "integer"
    },
    crate::command! {
        name: "like.check", handler: like_check, flags: "readonly fast",
        arity: -3, keys: Keys::Range { first: 1, last: 1 }, acl: "read fast",
        summary: "Returns 1 or 0 for each user: does the user like B",
        complexity: "O(K) for K users",
        syntax: "key user [user ...] [SPREAD n]",
        reply: "array of integers"
    },
    crate::command! {
        name: "like.count", handler: like_count, flags: "readonly fast",
        arity: -2, keys: Keys::Range { first: 1, last: 1 }, acl: "read fast",
        summary: "Returns the number of users who like B",
        complexity: "O(1)",
        syntax: "key [SPREAD n]",
        reply: "integer"
    },
    crate::command! {
        name: "like.recent", handler: like_recent, flags: "readonly",
        arity: -2, keys: Keys::Range { first: 1, last: 1 }, acl: "read",
        summary: "Returns the latest likers of B with their unix-ms, newest first",
        complexity: "O(log(N) + M) for M likers returned",
        syntax: "key [count] [SPREAD n]",
        reply: "array [user, unix-ms, …]"
    },
    crate::command! {
        name: "like.common", handler: like_common, flags: "readonly",
        arity: 3, keys: Keys::Range { first: 1, last: 2 }, acl: "read",
        summary: "Returns the users who like both B1 and B2, ascending",
        complexity: "O(N log N) for the N likers of the post with fewer, at most like-common-max",
        syntax: "key1 key2",
        reply: "array of the user ids"
    },
    crate::command! {
        name: "like.info", handler: like_info, flags: "readonly fast",
        arity: -2, keys: Keys::Range { first: 1, last: 1 }, acl: "read fast",
        summary: "Returns encoding, count, modelled bytes, Set members, chunks and promotion state of B",
        complexity: "O(1) (reads at most 512 ids of an intset and the 8 KB chunk index)",
        syntax: "key [SPREAD n]",
        reply: "array [encoding, e, count, n, bytes, n, set, n, chunks, n, promotion, p]"
    },
];
