//! STOCK — flash-sale stock that never oversells: units reserved for an
//! order under a lease, then confirmed (sold) or released; a lease that
//! runs out gives its units back exactly once, decided by data and time
//! alone (no sweeper job: the writes that come next return lapsed leases
//! in bounded steps, as DELAYQ's polls take lapsed jobs). The same order id
//! always gets the same reply and never a second reservation; a per-user
//! limit holds across orders. A sold-out stock answers from one small
//! value.
//!
//! Keys of a stock `B` (public; on a cluster `B` needs a hash tag):
//! - `B` String,
//!   `<available>:<reserved>:<sold>:<total>:<limit>:<lease-ms>:<expires>`;
//! - `B:orders` Hash, order → `<state>:<quantity>:<lease-end>:<left>:<user>`;
//! - `B:users` Hash, user → units held (reserved + sold);
//! - `B:leases` Sorted Set, order → lease end, for every reserved order.
//!
//! Commands:
//! - `STOCK.CREATE B total [LIMIT per-user] [LEASE lease-ms] [TTL seconds] [NOW unix-ms]`
//! - `STOCK.RESERVE B user order quantity [NOW unix-ms]`
//! - `STOCK.CONFIRM B order [NOW unix-ms]`
//! - `STOCK.RELEASE B order`
//! - `STOCK.RESTOCK B delta [NOW unix-ms]`
//! - `STOCK.INFO B`
//! - `STOCK.AUDIT B cursor [COUNT count]`

pub mod commands;
pub mod model;

use crate::registry::{CommandSpec, Keys};
use crate::stats::Counter;

/// The family's name in errors (`ERR stock: …`) and cluster checks.
pub const FAMILY: &str = "stock";

/// Stocks created.
pub static COUNT_CREATED: Counter = Counter::new("stock_created");
/// Reservations made (each once: a repeated order is not counted).
pub static COUNT_RESERVED: Counter = Counter::new("stock_reserved");
/// Reservations refused with SOLDOUT.
pub static COUNT_SOLDOUT: Counter = Counter::new("stock_soldout");
/// Reservations refused with LIMIT.
pub static COUNT_LIMITED: Counter = Counter::new("stock_limited");
/// Reservations confirmed.
pub static COUNT_CONFIRMED: Counter = Counter::new("stock_confirmed");
/// Reservations released.
pub static COUNT_RELEASED: Counter = Counter::new("stock_released");
/// Lapsed leases whose units went back.
pub static COUNT_EXPIRED: Counter = Counter::new("stock_expired");
/// Restocks and removals that changed the total.
pub static COUNT_RESTOCKED: Counter = Counter::new("stock_restocked");

/// The family's counters, shown by `INFO hotpath`.
pub static COUNTERS: &[&Counter] = &[
    &COUNT_CREATED,
    &COUNT_RESERVED,
    &COUNT_SOLDOUT,
    &COUNT_LIMITED,
    &COUNT_CONFIRMED,
    &COUNT_RELEASED,
    &COUNT_EXPIRED,
    &COUNT_RESTOCKED,
];

const B: Keys = Keys::Range { first: 1, last: 1 };

