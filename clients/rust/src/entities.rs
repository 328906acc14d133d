//! Entity handles: a base key plus the optional pinned clock (`NOW`), with
//! one method per command. Every method takes any `redis::ConnectionLike`.

use redis::{Cmd, ConnectionLike, RedisResult, ToRedisArgs, Value};

use crate::replies::{self as r, *};

/// Builds the Redis command for a hotpath command. `Module` sends the
/// module's own commands; `Functions` calls the Lua twins' Functions
/// library, for servers without the module; `Fallback` (the default)
/// sends the module's and falls back to the library's (fallback.rs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backend {
    Module,
    /// `FCALL hotpath_<family>_<command>`; LIKE's twins take the configs.
    Functions(crate::fallback::LikeConfigs),
    /// The module, and the library when the server does not know it.
    Fallback(crate::fallback::LikeConfigs),
}

impl Backend {
    /// Returns the command `name argv…`; `keys` are the positions of the
    /// Redis keys in `argv` (what a Functions backend passes as keys).
    pub fn command(&self, name: &str, argv: &[Vec<u8>], keys: &[usize]) -> Cmd {
        match self {
            Backend::Functions(like) => crate::fallback::functions_command(name, argv, keys, like),
            Backend::Module | Backend::Fallback(_) => {
                let mut c = redis::cmd(name);
                for a in argv {
                    c.arg(a.as_slice());
                }
                c
            }
        }
    }
}

/// A command being built.
struct Call {
    name: &'static str,
    argv: Vec<Vec<u8>>,
    keys: Vec<usize>,
}

impl Call {
    fn new(name: &'static str, key: &str) -> Call {
        Call {
            name,
            argv: vec![key.as_bytes().to_vec()],
            keys: vec![0],
        }
    }

    fn arg<T: ToRedisArgs>(mut self, a: T) -> Call {
        self.argv.extend(a.to_redis_args());
        self
    }

    fn key(mut self, k: &str) -> Call {
        self.keys.push(self.argv.len());
        self.argv.push(k.as_bytes().to_vec());
        self
    }

    fn opt<T: ToRedisArgs>(self, name: &str, v: Option<T>) -> Call {
        match v {
            Some(v) => self.arg(name).arg(v),
            None => self,
        }
    }

    fn flag(self, name: &str, on: bool) -> Call {
        if on {
            self.arg(name)
        } else {
            self
        }
    }

    fn run<C: ConnectionLike>(self, backend: Backend, con: &mut C) -> RedisResult<Value> {
        crate::fallback::run(backend, self.name, &self.argv, &self.keys, con)
    }
}

macro_rules! entity {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Debug, PartialEq, Eq)]
        pub struct $name {
            key: String,
            now: Option<i64>,
            idem: Option<String>,
            backend: Backend,
        }

        impl $name {
            /// A handle on the entity with base key `key`.
            pub fn new(key: impl Into<String>) -> Self {
                $name { key: key.into(), now: None, idem: None, backend: Backend::default() }
            }

            /// The same handle with a retry-safe token: the writes that
            /// take `IDEM token` (docs/idem.md) send `IDEM token`, so that
            /// resending a write with the same handle replays its first
            /// reply instead of writing twice. Use one token per logical
            /// write. The module backend only (the Lua twins take none).
            pub fn with_idem(&self, token: impl Into<String>) -> Self {
                $name { idem: Some(token.into()), ..self.clone() }
            }

            /// The same handle with the clock pinned: commands that take
            /// `NOW` send `NOW now_ms` (tests, replays).
            pub fn at(&self, now_ms: i64) -> Self {
                $name { now: Some(now_ms), ..self.clone() }
            }

            /// The same handle on another backend.
            pub fn with_backend(&self, backend: Backend) -> Self {
                $name { backend, ..self.clone() }
            }

            /// The base key.
            pub fn key(&self) -> &str {
                &self.key
            }
        }
    };
}

