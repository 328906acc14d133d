//! The DELAYQ family's entity handle, [`DelayQueue`], and its commands.

use super::*;

entity!(
    /// A delay queue with leases and dead letters
    /// (docs/reference/delayq.md).
    DelayQueue
);

/// Options of `DELAYQ.ADD` besides id and payload.
#[derive(Clone, Debug, Default)]
pub struct JobOptions {
    /// Due this many ms from now (not with `at`).
    pub delay: Option<i64>,
    /// Due at this instant, unix ms (not with `delay`).
    pub at: Option<i64>,
    /// The most deliveries (default 5).
    pub attempts: Option<i64>,
    /// The most deliveries after a lost lease (`LOSTMAX`, server 2.1.0;
    /// default: no cap).
    pub lost_max: Option<i64>,
    /// Start an existing job over instead of keeping it.
    pub replace: bool,
}

/// When a `DELAYQ.NACK`ed job is due again.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// After this many ms.
    Delay(i64),
    /// After `min(base_ms × 2^(attempt − 1), max_ms)` ms.
    Backoff { base_ms: i64, max_ms: i64 },
}

impl DelayQueue {
    fn call(&self, name: &'static str) -> Call {
        Call::new(name, &self.key)
    }
}

methods!(DelayQueue {
    /// `DELAYQ.ADD`: true when added (or replaced), false when `id` exists.
    fn add(&self, id: &str, payload: &[u8], o: &JobOptions) -> bool {
        self.call("DELAYQ.ADD")
            .arg(id)
            .arg(payload)
            .opt("DELAY", o.delay)
            .opt("AT", o.at)
            .opt("ATTEMPTS", o.attempts)
            .opt("LOSTMAX", o.lost_max)
            .flag("REPLACE", o.replace)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref())
    } => one;

    /// `DELAYQ.POLL`: up to `count` ready jobs, each leased for
    /// `lease_ms`; empty when none (after `block` ms with it; the
    /// connection's read timeout must be longer).
    fn poll(&self, lease_ms: i64, count: Option<i64>, block: Option<i64>) -> Vec<Job> {
        self.call("DELAYQ.POLL")
            .arg(lease_ms)
            .opt("COUNT", count)
            .opt("BLOCK", block)
            .opt("NOW", self.now)
    } => r::jobs;

    /// `DELAYQ.ACK`: true when the job was removed.
    fn ack(&self, id: &str, receipt: i64) -> bool {
        self.call("DELAYQ.ACK").arg(id).arg(receipt)
    } => one;

    /// `DELAYQ.NACK`.
    fn nack(&self, id: &str, receipt: i64, retry: Option<Retry>) -> Nack {
        let c = self.call("DELAYQ.NACK").arg(id).arg(receipt);
        let c = match retry {
            None => c,
            Some(Retry::Delay(ms)) => c.arg("DELAY").arg(ms),
            Some(Retry::Backoff { base_ms, max_ms }) => c.arg("BACKOFF").arg(base_ms).arg(max_ms),
        };
        c.opt("NOW", self.now).opt("IDEM", self.idem.as_deref())
    } => r::nack;

    /// `DELAYQ.EXTEND`: true when the delivery's lease was restarted.
    fn extend(&self, id: &str, receipt: i64, lease_ms: i64) -> bool {
        self.call("DELAYQ.EXTEND")
            .arg(id)
            .arg(receipt)
            .arg(lease_ms)
            .opt("NOW", self.now)
    } => one;

    /// `DELAYQ.DEAD`: the oldest dead letters.
    fn dead(&self, count: Option<i64>) -> Vec<DeadLetter> {
        self.call("DELAYQ.DEAD").opt("COUNT", count)
    } => r::dead_letters;

    /// `DELAYQ.REDRIVE`: the oldest `count` dead letters (default 10), or
    /// the one `id`, back in line; how many.
    fn redrive(&self, count: Option<i64>, id: Option<&str>) -> i64 {
        self.call("DELAYQ.REDRIVE")
            .opt("COUNT", count)
            .opt("ID", id)
            .opt("NOW", self.now)
    } => int;

    /// `DELAYQ.INFO`.
    fn info(&self) -> QueueInfo {
        self.call("DELAYQ.INFO").opt("NOW", self.now)
    } => r::queue_info;

    /// `DELAYQ.CANCEL`: true when the job was removed (waiting, ready or
    /// dead), false when there is none. A job under a running lease is an
    /// error (`job is leased`) unless `force`; its holder's receipt then
    /// goes stale.
    fn cancel(&self, id: &str, force: bool) -> bool {
        self.call("DELAYQ.CANCEL")
            .arg(id)
            .flag("FORCE", force)
            .opt("NOW", self.now)
    } => one;

    /// `DELAYQ.PEEK`: the first `count` jobs in line (default 10, at most
    /// 100), the earliest first, or the one `id`.
    fn peek(&self, count: Option<i64>, id: Option<&str>) -> Vec<ScheduledJob> {
        self.call("DELAYQ.PEEK").opt("COUNT", count).opt("ID", id)
    } => r::scheduled_jobs;

    /// `DELAYQ.PURGE`: how many of the oldest dead letters were removed,
    /// beyond `max_len` or older than `max_age_ms` (at least one of them);
    /// at most 100 per call, so call again while it returns 100.
    fn purge(&self, max_len: Option<i64>, max_age_ms: Option<i64>) -> i64 {
        self.call("DELAYQ.PURGE")
            .opt("MAXLEN", max_len)
            .opt("MAXAGE", max_age_ms)
            .opt("NOW", self.now)
    } => int;
});
