//! Spread entities (docs/spread.md): one hot entity split into shards that
//! live on every master of a cluster. A handle routes each write to the
//! shard of its id and answers every read that spans shards in one call:
//! the per-shard commands go out at once, one pipeline per node, and the
//! replies are merged. A shard that cannot be reached, or that answers an
//! error, fails the whole call: a merged answer is never partial.

use redis::cluster::{cluster_pipe, ClusterConnection};
use redis::{Cmd, ConnectionLike, ErrorKind, RedisError, RedisResult, Value};

use crate::entities::Backend;
use crate::replies::{BagInfo, BagResult, Join, LikeInfo, Liker, Winner};
use crate::retry::RetryPolicy;
use crate::routing;

/// A connection that can send many commands at once, one pipeline per
/// node: a `redis::Connection` (one server holds every shard) or a
/// `redis::cluster::ClusterConnection`.
pub trait FanOut: ConnectionLike {
    /// Sends `cmds` pipelined (grouped per node on a cluster) and returns
    /// their replies in order; fails on the first error.
    fn pipeline_all(&mut self, cmds: &[Cmd]) -> RedisResult<Vec<Value>>;

    /// `WAIT replicas timeout_ms` on the master of `key`, through the
    /// connection that sent this client's writes there (WAIT counts the
    /// writes of its own connection): the replicas that have them.
    fn wait_for(&mut self, key: &str, replicas: i64, timeout_ms: u64) -> RedisResult<i64>;

    /// The durable write: `calls` (shard key, command) sent as one plain
    /// pipeline per node that ends in `WAIT replicas timeout_ms`, so that
    /// the `WAIT` runs on the very connection of the node's writes. Returns
    /// each call's reply or error, with the replicas that acknowledged its
    /// node's writes (0 for a call that failed). A redirection comes back
    /// as that call's error (`MOVED`, `TRYAGAIN`: the retry policy sends it
    /// again). This default sends one pipeline per slot (the keys of a slot
    /// are on one node for sure); the cluster connection groups per node.
    fn pipeline_durable(
        &mut self,
        calls: &[(String, Cmd)],
        replicas: i64,
        timeout_ms: u64,
    ) -> Vec<(RedisResult<Value>, i64)>
    where
        Self: Sized,
    {
        durable_by_slot(self, calls, replicas, timeout_ms)
    }
}

/// The durable write of `calls` with one pipeline per slot, on any
/// connection (a single server, or a cluster connection that routes a
/// packed pipeline by its first command).
pub(crate) fn durable_by_slot<C: ConnectionLike>(
    con: &mut C,
    calls: &[(String, Cmd)],
    replicas: i64,
    timeout_ms: u64,
) -> Vec<(RedisResult<Value>, i64)> {
    let groups = group_by(calls, |key| {
        format!("slot {}", routing::key_slot(key.as_bytes()))
    });
    send_groups(con, calls, &groups, replicas, timeout_ms)
}

/// The indexes of `calls` grouped by `node_of(key)`, in first-seen order.
fn group_by(calls: &[(String, Cmd)], node_of: impl Fn(&str) -> String) -> Vec<Vec<usize>> {
    let mut groups: Vec<(String, Vec<usize>)> = Vec::new();
    for (i, (key, _)) in calls.iter().enumerate() {
        let node = node_of(key);
        match groups.iter_mut().find(|(n, _)| *n == node) {
            Some((_, idx)) => idx.push(i),
            None => groups.push((node, vec![i])),
        }
    }
    groups.into_iter().map(|(_, idx)| idx).collect()
}

/// Sends each group of `calls` as one pipeline ending in `WAIT`
/// ([`send_with_wait`]). After a `MOVED`, a harmless read of that key
/// through the connection's own path (`EXISTS`): the sync cluster client
/// re-reads its slot map only when one of its requests meets `MOVED`, and
/// the retry must find the new owner.
fn send_groups<C: ConnectionLike>(
    con: &mut C,
    calls: &[(String, Cmd)],
    groups: &[Vec<usize>],
    replicas: i64,
    timeout_ms: u64,
) -> Vec<(RedisResult<Value>, i64)> {
    let mut out: Vec<Option<(RedisResult<Value>, i64)>> = (0..calls.len()).map(|_| None).collect();
    let mut moved = None;
    for idx in groups {
        let cmds: Vec<&Cmd> = idx.iter().map(|&i| &calls[i].1).collect();
        for (&i, r) in idx
            .iter()
            .zip(send_with_wait(con, &cmds, replicas, timeout_ms))
        {
            if matches!(&r.0, Err(e) if e.kind() == ErrorKind::Moved) {
                moved = Some(i);
            }
            out[i] = Some(r);
        }
    }
    if let Some(i) = moved {
        let _ = redis::cmd("EXISTS").arg(&calls[i].0).query::<Value>(con);
    }
    out.into_iter()
        .map(|r| r.expect("every call grouped"))
        .collect()
}

impl FanOut for redis::Connection {
    fn pipeline_all(&mut self, cmds: &[Cmd]) -> RedisResult<Vec<Value>> {
        let mut p = redis::pipe();
        for c in cmds {
            p.add_command(c.clone());
        }
        p.query(self)
    }

    fn wait_for(&mut self, _key: &str, replicas: i64, timeout_ms: u64) -> RedisResult<i64> {
        redis::cmd("WAIT").arg(replicas).arg(timeout_ms).query(self)
    }

    fn pipeline_durable(
        &mut self,
        calls: &[(String, Cmd)],
        replicas: i64,
        timeout_ms: u64,
    ) -> Vec<(RedisResult<Value>, i64)> {
        let cmds: Vec<&Cmd> = calls.iter().map(|(_, c)| c).collect();
        send_with_wait(self, &cmds, replicas, timeout_ms)
    }
}

impl FanOut for ClusterConnection {
    fn pipeline_all(&mut self, cmds: &[Cmd]) -> RedisResult<Vec<Value>> {
        let mut p = cluster_pipe();
        for c in cmds {
            p.add_command(c.clone());
        }
        p.query(self)
    }

    fn wait_for(&mut self, key: &str, replicas: i64, timeout_ms: u64) -> RedisResult<i64> {
        use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};
        // The sync cluster client keeps one connection per node: the one
        // that carried the writes.
        let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::new(
            routing::key_slot(key.as_bytes()),
            SlotAddr::Master,
        )));
        let v = self.route_command(redis::cmd("WAIT").arg(replicas).arg(timeout_ms), route)?;
        crate::replies::int(&v)
    }

    fn pipeline_durable(
        &mut self,
        calls: &[(String, Cmd)],
        replicas: i64,
        timeout_ms: u64,
    ) -> Vec<(RedisResult<Value>, i64)> {
        durable_per_node(self, calls, replicas, timeout_ms)
    }
}

/// The durable write of `calls` on a cluster connection (or a wrapper
/// around one): one pipeline per node, as `CLUSTER SLOTS` says (per slot
/// when it cannot be read), each ending in `WAIT`. The client routes a
/// packed pipeline by its first command, to the master of that key's slot
/// on the connection it keeps for that node; a command of the group that
/// is not served there comes back as its own `MOVED`, and the retry policy
/// sends it again.
pub fn durable_per_node<C: ConnectionLike>(
    con: &mut C,
    calls: &[(String, Cmd)],
    replicas: i64,
    timeout_ms: u64,
) -> Vec<(RedisResult<Value>, i64)> {
    let owners = if calls.len() > 1 {
        slot_owners(con, &calls[0].0)
    } else {
        None
    };
    let groups = group_by(calls, |key| {
        let slot = routing::key_slot(key.as_bytes());
        owners
            .as_ref()
            .and_then(|o| o.iter().find(|(a, b, _)| *a <= slot && slot <= *b))
            .map(|(_, _, n)| n.clone())
            .unwrap_or_else(|| format!("slot {slot}"))
    });
    send_groups(con, calls, &groups, replicas, timeout_ms)
}

/// `(first slot, last slot, "host:port")` of every master, from `CLUSTER
/// SLOTS`; `None` when it cannot be read. It is asked of the master of
/// `key`, in a packed pipeline led by a read of `key` (which the cluster
/// client routes there): the client sends a keyless command to a random
/// node, a replica among them, and a replica that is stalled held the
/// durable write back until it woke — when the write then passed its
/// `WAIT` as if no replica had been held back.
fn slot_owners<C: ConnectionLike>(con: &mut C, key: &str) -> Option<Vec<(u16, u16, String)>> {
    let mut packed = redis::cmd("EXISTS").arg(key).get_packed_command();
    packed.extend(redis::cmd("CLUSTER").arg("SLOTS").get_packed_command());
    let v = con.req_packed_commands(&packed, 1, 1).ok()?.pop()?;
    let Value::Array(ranges) = v else {
        return None;
    };
    let mut out = Vec::new();
    for r in ranges {
        let Value::Array(f) = r else { return None };
        let (Some(Value::Int(a)), Some(Value::Int(b)), Some(Value::Array(node))) =
            (f.first(), f.get(1), f.get(2))
        else {
            return None;
        };
        let host = crate::replies::text(node.first()?).ok()?;
        let port = crate::replies::int(node.get(1)?).ok()?;
        out.push((*a as u16, *b as u16, format!("{host}:{port}")));
    }
    Some(out)
}

