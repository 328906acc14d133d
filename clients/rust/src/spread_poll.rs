//! A poll spread over shards (docs/spread.md, docs/poll.md): each voter's
//! ballots live in shard `routing::shard_of(user, n)`, so a voter's dedup
//! is one shard's, and every shard keeps the poll's rules, its own board
//! and its own exact counts. A candidate's total is the sum of its counts
//! over the shards.
//!
//! Reads that span shards are one call, and exact: [`SpreadPoll::top`] and
//! [`SpreadPoll::rank`] run a threshold algorithm over the shards' boards
//! (docs/spread.md, "POLL: an exact top over shards"): each round reads a
//! page of every shard's board (one pipeline per node), resolves the
//! candidates that could still matter with `POLL.RANK` on the shards that
//! did not list them, and stops as soon as no unread candidate can rank
//! above the answer. A shard that fails fails the call.

use std::collections::HashMap;

use redis::{Cmd, ConnectionLike, ErrorKind, RedisError, RedisResult, Value};

use crate::entities::{Backend, PollOptions};
use crate::replies::{self as r, PollEntry, PollInfo, PollRank, PollSync};
use crate::retry::RetryPolicy;
use crate::spread::{block, Blocking, Exec, FanIo, FanOut, OneIo, Shards};
#[cfg(feature = "aio")]
use crate::spread::{AioCon, AsyncSpread, Nonblocking};

fn arg<T: redis::ToRedisArgs>(v: T) -> Vec<u8> {
    v.to_redis_args().concat()
}

/// The most candidates one `POLL.TOP` may return (`poll-range-max`'s
/// default); [`SpreadPoll::with_page_max`] sets it for a server configured
/// lower.
pub const SPREAD_POLL_PAGE_MAX: u64 = 1000;

/// The first page read from each shard for a top `k`: `max(k, this)`. A
/// board that fits in it is read whole in one round, with no `POLL.RANK`.
pub const SPREAD_POLL_FIRST_PAGE: u64 = 100;

/// A poll spread over `n` shards.
///
/// ```no_run
/// use hotpath_client::{PollOptions, SpreadPoll};
/// # fn main() -> redis::RedisResult<()> {
/// let client = redis::cluster::ClusterClient::new(vec!["redis://127.0.0.1:7000/"])?;
/// let mut con = client.get_connection()?;
/// let poll = SpreadPoll::new("poll:national", 16);
/// poll.create(&mut con, &PollOptions::default())?;
/// poll.vote(&mut con, "user:1", "alice")?;
/// let top = poll.top(&mut con, 10, 0)?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpreadPoll {
    shards: Shards,
    now: Option<i64>,
    backend: Backend,
    page_max: u64,
    exec: Exec,
}

/// `POLL.INFO` over a spread poll: the rules (shard 0's; every shard has
/// the same), the sums of ballots and votes, and each shard's own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpreadPollInfo {
    pub mode: String,
    pub maxvotes: i64,
    pub start: i64,
    pub end: i64,
    pub ballots: i64,
    pub votes: i64,
    pub shards: u32,
    /// The absolute expiry of every key of the poll (unix ms), 0 for none.
    pub expires: i64,
    pub per_shard: Vec<PollInfo>,
}

/// `POLL.SYNC` over a spread poll: each shard's pending write-back
/// (its own epoch and deltas) and their merge, a candidate's delta being
/// the sum of its shards' deltas (zero sums left out), most changed
/// first. Apply `deltas` and record `epochs` in the same database
/// transaction (a retry after a crash finds which shards' epochs are
/// applied), then [`SpreadPoll::syncack`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpreadPollSync {
    pub epochs: Vec<i64>,
    pub per_shard: Vec<PollSync>,
    pub deltas: Vec<PollEntry>,
}

impl SpreadPoll {
    /// A handle on the poll `base` spread over `n` shards.
    ///
    /// # Panics
    /// Occurs when `n` is not from 1 to 1024.
    pub fn new(base: &str, n: u32) -> SpreadPoll {
        SpreadPoll {
            shards: Shards::new(base, n),
            now: None,
            backend: Backend::Module,
            page_max: SPREAD_POLL_PAGE_MAX,
            exec: Exec::default(),
        }
    }

    /// The same handle with the clock pinned (`NOW now_ms`).
    pub fn at(&self, now_ms: i64) -> SpreadPoll {
        SpreadPoll {
            now: Some(now_ms),
            ..self.clone()
        }
    }

    /// The same handle on another backend.
    pub fn with_backend(&self, backend: Backend) -> SpreadPoll {
        SpreadPoll {
            backend,
            ..self.clone()
        }
    }

