//! Parsed replies: one type per reply shape of docs/<family>.md.

use redis::{ErrorKind, RedisError, RedisResult, Value};

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
    let a = array(v)?;
    if a.len() % 2 != 0 {
        return Err(bad("pairs", v));
    }
    Ok(a.chunks(2).map(|c| (&c[0], &c[1])).collect())
}

/// A list reply of `width`-field rows: RESP2 sends it flat
/// (`[a1, b1, a2, b2, …]`), RESP3 as an array of rows (`[[a1, b1], …]`,
/// the way `ZRANGE … WITHSCORES` answers).
pub(crate) fn rows(v: &Value, width: usize) -> RedisResult<Vec<&[Value]>> {
    let a = array(v)?;
    if matches!(a.first(), Some(Value::Array(_))) {
        return a.iter().map(|r| exact(r, width)).collect();
    }
    if a.len() % width != 0 {
        return Err(bad(&format!("rows of {width}"), v));
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
    rows(v, 2)?
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
        deltas: poll_entries(&Value::Array(rest.to_vec()))?,
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
    rows(v, 2)?
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
    rows(v, 3)?
        .into_iter()
        .map(|c| {
            Ok(RankPlace {
                rank: int(&c[0])?,
                member: text(&c[1])?,
                points: int(&c[2])?,
            })
        })
        .collect::<RedisResult<Vec<_>>>()
        .map(Some)
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
    pairs(v)?
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
    pairs(v)?
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
fn groups(v: &Value, n: usize) -> RedisResult<std::slice::Chunks<'_, Value>> {
    let a = array(v)?;
    if a.len() % n != 0 {
        return Err(bad(&format!("groups of {n}"), v));
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
    groups(v, 4)?
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
    groups(v, 4)?
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
    groups(v, 4)?
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
    groups(v, 5)?
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
