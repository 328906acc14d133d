//! The Lua twins of DELAYQ (the EVALSHA scripts and the Functions library,
//! each test run both ways) against the module: random streams of adds
//! (delays, due times, attempts, lost-lease caps, REPLACE), polls, acks, nacks with delay
//! and backoff, lease heartbeats, dead letters, re-drives, reads,
//! malformed arguments and hand-edited records, sent to the module on
//! queue `m{…}` and to the scripts on queue `l{…}`; every reply (key names
//! aside) and the resulting data must be identical.
//!
//! BLOCK is left out: the module waits, a script cannot (the twin answers
//! at once, like the module inside MULTI, which tests/delayq.rs checks).

use crate::common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::*;

const T0: i64 = 1_764_720_000_000;
const SCRIPTS: [(&str, &str); 11] = [
    ("DELAYQ.ADD", "delayq/add.lua"),
    ("DELAYQ.POLL", "delayq/poll.lua"),
    ("DELAYQ.ACK", "delayq/ack.lua"),
    ("DELAYQ.NACK", "delayq/nack.lua"),
    ("DELAYQ.EXTEND", "delayq/extend.lua"),
    ("DELAYQ.DEAD", "delayq/dead.lua"),
    ("DELAYQ.REDRIVE", "delayq/redrive.lua"),
    ("DELAYQ.INFO", "delayq/info.lua"),
    ("DELAYQ.CANCEL", "delayq/cancel.lua"),
    ("DELAYQ.PEEK", "delayq/peek.lua"),
    ("DELAYQ.PURGE", "delayq/purge.lua"),
];

/// Runs one command both ways, asserts equal replies, returns the reply.
fn both(
    c: &mut Connection,
    lua: &KeyedTwins,
    cmd: &str,
    key: &str,
    rest: &[String],
    step: usize,
) -> Value {
    let mk = format!("m{{{key}}}");
    let lk = format!("l{{{key}}}");
    let mut margs: Vec<&str> = vec![cmd, &mk];
    margs.extend(rest.iter().map(String::as_str));
    let reply = common::cmd(c, &margs);
    let module = show(&reply).replace(&mk, &lk);
    let largs: Vec<&str> = std::iter::once(lk.as_str())
        .chain(rest.iter().map(String::as_str))
        .collect();
    let script = show(&lua.call(c, cmd, &largs));
    assert_eq!(module, script, "step {step}: {cmd} {key} {rest:?}");
    reply.unwrap_or(Value::Nil)
}

fn compare(c: &mut Connection, step: usize, last: &str) {
    let m: Vec<String> = dump_keys(c, "m{*")
        .into_iter()
        .map(|l| format!("l{}", &l[1..]))
        .collect();
    assert_eq!(m, dump_keys(c, "l{*"), "step {step} after {last}");
}

fn s<T: ToString>(v: T) -> String {
    v.to_string()
}

