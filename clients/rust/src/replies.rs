//! Parsed replies: one type per reply shape of docs/<family>.md.

use redis::{ErrorKind, FromRedisValue, RedisError, RedisResult, Value};

fn bad(what: &str, v: &Value) -> RedisError {
    RedisError::from((
        ErrorKind::TypeError,
        "hotpath: unexpected reply",
        format!("{what}: {v:?}"),
    ))
}

/// Returns a reply as text (bulk or simple string; integers as digits).
pub fn text(v: &Value) -> RedisResult<String> {
    match v {
        Value::BulkString(b) => Ok(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Ok(s.clone()),
        Value::Okay => Ok("OK".into()),
        Value::Int(i) => Ok(i.to_string()),
        Value::VerbatimString { text, .. } => Ok(text.clone()),
        other => Err(bad("text", other)),
    }
}

/// Returns a reply as an integer (also a bulk string of digits).
pub fn int(v: &Value) -> RedisResult<i64> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::BulkString(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| bad("integer", v)),
        other => Err(bad("integer", other)),
    }
}

/// Returns true for an `OK` reply.
pub fn ok(v: &Value) -> RedisResult<bool> {
    match v {
        Value::Okay => Ok(true),
        Value::SimpleString(s) if s == "OK" => Ok(true),
        other => Err(bad("OK", other)),
    }
}

/// Returns the elements of an array reply (nil reads as none).
pub fn array(v: &Value) -> RedisResult<&[Value]> {
    match v {
        Value::Array(a) | Value::Set(a) => Ok(a),
        other => Err(bad("array", other)),
    }
}

/// A record reply: the positional array of RESP2, or the RESP3 map of the
/// same fields (`names`, in the array's order).
fn record<'a>(v: &'a Value, names: &[&str]) -> RedisResult<Vec<&'a Value>> {
    if let Value::Map(m) = v {
        let mut out = Vec::with_capacity(names.len());
        for n in names {
            let mut found = None;
            for (k, val) in m {
                if text(k)? == *n {
                    found = Some(val);
                }
            }
            out.push(found.ok_or_else(|| {
                RedisError::from((
                    ErrorKind::TypeError,
                    "hotpath: field missing from reply",
                    n.to_string(),
                ))
            })?);
        }
        return Ok(out);
    }
    Ok(exact(v, names.len())?.iter().collect())
}

fn exact(v: &Value, n: usize) -> RedisResult<&[Value]> {
    let a = array(v)?;
    if a.len() != n {
        return Err(bad(&format!("{n} elements"), v));
    }
    Ok(a)
}

pub(crate) fn pairs(v: &Value) -> RedisResult<Vec<(&Value, &Value)>> {
    // A RESP3 connection gets maps where RESP2 gets `[field, value, …]`.
    if let Value::Map(m) = v {
        return Ok(m.iter().map(|(k, v)| (k, v)).collect());
    }
    pairs_in(array(v)?)
}

fn pairs_in(a: &[Value]) -> RedisResult<Vec<(&Value, &Value)>> {
    if !a.len().is_multiple_of(2) {
        return Err(bad("pairs", &Value::Array(a.to_vec())));
    }
    Ok(a.chunks(2).map(|c| (&c[0], &c[1])).collect())
}

/// A list reply of `width`-field rows: RESP2 sends it flat
/// (`[a1, b1, a2, b2, …]`), RESP3 as an array of rows (`[[a1, b1], …]`,
/// the way `ZRANGE … WITHSCORES` answers).
fn rows_in(a: &[Value], width: usize) -> RedisResult<Vec<&[Value]>> {
    if matches!(a.first(), Some(Value::Array(_))) {
        return a.iter().map(|r| exact(r, width)).collect();
    }
    if !a.len().is_multiple_of(width) {
        return Err(bad(&format!("rows of {width}"), &Value::Array(a.to_vec())));
    }
    Ok(a.chunks(width).collect())
}

/// A map reply `[field, value, …]`: returns the value of `field`.
fn field<'a>(map: &'a [(&'a Value, &'a Value)], name: &str) -> RedisResult<&'a Value> {
    for (k, v) in map {
        if text(k)? == name {
            return Ok(v);
        }
    }
    Err(RedisError::from((
        ErrorKind::TypeError,
        "hotpath: field missing from reply",
        name.to_string(),
    )))
}

