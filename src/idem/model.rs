//! The pure logic of idempotency records: what BEGIN, COMPLETE, ABORT and
//! GET decide for a record at an instant. Nothing here reads a clock or
//! touches Redis: every function takes `now` (unix ms) and returns the
//! decision, which the handlers write and replicate exactly.
//!
//! A record is a Hash: `state` (`running` | `done` | `aborted`), `fp`,
//! `fence`, `lease` (lease end, unix ms), `ttl` (seconds), and `result`
//! (only when `done`). Every integer stays below 2^53 ([`MAX_INT`]) so
//! that the Lua twins, whose numbers are doubles, compute the same values.

use crate::args::parse_i64_plain;

/// The largest integer stored (fence, instants): 2^53 − 1.
pub const MAX_INT: i64 = (1 << 53) - 1;
/// The longest lease, 100 years in ms.
pub const MAX_LEASE_MS: i64 = 3_153_600_000_000;
/// The longest record TTL, 100 years in seconds.
pub const MAX_TTL_S: i64 = 3_153_600_000;
/// The latest `NOW` accepted, 9999-12-31T23:59:59.999Z in unix ms.
pub const MAX_TIME_MS: i64 = 253_402_300_799_999;

/// Where a record stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// A worker holds (or held, if the lease is over) the request.
    Running,
    /// The result is stored.
    Done,
    /// Given up: the next BEGIN starts again.
    Aborted,
}

impl State {
    /// The stored word.
    pub fn word(self) -> &'static [u8] {
        match self {
            State::Running => b"running",
            State::Done => b"done",
            State::Aborted => b"aborted",
        }
    }

    /// Reads a stored word.
    pub fn parse(v: &[u8]) -> Option<State> {
        match v {
            b"running" => Some(State::Running),
            b"done" => Some(State::Done),
            b"aborted" => Some(State::Aborted),
            _ => None,
        }
    }
}

/// The fields of a record that decide (the result is read only when
/// needed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Record {
    pub state: State,
    pub fp: Vec<u8>,
    pub fence: i64,
    /// The lease end, unix ms: the lease runs while `now < lease`.
    pub lease: i64,
    /// The record's TTL in seconds.
    pub ttl: i64,
}

/// The record's integer fields as stored, checked: `None` names the
/// field that is not a valid value.
pub fn parse_int(field: &'static str, v: Option<&[u8]>) -> Result<i64, &'static str> {
    let (lo, hi) = match field {
        "ttl" => (1, MAX_TTL_S),
        _ => (0, MAX_INT),
    };
    v.and_then(parse_i64_plain)
        .filter(|n| (lo..=hi).contains(n))
        .ok_or(field)
}

/// What BEGIN decides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Begin {
    /// A new record (or a taken-over one): write it with this fence,
    /// lease end and key expiry.
    New {
        fence: i64,
        lease: i64,
        expire_at: i64,
    },
    /// The lease runs: the ms left.
    Running(i64),
    /// The result is stored: reply it.
    Done,
    /// Another request under the same key.
    Mismatch,
}

/// Occurs when the next fence would pass [`MAX_INT`].
#[derive(Debug, PartialEq, Eq)]
pub struct FenceOverflow;

/// Decides BEGIN for the stored record `rec` (None: no key), a request of
/// fingerprint `fp` with a lease of `lease_ms` and a TTL of `ttl_s`
/// seconds, at `now`.
///
/// The fence of a new record is `max(previous fence + 1, now)`: it
/// strictly increases while the record lives, and is not reused after the
/// record expires unless the clock went back.
pub fn begin(
    rec: Option<&Record>,
    fp: &[u8],
    lease_ms: i64,
    ttl_s: i64,
    now: i64,
) -> Result<Begin, FenceOverflow> {
    let prev = match rec {
        None => 0,
        Some(r) if r.state == State::Aborted => r.fence,
        Some(r) if r.fp != fp => return Ok(Begin::Mismatch),
        Some(r) if r.state == State::Done => return Ok(Begin::Done),
        Some(r) if now < r.lease => return Ok(Begin::Running(r.lease - now)),
        Some(r) => r.fence,
    };
    if prev >= MAX_INT {
        return Err(FenceOverflow);
    }
    let fence = (prev + 1).max(now);
    let lease = now + lease_ms;
    let expire_at = (now + ttl_s * 1000).max(lease);
    Ok(Begin::New {
        fence,
        lease,
        expire_at,
    })
}