entity!(
    /// A one-vote poll (docs/poll.md).
    Poll
);
entity!(
    /// A tie-broken leaderboard (docs/rank.md).
    Rank
);
entity!(
    /// A post's likes (docs/like.md); user ids are integers.
    Like
);
entity!(
    /// A red packet (docs/redpacket.md); amounts in cents.
    RedPacket
);
entity!(
    /// A live-stream lucky bag (docs/luckybag.md).
    LuckyBag
);
entity!(
    /// A rate limiter; the key is the limiter (docs/rate.md).
    Rate
);
entity!(
    /// A lock or semaphore with fencing tokens (docs/reference/lock.md).
    Lock
);
entity!(
    /// A delay queue with leases and dead letters
    /// (docs/reference/delayq.md).
    DelayQueue
);
entity!(
    /// An application idempotency key: a fenced in-progress lease, the
    /// stored result replayed (docs/reference/idem.md).
    Idem
);
entity!(
    /// Flash-sale stock that never oversells (docs/stock.md).
    Stock
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

    /// `POLL.CREATE`.
    pub fn create<C: ConnectionLike>(&self, con: &mut C, o: &PollOptions) -> RedisResult<bool> {
        let mut c = self
            .call("POLL.CREATE")
            .opt("MODE", o.mode.as_deref())
            .opt("MAXVOTES", o.maxvotes);
        if let Some(cands) = &o.candidates {
            c = c.arg("CANDIDATES").arg(cands.len()).arg(cands);
        }
        let c = c
            .opt("START", o.start)
            .opt("END", o.end)
            .opt("TZ", o.tz)
            .opt("TTL", o.ttl)
            .opt("NOW", self.now);
        ok(&c.run(self.backend, con)?)
    }

    /// `POLL.VOTE`: true when counted, false for a duplicate.
    pub fn vote<C: ConnectionLike>(
        &self,
        con: &mut C,
        user: &str,
        candidate: &str,
    ) -> RedisResult<bool> {
        let c = self
            .call("POLL.VOTE")
            .arg(user)
            .arg(candidate)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref());
        Ok(int(&c.run(self.backend, con)?)? == 1)
    }

    /// `POLL.REVOKE`: votes taken back.
    pub fn revoke<C: ConnectionLike>(
        &self,
        con: &mut C,
        user: &str,
        candidate: Option<&str>,
    ) -> RedisResult<i64> {
        let c = self
            .call("POLL.REVOKE")
            .arg(user)
            .arg(candidate)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref());
        int(&c.run(self.backend, con)?)
    }

    /// `POLL.TOP`.
    pub fn top<C: ConnectionLike>(
        &self,
        con: &mut C,
        count: Option<i64>,
        offset: Option<i64>,
    ) -> RedisResult<Vec<PollEntry>> {
        let c = self.call("POLL.TOP").arg(count).opt("OFFSET", offset);
        r::poll_entries(&c.run(self.backend, con)?)
    }

    /// `POLL.RANK`: `None` for an unknown candidate.
    pub fn rank<C: ConnectionLike>(
        &self,
        con: &mut C,
        candidate: &str,
    ) -> RedisResult<Option<PollRank>> {
        r::poll_rank(
            &self
                .call("POLL.RANK")
                .arg(candidate)
                .run(self.backend, con)?,
        )
    }

    /// `POLL.STATUS`: the candidates this user voted for.
    pub fn status<C: ConnectionLike>(&self, con: &mut C, user: &str) -> RedisResult<Vec<String>> {
        let c = self.call("POLL.STATUS").arg(user).opt("NOW", self.now);
        texts(&c.run(self.backend, con)?)
    }

    /// `POLL.INFO`.
    pub fn info<C: ConnectionLike>(&self, con: &mut C) -> RedisResult<Option<PollInfo>> {
        r::poll_info(&self.call("POLL.INFO").run(self.backend, con)?)
    }

    /// `POLL.SYNC`.
    pub fn sync<C: ConnectionLike>(&self, con: &mut C) -> RedisResult<PollSync> {
        r::poll_sync(&self.call("POLL.SYNC").run(self.backend, con)?)
    }

    /// `POLL.SYNCACK`: true when `epoch` was the pending snapshot.
    pub fn syncack<C: ConnectionLike>(&self, con: &mut C, epoch: i64) -> RedisResult<bool> {
        Ok(int(&self
            .call("POLL.SYNCACK")
            .arg(epoch)
            .run(self.backend, con)?)?
            == 1)
    }
}

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

    /// `RANK.CREATE`.
    pub fn create<C: ConnectionLike>(&self, con: &mut C, o: &RankOptions) -> RedisResult<bool> {
        let c = self
            .call("RANK.CREATE")
            .opt("LAYOUT", o.layout.as_deref())
            .opt("TIEBREAK", o.tiebreak.as_deref())
            .opt("UNIT", o.unit.as_deref())
            .opt("DIGITS", o.digits)
            .opt("EPOCH", o.epoch)
            .opt("TTL", o.ttl)
            .opt("NOW", self.now);
        ok(&c.run(self.backend, con)?)
    }

    /// `RANK.ADD`: the points now stored.
    pub fn add<C: ConnectionLike>(
        &self,
        con: &mut C,
        member: &str,
        points: i64,
        keep: Option<Keep>,
    ) -> RedisResult<i64> {
        let c = self
            .call("RANK.ADD")
            .arg(member)
            .arg(points)
            .flag("GT", keep == Some(Keep::Greater))
            .flag("LT", keep == Some(Keep::Less))
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref());
        int(&c.run(self.backend, con)?)
    }

    /// `RANK.INCR`: the new points.
    pub fn incr<C: ConnectionLike>(
        &self,
        con: &mut C,
        member: &str,
        delta: i64,
    ) -> RedisResult<i64> {
        let c = self
            .call("RANK.INCR")
            .arg(member)
            .arg(delta)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref());
        int(&c.run(self.backend, con)?)
    }

    /// `RANK.DECR`: the new points.
    pub fn decr<C: ConnectionLike>(
        &self,
        con: &mut C,
        member: &str,
        delta: i64,
    ) -> RedisResult<i64> {
        let c = self
            .call("RANK.DECR")
            .arg(member)
            .arg(delta)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref());
        int(&c.run(self.backend, con)?)
    }

    /// `RANK.GET`.
    pub fn get<C: ConnectionLike>(
        &self,
        con: &mut C,
        member: &str,
    ) -> RedisResult<Option<RankEntry>> {
        r::rank_entry(&self.call("RANK.GET").arg(member).run(self.backend, con)?)
    }

    /// `RANK.TOP`.
    pub fn top<C: ConnectionLike>(
        &self,
        con: &mut C,
        count: Option<i64>,
        offset: Option<i64>,
    ) -> RedisResult<Vec<RankMember>> {
        let c = self.call("RANK.TOP").arg(count).opt("OFFSET", offset);
        r::rank_members(&c.run(self.backend, con)?)
    }

    /// `RANK.AROUND`: `None` when the member is not on the board.
    pub fn around<C: ConnectionLike>(
        &self,
        con: &mut C,
        member: &str,
        n: i64,
    ) -> RedisResult<Option<Vec<RankPlace>>> {
        r::rank_places(
            &self
                .call("RANK.AROUND")
                .arg(member)
                .arg(n)
                .run(self.backend, con)?,
        )
    }

    /// `RANK.REM`: members removed.
    pub fn rem<C: ConnectionLike>(&self, con: &mut C, members: &[&str]) -> RedisResult<i64> {
        int(&self.call("RANK.REM").arg(members).run(self.backend, con)?)
    }

    /// `RANK.COUNT`.
    pub fn count<C: ConnectionLike>(&self, con: &mut C) -> RedisResult<i64> {
        int(&self.call("RANK.COUNT").run(self.backend, con)?)
    }

    /// `RANK.MERGE` into this board from `sources` (one slot on a
    /// cluster): members in this board after the merge.
    pub fn merge_from<C: ConnectionLike>(
        &self,
        con: &mut C,
        sources: &[&str],
        aggregate: Option<&str>,
        ttl: Option<i64>,
    ) -> RedisResult<i64> {
        let mut c = self.call("RANK.MERGE").arg(sources.len());
        for s in sources {
            c = c.key(s);
        }
        let c = c
            .opt("AGGREGATE", aggregate)
            .opt("TTL", ttl)
            .opt("NOW", self.now);
        int(&c.run(self.backend, con)?)
    }
}