/// A copy of an error for every call of a failed pipeline: the same kind
/// (and I/O kind), so that the retry policy reads it the same way.
fn copy_error(e: &RedisError) -> RedisError {
    use std::io::{Error, ErrorKind as Io};
    if e.is_connection_refusal() {
        return Error::new(Io::ConnectionRefused, e.to_string()).into();
    }
    if e.is_timeout() {
        return Error::new(Io::TimedOut, e.to_string()).into();
    }
    if e.is_io_error() || e.is_connection_dropped() {
        return Error::new(Io::ConnectionReset, e.to_string()).into();
    }
    RedisError::from((e.kind(), "hotpath: a pipeline failed", e.to_string()))
}

/// Sends `cmds` and `WAIT replicas timeout_ms` as one packed pipeline on
/// `con` (routed by its first command on a cluster): each reply or error,
/// with WAIT's count for the replies.
fn send_with_wait<C: ConnectionLike>(
    con: &mut C,
    cmds: &[&Cmd],
    replicas: i64,
    timeout_ms: u64,
) -> Vec<(RedisResult<Value>, i64)> {
    let mut packed = Vec::new();
    for c in cmds {
        packed.extend(c.get_packed_command());
    }
    packed.extend(
        redis::cmd("WAIT")
            .arg(replicas)
            .arg(timeout_ms)
            .get_packed_command(),
    );
    match con.req_packed_commands(&packed, 0, cmds.len() + 1) {
        Ok(vals) if vals.len() == cmds.len() + 1 => {
            let ack = match vals.last() {
                Some(Value::Int(n)) => *n,
                _ => 0,
            };
            vals.into_iter()
                .take(cmds.len())
                .map(|v| match v {
                    Value::ServerError(e) => (Err(e.into()), 0),
                    v => (Ok(v), ack),
                })
                .collect()
        }
        Ok(vals) => cmds
            .iter()
            .map(|_| {
                (
                    Err(bad_reply("a durable pipeline", &Value::Array(vals.clone()))),
                    0,
                )
            })
            .collect(),
        Err(e) => cmds.iter().map(|_| (Err(copy_error(&e)), 0)).collect(),
    }
}

/// Wraps an error of one shard so that it names the shard key, unless the
/// server's own message already does.
pub(crate) fn shard_error(key: &str, e: RedisError) -> RedisError {
    if e.detail().is_some_and(|d| d.contains(key)) {
        return e;
    }
    let text = match (e.code(), e.detail()) {
        (Some(code), Some(d)) => format!("{code} {d}"),
        _ => e.to_string(),
    };
    RedisError::from((
        ErrorKind::ResponseError,
        "hotpath: a shard failed",
        format!("shard '{key}': {text}"),
    ))
}

/// The error of a write that ran on its shard's master but reached fewer
/// than `replicas` replicas within the wait.
fn not_durable(key: &str, acked: i64, replicas: i64) -> RedisError {
    RedisError::from((
        ErrorKind::ResponseError,
        "hotpath: not durable",
        format!("shard '{key}': the write reached {acked} of {replicas} replicas (it ran on the master)"),
    ))
}

/// The module command a `Cmd` runs: its name, or for an `FCALL` of the
/// Functions library the command of the twin it calls
/// (`hotpath_like_toggle` → `LIKE.TOGGLE`).
pub(crate) fn command_name(cmd: &Cmd) -> String {
    let mut args = cmd.args_iter().filter_map(|a| match a {
        redis::Arg::Simple(b) => Some(String::from_utf8_lossy(b).into_owned()),
        redis::Arg::Cursor => None,
    });
    let name = args.next().unwrap_or_default().to_ascii_uppercase();
    if name == "FCALL" {
        if let Some(f) = args.next() {
            if let Some(rest) = f.strip_prefix("hotpath_") {
                return rest.to_ascii_uppercase().replacen('_', ".", 1);
            }
        }
    }
    name
}

/// The per-shard commands that write (a durable handle waits after them).
const WRITES: [&str; 19] = [
    "CREATE", "TOGGLE", "ADD", "REM", "JOIN", "TASK", "LEAVE", "ENTER", "VOTE", "REVOKE", "INCR",
    "DECR", "SYNCACK", // STOCK's spread form:
    "RESERVE", "CONFIRM", "RELEASE", "TRANSFER", "APPLY", "SETTLE",
];

fn is_write(command: &str) -> bool {
    command
        .rsplit_once('.')
        .is_some_and(|(_, sub)| WRITES.contains(&sub))
}

/// How a spread handle runs its per-shard commands: the retry policy, and
/// `Some((replicas, wait_ms))` for a durable handle.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Exec {
    pub(crate) retry: RetryPolicy,
    pub(crate) durable: Option<(i64, u64)>,
}

/// Sends `cmds` pipelined; when the pipeline fails (a redirection it
/// does not follow, a node down, an error reply), every command again on
/// its own through the client's retrying path: fan-outs carry only reads
/// and idempotent steps, so that is safe.
fn fan_raw<C: FanOut>(con: &mut C, cmds: &[Cmd]) -> Vec<RedisResult<Value>> {
    if let Ok(v) = con.pipeline_all(cmds) {
        if v.len() == cmds.len() {
            return v.into_iter().map(Ok).collect();
        }
    }
    cmds.iter().map(|c| c.query::<Value>(con)).collect()
}

/// How a spread handle's commands reach the server. The handles' logic is
/// written once, as async functions over this trait: a blocking
/// connection ([`Blocking`]: the sync methods, whose futures are ready at
/// their first poll, [`block`]) or an async one (`Nonblocking`: the
/// methods of `aio()`, crate feature `aio`).
pub(crate) trait OneIo {
    /// One command through the connection's own path (its redirections
    /// and retries).
    async fn query(&mut self, cmd: &Cmd) -> RedisResult<Value>;
    /// The durable write of `calls`, one pipeline per slot ending in
    /// `WAIT` ([`durable_by_slot`]).
    async fn durable_by_slot(
        &mut self,
        calls: &[(String, Cmd)],
        replicas: i64,
        timeout_ms: u64,
    ) -> Vec<(RedisResult<Value>, i64)>;
    /// Waits `d` between two rounds of the retry policy.
    async fn sleep(&mut self, d: std::time::Duration);
}

/// [`OneIo`] with the commands of many shards at once.
pub(crate) trait FanIo: OneIo {
    /// Sends `cmds` at once: each reply or error ([`fan_raw`]).
    async fn fan_raw(&mut self, cmds: &[Cmd]) -> Vec<RedisResult<Value>>;
    /// [`FanOut::pipeline_durable`].
    async fn pipeline_durable(
        &mut self,
        calls: &[(String, Cmd)],
        replicas: i64,
        timeout_ms: u64,
    ) -> Vec<(RedisResult<Value>, i64)>;
}

/// A blocking connection as the handles' I/O: every future is ready at
/// its first poll.
pub(crate) struct Blocking<'a, C>(pub(crate) &'a mut C);

impl<C: ConnectionLike> OneIo for Blocking<'_, C> {
    async fn query(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        cmd.query::<Value>(self.0)
    }

    async fn durable_by_slot(
        &mut self,
        calls: &[(String, Cmd)],
        replicas: i64,
        timeout_ms: u64,
    ) -> Vec<(RedisResult<Value>, i64)> {
        durable_by_slot(self.0, calls, replicas, timeout_ms)
    }

    async fn sleep(&mut self, d: std::time::Duration) {
        std::thread::sleep(d);
    }
}

impl<C: FanOut> FanIo for Blocking<'_, C> {
    async fn fan_raw(&mut self, cmds: &[Cmd]) -> Vec<RedisResult<Value>> {
        fan_raw(self.0, cmds)
    }

    async fn pipeline_durable(
        &mut self,
        calls: &[(String, Cmd)],
        replicas: i64,
        timeout_ms: u64,
    ) -> Vec<(RedisResult<Value>, i64)> {
        self.0.pipeline_durable(calls, replicas, timeout_ms)
    }
}

/// Runs a future of the blocking I/O to its end: it never waits (a
/// [`Blocking`] connection does its I/O inside `poll`), so one poll does.
pub(crate) fn block<F: std::future::Future>(f: F) -> F::Output {
    use std::task::{Context, Poll, Waker};
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => unreachable!("a blocking connection's future is ready at once"),
    }
}