/// What COMPLETE decides.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Complete {
    /// Store the result; the key expires at `expire_at`.
    Store { expire_at: i64 },
    /// The same result is stored under this fence already: nothing to do.
    Again,
    /// No record.
    NoRecord,
    /// Another fence holds the record, or it was aborted.
    Stale,
    /// Done under this fence with another result.
    OtherResult,
}

/// Decides COMPLETE with `fence` and a result at `now`. `same_result`
/// tells whether a `done` record's stored result equals the given one
/// (asked only for a `done` record of this fence).
pub fn complete(
    rec: Option<&Record>,
    fence: i64,
    now: i64,
    same_result: impl FnOnce() -> bool,
) -> Complete {
    let Some(r) = rec else {
        return Complete::NoRecord;
    };
    if r.fence != fence {
        return Complete::Stale;
    }
    match r.state {
        State::Aborted => Complete::Stale,
        State::Done if same_result() => Complete::Again,
        State::Done => Complete::OtherResult,
        // The fence decides, not the clock: a worker whose lease ran out
        // completes while no later BEGIN took the record over.
        State::Running => Complete::Store {
            expire_at: now + r.ttl * 1000,
        },
    }
}

/// Decides ABORT with `fence`: true when the record goes `aborted`.
pub fn abort(rec: Option<&Record>, fence: i64) -> bool {
    matches!(rec, Some(r) if r.state == State::Running && r.fence == fence)
}