fn random_stream(seed: u64, steps: usize, via: Via) {
    let srv = Server::start();
    let mut c = srv.conn();
    let lua = KeyedTwins::load(&mut c, via, &SCRIPTS);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut now = T0 + rng.gen_range(0..5000);
    // Deliveries seen: (queue, id, receipt).
    let mut seen: Vec<(String, String, i64)> = Vec::new();
    for step in 0..steps {
        now += match rng.gen_range(0..10) {
            0..=4 => 0,
            5..=8 => rng.gen_range(1..300),
            _ => rng.gen_range(500..3000),
        };
        let key = s(rng.gen_range(0..3));
        let id = format!("j{}", rng.gen_range(0..8));
        let n = s("NOW");
        let op = rng.gen_range(0..112);
        let (cmd, rest): (&str, Vec<String>) = if op >= 108 {
            let mut rest = Vec::new();
            if rng.gen_bool(0.6) {
                rest.extend([s("MAXLEN"), s(rng.gen_range(0..4))]);
            }
            if rest.is_empty() || rng.gen_bool(0.4) {
                rest.extend([s("MAXAGE"), s(rng.gen_range(0..4000))]);
            }
            rest.extend([n, s(now)]);
            ("DELAYQ.PURGE", rest)
        } else if op >= 104 {
            let rest = match rng.gen_range(0..3) {
                0 => vec![s("COUNT"), s(rng.gen_range(1..5))],
                1 => vec![s("ID"), id],
                _ => vec![],
            };
            ("DELAYQ.PEEK", rest)
        } else if op >= 100 {
            let mut rest = vec![id];
            if rng.gen_bool(0.3) {
                rest.push(s("force"));
            }
            rest.extend([n, s(now)]);
            ("DELAYQ.CANCEL", rest)
        } else if op < 25 {
            let payload = ["p", "", "a:b:c", "{\"x\":1}", "\u{e9}\u{0}z"][rng.gen_range(0..5)];
            let mut rest = vec![id, s(payload)];
            match rng.gen_range(0..4) {
                0 => rest.extend([s("DELAY"), s(rng.gen_range(0..2000))]),
                1 => rest.extend([s("AT"), s(now + rng.gen_range(-500..1500))]),
                _ => {}
            }
            if rng.gen_bool(0.4) {
                rest.extend([s("ATTEMPTS"), s(rng.gen_range(1..4))]);
            }
            if rng.gen_bool(0.4) {
                rest.extend([s("LOSTMAX"), s(rng.gen_range(0..3))]);
            }
            if rng.gen_bool(0.2) {
                rest.push(s("replace"));
            }
            rest.extend([n, s(now)]);
            ("DELAYQ.ADD", rest)
        } else if op < 50 {
            let mut rest = vec![s([100, 500, 1000, 3000][rng.gen_range(0..4)])];
            if rng.gen_bool(0.5) {
                rest.extend([s("COUNT"), s(rng.gen_range(1..5))]);
            }
            rest.extend([n, s(now)]);
            ("DELAYQ.POLL", rest)
        } else if op < 80 && !seen.is_empty() {
            let (q, jid, receipt) = seen[rng.gen_range(0..seen.len())].clone();
            let receipt = if rng.gen_bool(0.9) {
                receipt
            } else {
                receipt + 1
            };
            let key_rest = |extra: Vec<String>| {
                let mut r = vec![jid.clone(), s(receipt)];
                r.extend(extra);
                r
            };
            let (cmd, rest) = match rng.gen_range(0..4) {
                0 | 1 => ("DELAYQ.ACK", key_rest(vec![])),
                2 => {
                    let mut extra = match rng.gen_range(0..3) {
                        0 => vec![s("DELAY"), s(rng.gen_range(0..1500))],
                        1 => vec![
                            s("BACKOFF"),
                            s(rng.gen_range(1..400)),
                            s(rng.gen_range(1..3000)),
                        ],
                        _ => vec![],
                    };
                    extra.extend([s("NOW"), s(now)]);
                    ("DELAYQ.NACK", key_rest(extra))
                }
                _ => (
                    "DELAYQ.EXTEND",
                    key_rest(vec![s(rng.gen_range(1..2000)), s("NOW"), s(now)]),
                ),
            };
            let r = both(&mut c, &lua, cmd, &q, &rest, step);
            let _ = r;
            compare(&mut c, step, cmd);
            continue;
        } else if op < 86 {
            (
                "DELAYQ.DEAD",
                if rng.gen_bool(0.5) {
                    vec![s("COUNT"), s(rng.gen_range(1..4))]
                } else {
                    vec![]
                },
            )
        } else if op < 91 {
            let mut rest = match rng.gen_range(0..3) {
                0 => vec![s("COUNT"), s(rng.gen_range(1..3))],
                1 => vec![s("ID"), id],
                _ => vec![],
            };
            rest.extend([n, s(now)]);
            ("DELAYQ.REDRIVE", rest)
        } else if op < 94 {
            ("DELAYQ.INFO", vec![n, s(now)])
        } else if op < 98 {
            let bad: &[(&str, &[&str])] = &[
                ("DELAYQ.ADD", &["a"]),
                ("DELAYQ.ADD", &["", "p"]),
                ("DELAYQ.ADD", &["a", "p", "DELAY", "-1"]),
                ("DELAYQ.ADD", &["a", "p", "DELAY", "1", "AT", "2"]),
                ("DELAYQ.ADD", &["a", "p", "ATTEMPTS", "0"]),
                ("DELAYQ.ADD", &["a", "p", "AT"]),
                ("DELAYQ.ADD", &["a", "p", "SOON"]),
                ("DELAYQ.ADD", &["a", "p", "LOSTMAX", "-1"]),
                ("DELAYQ.ADD", &["a", "p", "LOSTMAX", "1000000"]),
                ("DELAYQ.ADD", &["a", "p", "LOSTMAX"]),
                ("DELAYQ.POLL", &["0"]),
                ("DELAYQ.POLL", &["10", "COUNT", "101"]),
                ("DELAYQ.POLL", &["10", "BLOCK"]),
                ("DELAYQ.POLL", &["10", "NOW", "x"]),
                ("DELAYQ.ACK", &["a", "x"]),
                ("DELAYQ.ACK", &["", "1"]),
                ("DELAYQ.NACK", &["a", "1", "BACKOFF", "5"]),
                ("DELAYQ.NACK", &["a", "1", "BACKOFF", "5", "0"]),
                (
                    "DELAYQ.NACK",
                    &["a", "1", "BACKOFF", "5", "9", "DELAY", "1"],
                ),
                ("DELAYQ.NACK", &["a", "01"]),
                ("DELAYQ.EXTEND", &["a", "1"]),
                ("DELAYQ.EXTEND", &["a", "1", "0"]),
                ("DELAYQ.DEAD", &["COUNT"]),
                ("DELAYQ.DEAD", &["COUNT", "0"]),
                ("DELAYQ.REDRIVE", &["ID", ""]),
                ("DELAYQ.REDRIVE", &["ID", "a", "COUNT", "2"]),
                ("DELAYQ.INFO", &["NOW", "-1"]),
                ("DELAYQ.CANCEL", &[]),
                ("DELAYQ.CANCEL", &[""]),
                ("DELAYQ.CANCEL", &["a", "FORCE", "FORCE"]),
                ("DELAYQ.CANCEL", &["a", "NOW"]),
                ("DELAYQ.CANCEL", &["a", "NOW", "x"]),
                ("DELAYQ.CANCEL", &["a", "LATER"]),
                ("DELAYQ.PEEK", &["COUNT", "0"]),
                ("DELAYQ.PEEK", &["COUNT", "101"]),
                ("DELAYQ.PEEK", &["COUNT", "2", "COUNT", "3"]),
                ("DELAYQ.PEEK", &["COUNT", "2", "ID", "a"]),
                ("DELAYQ.PEEK", &["ID", ""]),
                ("DELAYQ.PEEK", &["ID"]),
                ("DELAYQ.PURGE", &[]),
                ("DELAYQ.PURGE", &["NOW", "5"]),
                ("DELAYQ.PURGE", &["MAXLEN", "-1"]),
                ("DELAYQ.PURGE", &["MAXAGE", "3153600000001"]),
                ("DELAYQ.PURGE", &["MAXLEN", "1", "MAXLEN", "2"]),
                ("DELAYQ.PURGE", &["MAXLEN"]),
            ];
            let (cmd, args) = bad[rng.gen_range(0..bad.len())];
            (cmd, args.iter().map(s).collect())
        } else {
            let edits: &[&[&str]] = &[
                &["HSET", "K:jobs", "j1", "junk"],
                &["HSET", "K:jobs", "j2", "1:0:0:0:p"],
                &["HSET", "K:jobs", "j3", "1:1:3:0:p"],
                &["HSET", "K:jobs", "j1", "1:1:3:0/1/0:p"],
                &["HSET", "K:jobs", "j2", "1:1:3:1/1/0:p"],
                &["HSET", "K:jobs", "j3", "1:1:3:1/0/x:p"],
                &["HSET", "K:jobs", "j4", "1:2:3:1/1/1:a/b:c"],
                &["ZADD", "K:due", "5", "ghost"],
                &["SET", "K:seq", "x"],
                &["SET", "K:seq", "9007199253"],
                &["SET", "K:seq", "9007199254"],
                &["SET", "K:seq", "99999999999999999999"],
                &["SET", "K:dead", "x"],
                &["ZADD", "K:dead", "1.5", "j4"],
                &["ZADD", "K:due", "1e300", "j5"],
                &["ZADD", "K:dead", "7", "orphan"],
                &["DEL", "K:jobs", "K:due", "K:dead", "K:seq"],
            ];
            let e = if rng.gen_bool(0.5) {
                edits[edits.len() - 1]
            } else {
                edits[rng.gen_range(0..edits.len())]
            };
            for p in ["m", "l"] {
                let base = format!("{p}{{{key}}}");
                let args: Vec<String> = e.iter().map(|a| a.replace('K', &base)).collect();
                let args: Vec<&str> = args.iter().map(String::as_str).collect();
                let _ = common::cmd(&mut c, &args);
            }
            compare(&mut c, step, "edit");
            continue;
        };
        let reply = both(&mut c, &lua, cmd, &key, &rest, step);
        if cmd == "DELAYQ.POLL" {
            if let Value::Array(items) = reply {
                for job in items.chunks(4) {
                    if let (Value::BulkString(id), Value::Int(r)) = (&job[0], &job[3]) {
                        seen.push((key.clone(), String::from_utf8_lossy(id).into_owned(), *r));
                    }
                }
            }
            if seen.len() > 40 {
                seen.drain(..20);
            }
        }
        compare(&mut c, step, cmd);
    }
}