/// An async connection as the handles' I/O (crate feature `aio`): any
/// `redis::aio::ConnectionLike` that clones into handles of the same
/// connection (`MultiplexedConnection`, `ConnectionManager`, the async
/// cluster client). A fan-out sends every command at once, each on a
/// clone (the multiplexed connection pipelines them; the cluster client
/// routes each to its node); a durable write sends one pipeline per slot
/// ending in `WAIT` (on one connection: a multiplexed connection has one,
/// the cluster client one per node).
#[cfg(feature = "aio")]
pub(crate) struct Nonblocking<'a, C>(pub(crate) &'a mut C);

#[cfg(feature = "aio")]
impl<C: redis::aio::ConnectionLike + Clone + Send> OneIo for Nonblocking<'_, C> {
    async fn query(&mut self, cmd: &Cmd) -> RedisResult<Value> {
        cmd.query_async::<Value>(self.0).await
    }

    async fn durable_by_slot(
        &mut self,
        calls: &[(String, Cmd)],
        replicas: i64,
        timeout_ms: u64,
    ) -> Vec<(RedisResult<Value>, i64)> {
        let groups = group_by(calls, |key| {
            format!("slot {}", routing::key_slot(key.as_bytes()))
        });
        let sends = groups.iter().map(|idx| {
            let mut con = self.0.clone();
            let mut p = redis::pipe();
            for &i in idx {
                p.add_command(calls[i].1.clone());
            }
            p.cmd("WAIT").arg(replicas).arg(timeout_ms);
            let n = idx.len();
            async move {
                let res = con.req_packed_commands(&p, 0, n + 1).await;
                with_wait(res, n)
            }
        });
        let replies = futures_util::future::join_all(sends).await;
        let mut out: Vec<Option<(RedisResult<Value>, i64)>> =
            (0..calls.len()).map(|_| None).collect();
        let mut moved = None;
        for (idx, res) in groups.iter().zip(replies) {
            for (&i, r) in idx.iter().zip(res) {
                if matches!(&r.0, Err(e) if e.kind() == ErrorKind::Moved) {
                    moved = Some(i);
                }
                out[i] = Some(r);
            }
        }
        if let Some(i) = moved {
            // A read of the key through the client's own path, which
            // follows MOVED and learns the new owner for the retry.
            let _ = redis::cmd("EXISTS")
                .arg(&calls[i].0)
                .query_async::<Value>(self.0)
                .await;
        }
        out.into_iter()
            .map(|r| r.expect("every call grouped"))
            .collect()
    }

    async fn sleep(&mut self, d: std::time::Duration) {
        tokio::time::sleep(d).await;
    }
}

#[cfg(feature = "aio")]
impl<C: redis::aio::ConnectionLike + Clone + Send> FanIo for Nonblocking<'_, C> {
    async fn fan_raw(&mut self, cmds: &[Cmd]) -> Vec<RedisResult<Value>> {
        futures_util::future::join_all(cmds.iter().map(|c| {
            let mut con = self.0.clone();
            async move { c.query_async::<Value>(&mut con).await }
        }))
        .await
    }

    async fn pipeline_durable(
        &mut self,
        calls: &[(String, Cmd)],
        replicas: i64,
        timeout_ms: u64,
    ) -> Vec<(RedisResult<Value>, i64)> {
        self.durable_by_slot(calls, replicas, timeout_ms).await
    }
}

/// The async connections the spread handles take (crate feature `aio`):
/// any `redis::aio::ConnectionLike` that is `Clone` (a clone is a handle
/// on the same connection) and `Send`, such as `MultiplexedConnection`,
/// `ConnectionManager` and the async cluster client
/// (`cluster_async::ClusterConnection`, feature `cluster-async`).
#[cfg(feature = "aio")]
pub trait AioCon: redis::aio::ConnectionLike + Clone + Send {}

#[cfg(feature = "aio")]
impl<C: redis::aio::ConnectionLike + Clone + Send> AioCon for C {}

/// A spread handle's methods over an async connection (crate feature
/// `aio`): `post.aio().toggle(&mut con, 42).await`. The same methods as
/// the sync handle, the same commands, merges, replies and errors; the
/// per-shard commands of a fan-out go out at once, and the retry policy
/// sleeps with `tokio::time::sleep`.
#[cfg(feature = "aio")]
#[derive(Clone, Copy, Debug)]
pub struct AsyncSpread<'h, H>(pub(crate) &'h H);

#[cfg(feature = "aio")]
impl<H> AsyncSpread<'_, H> {
    /// The handle.
    pub fn handle(&self) -> &H {
        self.0
    }
}

/// [`spread_count`] over an async connection (crate feature `aio`).
#[cfg(feature = "aio")]
pub async fn spread_count_async<C: AioCon>(
    con: &mut C,
    family: &str,
    base: &str,
) -> RedisResult<Option<u32>> {
    let k0 = String::from_utf8(routing::shard_key(base.as_bytes(), 1, 0))
        .expect("a UTF-8 base gives a UTF-8 shard key");
    let v: Value = redis::cmd(&format!("{family}.INFO"))
        .arg(&k0)
        .query_async(con)
        .await?;
    count_of(&v)
}

/// The replies of `n` commands and a `WAIT` sent as one pipeline: each
/// reply or error, with WAIT's count for the replies.
#[cfg(feature = "aio")]
fn with_wait(res: RedisResult<Vec<Value>>, n: usize) -> Vec<(RedisResult<Value>, i64)> {
    match res {
        Ok(vals) if vals.len() == n + 1 => {
            let ack = match vals.last() {
                Some(Value::Int(a)) => *a,
                _ => 0,
            };
            vals.into_iter()
                .take(n)
                .map(|v| match v {
                    Value::ServerError(e) => (Err(e.into()), 0),
                    v => (Ok(v), ack),
                })
                .collect()
        }
        Ok(vals) => (0..n)
            .map(|_| {
                (
                    Err(bad_reply("a durable pipeline", &Value::Array(vals.clone()))),
                    0,
                )
            })
            .collect(),
        Err(e) => (0..n).map(|_| (Err(copy_error(&e)), 0)).collect(),
    }
}

/// The retry policy's rounds over `io`: `$step` (an expression of `io` and
/// the indexes of the round, awaited) runs each round's calls.
macro_rules! rounds {
    ($policy:expr, $names:expr, $io:ident, |$idx:ident| $step:expr) => {{
        let t0 = std::time::Instant::now();
        let mut rounds = crate::retry::Rounds::new(&$policy, $names, std::time::Duration::ZERO);
        loop {
            let began = t0.elapsed();
            let $idx: Vec<usize> = rounds.pending().to_vec();
            let res = $step;
            match rounds.record(res, began, t0.elapsed()) {
                Some(d) => $io.sleep(d).await,
                None => break rounds.finish(),
            }
        }
    }};
}

impl Exec {
    /// One command on the shard `key`, retried by the policy; a durable
    /// handle's write waits for its replicas.
    pub(crate) async fn query<I: OneIo>(
        &self,
        io: &mut I,
        key: &str,
        cmd: &Cmd,
    ) -> RedisResult<Value> {
        let name = command_name(cmd);
        if let Some((replicas, wait_ms)) = self.durable.filter(|_| is_write(&name)) {
            let calls = [(key.to_string(), cmd.clone())];
            let names = [name.as_str()];
            let mut acks = [0i64];
            let r = rounds!(self.retry, &names, io, |idx| {
                let _ = idx;
                let (r, ack) = io
                    .durable_by_slot(&calls, replicas, wait_ms)
                    .await
                    .pop()
                    .expect("one outcome");
                acks[0] = ack;
                vec![r]
            })
            .pop()
            .expect("one outcome")
            .map_err(|e| shard_error(key, e))?;
            return match acks[0] {
                ack if ack < replicas => Err(not_durable(key, ack, replicas)),
                _ => Ok(r),
            };
        }
        let names = [name.as_str()];
        rounds!(self.retry, &names, io, |idx| {
            let _ = idx;
            vec![io.query(cmd).await]
        })
        .pop()
        .expect("one outcome")
    }

    /// Runs one command per shard key, all at once (one pipeline per
    /// node), and returns each reply or error (named by its shard key);
    /// the failed ones are sent again by the policy. A durable handle's
    /// writes wait for their replicas.
    pub(crate) async fn fan_out_each<I: FanIo>(
        &self,
        io: &mut I,
        calls: &[(String, Cmd)],
    ) -> Vec<RedisResult<Value>> {
        let names: Vec<String> = calls.iter().map(|(_, c)| command_name(c)).collect();
        if let Some((replicas, wait_ms)) = self.durable {
            if names.iter().any(|n| is_write(n)) {
                return self.durable_each(io, calls, replicas, wait_ms).await;
            }
        }
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        rounds!(self.retry, &refs, io, |idx| {
            let cmds: Vec<Cmd> = idx.iter().map(|&i| calls[i].1.clone()).collect();
            io.fan_raw(&cmds).await
        })
        .into_iter()
        .zip(calls)
        .map(|(r, (key, _))| r.map_err(|e| shard_error(key, e)))
        .collect()
    }

