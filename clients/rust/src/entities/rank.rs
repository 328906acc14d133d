//! The RANK family's entity handle, [`Rank`], and its commands.

use super::*;

entity!(
    /// A tie-broken leaderboard (docs/rank.md).
    Rank
);

/// Options of `RANK.CREATE`.
#[derive(Clone, Debug, Default)]
pub struct RankOptions {
    /// `LAYOUT PACKED|WIDE` (docs/rank.md: WIDE holds points up to
    /// ±(2^53 − 1) with a millisecond tie-break).
    pub layout: Option<String>,
    pub tiebreak: Option<String>,
    pub unit: Option<String>,
    pub digits: Option<i64>,
    pub epoch: Option<i64>,
    pub ttl: Option<i64>,
}

/// `GT` / `LT` of `RANK.ADD`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Keep {
    Greater,
    Less,
}

impl Rank {
    fn call(&self, name: &'static str) -> Call {
        Call::new(name, &self.key)
    }
}

methods!(Rank {
    /// `RANK.CREATE`.
    fn create(&self, o: &RankOptions) -> bool {
        self.call("RANK.CREATE")
            .opt("LAYOUT", o.layout.as_deref())
            .opt("TIEBREAK", o.tiebreak.as_deref())
            .opt("UNIT", o.unit.as_deref())
            .opt("DIGITS", o.digits)
            .opt("EPOCH", o.epoch)
            .opt("TTL", o.ttl)
            .opt("NOW", self.now)
    } => ok;

    /// `RANK.ADD`: the points now stored.
    fn add(&self, member: &str, points: i64, keep: Option<Keep>) -> i64 {
        self.call("RANK.ADD")
            .arg(member)
            .arg(points)
            .flag("GT", keep == Some(Keep::Greater))
            .flag("LT", keep == Some(Keep::Less))
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref())
    } => int;

    /// `RANK.INCR`: the new points.
    fn incr(&self, member: &str, delta: i64) -> i64 {
        self.call("RANK.INCR")
            .arg(member)
            .arg(delta)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref())
    } => int;

    /// `RANK.DECR`: the new points.
    fn decr(&self, member: &str, delta: i64) -> i64 {
        self.call("RANK.DECR")
            .arg(member)
            .arg(delta)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref())
    } => int;

    /// `RANK.GET`.
    fn get(&self, member: &str) -> Option<RankEntry> {
        self.call("RANK.GET").arg(member)
    } => r::rank_entry;

    /// `RANK.TOP`.
    fn top(&self, count: Option<i64>, offset: Option<i64>) -> Vec<RankMember> {
        self.call("RANK.TOP").arg(count).opt("OFFSET", offset)
    } => r::rank_members;

    /// `RANK.AROUND`: `None` when the member is not on the board.
    fn around(&self, member: &str, n: i64) -> Option<Vec<RankPlace>> {
        self.call("RANK.AROUND").arg(member).arg(n)
    } => r::rank_places;

    /// `RANK.REM`: members removed.
    fn rem(&self, members: &[&str]) -> i64 {
        self.call("RANK.REM").arg(members)
    } => int;

    /// `RANK.COUNT`.
    fn count(&self) -> i64 {
        self.call("RANK.COUNT")
    } => int;

    /// `RANK.MERGE` into this board from `sources` (one slot on a
    /// cluster): members in this board after the merge.
    fn merge_from(
        &self,
        sources: &[&str],
        aggregate: Option<&str>,
        ttl: Option<i64>,
    ) -> i64 {
        let mut c = self.call("RANK.MERGE").arg(sources.len());
        for s in sources {
            c = c.key(s);
        }
        c.opt("AGGREGATE", aggregate)
            .opt("TTL", ttl)
            .opt("NOW", self.now)
    } => int;
});
