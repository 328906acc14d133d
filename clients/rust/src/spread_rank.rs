//! A leaderboard spread over shards (docs/spread.md, docs/rank.md): each
//! member lives in shard `shard_of(member, n)`, a complete board of its own
//! with the board's layout, so packed tie-broken scores stay exact per
//! shard and compare across shards. Writes go to the member's shard; the
//! global rank, top and around are one call: `RANK.POSITION` on every
//! shard at once (one pipeline per node), merged in the board's exact
//! order (packed score, then member byte-wise, both descending: the order
//! of `ZREVRANGE` on one board). A shard that fails fails the call.

use std::cmp::Reverse;

use redis::{Cmd, ConnectionLike, ErrorKind, RedisError, RedisResult, Value};

use crate::entities::{Backend, Keep, RankOptions};
use crate::replies::{RankEntry, RankMember, RankPlace};
use crate::retry::RetryPolicy;
use crate::spread::{block, shard_error, Blocking, Exec, FanIo, FanOut, OneIo, Shards};
#[cfg(feature = "aio")]
use crate::spread::{AioCon, AsyncSpread, Nonblocking};

/// The most places one `RANK.POSITION` returns: `rank-range-max`'s
/// default.
pub const PAGE_MAX: i64 = 1000;

fn arg<T: redis::ToRedisArgs>(v: T) -> Vec<u8> {
    v.to_redis_args().concat()
}

fn bad_reply(what: &str, v: &Value) -> RedisError {
    RedisError::from((
        ErrorKind::TypeError,
        "hotpath: unexpected reply",
        format!("{what}: {v:?}"),
    ))
}

/// An entry of `RANK.POSITION`: a member, its points and its packed score
/// (`points × 10^DIGITS + tiebreak`, exact, comparable across the shards
/// of one board). On a LAYOUT WIDE board the score is the points and
/// `name` the stored name (`<16 digits>:<member>`, the time in its
/// digits), which orders equal points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankPositionEntry {
    pub member: String,
    pub points: i64,
    pub score: i64,
    /// The stored name on a LAYOUT WIDE board, `None` on a packed one.
    pub name: Option<String>,
}

impl RankPositionEntry {
    /// What orders equal scores: the stored name on a LAYOUT WIDE board,
    /// the member on a packed one.
    pub fn tie(&self) -> &str {
        self.name.as_deref().unwrap_or(&self.member)
    }

    /// The board's order, best first: higher score, then the byte-wise
    /// greater member (stored name on a wide board).
    fn order(&self) -> (Reverse<i64>, Reverse<&[u8]>) {
        (Reverse(self.score), Reverse(self.tie().as_bytes()))
    }
}

/// `RANK.POSITION` of one shard: how many of its members rank above the
/// position, the entry at it (when the shard holds it), and the entries
/// just above and just below it, best first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankPosition {
    pub above: i64,
    pub at: Option<RankPositionEntry>,
    pub above_list: Vec<RankPositionEntry>,
    pub below_list: Vec<RankPositionEntry>,
}

fn entries(v: &Value) -> RedisResult<Vec<RankPositionEntry>> {
    let a = crate::replies::array(v)?;
    if a.len() % 3 != 0 {
        return Err(bad_reply("RANK.POSITION entries", v));
    }
    a.chunks(3)
        .map(|c| {
            let points = crate::replies::int(&c[1])?;
            // A wide board answers the stored name where a packed one
            // answers the packed score.
            let (score, name) = match &c[2] {
                Value::Int(s) => (*s, None),
                other => (points, Some(crate::replies::text(other)?)),
            };
            Ok(RankPositionEntry {
                member: crate::replies::text(&c[0])?,
                points,
                score,
                name,
            })
        })
        .collect()
}

/// Parses a `RANK.POSITION` reply: `None` for a MEMBER not on the board.
pub fn rank_position(v: &Value) -> RedisResult<Option<RankPosition>> {
    if *v == Value::Nil {
        return Ok(None);
    }
    let a = crate::replies::array(v)?;
    if a.len() != 4 {
        return Err(bad_reply("RANK.POSITION", v));
    }
    let at = match &a[1] {
        Value::Nil => None,
        e => entries(e)?.pop(),
    };
    Ok(Some(RankPosition {
        above: crate::replies::int(&a[0])?,
        at,
        above_list: entries(&a[2])?,
        below_list: entries(&a[3])?,
    }))
}

