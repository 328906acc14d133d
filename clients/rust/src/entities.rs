//! Entity handles: a base key plus the optional pinned clock (`NOW`), with
//! one method per command. Every method takes any `redis::ConnectionLike`.
//!
//! Each command is declared once, in a `methods!` block: the arguments, the
//! command they build and the parser of its reply. The macro makes of it
//! the blocking method on the handle (`poll.vote(&mut con, …)`), the
//! command alone for pipelines (`poll.cmd().vote(…)`, a `redis::Cmd`) and,
//! with the crate feature `aio`, the async method (`poll.aio().vote(&mut
//! con, …).await`) on any `redis::aio::ConnectionLike`. A new command is
//! one more entry in its handle's block.

use std::ops::Deref;

use redis::{Cmd, ConnectionLike, FromRedisValue, RedisResult, ToRedisArgs, Value};

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

    #[cfg(feature = "aio")]
    async fn run_async<C: redis::aio::ConnectionLike + Send>(
        self,
        backend: Backend,
        con: &mut C,
    ) -> RedisResult<Value> {
        crate::fallback::run_async(backend, self.name, &self.argv, &self.keys, con).await
    }

    /// The command on `backend` (the module's for [`Backend::Fallback`]).
    fn cmd(self, backend: Backend) -> Cmd {
        backend.command(self.name, &self.argv, &self.keys)
    }
}

/// A handle's commands as `redis::Cmd`s, to send in a `redis::pipe()` (or
/// a transaction, `pipe().atomic()`) and read with `query::<(…)>` into the
/// reply types: `poll.cmd().vote("user:1", "alice")`. The command is the
/// handle's backend's ([`Backend::Fallback`] sends the module's).
#[derive(Clone, Copy, Debug)]
pub struct CmdBuilder<'a, H>(&'a H);

impl<H> Deref for CmdBuilder<'_, H> {
    type Target = H;
    fn deref(&self) -> &H {
        self.0
    }
}

/// A handle's commands over an async connection (crate feature `aio`):
/// any `redis::aio::ConnectionLike`, such as `MultiplexedConnection`,
/// `ConnectionManager` or the async `cluster_async::ClusterConnection`:
/// `poll.aio().vote(&mut con, "user:1", "alice").await`. The same
/// arguments, replies and backends as the blocking methods.
#[cfg(feature = "aio")]
#[derive(Clone, Copy, Debug)]
pub struct AsyncHandle<'a, H>(&'a H);

#[cfg(feature = "aio")]
impl<H> Deref for AsyncHandle<'_, H> {
    type Target = H;
    fn deref(&self) -> &H {
        self.0
    }
}