impl Like {
    fn call(&self, name: &'static str) -> Call {
        Call::new(name, &self.key)
    }

    /// `LIKE.TOGGLE`.
    pub fn toggle<C: ConnectionLike>(&self, con: &mut C, user: u64) -> RedisResult<LikeToggle> {
        let c = self
            .call("LIKE.TOGGLE")
            .arg(user)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref());
        let (liked, count) = r::flag_count(&c.run(self.backend, con)?)?;
        Ok(LikeToggle { liked, count })
    }

    /// `LIKE.ADD`.
    pub fn add<C: ConnectionLike>(&self, con: &mut C, user: u64) -> RedisResult<LikeChange> {
        let c = self.call("LIKE.ADD").arg(user).opt("NOW", self.now);
        let (changed, count) = r::flag_count(&c.run(self.backend, con)?)?;
        Ok(LikeChange { changed, count })
    }

    /// `LIKE.REM`.
    pub fn rem<C: ConnectionLike>(&self, con: &mut C, user: u64) -> RedisResult<LikeChange> {
        let (changed, count) =
            r::flag_count(&self.call("LIKE.REM").arg(user).run(self.backend, con)?)?;
        Ok(LikeChange { changed, count })
    }

    /// `LIKE.CHECK`: one flag per user, in order.
    pub fn check<C: ConnectionLike>(&self, con: &mut C, users: &[u64]) -> RedisResult<Vec<bool>> {
        let v = self.call("LIKE.CHECK").arg(users).run(self.backend, con)?;
        Ok(ints(&v)?.into_iter().map(|f| f == 1).collect())
    }

    /// `LIKE.COUNT`.
    pub fn count<C: ConnectionLike>(&self, con: &mut C) -> RedisResult<i64> {
        int(&self.call("LIKE.COUNT").run(self.backend, con)?)
    }

    /// `LIKE.RECENT`, newest first.
    pub fn recent<C: ConnectionLike>(
        &self,
        con: &mut C,
        n: Option<i64>,
    ) -> RedisResult<Vec<Liker>> {
        r::likers(&self.call("LIKE.RECENT").arg(n).run(self.backend, con)?)
    }

    /// `LIKE.COMMON` with `other` (one slot on a cluster), ascending.
    pub fn common<C: ConnectionLike>(&self, con: &mut C, other: &str) -> RedisResult<Vec<u64>> {
        let v = self.call("LIKE.COMMON").key(other).run(self.backend, con)?;
        Ok(ints(&v)?.into_iter().map(|u| u as u64).collect())
    }

    /// `LIKE.INFO`.
    pub fn info<C: ConnectionLike>(&self, con: &mut C) -> RedisResult<LikeInfo> {
        r::like_info(&self.call("LIKE.INFO").run(self.backend, con)?)
    }
}