/// The family's commands.
pub const COMMANDS: &[CommandSpec] = &[
    crate::borrowed_command! {
        name: "stock.create",
        handler: commands::stock_create,
        flags: "write deny-oom fast",
        arity: -3,
        keys: B,
        acl: "write fast",
        summary: "Creates a stock of total units, with a per-user limit, a reservation lease and an expiry",
        complexity: "O(1)",
        syntax: "key total [LIMIT per-user] [LEASE lease-ms] [TTL seconds] [NOW unix-ms] [SPREAD n]",
        reply: "simple string",
        since: "2.0.0"
    },
    crate::borrowed_command! {
        name: "stock.reserve",
        handler: commands::stock_reserve,
        flags: "write deny-oom fast",
        arity: -5,
        keys: B,
        acl: "write fast",
        summary: "Reserves units for an order under a lease: OK, SOLDOUT or LIMIT; the same order gets the same reply again",
        complexity: "O(1), plus O(log N) per lapsed lease returned (at most 100)",
        syntax: "key user order quantity [NOW unix-ms] [SPREAD n] [IDEM token]",
        reply: "array [status, left, lease-end]",
        since: "2.0.0", idem: true
    },
    crate::borrowed_command! {
        name: "stock.confirm",
        handler: commands::stock_confirm,
        flags: "write deny-oom fast",
        arity: -3,
        keys: B,
        acl: "write fast",
        summary: "Turns a reservation whose lease is alive into a sale (1); 0 when already confirmed",
        complexity: "O(log N), plus O(log N) per lapsed lease returned (at most 100)",
        syntax: "key order [NOW unix-ms] [SPREAD n]",
        reply: "integer",
        since: "2.0.0"
    },
    crate::borrowed_command! {
        name: "stock.release",
        handler: commands::stock_release,
        flags: "write fast",
        arity: -3,
        keys: B,
        acl: "write fast",
        summary: "Gives a reservation's units back to the stock (1); 0 when there is nothing to give back",
        complexity: "O(log N)",
        syntax: "key order [SPREAD n]",
        reply: "integer",
        since: "2.0.0"
    },
    crate::borrowed_command! {
        name: "stock.restock",
        handler: commands::stock_restock,
        flags: "write deny-oom fast",
        arity: -3,
        keys: B,
        acl: "write fast",
        summary: "Adds units to the stock, or removes available units (a negative delta, never more than are available)",
        complexity: "O(1), plus O(log N) per lapsed lease returned (at most 100)",
        syntax: "key delta [NOW unix-ms] [SPREAD n] [IDEM token]",
        reply: "integer",
        since: "2.0.0", idem: true
    },
    crate::borrowed_command! {
        name: "stock.info",
        handler: commands::stock_info,
        flags: "readonly fast",
        arity: -2,
        keys: B,
        acl: "read fast",
        summary: "Replies the total, available, reserved and sold units of a stock, its limit, lease and orders",
        complexity: "O(1)",
        syntax: "key [SPREAD n]",
        reply: "array [total, n, available, n, reserved, n, sold, n, limit, n, lease_ms, n, orders, n]",
        since: "2.0.0"
    },
    crate::borrowed_command! {
        name: "stock.audit",
        handler: commands::stock_audit,
        flags: "readonly",
        arity: -3,
        keys: B,
        acl: "read",
        summary: "Checks the conservation law and a slice of the order ledger in bounded steps; replies the next cursor and the problems found",
        complexity: "O(C) for the C orders checked (at most COUNT, or the whole ledger when it fits in one step)",
        syntax: "key cursor [COUNT count] [SPREAD n]",
        reply: "array [cursor, checked, problem, …]",
        since: "2.0.0"
    },
    crate::borrowed_command! {
        name: "stock.transfer",
        handler: commands::stock_transfer,
        flags: "write deny-oom fast",
        arity: 7,
        keys: B,
        acl: "write fast",
        summary: "Opens a transfer on a spread stock's pool (shard 0): a refill of up to delta units for a shard, or a handback of up to -delta from it; the same id gets the same transfer again",
        complexity: "O(log N)",
        syntax: "key transfer shard delta SPREAD n",
        reply: "array [status, units, free, open]",
        since: "2.1.0"
    },
    crate::borrowed_command! {
        name: "stock.apply",
        handler: commands::stock_apply,
        flags: "write deny-oom fast",
        arity: 6,
        keys: B,
        acl: "write fast",
        summary: "Applies a transfer on a shard of a spread stock once per id (units in, or up to -delta available units out); 0 marks the shard dry",
        complexity: "O(1)",
        syntax: "key transfer delta SPREAD n",
        reply: "array [applied, available]",
        since: "2.1.0"
    },
    crate::borrowed_command! {
        name: "stock.settle",
        handler: commands::stock_settle,
        flags: "write deny-oom fast",
        arity: 6,
        keys: B,
        acl: "write fast",
        summary: "Settles an open transfer on a spread stock's pool with the units its shard applied (1); 0 when settled before",
        complexity: "O(log N)",
        syntax: "key transfer delta SPREAD n",
        reply: "integer",
        since: "2.1.0"
    },
    crate::borrowed_command! {
        name: "stock.pool",
        handler: commands::stock_pool,
        flags: "readonly fast",
        arity: 4,
        keys: B,
        acl: "read fast",
        summary: "Replies a spread stock's pool (total, free, in transit, open transfers) and up to 100 open transfers",
        complexity: "O(1), plus O(log N) per open transfer listed (at most 100)",
        syntax: "key SPREAD n",
        reply: "array [total, n, free, n, transit, n, open, n, pending, [transfer, shard, delta, …]]",
        since: "2.1.0"
    },
];
