//! DELAYQ's handlers: parse and validate everything, open and type-check
//! the queue's keys, read what the command needs, hand it to the command's
//! plan in model.rs (`plan_add`, `PollPlan`, `plan_ack`, `plan_nack`,
//! `plan_extend`, `plan_cancel`, `plan_purge`, `plan_redrive`), which checks every record
//! and decides the writes and the reply or refuses, then apply the plan,
//! reply, replicate, serve waiting consumers. Nothing is written before
//! the plan is made.
//!
//! Job ids, members and records stay the Redis strings the client sent or
//! the keys hold: they go from one key call to the next and into replies
//! without being copied.
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
    self, plan_ack, plan_add, plan_cancel, plan_extend, plan_nack, plan_purge, plan_redrive,
    AddArgs, AddPlan, Header, Next, PollPlan, Refusal, Retry, DEFAULT_ATTEMPTS, MAX_ATTEMPTS,
    MAX_COUNT, MAX_DELAY_MS, MAX_EXAMINE, MAX_INT, MAX_PAYLOAD, MAX_PURGE, MAX_TIME_MS,
};
use super::{
    COUNT_ACKED, COUNT_ADDED, COUNT_CANCELLED, COUNT_DEAD, COUNT_DELIVERED, COUNT_DUPLICATES,
    COUNT_LOST, COUNT_LOST_DEAD, COUNT_NACKED, COUNT_PURGED, COUNT_REDRIVEN, COUNT_WAITS, FAMILY,
};
use crate::argv::{is, Args};
use crate::blocking::{self, Waiting};
use crate::error;
use crate::keys::{derived, HashField, Key};
use crate::replicate;
use crate::reply;
use crate::util;

fn fail(msg: &str) -> RedisError {
    error::family(FAMILY, msg)
}

/// The queue's keys, opened and type-checked.
struct Queue<'a> {
    base: &'a RedisString,
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

const POLL: Needs = Needs {
    dead: true,
    seq: false,
};

impl<'a> Queue<'a> {
    /// Opens `B:jobs`, `B:due` and, as needed, `B:dead` and `B:seq`.
    ///
    /// Occurs as `WRONGTYPE` when any of them holds another type than its
    /// own (Hash, Sorted Set, Sorted Set, String), before anything else.
    fn open(
        ctx: &Context,
        base: &'a RedisString,
        write: bool,
        needs: Needs,
    ) -> Result<Queue<'a>, RedisError> {
        let b = base.as_slice();
        let mut name = NameBuf::new(b);
        let jobs = Key::open(ctx, name.with(b"jobs"), write);
        let due = Key::open(ctx, name.with(b"due"), write);
        let dead = needs
            .dead
            .then(|| Key::open(ctx, name.with(b"dead"), write));
        let seq = needs.seq.then(|| Key::open(ctx, name.with(b"seq"), write));
        jobs.check(KeyType::Hash)?;
        due.check(KeyType::ZSet)?;
        if let Some(d) = &dead {
            d.check(KeyType::ZSet)?;
        }
        if let Some(s) = &seq {
            s.check(KeyType::String)?;
        }
        Ok(Queue {
            base,
            jobs,
            due,
            dead,
            seq,
        })
    }

    fn name(&self) -> &[u8] {
        self.base.as_slice()
    }

    fn dead(&self) -> &Key {
        self.dead.as_ref().expect("opened with dead")
    }

    fn corrupt(&self, suffix: &str, field: Option<&[u8]>) -> RedisError {
        let key = derived(self.name(), suffix);
        // A field is shown like a key: control characters as '?'.
        let field = field.map(error::key_text);
        error::corrupt(FAMILY, &key, field.as_deref())
    }

    /// Words a plan's refusal; `id` is the job it concerns.
    fn refuse(&self, r: Refusal, id: &[u8]) -> RedisError {
        match r {
            Refusal::CorruptJob => self.corrupt("jobs", Some(id)),
            Refusal::CorruptDue => self.corrupt("due", Some(id)),
            Refusal::CorruptDead => self.corrupt("dead", Some(id)),
            Refusal::CorruptSeq => self.corrupt("seq", None),
            Refusal::SeqOverflow => error::overflow(FAMILY, &derived(self.name(), "seq"), None),
            Refusal::Leased => fail("job is leased"),
        }
    }

    /// Returns the stored record of `id`, as read.
    fn record(&self, id: &RedisString) -> Option<RedisString> {
        self.jobs.hget_arg(HashField::Arg(id))
    }

    /// Returns `B:seq` as stored, if it exists.
    fn seq(&self) -> Option<&[u8]> {
        let s = self.seq.as_ref().expect("opened with seq");
        s.exists().then(|| s.bytes())
    }

    /// Returns the record of `id` (the stored string) and its header.
    ///
    /// Occurs as a corrupt-data error when it holds anything DELAYQ never
    /// writes.
    fn job(&self, id: &RedisString) -> Result<Option<Record>, RedisError> {
        let Some(raw) = self.record(id) else {
            return Ok(None);
        };
        let (head, at) =
            model::listed(Some(raw.as_slice())).map_err(|r| self.refuse(r, id.as_slice()))?;
        Ok(Some(Record { raw, head, at }))
    }

    /// Returns the record of a job listed in `B:due` or `B:dead`, which
    /// must exist.
    fn listed_job(&self, id: &RedisString) -> Result<Record, RedisError> {
        self.job(id)?
            .ok_or_else(|| self.corrupt("jobs", Some(id.as_slice())))
    }

    /// Records that generations up to `last` were used.
    fn set_generation(&self, last: i64) {
        let s = self.seq.as_ref().expect("opened with seq");
        s.write_in_place(itoa::Buffer::new().format(last).as_bytes());
    }

    /// Returns true when `id` is pending (listed in `B:due`).
    fn is_due(&self, id: &RedisString) -> bool {
        self.due.zscore_arg(id).is_some()
    }

    /// Returns the due instant of `id`, if it is pending.
    ///
    /// Occurs as a corrupt-data error when its score is not an instant
    /// DELAYQ writes.
    fn due_at(&self, id: &RedisString) -> Result<Option<i64>, RedisError> {
        match self.due.zscore_arg(id) {
            None => Ok(None),
            Some(s) => self.instant("due", id.as_slice(), s).map(Some),
        }
    }

    /// Reads the score of `id` in `B:<suffix>` (due or dead) as an instant.
    ///
    /// Occurs as a corrupt-data error (`field '<id>'`) when the score is
    /// not a whole millisecond from 0 to `MAX_DUE_MS` (see `model::instant`).
    fn instant(&self, suffix: &str, id: &[u8], score: f64) -> Result<i64, RedisError> {
        super::model::instant(score).ok_or_else(|| self.corrupt(suffix, Some(id)))
    }

    /// Returns the earliest due instant, if any job is pending.
    fn first_due(&self) -> Option<i64> {
        self.due.zrange_asc(0, 1).first().map(|(_, s)| *s as i64)
    }
}