impl RedPacket {
    fn call(&self, name: &'static str) -> Call {
        Call::new(name, &self.key)
    }

    /// `REDPACKET.SPLIT`: the number of shares.
    pub fn split<C: ConnectionLike>(
        &self,
        con: &mut C,
        total_cents: i64,
        count: i64,
        mode: Option<&str>,
        ttl: Option<i64>,
    ) -> RedisResult<i64> {
        let c = self
            .call("REDPACKET.SPLIT")
            .arg(total_cents)
            .arg(count)
            .opt("MODE", mode)
            .opt("TTL", ttl)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref());
        int(&c.run(self.backend, con)?)
    }

    /// `REDPACKET.GRAB`.
    pub fn grab<C: ConnectionLike>(&self, con: &mut C, user: &str) -> RedisResult<Grab> {
        let c = self
            .call("REDPACKET.GRAB")
            .arg(user)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref());
        r::grab(&c.run(self.backend, con)?)
    }

    /// `REDPACKET.INFO`: `None` for an unknown packet.
    pub fn info<C: ConnectionLike>(&self, con: &mut C) -> RedisResult<Option<PacketInfo>> {
        let c = self.call("REDPACKET.INFO").opt("NOW", self.now);
        r::packet_info(&c.run(self.backend, con)?)
    }

    /// `REDPACKET.GRABBED`: (user, cents) in the server's order.
    pub fn grabbed<C: ConnectionLike>(&self, con: &mut C) -> RedisResult<Vec<(String, i64)>> {
        r::grabbed(&self.call("REDPACKET.GRABBED").run(self.backend, con)?)
    }

    /// `REDPACKET.REFUND`: cents returned.
    pub fn refund<C: ConnectionLike>(&self, con: &mut C) -> RedisResult<i64> {
        int(&self.call("REDPACKET.REFUND").run(self.backend, con)?)
    }
}

/// Options of `LUCKYBAG.CREATE` besides `WINNERS`.
#[derive(Clone, Debug, Default)]
pub struct BagOptions {
    pub shards: Option<i64>,
    pub poolcap: Option<i64>,
    pub highscore: Option<String>,
    pub restore: Option<bool>,
    pub ttl: Option<i64>,
}

impl LuckyBag {
    fn call(&self, name: &'static str) -> Call {
        Call::new(name, &self.key)
    }

    /// `LUCKYBAG.CREATE`.
    pub fn create<C: ConnectionLike>(
        &self,
        con: &mut C,
        winners: i64,
        o: &BagOptions,
    ) -> RedisResult<bool> {
        let c = self
            .call("LUCKYBAG.CREATE")
            .arg("WINNERS")
            .arg(winners)
            .opt("SHARDS", o.shards)
            .opt("POOLCAP", o.poolcap)
            .opt("HIGHSCORE", o.highscore.as_deref())
            .opt("RESTORE", o.restore.map(|r| if r { "YES" } else { "NO" }))
            .opt("TTL", o.ttl);
        ok(&c.run(self.backend, con)?)
    }

    /// `LUCKYBAG.JOIN`; `task_pending` joins with `TASK PENDING`.
    pub fn join<C: ConnectionLike>(
        &self,
        con: &mut C,
        user: &str,
        task_pending: bool,
    ) -> RedisResult<Join> {
        let c = self
            .call("LUCKYBAG.JOIN")
            .arg(user)
            .opt("TASK", task_pending.then_some("PENDING"))
            .opt("IDEM", self.idem.as_deref());
        r::join(&c.run(self.backend, con)?)
    }

    fn one<C: ConnectionLike>(
        &self,
        con: &mut C,
        name: &'static str,
        user: &str,
    ) -> RedisResult<bool> {
        Ok(int(&self.call(name).arg(user).run(self.backend, con)?)? == 1)
    }

