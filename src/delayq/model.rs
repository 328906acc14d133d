//! The pure logic of a delay queue: job records, receipts, the lease rule,
//! lost leases, retries with backoff and dead letters, and the plan of each
//! write command (given the state read: the writes and the reply, or a
//! [`Refusal`]). Nothing here reads a clock or touches Redis; the handlers
//! pass `now` (unix ms).
//!
//! One Sorted Set scores every pending job by the instant it can next be
//! taken: its due time while it waits, the end of its lease while a
//! consumer holds it. A poll takes the jobs scored at or before `now`, so
//! a lease that ran out puts its job back in line by data and time alone,
//! the same on every replica and after any restart (the visibility-timeout
//! rule of SQS).
//!
//! Each delivery has a receipt, `generation × 10^6 + attempt`. The attempt
//! counts deliveries; the generation comes from a queue-wide counter each
//! time a job's attempts start over (added, replaced, re-driven). So a
//! receipt names one delivery for the queue's whole life, and only the
//! latest delivery of a job still leased acks, nacks or extends it: a
//! consumer whose lease ran out, whose job was given back or re-added, can
//! no longer touch it.

/// The largest integer stored (generations, instants, attempts):
/// 2^53 − 1, exact in the Lua twins' doubles.
pub const MAX_INT: i64 = (1 << 53) - 1;
/// The latest `NOW` or `AT` accepted, 9999-12-31T23:59:59.999Z in unix ms.
pub const MAX_TIME_MS: i64 = 253_402_300_799_999;
/// The longest delay, lease, backoff or BLOCK timeout: 100 years in ms.
pub const MAX_DELAY_MS: i64 = 3_153_600_000_000;
/// The most jobs one call takes, lists or re-drives (SQS takes at most 10
/// messages per receive): a poll of 1,000 jobs measured about 1.5 ms, one
/// of 100 stays far below the 1 ms every command must keep to.
pub const MAX_COUNT: i64 = 100;
/// The most deliveries a job may have: the attempt is the low six decimal
/// digits of a receipt.
pub const MAX_ATTEMPTS: i64 = 999_999;
/// The receipt of a delivery is `generation × RECEIPT_BASE + attempt`.
pub const RECEIPT_BASE: i64 = 1_000_000;
/// The most generations a queue issues, so that receipts stay below 2^53.
pub const MAX_GENERATION: i64 = MAX_INT / RECEIPT_BASE - 1;
/// Deliveries allowed when ADD gives no `ATTEMPTS`.
pub const DEFAULT_ATTEMPTS: i64 = 5;
/// The largest payload, 1 MiB.
pub const MAX_PAYLOAD: usize = 1 << 20;
/// The most due entries one poll looks at (deliveries and dead letters
/// together), so that a backlog of exhausted jobs never makes one call
/// long.
pub const MAX_EXAMINE: usize = 200;

/// The latest instant DELAYQ scores a job at: the latest `NOW` or `AT`
/// plus the longest delay or lease.
pub const MAX_DUE_MS: i64 = MAX_TIME_MS + MAX_DELAY_MS;

/// Reads a `B:due` or `B:dead` score as the instant DELAYQ wrote: a whole
/// millisecond from 0 to [`MAX_DUE_MS`]. Anything else (a fraction, a
/// negative or infinite score, a hand-set 1e300) is not DELAYQ's: `None`,
/// so that the command refuses it as corrupt instead of reading a default
/// (a saturated `i64::MAX`, which the Lua twins' doubles cannot even reply).
pub fn instant(score: f64) -> Option<i64> {
    let ok = score.fract() == 0.0 && (0.0..=MAX_DUE_MS as f64).contains(&score);
    ok.then_some(score as i64)
}

/// A job record's fields before its payload, as stored in `B:jobs`:
/// `<generation>:<attempt>:<max>:<leased>:<payload>`, or, for a job added
/// with `LOSTMAX` (since 2.1.0),
/// `<generation>:<attempt>:<max>:<leased>/<lost>/<lostmax>:<payload>`.
/// The 2.0.0 form is what a job without a cap keeps, so records written
/// before stay valid and read as no cap (and no count).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// Set when the job's attempts started over (added, replaced, re-driven).
    pub gen: i64,
    /// Deliveries so far in this generation.
    pub attempt: i64,
    /// The most deliveries allowed.
    pub max: i64,
    /// True while the latest delivery may still be acked: set by a poll,
    /// cleared when the job is given back, dead-lettered or re-driven.
    pub leased: bool,
    /// Leases of this generation that ran out without an ack or a nack
    /// (counted only for a job with a cap).
    pub lost: i64,
    /// The most deliveries after a lost lease (`LOSTMAX`), if capped.
    pub lost_max: Option<i64>,
}

/// What a poll does with a job it found due.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Due {
    /// Deliver it: the header after the delivery.
    Deliver(Header),
    /// Move it to the dead letters: the header to store (not leased).
    Dead(Header),
}

