//! RANK: leaderboards whose ties go to whoever got there first (or last).
//!
//! Points and the achievement time are packed into one exact double
//! (`packed = points × 10^D + tiebreak`, see [`model`]), so the board is a
//! plain Sorted Set that `ZREVRANGE` already reads in leaderboard order.
//!
//! Keys:
//! - `B`: Sorted Set, member → packed score (the board itself).
//! - `B:meta`: Hash with the layout (`tiebreak`, `unit`, `digits`,
//!   `epoch`), written by RANK.CREATE. A board without it uses the defaults
//!   (TIEBREAK EARLIER, UNIT S, DIGITS 10, EPOCH 0).
//! - `B:time`: on a LAYOUT WIDE board (points as the score, the time as a
//!   16-digit prefix of the stored member), member → achievement unix ms.
//! - `B:import`: while RANK.IMPORT packs a board of plain scores, the
//!   members still to pack.
//! - `B:merging`: while a RANK.MERGE into `B` runs, the union being
//!   written; it replaces `B` at the end.
//!
//! Commands: RANK.CREATE, RANK.ADD, RANK.INCR, RANK.DECR, RANK.GET, RANK.TOP,
//! RANK.AROUND, RANK.REM, RANK.COUNT, RANK.MERGE (SPEC §3), RANK.IMPORT,
//! and RANK.POSITION, the per-shard read of a spread board (docs/spread.md).
//! MERGE runs in slices (see `crate::slices`); TOP and AROUND are bounded
//! by `rank-range-max`.
//!
//! Writes replicate their effects as native commands (`ZADD` with the
//! packed score, `HSET`, `ZREM`, `DEL`, `PEXPIREAT` with the master's
//! instant), so replicas and AOF replay end byte-identical and an AOF can
//! even be replayed without the module.

pub mod commands;
pub mod model;

use crate::registry::{CommandSpec, Keys};
use crate::stats::Counter;

/// Scores written by ADD, INCR and DECR.
pub static UPDATES: Counter = Counter::new("rank_updates");
/// ADDs that kept the stored value (same points, or GT/LT not better).
pub static KEPT: Counter = Counter::new("rank_kept");
/// Members removed by REM.
pub static REMOVED: Counter = Counter::new("rank_removed");
/// MERGE calls that wrote a destination.
pub static MERGES: Counter = Counter::new("rank_merges");
/// Writes refused because points or a time did not fit the layout.
pub static REFUSED: Counter = Counter::new("rank_refused");
/// Members packed by IMPORT.
pub static IMPORTED: Counter = Counter::new("rank_imported");

/// The family's `INFO hotpath` counters.
pub static COUNTERS: &[&Counter] = &[&UPDATES, &KEPT, &REMOVED, &MERGES, &REFUSED, &IMPORTED];