    /// `LUCKYBAG.TASK`.
    pub fn task<C: ConnectionLike>(&self, con: &mut C, user: &str) -> RedisResult<bool> {
        self.one(con, "LUCKYBAG.TASK", user)
    }

    /// `LUCKYBAG.LEAVE`.
    pub fn leave<C: ConnectionLike>(&self, con: &mut C, user: &str) -> RedisResult<bool> {
        self.one(con, "LUCKYBAG.LEAVE", user)
    }

    /// `LUCKYBAG.ENTER`.
    pub fn enter<C: ConnectionLike>(&self, con: &mut C, user: &str) -> RedisResult<bool> {
        self.one(con, "LUCKYBAG.ENTER", user)
    }

    /// `LUCKYBAG.DRAW`: the winners, best score first.
    pub fn draw<C: ConnectionLike>(&self, con: &mut C) -> RedisResult<Vec<Winner>> {
        r::winners(&self.call("LUCKYBAG.DRAW").run(self.backend, con)?)
    }

    /// `LUCKYBAG.RESULT`.
    pub fn result<C: ConnectionLike>(&self, con: &mut C, user: &str) -> RedisResult<BagResult> {
        r::bag_result(
            &self
                .call("LUCKYBAG.RESULT")
                .arg(user)
                .run(self.backend, con)?,
        )
    }

    /// `LUCKYBAG.INFO`: `None` for an unknown bag.
    pub fn info<C: ConnectionLike>(&self, con: &mut C) -> RedisResult<Option<BagInfo>> {
        r::bag_info(&self.call("LUCKYBAG.INFO").run(self.backend, con)?)
    }
}

/// Options of `RATE.CHECK` / `RATE.MULTI`.
#[derive(Clone, Debug, Default)]
pub struct RateOptions {
    pub algo: Option<String>,
    pub burst: Option<i64>,
    pub cost: Option<i64>,
    pub peek: bool,
}

impl Rate {
    fn call(&self, name: &'static str) -> Call {
        Call::new(name, &self.key)
    }

    /// `RATE.CHECK`.
    pub fn check<C: ConnectionLike>(
        &self,
        con: &mut C,
        limit: i64,
        period_ms: i64,
        o: &RateOptions,
    ) -> RedisResult<RateResult> {
        let c = self
            .call("RATE.CHECK")
            .arg(limit)
            .arg(period_ms)
            .opt("ALGO", o.algo.as_deref())
            .opt("BURST", o.burst)
            .opt("COST", o.cost)
            .flag("PEEK", o.peek)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref());
        r::rate(&c.run(self.backend, con)?)
    }

    /// `RATE.THROTTLE` (redis-cell's `CL.THROTTLE`).
    pub fn throttle<C: ConnectionLike>(
        &self,
        con: &mut C,
        max_burst: i64,
        count: i64,
        period_s: i64,
        quantity: Option<i64>,
    ) -> RedisResult<Throttle> {
        let c = self
            .call("RATE.THROTTLE")
            .arg(max_burst)
            .arg(count)
            .arg(period_s)
            .arg(quantity)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref());
        r::throttle(&c.run(self.backend, con)?)
    }

    /// `RATE.RESET`: true when there was state to drop.
    pub fn reset<C: ConnectionLike>(&self, con: &mut C) -> RedisResult<bool> {
        Ok(int(&self.call("RATE.RESET").run(self.backend, con)?)? == 1)
    }

    /// `RATE.MULTI`: every `(key, limit, period_ms)` rule checked
    /// together, all consumed or none (GCRA; one slot on a cluster).
    pub fn multi<C: ConnectionLike>(
        con: &mut C,
        rules: &[(&str, i64, i64)],
        o: &RateOptions,
        now: Option<i64>,
    ) -> RedisResult<RateResult> {
        let mut c = Call {
            name: "RATE.MULTI",
            argv: Vec::new(),
            keys: Vec::new(),
        }
        .arg(rules.len());
        for (k, _, _) in rules {
            c = c.key(k);
        }
        c = c.arg("LIMITS");
        for (_, l, p) in rules {
            c = c.arg(*l).arg(*p);
        }
        let c = c.opt("COST", o.cost).flag("PEEK", o.peek).opt("NOW", now);
        r::rate(&c.run(Backend::default(), con)?)
    }
}

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

    /// `LOCK.ACQUIRE`: the fencing token, or `None` when busy (after the
    /// `block` timeout with it).
    pub fn acquire<C: ConnectionLike>(
        &self,
        con: &mut C,
        owner: &str,
        ttl_ms: i64,
        o: &LockOptions,
    ) -> RedisResult<Option<i64>> {
        let c = self
            .call("LOCK.ACQUIRE")
            .arg(owner)
            .arg(ttl_ms)
            .opt("LIMIT", o.limit)
            .opt("MAXHOLD", o.maxhold)
            .opt("BLOCK", o.block)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref());
        r::token(&c.run(self.backend, con)?)
    }

    /// `LOCK.RELEASE`: true when `owner` held a live lease.
    pub fn release<C: ConnectionLike>(&self, con: &mut C, owner: &str) -> RedisResult<bool> {
        let c = self.call("LOCK.RELEASE").arg(owner).opt("NOW", self.now);
        Ok(int(&c.run(self.backend, con)?)? == 1)
    }

    /// `LOCK.RENEW`: the ms left in the renewed lease, 0 when `owner`
    /// holds none.
    pub fn renew<C: ConnectionLike>(
        &self,
        con: &mut C,
        owner: &str,
        ttl_ms: i64,
    ) -> RedisResult<i64> {
        let c = self
            .call("LOCK.RENEW")
            .arg(owner)
            .arg(ttl_ms)
            .opt("NOW", self.now);
        int(&c.run(self.backend, con)?)
    }

    /// `LOCK.INFO`: the live holders, by token.
    pub fn info<C: ConnectionLike>(&self, con: &mut C) -> RedisResult<Vec<LockHolder>> {
        let c = self.call("LOCK.INFO").opt("NOW", self.now);
        r::lock_holders(&c.run(self.backend, con)?)
    }

    /// `LOCK.CHECK`: true when `token` belongs to a live hold.
    pub fn check<C: ConnectionLike>(&self, con: &mut C, token: i64) -> RedisResult<bool> {
        let c = self.call("LOCK.CHECK").arg(token).opt("NOW", self.now);
        Ok(int(&c.run(self.backend, con)?)? == 1)
    }
}