impl Header {
    /// Returns the header of a job not yet delivered.
    pub fn new(gen: i64, max: i64, lost_max: Option<i64>) -> Header {
        Header {
            gen,
            attempt: 0,
            max,
            leased: false,
            lost: 0,
            lost_max,
        }
    }

    /// Parses a stored record; returns the header and where the payload
    /// starts. None for anything the family never writes.
    pub fn parse(v: &[u8]) -> Option<(Header, usize)> {
        // Canonical non-negative integers, each followed by ':' (or, after
        // `leased`, by '/' for the lost-lease fields); hand-rolled: this
        // runs for every job a command touches.
        fn num(v: &[u8], i: &mut usize) -> Option<(i64, u8)> {
            let start = *i;
            let mut n: i64 = 0;
            while *i < v.len() && v[*i].is_ascii_digit() && *i - start < 16 {
                n = n * 10 + i64::from(v[*i] - b'0');
                *i += 1;
            }
            let digits = *i - start;
            let end = *v.get(*i)?;
            if digits == 0 || (digits > 1 && v[start] == b'0') {
                return None;
            }
            *i += 1;
            Some((n, end))
        }
        let mut i = 0;
        let mut nums = [0i64; 4];
        let mut end = b':';
        for (k, slot) in nums.iter_mut().enumerate() {
            let (n, e) = num(v, &mut i)?;
            if e != b':' && !(k == 3 && e == b'/') {
                return None;
            }
            *slot = n;
            end = e;
        }
        let [gen, attempt, max, leased] = nums;
        let (lost, lost_max) = if end == b'/' {
            let (lost, e) = num(v, &mut i)?;
            let (cap, e2) = num(v, &mut i)?;
            if e != b'/' || e2 != b':' {
                return None;
            }
            (lost, Some(cap))
        } else {
            (0, None)
        };
        let h = Header {
            gen,
            attempt,
            max,
            leased: leased == 1,
            lost,
            lost_max,
        };
        let lost_ok = match lost_max {
            None => true,
            // A count past the cap is a dead letter's: never leased.
            Some(cap) => {
                cap <= MAX_ATTEMPTS
                    && lost <= attempt
                    && lost <= cap + 1
                    && (lost <= cap || leased == 0)
            }
        };
        let valid = (1..=MAX_GENERATION).contains(&gen)
            && (1..=MAX_ATTEMPTS).contains(&max)
            && attempt <= max
            && leased <= 1
            && (attempt > 0 || leased == 0)
            && lost_ok;
        valid.then_some((h, i))
    }

    /// Appends the stored record with `payload` to `out`.
    pub fn write(&self, payload: &[u8], out: &mut Vec<u8>) {
        out.clear();
        out.reserve(40 + payload.len());
        let mut b = itoa::Buffer::new();
        for v in [self.gen, self.attempt, self.max, self.leased as i64] {
            out.extend_from_slice(b.format(v).as_bytes());
            out.push(b':');
        }
        if let Some(cap) = self.lost_max {
            out.pop();
            for v in [self.lost, cap] {
                out.push(b'/');
                out.extend_from_slice(b.format(v).as_bytes());
            }
            out.push(b':');
        }
        out.extend_from_slice(payload);
    }

    /// Returns the stored record with `payload`.
    pub fn format(&self, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        self.write(payload, &mut out);
        out
    }

    /// Returns the receipt of the latest delivery.
    pub fn receipt(&self) -> i64 {
        self.gen * RECEIPT_BASE + self.attempt
    }

    /// Returns true when `receipt` is the latest delivery and it is still
    /// leased.
    pub fn holds(&self, receipt: i64) -> bool {
        self.leased && self.attempt > 0 && receipt == self.receipt()
    }

    /// Returns true when a due job has no delivery left and goes to the
    /// dead letters instead.
    pub fn exhausted(&self) -> bool {
        self.attempt >= self.max
    }

    /// Returns true when the job lost more leases than its cap allows: it
    /// went (or goes) to the dead letters for that reason.
    pub fn lost_too_often(&self) -> bool {
        self.lost_max.is_some_and(|cap| self.lost > cap)
    }

    /// Returns the header after one more delivery.
    pub fn delivered(self) -> Header {
        Header {
            attempt: self.attempt + 1,
            leased: true,
            ..self
        }
    }

    /// Returns the header of the same job started over (re-driven) in
    /// generation `gen`: no delivery, no lost lease, the same caps.
    pub fn restarted(self, gen: i64) -> Header {
        Header::new(gen, self.max, self.lost_max)
    }

    /// Decides what a poll does with this job, found due. A job still
    /// marked leased lost its lease (it ran out without an ack or a nack):
    /// with a cap, that is counted, and a count past the cap sends the job
    /// to the dead letters as its last attempt does; else it is delivered.
    pub fn on_due(self) -> Due {
        let mut h = self;
        if h.leased && h.lost_max.is_some() {
            h.lost += 1;
        }
        if h.exhausted() || h.lost_too_often() {
            Due::Dead(Header { leased: false, ..h })
        } else {
            Due::Deliver(h.delivered())
        }
    }
}