    /// [`fan_out_each`](Self::fan_out_each), failing on the first shard
    /// error (named by its key).
    pub(crate) async fn fan_out<I: FanIo>(
        &self,
        io: &mut I,
        calls: &[(String, Cmd)],
    ) -> RedisResult<Vec<Value>> {
        self.fan_out_each(io, calls).await.into_iter().collect()
    }

    /// The durable write of `calls` ([`FanOut::pipeline_durable`]),
    /// retried by the policy: a call whose write reached fewer than
    /// `replicas` replicas is an error (it ran on the master).
    pub(crate) async fn durable_each<I: FanIo>(
        &self,
        io: &mut I,
        calls: &[(String, Cmd)],
        replicas: i64,
        wait_ms: u64,
    ) -> Vec<RedisResult<Value>> {
        self.durable_raw(io, calls, replicas, wait_ms)
            .await
            .into_iter()
            .zip(calls)
            .map(|(r, (key, _))| match r {
                Ok((_, ack)) if ack < replicas => Err(not_durable(key, ack, replicas)),
                Ok((v, _)) => Ok(v),
                Err(e) => Err(e),
            })
            .collect()
    }

    /// [`FanOut::pipeline_durable`] retried by the policy: each reply with
    /// the replicas that acknowledged it, or the error (named by its
    /// shard key).
    pub(crate) async fn durable_raw<I: FanIo>(
        &self,
        io: &mut I,
        calls: &[(String, Cmd)],
        replicas: i64,
        wait_ms: u64,
    ) -> Vec<RedisResult<(Value, i64)>> {
        let names: Vec<String> = calls.iter().map(|(_, c)| command_name(c)).collect();
        let refs: Vec<&str> = names.iter().map(String::as_str).collect();
        let mut acks = vec![0i64; calls.len()];
        let res = rounds!(self.retry, &refs, io, |idx| {
            let part: Vec<(String, Cmd)> = idx.iter().map(|&i| calls[i].clone()).collect();
            io.pipeline_durable(&part, replicas, wait_ms)
                .await
                .into_iter()
                .zip(&idx)
                .map(|((r, ack), &i)| {
                    acks[i] = ack;
                    r
                })
                .collect()
        });
        res.into_iter()
            .zip(calls)
            .zip(acks)
            .map(|((r, (key, _)), ack)| r.map(|v| (v, ack)).map_err(|e| shard_error(key, e)))
            .collect()
    }
}

/// The shard keys of a spread entity, with the routing of ids.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shards {
    base: String,
    keys: Vec<String>,
}

impl Shards {
    /// The `n` shard keys of `base`.
    ///
    /// # Panics
    /// Occurs when `n` is not from 1 to 1024, or when `base` is empty (a
    /// bare hash tag is never a shard key: docs/spread.md).
    pub fn new(base: &str, n: u32) -> Shards {
        assert!(
            routing::valid_shards(i64::from(n)),
            "a spread entity has 1 to 1024 shards, not {n}"
        );
        assert!(
            !base.is_empty(),
            "a spread entity's base key must not be empty"
        );
        let keys = routing::shard_keys(base.as_bytes(), n)
            .into_iter()
            .map(|k| String::from_utf8(k).expect("a UTF-8 base gives UTF-8 shard keys"))
            .collect();
        Shards {
            base: base.to_string(),
            keys,
        }
    }

    /// The base key.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// The shard count.
    pub fn n(&self) -> u32 {
        self.keys.len() as u32
    }

    /// Every shard key, shard 0 first.
    pub fn keys(&self) -> &[String] {
        &self.keys
    }

    /// The shard of an id (`routing::shard_of`).
    pub fn shard_of(&self, id: &str) -> u32 {
        routing::shard_of(id.as_bytes(), self.n())
    }

    /// The key of the shard of an id.
    pub fn key_of(&self, id: &str) -> &str {
        &self.keys[self.shard_of(id) as usize]
    }

    /// Builds `name K_i args… SPREAD n` for shard `i`.
    pub(crate) fn cmd(&self, backend: Backend, name: &str, i: u32, args: &[Vec<u8>]) -> Cmd {
        let key = &self.keys[i as usize];
        let mut argv = Vec::with_capacity(args.len() + 3);
        argv.push(key.as_bytes().to_vec());
        argv.extend(args.iter().cloned());
        argv.push(b"SPREAD".to_vec());
        argv.push(self.n().to_string().into_bytes());
        backend.command(name, &argv, &[0])
    }

    /// The same command on every shard, as fan-out calls.
    pub(crate) fn all(&self, backend: Backend, name: &str, args: &[Vec<u8>]) -> Vec<(String, Cmd)> {
        (0..self.n())
            .map(|i| {
                (
                    self.keys[i as usize].clone(),
                    self.cmd(backend, name, i, args),
                )
            })
            .collect()
    }

    /// Creates every shard with `create` (`<FAMILY>.CREATE K_i args…
    /// SPREAD n`), checking them all first with `info` (`<FAMILY>.INFO
    /// K_i SPREAD n`): a shard in use (another count, a single-slot entity,
    /// corrupt data) stops the creation before anything is written. Shard
    /// 0 is created first, on its own (it also checks the base key), then
    /// the others at once. Creating an entity again with the same rules
    /// answers true and changes nothing, so a creation that failed half way
    /// can be run again.
    pub(crate) async fn create<C: FanIo>(
        &self,
        con: &mut C,
        backend: Backend,
        exec: &Exec,
        family: &str,
        args: &[Vec<u8>],
    ) -> RedisResult<bool> {
        let info = format!("{family}.INFO");
        for (r, key) in exec
            .fan_out_each(con, &self.all(backend, &info, &[]))
            .await
            .into_iter()
            .zip(&self.keys)
        {
            if let Err(e) = r {
                if !e.detail().is_some_and(|d| d.ends_with("does not exist")) {
                    return Err(shard_error(key, e));
                }
            }
        }
        let create = format!("{family}.CREATE");
        let calls = self.all(backend, &create, args);
        let first: Value = exec
            .query(con, &calls[0].0, &calls[0].1)
            .await
            .map_err(|e| shard_error(&calls[0].0, e))?;
        crate::replies::ok(&first)?;
        for v in exec.fan_out(con, &calls[1..]).await? {
            crate::replies::ok(&v)?;
        }
        Ok(true)
    }
}

/// Reads the shard count of a spread entity from its shard 0 (whose key
/// does not depend on the count): `Some(n)`, or `None` when `base` is not
/// spread. `family` is e.g. `"LIKE"`.
pub fn spread_count<C: ConnectionLike>(
    con: &mut C,
    family: &str,
    base: &str,
) -> RedisResult<Option<u32>> {
    let k0 = String::from_utf8(routing::shard_key(base.as_bytes(), 1, 0))
        .expect("a UTF-8 base gives a UTF-8 shard key");
    let v: Value = redis::cmd(&format!("{family}.INFO")).arg(&k0).query(con)?;
    count_of(&v)
}

/// The `spread` field of an `INFO` reply of shard 0.
fn count_of(v: &Value) -> RedisResult<Option<u32>> {
    // A RESP2 array or a RESP3 map; an empty reply (no such post or bag).
    let items = match v {
        Value::Array(a) if a.is_empty() => return Ok(None),
        Value::Map(m) if m.is_empty() => return Ok(None),
        _ => crate::replies::pairs(v)?,
    };
    for (k, v) in items {
        if crate::replies::text(k)? == "spread" {
            return Ok(Some(crate::replies::int(v)? as u32));
        }
    }
    Ok(None)
}

fn arg<T: redis::ToRedisArgs>(v: T) -> Vec<u8> {
    v.to_redis_args().concat()
}

/// A post spread over `n` shards (docs/spread.md, docs/like.md): each
/// user's likes live in shard `user mod n`, which stores the user as
/// `user / n`.
///
/// ```no_run
/// use hotpath_client::SpreadLike;
/// # fn main() -> redis::RedisResult<()> {
/// let client = redis::cluster::ClusterClient::new(vec!["redis://127.0.0.1:7000/"])?;
/// let mut con = client.get_connection()?;
/// let post = SpreadLike::new("post:9", 16);
/// post.create(&mut con)?;
/// post.toggle(&mut con, 42)?;
/// let total: i64 = post.count(&mut con)?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpreadLike {
    shards: Shards,
    now: Option<i64>,
    backend: Backend,
    exec: Exec,
}

impl SpreadLike {
    /// A handle on the post `base` spread over `n` shards.
    ///
    /// # Panics
    /// Occurs when `n` is not from 1 to 1024.
    pub fn new(base: &str, n: u32) -> SpreadLike {
        SpreadLike {
            shards: Shards::new(base, n),
            now: None,
            backend: Backend::Module,
            exec: Exec::default(),
        }
    }

    /// The same handle with the clock pinned (`NOW now_ms`).
    pub fn at(&self, now_ms: i64) -> SpreadLike {
        SpreadLike {
            now: Some(now_ms),
            ..self.clone()
        }
    }