/// One candidate of a poll board.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PollEntry {
    pub candidate: String,
    pub votes: i64,
}

/// `POLL.RANK`: 0-based rank and votes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PollRank {
    pub rank: i64,
    pub votes: i64,
}

/// `POLL.INFO`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PollInfo {
    pub mode: String,
    pub maxvotes: i64,
    pub start: i64,
    pub end: i64,
    pub ballots: i64,
    pub votes: i64,
}

/// `POLL.SYNC`: apply `deltas`, then acknowledge `epoch`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PollSync {
    pub epoch: i64,
    pub deltas: Vec<PollEntry>,
}

pub(crate) fn poll_entries(v: &Value) -> RedisResult<Vec<PollEntry>> {
    poll_entries_in(array(v)?)
}

fn poll_entries_in(a: &[Value]) -> RedisResult<Vec<PollEntry>> {
    rows_in(a, 2)?
        .into_iter()
        .map(|r| (&r[0], &r[1]))
        .map(|(c, n)| {
            Ok(PollEntry {
                candidate: text(c)?,
                votes: int(n)?,
            })
        })
        .collect()
}

pub(crate) fn poll_rank(v: &Value) -> RedisResult<Option<PollRank>> {
    if *v == Value::Nil {
        return Ok(None);
    }
    let a = exact(v, 2)?;
    Ok(Some(PollRank {
        rank: int(&a[0])?,
        votes: int(&a[1])?,
    }))
}

pub(crate) fn poll_info(v: &Value) -> RedisResult<Option<PollInfo>> {
    let m = pairs(v)?;
    if m.is_empty() {
        return Ok(None);
    }
    Ok(Some(PollInfo {
        mode: text(field(&m, "mode")?)?,
        maxvotes: int(field(&m, "maxvotes")?)?,
        start: int(field(&m, "start")?)?,
        end: int(field(&m, "end")?)?,
        ballots: int(field(&m, "ballots")?)?,
        votes: int(field(&m, "votes")?)?,
    }))
}

pub(crate) fn poll_sync(v: &Value) -> RedisResult<PollSync> {
    let a = array(v)?;
    let (epoch, rest) = a.split_first().ok_or_else(|| bad("POLL.SYNC", v))?;
    Ok(PollSync {
        epoch: int(epoch)?,
        deltas: poll_entries_in(rest)?,
    })
}

/// A member of a board and its points.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankMember {
    pub member: String,
    pub points: i64,
}

/// A place of `RANK.AROUND`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankPlace {
    pub rank: i64,
    pub member: String,
    pub points: i64,
}

/// `RANK.GET`: points, 0-based rank, and when the points were reached
/// (unix ms, rounded down to the board's unit; `None` with TIEBREAK NONE).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RankEntry {
    pub points: i64,
    pub rank: i64,
    pub achieved_ms: Option<i64>,
}

pub(crate) fn rank_members(v: &Value) -> RedisResult<Vec<RankMember>> {
    rank_members_in(array(v)?)
}

fn rank_members_in(a: &[Value]) -> RedisResult<Vec<RankMember>> {
    rows_in(a, 2)?
        .into_iter()
        .map(|r| (&r[0], &r[1]))
        .map(|(m, p)| {
            Ok(RankMember {
                member: text(m)?,
                points: int(p)?,
            })
        })
        .collect()
}

pub(crate) fn rank_entry(v: &Value) -> RedisResult<Option<RankEntry>> {
    if *v == Value::Nil {
        return Ok(None);
    }
    let a = record(v, &["points", "rank", "achieved_ms"])?;
    Ok(Some(RankEntry {
        points: int(a[0])?,
        rank: int(a[1])?,
        achieved_ms: match a[2] {
            Value::Nil => None,
            t => Some(int(t)?),
        },
    }))
}

pub(crate) fn rank_places(v: &Value) -> RedisResult<Option<Vec<RankPlace>>> {
    if *v == Value::Nil {
        return Ok(None);
    }
    rank_places_in(array(v)?).map(Some)
}

