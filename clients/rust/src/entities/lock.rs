//! The LOCK family's entity handle, [`Lock`], and its commands.

use super::*;

entity!(
    /// A lock or semaphore with fencing tokens (docs/reference/lock.md).
    Lock
);

/// Options of `LOCK.ACQUIRE` besides owner and lease.
#[derive(Clone, Debug, Default)]
pub struct LockOptions {
    /// 1: a mutex (the default for a new name); n ≥ 2: a semaphore.
    pub limit: Option<i64>,
    /// The hold's hard end, in ms after it began.
    pub maxhold: Option<i64>,
    /// Wait in line up to this many ms when busy (0: no timeout); the
    /// connection's read timeout must be longer.
    pub block: Option<i64>,
}

impl Lock {
    fn call(&self, name: &'static str) -> Call {
        Call::new(name, &self.key)
    }
}

methods!(Lock {
    /// `LOCK.ACQUIRE`: the fencing token, or `None` when busy (after the
    /// `block` timeout with it).
    fn acquire(&self, owner: &str, ttl_ms: i64, o: &LockOptions) -> Option<i64> {
        self.call("LOCK.ACQUIRE")
            .arg(owner)
            .arg(ttl_ms)
            .opt("LIMIT", o.limit)
            .opt("MAXHOLD", o.maxhold)
            .opt("BLOCK", o.block)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref())
    } => r::token;

    /// `LOCK.RELEASE`: true when `owner` held a live lease.
    fn release(&self, owner: &str) -> bool {
        self.call("LOCK.RELEASE").arg(owner).opt("NOW", self.now)
    } => one;

    /// `LOCK.RENEW`: the ms left in the renewed lease, 0 when `owner`
    /// holds none.
    fn renew(&self, owner: &str, ttl_ms: i64) -> i64 {
        self.call("LOCK.RENEW")
            .arg(owner)
            .arg(ttl_ms)
            .opt("NOW", self.now)
    } => int;

    /// `LOCK.INFO`: the live holders, by token.
    fn info(&self) -> Vec<LockHolder> {
        self.call("LOCK.INFO").opt("NOW", self.now)
    } => r::lock_holders;

    /// `LOCK.CHECK`: true when `token` belongs to a live hold.
    fn check(&self, token: i64) -> bool {
        self.call("LOCK.CHECK").arg(token).opt("NOW", self.now)
    } => one;
});