/// Declares a handle's commands once; makes the blocking method, the
/// [`CmdBuilder`] method and the [`AsyncHandle`] method. Each entry:
/// `fn name(&self, args…) -> Reply { builds a Call } => parser;` where the
/// parser reads the `Value` into `Reply`.
macro_rules! methods {
    ($handle:ident {
        $(
            $(#[$doc:meta])*
            fn $name:ident(&$s:ident $(, $arg:ident: $ty:ty)* $(,)?) -> $ret:ty
                $body:block => $parse:expr;
        )*
    }) => {
        impl $handle {
            $(
                $(#[$doc])*
                pub fn $name<C: ConnectionLike>(&$s, con: &mut C $(, $arg: $ty)*) -> RedisResult<$ret> {
                    let call: Call = $body;
                    let parse: fn(&Value) -> RedisResult<$ret> = $parse;
                    parse(&call.run($s.backend, con)?)
                }
            )*
        }

        impl CmdBuilder<'_, $handle> {
            $(
                $(#[$doc])*
                pub fn $name(&$s $(, $arg: $ty)*) -> Cmd {
                    let call: Call = $body;
                    call.cmd($s.backend)
                }
            )*
        }

        #[cfg(feature = "aio")]
        impl AsyncHandle<'_, $handle> {
            $(
                $(#[$doc])*
                pub async fn $name<C: redis::aio::ConnectionLike + Send>(
                    &$s,
                    con: &mut C
                    $(, $arg: $ty)*
                ) -> RedisResult<$ret> {
                    let call: Call = $body;
                    let parse: fn(&Value) -> RedisResult<$ret> = $parse;
                    parse(&call.run_async($s.backend, con).await?)
                }
            )*
        }
    };
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
            /// write. Both backends (the Lua twins take the option too).
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

            /// The commands as `redis::Cmd`s, for pipelines.
            pub fn cmd(&self) -> CmdBuilder<'_, $name> {
                CmdBuilder(self)
            }

            /// The commands over an async connection.
            #[cfg(feature = "aio")]
            pub fn aio(&self) -> AsyncHandle<'_, $name> {
                AsyncHandle(self)
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

/// A reply of 1 (yes) or 0 (no).
fn one(v: &Value) -> RedisResult<bool> {
    Ok(int(v)? == 1)
}

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

impl Like {
    fn call(&self, name: &'static str) -> Call {
        Call::new(name, &self.key)
    }
}

methods!(Like {
    /// `LIKE.TOGGLE`.
    fn toggle(&self, user: u64) -> LikeToggle {
        self.call("LIKE.TOGGLE").arg(user).opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref())
    } => LikeToggle::from_redis_value;

    /// `LIKE.ADD`.
    fn add(&self, user: u64) -> LikeChange {
        self.call("LIKE.ADD").arg(user).opt("NOW", self.now)
    } => LikeChange::from_redis_value;

    /// `LIKE.REM`.
    fn rem(&self, user: u64) -> LikeChange {
        self.call("LIKE.REM").arg(user)
    } => LikeChange::from_redis_value;

    /// `LIKE.CHECK`: one flag per user, in order.
    fn check(&self, users: &[u64]) -> Vec<bool> {
        self.call("LIKE.CHECK").arg(users)
    } => |v| Ok(ints(v)?.into_iter().map(|f| f == 1).collect());

    /// `LIKE.COUNT`.
    fn count(&self) -> i64 {
        self.call("LIKE.COUNT")
    } => int;

    /// `LIKE.RECENT`, newest first.
    fn recent(&self, n: Option<i64>) -> Vec<Liker> {
        self.call("LIKE.RECENT").arg(n)
    } => r::likers;

    /// `LIKE.COMMON` with `other` (one slot on a cluster), ascending.
    fn common(&self, other: &str) -> Vec<u64> {
        self.call("LIKE.COMMON").key(other)
    } => |v| Ok(ints(v)?.into_iter().map(|u| u as u64).collect());

    /// `LIKE.INFO`.
    fn info(&self) -> LikeInfo {
        self.call("LIKE.INFO")
    } => r::like_info;
});

impl RedPacket {
    fn call(&self, name: &'static str) -> Call {
        Call::new(name, &self.key)
    }
}

methods!(RedPacket {
    /// `REDPACKET.SPLIT`: the number of shares.
    fn split(
        &self,
        total_cents: i64,
        count: i64,
        mode: Option<&str>,
        ttl: Option<i64>,
    ) -> i64 {
        self.call("REDPACKET.SPLIT")
            .arg(total_cents)
            .arg(count)
            .opt("MODE", mode)
            .opt("TTL", ttl)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref())
    } => int;

    /// `REDPACKET.GRAB`.
    fn grab(&self, user: &str) -> Grab {
        self.call("REDPACKET.GRAB").arg(user).opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref())
    } => r::grab;

    /// `REDPACKET.INFO`: `None` for an unknown packet.
    fn info(&self) -> Option<PacketInfo> {
        self.call("REDPACKET.INFO").opt("NOW", self.now)
    } => r::packet_info;

    /// `REDPACKET.GRABBED`: (user, cents) in the server's order.
    fn grabbed(&self) -> Vec<(String, i64)> {
        self.call("REDPACKET.GRABBED")
    } => r::grabbed;

    /// `REDPACKET.REFUND`: cents returned.
    fn refund(&self) -> i64 {
        self.call("REDPACKET.REFUND")
    } => int;
});

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
}