/// Returns true when a job is held by a running lease at `now`: its
/// latest delivery was not given back and its `B:due` score (`due`, the
/// lease end) is after `now`. REPLACE and CANCEL (without FORCE) refuse
/// such a job; once the lease ran out it is ready again and they may.
pub fn lease_running(head: &Header, due: Option<i64>, now: i64) -> bool {
    head.leased && due.is_some_and(|t| t > now)
}

/// The most dead letters one DELAYQ.PURGE removes.
pub const MAX_PURGE: usize = MAX_COUNT as usize;

/// Returns how many of the oldest dead letters a purge removes: `total`
/// dead letters, `oldest` the dead-at instants of the oldest ones (oldest
/// first, at most [`MAX_PURGE`] looked at). One is removed while more than
/// `max_len` would stay, or while it went dead more than `max_age` ms
/// before `now`; the first that meets neither limit stops the purge (the
/// later ones are younger).
pub fn purge_count(
    total: usize,
    oldest: &[i64],
    max_len: Option<i64>,
    max_age: Option<i64>,
    now: i64,
) -> usize {
    let mut n = 0;
    for (i, at) in oldest.iter().take(MAX_PURGE).enumerate() {
        let too_many = max_len.is_some_and(|m| (total - i) as i64 > m);
        let too_old = max_age.is_some_and(|a| now - at > a);
        if !(too_many || too_old) {
            break;
        }
        n += 1;
    }
    n
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

// ---------------------------------------------------------------------
// Plans: given a command's parsed arguments and the state it read, what
// it writes and replies, or why it refuses. The command layer words a
// refusal (it knows the key names) and applies a plan only once it is
// made, so nothing is written before every check passed.
// ---------------------------------------------------------------------

/// Why a plan refuses; the command layer turns it into the error text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A `B:jobs` record DELAYQ never writes, or none for an id listed in
    /// `B:due` or `B:dead` (`corrupt data in '<B>:jobs' field '<id>'`).
    CorruptJob,
    /// A `B:due` score that is not an instant DELAYQ writes.
    CorruptDue,
    /// A `B:dead` score that is not an instant DELAYQ writes.
    CorruptDead,
    /// `B:seq` is not a non-negative integer.
    CorruptSeq,
    /// The queue's generations ran out (`integer overflow in '<B>:seq'`).
    SeqOverflow,
    /// A consumer holds the job under a running lease (`job is leased`).
    Leased,
}

/// Parses a job's stored record, if any: `Ok(None)` when there is none.
pub fn job(record: Option<&[u8]>) -> Result<Option<(Header, usize)>, Refusal> {
    match record {
        None => Ok(None),
        Some(v) => Header::parse(v).map(Some).ok_or(Refusal::CorruptJob),
    }
}

/// Parses the record of an id listed in `B:due` or `B:dead`, which must
/// exist.
pub fn listed(record: Option<&[u8]>) -> Result<(Header, usize), Refusal> {
    job(record)?.ok_or(Refusal::CorruptJob)
}

/// Returns the first of `n` new generations after `seq` (the stored
/// `B:seq`, if any); the caller stores the last one used.
pub fn generations(seq: Option<&[u8]>, n: i64) -> Result<i64, Refusal> {
    let last = match seq {
        None => 0,
        Some(v) => crate::args::parse_i64_plain(v)
            .filter(|v| *v >= 0)
            .ok_or(Refusal::CorruptSeq)?,
    };
    if last > MAX_GENERATION - n {
        return Err(Refusal::SeqOverflow);
    }
    Ok(last + 1)
}

/// Returns true when a job is held by a running lease at `now`, reading
/// its `B:due` score (`due`, called only for a leased job).
fn running(head: &Header, due: impl FnOnce() -> Option<f64>, now: i64) -> Result<bool, Refusal> {
    if !head.leased {
        return Ok(false);
    }
    let at = match due() {
        None => None,
        Some(score) => Some(instant(score).ok_or(Refusal::CorruptDue)?),
    };
    Ok(lease_running(head, at, now))
}

/// DELAYQ.ADD's parsed options.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddArgs {
    /// The instant the job is due.
    pub due_at: i64,
    /// `ATTEMPTS`.
    pub max: i64,
    /// `LOSTMAX`.
    pub lost_max: Option<i64>,
    /// `REPLACE`.
    pub replace: bool,
    /// The instant that decides whether a lease runs.
    pub now: i64,
}

/// What DELAYQ.ADD does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AddPlan {
    /// The id exists and REPLACE was not given: nothing changes (reply 0).
    Duplicate,
    /// Store `head` (new generation `head.gen`, also the new `B:seq`),
    /// score the job at `due_at`; when it `replaced` a job, take it out of
    /// the dead letters too (reply 1).
    Add {
        head: Header,
        due_at: i64,
        replaced: bool,
    },
}

