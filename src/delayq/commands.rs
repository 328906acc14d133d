//! DELAYQ's handlers: parse and validate everything, open and type-check
//! the queue's keys, read what the command needs, refuse corrupt records
//! before writing, write, reply, replicate, serve waiting consumers.
//!
//! Replication: every command that reads the clock replicates itself with
//! the master's `NOW` made explicit (a poll without its `BLOCK`), and ACK
//! replicates verbatim. Each one is deterministic given its arguments and
//! the data, so replicas and the AOF re-run it to the same bytes. A poll
//! that serves a waiting consumer from another command or from a timer
//! replicates as `DELAYQ.POLL B lease COUNT n NOW <ms>`, in the same
//! execution unit as what freed the job.

use redis_module::{Context, KeyType, RedisError, RedisResult, RedisString, RedisValue};

use super::model::{
    Job, Retry, DEFAULT_ATTEMPTS, MAX_ATTEMPTS, MAX_COUNT, MAX_DELAY_MS, MAX_EXAMINE, MAX_INT,
    MAX_PAYLOAD, MAX_TIME_MS,
};
use super::{
    COUNT_ACKED, COUNT_ADDED, COUNT_DEAD, COUNT_DELIVERED, COUNT_DUPLICATES, COUNT_NACKED,
    COUNT_REDRIVEN, COUNT_WAITS, FAMILY,
};
use crate::args::{parse_i64_plain, Cursor};
use crate::blocking::{self, Waiting};
use crate::error;
use crate::keys::{derived, Key};
use crate::util;

fn fail(msg: &str) -> RedisError {
    error::family(FAMILY, msg)
}

/// The queue's keys, opened and type-checked.
struct Queue {
    base: Vec<u8>,
    jobs: Key,
    due: Key,
    dead: Option<Key>,
    seq: Option<Key>,
}

/// Which keys a command needs besides `B:jobs` and `B:due`.
#[derive(Clone, Copy)]
struct Needs {
    dead: bool,
    seq: bool,
}

const ALL: Needs = Needs {
    dead: true,
    seq: true,
};

impl Queue {
    /// Opens `B:jobs`, `B:due` and, as needed, `B:dead` and `B:seq`.
    ///
    /// Occurs as `WRONGTYPE` when any of them holds another type than its
    /// own (Hash, Sorted Set, Sorted Set, String), before anything else.
    fn open(ctx: &Context, base: &[u8], write: bool, needs: Needs) -> Result<Queue, RedisError> {
        let jobs = Key::derived(ctx, base, "jobs", write);
        let due = Key::derived(ctx, base, "due", write);
        let dead = needs.dead.then(|| Key::derived(ctx, base, "dead", write));
        let seq = needs.seq.then(|| Key::derived(ctx, base, "seq", write));
        jobs.check(KeyType::Hash)?;
        due.check(KeyType::ZSet)?;
        if let Some(d) = &dead {
            d.check(KeyType::ZSet)?;
        }
        if let Some(s) = &seq {
            s.check(KeyType::String)?;
        }
        Ok(Queue {
            base: base.to_vec(),
            jobs,
            due,
            dead,
            seq,
        })
    }

    fn dead(&self) -> &Key {
        self.dead.as_ref().expect("opened with dead")
    }

    fn corrupt(&self, suffix: &str, field: Option<&[u8]>) -> RedisError {
        let key = derived(&self.base, suffix);
        let field = field.map(|f| String::from_utf8_lossy(f).into_owned());
        error::corrupt(FAMILY, &key, field.as_deref())
    }

    /// Returns the record of `id`.
    ///
    /// Occurs as a corrupt-data error when it holds anything DELAYQ never
    /// writes.
    fn job(&self, id: &[u8]) -> Result<Option<Job>, RedisError> {
        match self.jobs.hget(id) {
            None => Ok(None),
            Some(v) => Job::parse(&v)
                .map(Some)
                .ok_or_else(|| self.corrupt("jobs", Some(id))),
        }
    }

    /// Returns the record of a job listed in `B:due` or `B:dead`, which
    /// must exist.
    fn listed_job(&self, id: &[u8]) -> Result<Job, RedisError> {
        self.job(id)?.ok_or_else(|| self.corrupt("jobs", Some(id)))
    }

    /// Returns the receipt counter `B:seq`.
    fn seq(&self) -> Result<i64, RedisError> {
        let s = self.seq.as_ref().expect("opened with seq");
        if !s.exists() {
            return Ok(0);
        }
        parse_i64_plain(s.bytes())
            .filter(|v| (0..=MAX_INT).contains(v))
            .ok_or_else(|| self.corrupt("seq", None))
    }

