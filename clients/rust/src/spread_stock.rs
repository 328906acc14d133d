//! Flash-sale stock spread over shards (docs/stock.md, "Spread form"): a
//! buyer's RESERVE, CONFIRM and RELEASE go to the shard of the user; a
//! shard that answers `REFILL` is refilled from the pool on shard 0 by a
//! transfer (STOCK.TRANSFER on the pool, STOCK.APPLY on the shard,
//! STOCK.SETTLE on the pool: each step idempotent on the transfer id), and
//! when the pool is dry the other shards' available units are handed back
//! first; only when none is left anywhere is the shard marked dry, after
//! which it answers `SOLDOUT`.

use std::sync::atomic::{AtomicU64, Ordering};

use redis::{ConnectionLike, ErrorKind, RedisError, RedisResult, Value};

use crate::entities::Backend;
use crate::replies::{array, int, text, Reservation, ReserveStatus, StockInfo};
use crate::retry::RetryPolicy;
use crate::spread::{block, Blocking, Exec, FanIo, FanOut, OneIo, Shards};
#[cfg(feature = "aio")]
use crate::spread::{AioCon, AsyncSpread, Nonblocking};

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

/// The pool of a spread stock (`STOCK.POOL`) and its open transfers
/// (`(transfer, shard, delta)`, the delta the shard's APPLY takes).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StockPool {
    pub total: i64,
    pub free: i64,
    pub transit: i64,
    pub open: i64,
    pub pending: Vec<(String, u32, i64)>,
}

/// A spread stock's counts: the pool and each shard's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpreadStockInfo {
    pub pool: StockPool,
    pub shards: Vec<StockInfo>,
}

impl SpreadStockInfo {
    /// Units available on the shards.
    pub fn available(&self) -> i64 {
        self.shards.iter().map(|s| s.available).sum()
    }
    pub fn reserved(&self) -> i64 {
        self.shards.iter().map(|s| s.reserved).sum()
    }
    pub fn sold(&self) -> i64 {
        self.shards.iter().map(|s| s.sold).sum()
    }
}

/// A handle on a stock spread over `n` shards.
#[derive(Clone, Debug)]
pub struct SpreadStock {
    shards: Shards,
    now: Option<i64>,
    backend: Backend,
    exec: Exec,
    chunk: Option<i64>,
    rounds: u32,
}

static SEQ: AtomicU64 = AtomicU64::new(0);

/// A transfer id no other client picks: the process, the clock, a counter.
fn transfer_id(shard: u32) -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    format!(
        "{shard}:{}:{t:x}:{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    )
}

impl SpreadStock {
    /// A handle on the stock `base` spread over `n` shards.
    ///
    /// # Panics
    /// Occurs when `n` is not from 1 to 1024.
    pub fn new(base: &str, n: u32) -> SpreadStock {
        SpreadStock {
            shards: Shards::new(base, n),
            now: None,
            backend: Backend::Module,
            exec: Exec::default(),
            chunk: None,
            rounds: 3,
        }
    }

    /// The same handle with the clock pinned (`NOW` of its writes).
    pub fn at(&self, now_ms: i64) -> SpreadStock {
        SpreadStock {
            now: Some(now_ms),
            ..self.clone()
        }
    }

    /// The same handle on another backend ([`Backend::Functions`]: the
    /// `hotpath_stock_*` functions of the Functions library, with the
    /// same replies and data as the module's commands).
    pub fn with_backend(&self, backend: Backend) -> SpreadStock {
        SpreadStock {
            backend,
            ..self.clone()
        }
    }

    /// The same handle refilling `chunk` units at a time (default: the
    /// total / (16 n), at least 1).
    pub fn with_chunk(&self, chunk: i64) -> SpreadStock {
        SpreadStock {
            chunk: Some(chunk.max(1)),
            ..self.clone()
        }
    }

    /// The same handle with another retry policy.
    pub fn with_retry(&self, retry: RetryPolicy) -> SpreadStock {
        let mut h = self.clone();
        h.exec.retry = retry;
        h
    }