/// A write on one shard of a spread board: the member's points now stored
/// (the single-slot command's reply) and the shard written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardRankWrite {
    pub points: i64,
    pub shard: u32,
}

/// A leaderboard spread over `n` shards: see the module's documentation.
///
/// ```no_run
/// use hotpath_client::{RankOptions, SpreadRank};
/// # fn main() -> redis::RedisResult<()> {
/// let client = redis::cluster::ClusterClient::new(vec!["redis://127.0.0.1:7000/"])?;
/// let mut con = client.get_connection()?;
/// let board = SpreadRank::new("week:42", 16);
/// board.create(&mut con, &RankOptions::default())?;
/// board.incr(&mut con, "alice", 10)?;
/// let top = board.top(&mut con, 10, 0)?;
/// let me = board.get(&mut con, "alice")?; // points, global rank, time
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpreadRank {
    shards: Shards,
    now: Option<i64>,
    backend: Backend,
    exec: Exec,
}

impl SpreadRank {
    /// A handle on the board `base` spread over `n` shards.
    ///
    /// # Panics
    /// Occurs when `n` is not from 1 to 1024.
    pub fn new(base: &str, n: u32) -> SpreadRank {
        SpreadRank {
            shards: Shards::new(base, n),
            now: None,
            backend: Backend::Module,
            exec: Exec::default(),
        }
    }

    /// The same handle with the clock pinned (`NOW now_ms`).
    pub fn at(&self, now_ms: i64) -> SpreadRank {
        SpreadRank {
            now: Some(now_ms),
            ..self.clone()
        }
    }

    /// The same handle on another backend.
    pub fn with_backend(&self, backend: Backend) -> SpreadRank {
        SpreadRank {
            backend,
            ..self.clone()
        }
    }

    /// The same handle with another retry policy for its per-shard
    /// commands ([`RetryPolicy::NEVER`]: the connection's own retries
    /// only; docs/spread.md, "Retries under topology change").
    pub fn with_retry(&self, retry: RetryPolicy) -> SpreadRank {
        let mut h = self.clone();
        h.exec.retry = retry;
        h
    }

    /// The same handle whose writes are durable: each write's pipeline to
    /// its shard's master ends in `WAIT replicas wait_ms` on the same
    /// connection ([`FanOut::pipeline_durable`]); when fewer replicas
    /// acknowledge, the write answers an error ("the write reached k of r
    /// replicas": it ran on the master). Reads do not wait. `durable(0, _)`
    /// is the plain handle again.
    pub fn durable(&self, replicas: i64, wait_ms: u64) -> SpreadRank {
        let mut h = self.clone();
        h.exec.durable = (replicas > 0).then_some((replicas, wait_ms));
        h
    }

    /// The shard keys and the routing.
    pub fn shards(&self) -> &Shards {
        &self.shards
    }