    /// The same handle on another backend.
    pub fn with_backend(&self, backend: Backend) -> SpreadLike {
        SpreadLike {
            backend,
            ..self.clone()
        }
    }

    /// The same handle with another retry policy for its per-shard
    /// commands ([`RetryPolicy::NEVER`]: the connection's own retries
    /// only; docs/spread.md, "Retries under topology change").
    pub fn with_retry(&self, retry: RetryPolicy) -> SpreadLike {
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
    pub fn durable(&self, replicas: i64, wait_ms: u64) -> SpreadLike {
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

    /// The shard of a user: `user mod n`.
    pub fn shard_of(&self, user: u64) -> u32 {
        routing::like_slot_of(user, self.shards.n()).0
    }

    /// Creates every shard (`LIKE.CREATE K_i SPREAD n`).
    pub fn create<C: FanOut>(&self, con: &mut C) -> RedisResult<bool> {
        block(self.create_in(&mut Blocking(con)))
    }

    /// [`SpreadLike::create`] over any [`FanIo`].
    pub(crate) async fn create_in<C: FanIo>(&self, con: &mut C) -> RedisResult<bool> {
        self.shards
            .create(con, self.backend, &self.exec, "LIKE", &[])
            .await
    }

    async fn write_in<C: OneIo>(
        &self,
        con: &mut C,
        name: &str,
        user: u64,
        now: bool,
    ) -> RedisResult<ShardLikeChange> {
        let shard = self.shard_of(user);
        let mut args = vec![arg(user)];
        if let (true, Some(t)) = (now, self.now) {
            args.push(b"NOW".to_vec());
            args.push(arg(t));
        }
        let cmd = self.shards.cmd(self.backend, name, shard, &args);
        let v = self
            .exec
            .query(con, &self.shards.keys()[shard as usize], &cmd)
            .await?;
        let (changed, shard_count) = crate::replies::flag_count(&v)?;
        Ok(ShardLikeChange {
            changed,
            shard,
            shard_count,
        })
    }

    /// `LIKE.TOGGLE` on the user's shard: `changed` is whether the user
    /// likes the post after the call.
    pub fn toggle<C: ConnectionLike>(
        &self,
        con: &mut C,
        user: u64,
    ) -> RedisResult<ShardLikeChange> {
        block(self.toggle_in(&mut Blocking(con), user))
    }

    /// [`SpreadLike::toggle`] over any [`OneIo`].
    pub(crate) async fn toggle_in<C: OneIo>(
        &self,
        con: &mut C,
        user: u64,
    ) -> RedisResult<ShardLikeChange> {
        self.write_in(con, "LIKE.TOGGLE", user, true).await
    }

    /// `LIKE.ADD` on the user's shard (idempotent).
    pub fn add<C: ConnectionLike>(&self, con: &mut C, user: u64) -> RedisResult<ShardLikeChange> {
        block(self.add_in(&mut Blocking(con), user))
    }

    /// [`SpreadLike::add`] over any [`OneIo`].
    pub(crate) async fn add_in<C: OneIo>(
        &self,
        con: &mut C,
        user: u64,
    ) -> RedisResult<ShardLikeChange> {
        self.write_in(con, "LIKE.ADD", user, true).await
    }

    /// `LIKE.REM` on the user's shard (idempotent).
    pub fn rem<C: ConnectionLike>(&self, con: &mut C, user: u64) -> RedisResult<ShardLikeChange> {
        block(self.rem_in(&mut Blocking(con), user))
    }

    /// [`SpreadLike::rem`] over any [`OneIo`].
    pub(crate) async fn rem_in<C: OneIo>(
        &self,
        con: &mut C,
        user: u64,
    ) -> RedisResult<ShardLikeChange> {
        self.write_in(con, "LIKE.REM", user, false).await
    }

    /// Whether each user likes the post, in order: one `LIKE.CHECK` per
    /// shard asked, all at once.
    pub fn check<C: FanOut>(&self, con: &mut C, users: &[u64]) -> RedisResult<Vec<bool>> {
        block(self.check_in(&mut Blocking(con), users))
    }

    /// [`SpreadLike::check`] over any [`FanIo`].
    pub(crate) async fn check_in<C: FanIo>(
        &self,
        con: &mut C,
        users: &[u64],
    ) -> RedisResult<Vec<bool>> {
        let n = self.shards.n() as usize;
        let mut by_shard: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, &u) in users.iter().enumerate() {
            by_shard[self.shard_of(u) as usize].push(i);
        }
        let asked: Vec<usize> = (0..n).filter(|&s| !by_shard[s].is_empty()).collect();
        let calls: Vec<(String, Cmd)> = asked
            .iter()
            .map(|&s| {
                let args: Vec<Vec<u8>> = by_shard[s].iter().map(|&i| arg(users[i])).collect();
                (
                    self.shards.keys()[s].clone(),
                    self.shards.cmd(self.backend, "LIKE.CHECK", s as u32, &args),
                )
            })
            .collect();
        let mut out = vec![false; users.len()];
        for (s, v) in asked.iter().zip(self.exec.fan_out(con, &calls).await?) {
            let flags = crate::replies::ints(&v)?;
            if flags.len() != by_shard[*s].len() {
                return Err(RedisError::from((
                    ErrorKind::TypeError,
                    "hotpath: unexpected reply",
                    format!("LIKE.CHECK of shard {s}: {v:?}"),
                )));
            }
            for (&i, f) in by_shard[*s].iter().zip(flags) {
                out[i] = f == 1;
            }
        }
        Ok(out)
    }

    /// Whether one user likes the post (one shard read).
    pub fn likes<C: ConnectionLike>(&self, con: &mut C, user: u64) -> RedisResult<bool> {
        block(self.likes_in(&mut Blocking(con), user))
    }

    /// [`SpreadLike::likes`] over any [`OneIo`].
    pub(crate) async fn likes_in<C: OneIo>(&self, con: &mut C, user: u64) -> RedisResult<bool> {
        let shard = self.shard_of(user);
        let cmd = self
            .shards
            .cmd(self.backend, "LIKE.CHECK", shard, &[arg(user)]);
        let v = self
            .exec
            .query(con, &self.shards.keys()[shard as usize], &cmd)
            .await?;
        Ok(crate::replies::ints(&v)?.first() == Some(&1))
    }

    /// The exact like count of every shard, shard 0 first.
    pub fn shard_counts<C: FanOut>(&self, con: &mut C) -> RedisResult<Vec<i64>> {
        block(self.shard_counts_in(&mut Blocking(con)))
    }

    /// [`SpreadLike::shard_counts`] over any [`FanIo`].
    pub(crate) async fn shard_counts_in<C: FanIo>(&self, con: &mut C) -> RedisResult<Vec<i64>> {
        self.exec
            .fan_out(con, &self.shards.all(self.backend, "LIKE.COUNT", &[]))
            .await?
            .iter()
            .map(crate::replies::int)
            .collect()
    }

    /// The post's exact like count: the sum over its shards.
    pub fn count<C: FanOut>(&self, con: &mut C) -> RedisResult<i64> {
        block(self.count_in(&mut Blocking(con)))
    }

    /// [`SpreadLike::count`] over any [`FanIo`].
    pub(crate) async fn count_in<C: FanIo>(&self, con: &mut C) -> RedisResult<i64> {
        Ok(self.shard_counts_in(con).await?.iter().sum())
    }

    /// The latest `n` recorded likers over all shards, newest first (ties
    /// by user id, larger first); every recorded liker without `n`.
    pub fn recent<C: FanOut>(&self, con: &mut C, n: Option<u64>) -> RedisResult<Vec<Liker>> {
        block(self.recent_in(&mut Blocking(con), n))
    }

    /// [`SpreadLike::recent`] over any [`FanIo`].
    pub(crate) async fn recent_in<C: FanIo>(
        &self,
        con: &mut C,
        n: Option<u64>,
    ) -> RedisResult<Vec<Liker>> {
        let args: Vec<Vec<u8>> = n.map(arg).into_iter().collect();
        let mut all = Vec::new();
        for v in self
            .exec
            .fan_out(con, &self.shards.all(self.backend, "LIKE.RECENT", &args))
            .await?
        {
            all.extend(crate::replies::likers(&v)?);
        }
        all.sort_by(|a, b| b.at_ms.cmp(&a.at_ms).then(b.user.cmp(&a.user)));
        if let Some(n) = n {
            all.truncate(usize::try_from(n).unwrap_or(usize::MAX));
        }
        Ok(all)
    }

    /// `LIKE.INFO` of every shard and the totals.
    pub fn info<C: FanOut>(&self, con: &mut C) -> RedisResult<SpreadLikeInfo> {
        block(self.info_in(&mut Blocking(con)))
    }

    /// [`SpreadLike::info`] over any [`FanIo`].
    pub(crate) async fn info_in<C: FanIo>(&self, con: &mut C) -> RedisResult<SpreadLikeInfo> {
        let shards = self
            .exec
            .fan_out(con, &self.shards.all(self.backend, "LIKE.INFO", &[]))
            .await?
            .iter()
            .map(crate::replies::like_info)
            .collect::<RedisResult<Vec<LikeInfo>>>()?;
        Ok(SpreadLikeInfo {
            shards: self.shards.n(),
            count: shards.iter().map(|s| s.count).sum(),
            bytes: shards.iter().map(|s| s.bytes).sum(),
            per_shard: shards,
        })
    }
}

/// A write on one shard of a spread post: `changed` as the single-slot
/// command answers it (for a toggle: the user likes the post after the
/// call), the shard written and that shard's count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardLikeChange {
    pub changed: bool,
    pub shard: u32,
    pub shard_count: i64,
}