fn rank_places_in(a: &[Value]) -> RedisResult<Vec<RankPlace>> {
    rows_in(a, 3)?
        .into_iter()
        .map(|c| {
            Ok(RankPlace {
                rank: int(&c[0])?,
                member: text(&c[1])?,
                points: int(&c[2])?,
            })
        })
        .collect()
}

/// `LIKE.ADD` / `LIKE.REM`: whether the call changed the like, and the
/// post's exact count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LikeChange {
    pub changed: bool,
    pub count: i64,
}

/// `LIKE.TOGGLE`: whether the user likes the post after the call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LikeToggle {
    pub liked: bool,
    pub count: i64,
}

/// A recent liker.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Liker {
    pub user: u64,
    pub at_ms: i64,
}

/// `LIKE.INFO`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LikeInfo {
    pub encoding: String,
    pub count: i64,
    pub bytes: i64,
}

pub(crate) fn flag_count(v: &Value) -> RedisResult<(bool, i64)> {
    let a = exact(v, 2)?;
    Ok((int(&a[0])? != 0, int(&a[1])?))
}

pub(crate) fn likers(v: &Value) -> RedisResult<Vec<Liker>> {
    likers_of(pairs(v)?)
}

fn likers_of(pairs: Vec<(&Value, &Value)>) -> RedisResult<Vec<Liker>> {
    pairs
        .into_iter()
        .map(|(u, t)| {
            Ok(Liker {
                user: int(u)? as u64,
                at_ms: int(t)?,
            })
        })
        .collect()
}

pub(crate) fn like_info(v: &Value) -> RedisResult<LikeInfo> {
    let m = pairs(v)?;
    Ok(LikeInfo {
        encoding: text(field(&m, "encoding")?)?,
        count: int(field(&m, "count")?)?,
        bytes: int(field(&m, "bytes")?)?,
    })
}

/// `REDPACKET.GRAB`: `status` is OK, ALREADY, EMPTY, CLOSED or NOSUCH.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grab {
    pub status: String,
    pub cents: i64,
}

impl Grab {
    /// True when the user holds a share (OK now, or ALREADY before).
    pub fn won(&self) -> bool {
        self.status == "OK" || self.status == "ALREADY"
    }
}

/// `REDPACKET.INFO`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PacketInfo {
    pub total: i64,
    pub count: i64,
    pub left_cents: i64,
    pub left_count: i64,
    pub state: String,
    pub expires: i64,
}

pub(crate) fn grab(v: &Value) -> RedisResult<Grab> {
    let a = exact(v, 2)?;
    Ok(Grab {
        status: text(&a[0])?,
        cents: int(&a[1])?,
    })
}

pub(crate) fn packet_info(v: &Value) -> RedisResult<Option<PacketInfo>> {
    let m = pairs(v)?;
    if m.is_empty() {
        return Ok(None);
    }
    Ok(Some(PacketInfo {
        total: int(field(&m, "total")?)?,
        count: int(field(&m, "count")?)?,
        left_cents: int(field(&m, "left_cents")?)?,
        left_count: int(field(&m, "left_count")?)?,
        state: text(field(&m, "state")?)?,
        expires: int(field(&m, "expires")?)?,
    }))
}

pub(crate) fn grabbed(v: &Value) -> RedisResult<Vec<(String, i64)>> {
    pairs(v)?
        .into_iter()
        .map(|(u, c)| Ok((text(u)?, int(c)?)))
        .collect()
}

/// `LUCKYBAG.JOIN`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Join {
    pub new: bool,
    pub pooled: bool,
    pub participants: i64,
}

/// A winner of `LUCKYBAG.DRAW`; `score_text` is the server's text (17
/// significant digits, exact), `score` its value.
#[derive(Clone, Debug, PartialEq)]
pub struct Winner {
    pub user: String,
    pub score_text: String,
    pub score: f64,
}

/// `LUCKYBAG.INFO`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BagInfo {
    pub state: String,
    pub participants: i64,
    pub pooled: i64,
    pub winners: i64,
    pub shards: i64,
}

/// `LUCKYBAG.RESULT`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BagResult {
    Pending,
    Won,
    Lost,
    Absent,
}