    /// The same handle whose writes wait for `replicas` replicas.
    pub fn durable(&self, replicas: i64, wait_ms: u64) -> SpreadStock {
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

    /// The shard of `user`.
    pub fn shard_of(&self, user: &str) -> u32 {
        self.shards.shard_of(user)
    }

    async fn run_in<C: OneIo>(
        &self,
        con: &mut C,
        name: &str,
        i: u32,
        args: &[Vec<u8>],
    ) -> RedisResult<Value> {
        let cmd = self.shards.cmd(self.backend, name, i, args);
        self.exec
            .query(con, &self.shards.keys()[i as usize], &cmd)
            .await
    }

    /// Creates every shard (shard 0, with the pool of `total`, first).
    pub fn create<C: FanOut>(
        &self,
        con: &mut C,
        total: i64,
        limit: Option<i64>,
        lease_ms: Option<i64>,
        ttl: Option<i64>,
    ) -> RedisResult<bool> {
        block(self.create_in(&mut Blocking(con), total, limit, lease_ms, ttl))
    }

    /// [`SpreadStock::create`] over any [`FanIo`].
    pub(crate) async fn create_in<C: FanIo>(
        &self,
        con: &mut C,
        total: i64,
        limit: Option<i64>,
        lease_ms: Option<i64>,
        ttl: Option<i64>,
    ) -> RedisResult<bool> {
        let mut a = vec![arg(total)];
        for (name, v) in [("LIMIT", limit), ("LEASE", lease_ms), ("TTL", ttl)] {
            if let Some(v) = v {
                a.push(arg(name));
                a.push(arg(v));
            }
        }
        if let Some(now) = self.now {
            a.push(arg("NOW"));
            a.push(arg(now));
        }
        self.shards
            .create(con, self.backend, &self.exec, "STOCK", &a)
            .await
    }

    fn with_now(&self, mut a: Vec<Vec<u8>>) -> Vec<Vec<u8>> {
        if let Some(now) = self.now {
            a.push(arg("NOW"));
            a.push(arg(now));
        }
        a
    }

    /// `STOCK.RESERVE` on the user's shard, refilling it as needed: OK,
    /// LIMIT or SOLDOUT (the whole SKU: the shard was marked dry). An error
    /// "shard still refilling" when the shard still lacked units after
    /// its rounds (other clients took them first): try again.
    pub fn reserve<C: FanOut>(
        &self,
        con: &mut C,
        user: &str,
        order: &str,
        quantity: i64,
    ) -> RedisResult<Reservation> {
        block(self.reserve_in(&mut Blocking(con), user, order, quantity))
    }

    /// [`SpreadStock::reserve`] over any [`FanIo`].
    pub(crate) async fn reserve_in<C: FanIo>(
        &self,
        con: &mut C,
        user: &str,
        order: &str,
        quantity: i64,
    ) -> RedisResult<Reservation> {
        let i = self.shard_of(user);
        let a = self.with_now(vec![arg(user), arg(order), arg(quantity)]);
        for round in 0..=self.rounds {
            let v = self.run_in(con, "STOCK.RESERVE", i, &a).await?;
            let r = array(&v)?;
            if r.len() != 3 {
                return Err(bad_reply("STOCK.RESERVE", &v));
            }
            let status = match text(&r[0])?.as_str() {
                "OK" => ReserveStatus::Ok,
                "SOLDOUT" => ReserveStatus::SoldOut,
                "LIMIT" => ReserveStatus::Limit,
                "REFILL" => {
                    if round < self.rounds {
                        self.refill_in(con, i, quantity).await?;
                    }
                    continue;
                }
                _ => return Err(bad_reply("STOCK.RESERVE", &v)),
            };
            return Ok(Reservation {
                status,
                left: int(&r[1])?,
                lease_end: int(&r[2])?,
            });
        }
        Err(RedisError::from((
            ErrorKind::TryAgain,
            "hotpath: shard still refilling, try again",
        )))
    }

    /// `STOCK.CONFIRM` of the user's order on the user's shard.
    pub fn confirm<C: ConnectionLike>(
        &self,
        con: &mut C,
        user: &str,
        order: &str,
    ) -> RedisResult<bool> {
        block(self.confirm_in(&mut Blocking(con), user, order))
    }

    /// [`SpreadStock::confirm`] over any [`OneIo`].
    pub(crate) async fn confirm_in<C: OneIo>(
        &self,
        con: &mut C,
        user: &str,
        order: &str,
    ) -> RedisResult<bool> {
        let a = self.with_now(vec![arg(order)]);
        Ok(int(&self
            .run_in(con, "STOCK.CONFIRM", self.shard_of(user), &a)
            .await?)?
            == 1)
    }

    /// `STOCK.RELEASE` of the user's order on the user's shard.
    pub fn release<C: ConnectionLike>(
        &self,
        con: &mut C,
        user: &str,
        order: &str,
    ) -> RedisResult<bool> {
        block(self.release_in(&mut Blocking(con), user, order))
    }

    /// [`SpreadStock::release`] over any [`OneIo`].
    pub(crate) async fn release_in<C: OneIo>(
        &self,
        con: &mut C,
        user: &str,
        order: &str,
    ) -> RedisResult<bool> {
        Ok(int(&self
            .run_in(con, "STOCK.RELEASE", self.shard_of(user), &[arg(order)])
            .await?)?
            == 1)
    }

    /// `STOCK.POOL` on shard 0.
    pub fn pool<C: ConnectionLike>(&self, con: &mut C) -> RedisResult<StockPool> {
        block(self.pool_in(&mut Blocking(con)))
    }

    /// [`SpreadStock::pool`] over any [`OneIo`].
    pub(crate) async fn pool_in<C: OneIo>(&self, con: &mut C) -> RedisResult<StockPool> {
        let v = self.run_in(con, "STOCK.POOL", 0, &[]).await?;
        // A RESP2 array of fields and values, or a RESP3 map.
        let fields = crate::replies::pairs(&v)?;
        let get = |name: &str| -> RedisResult<&Value> {
            fields
                .iter()
                .find(|(k, _)| text(k).is_ok_and(|t| t == name))
                .map(|(_, v)| *v)
                .ok_or_else(|| bad_reply("STOCK.POOL", &v))
        };
        let list = array(get("pending")?)?;
        let mut pending = Vec::new();
        for t in list.chunks(3) {
            if t.len() != 3 {
                return Err(bad_reply("STOCK.POOL", &v));
            }
            pending.push((text(&t[0])?, int(&t[1])? as u32, int(&t[2])?));
        }
        Ok(StockPool {
            total: int(get("total")?)?,
            free: int(get("free")?)?,
            transit: int(get("transit")?)?,
            open: int(get("open")?)?,
            pending,
        })
    }

    /// The pool and every shard's counts.
    pub fn info<C: FanOut>(&self, con: &mut C) -> RedisResult<SpreadStockInfo> {
        block(self.info_in(&mut Blocking(con)))
    }

    /// [`SpreadStock::info`] over any [`FanIo`].
    pub(crate) async fn info_in<C: FanIo>(&self, con: &mut C) -> RedisResult<SpreadStockInfo> {
        let pool = self.pool_in(con).await?;
        let calls = self.shards.all(self.backend, "STOCK.INFO", &[]);
        let mut shards = Vec::new();
        for v in self.exec.fan_out(con, &calls).await? {
            shards
                .push(crate::replies::stock_info(&v)?.ok_or_else(|| bad_reply("STOCK.INFO", &v))?);
        }
        Ok(SpreadStockInfo { pool, shards })
    }

    /// Opens a transfer on the pool: (status, units, free, open).
    pub fn transfer<C: ConnectionLike>(
        &self,
        con: &mut C,
        id: &str,
        shard: u32,
        delta: i64,
    ) -> RedisResult<(String, i64, i64, i64)> {
        block(self.transfer_in(&mut Blocking(con), id, shard, delta))
    }

    /// [`SpreadStock::transfer`] over any [`OneIo`].
    pub(crate) async fn transfer_in<C: OneIo>(
        &self,
        con: &mut C,
        id: &str,
        shard: u32,
        delta: i64,
    ) -> RedisResult<(String, i64, i64, i64)> {
        let v = self
            .run_in(con, "STOCK.TRANSFER", 0, &[arg(id), arg(shard), arg(delta)])
            .await?;
        let a = array(&v)?;
        if a.len() != 4 {
            return Err(bad_reply("STOCK.TRANSFER", &v));
        }
        Ok((text(&a[0])?, int(&a[1])?, int(&a[2])?, int(&a[3])?))
    }

    /// Applies a transfer on its shard and settles it on the pool; the
    /// signed units applied.
    pub fn finish<C: ConnectionLike>(
        &self,
        con: &mut C,
        id: &str,
        shard: u32,
        delta: i64,
    ) -> RedisResult<i64> {
        block(self.finish_in(&mut Blocking(con), id, shard, delta))
    }

    /// [`SpreadStock::finish`] over any [`OneIo`].
    pub(crate) async fn finish_in<C: OneIo>(
        &self,
        con: &mut C,
        id: &str,
        shard: u32,
        delta: i64,
    ) -> RedisResult<i64> {
        let v = self
            .run_in(con, "STOCK.APPLY", shard, &[arg(id), arg(delta)])
            .await?;
        let a = array(&v)?;
        let applied = int(a.first().ok_or_else(|| bad_reply("STOCK.APPLY", &v))?)?;
        self.run_in(con, "STOCK.SETTLE", 0, &[arg(id), arg(applied)])
            .await?;
        Ok(applied)
    }

    /// Finishes every transfer the pool lists as open (a crashed client's):
    /// how many.
    pub fn recover<C: ConnectionLike>(&self, con: &mut C) -> RedisResult<usize> {
        block(self.recover_in(&mut Blocking(con)))
    }

    /// [`SpreadStock::recover`] over any [`OneIo`].
    pub(crate) async fn recover_in<C: OneIo>(&self, con: &mut C) -> RedisResult<usize> {
        let p = self.pool_in(con).await?;
        for (id, shard, delta) in &p.pending {
            self.finish_in(con, id, *shard, *delta).await?;
        }
        Ok(p.pending.len())
    }

    async fn chunk_in<C: OneIo>(&self, con: &mut C) -> RedisResult<i64> {
        if let Some(c) = self.chunk {
            return Ok(c);
        }
        let total = self.pool_in(con).await?.total;
        Ok((total / (16 * i64::from(self.shards.n()))).max(1))
    }

    /// Refills shard `i` for a buyer of `quantity` units (docs/stock.md,
    /// the refill dance): from the pool; when it is dry, open transfers
    /// finished or the other shards' available units handed back; when
    /// none is left anywhere, the shard is marked dry.
    pub fn refill<C: FanOut>(&self, con: &mut C, i: u32, quantity: i64) -> RedisResult<()> {
        block(self.refill_in(&mut Blocking(con), i, quantity))
    }

    /// [`SpreadStock::refill`] over any [`FanIo`].
    pub(crate) async fn refill_in<C: FanIo>(
        &self,
        con: &mut C,
        i: u32,
        quantity: i64,
    ) -> RedisResult<()> {
        let want = quantity.max(self.chunk_in(con).await?);
        let id = transfer_id(i);
        let (status, units, _, open) = self.transfer_in(con, &id, i, want).await?;
        if status == "OPEN" && units > 0 {
            self.finish_in(con, &id, i, units).await?;
            return Ok(());
        }
        if open > 0 {
            self.recover_in(con).await?;
            return Ok(());
        }
        // The sweep: hand back what the other shards have available.
        let calls = self.shards.all(self.backend, "STOCK.INFO", &[]);
        let infos = self.exec.fan_out(con, &calls).await?;
        let mut got = 0;
        for (j, v) in infos.iter().enumerate() {
            let j = j as u32;
            if j == i || got >= want {
                continue;
            }
            let avail = crate::replies::stock_info(v)?.map_or(0, |s| s.available);
            if avail <= 0 {
                continue;
            }
            let take = avail.min(want - got);
            let hid = transfer_id(j);
            self.transfer_in(con, &hid, j, -take).await?;
            got -= self.finish_in(con, &hid, j, -take).await?;
        }
        if got > 0 {
            // Back to the pool's refill at once: handed-back units do not
            // wait in the pool, where a shard marked dry meanwhile by
            // another client's sweep would never ask for them.
            let id = transfer_id(i);
            let (status, units, _, _) = self.transfer_in(con, &id, i, want).await?;
            if status == "OPEN" && units > 0 {
                self.finish_in(con, &id, i, units).await?;
            }
            return Ok(());
        }
        // Nothing anywhere: the shard's REFILL becomes SOLDOUT.
        self.run_in(con, "STOCK.APPLY", i, &[arg(transfer_id(i)), arg(0)])
            .await?;
        Ok(())
    }

    /// The cross-shard law, evaluated from the ledgers: problems found
    /// (none: `free + in-transit + Σ shards total = total`). Exact when
    /// no transfer moves during the call.
    pub fn audit<C: FanOut>(&self, con: &mut C) -> RedisResult<Vec<String>> {
        block(self.audit_in(&mut Blocking(con)))
    }

    /// [`SpreadStock::audit`] over any [`FanIo`].
    pub(crate) async fn audit_in<C: FanIo>(&self, con: &mut C) -> RedisResult<Vec<String>> {
        let info = self.info_in(con).await?;
        let mut problems = Vec::new();
        let mut in_transit = 0;
        if info.pool.open > info.pool.pending.len() as i64 {
            problems.push(format!(
                "{} open transfers, listed {}",
                info.pool.open,
                info.pool.pending.len()
            ));
        }
        for (id, shard, delta) in &info.pool.pending {
            let key = format!("{}:applied", self.shards.keys()[*shard as usize]);
            let applied: Option<i64> = redis::from_owned_redis_value(
                con.query(redis::cmd("HGET").arg(&key).arg(id)).await?,
            )?;
            match (*delta > 0, applied) {
                (true, None) => in_transit += delta,
                (false, Some(a)) => in_transit -= a,
                _ => {}
            }
        }
        let held: i64 = info.shards.iter().map(|s| s.total).sum();
        if info.pool.free + in_transit + held != info.pool.total {
            problems.push(format!(
                "law: free {} + in-transit {in_transit} + shards {held} != total {}",
                info.pool.free, info.pool.total
            ));
        }
        for (i, s) in info.shards.iter().enumerate() {
            if s.available + s.reserved + s.sold != s.total {
                problems.push(format!("shard {i}: counts do not add up"));
            }
        }
        Ok(problems)
    }
}

#[cfg(feature = "aio")]
impl AsyncSpread<'_, SpreadStock> {
    /// Creates every shard (shard 0, with the pool of `total`, first).
    pub async fn create<C: AioCon>(
        &self,
        con: &mut C,
        total: i64,
        limit: Option<i64>,
        lease_ms: Option<i64>,
        ttl: Option<i64>,
    ) -> RedisResult<bool> {
        self.0
            .create_in(&mut Nonblocking(con), total, limit, lease_ms, ttl)
            .await
    }