    /// Returns the due instant of `id`, if it is pending.
    fn due_at(&self, id: &[u8]) -> Option<i64> {
        self.due.zscore(id).map(|s| s as i64)
    }

    /// Returns the earliest due instant, if any job is pending.
    fn first_due(&self) -> Option<i64> {
        self.due.zrange_asc(0, 1).first().map(|(_, s)| *s as i64)
    }
}

/// What one poll took.
#[derive(Default)]
struct Taken {
    /// (id, job after delivery) in due order.
    delivered: Vec<(Vec<u8>, Job)>,
    /// Jobs moved to the dead letters.
    dead: usize,
}

impl Taken {
    fn reply(&self) -> RedisValue {
        let mut out = Vec::with_capacity(self.delivered.len() * 4);
        for (id, job) in &self.delivered {
            out.push(util::bulk(id.clone()));
            out.push(util::bulk(job.payload.clone()));
            out.push(RedisValue::Integer(job.attempt));
            out.push(RedisValue::Integer(job.receipt));
        }
        RedisValue::Array(out)
    }
}

/// Takes up to `count` due jobs, each leased for `lease` ms, and moves the
/// exhausted ones met on the way to the dead letters (at the instant their
/// last lease ended). Everything is read and checked before the first
/// write.
fn take(q: &Queue, lease: i64, count: usize, now: i64) -> Result<Taken, RedisError> {
    let mut out = Taken::default();
    let mut exhausted: Vec<(Vec<u8>, Job, i64)> = Vec::new();
    let mut deliver: Vec<(Vec<u8>, Job)> = Vec::new();
    // Due entries are read in batches: the first is what is wanted, each
    // later one (only when exhausted jobs were met) twice the last, so a
    // long run of dead letters costs O(k log k), not O(k^2).
    let mut offset = 0usize;
    let mut batch_len = count;
    'scan: while deliver.len() < count && offset < MAX_EXAMINE {
        let want = batch_len.min(MAX_EXAMINE - offset);
        let batch = q
            .due
            .zrange(offset, want, false, f64::NEG_INFINITY, now as f64);
        let got = batch.len();
        for (id, score) in batch {
            offset += 1;
            let job = q.listed_job(&id)?;
            if job.exhausted() {
                exhausted.push((id, job, score as i64));
            } else {
                deliver.push((id, job));
                if deliver.len() == count {
                    break 'scan;
                }
            }
        }
        if got < want {
            break;
        }
        batch_len = batch_len.saturating_mul(2);
    }
    if deliver.is_empty() && exhausted.is_empty() {
        return Ok(out);
    }
    let mut seq = q.seq()?;
    if seq > MAX_INT - deliver.len() as i64 {
        return Err(error::overflow(FAMILY, &derived(&q.base, "seq"), None));
    }
    for (id, mut job, at) in exhausted {
        job.receipt = 0;
        q.jobs.hput(&id, &job.format());
        q.due.zrem(&id);
        q.dead().zadd(&id, at as f64);
        out.dead += 1;
    }
    let until = (now + lease) as f64;
    for (id, mut job) in deliver {
        seq += 1;
        job.attempt += 1;
        job.receipt = seq;
        q.jobs.hput(&id, &job.format());
        q.due.zadd(&id, until);
        out.delivered.push((id, job));
    }
    if !out.delivered.is_empty() {
        let s = q.seq.as_ref().expect("opened with seq");
        s.set(itoa::Buffer::new().format(seq).as_bytes());
    }
    COUNT_DELIVERED.add(out.delivered.len() as u64);
    COUNT_DEAD.add(out.dead as u64);
    Ok(out)
}

/// Replicates a poll with everything explicit: `DELAYQ.POLL B lease COUNT n NOW ms`.
fn replicate_poll(ctx: &Context, base: &[u8], lease: i64, count: usize, now: i64) {
    let (l, n, t) = (lease.to_string(), count.to_string(), now.to_string());
    let args: [&[u8]; 6] = [
        base,
        l.as_bytes(),
        b"COUNT",
        n.as_bytes(),
        b"NOW",
        t.as_bytes(),
    ];
    ctx.replicate("DELAYQ.POLL", &args[..]);
}

fn notify_taken(ctx: &Context, base: &[u8], t: &Taken) {
    if !t.delivered.is_empty() {
        util::notify(ctx, "hotpath.delayq.poll", base);
    }
    if t.dead > 0 {
        util::notify(ctx, "hotpath.delayq.dead", base);
    }
}