/// The family's command table.
pub const COMMANDS: &[CommandSpec] = &[
    crate::command! {
        name: "rank.create", handler: commands::rank_create,
        flags: "write deny-oom fast", arity: -2, keys: Keys::Range { first: 1, last: 1 },
        acl: "write fast",
        summary: "Creates a leaderboard with its tie-break layout",
        complexity: "O(1)",
        syntax: "key [LAYOUT PACKED|WIDE] [TIEBREAK EARLIER|LATER|NONE] [UNIT MS|S] [DIGITS digits] [EPOCH unix-ms] [TTL seconds] [NOW unix-ms] [SPREAD n]",
        reply: "OK"
    },
    crate::borrowed_command! {
        name: "rank.add", handler: commands::rank_add,
        flags: "write deny-oom fast", arity: -4, keys: Keys::Range { first: 1, last: 1 },
        acl: "write fast",
        summary: "Sets a member's points (GT/LT: only a better value); same points keep their time",
        complexity: "O(log(N))",
        syntax: "key member points [GT|LT] [NOW unix-ms] [SPREAD n] [IDEM token]",
        reply: "integer", idem: true
    },
    crate::borrowed_command! {
        name: "rank.incr", handler: commands::rank_incr,
        flags: "write deny-oom fast", arity: -4, keys: Keys::Range { first: 1, last: 1 },
        acl: "write fast",
        summary: "Adds to a member's points; the achievement time becomes now",
        complexity: "O(log(N))",
        syntax: "key member delta [NOW unix-ms] [SPREAD n] [IDEM token]",
        reply: "integer", idem: true
    },
    crate::borrowed_command! {
        name: "rank.decr", handler: commands::rank_decr,
        flags: "write deny-oom fast", arity: -4, keys: Keys::Range { first: 1, last: 1 },
        acl: "write fast",
        summary: "Subtracts from a member's points; the achievement time becomes now",
        complexity: "O(log(N))",
        syntax: "key member delta [NOW unix-ms] [SPREAD n] [IDEM token]",
        reply: "integer",
        since: "2.0.0", idem: true
    },
    crate::command! {
        name: "rank.get", handler: commands::rank_get,
        flags: "readonly fast", arity: -3, keys: Keys::Range { first: 1, last: 1 },
        acl: "read fast",
        summary: "Returns a member's points, rank and achievement time",
        complexity: "O(log(N))",
        syntax: "key member [SPREAD n]",
        reply: "array [points, rank, achieved_ms]"
    },
    crate::command! {
        name: "rank.top", handler: commands::rank_top,
        flags: "readonly", arity: -2, keys: Keys::Range { first: 1, last: 1 },
        acl: "read",
        summary: "Returns the best members with their points, best first",
        complexity: "O(log(N)+M) with M the count, at most rank-range-max",
        syntax: "key [count] [OFFSET offset]",
        reply: "array [member, points, …]"
    },
    crate::command! {
        name: "rank.around", handler: commands::rank_around,
        flags: "readonly", arity: 4, keys: Keys::Range { first: 1, last: 1 },
        acl: "read",
        summary: "Returns the places around a member with ranks and points",
        complexity: "O(log(N)+n), n at most rank-range-max",
        syntax: "key member n",
        reply: "array [rank, member, points, …]"
    },
    crate::command! {
        name: "rank.rem", handler: commands::rank_rem,
        flags: "write fast", arity: -3, keys: Keys::Range { first: 1, last: 1 },
        acl: "write fast",
        summary: "Removes members from a leaderboard",
        complexity: "O(M*log(N)) with M the members removed",
        syntax: "key member [member ...] [SPREAD n]",
        reply: "integer"
    },
    crate::command! {
        name: "rank.count", handler: commands::rank_count,
        flags: "readonly fast", arity: -2, keys: Keys::Range { first: 1, last: 1 },
        acl: "read fast",
        summary: "Returns the number of members on a leaderboard",
        complexity: "O(1)",
        syntax: "key [SPREAD n]",
        reply: "integer"
    },
    crate::command! {
        name: "rank.position", handler: commands::rank_position,
        flags: "readonly", arity: -3, keys: Keys::Range { first: 1, last: 1 },
        acl: "read",
        summary: "Returns how many members rank above a position, and the places just above and below it (the per-shard read of a spread board)",
        complexity: "O(log(N)+M) with M the count, at most rank-range-max; O(log(N)*log(T)) more for T members tied at an AT score",
        syntax: "key count [MEMBER member | AT score member] [SPREAD n]",
        reply: "array [above, at, above-list, below-list]"
    },
    crate::command! {
        name: "rank.merge", handler: commands::rank_merge,
        flags: "write deny-oom", arity: -4, keys: Keys::Numkeys { numkeys: 2 },
        acl: "write",
        summary: "Merges leaderboards into a destination (SUM or MAX)",
        complexity: "O(N*log(N)) with N the members of all sources, in slices of about 1 ms; the client is answered at the end",
        syntax: "destination numkeys key [key ...] [AGGREGATE SUM|MAX] [TTL seconds] [NOW unix-ms]",
        reply: "integer"
    },
    crate::command! {
        name: "rank.import", handler: commands::rank_import,
        flags: "write deny-oom", arity: -2, keys: Keys::Range { first: 1, last: 1 },
        acl: "write",
        summary: "Packs a board of plain ZADD scores in place, COUNT members per call",
        complexity: "O(COUNT*log(N)) per call",
        syntax: "key [LAYOUT PACKED|WIDE] [TIEBREAK EARLIER|LATER|NONE] [UNIT MS|S] [DIGITS digits] [EPOCH unix-ms] [COUNT count] [NOW unix-ms]",
        reply: "integer"
    },
];