pub(crate) fn join(v: &Value) -> RedisResult<Join> {
    let a = exact(v, 3)?;
    Ok(Join {
        new: int(&a[0])? != 0,
        pooled: int(&a[1])? != 0,
        participants: int(&a[2])?,
    })
}

pub(crate) fn winners(v: &Value) -> RedisResult<Vec<Winner>> {
    winners_of(pairs(v)?)
}

fn winners_of(pairs: Vec<(&Value, &Value)>) -> RedisResult<Vec<Winner>> {
    pairs
        .into_iter()
        .map(|(u, s)| {
            let score_text = text(s)?;
            let score = score_text.parse().map_err(|_| bad("score", s))?;
            Ok(Winner {
                user: text(u)?,
                score_text,
                score,
            })
        })
        .collect()
}

pub(crate) fn bag_result(v: &Value) -> RedisResult<BagResult> {
    match text(v)?.as_str() {
        "PENDING" => Ok(BagResult::Pending),
        "WON" => Ok(BagResult::Won),
        "LOST" => Ok(BagResult::Lost),
        "ABSENT" => Ok(BagResult::Absent),
        _ => Err(bad("LUCKYBAG.RESULT", v)),
    }
}

pub(crate) fn bag_info(v: &Value) -> RedisResult<Option<BagInfo>> {
    let m = pairs(v)?;
    if m.is_empty() {
        return Ok(None);
    }
    Ok(Some(BagInfo {
        state: text(field(&m, "state")?)?,
        participants: int(field(&m, "participants")?)?,
        pooled: int(field(&m, "pooled")?)?,
        winners: int(field(&m, "winners")?)?,
        shards: int(field(&m, "shards")?)?,
    }))
}

/// `RATE.CHECK` / `RATE.MULTI`: `retry_after_ms` is -1 when allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateResult {
    pub allowed: bool,
    pub limit: i64,
    pub remaining: i64,
    pub retry_after_ms: i64,
    pub reset_after_ms: i64,
}

/// `RATE.THROTTLE`: redis-cell's `CL.THROTTLE` reply, in seconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Throttle {
    pub limited: bool,
    pub limit: i64,
    pub remaining: i64,
    pub retry_after_s: i64,
    pub reset_after_s: i64,
}

fn five(v: &Value) -> RedisResult<[i64; 5]> {
    let a = exact(v, 5)?;
    Ok([
        int(&a[0])?,
        int(&a[1])?,
        int(&a[2])?,
        int(&a[3])?,
        int(&a[4])?,
    ])
}

pub(crate) fn rate(v: &Value) -> RedisResult<RateResult> {
    let names = [
        "allowed",
        "limit",
        "remaining",
        "retry_after_ms",
        "reset_after_ms",
    ];
    let f = record(v, &names)?;
    let [a, l, r, ra, rs] = [int(f[0])?, int(f[1])?, int(f[2])?, int(f[3])?, int(f[4])?];
    Ok(RateResult {
        allowed: a != 0,
        limit: l,
        remaining: r,
        retry_after_ms: ra,
        reset_after_ms: rs,
    })
}

pub(crate) fn throttle(v: &Value) -> RedisResult<Throttle> {
    let [a, l, r, ra, rs] = five(v)?;
    Ok(Throttle {
        limited: a != 0,
        limit: l,
        remaining: r,
        retry_after_s: ra,
        reset_after_s: rs,
    })
}

/// A flat array of `n`-element groups (`[id, payload, attempt, receipt, …]`).
fn groups(a: &[Value], n: usize) -> RedisResult<std::slice::Chunks<'_, Value>> {
    if !a.len().is_multiple_of(n) {
        return Err(bad(&format!("groups of {n}"), &Value::Array(a.to_vec())));
    }
    Ok(a.chunks(n))
}

/// Returns a bulk string's bytes as they are (payloads need not be UTF-8).
fn bytes(v: &Value) -> RedisResult<Vec<u8>> {
    match v {
        Value::BulkString(b) => Ok(b.clone()),
        Value::SimpleString(s) => Ok(s.clone().into_bytes()),
        Value::VerbatimString { text, .. } => Ok(text.clone().into_bytes()),
        other => Err(bad("bytes", other)),
    }
}