/// Builds `B:<suffix>` names in one buffer, on the stack for short bases.
struct NameBuf {
    buf: smallvec::SmallVec<[u8; 128]>,
    stem: usize,
}

impl NameBuf {
    fn new(base: &[u8]) -> NameBuf {
        let mut buf = smallvec::SmallVec::new();
        buf.extend_from_slice(base);
        buf.push(b':');
        let stem = buf.len();
        NameBuf { buf, stem }
    }

    fn with(&mut self, suffix: &[u8]) -> &[u8] {
        self.buf.truncate(self.stem);
        self.buf.extend_from_slice(suffix);
        &self.buf
    }
}

/// Fails in cluster mode when `B` has no hash tag (its derived keys would
/// land in other slots). Whether the server runs a cluster cannot change
/// while it runs, so it is read once.
fn require_hash_tag(ctx: &Context, base: &[u8]) -> Result<(), RedisError> {
    static CLUSTER: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);
    let mode = match CLUSTER.load(std::sync::atomic::Ordering::Relaxed) {
        0 => {
            let on = ctx
                .get_flags()
                .contains(redis_module::ContextFlags::CLUSTER);
            let v = if on { 2 } else { 1 };
            CLUSTER.store(v, std::sync::atomic::Ordering::Relaxed);
            v
        }
        v => v,
    };
    if mode == 2 {
        util::require_hash_tag(ctx, FAMILY, base)?;
    }
    Ok(())
}

/// A stored job: the record string, its header, where the payload starts.
struct Record {
    raw: RedisString,
    head: Header,
    at: usize,
}

impl Record {
    fn payload(&self) -> &[u8] {
        &self.raw.as_slice()[self.at..]
    }
}

/// One delivery: the job id, its record as read, where its payload
/// starts, and the header after delivery.
struct Delivery {
    id: RedisString,
    raw: RedisString,
    at: usize,
    head: Header,
}

impl Delivery {
    fn payload(&self) -> &[u8] {
        &self.raw.as_slice()[self.at..]
    }
}

/// Borrows a record as read.
fn bytes(raw: &Option<RedisString>) -> Option<&[u8]> {
    raw.as_ref().map(|r| r.as_slice())
}

/// What one poll took.
#[derive(Default)]
struct Taken {
    delivered: Vec<Delivery>,
    /// Jobs moved to the dead letters.
    dead: usize,
}

impl Taken {
    /// Returns the reply as a value (for a waiting consumer, answered
    /// later).
    fn value(&self) -> RedisValue {
        let mut out = Vec::with_capacity(self.delivered.len() * 4);
        for d in &self.delivered {
            out.push(util::bulk(d.id.as_slice()));
            out.push(util::bulk(d.payload()));
            out.push(RedisValue::Integer(d.head.attempt));
            out.push(RedisValue::Integer(d.head.receipt()));
        }
        RedisValue::Array(out)
    }

    /// Replies straight to the client: the ids and payloads go out as the
    /// strings the keys hold.
    fn reply(&self, ctx: &Context) -> RedisResult {
        reply::array(ctx, self.delivered.len() * 4);
        for d in &self.delivered {
            reply::string(ctx, &d.id);
            reply::bytes(ctx, d.payload());
            reply::int(ctx, d.head.attempt);
            reply::int(ctx, d.head.receipt());
        }
        Ok(RedisValue::NoReply)
    }
}

