//! LUCKYBAG — the live-stream lottery over sharded candidate pools
//! (SPEC §6).
//!
//! A bag `B` is created with its rules, viewers join it (hundreds of
//! thousands within seconds), leave and re-enter the room, finish the bag's
//! task, and at the deadline `DRAW` picks the top `WINNERS` random scores
//! across all shards, atomically and once.
//!
//! Keys (all derived from `B`, which needs a `{hash tag}` in cluster mode):
//!
//! | key | type | holds |
//! |---|---|---|
//! | `B:meta` | Hash | `winners`, `shards`, `poolcap`, `seed`, `highscore`, `restore` (`yes`/`no`), `state` (`open`/`drawn`), `latepooled` |
//! | `B:cand:<s>` | Sorted Set | every participant of shard `s`: user → score (the dedup and the candidate pool) |
//! | `B:count` | String | number of participants |
//! | `B:winners` | Sorted Set | user → score, written by `DRAW` |
//!
//! `s = user & (SHARDS − 1)` for integer ids and the low bits of the
//! 32-bit FNV-1a hash of the id otherwise. A pool score is the keyed
//! score `k / 2^52`, `k` the first 52 bits of HMAC-SHA1(the bag's seed,
//! user) ([`keyed`]; the seed comes from the OS's CSPRNG at CREATE), `-2`
//! while the user's task is pending, `-1` while the user is out of the
//! room (`-1.5` with the task pending), and `-3` for a participant who
//! joined past the pool cap without a high enough score (counted, never
//! drawn). Every key of a bag expires at `B:meta`'s
//! absolute expiry, set once when the key is created.
//!
//! Commands: `LUCKYBAG.CREATE`, `JOIN`, `TASK`, `LEAVE`, `ENTER`, `DRAW`,
//! `RESULT`, `INFO` (see `docs/luckybag.md`).

pub mod commands;
pub mod keyed;
pub mod model;

use crate::registry::{CommandSpec, Keys};
use crate::stats::Counter;

use commands::*;

/// Bags created.
pub static BAGS_CREATED: Counter = Counter::new("luckybag_bags_created");
/// Participants counted by `JOIN`.
pub static JOINED: Counter = Counter::new("luckybag_joined");
/// `JOIN`s refused as duplicates.
pub static DUPLICATES: Counter = Counter::new("luckybag_duplicates");
/// Participants that entered a candidate pool.
pub static POOLED: Counter = Counter::new("luckybag_pooled");
/// Participants counted but kept out of the pool by the pool cap.
pub static CAPPED: Counter = Counter::new("luckybag_capped");
/// Pending tasks completed (`TASK` that gave a score).
pub static TASKS_DONE: Counter = Counter::new("luckybag_tasks_done");
/// `LEAVE`s that set a score to -1.
pub static LEFT: Counter = Counter::new("luckybag_left");
/// `ENTER`s that restored a kept score.
pub static RESTORED: Counter = Counter::new("luckybag_restored");
/// Bags drawn.
pub static DRAWS: Counter = Counter::new("luckybag_draws");
/// Winners picked by all draws.
pub static WINNERS_DRAWN: Counter = Counter::new("luckybag_winners");

/// The family's `INFO hotpath` counters.
pub static COUNTERS: &[&Counter] = &[
    &BAGS_CREATED,
    &JOINED,
    &DUPLICATES,
    &POOLED,
    &CAPPED,
    &TASKS_DONE,
    &LEFT,
    &RESTORED,
    &DRAWS,
    &WINNERS_DRAWN,
];

const BASE: Keys = Keys::Range { first: 1, last: 1 };