    /// `STOCK.RESERVE` on the user's shard, refilling it as needed: OK,
    /// LIMIT or SOLDOUT (the whole SKU: the shard was marked dry). An error
    /// "shard still refilling" when the shard still lacked units after
    /// its rounds (other clients took them first): try again.
    pub async fn reserve<C: AioCon>(
        &self,
        con: &mut C,
        user: &str,
        order: &str,
        quantity: i64,
    ) -> RedisResult<Reservation> {
        self.0
            .reserve_in(&mut Nonblocking(con), user, order, quantity)
            .await
    }

    /// `STOCK.CONFIRM` of the user's order on the user's shard.
    pub async fn confirm<C: AioCon>(
        &self,
        con: &mut C,
        user: &str,
        order: &str,
    ) -> RedisResult<bool> {
        self.0.confirm_in(&mut Nonblocking(con), user, order).await
    }

    /// `STOCK.RELEASE` of the user's order on the user's shard.
    pub async fn release<C: AioCon>(
        &self,
        con: &mut C,
        user: &str,
        order: &str,
    ) -> RedisResult<bool> {
        self.0.release_in(&mut Nonblocking(con), user, order).await
    }

    /// `STOCK.POOL` on shard 0.
    pub async fn pool<C: AioCon>(&self, con: &mut C) -> RedisResult<StockPool> {
        self.0.pool_in(&mut Nonblocking(con)).await
    }