/// Takes up to `count` due jobs, each leased for `lease` ms, and moves the
/// jobs met on the way that have no delivery left (attempts used up, or
/// more lost leases than their `LOSTMAX`) to the dead letters, at the
/// instant their last lease ended: reads the due entries into a
/// [`PollPlan`], which checks each, then applies it.
fn take(q: &Queue, lease: i64, count: usize, now: i64) -> Result<Taken, RedisError> {
    let mut plan = PollPlan::new(count);
    let mut read: Vec<Option<(RedisString, RedisString)>> = Vec::new();
    // Due entries are read in batches: the first is what is wanted, each
    // later one (only when dead letters were met) twice the last, so a
    // long run of dead letters costs O(k log k), not O(k^2).
    let mut offset = 0usize;
    let mut batch_len = count;
    'scan: while !plan.full() && offset < MAX_EXAMINE {
        let want = batch_len.min(MAX_EXAMINE - offset);
        let batch = q
            .due
            .zrange_strings(offset, want, f64::NEG_INFINITY, now as f64);
        let got = batch.len();
        for (id, score) in batch {
            offset += 1;
            let raw = q.record(&id);
            plan.see(read.len(), score, bytes(&raw))
                .map_err(|r| q.refuse(r, id.as_slice()))?;
            // A missing record was refused just above.
            read.push(raw.map(|raw| (id, raw)));
            if plan.full() {
                break 'scan;
            }
        }
        if got < want {
            break;
        }
        batch_len = batch_len.saturating_mul(2);
    }
    let mut buf = Vec::new();
    for (t, when) in &plan.dead {
        if let Some((id, raw)) = &read[t.id] {
            t.head.write(&raw.as_slice()[t.at..], &mut buf);
            q.jobs.hput_arg(id, &buf);
            q.due.zrem_arg(id);
            q.dead().zadd_arg(id, *when as f64);
        }
    }
    let until = (now + lease) as f64;
    let mut out = Taken {
        delivered: Vec::with_capacity(plan.deliver.len()),
        dead: plan.dead.len(),
    };
    for t in &plan.deliver {
        if let Some((id, raw)) = read[t.id].take() {
            t.head.write(&raw.as_slice()[t.at..], &mut buf);
            q.jobs.hput_arg(&id, &buf);
            q.due.zadd_arg(&id, until);
            out.delivered.push(Delivery {
                id,
                raw,
                at: t.at,
                head: t.head,
            });
        }
    }
    COUNT_DELIVERED.add(out.delivered.len() as u64);
    COUNT_DEAD.add(out.dead as u64);
    COUNT_LOST.add(plan.lost);
    COUNT_LOST_DEAD.add(plan.lost_dead() as u64);
    Ok(out)
}

/// Replicates a poll with everything explicit:
/// `DELAYQ.POLL B lease [COUNT n] NOW ms`, from the base key's own string
/// and plain integers (no module strings built on our side).
fn replicate_poll(ctx: &Context, base: &RedisString, lease: i64, count: usize, now: i64) {
    let count = (count != 1).then_some((c"COUNT", count as i64));
    replicate::key_int_now(ctx, c"DELAYQ.POLL", base, lease, count, now);
}

/// Replicates the client's own poll: verbatim when it carries its `NOW`,
/// else its arguments (shared, not copied) with `NOW <ms>` appended. A
/// poll with `BLOCK` is rebuilt without it ([`replicate_poll`]).
fn replicate_client_poll(ctx: &Context, args: &[RedisString], p: &PollArgs, now: i64) {
    if p.block.is_some() {
        replicate_poll(ctx, &args[1], p.lease, p.count, now);
    } else if p.had_now {
        ctx.replicate_verbatim();
    } else {
        replicate::command_now(ctx, c"DELAYQ.POLL", &args[1..], now);
    }
}

/// A poll's options.
struct PollArgs {
    lease: i64,
    count: usize,
    block: Option<i64>,
    had_now: bool,
}