/// A consumer waiting for a job (`DELAYQ.POLL … BLOCK`).
pub struct PollWaiter {
    lease: i64,
    count: usize,
}

static WAITERS: blocking::Registry<PollWaiter> = blocking::Registry::new();

impl Waiting for PollWaiter {
    fn registry() -> &'static blocking::Registry<Self> {
        &WAITERS
    }

    fn timeout_reply() -> RedisValue {
        RedisValue::Array(Vec::new())
    }

    fn on_timer(ctx: &Context, base: &[u8]) {
        let now = util::now_ms();
        match Queue::open(ctx, base, true, ALL) {
            Ok(q) => {
                serve(ctx, &q, now);
                rearm(ctx, &q, now);
            }
            Err(e) => {
                let msg = e.to_string();
                blocking::serve::<PollWaiter>(ctx, base, |_| {
                    Some(Err(RedisError::String(msg.clone())))
                });
            }
        }
    }
}

/// Hands due jobs to the consumers waiting on the queue, first come first
/// served, while there are due jobs.
fn serve(ctx: &Context, q: &Queue, now: i64) {
    if blocking::waiting::<PollWaiter>(ctx, &q.base) == 0 {
        return;
    }
    blocking::serve::<PollWaiter>(ctx, &q.base, |w| match take(q, w.lease, w.count, now) {
        Err(e) => Some(Err(e)),
        Ok(t) => {
            if !t.delivered.is_empty() || t.dead > 0 {
                replicate_poll(ctx, &q.base, w.lease, w.count, now);
                notify_taken(ctx, &q.base, &t);
            }
            (!t.delivered.is_empty()).then(|| Ok(t.reply()))
        }
    });
}

/// Arms the queue's timer at the next instant a job falls due, while
/// consumers wait.
fn rearm(ctx: &Context, q: &Queue, now: i64) {
    if blocking::waiting::<PollWaiter>(ctx, &q.base) == 0 {
        return;
    }
    if let Some(at) = q.first_due() {
        blocking::arm::<PollWaiter>(ctx, &q.base, at.max(now + 1));
    }
}

/// After a command put a job in line at `at` (and closed its keys): serve
/// the consumers waiting on the queue if the job is due, else make sure
/// the timer fires by then.
fn job_in_line(ctx: &Context, base: &[u8], at: i64, now: i64) {
    if !blocking::serving(ctx) || blocking::waiting::<PollWaiter>(ctx, base) == 0 {
        return;
    }
    let Ok(q) = Queue::open(ctx, base, true, ALL) else {
        return;
    };
    if at <= now {
        serve(ctx, &q, now);
    }
    rearm(ctx, &q, now);
}

/// Reads a non-empty job id.
fn job_id(c: &mut Cursor) -> Result<Vec<u8>, RedisError> {
    let id = c.next_bytes()?;
    if id.is_empty() {
        return Err(fail("id must not be empty"));
    }
    Ok(id)
}

/// Reads the trailing `[NOW unix-ms]`.
fn parse_now(c: &mut Cursor) -> Result<Option<i64>, RedisError> {
    let mut now = None;
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "NOW" => now = Some(c.option_i64(0, MAX_TIME_MS)?),
            _ => return Err(error::syntax()),
        }
    }
    Ok(now)
}