    /// The pool and every shard's counts.
    pub async fn info<C: AioCon>(&self, con: &mut C) -> RedisResult<SpreadStockInfo> {
        self.0.info_in(&mut Nonblocking(con)).await
    }

    /// Opens a transfer on the pool: (status, units, free, open).
    pub async fn transfer<C: AioCon>(
        &self,
        con: &mut C,
        id: &str,
        shard: u32,
        delta: i64,
    ) -> RedisResult<(String, i64, i64, i64)> {
        self.0
            .transfer_in(&mut Nonblocking(con), id, shard, delta)
            .await
    }

    /// Applies a transfer on its shard and settles it on the pool; the
    /// signed units applied.
    pub async fn finish<C: AioCon>(
        &self,
        con: &mut C,
        id: &str,
        shard: u32,
        delta: i64,
    ) -> RedisResult<i64> {
        self.0
            .finish_in(&mut Nonblocking(con), id, shard, delta)
            .await
    }

    /// Finishes every transfer the pool lists as open (a crashed client's):
    /// how many.
    pub async fn recover<C: AioCon>(&self, con: &mut C) -> RedisResult<usize> {
        self.0.recover_in(&mut Nonblocking(con)).await
    }

    /// Refills shard `i` for a buyer of `quantity` units (docs/stock.md,
    /// the refill dance): from the pool; when it is dry, open transfers
    /// finished or the other shards' available units handed back; when
    /// none is left anywhere, the shard is marked dry.
    pub async fn refill<C: AioCon>(&self, con: &mut C, i: u32, quantity: i64) -> RedisResult<()> {
        self.0.refill_in(&mut Nonblocking(con), i, quantity).await
    }

    /// The cross-shard law, evaluated from the ledgers: problems found
    /// (none: `free + in-transit + Σ shards total = total`). Exact when
    /// no transfer moves during the call.
    pub async fn audit<C: AioCon>(&self, con: &mut C) -> RedisResult<Vec<String>> {
        self.0.audit_in(&mut Nonblocking(con)).await
    }
}
