//! The pure logic of a delay queue: job records, the lease rule, retries
//! with backoff and dead letters. Nothing here reads a clock or touches
//! Redis; the handlers pass `now` (unix ms).
//!
//! One Sorted Set scores every pending job by the instant it can next be
//! taken: its due time while it waits, the end of its lease while a
//! consumer holds it. A poll takes the jobs scored at or before `now`, so
//! a lease that ran out puts its job back in line by data and time alone,
//! the same on every replica and after any restart (the visibility-timeout
//! rule of SQS). Each delivery gets a receipt from a queue-wide counter;
//! only the latest delivery's receipt acks, nacks or extends the job, so a
//! consumer whose lease ran out and whose job went to someone else can no
//! longer touch it.

use crate::args::parse_i64_plain;

/// The largest integer stored (receipts, instants, attempts): 2^53 − 1,
/// exact in the Lua twins' doubles.
pub const MAX_INT: i64 = (1 << 53) - 1;
/// The latest `NOW` or `AT` accepted, 9999-12-31T23:59:59.999Z in unix ms.
pub const MAX_TIME_MS: i64 = 253_402_300_799_999;
/// The longest delay, lease, backoff or BLOCK timeout: 100 years in ms.
pub const MAX_DELAY_MS: i64 = 3_153_600_000_000;
/// The most jobs one call takes, lists or re-drives (SQS takes at most 10
/// messages per receive): a poll of 1,000 jobs measured about 1.5 ms, one
/// of 100 stays far below the 1 ms every command must keep to.
pub const MAX_COUNT: i64 = 100;
/// The most deliveries a job may have.
pub const MAX_ATTEMPTS: i64 = 1_000_000;
/// Deliveries allowed when ADD gives no `ATTEMPTS`.
pub const DEFAULT_ATTEMPTS: i64 = 5;
/// The largest payload, 1 MiB: a poll of many jobs stays short.
pub const MAX_PAYLOAD: usize = 1 << 20;
/// The most due entries one poll looks at (deliveries and dead letters
/// together), so that a backlog of exhausted jobs never makes one call
/// long.
pub const MAX_EXAMINE: usize = 200;

/// A job as stored in `B:jobs`: `<attempt>:<max>:<receipt>:<payload>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    /// Deliveries so far.
    pub attempt: i64,
    /// The most deliveries allowed.
    pub max: i64,
    /// The receipt of the latest delivery while it may still be acked;
    /// 0 once the job is back in line (nacked, re-driven, new).
    pub receipt: i64,
    pub payload: Vec<u8>,
}

fn int(b: &[u8]) -> Option<i64> {
    parse_i64_plain(b).filter(|&v| (0..=MAX_INT).contains(&v))
}

impl Job {
    /// Returns a new job, not yet delivered.
    pub fn new(payload: &[u8], max: i64) -> Job {
        Job {
            attempt: 0,
            max,
            receipt: 0,
            payload: payload.to_vec(),
        }
    }

    /// Parses a stored record; None for anything the family never writes.
    pub fn parse(v: &[u8]) -> Option<Job> {
        let mut it = v.splitn(4, |&c| c == b':');
        let j = Job {
            attempt: int(it.next()?)?,
            max: int(it.next()?)?,
            receipt: int(it.next()?)?,
            payload: it.next()?.to_vec(),
        };
        (j.max >= 1 && j.max <= MAX_ATTEMPTS && j.attempt <= j.max).then_some(j)
    }

    /// Returns the stored record.
    pub fn format(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(32 + self.payload.len());
        for v in [self.attempt, self.max, self.receipt] {
            out.extend_from_slice(itoa::Buffer::new().format(v).as_bytes());
            out.push(b':');
        }
        out.extend_from_slice(&self.payload);
        out
    }

    /// Returns true when a due job has no delivery left and goes to the
    /// dead letters instead.
    pub fn exhausted(&self) -> bool {
        self.attempt >= self.max
    }

    /// Returns true when `receipt` is this job's latest delivery.
    pub fn holds(&self, receipt: i64) -> bool {
        receipt > 0 && self.receipt == receipt
    }
}

/// How a nacked job waits before its next delivery.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Retry {
    /// A fixed delay in ms.
    Delay(i64),
    /// `base × 2^(attempt − 1)` ms, at most `cap` ms.
    Backoff { base: i64, cap: i64 },
}

impl Retry {
    /// Returns the wait after delivery number `attempt` (≥ 1) failed.
    pub fn wait(self, attempt: i64) -> i64 {
        match self {
            Retry::Delay(d) => d,
            Retry::Backoff { base, cap } => {
                let shift = (attempt - 1).clamp(0, 62) as u32;
                let w = (base as i128) << shift;
                w.min(cap as i128) as i64
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_round_trip() {
        let j = Job {
            attempt: 2,
            max: 5,
            receipt: 17,
            payload: b"a:b:\xff".to_vec(),
        };
        assert_eq!(j.format(), b"2:5:17:a:b:\xff");
        assert_eq!(Job::parse(&j.format()), Some(j));
        assert_eq!(Job::new(b"", 3).format(), b"0:3:0:");
        assert_eq!(Job::parse(b"0:3:0:"), Some(Job::new(b"", 3)));
    }

    #[test]
    fn records_refuse_what_is_never_written() {
        for bad in [
            &b""[..],
            b"0:3:0",
            b"0:0:0:",
            b"4:3:0:",
            b"-1:3:0:",
            b"0:3:-2:",
            b"00:3:0:",
            b"0:1000001:0:",
            b"x:3:0:",
            b"0:3:9007199254740992:",
        ] {
            assert_eq!(Job::parse(bad), None, "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn a_job_is_exhausted_after_its_last_delivery() {
        let mut j = Job::new(b"p", 2);
        assert!(!j.exhausted());
        j.attempt = 2;
        assert!(j.exhausted());
    }

    #[test]
    fn only_the_latest_receipt_holds_the_job() {
        let mut j = Job::new(b"p", 2);
        assert!(!j.holds(0));
        j.receipt = 5;
        assert!(j.holds(5));
        assert!(!j.holds(4));
        assert!(!j.holds(0));
    }

    #[test]
    fn backoff_doubles_up_to_its_cap() {
        let b = Retry::Backoff {
            base: 1000,
            cap: 60_000,
        };
        assert_eq!(b.wait(1), 1000);
        assert_eq!(b.wait(2), 2000);
        assert_eq!(b.wait(6), 32_000);
        assert_eq!(b.wait(7), 60_000);
        assert_eq!(b.wait(1_000_000), 60_000);
        let huge = Retry::Backoff {
            base: MAX_DELAY_MS,
            cap: MAX_DELAY_MS,
        };
        assert_eq!(huge.wait(63), MAX_DELAY_MS);
        assert_eq!(Retry::Delay(7).wait(3), 7);
    }
}