/// DELAYQ.ADD B id payload [DELAY ms | AT unix-ms] [ATTEMPTS n] [REPLACE] [NOW unix-ms]
///
/// Replies 1 when the job was added (or replaced), 0 when a job with this
/// id exists and REPLACE was not given (nothing changes).
pub fn delayq_add(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 4)?;
    let base = c.next_bytes()?;
    let id = job_id(&mut c)?;
    c.skip(1)?;
    let (mut delay, mut at, mut attempts, mut replace, mut now) =
        (None, None, DEFAULT_ATTEMPTS, false, None);
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "DELAY" if at.is_none() => delay = Some(c.option_i64(0, MAX_DELAY_MS)?),
            "AT" if delay.is_none() => at = Some(c.option_i64(0, MAX_TIME_MS)?),
            "ATTEMPTS" => attempts = c.option_i64(1, MAX_ATTEMPTS)?,
            "REPLACE" => replace = true,
            "NOW" => now = Some(c.option_i64(0, MAX_TIME_MS)?),
            _ => return Err(error::syntax()),
        }
    }
    let payload = c.arg(3);
    if payload.len() > MAX_PAYLOAD {
        return Err(fail(&format!("payload exceeds {MAX_PAYLOAD} bytes")));
    }
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let had_now = now.is_some();
    let now = now.unwrap_or_else(util::now_ms);
    let due_at = at.unwrap_or(now + delay.unwrap_or(0));
    let q = Queue::open(
        ctx,
        &base,
        true,
        Needs {
            dead: true,
            seq: false,
        },
    )?;
    let old = q.job(&id)?;
    if let Some(old) = &old {
        if !replace {
            COUNT_DUPLICATES.incr();
            return Ok(RedisValue::Integer(0));
        }
        let leased = old.receipt > 0 && q.due_at(&id).is_some_and(|t| t > now);
        if leased {
            return Err(fail("job is leased"));
        }
    }
    q.jobs.hput(&id, &Job::new(payload, attempts).format());
    q.due.zadd(&id, due_at as f64);
    if old.is_some() {
        q.dead().zrem(&id);
    }
    drop(q);
    util::replicate_with_now(ctx, c.args(), now, had_now);
    util::notify(ctx, "hotpath.delayq.add", &base);
    COUNT_ADDED.incr();
    job_in_line(ctx, &base, due_at, now);
    Ok(RedisValue::Integer(1))
}

/// DELAYQ.POLL B lease-ms [COUNT n] [BLOCK timeout-ms] [NOW unix-ms]
///
/// Replies `[id, payload, attempt, receipt, …]` for up to `n` due jobs
/// (default 1), each leased for `lease-ms`; empty when none is due (after
/// BLOCK's timeout, when given).
pub fn delayq_poll(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 3)?;
    let base = c.next_bytes()?;
    let lease = c.next_i64(1, MAX_DELAY_MS)?;
    let (mut count, mut block, mut now) = (1usize, None, None);
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "COUNT" => count = c.option_i64(1, MAX_COUNT)? as usize,
            "BLOCK" => block = Some(c.option_i64(0, MAX_DELAY_MS)?),
            "NOW" => now = Some(c.option_i64(0, MAX_TIME_MS)?),
            _ => return Err(error::syntax()),
        }
    }
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let now = now.unwrap_or_else(util::now_ms);
    let q = Queue::open(ctx, &base, true, ALL)?;
    // Consumers already waiting come first.
    if blocking::serving(ctx) && blocking::waiting::<PollWaiter>(ctx, &base) > 0 {
        serve(ctx, &q, now);
        if blocking::waiting::<PollWaiter>(ctx, &base) > 0 {
            return block_or_empty(ctx, &q, block, lease, count, now);
        }
    }
    let t = take(&q, lease, count, now)?;
    if !t.delivered.is_empty() || t.dead > 0 {
        replicate_poll(ctx, &base, lease, count, now);
        notify_taken(ctx, &base, &t);
    }
    if t.delivered.is_empty() {
        return block_or_empty(ctx, &q, block, lease, count, now);
    }
    Ok(t.reply())
}

/// Blocks a poll that found nothing (when BLOCK was given and blocking is
/// allowed here), or replies an empty array.
fn block_or_empty(
    ctx: &Context,
    q: &Queue,
    block: Option<i64>,
    lease: i64,
    count: usize,
    now: i64,
) -> RedisResult {
    match block {
        Some(timeout) if blocking::can_block(ctx) => {
            COUNT_WAITS.incr();
            blocking::block(ctx, &q.base, timeout, PollWaiter { lease, count });
            // Jobs left due by the examine cap are served at the next tick.
            let at = match q.first_due() {
                Some(t) if t > now => t,
                Some(_) => now + 1,
                None => return Ok(RedisValue::NoReply),
            };
            blocking::arm::<PollWaiter>(ctx, &q.base, at);
            Ok(RedisValue::NoReply)
        }
        _ => Ok(RedisValue::Array(Vec::new())),
    }
}

/// DELAYQ.ACK B id receipt
///
/// Removes the job and replies 1 when `receipt` is its latest delivery,
/// else 0 (a stale receipt changes nothing).
pub fn delayq_ack(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 4)?;
    let base = c.next_bytes()?;
    let id = job_id(&mut c)?;
    let receipt = c.next_i64(i64::MIN, i64::MAX)?;
    c.expect_done()?;
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let q = Queue::open(
        ctx,
        &base,
        true,
        Needs {
            dead: false,
            seq: false,
        },
    )?;
    match q.job(&id)? {
        Some(job) if job.holds(receipt) => {
            q.jobs.hdel(&id);
            q.due.zrem(&id);
            ctx.replicate_verbatim();
            util::notify(ctx, "hotpath.delayq.ack", &base);
            COUNT_ACKED.incr();
            Ok(RedisValue::Integer(1))
        }
        _ => Ok(RedisValue::Integer(0)),
    }
}