    /// The same handle with another retry policy for its per-shard
    /// commands ([`RetryPolicy::NEVER`]: the connection's own retries
    /// only; docs/spread.md, "Retries under topology change").
    pub fn with_retry(&self, retry: RetryPolicy) -> SpreadPoll {
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
    pub fn durable(&self, replicas: i64, wait_ms: u64) -> SpreadPoll {
        let mut h = self.clone();
        h.exec.durable = (replicas > 0).then_some((replicas, wait_ms));
        h
    }

    /// The same handle reading boards in pages of at most `page_max`
    /// candidates (the server's `poll-range-max`).
    pub fn with_page_max(&self, page_max: u64) -> SpreadPoll {
        SpreadPoll {
            page_max: page_max.max(1),
            ..self.clone()
        }
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

    /// The shard of a voter: `routing::shard_of(user, n)`.
    pub fn shard_of(&self, user: &str) -> u32 {
        self.shards.shard_of(user)
    }

    fn cmd(&self, name: &str, i: u32, args: &[Vec<u8>]) -> (String, Cmd) {
        (
            self.shards.keys()[i as usize].clone(),
            self.shards.cmd(self.backend, name, i, args),
        )
    }

    fn with_now(&self, mut args: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        if let Some(t) = self.now {
            args.push(b"NOW".to_vec());
            args.push(arg(t));
        }
        args
    }

    /// Creates every shard with the poll's rules (`POLL.CREATE K_i …
    /// SPREAD n`), after checking them all: a shard in use (another count,
    /// other rules, a single-slot poll) stops the creation before anything
    /// is written. Shard 0 first, then the others at once. With a TTL,
    /// every shard expires at the same instant: `NOW` is the handle's
    /// clock or this machine's, or, when some shards exist already (a
    /// creation run again), the one that gives their expiry.
    pub fn create<C: FanOut>(&self, con: &mut C, o: &PollOptions) -> RedisResult<bool> {
        block(self.create_in(&mut Blocking(con), o))
    }

    /// [`SpreadPoll::create`] over any [`FanIo`].
    pub(crate) async fn create_in<C: FanIo>(
        &self,
        con: &mut C,
        o: &PollOptions,
    ) -> RedisResult<bool> {
        let mut now = self.now;
        let checks = self
            .exec
            .fan_out_each(con, &self.shards.all(self.backend, "POLL.INFO", &[]))
            .await;
        for (res, key) in checks.into_iter().zip(self.shards.keys()) {
            match res {
                Ok(v) => {
                    let expires = info_field(&v, "expires")?.unwrap_or(0);
                    if let (Some(ttl), true) = (o.ttl, expires > 0) {
                        now = Some(expires - ttl * 1000);
                    }
                }
                Err(e) if e.detail().is_some_and(|d| d.ends_with("does not exist")) => {}
                Err(e) => return Err(name_shard(key, e)),
            }
        }
        if now.is_none() && o.ttl.is_some() {
            now = Some(clock_ms());
        }
        let mut args: Vec<Vec<u8>> = Vec::new();
        let mut opt = |name: &str, v: Option<Vec<u8>>| {
            if let Some(v) = v {
                args.push(name.as_bytes().to_vec());
                args.push(v);
            }
        };
        opt("MODE", o.mode.as_deref().map(arg));
        opt("MAXVOTES", o.maxvotes.map(arg));
        if let Some(cands) = &o.candidates {
            args.push(b"CANDIDATES".to_vec());
            args.push(arg(cands.len()));
            args.extend(cands.iter().map(|c| c.as_bytes().to_vec()));
        }
        let mut opt = |name: &str, v: Option<i64>| {
            if let Some(v) = v {
                args.push(name.as_bytes().to_vec());
                args.push(arg(v));
            }
        };
        opt("START", o.start);
        opt("END", o.end);
        opt("TZ", o.tz);
        opt("TTL", o.ttl);
        opt("NOW", now);
        let calls: Vec<(String, Cmd)> = (0..self.shards.n())
            .map(|i| self.cmd("POLL.CREATE", i, &args))
            .collect();
        let first: Value = self
            .exec
            .query(con, &calls[0].0, &calls[0].1)
            .await
            .map_err(|e| name_shard(&calls[0].0, e))?;
        r::ok(&first)?;
        for v in self.exec.fan_out(con, &calls[1..]).await? {
            r::ok(&v)?;
        }
        Ok(true)
    }

    /// `POLL.VOTE` on the voter's shard: true when counted, false for a
    /// duplicate.
    pub fn vote<C: ConnectionLike>(
        &self,
        con: &mut C,
        user: &str,
        candidate: &str,
    ) -> RedisResult<bool> {
        block(self.vote_in(&mut Blocking(con), user, candidate))
    }

    /// [`SpreadPoll::vote`] over any [`OneIo`].
    pub(crate) async fn vote_in<C: OneIo>(
        &self,
        con: &mut C,
        user: &str,
        candidate: &str,
    ) -> RedisResult<bool> {
        let args = self.with_now(vec![arg(user), arg(candidate)]);
        let (k, c) = self.cmd("POLL.VOTE", self.shard_of(user), &args);
        Ok(r::int(&self.exec.query(con, &k, &c).await?)? == 1)
    }

    /// `POLL.REVOKE` on the voter's shard: the votes taken back.
    pub fn revoke<C: ConnectionLike>(
        &self,
        con: &mut C,
        user: &str,
        candidate: Option<&str>,
    ) -> RedisResult<i64> {
        block(self.revoke_in(&mut Blocking(con), user, candidate))
    }

    /// [`SpreadPoll::revoke`] over any [`OneIo`].
    pub(crate) async fn revoke_in<C: OneIo>(
        &self,
        con: &mut C,
        user: &str,
        candidate: Option<&str>,
    ) -> RedisResult<i64> {
        let mut args = vec![arg(user)];
        args.extend(candidate.map(arg));
        let (k, c) = self.cmd("POLL.REVOKE", self.shard_of(user), &self.with_now(args));
        r::int(&self.exec.query(con, &k, &c).await?)
    }

    /// `POLL.STATUS` on the voter's shard: the candidates this voter has
    /// votes for.
    pub fn status<C: ConnectionLike>(&self, con: &mut C, user: &str) -> RedisResult<Vec<String>> {
        block(self.status_in(&mut Blocking(con), user))
    }

    /// [`SpreadPoll::status`] over any [`OneIo`].
    pub(crate) async fn status_in<C: OneIo>(
        &self,
        con: &mut C,
        user: &str,
    ) -> RedisResult<Vec<String>> {
        let args = self.with_now(vec![arg(user)]);
        let (k, c) = self.cmd("POLL.STATUS", self.shard_of(user), &args);
        r::texts(&self.exec.query(con, &k, &c).await?)
    }

    /// Each candidate's exact total (the sum over the shards; `None` for a
    /// candidate on no shard's board), in order: one `POLL.RANK` per
    /// candidate and shard, all at once.
    pub fn totals<C: FanOut>(
        &self,
        con: &mut C,
        candidates: &[&str],
    ) -> RedisResult<Vec<Option<i64>>> {
        block(self.totals_in(&mut Blocking(con), candidates))
    }

    /// [`SpreadPoll::totals`] over any [`FanIo`].
    pub(crate) async fn totals_in<C: FanIo>(
        &self,
        con: &mut C,
        candidates: &[&str],
    ) -> RedisResult<Vec<Option<i64>>> {
        let asks: Vec<(String, u32)> = candidates
            .iter()
            .flat_map(|c| (0..self.shards.n()).map(move |i| (c.to_string(), i)))
            .collect();
        let votes = Io { poll: self, con }.votes(&asks).await?;
        Ok(votes
            .chunks(self.shards.n() as usize)
            .map(|per| {
                per.iter()
                    .any(Option::is_some)
                    .then(|| per.iter().map(|v| v.unwrap_or(0)).sum())
            })
            .collect())
    }

    /// The exact top `count` candidates from place `offset` of the merged
    /// board (most votes first; ties: name descending byte-wise, as
    /// `POLL.TOP` orders one board). Its cost grows with `offset + count`.
    pub fn top<C: FanOut>(
        &self,
        con: &mut C,
        count: u64,
        offset: u64,
    ) -> RedisResult<Vec<PollEntry>> {
        block(self.top_in(&mut Blocking(con), count, offset))
    }

    /// [`SpreadPoll::top`] over any [`FanIo`].
    pub(crate) async fn top_in<C: FanIo>(
        &self,
        con: &mut C,
        count: u64,
        offset: u64,
    ) -> RedisResult<Vec<PollEntry>> {
        let k = offset.saturating_add(count);
        let first = k.max(SPREAD_POLL_FIRST_PAGE);
        let all = exact_top(
            &mut Io { poll: self, con },
            self.shards.n(),
            k,
            first,
            self.page_max,
        )
        .await?;
        Ok(all
            .into_iter()
            .skip(usize::try_from(offset).unwrap_or(usize::MAX))
            .map(|(candidate, votes)| PollEntry { candidate, votes })
            .collect())
    }

    /// A candidate's exact rank on the merged board (0-based, in the order
    /// of [`SpreadPoll::top`]) and its total; `None` for a candidate on no
    /// shard's board. Its cost grows with the rank.
    pub fn rank<C: FanOut>(&self, con: &mut C, candidate: &str) -> RedisResult<Option<PollRank>> {
        block(self.rank_in(&mut Blocking(con), candidate))
    }

    /// [`SpreadPoll::rank`] over any [`FanIo`].
    pub(crate) async fn rank_in<C: FanIo>(
        &self,
        con: &mut C,
        candidate: &str,
    ) -> RedisResult<Option<PollRank>> {
        Ok(exact_rank(
            &mut Io { poll: self, con },
            self.shards.n(),
            candidate,
            SPREAD_POLL_FIRST_PAGE,
            self.page_max,
        )
        .await?
        .map(|(rank, votes)| PollRank { rank, votes }))
    }

    /// `POLL.INFO` of every shard and the sums; `None` when no shard has
    /// the poll's rules (never created).
    pub fn info<C: FanOut>(&self, con: &mut C) -> RedisResult<Option<SpreadPollInfo>> {
        block(self.info_in(&mut Blocking(con)))
    }

    /// [`SpreadPoll::info`] over any [`FanIo`].
    pub(crate) async fn info_in<C: FanIo>(
        &self,
        con: &mut C,
    ) -> RedisResult<Option<SpreadPollInfo>> {
        let raw = self
            .exec
            .fan_out(con, &self.shards.all(self.backend, "POLL.INFO", &[]))
            .await?;
        let mut per = Vec::with_capacity(raw.len());
        for v in &raw {
            match r::poll_info(v)? {
                Some(i) => per.push(i),
                None => return Ok(None),
            }
        }
        let first = per[0].clone();
        Ok(Some(SpreadPollInfo {
            mode: first.mode,
            maxvotes: first.maxvotes,
            start: first.start,
            end: first.end,
            ballots: per.iter().map(|i| i.ballots).sum(),
            votes: per.iter().map(|i| i.votes).sum(),
            shards: self.shards.n(),
            expires: info_field(&raw[0], "expires")?.unwrap_or(0),
            per_shard: per,
        }))
    }

    /// `POLL.SYNC` on every shard, and the merge of their deltas. Every
    /// shard is checked first (`POLL.INFO`), so that a missing or corrupt
    /// shard fails the call before any shard freezes a snapshot.
    pub fn sync<C: FanOut>(&self, con: &mut C) -> RedisResult<SpreadPollSync> {
        block(self.sync_in(&mut Blocking(con)))
    }

    /// [`SpreadPoll::sync`] over any [`FanIo`].
    pub(crate) async fn sync_in<C: FanIo>(&self, con: &mut C) -> RedisResult<SpreadPollSync> {
        self.exec
            .fan_out(con, &self.shards.all(self.backend, "POLL.INFO", &[]))
            .await?;
        let per = self
            .exec
            .fan_out(con, &self.shards.all(self.backend, "POLL.SYNC", &[]))
            .await?
            .iter()
            .map(r::poll_sync)
            .collect::<RedisResult<Vec<PollSync>>>()?;
        let mut sum: HashMap<&str, i64> = HashMap::new();
        for s in &per {
            for d in &s.deltas {
                *sum.entry(d.candidate.as_str()).or_insert(0) += d.votes;
            }
        }
        let mut deltas: Vec<PollEntry> = sum
            .into_iter()
            .filter(|(_, v)| *v != 0)
            .map(|(c, v)| PollEntry {
                candidate: c.to_string(),
                votes: v,
            })
            .collect();
        deltas.sort_by(|a, b| (b.votes.abs(), &b.candidate).cmp(&(a.votes.abs(), &a.candidate)));
        Ok(SpreadPollSync {
            epochs: per.iter().map(|s| s.epoch).collect(),
            per_shard: per,
            deltas,
        })
    }

    /// `POLL.SYNCACK` of each shard's epoch of `sync`: per shard, true when
    /// that epoch was its pending snapshot.
    pub fn syncack<C: FanOut>(&self, con: &mut C, sync: &SpreadPollSync) -> RedisResult<Vec<bool>> {
        block(self.syncack_in(&mut Blocking(con), sync))
    }

    /// [`SpreadPoll::syncack`] over any [`FanIo`].
    pub(crate) async fn syncack_in<C: FanIo>(
        &self,
        con: &mut C,
        sync: &SpreadPollSync,
    ) -> RedisResult<Vec<bool>> {
        let calls: Vec<(String, Cmd)> = sync
            .epochs
            .iter()
            .enumerate()
            .map(|(i, e)| self.cmd("POLL.SYNCACK", i as u32, &[arg(*e)]))
            .collect();
        self.exec
            .fan_out(con, &calls)
            .await?
            .iter()
            .map(|v| Ok(r::int(v)? == 1))
            .collect()
    }
}

/// This machine's clock in unix ms.
fn clock_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

/// An integer field of a map-like reply, `None` when absent.
fn info_field(v: &Value, name: &str) -> RedisResult<Option<i64>> {
    for (k, v) in r::pairs(v)? {
        if r::text(k)? == name {
            return Ok(Some(r::int(v)?));
        }
    }
    Ok(None)
}

/// Names the shard in an error that does not already name it.
fn name_shard(key: &str, e: RedisError) -> RedisError {
    if e.detail().is_some_and(|d| d.contains(key)) {
        return e;
    }
    RedisError::from((
        ErrorKind::ResponseError,
        "hotpath: a shard failed",
        format!("shard '{key}': {e}"),
    ))
}

// ---- the exact merge of the shards' boards ----

/// Access to the shards' boards: sorted pages and single counts.
pub(crate) trait Boards {
    /// For each `(shard, offset, count)`, the shard's board from place
    /// `offset`, at most `count` entries, in its order.
    async fn pages(&mut self, asks: &[(u32, u64, u64)]) -> RedisResult<Vec<Vec<(String, i64)>>>;
    /// For each `(candidate, shard)`, the candidate's count on that shard,
    /// `None` when it is not on the shard's board.
    async fn votes(&mut self, asks: &[(String, u32)]) -> RedisResult<Vec<Option<i64>>>;
}

/// The boards of a spread poll through a connection.
struct Io<'a, C> {
    poll: &'a SpreadPoll,
    con: &'a mut C,
}

impl<C: FanIo> Boards for Io<'_, C> {
    async fn pages(&mut self, asks: &[(u32, u64, u64)]) -> RedisResult<Vec<Vec<(String, i64)>>> {
        let calls: Vec<(String, Cmd)> = asks
            .iter()
            .map(|&(i, offset, count)| {
                self.poll.cmd(
                    "POLL.TOP",
                    i,
                    &[arg(count), b"OFFSET".to_vec(), arg(offset)],
                )
            })
            .collect();
        self.poll
            .exec
            .fan_out(self.con, &calls)
            .await?
            .iter()
            .map(|v| {
                Ok(r::poll_entries(v)?
                    .into_iter()
                    .map(|e| (e.candidate, e.votes))
                    .collect())
            })
            .collect()
    }

