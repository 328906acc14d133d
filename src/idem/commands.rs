//! IDEM's handlers: parse and validate everything, open `B`, read the
//! record, decide with the model, write, replicate what was written, reply.
//!
//! Replication (decision 1 of issue 27): a write replicates the command
//! itself, with what it read made explicit — BEGIN as `IDEM.BEGIN B fp
//! lease-ms TTL <ttl> NOW <now>` (the TTL it used, which may come from the
//! `idem-ttl` config, and the clock), COMPLETE as `IDEM.COMPLETE B fence
//! result NOW <now>`, ABORT verbatim — so replicas and the AOF replay it
//! with the module and end byte-identical, expiry included (one
//! `RM_Replicate` per write instead of `HSET` and `PEXPIREAT`).

use redis_module::{Context, KeyType, RedisError, RedisResult, RedisString, RedisValue};

use super::model::{self, Begin, Complete, Record, State, MAX_LEASE_MS, MAX_TIME_MS, MAX_TTL_S};
use super::{
    COUNT_ABORTED, COUNT_BEGUN, COUNT_COMPLETED, COUNT_MISMATCHED, COUNT_REPLAYED, COUNT_RUNNING,
    COUNT_STALE, COUNT_TAKEN_OVER, FAMILY,
};
use crate::argv::{is, Args};
use crate::config;
use crate::error;
use crate::keys::{int_string, Field, Key};
use crate::replicate;
use crate::util;

fn corrupt(name: &[u8], field: &str) -> RedisError {
    error::corrupt(FAMILY, name, Some(field))
}

static F_STATE: Field = Field::new(c"state");
static F_FP: Field = Field::new(c"fp");
static F_FENCE: Field = Field::new(c"fence");
static F_LEASE: Field = Field::new(c"lease");
static F_TTL: Field = Field::new(c"ttl");
static F_RESULT: Field = Field::new(c"result");

/// A record as one command read it: the fields that decide, and the
/// stored result (done records only).
type Read = Option<(Record, Option<RedisString>)>;

/// Opens `B` and reads its record (None: no key), every field in one
/// `HashGet`.
///
/// Occurs as `WRONGTYPE` when `B` is not a Hash, and as a corrupt-data
/// error naming the first field IDEM would not have written.
fn open(ctx: &Context, arg: &RedisString, write: bool) -> Result<(Key, Read), RedisError> {
    let name = arg.as_slice();
    let key = Key::open_arg(ctx, arg, write);
    match key.kind() {
        KeyType::Empty => return Ok((key, None)),
        KeyType::Hash => {}
        _ => return Err(error::wrongtype()),
    }
    let [state, fp, fence, lease, ttl, result] =
        key.hget_fields([&F_STATE, &F_FP, &F_FENCE, &F_LEASE, &F_TTL, &F_RESULT]);
    let state = state
        .and_then(|v| State::parse(v.as_slice()))
        .ok_or_else(|| corrupt(name, "state"))?;
    let fp = fp
        .map(|v| v.as_slice().to_vec())
        .filter(|v| !v.is_empty())
        .ok_or_else(|| corrupt(name, "fp"))?;
    let int = |f: &'static str, v: Option<RedisString>| {
        model::parse_int(f, v.as_ref().map(|v| v.as_slice())).map_err(|f| corrupt(name, f))
    };
    let fence = int("fence", fence)?;
    let lease = int("lease", lease)?;
    let ttl = int("ttl", ttl)?;
    // A result belongs to a done record only.
    if result.is_some() != (state == State::Done) {
        return Err(corrupt(name, "result"));
    }
    let rec = Record {
        state,
        fp,
        fence,
        lease,
        ttl,
    };
    Ok((key, Some((rec, result))))
}

/// Writes `fields` to `B` and sets its expiry (when `expire_at` > 0).
/// Names are made once ([`Field`]) and values are the client's own
/// strings where they can be: nothing is copied on the way to the Hash.
/// The caller replicates the command.
fn write(key: &Key, fields: &[(&Field, &RedisString)], expire_at: i64) {
    for (f, v) in fields {
        key.hput_field(f, v);
    }
    if expire_at > 0 {
        key.set_abs_expire_ms(expire_at);
    }
}

/// The stored words of the states, as Redis strings made once.
static W_RUNNING: Field = Field::new(c"running");
static W_DONE: Field = Field::new(c"done");
static W_ABORTED: Field = Field::new(c"aborted");

/// Returns a constant word as a Redis string for one call (a reference
/// taken on the string made once, given back on drop).
fn word(w: &'static Field) -> RedisString {
    RedisString::new(None, w.string())
}

