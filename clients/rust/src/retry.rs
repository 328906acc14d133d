//! The retry policy of the spread handles (docs/spread.md, "Retries under
//! topology change"): the same rules as the Python client's
//! `hotpath.retry`.
//!
//! The `redis` crate's cluster client retries `TRYAGAIN`, `CLUSTERDOWN`
//! and I/O errors by itself, as many times and as long as its builder
//! says (`retries`, `min_retry_wait`, `max_retry_wait`: 16 times, waits
//! growing from 1.28 s by default, so minutes in all). A spread handle
//! retries on top of it with a bounded policy, whatever the connection's
//! own settings:
//!
//! * **Errors that say nothing was done** are retried for every command:
//!   `TRYAGAIN` (a slot half-moved; hotpath answers it while its slot is
//!   `MIGRATING` or `IMPORTING`), `MOVED`, `ASK`, `CLUSTERDOWN`,
//!   `MASTERDOWN`, `LOADING`, and a connection refused (nothing was sent).
//! * **Errors with an unknown outcome** (a connection reset, dropped or
//!   timed out once the command was sent: it may have run) are retried only
//!   for commands that give the same state when run twice
//!   ([`RESEND_UNSAFE`] lists those that do not: `LIKE.TOGGLE`,
//!   `RANK.INCR` and `RANK.DECR`, whose error is returned at once).
//! * Anything else (the command's own error reply) is final.
//!
//! Retries go on until `deadline` (10 s by default) has passed since the
//! call began, sleeping `first` (20 ms), then twice as long each time up
//! to `max` (500 ms), each sleep drawn from its upper half (jitter). No
//! attempt starts that would end past the deadline, judged by the longest
//! attempt so far (one attempt includes the cluster client's own
//! retries), so the caller gets the last error within `deadline`, or after
//! the first attempt when that one alone took longer.

use std::time::{Duration, Instant};

use redis::{ErrorKind, RedisError, RedisResult};

/// What an error says of the command that got it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Nothing was done: safe to send again, whatever the command.
    NotApplied,
    /// The command may have run: safe to send again only if running it
    /// twice gives the same state.
    Unknown,
}

/// Commands that must not be sent again after an unknown outcome: a second
/// run changes the state again (a toggle undone, an increment doubled).
pub const RESEND_UNSAFE: [&str; 3] = ["LIKE.TOGGLE", "RANK.INCR", "RANK.DECR"];

/// What `e` says of its command; `None` for a final error.
pub fn classify(e: &RedisError) -> Option<Outcome> {
    match e.kind() {
        ErrorKind::TryAgain
        | ErrorKind::Moved
        | ErrorKind::Ask
        | ErrorKind::ClusterDown
        | ErrorKind::MasterDown
        | ErrorKind::BusyLoadingError
        | ErrorKind::ClusterConnectionNotFound => return Some(Outcome::NotApplied),
        _ => {}
    }
    // An error reply that a wrapper kept as text (a shard's error).
    let code = e.code().unwrap_or("");
    if [
        "TRYAGAIN",
        "MOVED",
        "ASK",
        "CLUSTERDOWN",
        "MASTERDOWN",
        "LOADING",
    ]
    .contains(&code)
    {
        return Some(Outcome::NotApplied);
    }
    if e.is_connection_refusal() {
        return Some(Outcome::NotApplied);
    }
    if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() {
        return Some(Outcome::Unknown);
    }
    None
}

/// Whether `command`'s error `e` may be retried.
pub fn retryable(e: &RedisError, command: &str) -> bool {
    match classify(e) {
        Some(Outcome::NotApplied) => true,
        Some(Outcome::Unknown) => !RESEND_UNSAFE
            .iter()
            .any(|c| c.eq_ignore_ascii_case(command)),
        None => false,
    }
}

/// Time as the policy sees it: a real clock, or a fake one in tests.
pub trait Clock {
    /// Time since some fixed instant.
    fn now(&mut self) -> Duration;
    /// Waits `d`.
    fn sleep(&mut self, d: Duration);
}

/// The real clock.
pub struct SystemClock(Instant);

impl Default for SystemClock {
    fn default() -> Self {
        SystemClock(Instant::now())
    }
}