    async fn votes(&mut self, asks: &[(String, u32)]) -> RedisResult<Vec<Option<i64>>> {
        let calls: Vec<(String, Cmd)> = asks
            .iter()
            .map(|(c, i)| self.poll.cmd("POLL.RANK", *i, &[arg(c.as_str())]))
            .collect();
        self.poll
            .exec
            .fan_out(self.con, &calls)
            .await?
            .iter()
            .map(|v| Ok(r::poll_rank(v)?.map(|p| p.votes)))
            .collect()
    }
}

/// What the rounds have learnt of the shards' boards.
struct Merge {
    /// Entries read from the top of each shard's board.
    depth: Vec<u64>,
    /// The shard's board was read to its end.
    done: Vec<bool>,
    /// The count of the last entry read from each shard: every entry not
    /// read yet has at most this count there.
    last: Vec<i64>,
    /// Per candidate, its count on each shard where it is known.
    known: HashMap<String, Vec<Option<i64>>>,
}

impl Merge {
    fn new(n: u32) -> Merge {
        let n = n as usize;
        Merge {
            depth: vec![0; n],
            done: vec![false; n],
            last: vec![0; n],
            known: HashMap::new(),
        }
    }

    fn all_done(&self) -> bool {
        self.done.iter().all(|d| *d)
    }