/// IDEM.BEGIN B fingerprint lease-ms [TTL seconds] [NOW unix-ms]
///
/// Replies `[NEW, fence]`, `[RUNNING, ms-left]`, `[DONE, result]` or
/// `[MISMATCH, nil]`; only NEW writes.
pub fn idem_begin(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(4)?;
    c.skip(2)?;
    if c.arg(2).is_empty() {
        return Err(error::family(FAMILY, "fingerprint must not be empty"));
    }
    let lease_ms = c.next_i64(1, MAX_LEASE_MS)?;
    let (mut ttl, mut now) = (None, None);
    while !c.done() {
        let k = c.keyword()?;
        if is(k, "TTL") && ttl.is_none() {
            ttl = Some(c.option_i64(1, MAX_TTL_S)?);
        } else if is(k, "NOW") && now.is_none() {
            now = Some(c.option_i64(0, MAX_TIME_MS)?);
        } else {
            return Err(error::syntax());
        }
    }
    let ttl = ttl.unwrap_or_else(|| config::get(&config::IDEM_TTL));
    let now = now.unwrap_or_else(util::now_ms);
    let args = c.all();
    let (arg, fp) = (&args[1], args[2].as_slice());
    let (key, read) = open(ctx, arg, true)?;
    let (rec, result) = read.unzip();
    let decided = model::begin(rec.as_ref(), fp, lease_ms, ttl, now)
        .map_err(|_| error::overflow(FAMILY, arg.as_slice(), Some("fence")))?;
    let (status, value): (&[u8], RedisValue) = match decided {
        Begin::New {
            fence,
            lease,
            expire_at,
        } => {
            let (f, l, t) = (
                int_string(ctx, fence),
                int_string(ctx, lease),
                int_string(ctx, ttl),
            );
            let running = word(&W_RUNNING);
            write(
                &key,
                &[
                    (&F_STATE, &running),
                    (&F_FP, &args[2]),
                    (&F_FENCE, &f),
                    (&F_LEASE, &l),
                    (&F_TTL, &t),
                ],
                expire_at,
            );
            replicate::command_kw_now(ctx, c"IDEM.BEGIN", &args[1..4], c"TTL", ttl, now);
            COUNT_BEGUN.incr();
            if rec.is_some_and(|r| r.state == State::Running) {
                COUNT_TAKEN_OVER.incr();
            }
            util::notify_static(ctx, c"hotpath.idem.begin", arg);
            (b"NEW", RedisValue::Integer(fence))
        }
        Begin::Running(left) => {
            COUNT_RUNNING.incr();
            (b"RUNNING", RedisValue::Integer(left))
        }
        Begin::Done => {
            COUNT_REPLAYED.incr();
            let result = result.flatten().map(|r| r.as_slice().to_vec());
            (b"DONE", util::bulk(result.unwrap_or_default()))
        }
        Begin::Mismatch => {
            COUNT_MISMATCHED.incr();
            (b"MISMATCH", RedisValue::Null)
        }
    };
    Ok(util::array(vec![util::bulk(status), value]))
}

/// IDEM.COMPLETE B fence result [NOW unix-ms]
///
/// Stores the result under the fence that holds the record (1), or
/// replies 0 when this fence's result is stored already and equal; a
/// stale fence, a missing record or another result is an error.
pub fn idem_complete(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(4)?;
    c.skip(1)?;
    let fence = c.next_i64(i64::MIN, i64::MAX)?;
    c.skip(1)?;
    let now = c.trailing_now(MAX_TIME_MS)?.unwrap_or_else(util::now_ms);
    let args = c.all();
    let (arg, result) = (&args[1], args[3].as_slice());
    let (key, read) = open(ctx, arg, true)?;
    let (rec, stored) = read.unzip();
    let decided = model::complete(rec.as_ref(), fence, now, || {
        stored.flatten().is_some_and(|s| s.as_slice() == result)
    });
    match decided {
        Complete::Store { expire_at } => {
            let done = word(&W_DONE);
            write(&key, &[(&F_STATE, &done), (&F_RESULT, &args[3])], expire_at);
            replicate::command_now(ctx, c"IDEM.COMPLETE", &args[1..4], now);
            COUNT_COMPLETED.incr();
            util::notify_static(ctx, c"hotpath.idem.complete", arg);
            Ok(RedisValue::Integer(1))
        }
        Complete::Again => Ok(RedisValue::Integer(0)),
        Complete::NoRecord => Err(error::family(FAMILY, "no such record")),
        Complete::Stale => {
            COUNT_STALE.incr();
            Err(error::family(FAMILY, &format!("stale fence {fence}")))
        }
        Complete::OtherResult => Err(error::family(
            FAMILY,
            "already completed with another result",
        )),
    }
}

/// IDEM.ABORT B fence
///
/// Marks the record begun with `fence` aborted (1), so that the next
/// BEGIN starts again; 0 and nothing changes otherwise.
pub fn idem_abort(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(3)?;
    c.skip(1)?;
    let fence = c.next_i64(i64::MIN, i64::MAX)?;
    c.expect_done()?;
    let arg = c.string(1);
    let (key, read) = open(ctx, arg, true)?;
    if !model::abort(read.as_ref().map(|(r, _)| r), fence) {
        return Ok(RedisValue::Integer(0));
    }
    // The expiry stays: the record keeps its fence until it expires.
    let aborted = word(&W_ABORTED);
    write(&key, &[(&F_STATE, &aborted)], 0);
    ctx.replicate_verbatim();
    COUNT_ABORTED.incr();
    util::notify_static(ctx, c"hotpath.idem.abort", arg);
    Ok(RedisValue::Integer(1))
}

/// The names of IDEM.GET's fields (RESP3 map keys).
const GET_FIELDS: [&str; 5] = ["state", "fingerprint", "fence", "lease_ms", "result"];

/// IDEM.GET B [NOW unix-ms]
///
/// Replies `[state, fingerprint, fence, lease_ms, result]` (a map in
/// RESP3), or nil when there is no record.
pub fn idem_get(ctx: &Context, c: &mut Args) -> RedisResult {
    c.require(2)?;
    c.skip(1)?;
    let now = c.trailing_now(MAX_TIME_MS)?.unwrap_or_else(util::now_ms);
    let (key, read) = open(ctx, c.string(1), false)?;
    drop(key);
    let Some((r, result)) = read else {
        return Ok(RedisValue::Null);
    };
    let (state, left) = model::shown(&r, now);
    let result = result.map(|v| util::bulk(v.as_slice()));
    Ok(util::record(
        ctx,
        &GET_FIELDS,
        vec![
            util::bulk(state.as_bytes()),
            util::bulk(r.fp),
            RedisValue::Integer(r.fence),
            RedisValue::Integer(left),
            result.unwrap_or(RedisValue::Null),
        ],
    ))
}