/// Plans DELAYQ.ADD from the job's record, its `B:due` score (read only
/// to replace a leased job) and `B:seq`.
pub fn plan_add(
    a: &AddArgs,
    record: Option<&[u8]>,
    due: impl FnOnce() -> Option<f64>,
    seq: Option<&[u8]>,
) -> Result<AddPlan, Refusal> {
    let old = job(record)?;
    if let Some((head, _)) = &old {
        if !a.replace {
            return Ok(AddPlan::Duplicate);
        }
        if running(head, due, a.now)? {
            return Err(Refusal::Leased);
        }
    }
    let gen = generations(seq, 1)?;
    Ok(AddPlan::Add {
        head: Header::new(gen, a.max, a.lost_max),
        due_at: a.due_at,
        replaced: old.is_some(),
    })
}

/// One job a poll takes or dead-letters: the caller's handle on it, the
/// header to store, where its payload starts in the record read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Taken<I> {
    pub id: I,
    pub head: Header,
    pub at: usize,
}

/// What one DELAYQ.POLL does, built one due entry at a time (the command
/// layer reads them in batches, oldest due first).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PollPlan<I> {
    count: usize,
    /// Jobs to lease (reply in this order), each rescored at the lease end.
    pub deliver: Vec<Taken<I>>,
    /// Jobs to move to the dead letters, each at its score (the instant
    /// its last lease ended).
    pub dead: Vec<(Taken<I>, i64)>,
    /// Leases found run out (for the counter).
    pub lost: u64,
}

impl<I> PollPlan<I> {
    /// A plan that takes at most `count` jobs.
    pub fn new(count: usize) -> PollPlan<I> {
        PollPlan {
            count,
            deliver: Vec::new(),
            dead: Vec::new(),
            lost: 0,
        }
    }

    /// Returns true when the plan has its `count` jobs.
    pub fn full(&self) -> bool {
        self.deliver.len() >= self.count
    }

    /// Takes the next due entry: `id` scored `score` in `B:due`, its
    /// record as read. Refuses a score or record DELAYQ never writes.
    pub fn see(&mut self, id: I, score: f64, record: Option<&[u8]>) -> Result<(), Refusal> {
        let when = instant(score).ok_or(Refusal::CorruptDue)?;
        let (head, at) = listed(record)?;
        // Still leased while due: its lease ran out.
        self.lost += head.leased as u64;
        match head.on_due() {
            Due::Dead(head) => self.dead.push((Taken { id, head, at }, when)),
            Due::Deliver(head) => self.deliver.push(Taken { id, head, at }),
        }
        Ok(())
    }

    /// Jobs the plan sends to the dead letters for their lost leases.
    pub fn lost_dead(&self) -> usize {
        self.dead
            .iter()
            .filter(|(t, _)| t.head.lost_too_often())
            .count()
    }
}

/// Plans DELAYQ.ACK: true when `receipt` holds the job (remove it), false
/// for a stale receipt or no job (nothing changes).
pub fn plan_ack(record: Option<&[u8]>, receipt: i64) -> Result<bool, Refusal> {
    Ok(job(record)?.is_some_and(|(h, _)| h.holds(receipt)))
}

/// What a NACK that holds the job does: store `head` (not leased) over
/// the payload (from `payload_at` in the record read), then `next`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NackPlan {
    pub head: Header,
    pub payload_at: usize,
    pub next: Next,
}

/// Where a nacked job goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Next {
    /// Back in line, scored at this instant (reply 1).
    Requeue(i64),
    /// To the dead letters at now: that was its last attempt (reply 2).
    Dead,
}

impl NackPlan {
    /// The reply: 1 back in line, 2 dead.
    pub fn reply(&self) -> i64 {
        match self.next {
            Next::Requeue(_) => 1,
            Next::Dead => 2,
        }
    }
}

/// Plans DELAYQ.NACK; `None` for a stale receipt (reply 0).
pub fn plan_nack(
    record: Option<&[u8]>,
    receipt: i64,
    retry: Option<Retry>,
    now: i64,
) -> Result<Option<NackPlan>, Refusal> {
    let Some((head, payload_at)) = job(record)?.filter(|(h, _)| h.holds(receipt)) else {
        return Ok(None);
    };
    let head = Header {
        leased: false,
        ..head
    };
    let next = if head.exhausted() {
        Next::Dead
    } else {
        Next::Requeue(now + retry.unwrap_or(Retry::Delay(0)).wait(head.attempt))
    };
    Ok(Some(NackPlan {
        head,
        payload_at,
        next,
    }))
}

/// Plans DELAYQ.EXTEND: the new lease end, or `None` for a stale receipt
/// (`in_line`, whether the job is in `B:due`, is asked only when the
/// receipt holds it).
pub fn plan_extend(
    record: Option<&[u8]>,
    in_line: impl FnOnce() -> bool,
    receipt: i64,
    lease: i64,
    now: i64,
) -> Result<Option<i64>, Refusal> {
    let holds = job(record)?.is_some_and(|(h, _)| h.holds(receipt));
    Ok((holds && in_line()).then_some(now + lease))
}