methods!(LuckyBag {
    /// `LUCKYBAG.CREATE`.
    fn create(&self, winners: i64, o: &BagOptions) -> bool {
        self.call("LUCKYBAG.CREATE")
            .arg("WINNERS")
            .arg(winners)
            .opt("SHARDS", o.shards)
            .opt("POOLCAP", o.poolcap)
            .opt("HIGHSCORE", o.highscore.as_deref())
            .opt("RESTORE", o.restore.map(|r| if r { "YES" } else { "NO" }))
            .opt("TTL", o.ttl)
    } => ok;

    /// `LUCKYBAG.JOIN`; `task_pending` joins with `TASK PENDING`.
    fn join(&self, user: &str, task_pending: bool) -> Join {
        self.call("LUCKYBAG.JOIN")
            .arg(user)
            .opt("TASK", task_pending.then_some("PENDING"))
            .opt("IDEM", self.idem.as_deref())
    } => r::join;

    /// `LUCKYBAG.TASK`.
    fn task(&self, user: &str) -> bool {
        self.call("LUCKYBAG.TASK").arg(user)
    } => one;

    /// `LUCKYBAG.LEAVE`.
    fn leave(&self, user: &str) -> bool {
        self.call("LUCKYBAG.LEAVE").arg(user)
    } => one;

    /// `LUCKYBAG.ENTER`.
    fn enter(&self, user: &str) -> bool {
        self.call("LUCKYBAG.ENTER").arg(user)
    } => one;

    /// `LUCKYBAG.DRAW`: the winners, best score first.
    fn draw(&self) -> Vec<Winner> {
        self.call("LUCKYBAG.DRAW")
    } => r::winners;

    /// `LUCKYBAG.RESULT`.
    fn result(&self, user: &str) -> BagResult {
        self.call("LUCKYBAG.RESULT").arg(user)
    } => r::bag_result;

    /// `LUCKYBAG.INFO`: `None` for an unknown bag.
    fn info(&self) -> Option<BagInfo> {
        self.call("LUCKYBAG.INFO")
    } => r::bag_info;
});

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

    /// The `RATE.MULTI` command of `multi`.
    fn multi_call(
        rules: &[(&str, i64, i64)],
        o: &RateOptions,
        now: Option<i64>,
        idem: Option<&str>,
    ) -> Call {
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
        c.opt("COST", o.cost)
            .flag("PEEK", o.peek)
            .opt("NOW", now)
            .opt("IDEM", idem)
    }

    /// `RATE.MULTI`: every `(key, limit, period_ms)` rule checked
    /// together, all consumed or none (GCRA; one slot on a cluster).
    pub fn multi<C: ConnectionLike>(
        con: &mut C,
        rules: &[(&str, i64, i64)],
        o: &RateOptions,
        now: Option<i64>,
    ) -> RedisResult<RateResult> {
        r::rate(&Rate::multi_call(rules, o, now, None).run(Backend::default(), con)?)
    }

    /// [`Rate::multi`] with a retry-safe token (`IDEM token`, like the
    /// handles' `with_idem`): resending the same call with the same token
    /// replays its first reply instead of consuming twice. The token lives
    /// with the first key (`<key>:idem`).
    pub fn multi_idem<C: ConnectionLike>(
        con: &mut C,
        rules: &[(&str, i64, i64)],
        o: &RateOptions,
        now: Option<i64>,
        token: &str,
    ) -> RedisResult<RateResult> {
        let call = Rate::multi_call(rules, o, now, Some(token));
        r::rate(&call.run(Backend::default(), con)?)
    }

    /// `RATE.MULTI` over an async connection (crate feature `aio`).
    #[cfg(feature = "aio")]
    pub async fn multi_async<C: redis::aio::ConnectionLike + Send>(
        con: &mut C,
        rules: &[(&str, i64, i64)],
        o: &RateOptions,
        now: Option<i64>,
    ) -> RedisResult<RateResult> {
        let call = Rate::multi_call(rules, o, now, None);
        r::rate(&call.run_async(Backend::default(), con).await?)
    }

    /// [`Rate::multi_idem`] over an async connection (crate feature `aio`).
    #[cfg(feature = "aio")]
    pub async fn multi_idem_async<C: redis::aio::ConnectionLike + Send>(
        con: &mut C,
        rules: &[(&str, i64, i64)],
        o: &RateOptions,
        now: Option<i64>,
        token: &str,
    ) -> RedisResult<RateResult> {
        let call = Rate::multi_call(rules, o, now, Some(token));
        r::rate(&call.run_async(Backend::default(), con).await?)
    }

    /// The `RATE.MULTI` command, for pipelines.
    pub fn multi_cmd(rules: &[(&str, i64, i64)], o: &RateOptions, now: Option<i64>) -> Cmd {
        Rate::multi_call(rules, o, now, None).cmd(Backend::Module)
    }

    /// The `RATE.MULTI … IDEM token` command of [`Rate::multi_idem`], for
    /// pipelines.
    pub fn multi_idem_cmd(
        rules: &[(&str, i64, i64)],
        o: &RateOptions,
        now: Option<i64>,
        token: &str,
    ) -> Cmd {
        Rate::multi_call(rules, o, now, Some(token)).cmd(Backend::Module)
    }
}

methods!(Rate {
    /// `RATE.CHECK`.
    fn check(&self, limit: i64, period_ms: i64, o: &RateOptions) -> RateResult {
        self.call("RATE.CHECK")
            .arg(limit)
            .arg(period_ms)
            .opt("ALGO", o.algo.as_deref())
            .opt("BURST", o.burst)
            .opt("COST", o.cost)
            .flag("PEEK", o.peek)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref())
    } => r::rate;

    /// `RATE.THROTTLE` (redis-cell's `CL.THROTTLE`).
    fn throttle(
        &self,
        max_burst: i64,
        count: i64,
        period_s: i64,
        quantity: Option<i64>,
    ) -> Throttle {
        self.call("RATE.THROTTLE")
            .arg(max_burst)
            .arg(count)
            .arg(period_s)
            .arg(quantity)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref())
    } => r::throttle;

    /// `RATE.RESET`: true when there was state to drop.
    fn reset(&self) -> bool {
        self.call("RATE.RESET")
    } => one;
});

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

