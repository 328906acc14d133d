//! The POLL family's entity handle, [`Poll`], and its commands.

use super::*;

entity!(
    /// A one-vote poll (docs/poll.md).
    Poll
);

/// Options of `POLL.CREATE`.
#[derive(Clone, Debug, Default)]
pub struct PollOptions {
    pub mode: Option<String>,
    pub maxvotes: Option<i64>,
    pub candidates: Option<Vec<String>>,
    pub start: Option<i64>,
    pub end: Option<i64>,
    pub tz: Option<i64>,
    pub ttl: Option<i64>,
}

impl Poll {
    fn call(&self, sub: &'static str) -> Call {
        Call::new(sub, &self.key)
    }
}

methods!(Poll {
    /// `POLL.CREATE`.
    fn create(&self, o: &PollOptions) -> bool {
        let mut c = self
            .call("POLL.CREATE")
            .opt("MODE", o.mode.as_deref())
            .opt("MAXVOTES", o.maxvotes);
        if let Some(cands) = &o.candidates {
            c = c.arg("CANDIDATES").arg(cands.len()).arg(cands);
        }
        c.opt("START", o.start)
            .opt("END", o.end)
            .opt("TZ", o.tz)
            .opt("TTL", o.ttl)
            .opt("NOW", self.now)
    } => ok;

    /// `POLL.VOTE`: true when counted, false for a duplicate.
    fn vote(&self, user: &str, candidate: &str) -> bool {
        self.call("POLL.VOTE")
            .arg(user)
            .arg(candidate)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref())
    } => one;

    /// `POLL.REVOKE`: votes taken back.
    fn revoke(&self, user: &str, candidate: Option<&str>) -> i64 {
        self.call("POLL.REVOKE")
            .arg(user)
            .arg(candidate)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref())
    } => int;

    /// `POLL.TOP`.
    fn top(&self, count: Option<i64>, offset: Option<i64>) -> Vec<PollEntry> {
        self.call("POLL.TOP").arg(count).opt("OFFSET", offset)
    } => r::poll_entries;

    /// `POLL.RANK`: `None` for an unknown candidate.
    fn rank(&self, candidate: &str) -> Option<PollRank> {
        self.call("POLL.RANK").arg(candidate)
    } => r::poll_rank;

    /// `POLL.STATUS`: the candidates this user voted for.
    fn status(&self, user: &str) -> Vec<String> {
        self.call("POLL.STATUS").arg(user).opt("NOW", self.now)
    } => texts;

    /// `POLL.INFO`.
    fn info(&self) -> Option<PollInfo> {
        self.call("POLL.INFO")
    } => r::poll_info;

    /// `POLL.SYNC`.
    fn sync(&self) -> PollSync {
        self.call("POLL.SYNC")
    } => r::poll_sync;

    /// `POLL.SYNCACK`: true when `epoch` was the pending snapshot.
    fn syncack(&self, epoch: i64) -> bool {
        self.call("POLL.SYNCACK").arg(epoch)
    } => one;
});