/// Plans DELAYQ.CANCEL: true to remove the job (reply 1), false when there
/// is none (reply 0); refuses a job under a running lease without FORCE.
/// `due` (its `B:due` score) is read only for a leased job.
pub fn plan_cancel(
    record: Option<&[u8]>,
    due: impl FnOnce() -> Option<f64>,
    force: bool,
    now: i64,
) -> Result<bool, Refusal> {
    let Some((head, _)) = job(record)? else {
        return Ok(false);
    };
    if running(&head, due, now)? && !force {
        return Err(Refusal::Leased);
    }
    Ok(true)
}

/// Plans DELAYQ.PURGE's count: `total` dead letters, `scores` the dead-at
/// scores of the oldest (at most [`MAX_PURGE`]). Refuses a score DELAYQ
/// never writes, with its index. The caller then checks that the first
/// `n` have records ([`listed`]) before removing them.
pub fn plan_purge(
    total: usize,
    scores: &[f64],
    max_len: Option<i64>,
    max_age: Option<i64>,
    now: i64,
) -> Result<usize, (Refusal, usize)> {
    let mut ats = Vec::with_capacity(scores.len());
    for (i, s) in scores.iter().enumerate() {
        ats.push(instant(*s).ok_or((Refusal::CorruptDead, i))?);
    }
    Ok(purge_count(total, &ats, max_len, max_age, now))
}