#[test]
fn lua_twins_match_the_module_on_random_streams() {
    for seed in 0..4 {
        // Each seed one way, both ways over the seeds: the differential
        // test (tests/differential) runs these families' streams too.
        let via = if seed % 2 == 0 {
            Via::Script
        } else {
            Via::Function
        };
        random_stream(seed, 1500, via);
    }
}

#[test]
fn lua_twins_read_the_clock_when_no_now_is_given() {
    for via in [Via::Script, Via::Function] {
        clock_test(via);
    }
}

fn clock_test(via: Via) {
    let srv = Server::start();
    let mut c = srv.conn();
    let lua = KeyedTwins::load(&mut c, via, &SCRIPTS);
    both(
        &mut c,
        &lua,
        "DELAYQ.ADD",
        "t",
        &["a".into(), "p".into()],
        0,
    );
    both(
        &mut c,
        &lua,
        "DELAYQ.ADD",
        "t",
        &["b".into(), "p".into(), "DELAY".into(), "600000".into()],
        1,
    );
    both(
        &mut c,
        &lua,
        "DELAYQ.POLL",
        "t",
        &["600000".into(), "COUNT".into(), "5".into()],
        2,
    );
    both(
        &mut c,
        &lua,
        "DELAYQ.ACK",
        "t",
        &["a".into(), "1".into()],
        3,
    );
    // The data holds each side's own clock reading: only replies compare.
}