    /// The most an unread candidate can have in total: the sum of the last
    /// counts read from the shards not read to their end (a candidate is
    /// absent, 0, from a shard that does not list it).
    fn bound(&self) -> i64 {
        (0..self.done.len())
            .filter(|&i| !self.done[i])
            .map(|i| self.last[i].max(0))
            .sum()
    }

    /// A candidate's count on shard `i`, when known.
    fn value(&self, c: &str, i: usize) -> Option<i64> {
        match self.known.get(c).and_then(|v| v[i]) {
            Some(v) => Some(v),
            None if self.done[i] => Some(0),
            None => None,
        }
    }

    /// (lower, upper) bounds of a candidate's total, and whether exact.
    fn bounds(&self, c: &str) -> (i64, i64, bool) {
        let (mut lo, mut hi, mut exact) = (0i64, 0i64, true);
        for i in 0..self.done.len() {
            match self.value(c, i) {
                Some(v) => {
                    lo += v;
                    hi += v;
                }
                None => {
                    hi += self.last[i].max(0);
                    exact = false;
                }
            }
        }
        (lo, hi, exact)
    }

    /// Reads the next `step` entries of every shard not read to its end,
    /// in pages of at most `page_max`.
    async fn read(&mut self, b: &mut impl Boards, step: u64, page_max: u64) -> RedisResult<()> {
        let mut asks = Vec::new();
        for i in 0..self.done.len() {
            if self.done[i] {
                continue;
            }
            let mut off = 0;
            while off < step {
                let count = page_max.min(step - off);
                asks.push((i as u32, self.depth[i] + off, count));
                off += count;
            }
        }
        let n = self.done.len();
        for (&(i, _, count), page) in asks.iter().zip(b.pages(&asks).await?) {
            let i = i as usize;
            if self.done[i] {
                continue;
            }
            self.depth[i] += page.len() as u64;
            if (page.len() as u64) < count {
                self.done[i] = true;
            }
            if let Some((_, v)) = page.last() {
                self.last[i] = *v;
            }
            for (c, v) in page {
                self.known.entry(c).or_insert_with(|| vec![None; n])[i] = Some(v);
            }
        }
        Ok(())
    }