/// DELAYQ.NACK B id receipt [DELAY ms | BACKOFF base-ms max-ms] [NOW unix-ms]
///
/// Gives the job back: replies 1 when it is back in line (due after the
/// delay, default 0), 2 when that was its last attempt and it went to the
/// dead letters, 0 for a stale receipt (nothing changes).
pub fn delayq_nack(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 4)?;
    let base = c.next_bytes()?;
    let id = job_id(&mut c)?;
    let receipt = c.next_i64(i64::MIN, i64::MAX)?;
    let (mut retry, mut now) = (None, None);
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "DELAY" if retry.is_none() => {
                retry = Some(Retry::Delay(c.option_i64(0, MAX_DELAY_MS)?))
            }
            "BACKOFF" if retry.is_none() => {
                let base = c.option_i64(1, MAX_DELAY_MS)?;
                let cap = c.option_i64(1, MAX_DELAY_MS)?;
                retry = Some(Retry::Backoff { base, cap });
            }
            "NOW" => now = Some(c.option_i64(0, MAX_TIME_MS)?),
            _ => return Err(error::syntax()),
        }
    }
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let had_now = now.is_some();
    let now = now.unwrap_or_else(util::now_ms);
    let q = Queue::open(
        ctx,
        &base,
        true,
        Needs {
            dead: true,
            seq: false,
        },
    )?;
    let Some(mut job) = q.job(&id)?.filter(|j| j.holds(receipt)) else {
        return Ok(RedisValue::Integer(0));
    };
    job.receipt = 0;
    q.jobs.hput(&id, &job.format());
    let reply = if job.exhausted() {
        q.due.zrem(&id);
        q.dead().zadd(&id, now as f64);
        util::notify(ctx, "hotpath.delayq.dead", &base);
        COUNT_DEAD.incr();
        2
    } else {
        let at = now + retry.unwrap_or(Retry::Delay(0)).wait(job.attempt);
        q.due.zadd(&id, at as f64);
        util::notify(ctx, "hotpath.delayq.nack", &base);
        1
    };
    let at = q.due_at(&id).unwrap_or(now);
    drop(q);
    util::replicate_with_now(ctx, c.args(), now, had_now);
    COUNT_NACKED.incr();
    if reply == 1 {
        job_in_line(ctx, &base, at, now);
    }
    Ok(RedisValue::Integer(reply))
}

/// DELAYQ.EXTEND B id receipt lease-ms [NOW unix-ms]
///
/// Restarts the lease of the delivery `receipt` at `lease-ms` from now (a
/// consumer's heartbeat) and replies 1, or 0 for a stale receipt.
pub fn delayq_extend(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 5)?;
    let base = c.next_bytes()?;
    let id = job_id(&mut c)?;
    let receipt = c.next_i64(i64::MIN, i64::MAX)?;
    let lease = c.next_i64(1, MAX_DELAY_MS)?;
    let now = parse_now(&mut c)?;
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let had_now = now.is_some();
    let now = now.unwrap_or_else(util::now_ms);
    let q = Queue::open(
        ctx,
        &base,
        true,
        Needs {
            dead: false,
            seq: false,
        },
    )?;
    match q.job(&id)? {
        Some(job) if job.holds(receipt) && q.due_at(&id).is_some() => {
            q.due.zadd(&id, (now + lease) as f64);
            util::replicate_with_now(ctx, c.args(), now, had_now);
            util::notify(ctx, "hotpath.delayq.extend", &base);
            Ok(RedisValue::Integer(1))
        }
        _ => Ok(RedisValue::Integer(0)),
    }
}

/// Reads `[COUNT n]` (default 10).
fn parse_count(c: &mut Cursor) -> Result<usize, RedisError> {
    let mut count = 10;
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "COUNT" => count = c.option_i64(1, MAX_COUNT)? as usize,
            _ => return Err(error::syntax()),
        }
    }
    Ok(count)
}