impl Idem {
    fn call(&self, name: &'static str) -> Call {
        Call::new(name, &self.key)
    }
}

methods!(Idem {
    /// `IDEM.BEGIN`: `New` with a fence, `Running` with the ms left, `Done`
    /// with the stored result, or `Mismatch`. `ttl` is the record's TTL in
    /// seconds (default: the server's `idem-ttl`).
    fn begin(&self, fingerprint: &[u8], lease_ms: i64, ttl: Option<i64>) -> IdemBegin {
        self.call("IDEM.BEGIN")
            .arg(fingerprint)
            .arg(lease_ms)
            .opt("TTL", ttl)
            .opt("NOW", self.now)
    } => r::idem_begin;

    /// `IDEM.COMPLETE`: true when the result was stored, false when this
    /// fence's equal result was stored already. A stale fence is the
    /// server's error.
    fn complete(&self, fence: i64, result: &[u8]) -> bool {
        self.call("IDEM.COMPLETE")
            .arg(fence)
            .arg(result)
            .opt("NOW", self.now)
    } => one;

    /// `IDEM.ABORT`: true when the record begun with `fence` was given up.
    fn abort(&self, fence: i64) -> bool {
        self.call("IDEM.ABORT").arg(fence)
    } => one;

    /// `IDEM.GET`: the record, or `None`.
    fn get(&self) -> Option<IdemRecord> {
        self.call("IDEM.GET").opt("NOW", self.now)
    } => r::idem_record;
});

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

#[cfg(feature = "aio")]
impl AsyncHandle<'_, Stock> {
    /// Every `STOCK.AUDIT` step from cursor 0 until the walk is over: the
    /// problems found.
    pub async fn audit_all<C: redis::aio::ConnectionLike + Send>(
        &self,
        con: &mut C,
        count: Option<i64>,
    ) -> RedisResult<Vec<String>> {
        let mut problems = Vec::new();
        let mut cursor = "0".to_string();
        loop {
            let step = self.audit(con, &cursor, count).await?;
            problems.extend(step.problems);
            cursor = step.cursor;
            if cursor == "0" {
                return Ok(problems);
            }
        }
    }
}

methods!(Stock {
    /// `STOCK.CREATE`: a stock of `total` units.
    fn create(&self, total: i64, o: &StockOptions) -> bool {
        self.call("STOCK.CREATE")
            .arg(total)
            .opt("LIMIT", o.limit)
            .opt("LEASE", o.lease_ms)
            .opt("TTL", o.ttl)
            .opt("NOW", self.now)
    } => r::ok;

    /// `STOCK.RESERVE`: reserves `quantity` units for `order` under a
    /// lease (OK, SOLDOUT or LIMIT); the same order gets the same reply
    /// again.
    fn reserve(&self, user: &str, order: &str, quantity: i64) -> Reservation {
        self.call("STOCK.RESERVE")
            .arg(user)
            .arg(order)
            .arg(quantity)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref())
    } => r::reservation;

    /// `STOCK.CONFIRM`: true when the reservation became a sale, false when
    /// the order was already confirmed (after its lease: the server's
    /// error).
    fn confirm(&self, order: &str) -> bool {
        self.call("STOCK.CONFIRM").arg(order).opt("NOW", self.now)
    } => one;

    /// `STOCK.RELEASE`: true when the order's units went back.
    fn release(&self, order: &str) -> bool {
        self.call("STOCK.RELEASE").arg(order)
    } => one;

    /// `STOCK.RESTOCK`: adds `delta` units (removes available ones when
    /// negative); the units available after.
    fn restock(&self, delta: i64) -> i64 {
        self.call("STOCK.RESTOCK").arg(delta).opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref())
    } => int;

    /// `STOCK.INFO`: the counts, or None for an unknown stock.
    fn info(&self) -> Option<StockInfo> {
        self.call("STOCK.INFO")
    } => r::stock_info;

    /// `STOCK.AUDIT`: one step from `cursor` ("0" to start).
    fn audit(&self, cursor: &str, count: Option<i64>) -> StockAudit {
        self.call("STOCK.AUDIT").arg(cursor).opt("COUNT", count)
    } => r::stock_audit;
});