/// Raises a poll's one event, `hotpath.delayq.poll`, when it changed the
/// queue: it leased jobs, or moved exhausted ones to the dead letters, or
/// both (one event for the call, not one per kind of change).
fn notify_taken(ctx: &Context, base: &RedisString, t: &Taken) {
    if !t.delivered.is_empty() || t.dead > 0 {
        util::notify_static(ctx, c"hotpath.delayq.poll", base);
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
        let arg = RedisString::create_from_slice(ctx.ctx, base);
        match Queue::open(ctx, &arg, true, POLL) {
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
    if blocking::waiting::<PollWaiter>(ctx, q.name()) == 0 {
        return;
    }
    blocking::serve::<PollWaiter>(ctx, q.name(), |w| match take(q, w.lease, w.count, now) {
        Err(e) => Some(Err(e)),
        Ok(t) => {
            if !t.delivered.is_empty() || t.dead > 0 {
                replicate_poll(ctx, q.base, w.lease, w.count, now);
                notify_taken(ctx, q.base, &t);
            }
            (!t.delivered.is_empty()).then(|| Ok(t.value()))
        }
    });
}

/// Arms the queue's timer at the next instant a job falls due, while
/// consumers wait.
fn rearm(ctx: &Context, q: &Queue, now: i64) {
    if blocking::waiting::<PollWaiter>(ctx, q.name()) == 0 {
        return;
    }
    if let Some(at) = q.first_due() {
        blocking::arm::<PollWaiter>(ctx, q.name(), at.max(now + 1));
    }
}

/// After a command put a job in line at `at` (and closed its keys): serve
/// the consumers waiting on the queue if the job is due, else make sure
/// the timer fires by then.
fn job_in_line(ctx: &Context, base: &RedisString, at: i64, now: i64) {
    if !blocking::anyone_waiting::<PollWaiter>()
        || blocking::waiting::<PollWaiter>(ctx, base.as_slice()) == 0
        || !blocking::serving(ctx)
    {
        return;
    }
    let Ok(q) = Queue::open(ctx, base, true, POLL) else {
        return;
    };
    if at <= now {
        serve(ctx, &q, now);
    }
    rearm(ctx, &q, now);
}

/// Fails with `ERR delayq: id must not be empty`.
fn check_id(id: &[u8]) -> Result<(), RedisError> {
    if id.is_empty() {
        return Err(fail("id must not be empty"));
    }
    Ok(())
}

/// Reads the trailing `[NOW unix-ms]`.
fn parse_now(c: &mut Args) -> Result<Option<i64>, RedisError> {
    let mut now = None;
    while !c.done() {
        if !is(c.keyword()?, "NOW") {
            return Err(error::syntax());
        }
        now = Some(c.option_i64(0, MAX_TIME_MS)?);
    }
    Ok(now)
}

/// DELAYQ.ADD B id payload [DELAY ms | AT unix-ms] [ATTEMPTS n] [LOSTMAX n] [REPLACE] [NOW unix-ms]
///
/// Replies 1 when the job was added (or replaced), 0 when a job with this
/// id exists and REPLACE was not given (nothing changes).
pub fn delayq_add(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(4)?;
    c.skip(3)?;
    check_id(c.arg(2))?;
    let (mut delay, mut at, mut attempts, mut replace, mut now) =
        (None, None, DEFAULT_ATTEMPTS, false, None);
    let mut lost_max = None;
    while !c.done() {
        let k = c.keyword()?;
        if is(k, "DELAY") && at.is_none() {
            delay = Some(c.option_i64(0, MAX_DELAY_MS)?);
        } else if is(k, "AT") && delay.is_none() {
            at = Some(c.option_i64(0, MAX_TIME_MS)?);
        } else if is(k, "ATTEMPTS") {
            attempts = c.option_i64(1, MAX_ATTEMPTS)?;
        } else if is(k, "LOSTMAX") {
            lost_max = Some(c.option_i64(0, MAX_ATTEMPTS)?);
        } else if is(k, "REPLACE") {
            replace = true;
        } else if is(k, "NOW") {
            now = Some(c.option_i64(0, MAX_TIME_MS)?);
        } else {
            return Err(error::syntax());
        }
    }
    let args = c.all();
    let (base, id, payload) = (&args[1], &args[2], args[3].as_slice());
    if payload.len() > MAX_PAYLOAD {
        return Err(fail(&format!("payload exceeds {MAX_PAYLOAD} bytes")));
    }
    require_hash_tag(ctx, base.as_slice())?;
    let had_now = now.is_some();
    let now = now.unwrap_or_else(util::now_ms);
    let due_at = at.unwrap_or(now + delay.unwrap_or(0));
    let q = Queue::open(
        ctx,
        base,
        true,
        Needs {
            dead: true,
            seq: true,
        },
    )?;
    let raw = q.record(id);
    let a = AddArgs {
        due_at,
        max: attempts,
        lost_max,
        replace,
        now,
    };
    let plan = plan_add(&a, bytes(&raw), || q.due.zscore_arg(id), q.seq())
        .map_err(|r| q.refuse(r, id.as_slice()))?;
    let AddPlan::Add {
        head,
        due_at,
        replaced,
    } = plan
    else {
        COUNT_DUPLICATES.incr();
        return Ok(RedisValue::Integer(0));
    };
    q.set_generation(head.gen);
    q.jobs.hput_arg(id, &head.format(payload));
    q.due.zadd_arg(id, due_at as f64);
    if replaced {
        q.dead().zrem_arg(id);
    }
    drop(q);
    replicate::with_clock(ctx, args, now, had_now);
    util::notify_static(ctx, c"hotpath.delayq.add", base);
    COUNT_ADDED.incr();
    job_in_line(ctx, base, due_at, now);
    Ok(RedisValue::Integer(1))
}

/// DELAYQ.POLL B lease-ms [COUNT n] [BLOCK timeout-ms] [NOW unix-ms]
///
/// Replies `[id, payload, attempt, receipt, …]` for up to `n` due jobs
/// (default 1), each leased for `lease-ms`; empty when none is due (after
/// BLOCK's timeout, when given).
pub fn delayq_poll(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(3)?;
    c.skip(1)?;
    let lease = c.next_i64(1, MAX_DELAY_MS)?;
    let (mut count, mut block, mut now) = (1usize, None, None);
    while !c.done() {
        let k = c.keyword()?;
        if is(k, "COUNT") {
            count = c.option_i64(1, MAX_COUNT)? as usize;
        } else if is(k, "BLOCK") {
            block = Some(c.option_i64(0, MAX_DELAY_MS)?);
        } else if is(k, "NOW") {
            now = Some(c.option_i64(0, MAX_TIME_MS)?);
        } else {
            return Err(error::syntax());
        }
    }
    let p = PollArgs {
        lease,
        count,
        block,
        had_now: now.is_some(),
    };
    let base = c.string(1);
    require_hash_tag(ctx, base.as_slice())?;
    let now = now.unwrap_or_else(util::now_ms);
    let q = Queue::open(ctx, base, true, POLL)?;
    // Consumers already waiting come first.
    if blocking::waiting::<PollWaiter>(ctx, base.as_slice()) > 0 && blocking::serving(ctx) {
        serve(ctx, &q, now);
        if blocking::waiting::<PollWaiter>(ctx, base.as_slice()) > 0 {
            return block_or_empty(ctx, &q, block, lease, count, now);
        }
    }
    let t = take(&q, lease, count, now)?;
    if !t.delivered.is_empty() || t.dead > 0 {
        replicate_client_poll(ctx, c.all(), &p, now);
        notify_taken(ctx, base, &t);
    }
    if t.delivered.is_empty() {
        return block_or_empty(ctx, &q, block, lease, count, now);
    }
    t.reply(ctx)
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
            blocking::block(ctx, q.name(), timeout, PollWaiter { lease, count });
            // Jobs left due by the examine cap are served at the next tick.
            let at = match q.first_due() {
                Some(t) if t > now => t,
                Some(_) => now + 1,
                None => return Ok(RedisValue::NoReply),
            };
            blocking::arm::<PollWaiter>(ctx, q.name(), at);
            Ok(RedisValue::NoReply)
        }
        _ => Ok(RedisValue::Array(Vec::new())),
    }
}