/// The family's commands.
pub const COMMANDS: &[CommandSpec] = &[
    crate::command! {
        name: "luckybag.create", handler: luckybag_create, flags: "write deny-oom", arity: -4,
        keys: BASE, acl: "write",
        summary: "Creates a lucky bag with its rules: WINNERS, SHARDS, POOLCAP, HIGHSCORE, RESTORE, TTL, and its seed",
        complexity: "O(S) with S shards (it checks that no key of an earlier bag is left)",
        syntax: "key WINNERS winners [SHARDS shards] [POOLCAP poolcap] [HIGHSCORE score] [RESTORE YES|NO] [TTL seconds] [SEED seed] [NOW unix-ms] [SPREAD n]",
        reply: "OK"
    },
    crate::borrowed_command! {
        name: "luckybag.join", handler: luckybag_join, flags: "write deny-oom fast", arity: -3,
        keys: BASE, acl: "write fast",
        summary: "Counts a participant once and gives it its keyed score in its shard's candidate pool",
        complexity: "O(log N) with N the participants of the user's shard",
        syntax: "key user [TASK DONE|PENDING] [SPREAD n] [IDEM token]",
        reply: "array [new, pooled, participants]", idem: true
    },
    crate::borrowed_command! {
        name: "luckybag.task", handler: luckybag_task, flags: "write deny-oom fast", arity: -3,
        keys: BASE, acl: "write fast",
        summary: "Gives a user whose task was pending its keyed score",
        complexity: "O(log N)",
        syntax: "key user [SPREAD n]",
        reply: "integer"
    },
    crate::borrowed_command! {
        name: "luckybag.leave", handler: luckybag_leave, flags: "write deny-oom fast", arity: -3,
        keys: BASE, acl: "write fast",
        summary: "Sets a user's score to -1 (-1.5 with the task pending) while the user is out of the room",
        complexity: "O(log N)",
        syntax: "key user [SPREAD n]",
        reply: "integer"
    },
    crate::borrowed_command! {
        name: "luckybag.enter", handler: luckybag_enter, flags: "write deny-oom fast", arity: -3,
        keys: BASE, acl: "write fast",
        summary: "Gives a user back its score when it returns to the room (RESTORE YES)",
        complexity: "O(log N)",
        syntax: "key user [SPREAD n]",
        reply: "integer"
    },
    crate::command! {
        name: "luckybag.draw", handler: luckybag_draw, flags: "write deny-oom", arity: 2,
        keys: BASE, acl: "write",
        summary: "Draws the winners (top WINNERS scores over all shards), closes the bag; idempotent",
        complexity: "O(S*log N + W*(log N + log S)) with S shards, N participants per shard, W winners (at most 1000)",
        syntax: "key",
        reply: "array [user, score, …]"
    },
    crate::command! {
        name: "luckybag.drawbegin", handler: luckybag_drawbegin, flags: "write deny-oom fast", arity: -3,
        keys: BASE, acl: "write fast",
        summary: "Spread bag, draw step 1 on shard 0: takes the draw's lease (or answers the committed winners)",
        complexity: "O(1), or O(W) once drawn",
        syntax: "key draw-token [LEASE ms] [NOW unix-ms] SPREAD n",
        reply: "array [\"drawing\", winners]"
    },
    crate::command! {
        name: "luckybag.freeze", handler: luckybag_freeze, flags: "write deny-oom", arity: -3,
        keys: BASE, acl: "write",
        summary: "Spread bag, draw step 2 on every shard: closes the shard to writes and returns its best candidates",
        complexity: "O(S*log N + C*(log N + log S)) for C candidates (at most 1000)",
        syntax: "key count SPREAD n",
        reply: "array [user, score, …]"
    },
    crate::command! {
        name: "luckybag.commit", handler: luckybag_commit, flags: "write deny-oom", arity: -5,
        keys: BASE, acl: "write",
        summary: "Spread bag, draw step 4 on shard 0: stores the global winners; the draw is final",
        complexity: "O(W*log W) for W winners",
        syntax: "key draw-token [user score [user score ...]] SPREAD n",
        reply: "OK"
    },
    crate::command! {
        name: "luckybag.publish", handler: luckybag_publish, flags: "write deny-oom", arity: -4,
        keys: BASE, acl: "write",
        summary: "Spread bag, draw step 5 on every shard: checks that the shard's winners are the true top and stores them for RESULT",
        complexity: "O((S+W)*log N) for S internal pools of up to N candidates and W winners of the shard",
        syntax: "key [user score [user score ...]] [LAST user score] [VERIFY] SPREAD n",
        reply: "integer"
    },
    crate::borrowed_command! {
        name: "luckybag.result", handler: luckybag_result, flags: "readonly fast", arity: -3,
        keys: BASE, acl: "read fast",
        summary: "Returns PENDING, WON, LOST or ABSENT for a user",
        complexity: "O(1)",
        syntax: "key user [SPREAD n]",
        reply: "simple string"
    },
    crate::command! {
        name: "luckybag.info", handler: luckybag_info, flags: "readonly fast", arity: -2,
        keys: BASE, acl: "read fast",
        summary: "Returns the bag's state, participants, pooled users, winners and shards",
        complexity: "O(1)",
        syntax: "key [SPREAD n]",
        reply: "array [state, open|drawn, participants, n, pooled, n, winners, n, shards, n]"
    },
];
