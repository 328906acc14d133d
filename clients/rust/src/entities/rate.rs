//! The RATE family's entity handle, [`Rate`], and its commands.

use super::*;

entity!(
    /// A rate limiter; the key is the limiter (docs/rate.md).
    Rate
);

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