/// DELAYQ.ACK B id receipt
///
/// Removes the job and replies 1 when `receipt` is its latest delivery
/// and it is still leased to that delivery, else 0 (nothing changes).
pub fn delayq_ack(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(4)?;
    c.skip(2)?;
    check_id(c.arg(2))?;
    let receipt = c.next_i64(i64::MIN, i64::MAX)?;
    c.expect_done()?;
    let args = c.all();
    let (base, id) = (&args[1], &args[2]);
    require_hash_tag(ctx, base.as_slice())?;
    let q = Queue::open(
        ctx,
        base,
        true,
        Needs {
            dead: false,
            seq: false,
        },
    )?;
    let remove = plan_ack(bytes(&q.record(id)), receipt).map_err(|r| q.refuse(r, id.as_slice()))?;
    if !remove {
        return Ok(RedisValue::Integer(0));
    }
    q.jobs.hdel_arg(id);
    q.due.zrem_arg(id);
    drop(q);
    ctx.replicate_verbatim();
    util::notify_static(ctx, c"hotpath.delayq.ack", base);
    COUNT_ACKED.incr();
    Ok(RedisValue::Integer(1))
}

/// DELAYQ.NACK B id receipt [DELAY ms | BACKOFF base-ms max-ms] [NOW unix-ms]
///
/// Gives the job back: replies 1 when it is back in line (due after the
/// delay, default 0), 2 when that was its last attempt and it went to the
/// dead letters, 0 for a stale receipt (nothing changes).
pub fn delayq_nack(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(4)?;
    c.skip(2)?;
    check_id(c.arg(2))?;
    let receipt = c.next_i64(i64::MIN, i64::MAX)?;
    let (mut retry, mut now) = (None, None);
    while !c.done() {
        let k = c.keyword()?;
        if is(k, "DELAY") && retry.is_none() {
            retry = Some(Retry::Delay(c.option_i64(0, MAX_DELAY_MS)?));
        } else if is(k, "BACKOFF") && retry.is_none() {
            let base = c.option_i64(1, MAX_DELAY_MS)?;
            let cap = c.option_i64(1, MAX_DELAY_MS)?;
            retry = Some(Retry::Backoff { base, cap });
        } else if is(k, "NOW") {
            now = Some(c.option_i64(0, MAX_TIME_MS)?);
        } else {
            return Err(error::syntax());
        }
    }
    let args = c.all();
    let (base, id) = (&args[1], &args[2]);
    require_hash_tag(ctx, base.as_slice())?;
    let had_now = now.is_some();
    let now = now.unwrap_or_else(util::now_ms);
    let q = Queue::open(
        ctx,
        base,
        true,
        Needs {
            dead: true,
            seq: false,
        },
    )?;
    let raw = q.record(id);
    let plan =
        plan_nack(bytes(&raw), receipt, retry, now).map_err(|r| q.refuse(r, id.as_slice()))?;
    let (Some(plan), Some(raw)) = (plan, raw) else {
        return Ok(RedisValue::Integer(0));
    };
    q.jobs
        .hput_arg(id, &plan.head.format(&raw.as_slice()[plan.payload_at..]));
    let at = match plan.next {
        Next::Dead => {
            q.due.zrem_arg(id);
            q.dead().zadd_arg(id, now as f64);
            COUNT_DEAD.incr();
            now
        }
        Next::Requeue(at) => {
            q.due.zadd_arg(id, at as f64);
            at
        }
    };
    let reply = plan.reply();
    drop(q);
    replicate::with_clock(ctx, args, now, had_now);
    // One event per call, named after the command, whether the job went
    // back in line or to the dead letters (the reply tells which).
    util::notify_static(ctx, c"hotpath.delayq.nack", base);
    COUNT_NACKED.incr();
    if reply == 1 {
        job_in_line(ctx, base, at, now);
    }
    Ok(RedisValue::Integer(reply))
}