    /// The handle's methods over an async connection (crate feature
    /// `aio`; [`AsyncSpread`]).
    #[cfg(feature = "aio")]
    pub fn aio(&self) -> AsyncSpread<'_, Self> {
        AsyncSpread(self)
    }

    /// The shard of a member (`routing::shard_of`).
    pub fn shard_of(&self, member: &str) -> u32 {
        self.shards.shard_of(member)
    }

    fn key(&self, i: u32) -> &str {
        &self.shards.keys()[i as usize]
    }

    fn call(&self, name: &str, i: u32, args: &[Vec<u8>]) -> (String, Cmd) {
        (
            self.key(i).to_string(),
            self.shards.cmd(self.backend, name, i, args),
        )
    }

    fn now_args(&self, args: &mut Vec<Vec<u8>>) {
        if let Some(t) = self.now {
            args.push(arg("NOW"));
            args.push(arg(t));
        }
    }

    /// Creates every shard with the same layout (`RANK.CREATE K_i … SPREAD
    /// n`), shard 0 first. Creating the board again with the same layout
    /// and count answers true and changes nothing.
    pub fn create<C: FanOut>(&self, con: &mut C, o: &RankOptions) -> RedisResult<bool> {
        block(self.create_in(&mut Blocking(con), o))
    }

    /// [`SpreadRank::create`] over any [`FanIo`].
    pub(crate) async fn create_in<C: FanIo>(
        &self,
        con: &mut C,
        o: &RankOptions,
    ) -> RedisResult<bool> {
        let mut args = Vec::new();
        let mut opt = |name: &str, v: Option<Vec<u8>>| {
            if let Some(v) = v {
                args.push(arg(name));
                args.push(v);
            }
        };
        opt("LAYOUT", o.layout.as_deref().map(arg));
        opt("TIEBREAK", o.tiebreak.as_deref().map(arg));
        opt("UNIT", o.unit.as_deref().map(arg));
        opt("DIGITS", o.digits.map(arg));
        opt("EPOCH", o.epoch.map(arg));
        opt("TTL", o.ttl.map(arg));
        self.now_args(&mut args);
        let calls: Vec<(String, Cmd)> = (0..self.shards.n())
            .map(|i| self.call("RANK.CREATE", i, &args))
            .collect();
        let first: Value = self
            .exec
            .query(con, &calls[0].0, &calls[0].1)
            .await
            .map_err(|e| shard_error(&calls[0].0, e))?;
        crate::replies::ok(&first)?;
        for v in self.exec.fan_out(con, &calls[1..]).await? {
            crate::replies::ok(&v)?;
        }
        Ok(true)
    }

    async fn write_in<C: OneIo>(
        &self,
        con: &mut C,
        name: &str,
        member: &str,
        mut args: Vec<Vec<u8>>,
    ) -> RedisResult<ShardRankWrite> {
        let shard = self.shard_of(member);
        args.insert(0, arg(member));
        self.now_args(&mut args);
        let (key, cmd) = self.call(name, shard, &args);
        let v: Value = self.exec.query(con, &key, &cmd).await?;
        Ok(ShardRankWrite {
            points: crate::replies::int(&v)?,
            shard,
        })
    }

    /// `RANK.ADD` on the member's shard.
    pub fn add<C: ConnectionLike>(
        &self,
        con: &mut C,
        member: &str,
        points: i64,
        keep: Option<Keep>,
    ) -> RedisResult<ShardRankWrite> {
        block(self.add_in(&mut Blocking(con), member, points, keep))
    }

    /// [`SpreadRank::add`] over any [`OneIo`].
    pub(crate) async fn add_in<C: OneIo>(
        &self,
        con: &mut C,
        member: &str,
        points: i64,
        keep: Option<Keep>,
    ) -> RedisResult<ShardRankWrite> {
        let mut args = vec![arg(points)];
        match keep {
            Some(Keep::Greater) => args.push(arg("GT")),
            Some(Keep::Less) => args.push(arg("LT")),
            None => {}
        }
        self.write_in(con, "RANK.ADD", member, args).await
    }

    /// `RANK.INCR` on the member's shard.
    pub fn incr<C: ConnectionLike>(
        &self,
        con: &mut C,
        member: &str,
        delta: i64,
    ) -> RedisResult<ShardRankWrite> {
        block(self.incr_in(&mut Blocking(con), member, delta))
    }

    /// [`SpreadRank::incr`] over any [`OneIo`].
    pub(crate) async fn incr_in<C: OneIo>(
        &self,
        con: &mut C,
        member: &str,
        delta: i64,
    ) -> RedisResult<ShardRankWrite> {
        self.write_in(con, "RANK.INCR", member, vec![arg(delta)])
            .await
    }

    /// `RANK.REM` of each member on its shard, all at once: the members
    /// removed.
    pub fn rem<C: FanOut>(&self, con: &mut C, members: &[&str]) -> RedisResult<i64> {
        block(self.rem_in(&mut Blocking(con), members))
    }

    /// [`SpreadRank::rem`] over any [`FanIo`].
    pub(crate) async fn rem_in<C: FanIo>(&self, con: &mut C, members: &[&str]) -> RedisResult<i64> {
        let n = self.shards.n() as usize;
        let mut by_shard: Vec<Vec<Vec<u8>>> = vec![Vec::new(); n];
        for m in members {
            by_shard[self.shard_of(m) as usize].push(arg(*m));
        }
        let calls: Vec<(String, Cmd)> = (0..n)
            .filter(|&i| !by_shard[i].is_empty())
            .map(|i| self.call("RANK.REM", i as u32, &by_shard[i]))
            .collect();
        let mut removed = 0;
        for v in self.exec.fan_out(con, &calls).await? {
            removed += crate::replies::int(&v)?;
        }
        Ok(removed)
    }

    /// The members of every shard, shard 0 first.
    pub fn shard_counts<C: FanOut>(&self, con: &mut C) -> RedisResult<Vec<i64>> {
        block(self.shard_counts_in(&mut Blocking(con)))
    }

    /// [`SpreadRank::shard_counts`] over any [`FanIo`].
    pub(crate) async fn shard_counts_in<C: FanIo>(&self, con: &mut C) -> RedisResult<Vec<i64>> {
        let calls: Vec<(String, Cmd)> = (0..self.shards.n())
            .map(|i| self.call("RANK.COUNT", i, &[]))
            .collect();
        self.exec
            .fan_out(con, &calls)
            .await?
            .iter()
            .map(crate::replies::int)
            .collect()
    }

    /// The board's members: the sum over its shards.
    pub fn count<C: FanOut>(&self, con: &mut C) -> RedisResult<i64> {
        block(self.count_in(&mut Blocking(con)))
    }

    /// [`SpreadRank::count`] over any [`FanIo`].
    pub(crate) async fn count_in<C: FanIo>(&self, con: &mut C) -> RedisResult<i64> {
        Ok(self.shard_counts_in(con).await?.iter().sum())
    }

    /// Step 1 of a member's read: `RANK.POSITION` on its own shard.
    async fn own_in<C: OneIo>(
        &self,
        con: &mut C,
        member: &str,
        count: i64,
    ) -> RedisResult<Option<(RankPosition, RankPositionEntry)>> {
        let shard = self.shard_of(member);
        let (key, cmd) = self.call(
            "RANK.POSITION",
            shard,
            &[arg(count), arg("MEMBER"), arg(member)],
        );
        let v: Value = self
            .exec
            .query(con, &key, &cmd)
            .await
            .map_err(|e| shard_error(&key, e))?;
        let Some(p) = rank_position(&v)? else {
            return Ok(None);
        };
        let at = p.at.clone().ok_or_else(|| bad_reply("RANK.POSITION", &v))?;
        Ok(Some((p, at)))
    }

    /// Step 2: the position of `at` on every other shard.
    fn others(&self, member: &str, at: &RankPositionEntry, count: i64) -> Vec<(String, Cmd)> {
        let own = self.shard_of(member);
        (0..self.shards.n())
            .filter(|&i| i != own)
            .map(|i| {
                self.call(
                    "RANK.POSITION",
                    i,
                    &[arg(count), arg("AT"), arg(at.score), arg(at.tie())],
                )
            })
            .collect()
    }

    /// A member's points, **global** 0-based rank and achievement time (as
    /// `RANK.GET` answers them on a single board), `None` when the member
    /// is not on the board. The rank is the sum over the shards of the
    /// members that rank above it.
    pub fn get<C: FanOut>(&self, con: &mut C, member: &str) -> RedisResult<Option<RankEntry>> {
        block(self.get_in(&mut Blocking(con), member))
    }

    /// [`SpreadRank::get`] over any [`FanIo`].
    pub(crate) async fn get_in<C: FanIo>(
        &self,
        con: &mut C,
        member: &str,
    ) -> RedisResult<Option<RankEntry>> {
        let Some((own, at)) = self.own_in(con, member, 0).await? else {
            return Ok(None);
        };
        let mut calls = self.others(member, &at, 0);
        calls.push(self.call("RANK.GET", self.shard_of(member), &[arg(member)]));
        let replies = self.exec.fan_out(con, &calls).await?;
        let (get, others) = replies.split_last().expect("a RANK.GET");
        let mut rank = own.above;
        for v in others {
            rank += rank_position(v)?
                .ok_or_else(|| bad_reply("RANK.POSITION", v))?
                .above;
        }
        let Some(e) = crate::replies::rank_entry(get)? else {
            // Removed between the two reads.
            return Ok(None);
        };
        Ok(Some(RankEntry {
            points: at.points,
            rank,
            achieved_ms: e.achieved_ms,
        }))
    }

    /// A member's global 0-based rank, `None` when it is not on the board.
    pub fn rank<C: FanOut>(&self, con: &mut C, member: &str) -> RedisResult<Option<i64>> {
        block(self.rank_in(&mut Blocking(con), member))
    }

    /// [`SpreadRank::rank`] over any [`FanIo`].
    pub(crate) async fn rank_in<C: FanIo>(
        &self,
        con: &mut C,
        member: &str,
    ) -> RedisResult<Option<i64>> {
        let Some((own, at)) = self.own_in(con, member, 0).await? else {
            return Ok(None);
        };
        let mut rank = own.above;
        for v in self.exec.fan_out(con, &self.others(member, &at, 0)).await? {
            rank += rank_position(&v)?
                .ok_or_else(|| bad_reply("RANK.POSITION", &v))?
                .above;
        }
        Ok(Some(rank))
    }

    /// The best `count` members after skipping `offset`, in the order
    /// `RANK.TOP` gives on a single board (ties included). Within
    /// [`PAGE_MAX`] (the server's `rank-range-max` default) it is one
    /// round, a merge of every shard's best `offset + count`; deeper, it
    /// walks the board page by page with [`top_after`](Self::top_after)'s
    /// cursor (set a lower page with [`top_paged`](Self::top_paged)).
    pub fn top<C: FanOut>(
        &self,
        con: &mut C,
        count: i64,
        offset: i64,
    ) -> RedisResult<Vec<RankMember>> {
        block(self.top_in(&mut Blocking(con), count, offset))
    }

    /// [`SpreadRank::top`] over any [`FanIo`].
    pub(crate) async fn top_in<C: FanIo>(
        &self,
        con: &mut C,
        count: i64,
        offset: i64,
    ) -> RedisResult<Vec<RankMember>> {
        self.top_paged_in(con, count, offset, PAGE_MAX).await
    }

    /// [`top`](Self::top) for a server whose `rank-range-max` is
    /// `page_max`.
    pub fn top_paged<C: FanOut>(
        &self,
        con: &mut C,
        count: i64,
        offset: i64,
        page_max: i64,
    ) -> RedisResult<Vec<RankMember>> {
        block(self.top_paged_in(&mut Blocking(con), count, offset, page_max))
    }

    /// [`SpreadRank::top_paged`] over any [`FanIo`].
    pub(crate) async fn top_paged_in<C: FanIo>(
        &self,
        con: &mut C,
        count: i64,
        offset: i64,
        page_max: i64,
    ) -> RedisResult<Vec<RankMember>> {
        let (count, offset) = (count.max(0), offset.max(0));
        let member = |e: RankPositionEntry| RankMember {
            member: e.member,
            points: e.points,
        };
        if offset.saturating_add(count) <= page_max {
            return Ok(self
                .merged_in(con, None, offset + count)
                .await?
                .into_iter()
                .skip(offset as usize)
                .take(count as usize)
                .map(member)
                .collect());
        }
        let (mut skip, mut out) = (offset, Vec::new());
        let mut cursor = None;
        loop {
            let (page, next) = self.top_after_in(con, page_max, cursor.as_ref()).await?;
            for e in page {
                if skip > 0 {
                    skip -= 1;
                } else if (out.len() as i64) < count {
                    out.push(member(e));
                }
            }
            if out.len() as i64 == count || next.is_none() {
                return Ok(out);
            }
            cursor = next;
        }
    }

    /// One page of the board in `RANK.TOP`'s order: the best `count`
    /// places (at most `rank-range-max`) after `cursor` (the last entry of
    /// the page before; `None` for the top), and the cursor of the next
    /// page (`None` when this page is the last). A cursor is a position,
    /// not an offset: a page stays exact while the board changes above it.
    pub fn top_after<C: FanOut>(
        &self,
        con: &mut C,
        count: i64,
        cursor: Option<&RankPositionEntry>,
    ) -> RedisResult<(Vec<RankPositionEntry>, Option<RankPositionEntry>)> {
        block(self.top_after_in(&mut Blocking(con), count, cursor))
    }

    /// [`SpreadRank::top_after`] over any [`FanIo`].
    pub(crate) async fn top_after_in<C: FanIo>(
        &self,
        con: &mut C,
        count: i64,
        cursor: Option<&RankPositionEntry>,
    ) -> RedisResult<(Vec<RankPositionEntry>, Option<RankPositionEntry>)> {
        let count = count.max(0);
        let mut page = self.merged_in(con, cursor, count).await?;
        page.truncate(count as usize);
        let next = match page.last() {
            Some(e) if page.len() as i64 == count => Some(e.clone()),
            _ => None,
        };
        Ok((page, next))
    }

    /// Every shard's best `depth` below `cursor` (from the top when
    /// `None`), merged in the board's order: its first `depth` are the
    /// board's (no shard can hold more of them than it gave).
    async fn merged_in<C: FanIo>(
        &self,
        con: &mut C,
        cursor: Option<&RankPositionEntry>,
        depth: i64,
    ) -> RedisResult<Vec<RankPositionEntry>> {
        let mut a = vec![arg(depth)];
        if let Some(c) = cursor {
            a.extend([arg("AT"), arg(c.score), arg(c.tie())]);
        }
        let calls: Vec<(String, Cmd)> = (0..self.shards.n())
            .map(|i| self.call("RANK.POSITION", i, &a))
            .collect();
        let mut all = Vec::new();
        for v in self.exec.fan_out(con, &calls).await? {
            all.extend(
                rank_position(&v)?
                    .ok_or_else(|| bad_reply("RANK.POSITION", &v))?
                    .below_list,
            );
        }
        all.sort_by(|a, b| a.order().cmp(&b.order()));
        Ok(all)
    }

    /// The places around a member: its global rank and the `n` places just
    /// above and below it (clipped at both ends), exactly as `RANK.AROUND`
    /// answers on a single board; `None` when the member is not on the
    /// board.
    pub fn around<C: FanOut>(
        &self,
        con: &mut C,
        member: &str,
        n: i64,
    ) -> RedisResult<Option<Vec<RankPlace>>> {
        block(self.around_in(&mut Blocking(con), member, n))
    }

    /// [`SpreadRank::around`] over any [`FanIo`].
    pub(crate) async fn around_in<C: FanIo>(
        &self,
        con: &mut C,
        member: &str,
        n: i64,
    ) -> RedisResult<Option<Vec<RankPlace>>> {
        let Some((own, at)) = self.own_in(con, member, n).await? else {
            return Ok(None);
        };
        let mut rank = own.above;
        let mut above = own.above_list;
        let mut below = own.below_list;
        for v in self.exec.fan_out(con, &self.others(member, &at, n)).await? {
            let p = rank_position(&v)?.ok_or_else(|| bad_reply("RANK.POSITION", &v))?;
            rank += p.above;
            above.extend(p.above_list);
            below.extend(p.below_list);
        }
        let n = usize::try_from(n).unwrap_or(usize::MAX);
        // The n nearest above are the last n of the merged lists (every
        // shard sent its n nearest); the n nearest below, the first n.
        above.sort_by(|a, b| a.order().cmp(&b.order()));
        let above = above.split_off(above.len().saturating_sub(n));
        below.sort_by(|a, b| a.order().cmp(&b.order()));
        below.truncate(n);
        let start = rank - above.len() as i64;
        Ok(Some(
            above
                .into_iter()
                .chain(std::iter::once(at))
                .chain(below)
                .enumerate()
                .map(|(k, e)| RankPlace {
                    rank: start + k as i64,
                    member: e.member,
                    points: e.points,
                })
                .collect(),
        ))
    }

    /// `RANK.POSITION` of one shard (the raw per-shard read).
    pub fn position<C: ConnectionLike>(
        &self,
        con: &mut C,
        shard: u32,
        count: i64,
        at: Option<(i64, &str)>,
    ) -> RedisResult<Option<RankPosition>> {
        block(self.position_in(&mut Blocking(con), shard, count, at))
    }

    /// [`SpreadRank::position`] over any [`OneIo`].
    pub(crate) async fn position_in<C: OneIo>(
        &self,
        con: &mut C,
        shard: u32,
        count: i64,
        at: Option<(i64, &str)>,
    ) -> RedisResult<Option<RankPosition>> {
        let mut args = vec![arg(count)];
        if let Some((score, member)) = at {
            args.extend([arg("AT"), arg(score), arg(member)]);
        }
        let (key, cmd) = self.call("RANK.POSITION", shard, &args);
        rank_position(
            &self
                .exec
                .query(con, &key, &cmd)
                .await
                .map_err(|e| shard_error(&key, e))?,
        )
    }
}