impl Clock for SystemClock {
    fn now(&mut self) -> Duration {
        self.0.elapsed()
    }
    fn sleep(&mut self, d: Duration) {
        std::thread::sleep(d);
    }
}

/// How long and how often a spread handle retries (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RetryPolicy {
    /// How long after the call began a retry may still end.
    pub deadline: Duration,
    /// The first sleep.
    pub first: Duration,
    /// The longest sleep.
    pub max: Duration,
}

impl Default for RetryPolicy {
    /// 10 s, 20 ms doubling to 500 ms.
    fn default() -> Self {
        RetryPolicy {
            deadline: Duration::from_secs(10),
            first: Duration::from_millis(20),
            max: Duration::from_millis(500),
        }
    }
}

/// A small xorshift generator for the jitter (no dependency).
fn jitter_source() -> impl FnMut() -> f64 {
    let mut x = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1)
        | 1;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 11) as f64 / (1u64 << 53) as f64
    }
}

impl RetryPolicy {
    /// No retry at all: the connection's own retries only.
    pub const NEVER: RetryPolicy = RetryPolicy {
        deadline: Duration::ZERO,
        first: Duration::from_millis(20),
        max: Duration::from_millis(500),
    };

    /// The sleeps between attempts, without end: `first` doubling up to
    /// `max`, each drawn from `[d/2, d]` with `rnd()` in `[0, 1)`.
    pub fn delays<'a>(
        &self,
        mut rnd: impl FnMut() -> f64 + 'a,
    ) -> impl Iterator<Item = Duration> + 'a {
        let max = self.max.max(Duration::from_millis(1));
        let mut d = self.first.max(Duration::from_millis(1));
        std::iter::from_fn(move || {
            let out = d / 2 + d.mul_f64(rnd() / 2.0);
            d = (d * 2).min(max);
            Some(out)
        })
    }

    /// `f()`, tried again while it fails with an error [`retryable`] for
    /// `command` and the deadline allows; else its last error.
    pub fn run<T>(&self, command: &str, mut f: impl FnMut() -> RedisResult<T>) -> RedisResult<T> {
        let mut out = self.run_many_with(&[command], |_| vec![f()], &mut SystemClock::default());
        out.pop().expect("one outcome")
    }

    /// Runs calls `0 … commands.len()-1` through `step(indexes)`, which
    /// answers each call's outcome in order; the calls that failed with an
    /// error [`retryable`] for their command go again (only those) until
    /// the deadline. Returns every call's last outcome.
    pub fn run_many<T>(
        &self,
        commands: &[&str],
        step: impl FnMut(&[usize]) -> Vec<RedisResult<T>>,
    ) -> Vec<RedisResult<T>> {
        self.run_many_with(commands, step, &mut SystemClock::default())
    }

    /// [`run_many`](Self::run_many) on the clock `clock`.
    pub fn run_many_with<T>(
        &self,
        commands: &[&str],
        mut step: impl FnMut(&[usize]) -> Vec<RedisResult<T>>,
        clock: &mut dyn Clock,
    ) -> Vec<RedisResult<T>> {
        let mut rounds = Rounds::new(self, commands, clock.now());
        loop {
            let began = clock.now();
            let res = step(rounds.pending());
            match rounds.record(res, began, clock.now()) {
                Some(d) => clock.sleep(d),
                None => return rounds.finish(),
            }
        }
    }
}

/// The rounds of [`RetryPolicy::run_many_with`] as a state machine, for a
/// caller that runs each round itself (the async spread handles await
/// theirs): run the calls of [`pending`](Rounds::pending), hand their
/// outcomes to [`record`](Rounds::record), sleep what it answers and go
/// again, or [`finish`](Rounds::finish) when it answers `None`.
pub(crate) struct Rounds<'a, T> {
    deadline: Duration,
    commands: &'a [&'a str],
    start: Duration,
    out: Vec<Option<RedisResult<T>>>,
    pending: Vec<usize>,
    delays: Box<dyn Iterator<Item = Duration> + Send + 'a>,
    longest: Duration,
}