    /// The single counts [`Merge::resolve`] would ask for `cands`.
    fn unknowns(&self, cands: &[String]) -> usize {
        cands
            .iter()
            .map(|c| {
                (0..self.done.len())
                    .filter(|&i| self.value(c, i).is_none())
                    .count()
            })
            .sum()
    }

    /// Fills in the unknown counts of `cands` (one count per candidate and
    /// shard where it is unknown, all at once).
    async fn resolve(&mut self, b: &mut impl Boards, cands: &[String]) -> RedisResult<()> {
        let asks: Vec<(String, u32)> = cands
            .iter()
            .flat_map(|c| {
                (0..self.done.len())
                    .filter(|&i| self.value(c, i).is_none())
                    .map(move |i| (c.clone(), i as u32))
            })
            .collect();
        if asks.is_empty() {
            return Ok(());
        }
        let n = self.done.len();
        for ((c, i), v) in asks.iter().zip(b.votes(&asks).await?) {
            self.known.entry(c.clone()).or_insert_with(|| vec![None; n])[*i as usize] =
                Some(v.unwrap_or(0));
        }
        Ok(())
    }
}

/// The most single counts a round resolves; with more candidates in
/// doubt (flat boards, many near-ties), reading deeper pages is cheaper.
fn resolve_budget(n: u32, k: usize) -> usize {
    n as usize * k.clamp(16, 1000)
}