#[cfg(feature = "aio")]
impl AsyncSpread<'_, SpreadRank> {
    /// Creates every shard with the same layout (`RANK.CREATE K_i … SPREAD
    /// n`), shard 0 first. Creating the board again with the same layout
    /// and count answers true and changes nothing.
    pub async fn create<C: AioCon>(&self, con: &mut C, o: &RankOptions) -> RedisResult<bool> {
        self.0.create_in(&mut Nonblocking(con), o).await
    }

    /// `RANK.ADD` on the member's shard.
    pub async fn add<C: AioCon>(
        &self,
        con: &mut C,
        member: &str,
        points: i64,
        keep: Option<Keep>,
    ) -> RedisResult<ShardRankWrite> {
        self.0
            .add_in(&mut Nonblocking(con), member, points, keep)
            .await
    }

    /// `RANK.INCR` on the member's shard.
    pub async fn incr<C: AioCon>(
        &self,
        con: &mut C,
        member: &str,
        delta: i64,
    ) -> RedisResult<ShardRankWrite> {
        self.0.incr_in(&mut Nonblocking(con), member, delta).await
    }

    /// `RANK.REM` of each member on its shard, all at once: the members
    /// removed.
    pub async fn rem<C: AioCon>(&self, con: &mut C, members: &[&str]) -> RedisResult<i64> {
        self.0.rem_in(&mut Nonblocking(con), members).await
    }

    /// The members of every shard, shard 0 first.
    pub async fn shard_counts<C: AioCon>(&self, con: &mut C) -> RedisResult<Vec<i64>> {
        self.0.shard_counts_in(&mut Nonblocking(con)).await
    }

    /// The board's members: the sum over its shards.
    pub async fn count<C: AioCon>(&self, con: &mut C) -> RedisResult<i64> {
        self.0.count_in(&mut Nonblocking(con)).await
    }

    /// A member's points, **global** 0-based rank and achievement time (as
    /// `RANK.GET` answers them on a single board), `None` when the member
    /// is not on the board. The rank is the sum over the shards of the
    /// members that rank above it.
    pub async fn get<C: AioCon>(
        &self,
        con: &mut C,
        member: &str,
    ) -> RedisResult<Option<RankEntry>> {
        self.0.get_in(&mut Nonblocking(con), member).await
    }

    /// A member's global 0-based rank, `None` when it is not on the board.
    pub async fn rank<C: AioCon>(&self, con: &mut C, member: &str) -> RedisResult<Option<i64>> {
        self.0.rank_in(&mut Nonblocking(con), member).await
    }

    /// The best `count` members after skipping `offset`, in the order
    /// `RANK.TOP` gives on a single board (ties included). Within
    /// [`PAGE_MAX`] (the server's `rank-range-max` default) it is one
    /// round, a merge of every shard's best `offset + count`; deeper, it
    /// walks the board page by page with [`top_after`](Self::top_after)'s
    /// cursor (set a lower page with [`top_paged`](Self::top_paged)).
    pub async fn top<C: AioCon>(
        &self,
        con: &mut C,
        count: i64,
        offset: i64,
    ) -> RedisResult<Vec<RankMember>> {
        self.0.top_in(&mut Nonblocking(con), count, offset).await
    }

    /// [`top`](Self::top) for a server whose `rank-range-max` is
    /// `page_max`.
    pub async fn top_paged<C: AioCon>(
        &self,
        con: &mut C,
        count: i64,
        offset: i64,
        page_max: i64,
    ) -> RedisResult<Vec<RankMember>> {
        self.0
            .top_paged_in(&mut Nonblocking(con), count, offset, page_max)
            .await
    }

    /// One page of the board in `RANK.TOP`'s order: the best `count`
    /// places (at most `rank-range-max`) after `cursor` (the last entry of
    /// the page before; `None` for the top), and the cursor of the next
    /// page (`None` when this page is the last). A cursor is a position,
    /// not an offset: a page stays exact while the board changes above it.
    pub async fn top_after<C: AioCon>(
        &self,
        con: &mut C,
        count: i64,
        cursor: Option<&RankPositionEntry>,
    ) -> RedisResult<(Vec<RankPositionEntry>, Option<RankPositionEntry>)> {
        self.0
            .top_after_in(&mut Nonblocking(con), count, cursor)
            .await
    }

    /// The places around a member: its global rank and the `n` places just
    /// above and below it (clipped at both ends), exactly as `RANK.AROUND`
    /// answers on a single board; `None` when the member is not on the
    /// board.
    pub async fn around<C: AioCon>(
        &self,
        con: &mut C,
        member: &str,
        n: i64,
    ) -> RedisResult<Option<Vec<RankPlace>>> {
        self.0.around_in(&mut Nonblocking(con), member, n).await
    }

    /// `RANK.POSITION` of one shard (the raw per-shard read).
    pub async fn position<C: AioCon>(
        &self,
        con: &mut C,
        shard: u32,
        count: i64,
        at: Option<(i64, &str)>,
    ) -> RedisResult<Option<RankPosition>> {
        self.0
            .position_in(&mut Nonblocking(con), shard, count, at)
            .await
    }
}
