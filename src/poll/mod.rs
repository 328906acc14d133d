//! POLL — one vote per rule, a live board, an audit trail and a two-phase
//! write-back to a database.
//!
//! Keys of a poll `B`:
//! - `B:voted` Hash: dedup member → `<candidate>:<unix-ms>` (ballots + audit)
//! - `B:board` Sorted Set: candidate → votes
//! - `B:meta` Hash: the rules (`mode`, `maxvotes`, `start`, `end`, `tz`,
//!   `closed`, `expires`) and the write-back state (`epoch`, `pending`)
//! - `B:uservotes` Hash (MULTI): user → JSON array of its candidates
//! - `B:synced` / `B:syncing` Sorted Sets: the acknowledged and the frozen
//!   write-back snapshots (candidate → votes)
//!
//! Commands: POLL.CREATE, POLL.VOTE, POLL.REVOKE, POLL.TOP, POLL.RANK,
//! POLL.STATUS, POLL.INFO, POLL.SYNC, POLL.SYNCACK. INFO is O(1) (votes =
//! ballots); SYNC runs in slices (see `crate::slices`); TOP is bounded by
//! `poll-range-max`.

pub mod commands;
pub mod model;

use crate::command;
use crate::registry::{CommandSpec, Keys};
use crate::stats::Counter;

use commands::*;

pub static VOTES: Counter = Counter::new("poll_votes");
pub static DUPLICATES: Counter = Counter::new("poll_duplicates");
pub static REVOKED: Counter = Counter::new("poll_revoked");
pub static SYNCS: Counter = Counter::new("poll_syncs");

/// `INFO hotpath` counters of POLL.
pub static COUNTERS: &[&Counter] = &[&VOTES, &DUPLICATES, &REVOKED, &SYNCS];

const B: Keys = Keys::Range { first: 1, last: 1 };

/// POLL's command table.
pub const COMMANDS: &[CommandSpec] = &[
    command!(name: "poll.create", handler: poll_create, flags: "write deny-oom", arity: -2, keys: B,
        acl: "write", summary: "Creates a poll with its rules", complexity: "O(C*log(C)) for C candidates (at most 100,000)",
        syntax: "key [MODE ONCE|DAILY|MULTI] [MAXVOTES maxvotes] [CANDIDATES count candidate [candidate ...]] [START unix-ms] [END unix-ms] [TZ minutes] [TTL seconds] [NOW unix-ms] [SPREAD n]",
        reply: "OK"),
    crate::borrowed_command!(name: "poll.vote", handler: poll_vote, flags: "write deny-oom fast", arity: -4, keys: B,
        acl: "write fast", summary: "Casts a vote if the poll's rule allows it", complexity: "O(log(N)) for N candidates, O(M+log(N)) in MODE MULTI (M at most MAXVOTES)",
        syntax: "key user candidate [NOW unix-ms] [SPREAD n] [IDEM token]",
        reply: "integer", idem: true),
    command!(name: "poll.revoke", handler: poll_revoke, flags: "write", arity: -3, keys: B,
        acl: "write fast", summary: "Takes back a user's votes", complexity: "O(M*log(N)) for M votes (M at most MAXVOTES)",
        syntax: "key user [candidate] [NOW unix-ms] [SPREAD n] [IDEM token]",
        reply: "integer", idem: true),
    command!(name: "poll.top", handler: poll_top, flags: "readonly", arity: -2, keys: B,
        acl: "read", summary: "Returns the candidates with the most votes", complexity: "O(log(N)+M) for M returned, M at most poll-range-max",
        syntax: "key [count] [OFFSET offset] [SPREAD n]",
        reply: "array [candidate, votes, …]"),
    command!(name: "poll.rank", handler: poll_rank, flags: "readonly fast", arity: -3, keys: B,
        acl: "read fast", summary: "Returns a candidate's rank and votes", complexity: "O(log(N))",
        syntax: "key candidate [SPREAD n]",
        reply: "array [rank, votes]"),
    command!(name: "poll.status", handler: poll_status, flags: "readonly fast", arity: -3, keys: B,
        acl: "read fast", summary: "Returns the candidates a user voted for", complexity: "O(1), O(M) in MODE MULTI (M at most MAXVOTES)",
        syntax: "key user [NOW unix-ms] [SPREAD n]",
        reply: "array of the candidates"),
    command!(name: "poll.info", handler: poll_info, flags: "readonly fast", arity: -2, keys: B,
        acl: "read fast", summary: "Returns a poll's rules and totals", complexity: "O(1)",
        syntax: "key [SPREAD n]",
        reply: "array [mode, <ONCE|DAILY|MULTI>, maxvotes, n, start, unix-ms, end, unix-ms, ballots, n, votes, n]"),
    command!(name: "poll.sync", handler: poll_sync, flags: "write deny-oom", arity: -2, keys: B,
        acl: "write", summary: "Freezes and returns the vote changes since the last acknowledged write-back", complexity: "O(N*log(N)) for N candidates, in slices of about 1 ms (the client is answered at the end)",
        syntax: "key [SPREAD n]",
        reply: "array [epoch, candidate, delta, …]"),
    command!(name: "poll.syncack", handler: poll_syncack, flags: "write deny-oom", arity: -3, keys: B,
        acl: "write", summary: "Acknowledges a frozen write-back snapshot", complexity: "O(1) (the old snapshot is freed in the background)",
        syntax: "key epoch [SPREAD n]",
        reply: "integer"),
];