/// DELAYQ.EXTEND B id receipt lease-ms [NOW unix-ms]
///
/// Restarts the lease of the delivery `receipt` at `lease-ms` from now (a
/// consumer's heartbeat) and replies 1, or 0 for a stale receipt.
pub fn delayq_extend(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(5)?;
    c.skip(2)?;
    check_id(c.arg(2))?;
    let receipt = c.next_i64(i64::MIN, i64::MAX)?;
    let lease = c.next_i64(1, MAX_DELAY_MS)?;
    let now = parse_now(c)?;
    let args = c.all();
    let (base, id) = (&args[1], &args[2]);
    require_hash_tag(ctx, base.as_slice())?;
    let had_now = now.is_some();
    let now = now.unwrap_or_else(util::now_ms);
    let q = Queue::open(
        ctx,
        base,
        true,
        Needs {
            dead: false,
            seq: false,
        },
    )?;
    let until = plan_extend(bytes(&q.record(id)), || q.is_due(id), receipt, lease, now)
        .map_err(|r| q.refuse(r, id.as_slice()))?;
    match until {
        Some(until) => {
            q.due.zadd_arg(id, until as f64);
            drop(q);
            replicate::with_clock(ctx, args, now, had_now);
            util::notify_static(ctx, c"hotpath.delayq.extend", base);
            // An extend may shorten the lease: the job is then due sooner
            // than the timer of the consumers waiting on the queue.
            job_in_line(ctx, base, now + lease, now);
            Ok(RedisValue::Integer(1))
        }
        None => Ok(RedisValue::Integer(0)),
    }
}

/// Reads `[COUNT n]` (default 10).
fn parse_count(c: &mut Args) -> Result<usize, RedisError> {
    let mut count = 10;
    while !c.done() {
        if !is(c.keyword()?, "COUNT") {
            return Err(error::syntax());
        }
        count = c.option_i64(1, MAX_COUNT)? as usize;
    }
    Ok(count)
}

/// DELAYQ.DEAD B [COUNT n]
///
/// Replies `[id, payload, attempts, dead-at-ms, …]` for up to `n` dead
/// letters (default 10), oldest first.
pub fn delayq_dead(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(2)?;
    c.skip(1)?;
    let count = parse_count(c)?;
    let base = c.string(1);
    require_hash_tag(ctx, base.as_slice())?;
    let q = Queue::open(
        ctx,
        base,
        false,
        Needs {
            dead: true,
            seq: false,
        },
    )?;
    let mut out = Vec::new();
    for (id, at) in q
        .dead()
        .zrange_strings(0, count, f64::NEG_INFINITY, f64::INFINITY)
    {
        let at = q.instant("dead", id.as_slice(), at)?;
        let rec = q.listed_job(&id)?;
        out.push(util::bulk(id.as_slice()));
        out.push(util::bulk(rec.payload()));
        out.push(RedisValue::Integer(rec.head.attempt));
        out.push(RedisValue::Integer(at));
    }
    Ok(RedisValue::Array(out))
}