/// Plans DELAYQ.REDRIVE over the dead letters chosen (their records as
/// read, in order): each goes back in line in a new generation, attempts
/// and lost leases at 0, caps kept. Returns the header to store and where
/// its payload starts, for each; the last generation is the new `B:seq`.
/// Refuses a missing or junk record (with its index) before `B:seq` is
/// looked at, then a junk or spent `B:seq` (index 0).
pub fn plan_redrive(
    records: &[Option<&[u8]>],
    seq: Option<&[u8]>,
) -> Result<Vec<(Header, usize)>, (Refusal, usize)> {
    let mut heads = Vec::with_capacity(records.len());
    for (i, r) in records.iter().enumerate() {
        heads.push(listed(*r).map_err(|e| (e, i))?);
    }
    if heads.is_empty() {
        return Ok(heads);
    }
    let first = generations(seq, heads.len() as i64).map_err(|e| (e, 0))?;
    Ok(heads
        .into_iter()
        .enumerate()
        .map(|(k, (h, at))| (h.restarted(first + k as i64), at))
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instants_are_whole_ms_in_range() {
        assert_eq!(instant(0.0), Some(0));
        assert_eq!(instant(1_764_720_000_030.0), Some(1_764_720_000_030));
        assert_eq!(instant(MAX_DUE_MS as f64), Some(MAX_DUE_MS));
        for bad in [
            -1.0,
            1.5,
            -0.5,
            f64::INFINITY,
            f64::NEG_INFINITY,
            f64::NAN,
            1e300,
            (MAX_DUE_MS + 1) as f64,
        ] {
            assert_eq!(instant(bad), None, "{bad}");
        }
    }

    #[test]
    fn records_round_trip() {
        let h = Header {
            gen: 7,
            attempt: 2,
            max: 5,
            leased: true,
            lost: 0,
            lost_max: None,
        };
        let v = h.format(b"a:b:\xff");
        assert_eq!(v, b"7:2:5:1:a:b:\xff");
        assert_eq!(Header::parse(&v), Some((h, 8)));
        assert_eq!(&v[8..], b"a:b:\xff");
        assert_eq!(Header::new(3, 5, None).format(b""), b"3:0:5:0:");
        assert_eq!(
            Header::parse(b"3:0:5:0:"),
            Some((Header::new(3, 5, None), 8))
        );
        // A job with a lost-lease cap: leased/lost/lostmax.
        let c = Header {
            lost: 1,
            lost_max: Some(2),
            ..h
        };
        let v = c.format(b"a:b");
        assert_eq!(v, b"7:2:5:1/1/2:a:b");
        assert_eq!(Header::parse(&v), Some((c, 12)));
        assert_eq!(Header::new(3, 5, Some(0)).format(b""), b"3:0:5:0/0/0:");
    }

    #[test]
    fn records_refuse_what_is_never_written() {
        for bad in [
            &b""[..],
            b"1:0:3:0",
            b"1:0:0:0:",
            b"0:0:3:0:",
            b"1:4:3:0:",
            b"1:-1:3:0:",
            b"1:0:3:2:",
            b"1:0:3:1:",
            b"01:0:3:0:",
            b"1:0:1000000:0:",
            b"x:0:3:0:",
            b"9007199254:0:3:0:",
            // Lost-lease fields: only after `leased`, both, canonical, and
            // a count that fits the deliveries and the cap.
            b"1:0:3:0/0:",
            b"1:0:3:0/0/:",
            b"1:0:3:0/0/1/2:",
            b"1:0/0/1:3:0:",
            b"1:1:3:0/01/1:",
            b"1:1:3:0/0/1000000:",
            b"1:1:3:0/2/1:",
            b"1:3:3:0/3/1:",
            b"1:2:3:1/2/1:",
            b"1:0:3:0/-1/1:",
        ] {
            assert_eq!(
                Header::parse(bad),
                None,
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn only_the_latest_leased_delivery_holds_the_job() {
        let h = Header::new(12, 3, None);
        assert!(!h.holds(12_000_000));
        let d = h.delivered();
        assert_eq!(d.receipt(), 12_000_001);
        assert!(d.holds(12_000_001));
        assert!(!d.holds(12_000_000));
        let again = d.delivered();
        assert!(!again.holds(12_000_001));
        assert!(again.holds(12_000_002));
        let nacked = Header {
            leased: false,
            ..again
        };
        assert!(!nacked.holds(12_000_002));
        // The same id added again starts a new generation: old receipts
        // never match it.
        assert!(!Header::new(13, 3, None).delivered().holds(12_000_001));
    }

    #[test]
    fn a_job_is_exhausted_after_its_last_delivery() {
        let h = Header::new(1, 2, None).delivered();
        assert!(!h.exhausted());
        assert!(h.delivered().exhausted());
    }

    #[test]
    fn a_poll_delivers_or_dead_letters_a_due_job() {
        // No cap: the 2.0.0 rule, attempts alone decide, nothing counted.
        let h = Header::new(1, 2, None);
        let Due::Deliver(d1) = h.on_due() else {
            panic!()
        };
        assert_eq!((d1.attempt, d1.leased, d1.lost), (1, true, 0));
        let Due::Deliver(d2) = d1.on_due() else {
            panic!()
        };
        assert_eq!((d2.attempt, d2.lost), (2, 0));
        assert_eq!(
            d2.on_due(),
            Due::Dead(Header {
                leased: false,
                ..d2
            })
        );
        // LOSTMAX 1: one delivery after a lost lease, the second lost lease
        // is the end, attempts to spare; the record shows why.
        let h = Header::new(1, 10, Some(1));
        let Due::Deliver(d1) = h.on_due() else {
            panic!()
        };
        assert_eq!(d1.lost, 0);
        let Due::Deliver(d2) = d1.on_due() else {
            panic!()
        };
        assert_eq!((d2.attempt, d2.lost), (2, 1));
        let Due::Dead(dead) = d2.on_due() else {
            panic!()
        };
        assert_eq!((dead.attempt, dead.lost, dead.leased), (2, 2, false));
        assert!(dead.lost_too_often() && !dead.exhausted());
        assert_eq!(dead.format(b"p"), b"1:2:10:0/2/1:p");
        assert!(Header::parse(&dead.format(b"p")).is_some());
        // A nacked job (not leased) due again is not a lost lease.
        let back = Header {
            leased: false,
            ..d2
        };
        let Due::Deliver(d3) = back.on_due() else {
            panic!()
        };
        assert_eq!((d3.attempt, d3.lost), (3, 1));
        // LOSTMAX 0: the first lost lease dead-letters.
        let once = Header::new(1, 5, Some(0)).delivered();
        assert!(matches!(once.on_due(), Due::Dead(h) if h.lost == 1));
        // The last attempt's lease lost: dead, the count says it was lost.
        let last = Header::new(1, 1, Some(3)).delivered();
        let Due::Dead(d) = last.on_due() else {
            panic!()
        };
        assert!(d.exhausted() && !d.lost_too_often() && d.lost == 1);
        // Re-driven: a new generation, count reset, caps kept.
        assert_eq!(dead.restarted(9), Header::new(9, 10, Some(1)));
    }

    #[test]
    fn receipts_stay_exact_in_doubles() {
        let top = Header {
            gen: MAX_GENERATION,
            attempt: MAX_ATTEMPTS,
            max: MAX_ATTEMPTS,
            leased: true,
            lost: 0,
            lost_max: None,
        };
        assert!(top.receipt() <= MAX_INT);
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

    #[test]
    fn a_running_lease_is_a_leased_job_scored_after_now() {
        let h = Header::new(1, 3, None).delivered();
        assert!(lease_running(&h, Some(101), 100));
        assert!(!lease_running(&h, Some(100), 100));
        assert!(!lease_running(&h, None, 100));
        let back = Header { leased: false, ..h };
        assert!(!lease_running(&back, Some(500), 100));
        assert!(!lease_running(&Header::new(1, 3, None), Some(500), 100));
    }

    #[test]
    fn a_purge_keeps_max_len_and_max_age_in_bounded_steps() {
        let ats = [10, 20, 30, 40, 50];
        // MAXLEN: the oldest beyond the newest 2.
        assert_eq!(purge_count(5, &ats, Some(2), None, 0), 3);
        assert_eq!(purge_count(5, &ats, Some(5), None, 0), 0);
        assert_eq!(purge_count(5, &ats, Some(0), None, 0), 5);
        // MAXAGE: dead more than 25 ms before 60 (at 10, 20, 30).
        assert_eq!(purge_count(5, &ats, None, Some(25), 60), 3);
        assert_eq!(purge_count(5, &ats, None, Some(30), 60), 2);
        // Either limit removes.
        assert_eq!(purge_count(5, &ats, Some(4), Some(35), 60), 2);
        assert_eq!(purge_count(5, &ats, Some(1), Some(35), 60), 4);
        // At most MAX_PURGE per call, whatever the limits.
        let many: Vec<i64> = (0..300).collect();
        assert_eq!(purge_count(1000, &many, Some(0), None, 0), MAX_PURGE);
        assert_eq!(purge_count(0, &[], Some(0), Some(0), 0), 0);
    }

    #[test]
    fn plans_refuse_what_delayq_never_writes_and_decide_the_rest() {
        let rec = |h: Header| h.format(b"p");
        let leased = rec(Header::new(3, 2, None).delivered());
        let waiting = rec(Header::new(3, 2, None));
        let never = || -> Option<f64> { panic!("read only for a leased job") };
        // Records and seq.
        assert_eq!(job(Some(b"junk")), Err(Refusal::CorruptJob));
        assert_eq!(listed(None), Err(Refusal::CorruptJob));
        assert_eq!(generations(None, 1), Ok(1));
        assert_eq!(generations(Some(b"41"), 2), Ok(42));
        for bad in [&b"x"[..], b"-1", b"01", b""] {
            assert_eq!(generations(Some(bad), 1), Err(Refusal::CorruptSeq));
        }
        let top = MAX_GENERATION.to_string();
        assert_eq!(
            generations(Some(top.as_bytes()), 1),
            Err(Refusal::SeqOverflow)
        );
        assert_eq!(
            generations(Some(b"9223372036854775807"), 1),
            Err(Refusal::SeqOverflow)
        );
        // ADD.
        let a = AddArgs {
            due_at: 50,
            max: 4,
            lost_max: Some(1),
            replace: false,
            now: 10,
        };
        let new = AddPlan::Add {
            head: Header::new(8, 4, Some(1)),
            due_at: 50,
            replaced: false,
        };
        assert_eq!(plan_add(&a, None, never, Some(b"7")), Ok(new));
        assert_eq!(
            plan_add(&a, Some(&waiting), never, Some(b"x")),
            Ok(AddPlan::Duplicate)
        );
        assert_eq!(
            plan_add(&a, Some(b"1:0:0:0:"), never, None),
            Err(Refusal::CorruptJob)
        );
        assert_eq!(
            plan_add(&a, None, never, Some(b"x")),
            Err(Refusal::CorruptSeq)
        );
        let r = AddArgs { replace: true, ..a };
        assert_eq!(
            plan_add(&r, Some(&leased), || Some(11.0), None),
            Err(Refusal::Leased)
        );
        assert_eq!(
            plan_add(&r, Some(&leased), || Some(1.5), None),
            Err(Refusal::CorruptDue)
        );
        assert!(matches!(
            plan_add(&r, Some(&leased), || Some(10.0), None),
            Ok(AddPlan::Add { replaced: true, head, .. }) if head.gen == 1
        ));
        assert!(matches!(
            plan_add(&r, Some(&waiting), never, Some(top.as_bytes())),
            Err(Refusal::SeqOverflow)
        ));
        // POLL: deliveries, dead letters, refusals.
        let mut p = PollPlan::new(2);
        let spent = rec(Header::new(1, 1, None).delivered());
        p.see("a", 5.0, Some(&spent)).unwrap();
        assert!(!p.full());
        p.see("b", 6.0, Some(&leased)).unwrap();
        p.see("c", 7.0, Some(&waiting)).unwrap();
        assert!(p.full());
        assert_eq!(p.dead.len(), 1);
        assert_eq!(p.dead[0].1, 5);
        assert_eq!(p.dead[0].0.id, "a");
        assert!(!p.dead[0].0.head.leased);
        let ids: Vec<_> = p
            .deliver
            .iter()
            .map(|t| (t.id, t.head.attempt, t.at))
            .collect();
        assert_eq!(ids, [("b", 2, 8), ("c", 1, 8)]);
        assert_eq!((p.lost, p.lost_dead()), (2, 0));
        let capped = rec(Header::new(1, 9, Some(0)).delivered());
        let mut q = PollPlan::new(1);
        q.see("d", 5.0, Some(&capped)).unwrap();
        assert_eq!((q.deliver.len(), q.lost_dead()), (0, 1));
        assert_eq!(q.see("e", 1.5, Some(&waiting)), Err(Refusal::CorruptDue));
        assert_eq!(q.see("e", 1e300, Some(&waiting)), Err(Refusal::CorruptDue));
        assert_eq!(q.see("e", 5.0, None), Err(Refusal::CorruptJob));
        assert_eq!(q.see("e", 5.0, Some(b"junk")), Err(Refusal::CorruptJob));
        // ACK.
        assert_eq!(plan_ack(Some(&leased), 3_000_001), Ok(true));
        assert_eq!(plan_ack(Some(&leased), 3_000_002), Ok(false));
        assert_eq!(plan_ack(Some(&waiting), 3_000_000), Ok(false));
        assert_eq!(plan_ack(None, 1), Ok(false));
        assert_eq!(plan_ack(Some(b"junk"), 1), Err(Refusal::CorruptJob));
        // NACK.
        let backoff = Some(Retry::Backoff {
            base: 100,
            cap: 1000,
        });
        let back = Header::new(3, 2, None).delivered();
        let requeue = plan_nack(Some(&leased), 3_000_001, backoff, 10).unwrap();
        assert_eq!(
            requeue,
            Some(NackPlan {
                head: Header {
                    leased: false,
                    ..back
                },
                payload_at: 8,
                next: Next::Requeue(110)
            })
        );
        assert_eq!(requeue.map(|p| p.reply()), Some(1));
        let last = back.delivered();
        let dead = plan_nack(Some(&rec(last)), 3_000_002, None, 10).unwrap();
        assert_eq!(
            dead.map(|p| (p.head.leased, p.next, p.reply())),
            Some((false, Next::Dead, 2))
        );
        assert_eq!(plan_nack(Some(&leased), 1, None, 10), Ok(None));
        assert_eq!(
            plan_nack(Some(b"junk"), 1, None, 10),
            Err(Refusal::CorruptJob)
        );
        // EXTEND: the line is asked only for a holding receipt.
        let no = || -> bool { panic!("asked only when the receipt holds") };
        assert_eq!(
            plan_extend(Some(&leased), || true, 3_000_001, 5, 10),
            Ok(Some(15))
        );
        assert_eq!(
            plan_extend(Some(&leased), || false, 3_000_001, 5, 10),
            Ok(None)
        );
        assert_eq!(plan_extend(Some(&leased), no, 7, 5, 10), Ok(None));
        assert_eq!(
            plan_extend(Some(b"junk"), no, 7, 5, 10),
            Err(Refusal::CorruptJob)
        );
        // CANCEL.
        assert_eq!(plan_cancel(None, never, false, 10), Ok(false));
        assert_eq!(plan_cancel(Some(&waiting), never, false, 10), Ok(true));
        assert_eq!(
            plan_cancel(Some(&leased), || Some(11.0), false, 10),
            Err(Refusal::Leased)
        );
        assert_eq!(
            plan_cancel(Some(&leased), || Some(11.0), true, 10),
            Ok(true)
        );
        assert_eq!(
            plan_cancel(Some(&leased), || Some(10.0), false, 10),
            Ok(true)
        );
        assert_eq!(
            plan_cancel(Some(&leased), || Some(0.5), true, 10),
            Err(Refusal::CorruptDue)
        );
        assert_eq!(
            plan_cancel(Some(b"junk"), never, true, 10),
            Err(Refusal::CorruptJob)
        );
        // PURGE.
        assert_eq!(plan_purge(3, &[1.0, 2.0, 3.0], Some(1), None, 0), Ok(2));
        assert_eq!(
            plan_purge(3, &[1.0, -2.0, 3.0], Some(1), None, 0),
            Err((Refusal::CorruptDead, 1))
        );
    }

    #[test]
    fn a_redrive_plan_restarts_each_in_its_own_generation() {
        let dead = Header {
            leased: false,
            lost: 2,
            ..Header::new(1, 9, Some(1)).delivered().delivered()
        }
        .format(b"p");
        let spent = Header::new(2, 1, None).delivered();
        let spent = Header {
            leased: false,
            ..spent
        }
        .format(b"");
        let plan = plan_redrive(&[Some(&dead), Some(&spent)], Some(b"4")).unwrap();
        assert_eq!(
            plan,
            [
                (Header::new(5, 9, Some(1)), 12),
                (Header::new(6, 1, None), 8)
            ]
        );
        assert_eq!(plan_redrive(&[], Some(b"x")), Ok(vec![]));
        assert_eq!(
            plan_redrive(&[Some(&dead), None], Some(b"x")),
            Err((Refusal::CorruptJob, 1))
        );
        assert_eq!(
            plan_redrive(&[Some(&dead), Some(b"junk")], None),
            Err((Refusal::CorruptJob, 1))
        );
        assert_eq!(
            plan_redrive(&[Some(&dead)], Some(b"x")),
            Err((Refusal::CorruptSeq, 0))
        );
        let top = MAX_GENERATION.to_string();
        assert_eq!(
            plan_redrive(&[Some(&dead)], Some(top.as_bytes())),
            Err((Refusal::SeqOverflow, 0))
        );
    }
}
