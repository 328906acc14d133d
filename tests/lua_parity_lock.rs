//! The Lua twins of LOCK (the EVALSHA scripts and the Functions library,
//! each test run both ways) against the module: random streams of
//! acquisitions (mutexes and semaphores, reentrant, MAXHOLD), releases,
//! renewals, reads, checks, malformed arguments and hand-edited state,
//! sent to the module on keys `m{…}` and to the scripts on keys `l{…}`;
//! every reply (key names aside) and the resulting data must be identical.
//!
//! BLOCK is left out: the module waits, a script cannot (the twin answers
//! at once, like the module inside MULTI, which tests/lock.rs checks).

use crate::common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::*;

const T0: i64 = 1_764_720_000_000;

/// Runs one command both ways and asserts equal replies (the module's key
/// names are mapped to the script's in its errors).
fn both(c: &mut Connection, lua: &Twins, cmd: &str, key: &str, rest: &[String], step: usize) {
    let rest: Vec<&str> = rest.iter().map(String::as_str).collect();
    lua.assert_both(c, &format!("step {step}"), cmd, &[key], &rest);
}

fn compare(c: &mut Connection, step: usize, last: &str) {
    assert_same_data(c, &format!("step {step} after {last}"));
}

fn s<T: ToString>(v: T) -> String {
    v.to_string()
}