/// A live hold of `LOCK.INFO`: its fencing token, reentrance count and the
/// ms left in its lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LockHolder {
    pub owner: String,
    pub token: i64,
    pub count: i64,
    pub ttl_ms: i64,
}

pub(crate) fn token(v: &Value) -> RedisResult<Option<i64>> {
    match v {
        Value::Nil => Ok(None),
        v => int(v).map(Some),
    }
}

pub(crate) fn lock_holders(v: &Value) -> RedisResult<Vec<LockHolder>> {
    // RESP3: owner → {token, count, ttl_ms}; RESP2: [owner, token, count,
    // ttl_ms, …]. Both by token.
    if let Value::Map(m) = v {
        return m
            .iter()
            .map(|(owner, rec)| {
                let f = record(rec, &["token", "count", "ttl_ms"])?;
                Ok(LockHolder {
                    owner: text(owner)?,
                    token: int(f[0])?,
                    count: int(f[1])?,
                    ttl_ms: int(f[2])?,
                })
            })
            .collect();
    }
    lock_holders_in(array(v)?)
}

fn lock_holders_in(a: &[Value]) -> RedisResult<Vec<LockHolder>> {
    groups(a, 4)?
        .map(|g| {
            Ok(LockHolder {
                owner: text(&g[0])?,
                token: int(&g[1])?,
                count: int(&g[2])?,
                ttl_ms: int(&g[3])?,
            })
        })
        .collect()
}

/// `IDEM.BEGIN`'s answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IdemBegin {
    /// A new (or taken-over) record: do the work, then complete with
    /// this fence.
    New(i64),
    /// The original is in progress (the IETF draft's 409): the ms left in
    /// its lease.
    Running(i64),
    /// The stored result, to reply again.
    Done(Vec<u8>),
    /// The key was used for another request (the IETF draft's 422).
    Mismatch,
}

/// `IDEM.GET`: `state` is running, ended (lease over, not taken over),
/// done or aborted; `lease_ms` the ms left (0 unless running); `result`
/// only when done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdemRecord {
    pub state: String,
    pub fingerprint: Vec<u8>,
    pub fence: i64,
    pub lease_ms: i64,
    pub result: Option<Vec<u8>>,
}

fn raw(v: &Value) -> RedisResult<Vec<u8>> {
    match v {
        Value::BulkString(b) => Ok(b.clone()),
        Value::SimpleString(s) => Ok(s.clone().into_bytes()),
        other => Err(bad("bytes", other)),
    }
}

pub(crate) fn idem_begin(v: &Value) -> RedisResult<IdemBegin> {
    let a = array(v)?;
    if a.len() != 2 {
        return Err(bad("IDEM.BEGIN", v));
    }
    match text(&a[0])?.as_str() {
        "NEW" => Ok(IdemBegin::New(int(&a[1])?)),
        "RUNNING" => Ok(IdemBegin::Running(int(&a[1])?)),
        "DONE" => Ok(IdemBegin::Done(raw(&a[1])?)),
        "MISMATCH" => Ok(IdemBegin::Mismatch),
        _ => Err(bad("IDEM.BEGIN", v)),
    }
}

pub(crate) fn idem_record(v: &Value) -> RedisResult<Option<IdemRecord>> {
    if matches!(v, Value::Nil) {
        return Ok(None);
    }
    let f = record(v, &["state", "fingerprint", "fence", "lease_ms", "result"])?;
    Ok(Some(IdemRecord {
        state: text(f[0])?,
        fingerprint: raw(f[1])?,
        fence: int(f[2])?,
        lease_ms: int(f[3])?,
        result: match f[4] {
            Value::Nil => None,
            r => Some(raw(r)?),
        },
    }))
}

/// A delivery of `DELAYQ.POLL`: ack, nack or extend it with `receipt`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    pub id: String,
    pub payload: Vec<u8>,
    pub attempt: i64,
    pub receipt: i64,
}

/// A dead letter of `DELAYQ.DEAD`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeadLetter {
    pub id: String,
    pub payload: Vec<u8>,
    pub attempts: i64,
    pub dead_at_ms: i64,
}