/// DELAYQ.REDRIVE B [COUNT n | ID id] [NOW unix-ms]
///
/// Puts dead letters back in line, due now, with their attempts reset (a
/// new generation each): the oldest `n` (default 10), or the one named.
/// Replies how many.
pub fn delayq_redrive(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(2)?;
    c.skip(1)?;
    let (mut count, mut one, mut now): (Option<usize>, Option<usize>, Option<i64>) =
        (None, None, None);
    while !c.done() {
        let k = c.keyword()?;
        if is(k, "COUNT") && one.is_none() {
            count = Some(c.option_i64(1, MAX_COUNT)? as usize);
        } else if is(k, "ID") && count.is_none() {
            check_id(c.option_bytes()?)?;
            one = Some(c.position() - 1);
        } else if is(k, "NOW") {
            now = Some(c.option_i64(0, MAX_TIME_MS)?);
        } else {
            return Err(error::syntax());
        }
    }
    let args = c.all();
    let base = &args[1];
    require_hash_tag(ctx, base.as_slice())?;
    let had_now = now.is_some();
    let now = now.unwrap_or_else(util::now_ms);
    let q = Queue::open(
        ctx,
        base,
        true,
        Needs {
            dead: true,
            seq: true,
        },
    )?;
    let ids: Vec<RedisString> = match one {
        Some(i) => {
            let id = &args[i];
            if q.dead().zscore_arg(id).is_some() {
                vec![id.safe_clone(ctx)]
            } else {
                Vec::new()
            }
        }
        None => q
            .dead()
            .zrange_strings(0, count.unwrap_or(10), f64::NEG_INFINITY, f64::INFINITY)
            .into_iter()
            .map(|(id, _)| id)
            .collect(),
    };
    let raws: Vec<Option<RedisString>> = ids.iter().map(|id| q.record(id)).collect();
    let recs: Vec<Option<&[u8]>> = raws.iter().map(bytes).collect();
    let plan = plan_redrive(&recs, q.seq()).map_err(|(r, i)| {
        let id = ids.get(i).map_or(&b""[..], |id| id.as_slice());
        q.refuse(r, id)
    })?;
    let mut buf = Vec::new();
    for ((id, raw), (head, at)) in ids.iter().zip(&raws).zip(&plan) {
        if let Some(raw) = raw {
            head.write(&raw.as_slice()[*at..], &mut buf);
            q.jobs.hput_arg(id, &buf);
            q.dead().zrem_arg(id);
            q.due.zadd_arg(id, now as f64);
        }
    }
    if let Some((last, _)) = plan.last() {
        q.set_generation(last.gen);
    }
    drop(recs);
    drop(raws);
    drop(q);
    if !ids.is_empty() {
        replicate::with_clock(ctx, args, now, had_now);
        util::notify_static(ctx, c"hotpath.delayq.redrive", base);
        COUNT_REDRIVEN.add(ids.len() as u64);
        job_in_line(ctx, base, now, now);
    }
    Ok(RedisValue::Integer(ids.len() as i64))
}

/// DELAYQ.CANCEL B id [FORCE] [NOW unix-ms]
///
/// Removes the job `id` wherever it is (waiting, ready, its lease run
/// out, a dead letter) and replies 1, or 0 when there is no such job. A
/// job held by a running lease is refused (`job is leased`) unless FORCE:
/// its holder acks it with its receipt; FORCE removes it anyway and the
/// holder's receipt goes stale.
pub fn delayq_cancel(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(3)?;
    c.skip(2)?;
    check_id(c.arg(2))?;
    let (mut force, mut now) = (false, None);
    while !c.done() {
        let k = c.keyword()?;
        if is(k, "FORCE") && !force {
            force = true;
        } else if is(k, "NOW") && now.is_none() {
            now = Some(c.option_i64(0, MAX_TIME_MS)?);
        } else {
            return Err(error::syntax());
        }
    }
    let args = c.all();
    let (base, id) = (&args[1], &args[2]);
    require_hash_tag(ctx, base.as_slice())?;
    let had_now = now.is_some();
    let now = now.unwrap_or_else(util::now_ms);
    let q = Queue::open(
        ctx,
        base,
        true,
        Needs {
            dead: true,
            seq: false,
        },
    )?;
    let remove = plan_cancel(bytes(&q.record(id)), || q.due.zscore_arg(id), force, now)
        .map_err(|r| q.refuse(r, id.as_slice()))?;
    if !remove {
        return Ok(RedisValue::Integer(0));
    }
    q.jobs.hdel_arg(id);
    q.due.zrem_arg(id);
    q.dead().zrem_arg(id);
    drop(q);
    replicate::with_clock(ctx, args, now, had_now);
    util::notify_static(ctx, c"hotpath.delayq.cancel", base);
    COUNT_CANCELLED.incr();
    Ok(RedisValue::Integer(1))
}

/// DELAYQ.PEEK B [COUNT n | ID id]
///
/// Replies `[id, payload, attempt, at-ms, leased, …]` for up to `n` jobs in
/// line (default 10), the earliest `at` first, or for the one job `id`
/// (nothing when it is not in line): `at` is its `B:due` score (due time,
/// or lease end while `leased` is 1). Changes nothing.
pub fn delayq_peek(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(2)?;
    c.skip(1)?;
    let (mut count, mut one): (Option<usize>, Option<usize>) = (None, None);
    while !c.done() {
        let k = c.keyword()?;
        if is(k, "COUNT") && one.is_none() && count.is_none() {
            count = Some(c.option_i64(1, MAX_COUNT)? as usize);
        } else if is(k, "ID") && count.is_none() && one.is_none() {
            check_id(c.option_bytes()?)?;
            one = Some(c.position() - 1);
        } else {
            return Err(error::syntax());
        }
    }
    let args = c.all();
    let base = &args[1];
    require_hash_tag(ctx, base.as_slice())?;
    let q = Queue::open(
        ctx,
        base,
        false,
        Needs {
            dead: false,
            seq: false,
        },
    )?;
    let listed: Vec<(RedisString, i64)> = match one {
        Some(i) => {
            let id = &args[i];
            match q.due_at(id)? {
                Some(at) => vec![(id.safe_clone(ctx), at)],
                None => Vec::new(),
            }
        }
        None => {
            let got =
                q.due
                    .zrange_strings(0, count.unwrap_or(10), f64::NEG_INFINITY, f64::INFINITY);
            let mut out = Vec::with_capacity(got.len());
            for (id, score) in got {
                let at = q.instant("due", id.as_slice(), score)?;
                out.push((id, at));
            }
            out
        }
    };
    let mut out = Vec::with_capacity(listed.len() * 5);
    for (id, at) in &listed {
        let rec = q.listed_job(id)?;
        out.push(util::bulk(id.as_slice()));
        out.push(util::bulk(rec.payload()));
        out.push(RedisValue::Integer(rec.head.attempt));
        out.push(RedisValue::Integer(*at));
        out.push(RedisValue::Integer(rec.head.leased as i64));
    }
    Ok(RedisValue::Array(out))
}