fn random_stream(seed: u64, steps: usize, via: Via) {
    let srv = Server::start();
    let mut c = srv.conn();
    let lua = Twins::of(&mut c, via, "lock");
    let mut rng = StdRng::seed_from_u64(seed);
    let mut now = T0 + rng.gen_range(0..5000);
    let owners = ["alice", "bob", "carol", "d:e"];
    for step in 0..steps {
        now += match rng.gen_range(0..10) {
            0..=4 => 0,
            5..=8 => rng.gen_range(1..400),
            _ => rng.gen_range(1000..5000),
        };
        // Keys 0-2 are mutexes, 3-5 semaphores (sometimes the wrong kind
        // is asked for).
        let k = rng.gen_range(0..6usize);
        let key = s(k);
        let owner = s(owners[rng.gen_range(0..owners.len())]);
        let ttl = s([1, 50, 300, 1000, 3000][rng.gen_range(0..5)]);
        let op = rng.gen_range(0..100);
        let (cmd, rest): (&str, Vec<String>) = if op < 40 {
            let mut rest = vec![owner, ttl];
            if k >= 3 || rng.gen_bool(0.05) {
                let limit = if rng.gen_bool(0.9) {
                    2 + (k % 3)
                } else {
                    rng.gen_range(1..5)
                };
                if rng.gen_bool(0.8) {
                    rest.extend([s("LIMIT"), s(limit)]);
                }
            } else if rng.gen_bool(0.1) {
                rest.extend([s("limit"), s(1)]);
            }
            if rng.gen_bool(0.2) {
                rest.extend([s("MAXHOLD"), s(rng.gen_range(1..2000))]);
            }
            rest.extend([s("NOW"), s(now)]);
            ("LOCK.ACQUIRE", rest)
        } else if op < 60 {
            ("LOCK.RELEASE", vec![owner, s("NOW"), s(now)])
        } else if op < 72 {
            ("LOCK.RENEW", vec![owner, ttl, s("NOW"), s(now)])
        } else if op < 82 {
            ("LOCK.INFO", vec![s("NOW"), s(now)])
        } else if op < 90 {
            let t = rng.gen_range(-1..12);
            ("LOCK.CHECK", vec![s(t), s("now"), s(now)])
        } else if op < 97 {
            let bad: &[(&str, &[&str])] = &[
                ("LOCK.ACQUIRE", &["a"]),
                ("LOCK.ACQUIRE", &["", "10"]),
                ("LOCK.ACQUIRE", &["a", "0"]),
                ("LOCK.ACQUIRE", &["a", "-5"]),
                ("LOCK.ACQUIRE", &["a", "10", "LIMIT"]),
                ("LOCK.ACQUIRE", &["a", "10", "LIMIT", "101"]),
                ("LOCK.ACQUIRE", &["a", "10", "LIMIT", "0"]),
                ("LOCK.ACQUIRE", &["a", "10", "MAXHOLD", "x"]),
                ("LOCK.ACQUIRE", &["a", "10", "BLOCK", "-1"]),
                ("LOCK.ACQUIRE", &["a", "10", "NOW", "253402300800000"]),
                ("LOCK.ACQUIRE", &["a", "10", "FAIR"]),
                ("LOCK.ACQUIRE", &["a", "10", "LIMIT", "1", "LIMIT", "1"]),
                (
                    "LOCK.ACQUIRE",
                    &["a", "10", "NOW", "5", "BLOCK", "0", "NOW", "5"],
                ),
                ("LOCK.RENEW", &["a", "10", "NOW", "5", "NOW", "5"]),
                ("LOCK.CHECK", &["1", "NOW", "5", "NOW", "5"]),
                ("LOCK.ACQUIRE", &["a", "010"]),
                ("LOCK.RELEASE", &[""]),
                ("LOCK.RELEASE", &["a", "NOW"]),
                ("LOCK.RELEASE", &["a", "NOW", "-1"]),
                ("LOCK.RENEW", &["a", "1.5"]),
                ("LOCK.RENEW", &["", "5"]),
                ("LOCK.CHECK", &["x"]),
                ("LOCK.CHECK", &["9223372036854775808"]),
                ("LOCK.CHECK", &["-9223372036854775808", "NOW", "5"]),
                ("LOCK.INFO", &["NOW"]),
                ("LOCK.INFO", &["LATER", "5"]),
            ];
            let (cmd, args) = bad[rng.gen_range(0..bad.len())];
            (cmd, args.iter().map(s).collect())
        } else {
            // Hand-edit both sides the same way.
            let edits: &[&[&str]] = &[
                &["SET", "K", "junk"],
                &["SET", "K", "3:1:5:0:"],
                &["SET", "K", "7:0:0:0:"],
                &["SET", "K", "9007199254740991:0:0:0:"],
                &["HSET", "K", "limit", "0"],
                &["HSET", "K", "holder:zed", "x"],
                &["HSET", "K", "other", "1"],
                &["RPUSH", "K", "x"],
                &["DEL", "K"],
            ];
            // Half of the edits clear the key, so that corrupt state does
            // not take over the stream.
            let e = if rng.gen_bool(0.5) {
                edits[edits.len() - 1]
            } else {
                edits[rng.gen_range(0..edits.len())]
            };
            for p in ["m", "l"] {
                let name = format!("{p}{{{key}}}");
                let args: Vec<&str> = e
                    .iter()
                    .map(|a| if *a == "K" { name.as_str() } else { a })
                    .collect();
                let _ = cmd(&mut c, &args);
            }
            compare(&mut c, step, "edit");
            continue;
        };
        both(&mut c, &lua, cmd, &key, &rest, step);
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
    let lua = Twins::of(&mut c, via, "lock");
    both(
        &mut c,
        &lua,
        "LOCK.ACQUIRE",
        "t",
        &["a".into(), "600000".into()],
        0,
    );
    both(&mut c, &lua, "LOCK.RELEASE", "t", &["b".into()], 1);
    both(&mut c, &lua, "LOCK.CHECK", "t", &["1".into()], 2);
    both(&mut c, &lua, "LOCK.RELEASE", "t", &["a".into()], 3);
    // The data holds each side's own clock reading: only replies compare.
}

#[test]
fn holders_without_a_next_lease_end_are_checked_alike() {
    for via in [Via::Script, Via::Function] {
        let srv = Server::start();
        let mut c = srv.conn();
        let lua = Twins::of(&mut c, via, "lock");
        let acquire = |owner: &str| vec![s(owner), s(1000), s("NOW"), s(5000)];
        // A corrupt holder while `next` is 0: refused by both, nothing
        // written.
        for p in ["m", "l"] {
            let k = format!("{p}{{h}}");
            run(
                &mut c,
                &["HSET", &k, "fence", "3", "limit", "2", "next", "0"],
            );
            run(&mut c, &["HSET", &k, "holder:b", "1:1:nope:0"]);
        }
        both(&mut c, &lua, "LOCK.ACQUIRE", "h", &acquire("a"), 0);
        let e = run(
            &mut c,
            &["LOCK.ACQUIRE", "m{h}", "a", "1000", "NOW", "5000"],
        );
        assert_eq!(e, "ERR<ERR lock: corrupt data in 'm{h}' field 'holder:b'>");
        compare(&mut c, 0, "corrupt holder");
        // A valid holder while `next` is 0: both recompute `next`.
        for p in ["m", "l"] {
            run(
                &mut c,
                &["HSET", &format!("{p}{{h}}"), "holder:b", "2:1:9000:0"],
            );
        }
        both(&mut c, &lua, "LOCK.ACQUIRE", "h", &acquire("a"), 1);
        compare(&mut c, 1, "next recomputed");
    }
}