/// A job in line, from `DELAYQ.PEEK`: `at_ms` is its due time, or its
/// lease end while `leased`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduledJob {
    pub id: String,
    pub payload: Vec<u8>,
    pub attempts: i64,
    pub at_ms: i64,
    pub leased: bool,
}

/// `DELAYQ.INFO`: records kept (dead letters included), jobs that can be
/// taken now, jobs waiting for their time or leased, dead letters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueueInfo {
    pub jobs: i64,
    pub ready: i64,
    pub scheduled: i64,
    pub dead: i64,
}

/// `DELAYQ.NACK`: a stale receipt, back in line, or to the dead letters.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nack {
    Stale,
    Requeued,
    Dead,
}

pub(crate) fn jobs(v: &Value) -> RedisResult<Vec<Job>> {
    jobs_in(array(v)?)
}

fn jobs_in(a: &[Value]) -> RedisResult<Vec<Job>> {
    groups(a, 4)?
        .map(|g| {
            Ok(Job {
                id: text(&g[0])?,
                payload: bytes(&g[1])?,
                attempt: int(&g[2])?,
                receipt: int(&g[3])?,
            })
        })
        .collect()
}

pub(crate) fn dead_letters(v: &Value) -> RedisResult<Vec<DeadLetter>> {
    dead_letters_in(array(v)?)
}

fn dead_letters_in(a: &[Value]) -> RedisResult<Vec<DeadLetter>> {
    groups(a, 4)?
        .map(|g| {
            Ok(DeadLetter {
                id: text(&g[0])?,
                payload: bytes(&g[1])?,
                attempts: int(&g[2])?,
                dead_at_ms: int(&g[3])?,
            })
        })
        .collect()
}

pub(crate) fn scheduled_jobs(v: &Value) -> RedisResult<Vec<ScheduledJob>> {
    scheduled_jobs_in(array(v)?)
}

fn scheduled_jobs_in(a: &[Value]) -> RedisResult<Vec<ScheduledJob>> {
    groups(a, 5)?
        .map(|g| {
            Ok(ScheduledJob {
                id: text(&g[0])?,
                payload: bytes(&g[1])?,
                attempts: int(&g[2])?,
                at_ms: int(&g[3])?,
                leased: int(&g[4])? == 1,
            })
        })
        .collect()
}

pub(crate) fn queue_info(v: &Value) -> RedisResult<QueueInfo> {
    let m = pairs(v)?;
    Ok(QueueInfo {
        jobs: int(field(&m, "jobs")?)?,
        ready: int(field(&m, "ready")?)?,
        scheduled: int(field(&m, "scheduled")?)?,
        dead: int(field(&m, "dead")?)?,
    })
}

pub(crate) fn nack(v: &Value) -> RedisResult<Nack> {
    match int(v)? {
        0 => Ok(Nack::Stale),
        1 => Ok(Nack::Requeued),
        2 => Ok(Nack::Dead),
        _ => Err(bad("DELAYQ.NACK", v)),
    }
}

pub(crate) fn ints(v: &Value) -> RedisResult<Vec<i64>> {
    array(v)?.iter().map(int).collect()
}

pub(crate) fn texts(v: &Value) -> RedisResult<Vec<String>> {
    array(v)?.iter().map(text).collect()
}

/// `STOCK.RESERVE`'s status.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReserveStatus {
    /// Reserved.
    Ok,
    /// Fewer units available than asked for.
    SoldOut,
    /// The user would hold more than the stock's limit.
    Limit,
}

/// `STOCK.RESERVE`: the status, the units available after it (OK) or now
/// (refused), and the instant (unix ms) the lease ends (0 when refused).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reservation {
    pub status: ReserveStatus,
    pub left: i64,
    pub lease_end: i64,
}

/// `STOCK.INFO`: `available + reserved + sold == total` (a lapsed lease
/// not yet returned counts as reserved), the per-user limit (0: none), the
/// lease and the orders recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StockInfo {
    pub total: i64,
    pub available: i64,
    pub reserved: i64,
    pub sold: i64,
    pub limit: i64,
    pub lease_ms: i64,
    pub orders: i64,
}

/// One `STOCK.AUDIT` step: the cursor to pass next ("0": the walk is
/// over), the orders checked and the problems found (none: consistent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StockAudit {
    pub cursor: String,
    pub checked: i64,
    pub problems: Vec<String>,
}