impl<'a, T> Rounds<'a, T> {
    /// The first round (every call) of `commands`, begun at `now`.
    pub(crate) fn new(policy: &RetryPolicy, commands: &'a [&'a str], now: Duration) -> Self {
        Rounds {
            deadline: policy.deadline,
            commands,
            start: now,
            out: (0..commands.len()).map(|_| None).collect(),
            pending: (0..commands.len()).collect(),
            delays: Box::new(policy.delays(jitter_source())),
            longest: Duration::ZERO,
        }
    }

    /// The calls this round runs.
    pub(crate) fn pending(&self) -> &[usize] {
        &self.pending
    }

    /// The outcomes of this round's calls (in the order of `pending`),
    /// which began at `began` and ended at `now`: the sleep before the
    /// next round (of the calls that failed with an error [`retryable`]
    /// for their command), or `None` when there is none within the
    /// deadline.
    pub(crate) fn record(
        &mut self,
        res: Vec<RedisResult<T>>,
        began: Duration,
        now: Duration,
    ) -> Option<Duration> {
        self.longest = self.longest.max(now.saturating_sub(began));
        let mut again = Vec::new();
        for (&i, r) in self.pending.iter().zip(res) {
            if let Err(e) = &r {
                if retryable(e, self.commands[i]) {
                    again.push(i);
                }
            }
            self.out[i] = Some(r);
        }
        let d = self.delays.next().expect("endless");
        // No attempt that would end past the deadline (judged by the
        // longest attempt so far: the connection's own retries).
        if again.is_empty() || now.saturating_sub(self.start) + d + self.longest > self.deadline {
            return None;
        }
        self.pending = again;
        Some(d)
    }

    /// Every call's last outcome.
    pub(crate) fn finish(self) -> Vec<RedisResult<T>> {
        self.out
            .into_iter()
            .map(|r| r.expect("every call ran"))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fake {
        t: Duration,
        slept: Vec<Duration>,
    }

    impl Clock for Fake {
        fn now(&mut self) -> Duration {
            self.t
        }
        fn sleep(&mut self, d: Duration) {
            self.slept.push(d);
            self.t += d;
        }
    }

    fn fake() -> Fake {
        Fake {
            t: Duration::ZERO,
            slept: Vec::new(),
        }
    }

    fn err(kind: ErrorKind, code: &str) -> RedisError {
        RedisError::from((kind, "test", code.to_string()))
    }

    fn io(kind: std::io::ErrorKind) -> RedisError {
        RedisError::from(std::io::Error::new(kind, "test"))
    }

    #[test]
    fn the_documented_defaults() {
        let p = RetryPolicy::default();
        assert_eq!(
            (p.deadline, p.first, p.max),
            (
                Duration::from_secs(10),
                Duration::from_millis(20),
                Duration::from_millis(500)
            )
        );
        let top: Vec<u128> = p
            .delays(|| 1.0 - 1e-12)
            .take(8)
            .map(|d| d.as_millis())
            .collect();
        assert_eq!(top, [20, 40, 80, 160, 320, 500, 500, 500]);
        let low: Vec<u128> = p.delays(|| 0.0).take(3).map(|d| d.as_millis()).collect();
        assert_eq!(low, [10, 20, 40]);
    }

    #[test]
    fn which_errors_are_retried() {
        assert_eq!(
            classify(&err(ErrorKind::TryAgain, "x")),
            Some(Outcome::NotApplied)
        );
        assert_eq!(
            classify(&err(ErrorKind::ClusterDown, "x")),
            Some(Outcome::NotApplied)
        );
        assert_eq!(
            classify(&io(std::io::ErrorKind::ConnectionRefused)),
            Some(Outcome::NotApplied)
        );
        assert_eq!(
            classify(&io(std::io::ErrorKind::ConnectionReset)),
            Some(Outcome::Unknown)
        );
        assert_eq!(
            classify(&io(std::io::ErrorKind::UnexpectedEof)),
            Some(Outcome::Unknown)
        );
        assert_eq!(classify(&err(ErrorKind::ResponseError, "ERR")), None);
        let lost = io(std::io::ErrorKind::ConnectionReset);
        assert!(retryable(&lost, "LIKE.ADD"));
        assert!(!retryable(&lost, "LIKE.TOGGLE"));
        assert!(!retryable(&lost, "rank.incr"));
        assert!(!retryable(&lost, "RANK.DECR"));
        assert!(retryable(&err(ErrorKind::TryAgain, "x"), "RANK.INCR"));
    }

    #[test]
    fn retries_until_it_works() {
        let mut c = fake();
        let mut left = 3;
        let out = RetryPolicy::default().run_many_with(
            &["RANK.INCR"],
            |_| {
                if left > 0 {
                    left -= 1;
                    vec![Err(err(ErrorKind::TryAgain, "TRYAGAIN"))]
                } else {
                    vec![Ok(7)]
                }
            },
            &mut c,
        );
        assert_eq!(out[0].as_ref().unwrap(), &7);
        assert_eq!(c.slept.len(), 3);
    }

    #[test]
    fn gives_up_at_the_deadline() {
        let mut c = fake();
        let mut calls = 0;
        let p = RetryPolicy {
            deadline: Duration::from_secs(2),
            ..Default::default()
        };
        let out = p.run_many_with(
            &["LIKE.ADD"],
            |_| {
                calls += 1;
                vec![Err::<(), _>(err(ErrorKind::ClusterDown, "CLUSTERDOWN"))]
            },
            &mut c,
        );
        assert!(out[0].is_err());
        assert!(c.t <= Duration::from_secs(2), "{:?}", c.t);
        assert!(c.t > Duration::from_millis(1500), "{:?}", c.t);
        assert!(calls > 5);
        let mut c2 = fake();
        let mut n = 0;
        let out = RetryPolicy::NEVER.run_many_with(
            &["LIKE.ADD"],
            |_| {
                n += 1;
                vec![Err::<(), _>(err(ErrorKind::TryAgain, "TRYAGAIN"))]
            },
            &mut c2,
        );
        assert!(out[0].is_err());
        assert_eq!((n, c2.slept.len()), (1, 0));
    }

    #[test]
    fn slow_attempts_count_against_the_deadline() {
        let clock = std::cell::RefCell::new(fake());
        struct Shared<'a>(&'a std::cell::RefCell<Fake>);
        impl Clock for Shared<'_> {
            fn now(&mut self) -> Duration {
                self.0.borrow().t
            }
            fn sleep(&mut self, d: Duration) {
                self.0.borrow_mut().sleep(d)
            }
        }
        let p = RetryPolicy {
            deadline: Duration::from_secs(6),
            ..Default::default()
        };
        let out = p.run_many_with(
            &["LIKE.ADD"],
            |_| {
                clock.borrow_mut().t += Duration::from_millis(2800);
                vec![Err::<(), _>(err(ErrorKind::ClusterDown, "CLUSTERDOWN"))]
            },
            &mut Shared(&clock),
        );
        assert!(out[0].is_err());
        let c = clock.borrow();
        assert_eq!(c.slept.len(), 1);
        assert!(c.t <= Duration::from_secs(6), "{:?}", c.t);
    }

    #[test]
    fn final_errors_and_unsafe_resends_are_not_retried() {
        for (e, command) in [
            (err(ErrorKind::ResponseError, "ERR"), "LIKE.ADD"),
            (io(std::io::ErrorKind::ConnectionReset), "LIKE.TOGGLE"),
        ] {
            let mut c = fake();
            let mut n = 0;
            let mut e = Some(e);
            let out = RetryPolicy::default().run_many_with(
                &[command],
                |_| {
                    n += 1;
                    vec![Err::<(), _>(
                        e.take()
                            .unwrap_or_else(|| err(ErrorKind::ResponseError, "ERR")),
                    )]
                },
                &mut c,
            );
            assert!(out[0].is_err());
            assert_eq!(n, 1, "{command}");
        }
    }

    #[test]
    fn run_many_sends_again_only_what_failed() {
        let mut c = fake();
        let mut seen: Vec<Vec<usize>> = Vec::new();
        let out = RetryPolicy::default().run_many_with(
            &["A", "B", "C"],
            |idx| {
                seen.push(idx.to_vec());
                let round = seen.len();
                idx.iter()
                    .map(|&i| {
                        if i == 1 && round < 3 {
                            Err(err(ErrorKind::TryAgain, "TRYAGAIN"))
                        } else {
                            Ok(i)
                        }
                    })
                    .collect()
            },
            &mut c,
        );
        let got: Vec<usize> = out.into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(got, [0, 1, 2]);
        assert_eq!(seen, [vec![0, 1, 2], vec![1], vec![1]]);
    }
}