#[test]
fn a_seq_past_the_last_generation_is_an_overflow_alike() {
    for via in [Via::Script, Via::Function] {
        let srv = Server::start();
        let mut c = srv.conn();
        let lua = KeyedTwins::load(&mut c, via, &SCRIPTS);
        for (step, (seq, want)) in [
            ("9007199253", "integer overflow"),
            ("9007199254", "integer overflow"),
            ("9223372036854775807", "integer overflow"),
            ("99999999999999999999", "corrupt data"),
            ("-1", "corrupt data"),
        ]
        .into_iter()
        .enumerate()
        {
            for p in ["m", "l"] {
                run(&mut c, &["SET", &format!("{p}{{s}}:seq"), seq]);
            }
            for cmd in ["DELAYQ.ADD", "DELAYQ.REDRIVE"] {
                let rest: Vec<String> = if cmd == "DELAYQ.ADD" {
                    vec![s("j"), s("p"), s("NOW"), s(1000)]
                } else {
                    vec![s("NOW"), s(1000)]
                };
                if cmd == "DELAYQ.REDRIVE" {
                    // A dead letter to drive back.
                    for p in ["m", "l"] {
                        run(&mut c, &["ZADD", &format!("{p}{{s}}:dead"), "5", "d"]);
                        run(
                            &mut c,
                            &["HSET", &format!("{p}{{s}}:jobs"), "d", "1:5:5:0:p"],
                        );
                    }
                }
                both(&mut c, &lua, cmd, "s", &rest, step);
                // An error writes nothing: the module answers the same again.
                let mut args = vec![cmd, "m{s}"];
                args.extend(rest.iter().map(String::as_str));
                let e = err(&mut c, &args);
                assert!(e.contains(want), "{seq} {cmd}: {e}");
            }
            compare(&mut c, step, seq);
        }
    }
}