/// The merged board's order: most votes first, then name descending.
fn order(a: &(String, i64), b: &(String, i64)) -> std::cmp::Ordering {
    (b.1, b.0.as_bytes()).cmp(&(a.1, a.0.as_bytes()))
}

/// The exact first `k` entries of the merged board of `n` shards: a
/// threshold algorithm (docs/spread.md). Each round reads the next page of
/// every shard (the first `first` deep, then doubling), bounds each seen
/// candidate's total (its known counts, plus the last count read from each
/// shard that did not list it), resolves with single counts every
/// candidate whose upper bound reaches the `k`-th best lower bound (when
/// they are at most [`resolve_budget`]; else the next round reads deeper),
/// and stops when the `k`-th exact total exceeds what any unread candidate
/// can have (or every board was read whole).
pub(crate) async fn exact_top(
    b: &mut impl Boards,
    n: u32,
    k: u64,
    first: u64,
    page_max: u64,
) -> RedisResult<Vec<(String, i64)>> {
    if k == 0 {
        return Ok(Vec::new());
    }
    let k = usize::try_from(k).unwrap_or(usize::MAX);
    let mut m = Merge::new(n);
    let mut step = first.max(1);
    loop {
        m.read(b, step, page_max).await?;
        let mut lowers: Vec<i64> = m.known.keys().map(|c| m.bounds(c).0).collect();
        let floor = if lowers.len() >= k {
            lowers.sort_unstable_by(|a, b| b.cmp(a));
            lowers[k - 1]
        } else {
            i64::MIN
        };
        let need: Vec<String> = m
            .known
            .keys()
            .filter(|c| {
                let (_, hi, exact) = m.bounds(c);
                !exact && hi >= floor
            })
            .cloned()
            .collect();
        // Until every candidate that could reach the top is exact, the
        // top is not known.
        let resolved = m.unknowns(&need) <= resolve_budget(n, k);
        if resolved {
            m.resolve(b, &need).await?;
        }
        let mut exact: Vec<(String, i64)> = m
            .known
            .keys()
            .filter_map(|c| match m.bounds(c) {
                (lo, _, true) => Some((c.clone(), lo)),
                _ => None,
            })
            .collect();
        exact.sort_by(order);
        let settled = resolved && exact.len() >= k && exact[k - 1].1 > m.bound();
        if m.all_done() || settled {
            exact.truncate(k);
            return Ok(exact);
        }
        step = step.saturating_mul(2);
    }
}

/// The exact rank (0-based) and total of `cand` on the merged board of
/// `n` shards, `None` when no shard lists it: its total from every shard,
/// then pages of every board until no unread candidate can reach that
/// total; the seen candidates whose bounds straddle it are resolved.
pub(crate) async fn exact_rank(
    b: &mut impl Boards,
    n: u32,
    cand: &str,
    first: u64,
    page_max: u64,
) -> RedisResult<Option<(i64, i64)>> {
    let asks: Vec<(String, u32)> = (0..n).map(|i| (cand.to_string(), i)).collect();
    let own = b.votes(&asks).await?;
    if own.iter().all(Option::is_none) {
        return Ok(None);
    }
    let total: i64 = own.iter().map(|v| v.unwrap_or(0)).sum();
    let mut m = Merge::new(n);
    m.known.insert(
        cand.to_string(),
        own.iter().map(|v| Some(v.unwrap_or(0))).collect(),
    );
    let mut step = first.max(1);
    let me = (cand.to_string(), total);
    let (mut above, mut unsure);
    loop {
        m.read(b, step, page_max).await?;
        step = step.saturating_mul(2);
        // An unread candidate has at most `bound`: below `total`, it ranks
        // below; equal, it might still come first by name.
        if !m.all_done() && m.bound() >= total {
            continue;
        }
        above = 0i64;
        unsure = Vec::new();
        for c in m.known.keys().filter(|c| c.as_str() != cand) {
            match m.bounds(c) {
                (lo, _, true) => above += i64::from(order(&(c.clone(), lo), &me).is_lt()),
                (lo, _, false) if lo > total => above += 1,
                (_, hi, false) if hi < total => {}
                _ => unsure.push(c.clone()),
            }
        }
        // Many candidates in doubt (near-ties): deeper pages settle them
        // for less than single counts.
        if m.all_done() || m.unknowns(&unsure) <= resolve_budget(n, 0) {
            break;
        }
    }
    m.resolve(b, &unsure).await?;
    for c in &unsure {
        let (lo, _, _) = m.bounds(c);
        above += i64::from(order(&(c.clone(), lo), &me).is_lt());
    }
    Ok(Some((above, total)))
}