/// DELAYQ.PURGE B [MAXLEN n] [MAXAGE ms] [NOW unix-ms]
///
/// Removes the oldest dead letters (record and entry) while more than
/// `MAXLEN` are kept or the oldest went dead more than `MAXAGE` ms before
/// now, at most 100 per call; replies how many.
pub fn delayq_purge(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(2)?;
    c.skip(1)?;
    let (mut max_len, mut max_age, mut now) = (None, None, None);
    while !c.done() {
        let k = c.keyword()?;
        if is(k, "MAXLEN") && max_len.is_none() {
            max_len = Some(c.option_i64(0, MAX_INT)?);
        } else if is(k, "MAXAGE") && max_age.is_none() {
            max_age = Some(c.option_i64(0, MAX_DELAY_MS)?);
        } else if is(k, "NOW") && now.is_none() {
            now = Some(c.option_i64(0, MAX_TIME_MS)?);
        } else {
            return Err(error::syntax());
        }
    }
    if max_len.is_none() && max_age.is_none() {
        return Err(error::syntax());
    }
    let args = c.all();
    let base = &args[1];
    require_hash_tag(ctx, base.as_slice())?;
    let had_now = now.is_some();
    let now = now.unwrap_or_else(util::now_ms);
    let q = Queue::open(
        ctx,
        base,
        true,
        Needs {
            dead: true,
            seq: false,
        },
    )?;
    let total = q.dead().len();
    let oldest = q
        .dead()
        .zrange_strings(0, MAX_PURGE, f64::NEG_INFINITY, f64::INFINITY);
    let scores: Vec<f64> = oldest.iter().map(|(_, s)| *s).collect();
    let n = plan_purge(total, &scores, max_len, max_age, now)
        .map_err(|(r, i)| q.refuse(r, oldest[i].0.as_slice()))?;
    // Every record removed must be there (an id listed without its record
    // is corrupt), checked before the first write.
    for (id, _) in &oldest[..n] {
        model::listed(bytes(&q.record(id))).map_err(|r| q.refuse(r, id.as_slice()))?;
    }
    for (id, _) in &oldest[..n] {
        q.jobs.hdel_arg(id);
        q.dead().zrem_arg(id);
    }
    drop(q);
    if n > 0 {
        replicate::with_clock(ctx, args, now, had_now);
        util::notify_static(ctx, c"hotpath.delayq.purge", base);
        COUNT_PURGED.add(n as u64);
    }
    Ok(RedisValue::Integer(n as i64))
}

/// DELAYQ.INFO B [NOW unix-ms]
///
/// Replies the map `jobs, ready, scheduled, dead` (a RESP3 map, a flat
/// array in RESP2): records kept, jobs due
/// now (leases that ran out included), jobs waiting for their time or held
/// by a consumer, dead letters.
pub fn delayq_info(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(2)?;
    c.skip(1)?;
    let now = parse_now(c)?.unwrap_or_else(util::now_ms);
    let base = c.string(1);
    require_hash_tag(ctx, base.as_slice())?;
    let q = Queue::open(
        ctx,
        base,
        false,
        Needs {
            dead: true,
            seq: false,
        },
    )?;
    let jobs = q.jobs.len() as i64;
    let pending = q.due.len() as i64;
    let dead = q.dead().len() as i64;
    drop(q);
    // Counting a score range has no low-level API: one ZCOUNT, off the
    // hot path and with every key handle closed.
    let due_name = derived(base.as_slice(), "due");
    let max = now.to_string();
    let ready = match ctx.call("ZCOUNT", &[&due_name[..], b"-inf", max.as_bytes()][..])? {
        RedisValue::Integer(n) => n,
        _ => 0,
    };
    let field = |s: &str| util::bulk(s.as_bytes());
    // A RESP3 map, the flat `[field, value, …]` array in RESP2.
    Ok(util::map(
        ctx,
        vec![
            field("jobs"),
            RedisValue::Integer(jobs),
            field("ready"),
            RedisValue::Integer(ready),
            field("scheduled"),
            RedisValue::Integer(pending - ready),
            field("dead"),
            RedisValue::Integer(dead),
        ],
    ))
}