/// Options of `DELAYQ.ADD` besides id and payload.
#[derive(Clone, Debug, Default)]
pub struct JobOptions {
    /// Due this many ms from now (not with `at`).
    pub delay: Option<i64>,
    /// Due at this instant, unix ms (not with `delay`).
    pub at: Option<i64>,
    /// The most deliveries (default 5).
    pub attempts: Option<i64>,
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

    /// `DELAYQ.ADD`: true when added (or replaced), false when `id` exists.
    pub fn add<C: ConnectionLike>(
        &self,
        con: &mut C,
        id: &str,
        payload: &[u8],
        o: &JobOptions,
    ) -> RedisResult<bool> {
        let c = self
            .call("DELAYQ.ADD")
            .arg(id)
            .arg(payload)
            .opt("DELAY", o.delay)
            .opt("AT", o.at)
            .opt("ATTEMPTS", o.attempts)
            .flag("REPLACE", o.replace)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref());
        Ok(int(&c.run(self.backend, con)?)? == 1)
    }

    /// `DELAYQ.POLL`: up to `count` ready jobs, each leased for
    /// `lease_ms`; empty when none (after `block` ms with it; the
    /// connection's read timeout must be longer).
    pub fn poll<C: ConnectionLike>(
        &self,
        con: &mut C,
        lease_ms: i64,
        count: Option<i64>,
        block: Option<i64>,
    ) -> RedisResult<Vec<Job>> {
        let c = self
            .call("DELAYQ.POLL")
            .arg(lease_ms)
            .opt("COUNT", count)
            .opt("BLOCK", block)
            .opt("NOW", self.now);
        r::jobs(&c.run(self.backend, con)?)
    }

    /// `DELAYQ.ACK`: true when the job was removed.
    pub fn ack<C: ConnectionLike>(&self, con: &mut C, id: &str, receipt: i64) -> RedisResult<bool> {
        let c = self.call("DELAYQ.ACK").arg(id).arg(receipt);
        Ok(int(&c.run(self.backend, con)?)? == 1)
    }

    /// `DELAYQ.NACK`.
    pub fn nack<C: ConnectionLike>(
        &self,
        con: &mut C,
        id: &str,
        receipt: i64,
        retry: Option<Retry>,
    ) -> RedisResult<Nack> {
        let mut c = self.call("DELAYQ.NACK").arg(id).arg(receipt);
        c = match retry {
            None => c,
            Some(Retry::Delay(ms)) => c.arg("DELAY").arg(ms),
            Some(Retry::Backoff { base_ms, max_ms }) => c.arg("BACKOFF").arg(base_ms).arg(max_ms),
        };
        r::nack(
            &c.opt("NOW", self.now)
                .opt("IDEM", self.idem.as_deref())
                .run(self.backend, con)?,
        )
    }

    /// `DELAYQ.EXTEND`: true when the delivery's lease was restarted.
    pub fn extend<C: ConnectionLike>(
        &self,
        con: &mut C,
        id: &str,
        receipt: i64,
        lease_ms: i64,
    ) -> RedisResult<bool> {
        let c = self
            .call("DELAYQ.EXTEND")
            .arg(id)
            .arg(receipt)
            .arg(lease_ms)
            .opt("NOW", self.now);
        Ok(int(&c.run(self.backend, con)?)? == 1)
    }

    /// `DELAYQ.DEAD`: the oldest dead letters.
    pub fn dead<C: ConnectionLike>(
        &self,
        con: &mut C,
        count: Option<i64>,
    ) -> RedisResult<Vec<DeadLetter>> {
        let c = self.call("DELAYQ.DEAD").opt("COUNT", count);
        r::dead_letters(&c.run(self.backend, con)?)
    }

    /// `DELAYQ.REDRIVE`: the oldest `count` dead letters (default 10), or
    /// the one `id`, back in line; how many.
    pub fn redrive<C: ConnectionLike>(
        &self,
        con: &mut C,
        count: Option<i64>,
        id: Option<&str>,
    ) -> RedisResult<i64> {
        let c = self
            .call("DELAYQ.REDRIVE")
            .opt("COUNT", count)
            .opt("ID", id)
            .opt("NOW", self.now);
        int(&c.run(self.backend, con)?)
    }

    /// `DELAYQ.INFO`.
    pub fn info<C: ConnectionLike>(&self, con: &mut C) -> RedisResult<QueueInfo> {
        let c = self.call("DELAYQ.INFO").opt("NOW", self.now);
        r::queue_info(&c.run(self.backend, con)?)
    }

    /// `DELAYQ.CANCEL`: true when the job was removed (waiting, ready or
    /// dead), false when there is none. A job under a running lease is an
    /// error (`job is leased`) unless `force`; its holder's receipt then
    /// goes stale.
    pub fn cancel<C: ConnectionLike>(
        &self,
        con: &mut C,
        id: &str,
        force: bool,
    ) -> RedisResult<bool> {
        let c = self
            .call("DELAYQ.CANCEL")
            .arg(id)
            .flag("FORCE", force)
            .opt("NOW", self.now);
        Ok(int(&c.run(self.backend, con)?)? == 1)
    }

    /// `DELAYQ.PEEK`: the first `count` jobs in line (default 10, at most
    /// 100), the earliest first, or the one `id`.
    pub fn peek<C: ConnectionLike>(
        &self,
        con: &mut C,
        count: Option<i64>,
        id: Option<&str>,
    ) -> RedisResult<Vec<ScheduledJob>> {
        let c = self.call("DELAYQ.PEEK").opt("COUNT", count).opt("ID", id);
        r::scheduled_jobs(&c.run(self.backend, con)?)
    }

    /// `DELAYQ.PURGE`: how many of the oldest dead letters were removed,
    /// beyond `max_len` or older than `max_age_ms` (at least one of them);
    /// at most 100 per call, so call again while it returns 100.
    pub fn purge<C: ConnectionLike>(
        &self,
        con: &mut C,
        max_len: Option<i64>,
        max_age_ms: Option<i64>,
    ) -> RedisResult<i64> {
        let c = self
            .call("DELAYQ.PURGE")
            .opt("MAXLEN", max_len)
            .opt("MAXAGE", max_age_ms)
            .opt("NOW", self.now);
        int(&c.run(self.backend, con)?)
    }
}