#[cfg(feature = "aio")]
impl AsyncSpread<'_, SpreadPoll> {
    /// Creates every shard with the poll's rules (`POLL.CREATE K_i …
    /// SPREAD n`), after checking them all: a shard in use (another count,
    /// other rules, a single-slot poll) stops the creation before anything
    /// is written. Shard 0 first, then the others at once. With a TTL,
    /// every shard expires at the same instant: `NOW` is the handle's
    /// clock or this machine's, or, when some shards exist already (a
    /// creation run again), the one that gives their expiry.
    pub async fn create<C: AioCon>(&self, con: &mut C, o: &PollOptions) -> RedisResult<bool> {
        self.0.create_in(&mut Nonblocking(con), o).await
    }

    /// `POLL.VOTE` on the voter's shard: true when counted, false for a
    /// duplicate.
    pub async fn vote<C: AioCon>(
        &self,
        con: &mut C,
        user: &str,
        candidate: &str,
    ) -> RedisResult<bool> {
        self.0.vote_in(&mut Nonblocking(con), user, candidate).await
    }

    /// `POLL.REVOKE` on the voter's shard: the votes taken back.
    pub async fn revoke<C: AioCon>(
        &self,
        con: &mut C,
        user: &str,
        candidate: Option<&str>,
    ) -> RedisResult<i64> {
        self.0
            .revoke_in(&mut Nonblocking(con), user, candidate)
            .await
    }

    /// `POLL.STATUS` on the voter's shard: the candidates this voter has
    /// votes for.
    pub async fn status<C: AioCon>(&self, con: &mut C, user: &str) -> RedisResult<Vec<String>> {
        self.0.status_in(&mut Nonblocking(con), user).await
    }

    /// Each candidate's exact total (the sum over the shards; `None` for a
    /// candidate on no shard's board), in order: one `POLL.RANK` per
    /// candidate and shard, all at once.
    pub async fn totals<C: AioCon>(
        &self,
        con: &mut C,
        candidates: &[&str],
    ) -> RedisResult<Vec<Option<i64>>> {
        self.0.totals_in(&mut Nonblocking(con), candidates).await
    }

    /// The exact top `count` candidates from place `offset` of the merged
    /// board (most votes first; ties: name descending byte-wise, as
    /// `POLL.TOP` orders one board). Its cost grows with `offset + count`.
    pub async fn top<C: AioCon>(
        &self,
        con: &mut C,
        count: u64,
        offset: u64,
    ) -> RedisResult<Vec<PollEntry>> {
        self.0.top_in(&mut Nonblocking(con), count, offset).await
    }

    /// A candidate's exact rank on the merged board (0-based, in the order
    /// of [`SpreadPoll::top`]) and its total; `None` for a candidate on no
    /// shard's board. Its cost grows with the rank.
    pub async fn rank<C: AioCon>(
        &self,
        con: &mut C,
        candidate: &str,
    ) -> RedisResult<Option<PollRank>> {
        self.0.rank_in(&mut Nonblocking(con), candidate).await
    }

    /// `POLL.INFO` of every shard and the sums; `None` when no shard has
    /// the poll's rules (never created).
    pub async fn info<C: AioCon>(&self, con: &mut C) -> RedisResult<Option<SpreadPollInfo>> {
        self.0.info_in(&mut Nonblocking(con)).await
    }

    /// `POLL.SYNC` on every shard, and the merge of their deltas. Every
    /// shard is checked first (`POLL.INFO`), so that a missing or corrupt
    /// shard fails the call before any shard freezes a snapshot.
    pub async fn sync<C: AioCon>(&self, con: &mut C) -> RedisResult<SpreadPollSync> {
        self.0.sync_in(&mut Nonblocking(con)).await
    }

    /// `POLL.SYNCACK` of each shard's epoch of `sync`: per shard, true when
    /// that epoch was its pending snapshot.
    pub async fn syncack<C: AioCon>(
        &self,
        con: &mut C,
        sync: &SpreadPollSync,
    ) -> RedisResult<Vec<bool>> {
        self.0.syncack_in(&mut Nonblocking(con), sync).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Boards in memory, counting the calls.
    struct Mem {
        boards: Vec<Vec<(String, i64)>>,
        pages: usize,
        votes: usize,
    }

    impl Mem {
        fn new(mut boards: Vec<Vec<(String, i64)>>) -> Mem {
            for b in &mut boards {
                b.sort_by(order);
            }
            Mem {
                boards,
                pages: 0,
                votes: 0,
            }
        }
        fn merged(&self) -> Vec<(String, i64)> {
            let mut sum: HashMap<String, i64> = HashMap::new();
            for b in &self.boards {
                for (c, v) in b {
                    *sum.entry(c.clone()).or_insert(0) += v;
                }
            }
            let mut all: Vec<(String, i64)> = sum.into_iter().collect();
            all.sort_by(order);
            all
        }
    }

    impl Boards for Mem {
        async fn pages(
            &mut self,
            asks: &[(u32, u64, u64)],
        ) -> RedisResult<Vec<Vec<(String, i64)>>> {
            self.pages += asks.len();
            Ok(asks
                .iter()
                .map(|&(i, off, count)| {
                    self.boards[i as usize]
                        .iter()
                        .skip(off as usize)
                        .take(count as usize)
                        .cloned()
                        .collect()
                })
                .collect())
        }
        async fn votes(&mut self, asks: &[(String, u32)]) -> RedisResult<Vec<Option<i64>>> {
            self.votes += asks.len();
            Ok(asks
                .iter()
                .map(|(c, i)| {
                    self.boards[*i as usize]
                        .iter()
                        .find(|(x, _)| x == c)
                        .map(|(_, v)| *v)
                })
                .collect())
        }
    }

    fn rng(seed: &mut u64) -> u64 {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        *seed
    }

    /// Random boards: `cands` candidates, votes skewed (Zipf-like) or flat
    /// (many ties), each vote in a random shard.
    fn boards(
        seed: u64,
        n: usize,
        cands: usize,
        votes: usize,
        flat: bool,
    ) -> Vec<Vec<(String, i64)>> {
        let mut s = seed | 1;
        let mut counts: Vec<HashMap<String, i64>> = vec![HashMap::new(); n];
        for _ in 0..votes {
            let r = rng(&mut s);
            let c = if flat {
                (r % cands as u64) as usize
            } else {
                // Skewed: candidate j with weight about 1/(j+1).
                let x = (r % 1_000_000) as f64 / 1_000_000.0;
                ((cands as f64).powf(x) as usize)
                    .saturating_sub(1)
                    .min(cands - 1)
            };
            let shard = (rng(&mut s) % n as u64) as usize;
            *counts[shard].entry(format!("c{c}")).or_insert(0) += 1;
        }
        counts
            .into_iter()
            .map(|m| m.into_iter().collect())
            .collect()
    }

    #[test]
    fn top_and_rank_equal_the_merged_board() {
        for seed in 1..60u64 {
            for flat in [false, true] {
                let n = 1 + (seed % 7) as usize;
                let cands = [1, 3, 20, 150, 700][(seed % 5) as usize];
                let mut mem = Mem::new(boards(seed, n, cands, 3000, flat));
                let merged = mem.merged();
                for (k, first, page) in [
                    (1, 1, 1),
                    (5, 2, 3),
                    (10, 100, 1000),
                    (40, 40, 7),
                    (1000, 1000, 1000),
                ] {
                    let got = block(exact_top(&mut mem, n as u32, k, first, page)).unwrap();
                    let want: Vec<(String, i64)> =
                        merged.iter().take(k as usize).cloned().collect();
                    assert_eq!(
                        got, want,
                        "seed {seed} flat {flat} n {n} k {k} first {first}"
                    );
                }
                for (r, (c, v)) in merged.iter().enumerate().step_by(7) {
                    let got = block(exact_rank(&mut mem, n as u32, c, 3, 5)).unwrap();
                    assert_eq!(got, Some((r as i64, *v)), "seed {seed} {c}");
                }
                assert_eq!(
                    block(exact_rank(&mut mem, n as u32, "nobody", 3, 5)).unwrap(),
                    None
                );
            }
        }
    }

    #[test]
    fn flat_boards_cost_more_but_stay_exact() {
        // 16 shards, 100,000 votes spread evenly over 5,000 candidates:
        // many near-ties, the bound falls slowly.
        let mut mem = Mem::new(boards(9, 16, 5000, 100_000, true));
        let merged = mem.merged();
        let got = block(exact_top(
            &mut mem,
            16,
            10,
            SPREAD_POLL_FIRST_PAGE,
            SPREAD_POLL_PAGE_MAX,
        ))
        .unwrap();
        assert_eq!(got, merged[..10]);
        eprintln!(
            "flat: top 10 of 5,000 candidates over 16 shards: {} pages, {} single counts",
            mem.pages, mem.votes
        );
        let (pages, votes) = (mem.pages, mem.votes);
        let mid = &merged[2500];
        let got = block(exact_rank(
            &mut mem,
            16,
            &mid.0,
            SPREAD_POLL_FIRST_PAGE,
            SPREAD_POLL_PAGE_MAX,
        ))
        .unwrap();
        assert_eq!(got, Some((2500, mid.1)));
        eprintln!(
            "flat: rank of the 2,500th: {} pages, {} single counts",
            mem.pages - pages,
            mem.votes - votes
        );
    }

    #[test]
    fn a_skewed_top_10_is_one_round_with_few_counts() {
        // 16 shards, 100,000 votes over 5,000 candidates, skewed.
        let mut mem = Mem::new(boards(7, 16, 5000, 100_000, false));
        let want: Vec<(String, i64)> = mem.merged().into_iter().take(10).collect();
        let got = block(exact_top(
            &mut mem,
            16,
            10,
            SPREAD_POLL_FIRST_PAGE,
            SPREAD_POLL_PAGE_MAX,
        ))
        .unwrap();
        assert_eq!(got, want);
        eprintln!(
            "top 10 of 5,000 candidates over 16 shards: {} pages, {} single counts",
            mem.pages, mem.votes
        );
        assert_eq!(mem.pages, 16, "one page per shard");
        assert!(mem.votes <= 16 * 10, "{} single counts", mem.votes);
    }
}