pub(crate) fn reservation(v: &Value) -> RedisResult<Reservation> {
    let a = exact(v, 3)?;
    let status = match text(&a[0])?.as_str() {
        "OK" => ReserveStatus::Ok,
        "SOLDOUT" => ReserveStatus::SoldOut,
        "LIMIT" => ReserveStatus::Limit,
        _ => return Err(bad("STOCK.RESERVE", v)),
    };
    Ok(Reservation {
        status,
        left: int(&a[1])?,
        lease_end: int(&a[2])?,
    })
}

pub(crate) fn stock_info(v: &Value) -> RedisResult<Option<StockInfo>> {
    let m = pairs(v)?;
    if m.is_empty() {
        return Ok(None);
    }
    Ok(Some(StockInfo {
        total: int(field(&m, "total")?)?,
        available: int(field(&m, "available")?)?,
        reserved: int(field(&m, "reserved")?)?,
        sold: int(field(&m, "sold")?)?,
        limit: int(field(&m, "limit")?)?,
        lease_ms: int(field(&m, "lease_ms")?)?,
        orders: int(field(&m, "orders")?)?,
    }))
}

pub(crate) fn stock_audit(v: &Value) -> RedisResult<StockAudit> {
    let a = array(v)?;
    if a.len() < 2 {
        return Err(bad("STOCK.AUDIT", v));
    }
    Ok(StockAudit {
        cursor: text(&a[0])?,
        checked: int(&a[1])?,
        problems: a[2..].iter().map(text).collect::<RedisResult<_>>()?,
    })
}

// ---------------------------------------------------------------------------
// `FromRedisValue`: every reply type goes through `query` and pipelines.
//
// A new reply type is one line in `from_reply!` (a reply that is one value)
// or `from_list!` (an element of a list reply), naming the parser above.

/// Unwraps the parse of a reply that is nil (or empty) when the entity is
/// absent, for a query that asked for the type itself.
fn present<T>(found: Option<T>, what: &str, v: &Value) -> RedisResult<T> {
    found.ok_or_else(|| {
        RedisError::from((
            ErrorKind::TypeError,
            "hotpath: no such entity",
            format!("{what} replied {v:?}: query Option<…> (nil) or Maybe<…> (empty) for an absent entity"),
        ))
    })
}

/// Types that are one reply: `query::<PollInfo>()`, `query::<Grab>()`, ….
macro_rules! from_reply {
    ($($t:ty => $parse:expr;)*) => {$(
        impl FromRedisValue for $t {
            fn from_redis_value(v: &Value) -> RedisResult<Self> {
                let parse: fn(&Value) -> RedisResult<$t> = $parse;
                parse(v)
            }
        }
    )*};
}

from_reply! {
    PollRank => |v| present(poll_rank(v)?, "POLL.RANK", v);
    PollInfo => |v| present(poll_info(v)?, "POLL.INFO", v);
    PollSync => poll_sync;
    RankEntry => |v| present(rank_entry(v)?, "RANK.GET", v);
    LikeChange => |v| flag_count(v).map(|(changed, count)| LikeChange { changed, count });
    LikeToggle => |v| flag_count(v).map(|(liked, count)| LikeToggle { liked, count });
    LikeInfo => like_info;
    Grab => grab;
    PacketInfo => |v| present(packet_info(v)?, "REDPACKET.INFO", v);
    Join => join;
    BagResult => bag_result;
    BagInfo => |v| present(bag_info(v)?, "LUCKYBAG.INFO", v);
    RateResult => rate;
    Throttle => throttle;
    IdemBegin => idem_begin;
    IdemRecord => |v| present(idem_record(v)?, "IDEM.GET", v);
    QueueInfo => queue_info;
    Nack => nack;
    Reservation => reservation;
    StockInfo => |v| present(stock_info(v)?, "STOCK.INFO", v);
    StockAudit => stock_audit;
}