/// `LIKE.INFO` over a spread post.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpreadLikeInfo {
    pub shards: u32,
    pub count: i64,
    pub bytes: i64,
    pub per_shard: Vec<LikeInfo>,
}

/// A lucky bag spread over `n` shards (docs/spread.md, docs/luckybag.md):
/// a user joins shard `shard_of(user, n)`, and the draw runs across the
/// shards: the exact global top WINNERS, safe to run again.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpreadLuckyBag {
    shards: Shards,
    now: Option<i64>,
    backend: Backend,
    exec: Exec,
}

/// How a spread bag's draw runs.
#[derive(Clone, Debug)]
pub struct DrawOptions {
    /// The draw's token: run a draw again with the same token to take it
    /// up where it stopped (a new one is made when `None`).
    pub token: Option<String>,
    /// How long the draw holds the bag (`LEASE`): another drawer is
    /// refused meanwhile, and may take over once it runs out.
    pub lease_ms: i64,
    /// Replicas that must have every shard's freeze and the commit before
    /// the draw goes on (`WAIT`): a failover then cannot undo them. 0 on a
    /// server without replicas.
    pub replicas: i64,
    /// How long each `WAIT` may take.
    pub wait_ms: u64,
}

impl Default for DrawOptions {
    fn default() -> Self {
        DrawOptions {
            token: None,
            lease_ms: 30_000,
            replicas: 1,
            wait_ms: 5_000,
        }
    }
}

/// `LUCKYBAG.JOIN` on one shard of a spread bag: `new` and `pooled` as the
/// single-slot command answers them, the shard and its participants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShardJoin {
    pub new: bool,
    pub pooled: bool,
    pub shard: u32,
    pub shard_participants: i64,
}

/// `LUCKYBAG.INFO` over a spread bag. `state` is the bag's draw: `open`,
/// `drawing` (a draw has started) or `drawn`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpreadBagInfo {
    pub state: String,
    pub participants: i64,
    pub pooled: i64,
    pub winners: i64,
    pub shards: u32,
    pub per_shard: Vec<BagInfo>,
}

/// A candidate of a shard's freeze: user, score, the score's text (as
/// the server printed it, 17 significant digits: exact).
#[derive(Clone, Debug, PartialEq)]
struct Candidate {
    user: String,
    r: f64,
    text: String,
}

impl Candidate {
    /// The draw's order: higher score first, then the byte-wise greater
    /// user (the order of the single-slot DRAW).
    fn key(&self) -> (std::cmp::Reverse<u64>, std::cmp::Reverse<&[u8]>) {
        // Scores are in [0, 1]: their bit patterns order as they do.
        (
            std::cmp::Reverse(self.r.to_bits()),
            std::cmp::Reverse(self.user.as_bytes()),
        )
    }
}

fn candidates(v: &Value) -> RedisResult<Vec<Candidate>> {
    let a = crate::replies::array(v)?;
    if a.len() % 2 != 0 {
        return Err(bad_reply("candidates", v));
    }
    a.chunks(2)
        .map(|p| {
            let text = crate::replies::text(&p[1])?;
            let r = parse_r(&text).ok_or_else(|| bad_reply("score", &p[1]))?;
            Ok(Candidate {
                user: crate::replies::text(&p[0])?,
                r,
                text,
            })
        })
        .collect()
}

/// A score as the server prints it (`0.12345678901234567`), from 0 to 1.
fn parse_r(text: &str) -> Option<f64> {
    let r: f64 = text.parse().ok()?;
    (0.0..=1.0).contains(&r).then_some(r)
}

fn bad_reply(what: &str, v: &Value) -> RedisError {
    RedisError::from((
        ErrorKind::TypeError,
        "hotpath: unexpected reply",
        format!("{what}: {v:?}"),
    ))
}

/// A fresh draw token: the time, the process and a counter (unique per
/// process and run; it only has to differ from other drawers' tokens).
fn new_token() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{nanos:x}-{:x}-{:x}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

impl SpreadLuckyBag {
    /// A handle on the bag `base` spread over `n` shards.
    ///
    /// # Panics
    /// Occurs when `n` is not from 1 to 1024.
    pub fn new(base: &str, n: u32) -> SpreadLuckyBag {
        SpreadLuckyBag {
            shards: Shards::new(base, n),
            now: None,
            backend: Backend::Module,
            exec: Exec::default(),
        }
    }

    /// The same handle with the clock pinned (`NOW` of the draw's lease).
    pub fn at(&self, now_ms: i64) -> SpreadLuckyBag {
        SpreadLuckyBag {
            now: Some(now_ms),
            ..self.clone()
        }
    }

    /// The same handle on another backend.
    pub fn with_backend(&self, backend: Backend) -> SpreadLuckyBag {
        SpreadLuckyBag {
            backend,
            ..self.clone()
        }
    }

