//! A Rust client for the hotpath Redis module, on the `redis` crate.
//!
//! Every command of every family returns a parsed reply (a struct, a
//! `Vec` or an `Option`), and works on any `redis::ConnectionLike`: a
//! `redis::Connection` to one server or a `redis::cluster::ClusterConnection`
//! (every command names its base key first, so the cluster client routes
//! it by itself).
//!
//! ```no_run
//! use hotpath_client::{Poll, PollEntry};
//! # fn main() -> redis::RedisResult<()> {
//! let mut con = redis::Client::open("redis://127.0.0.1/")?.get_connection()?;
//! let poll = Poll::new("poll:{42}");
//! assert!(poll.vote(&mut con, "user:1", "alice")?);
//! let top: Vec<PollEntry> = poll.top(&mut con, Some(10), None)?;
//! # Ok(()) }
//! ```
//!
//! Every reply type implements `redis::FromRedisValue` (RESP2 and RESP3),
//! so raw commands and pipelines read into them
//! (`query::<Vec<PollEntry>>`; [`Maybe`] for the empty reply of an unknown
//! entity), and `handle.cmd()` gives a handle's commands as `redis::Cmd`s
//! for `redis::pipe()` ([`CmdBuilder`]). With the feature `aio`,
//! `handle.aio()` has every command on any `redis::aio::ConnectionLike`
//! (`MultiplexedConnection`, the async cluster client with
//! `cluster-async`; `AsyncHandle`). README.md and examples/ show each.
//!
//! [`routing`] is the routing spec of spread entities (docs/spread.md),
//! the crate `hotpath-route`, which the module uses too. Spread entities
//! have their own handles ([`SpreadLike`], …): writes go to the shard of their
//! id, and reads that span shards are one call (one pipeline per node,
//! replies merged; a shard that fails fails the call). They take a
//! [`FanOut`] connection: `redis::Connection` or
//! `redis::cluster::ClusterConnection`; with the feature `aio`,
//! `handle.aio()` has the same methods on an async connection
//! (`AsyncSpread`, over any `AioCon`: `MultiplexedConnection`, the async
//! cluster client). Under topology change they retry
//! their per-shard commands by a bounded policy ([`retry`], `with_retry`),
//! and `durable(replicas, wait_ms)` makes their writes durable: one
//! pipeline per master ending in `WAIT` on the connection of the writes
//! ([`FanOut::pipeline_durable`]; docs/spread.md, "Durable writes and
//! retries").
//!
//! Servers without the module: every command is built by a [`Backend`];
//! [`Backend::Module`] sends the module's commands, [`Backend::Functions`]
//! calls the Lua twins' Functions library (`FCALL`), and the default,
//! [`Backend::Fallback`], sends the module's and falls back to the
//! library's when the server does not know them ([`fallback`]).

pub use hotpath_route as routing;

mod entities;
pub mod fallback;
pub mod replies;
pub mod retry;
mod spread;
pub mod spread_poll;
pub mod spread_rank;
pub mod spread_stock;

pub use entities::*;
pub use fallback::{detect, LikeConfigs};
pub use replies::*;
pub use retry::RetryPolicy;
pub use spread::*;
pub use spread_poll::{SpreadPoll, SpreadPollInfo, SpreadPollSync};
pub use spread_rank::*;
pub use spread_stock::{SpreadStock, SpreadStockInfo, StockPool};