/// Elements of list replies: `query::<Vec<PollEntry>>()` parses the whole
/// list (the flat RESP2 rows, RESP3's maps or rows); one element alone
/// parses from a one-row reply.
macro_rules! from_list {
    ($($t:ty => $value:expr, $slice:expr;)*) => {$(
        impl FromRedisValue for $t {
            fn from_redis_value(v: &Value) -> RedisResult<Self> {
                let parse: fn(&Value) -> RedisResult<Vec<$t>> = $value;
                let mut all = parse(v)?;
                if all.len() != 1 {
                    return Err(bad(concat!("one ", stringify!($t)), v));
                }
                Ok(all.remove(0))
            }

            fn from_redis_values(items: &[Value]) -> RedisResult<Vec<Self>> {
                let parse: fn(&[Value]) -> RedisResult<Vec<$t>> = $slice;
                parse(items)
            }

            fn from_owned_redis_values(items: Vec<Value>) -> RedisResult<Vec<Self>> {
                Self::from_redis_values(&items)
            }
        }
    )*};
}

from_list! {
    PollEntry => poll_entries, poll_entries_in;
    RankMember => rank_members, rank_members_in;
    RankPlace => |v| rank_places_in(array(v)?), rank_places_in;
    Liker => likers, |a| likers_of(pairs_in(a)?);
    Winner => winners, |a| winners_of(pairs_in(a)?);
    LockHolder => lock_holders, lock_holders_in;
    Job => jobs, jobs_in;
    DeadLetter => dead_letters, dead_letters_in;
    ScheduledJob => scheduled_jobs, scheduled_jobs_in;
}

/// A reply that is empty (or nil) for an absent entity: `REDPACKET.INFO`,
/// `LUCKYBAG.INFO` and `STOCK.INFO` answer an empty array (RESP2) or map
/// (RESP3), which `Option<T>` (nil only) does not read as `None`.
/// `query::<Maybe<PacketInfo>>()?.0` is an `Option`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Maybe<T>(pub Option<T>);

impl<T> From<Maybe<T>> for Option<T> {
    fn from(m: Maybe<T>) -> Option<T> {
        m.0
    }
}

impl<T: FromRedisValue> FromRedisValue for Maybe<T> {
    fn from_redis_value(v: &Value) -> RedisResult<Self> {
        let empty = match v {
            Value::Nil => true,
            Value::Array(a) | Value::Set(a) => a.is_empty(),
            Value::Map(m) => m.is_empty(),
            _ => false,
        };
        if empty {
            return Ok(Maybe(None));
        }
        T::from_redis_value(v).map(|t| Maybe(Some(t)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(s: &str) -> Value {
        Value::BulkString(s.as_bytes().to_vec())
    }

    #[test]
    fn lists_parse_from_their_flat_rows() {
        let v = Value::Array(vec![b("alice"), Value::Int(3), b("bob"), Value::Int(1)]);
        let got: Vec<PollEntry> = redis::from_redis_value(&v).unwrap();
        assert_eq!(got, poll_entries(&v).unwrap());
        assert_eq!(got[1].candidate, "bob");
        let owned: Vec<PollEntry> = redis::from_owned_redis_value(v.clone()).unwrap();
        assert_eq!(owned, got);
        // A row count that does not divide is an error, not a short list.
        let odd = Value::Array(vec![b("alice"), Value::Int(3), b("bob")]);
        assert!(redis::from_redis_value::<Vec<PollEntry>>(&odd).is_err());
        // One element parses from a one-row reply only.
        assert!(redis::from_redis_value::<PollEntry>(&v).is_err());
        let one = Value::Array(vec![b("alice"), Value::Int(3)]);
        assert_eq!(redis::from_redis_value::<PollEntry>(&one).unwrap().votes, 3);
    }

    #[test]
    fn absent_entities_are_none_or_a_clear_error() {
        let empty = Value::Array(vec![]);
        let m: Maybe<PollInfo> = redis::from_redis_value(&empty).unwrap();
        assert_eq!(m.0, None);
        let m: Maybe<StockInfo> = redis::from_redis_value(&Value::Map(vec![])).unwrap();
        assert_eq!(m.0, None);
        let e = redis::from_redis_value::<PollInfo>(&empty).unwrap_err();
        assert!(e.to_string().contains("no such entity"), "{e}");
        let r: Option<RankEntry> = redis::from_redis_value(&Value::Nil).unwrap();
        assert_eq!(r, None);
    }
}