    /// The same handle with another retry policy for its per-shard
    /// commands ([`RetryPolicy::NEVER`]: the connection's own retries
    /// only; docs/spread.md, "Retries under topology change").
    pub fn with_retry(&self, retry: RetryPolicy) -> SpreadLuckyBag {
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
    pub fn durable(&self, replicas: i64, wait_ms: u64) -> SpreadLuckyBag {
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

    /// Creates every shard (`LUCKYBAG.CREATE K_i WINNERS w … SPREAD n`).
    /// `POOLCAP` is the bag's: each shard keeps its share of it. Each
    /// shard has one internal pool unless `shards` says otherwise.
    pub fn create<C: FanOut>(
        &self,
        con: &mut C,
        winners: i64,
        o: &crate::entities::BagOptions,
    ) -> RedisResult<bool> {
        block(self.create_in(&mut Blocking(con), winners, o))
    }

    /// [`SpreadLuckyBag::create`] over any [`FanIo`].
    pub(crate) async fn create_in<C: FanIo>(
        &self,
        con: &mut C,
        winners: i64,
        o: &crate::entities::BagOptions,
    ) -> RedisResult<bool> {
        let mut args = vec![arg("WINNERS"), arg(winners)];
        let mut opt = |name: &str, v: Option<Vec<u8>>| {
            if let Some(v) = v {
                args.push(arg(name));
                args.push(v);
            }
        };
        opt("SHARDS", o.shards.map(arg));
        opt("POOLCAP", o.poolcap.map(arg));
        opt("HIGHSCORE", o.highscore.as_deref().map(arg));
        opt(
            "RESTORE",
            o.restore.map(|r| arg(if r { "YES" } else { "NO" })),
        );
        opt("TTL", o.ttl.map(arg));
        self.shards
            .create(con, self.backend, &self.exec, "LUCKYBAG", &args)
            .await
    }

    async fn one_in<C: OneIo>(
        &self,
        con: &mut C,
        name: &str,
        user: &str,
        args: &[Vec<u8>],
    ) -> RedisResult<Value> {
        let mut a = vec![arg(user)];
        a.extend(args.iter().cloned());
        let shard = self.shards.shard_of(user);
        let cmd = self.shards.cmd(self.backend, name, shard, &a);
        self.exec
            .query(con, &self.shards.keys()[shard as usize], &cmd)
            .await
    }

    /// `LUCKYBAG.JOIN` on the user's shard.
    pub fn join<C: ConnectionLike>(
        &self,
        con: &mut C,
        user: &str,
        task_pending: bool,
    ) -> RedisResult<ShardJoin> {
        block(self.join_in(&mut Blocking(con), user, task_pending))
    }

    /// [`SpreadLuckyBag::join`] over any [`OneIo`].
    pub(crate) async fn join_in<C: OneIo>(
        &self,
        con: &mut C,
        user: &str,
        task_pending: bool,
    ) -> RedisResult<ShardJoin> {
        let extra = if task_pending {
            vec![arg("TASK"), arg("PENDING")]
        } else {
            Vec::new()
        };
        let j: Join =
            crate::replies::join(&self.one_in(con, "LUCKYBAG.JOIN", user, &extra).await?)?;
        Ok(ShardJoin {
            new: j.new,
            pooled: j.pooled,
            shard: self.shards.shard_of(user),
            shard_participants: j.participants,
        })
    }

    /// `LUCKYBAG.TASK` on the user's shard.
    pub fn task<C: ConnectionLike>(&self, con: &mut C, user: &str) -> RedisResult<bool> {
        block(self.task_in(&mut Blocking(con), user))
    }

    /// [`SpreadLuckyBag::task`] over any [`OneIo`].
    pub(crate) async fn task_in<C: OneIo>(&self, con: &mut C, user: &str) -> RedisResult<bool> {
        Ok(crate::replies::int(&self.one_in(con, "LUCKYBAG.TASK", user, &[]).await?)? == 1)
    }

    /// `LUCKYBAG.LEAVE` on the user's shard.
    pub fn leave<C: ConnectionLike>(&self, con: &mut C, user: &str) -> RedisResult<bool> {
        block(self.leave_in(&mut Blocking(con), user))
    }

    /// [`SpreadLuckyBag::leave`] over any [`OneIo`].
    pub(crate) async fn leave_in<C: OneIo>(&self, con: &mut C, user: &str) -> RedisResult<bool> {
        Ok(crate::replies::int(&self.one_in(con, "LUCKYBAG.LEAVE", user, &[]).await?)? == 1)
    }

    /// `LUCKYBAG.ENTER` on the user's shard.
    pub fn enter<C: ConnectionLike>(&self, con: &mut C, user: &str) -> RedisResult<bool> {
        block(self.enter_in(&mut Blocking(con), user))
    }

    /// [`SpreadLuckyBag::enter`] over any [`OneIo`].
    pub(crate) async fn enter_in<C: OneIo>(&self, con: &mut C, user: &str) -> RedisResult<bool> {
        Ok(crate::replies::int(&self.one_in(con, "LUCKYBAG.ENTER", user, &[]).await?)? == 1)
    }

    /// `LUCKYBAG.RESULT`, read on the node that owns the user's shard:
    /// `Pending` until that shard has its winners.
    pub fn result<C: ConnectionLike>(&self, con: &mut C, user: &str) -> RedisResult<BagResult> {
        block(self.result_in(&mut Blocking(con), user))
    }

    /// [`SpreadLuckyBag::result`] over any [`OneIo`].
    pub(crate) async fn result_in<C: OneIo>(
        &self,
        con: &mut C,
        user: &str,
    ) -> RedisResult<BagResult> {
        crate::replies::bag_result(&self.one_in(con, "LUCKYBAG.RESULT", user, &[]).await?)
    }

    /// `LUCKYBAG.INFO` of every shard and the bag's totals.
    pub fn info<C: FanOut>(&self, con: &mut C) -> RedisResult<SpreadBagInfo> {
        block(self.info_in(&mut Blocking(con)))
    }

    /// [`SpreadLuckyBag::info`] over any [`FanIo`].
    pub(crate) async fn info_in<C: FanIo>(&self, con: &mut C) -> RedisResult<SpreadBagInfo> {
        let replies = self
            .exec
            .fan_out(con, &self.shards.all(self.backend, "LUCKYBAG.INFO", &[]))
            .await?;
        let mut per_shard = Vec::with_capacity(replies.len());
        for (v, key) in replies.iter().zip(self.shards.keys()) {
            let info = crate::replies::bag_info(v)?.ok_or_else(|| {
                RedisError::from((
                    ErrorKind::ResponseError,
                    "hotpath: a shard failed",
                    format!("shard '{key}': no such bag"),
                ))
            })?;
            per_shard.push(info);
        }
        // Shard 0 gives the draw's state (a RESP2 array or a RESP3 map).
        let draw = crate::replies::pairs(&replies[0])?
            .into_iter()
            .find(|(k, _)| matches!(crate::replies::text(k).as_deref(), Ok("draw")))
            .map(|(_, v)| crate::replies::text(v))
            .transpose()?
            .unwrap_or_else(|| "none".into());
        Ok(SpreadBagInfo {
            state: if draw == "none" { "open".into() } else { draw },
            participants: per_shard.iter().map(|s| s.participants).sum(),
            pooled: per_shard.iter().map(|s| s.pooled).sum(),
            winners: per_shard[0].winners,
            shards: self.shards.n(),
            per_shard,
        })
    }

    /// The participants of every shard, summed.
    pub fn participants<C: FanOut>(&self, con: &mut C) -> RedisResult<i64> {
        block(self.participants_in(&mut Blocking(con)))
    }

    /// [`SpreadLuckyBag::participants`] over any [`FanIo`].
    pub(crate) async fn participants_in<C: FanIo>(&self, con: &mut C) -> RedisResult<i64> {
        Ok(self.info_in(con).await?.participants)
    }

    /// Draws the bag across its shards (docs/spread.md): takes the draw's
    /// lease on shard 0, freezes every shard and reads its best candidates
    /// (deeper only where a shard could still hold a winner), waits for a
    /// replica of each freeze, merges the exact global top WINNERS,
    /// commits them on shard 0, then gives each shard its own winners.
    /// Every step is idempotent: a draw interrupted anywhere and run again
    /// (with the same token, or any token once the lease ran out) gives the
    /// same winners. A draw already committed answers its winners.
    pub fn draw<C: FanOut>(&self, con: &mut C, o: &DrawOptions) -> RedisResult<Vec<Winner>> {
        block(self.draw_in(&mut Blocking(con), o))
    }

    /// [`SpreadLuckyBag::draw`] over any [`FanIo`].
    pub(crate) async fn draw_in<C: FanIo>(
        &self,
        con: &mut C,
        o: &DrawOptions,
    ) -> RedisResult<Vec<Winner>> {
        let token = o.token.clone().unwrap_or_else(new_token);
        let mut args = vec![arg(&token), arg("LEASE"), arg(o.lease_ms)];
        if let Some(t) = self.now {
            args.push(arg("NOW"));
            args.push(arg(t));
        }
        let k0 = self.shards.keys()[0].clone();
        let cmd = self
            .shards
            .cmd(self.backend, "LUCKYBAG.DRAWBEGIN", 0, &args);
        let begin: Value = self
            .exec
            .query(con, &k0, &cmd)
            .await
            .map_err(|e| shard_error(&k0, e))?;
        let b = crate::replies::array(&begin)?;
        if b.len() < 2 {
            return Err(bad_reply("LUCKYBAG.DRAWBEGIN", &begin));
        }
        let state = crate::replies::text(&b[0])?;
        let w = crate::replies::int(&b[1])? as usize;
        if state == "drawn" {
            let list = candidates(&Value::Array(b[2..].to_vec()))?;
            self.publish_in(con, &list, w, false).await?;
            return Ok(winners_of(&list));
        }
        let n = self.shards.n() as usize;
        let first = w.min((2 * w).div_ceil(n) + 16);
        let mut depth = vec![first; n];
        let mut lists: Vec<Vec<Candidate>> = vec![Vec::new(); n];
        let mut ask: Vec<usize> = (0..n).collect();
        let mut first_round = true;
        let merged = loop {
            let calls: Vec<(String, Cmd)> = ask
                .iter()
                .map(|&i| {
                    (
                        self.shards.keys()[i].clone(),
                        self.shards.cmd(
                            self.backend,
                            "LUCKYBAG.FREEZE",
                            i as u32,
                            &[arg(depth[i])],
                        ),
                    )
                })
                .collect();
            // The first round freezes every shard; with `replicas`, each
            // node's part ends in WAIT on the same connection (FREEZE
            // always replicates, so the WAIT also covers a freeze made by
            // an earlier, interrupted run of the draw).
            let replies: Vec<Value> = if first_round && o.replicas > 0 {
                let mut out = Vec::with_capacity(calls.len());
                for (r, (key, _)) in self
                    .exec
                    .durable_raw(con, &calls, o.replicas, o.wait_ms)
                    .await
                    .into_iter()
                    .zip(&calls)
                {
                    let (v, acked) = r?;
                    if acked < o.replicas {
                        return Err(RedisError::from((
                            ErrorKind::ResponseError,
                            "hotpath: a shard failed",
                            format!("shard '{key}': its freeze reached {acked} of {} replicas; run the draw again", o.replicas),
                        )));
                    }
                    out.push(v);
                }
                out
            } else {
                self.exec.fan_out(con, &calls).await?
            };
            first_round = false;
            for (&i, v) in ask.iter().zip(replies) {
                lists[i] = candidates(&v)?;
            }
            let mut all: Vec<&Candidate> = lists.iter().flatten().collect();
            all.sort_by(|a, b| a.key().cmp(&b.key()));
            all.truncate(w);
            // A shard may hold more winners only if it answered as many as
            // asked and its last one is still among the best: every member
            // it did not send ranks below that one.
            ask = (0..n)
                .filter(|&i| {
                    depth[i] < w
                        && lists[i].len() == depth[i]
                        && lists[i].last().is_some_and(|l| all.contains(&l))
                })
                .collect();
            if ask.is_empty() {
                break all.into_iter().cloned().collect::<Vec<Candidate>>();
            }
            for &i in &ask {
                depth[i] = (depth[i] * 2).min(w);
            }
        };
        // Every shard checks its part against its own pool before anything
        // is final (PUBLISH … VERIFY writes nothing): a wrong merge is
        // refused here, while the draw can still be run again.
        self.publish_in(con, &merged, w, true).await?;
        let mut commit = vec![arg(&token)];
        for c in &merged {
            commit.push(arg(&c.user));
            commit.push(arg(&c.text));
        }
        let calls = [(
            k0.clone(),
            self.shards.cmd(self.backend, "LUCKYBAG.COMMIT", 0, &commit),
        )];
        let (v, acked) = if o.replicas > 0 {
            self.exec
                .durable_raw(con, &calls, o.replicas, o.wait_ms)
                .await
                .pop()
                .expect("one outcome")?
        } else {
            let v = self
                .exec
                .query(con, &k0, &calls[0].1)
                .await
                .map_err(|e| shard_error(&k0, e))?;
            (v, 0)
        };
        crate::replies::ok(&v)?;
        if o.replicas > 0 && acked < o.replicas {
            return Err(RedisError::from((
                ErrorKind::ResponseError,
                "hotpath: a shard failed",
                format!(
                    "shard '{k0}': the commit reached {acked} of {} replicas; run the draw again",
                    o.replicas
                ),
            )));
        }
        self.publish_in(con, &merged, w, false).await?;
        Ok(winners_of(&merged))
    }

    /// Step 5: each shard gets its own winners (possibly none), with the
    /// global list's last winner when the list is full (`LAST`), so that
    /// each shard checks that nothing it holds outside the list ranks
    /// before it. With `verify`, the shards only check (step 4's guard).
    async fn publish_in<C: FanIo>(
        &self,
        con: &mut C,
        list: &[Candidate],
        w: usize,
        verify: bool,
    ) -> RedisResult<()> {
        let n = self.shards.n() as usize;
        let mut by_shard: Vec<Vec<Vec<u8>>> = vec![Vec::new(); n];
        for c in list {
            let s = self.shards.shard_of(&c.user) as usize;
            by_shard[s].push(arg(&c.user));
            by_shard[s].push(arg(&c.text));
        }
        let mut tail: Vec<Vec<u8>> = Vec::new();
        if let Some(l) = list.last().filter(|_| list.len() >= w) {
            tail.extend([arg("LAST"), arg(&l.user), arg(&l.text)]);
        }
        if verify {
            tail.push(arg("VERIFY"));
        }
        for b in &mut by_shard {
            b.extend(tail.iter().cloned());
        }
        let calls: Vec<(String, Cmd)> = (0..n)
            .map(|i| {
                (
                    self.shards.keys()[i].clone(),
                    self.shards
                        .cmd(self.backend, "LUCKYBAG.PUBLISH", i as u32, &by_shard[i]),
                )
            })
            .collect();
        self.exec.fan_out(con, &calls).await?;
        Ok(())
    }
}

fn winners_of(list: &[Candidate]) -> Vec<Winner> {
    list.iter()
        .map(|c| Winner {
            user: c.user.clone(),
            score_text: c.text.clone(),
            score: c.r,
        })
        .collect()
}

#[cfg(feature = "aio")]
impl AsyncSpread<'_, SpreadLike> {
    /// Creates every shard (`LIKE.CREATE K_i SPREAD n`).
    pub async fn create<C: AioCon>(&self, con: &mut C) -> RedisResult<bool> {
        self.0.create_in(&mut Nonblocking(con)).await
    }

    /// `LIKE.TOGGLE` on the user's shard: `changed` is whether the user
    /// likes the post after the call.
    pub async fn toggle<C: AioCon>(&self, con: &mut C, user: u64) -> RedisResult<ShardLikeChange> {
        self.0.toggle_in(&mut Nonblocking(con), user).await
    }

    /// `LIKE.ADD` on the user's shard (idempotent).
    pub async fn add<C: AioCon>(&self, con: &mut C, user: u64) -> RedisResult<ShardLikeChange> {
        self.0.add_in(&mut Nonblocking(con), user).await
    }

    /// `LIKE.REM` on the user's shard (idempotent).
    pub async fn rem<C: AioCon>(&self, con: &mut C, user: u64) -> RedisResult<ShardLikeChange> {
        self.0.rem_in(&mut Nonblocking(con), user).await
    }

    /// Whether each user likes the post, in order: one `LIKE.CHECK` per
    /// shard asked, all at once.
    pub async fn check<C: AioCon>(&self, con: &mut C, users: &[u64]) -> RedisResult<Vec<bool>> {
        self.0.check_in(&mut Nonblocking(con), users).await
    }

    /// Whether one user likes the post (one shard read).
    pub async fn likes<C: AioCon>(&self, con: &mut C, user: u64) -> RedisResult<bool> {
        self.0.likes_in(&mut Nonblocking(con), user).await
    }

    /// The exact like count of every shard, shard 0 first.
    pub async fn shard_counts<C: AioCon>(&self, con: &mut C) -> RedisResult<Vec<i64>> {
        self.0.shard_counts_in(&mut Nonblocking(con)).await
    }

    /// The post's exact like count: the sum over its shards.
    pub async fn count<C: AioCon>(&self, con: &mut C) -> RedisResult<i64> {
        self.0.count_in(&mut Nonblocking(con)).await
    }

    /// The latest `n` recorded likers over all shards, newest first (ties
    /// by user id, larger first); every recorded liker without `n`.
    pub async fn recent<C: AioCon>(&self, con: &mut C, n: Option<u64>) -> RedisResult<Vec<Liker>> {
        self.0.recent_in(&mut Nonblocking(con), n).await
    }

    /// `LIKE.INFO` of every shard and the totals.
    pub async fn info<C: AioCon>(&self, con: &mut C) -> RedisResult<SpreadLikeInfo> {
        self.0.info_in(&mut Nonblocking(con)).await
    }
}

#[cfg(feature = "aio")]
impl AsyncSpread<'_, SpreadLuckyBag> {
    /// Creates every shard (`LUCKYBAG.CREATE K_i WINNERS w … SPREAD n`).
    /// `POOLCAP` is the bag's: each shard keeps its share of it. Each
    /// shard has one internal pool unless `shards` says otherwise.
    pub async fn create<C: AioCon>(
        &self,
        con: &mut C,
        winners: i64,
        o: &crate::entities::BagOptions,
    ) -> RedisResult<bool> {
        self.0.create_in(&mut Nonblocking(con), winners, o).await
    }