impl Idem {
    fn call(&self, name: &'static str) -> Call {
        Call::new(name, &self.key)
    }

    /// `IDEM.BEGIN`: `New` with a fence, `Running` with the ms left, `Done`
    /// with the stored result, or `Mismatch`. `ttl` is the record's TTL in
    /// seconds (default: the server's `idem-ttl`).
    pub fn begin<C: ConnectionLike>(
        &self,
        con: &mut C,
        fingerprint: &[u8],
        lease_ms: i64,
        ttl: Option<i64>,
    ) -> RedisResult<IdemBegin> {
        let c = self
            .call("IDEM.BEGIN")
            .arg(fingerprint)
            .arg(lease_ms)
            .opt("TTL", ttl)
            .opt("NOW", self.now);
        r::idem_begin(&c.run(self.backend, con)?)
    }

    /// `IDEM.COMPLETE`: true when the result was stored, false when this
    /// fence's equal result was stored already. A stale fence is the
    /// server's error.
    pub fn complete<C: ConnectionLike>(
        &self,
        con: &mut C,
        fence: i64,
        result: &[u8],
    ) -> RedisResult<bool> {
        let c = self
            .call("IDEM.COMPLETE")
            .arg(fence)
            .arg(result)
            .opt("NOW", self.now);
        Ok(int(&c.run(self.backend, con)?)? == 1)
    }