/// The state GET shows at `now` and the ms left in the lease: a running
/// record whose lease is over shows `ended`.
pub fn shown(r: &Record, now: i64) -> (&'static str, i64) {
    match r.state {
        State::Running if now < r.lease => ("running", r.lease - now),
        State::Running => ("ended", 0),
        State::Done => ("done", 0),
        State::Aborted => ("aborted", 0),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(state: State, fp: &[u8], fence: i64, lease: i64) -> Record {
        Record {
            state,
            fp: fp.to_vec(),
            fence,
            lease,
            ttl: 100,
        }
    }

    #[test]
    fn first_begin_is_new_with_the_clock_as_fence() {
        let b = begin(None, b"a", 30, 100, 1_000).unwrap();
        assert_eq!(
            b,
            Begin::New {
                fence: 1_000,
                lease: 1_030,
                expire_at: 101_000
            }
        );
    }

    #[test]
    fn expiry_is_never_before_the_lease_end() {
        let b = begin(None, b"a", 500_000, 100, 1_000).unwrap();
        assert_eq!(
            b,
            Begin::New {
                fence: 1_000,
                lease: 501_000,
                expire_at: 501_000
            }
        );
    }

    #[test]
    fn running_lease_answers_time_left() {
        let r = rec(State::Running, b"a", 7, 1_030);
        assert_eq!(
            begin(Some(&r), b"a", 30, 100, 1_010),
            Ok(Begin::Running(20))
        );
        assert_eq!(begin(Some(&r), b"a", 30, 100, 1_029), Ok(Begin::Running(1)));
    }

    #[test]
    fn ended_lease_is_taken_over_with_a_higher_fence() {
        let r = rec(State::Running, b"a", 5_000, 1_030);
        // The fence stays above the previous one even when the clock is behind it.
        match begin(Some(&r), b"a", 30, 100, 1_030).unwrap() {
            Begin::New { fence, lease, .. } => {
                assert_eq!(fence, 5_001);
                assert_eq!(lease, 1_060);
            }
            other => panic!("{other:?}"),
        }
        match begin(Some(&r), b"a", 30, 100, 9_000).unwrap() {
            Begin::New { fence, .. } => assert_eq!(fence, 9_000),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn other_fingerprint_is_a_mismatch_unless_aborted() {
        for state in [State::Running, State::Done] {
            for now in [1_000, 2_000] {
                let r = rec(state, b"a", 7, 1_030);
                assert_eq!(begin(Some(&r), b"b", 30, 100, now), Ok(Begin::Mismatch));
            }
        }
        let r = rec(State::Aborted, b"a", 7, 1_030);
        assert!(matches!(
            begin(Some(&r), b"b", 30, 100, 1_000),
            Ok(Begin::New { fence: 1_000, .. })
        ));
    }

    #[test]
    fn done_replays_whatever_the_clock() {
        let r = rec(State::Done, b"a", 7, 1_030);
        assert_eq!(begin(Some(&r), b"a", 30, 100, 0), Ok(Begin::Done));
        assert_eq!(begin(Some(&r), b"a", 30, 100, 50_000), Ok(Begin::Done));
    }

    #[test]
    fn fence_overflow_is_refused() {
        let r = rec(State::Aborted, b"a", MAX_INT, 0);
        assert_eq!(begin(Some(&r), b"a", 30, 100, 1), Err(FenceOverflow));
        let r = rec(State::Aborted, b"a", MAX_INT - 1, 0);
        assert!(matches!(
            begin(Some(&r), b"a", 30, 100, 1),
            Ok(Begin::New { fence: MAX_INT, .. })
        ));
    }

    #[test]
    fn complete_by_fence() {
        let r = rec(State::Running, b"a", 7, 1_030);
        assert_eq!(
            complete(Some(&r), 7, 1_010, || unreachable!()),
            Complete::Store { expire_at: 101_010 }
        );
        // After the lease, while nobody took over, the fence still holds.
        assert_eq!(
            complete(Some(&r), 7, 5_000, || unreachable!()),
            Complete::Store { expire_at: 105_000 }
        );
        assert_eq!(
            complete(Some(&r), 6, 1_010, || unreachable!()),
            Complete::Stale
        );
        assert_eq!(complete(None, 7, 1_010, || true), Complete::NoRecord);
        let d = rec(State::Done, b"a", 7, 1_030);
        assert_eq!(complete(Some(&d), 7, 1_010, || true), Complete::Again);
        assert_eq!(
            complete(Some(&d), 7, 1_010, || false),
            Complete::OtherResult
        );
        assert_eq!(complete(Some(&d), 8, 1_010, || true), Complete::Stale);
        let a = rec(State::Aborted, b"a", 7, 1_030);
        assert_eq!(complete(Some(&a), 7, 1_010, || true), Complete::Stale);
    }

    #[test]
    fn abort_only_the_running_fence() {
        let r = rec(State::Running, b"a", 7, 1_030);
        assert!(abort(Some(&r), 7));
        assert!(!abort(Some(&r), 8));
        assert!(!abort(None, 7));
        assert!(!abort(Some(&rec(State::Done, b"a", 7, 0)), 7));
        assert!(!abort(Some(&rec(State::Aborted, b"a", 7, 0)), 7));
    }

    #[test]
    fn shown_states() {
        let r = rec(State::Running, b"a", 7, 1_030);
        assert_eq!(shown(&r, 1_000), ("running", 30));
        assert_eq!(shown(&r, 1_030), ("ended", 0));
        assert_eq!(shown(&rec(State::Done, b"a", 7, 0), 0), ("done", 0));
    }

    #[test]
    fn stored_fields_are_checked() {
        assert_eq!(parse_int("fence", Some(b"12")), Ok(12));
        assert_eq!(parse_int("fence", Some(b"-1")), Err("fence"));
        assert_eq!(parse_int("fence", None), Err("fence"));
        assert_eq!(parse_int("ttl", Some(b"0")), Err("ttl"));
        assert_eq!(State::parse(b"done"), Some(State::Done));
        assert_eq!(State::parse(b"DONE"), None);
    }

    /// A random walk of many workers over one record, checking after every
    /// step: fences strictly increase, exactly one result is ever stored,
    /// and a done record never changes.
    #[test]
    fn random_workers_complete_once() {
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut rnd = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        for _ in 0..200 {
            let mut r: Option<Record> = None;
            let mut result: Option<i64> = None;
            let mut fences: Vec<i64> = Vec::new();
            let mut now = 1_000;
            for _ in 0..100 {
                now += rnd(20) as i64;
                let worker_fence = fences.get(rnd(fences.len() as u64 + 1) as usize).copied();
                match rnd(3) {
                    0 => {
                        if let Begin::New { fence, lease, .. } =
                            begin(r.as_ref(), b"a", 10, 100, now).unwrap()
                        {
                            assert!(fences.last().is_none_or(|f| fence > *f));
                            fences.push(fence);
                            r = Some(rec(State::Running, b"a", fence, lease));
                        }
                    }
                    1 => {
                        let Some(f) = worker_fence else { continue };
                        let stored = result;
                        if let Complete::Store { .. } =
                            complete(r.as_ref(), f, now, || stored == Some(f))
                        {
                            assert_eq!(result, None, "a second result");
                            result = Some(f);
                            r.as_mut().unwrap().state = State::Done;
                        }
                    }
                    _ => {
                        let Some(f) = worker_fence else { continue };
                        if abort(r.as_ref(), f) {
                            r.as_mut().unwrap().state = State::Aborted;
                        }
                    }
                }
                if result.is_some() {
                    assert_eq!(r.as_ref().unwrap().state, State::Done);
                }
            }
        }
    }
}