/// DELAYQ.DEAD B [COUNT n]
///
/// Replies `[id, payload, attempts, dead-at-ms, …]` for up to `n` dead
/// letters (default 10), oldest first.
pub fn delayq_dead(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let base = c.next_bytes()?;
    let count = parse_count(&mut c)?;
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let q = Queue::open(
        ctx,
        &base,
        false,
        Needs {
            dead: true,
            seq: false,
        },
    )?;
    let mut out = Vec::new();
    for (id, at) in q.dead().zrange_asc(0, count) {
        let job = q.listed_job(&id)?;
        out.push(util::bulk(id));
        out.push(util::bulk(job.payload));
        out.push(RedisValue::Integer(job.attempt));
        out.push(RedisValue::Integer(at as i64));
    }
    Ok(RedisValue::Array(out))
}

/// DELAYQ.REDRIVE B [COUNT n | ID id] [NOW unix-ms]
///
/// Puts dead letters back in line, due now, with their attempts reset:
/// the oldest `n` (default 10), or the one named. Replies how many.
pub fn delayq_redrive(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let base = c.next_bytes()?;
    let (mut count, mut one, mut now): (Option<usize>, Option<Vec<u8>>, Option<i64>) =
        (None, None, None);
    while !c.done() {
        match c.next_keyword()?.as_str() {
            "COUNT" if one.is_none() => count = Some(c.option_i64(1, MAX_COUNT)? as usize),
            "ID" if count.is_none() => {
                let id = c.option_bytes()?.to_vec();
                if id.is_empty() {
                    return Err(fail("id must not be empty"));
                }
                one = Some(id);
            }
            "NOW" => now = Some(c.option_i64(0, MAX_TIME_MS)?),
            _ => return Err(error::syntax()),
        }
    }
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let had_now = now.is_some();
    let now = now.unwrap_or_else(util::now_ms);
    let q = Queue::open(
        ctx,
        &base,
        true,
        Needs {
            dead: true,
            seq: false,
        },
    )?;
    let ids: Vec<Vec<u8>> = match one {
        Some(id) => q.dead().zscore(&id).map(|_| vec![id]).unwrap_or_default(),
        None => q
            .dead()
            .zrange_asc(0, count.unwrap_or(10))
            .into_iter()
            .map(|(id, _)| id)
            .collect(),
    };
    let mut jobs = Vec::with_capacity(ids.len());
    for id in &ids {
        jobs.push(q.listed_job(id)?);
    }
    for (id, mut job) in ids.iter().zip(jobs) {
        job.attempt = 0;
        job.receipt = 0;
        q.jobs.hput(id, &job.format());
        q.dead().zrem(id);
        q.due.zadd(id, now as f64);
    }
    drop(q);
    if !ids.is_empty() {
        util::replicate_with_now(ctx, c.args(), now, had_now);
        util::notify(ctx, "hotpath.delayq.redrive", &base);
        COUNT_REDRIVEN.add(ids.len() as u64);
        job_in_line(ctx, &base, now, now);
    }
    Ok(RedisValue::Integer(ids.len() as i64))
}

/// DELAYQ.INFO B [NOW unix-ms]
///
/// Replies the map `jobs, ready, scheduled, dead, delivered`: records
/// kept, jobs due now (leases that ran out included), jobs waiting for
/// their time or held by a consumer, dead letters, and receipts issued.
pub fn delayq_info(ctx: &Context, args: Vec<RedisString>) -> RedisResult {
    let mut c = Cursor::new(args, 2)?;
    let base = c.next_bytes()?;
    let now = parse_now(&mut c)?.unwrap_or_else(util::now_ms);
    util::require_hash_tag(ctx, FAMILY, &base)?;
    let q = Queue::open(ctx, &base, false, ALL)?;
    let jobs = q.jobs.len() as i64;
    let pending = q.due.len() as i64;
    let dead = q.dead().len() as i64;
    let delivered = q.seq()?;
    drop(q);
    // Counting a score range has no low-level API: one ZCOUNT, off the
    // hot path and with every key handle closed.
    let due_name = derived(&base, "due");
    let max = now.to_string();
    let ready = match ctx.call("ZCOUNT", &[&due_name[..], b"-inf", max.as_bytes()][..])? {
        RedisValue::Integer(n) => n,
        _ => 0,
    };
    let field = |s: &str| util::bulk(s.as_bytes());
    Ok(RedisValue::Array(vec![
        field("jobs"),
        RedisValue::Integer(jobs),
        field("ready"),
        RedisValue::Integer(ready),
        field("scheduled"),
        RedisValue::Integer(pending - ready),
        field("dead"),
        RedisValue::Integer(dead),
        field("delivered"),
        RedisValue::Integer(delivered),
    ]))
}