    /// `IDEM.ABORT`: true when the record begun with `fence` was given up.
    pub fn abort<C: ConnectionLike>(&self, con: &mut C, fence: i64) -> RedisResult<bool> {
        let c = self.call("IDEM.ABORT").arg(fence);
        Ok(int(&c.run(self.backend, con)?)? == 1)
    }

    /// `IDEM.GET`: the record, or `None`.
    pub fn get<C: ConnectionLike>(&self, con: &mut C) -> RedisResult<Option<IdemRecord>> {
        let c = self.call("IDEM.GET").opt("NOW", self.now);
        r::idem_record(&c.run(self.backend, con)?)
    }
}

/// Options of `STOCK.CREATE` besides the total.
#[derive(Clone, Debug, Default)]
pub struct StockOptions {
    /// The most units one user may hold, reserved and sold together
    /// (default 0: no limit).
    pub limit: Option<i64>,
    /// A reservation's lease in ms (default 900000).
    pub lease_ms: Option<i64>,
    /// Every key of the stock expires this many seconds after `NOW`.
    pub ttl: Option<i64>,
}

impl Stock {
    fn call(&self, name: &'static str) -> Call {
        Call::new(name, &self.key)
    }

    /// `STOCK.CREATE`: a stock of `total` units.
    pub fn create<C: ConnectionLike>(
        &self,
        con: &mut C,
        total: i64,
        o: &StockOptions,
    ) -> RedisResult<bool> {
        let c = self
            .call("STOCK.CREATE")
            .arg(total)
            .opt("LIMIT", o.limit)
            .opt("LEASE", o.lease_ms)
            .opt("TTL", o.ttl)
            .opt("NOW", self.now);
        r::ok(&c.run(self.backend, con)?)
    }

    /// `STOCK.RESERVE`: reserves `quantity` units for `order` under a
    /// lease (OK, SOLDOUT or LIMIT); the same order gets the same reply
    /// again.
    pub fn reserve<C: ConnectionLike>(
        &self,
        con: &mut C,
        user: &str,
        order: &str,
        quantity: i64,
    ) -> RedisResult<Reservation> {
        let c = self
            .call("STOCK.RESERVE")
            .arg(user)
            .arg(order)
            .arg(quantity)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref());
        r::reservation(&c.run(self.backend, con)?)
    }

    /// `STOCK.CONFIRM`: true when the reservation became a sale, false when
    /// the order was already confirmed (after its lease: the server's
    /// error).
    pub fn confirm<C: ConnectionLike>(&self, con: &mut C, order: &str) -> RedisResult<bool> {
        let c = self.call("STOCK.CONFIRM").arg(order).opt("NOW", self.now);
        Ok(int(&c.run(self.backend, con)?)? == 1)
    }

    /// `STOCK.RELEASE`: true when the order's units went back.
    pub fn release<C: ConnectionLike>(&self, con: &mut C, order: &str) -> RedisResult<bool> {
        let c = self.call("STOCK.RELEASE").arg(order);
        Ok(int(&c.run(self.backend, con)?)? == 1)
    }

    /// `STOCK.RESTOCK`: adds `delta` units (removes available ones when
    /// negative); the units available after.
    pub fn restock<C: ConnectionLike>(&self, con: &mut C, delta: i64) -> RedisResult<i64> {
        let c = self
            .call("STOCK.RESTOCK")
            .arg(delta)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref());
        int(&c.run(self.backend, con)?)
    }

    /// `STOCK.INFO`: the counts, or None for an unknown stock.
    pub fn info<C: ConnectionLike>(&self, con: &mut C) -> RedisResult<Option<StockInfo>> {
        let c = self.call("STOCK.INFO");
        r::stock_info(&c.run(self.backend, con)?)
    }

    /// `STOCK.AUDIT`: one step from `cursor` ("0" to start).
    pub fn audit<C: ConnectionLike>(
        &self,
        con: &mut C,
        cursor: &str,
        count: Option<i64>,
    ) -> RedisResult<StockAudit> {
        let c = self.call("STOCK.AUDIT").arg(cursor).opt("COUNT", count);
        r::stock_audit(&c.run(self.backend, con)?)
    }

    /// Every `STOCK.AUDIT` step from cursor 0 until the walk is over: the
    /// problems found.
    pub fn audit_all<C: ConnectionLike>(
        &self,
        con: &mut C,
        count: Option<i64>,
    ) -> RedisResult<Vec<String>> {
        let mut problems = Vec::new();
        let mut cursor = "0".to_string();
        loop {
            let step = self.audit(con, &cursor, count)?;
            problems.extend(step.problems);
            cursor = step.cursor;
            if cursor == "0" {
                return Ok(problems);
            }
        }
    }
}
