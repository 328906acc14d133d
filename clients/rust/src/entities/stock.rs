//! The STOCK family's entity handle, [`Stock`], and its commands.

use super::*;

entity!(
    /// Flash-sale stock that never oversells (docs/stock.md).
    Stock
);

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