    /// `LUCKYBAG.JOIN` on the user's shard.
    pub async fn join<C: AioCon>(
        &self,
        con: &mut C,
        user: &str,
        task_pending: bool,
    ) -> RedisResult<ShardJoin> {
        self.0
            .join_in(&mut Nonblocking(con), user, task_pending)
            .await
    }

    /// `LUCKYBAG.TASK` on the user's shard.
    pub async fn task<C: AioCon>(&self, con: &mut C, user: &str) -> RedisResult<bool> {
        self.0.task_in(&mut Nonblocking(con), user).await
    }

    /// `LUCKYBAG.LEAVE` on the user's shard.
    pub async fn leave<C: AioCon>(&self, con: &mut C, user: &str) -> RedisResult<bool> {
        self.0.leave_in(&mut Nonblocking(con), user).await
    }

    /// `LUCKYBAG.ENTER` on the user's shard.
    pub async fn enter<C: AioCon>(&self, con: &mut C, user: &str) -> RedisResult<bool> {
        self.0.enter_in(&mut Nonblocking(con), user).await
    }

    /// `LUCKYBAG.RESULT`, read on the node that owns the user's shard:
    /// `Pending` until that shard has its winners.
    pub async fn result<C: AioCon>(&self, con: &mut C, user: &str) -> RedisResult<BagResult> {
        self.0.result_in(&mut Nonblocking(con), user).await
    }

    /// `LUCKYBAG.INFO` of every shard and the bag's totals.
    pub async fn info<C: AioCon>(&self, con: &mut C) -> RedisResult<SpreadBagInfo> {
        self.0.info_in(&mut Nonblocking(con)).await
    }

    /// The participants of every shard, summed.
    pub async fn participants<C: AioCon>(&self, con: &mut C) -> RedisResult<i64> {
        self.0.participants_in(&mut Nonblocking(con)).await
    }

    /// Draws the bag across its shards (docs/spread.md): takes the draw's
    /// lease on shard 0, freezes every shard and reads its best candidates
    /// (deeper only where a shard could still hold a winner), waits for a
    /// replica of each freeze, merges the exact global top WINNERS,
    /// commits them on shard 0, then gives each shard its own winners.
    /// Every step is idempotent: a draw interrupted anywhere and run again
    /// (with the same token, or any token once the lease ran out) gives the
    /// same winners. A draw already committed answers its winners.
    pub async fn draw<C: AioCon>(&self, con: &mut C, o: &DrawOptions) -> RedisResult<Vec<Winner>> {
        self.0.draw_in(&mut Nonblocking(con), o).await
    }
}
