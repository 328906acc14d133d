//! The Lua twins of IDEM (the EVALSHA scripts and the Functions library)
//! against the module: random streams of BEGIN (fingerprints that match
//! and that do not, leases that run out, TTLs), COMPLETE with live, stale
//! and made-up fences, ABORT, GET, malformed arguments and hand-edited
//! records, sent to the module on keys `m{…}` and to the scripts on keys
//! `l{…}`; every reply (key names aside), the data and every key's
//! PEXPIRETIME must be identical.

use crate::common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::*;

/// 2030-01-01: records expire a TTL after NOW, so NOW stays ahead of the
/// server clock.
const T0: i64 = 1_893_456_000_000;
const SCRIPTS: [(&str, &str); 4] = [
    ("IDEM.BEGIN", "idem/begin.lua"),
    ("IDEM.COMPLETE", "idem/complete.lua"),
    ("IDEM.ABORT", "idem/abort.lua"),
    ("IDEM.GET", "idem/get.lua"),
];

/// Runs one command both ways, asserts equal replies, and returns the
/// module's.
fn both(
    c: &mut Connection,
    lua: &KeyedTwins,
    cmd: &str,
    key: &str,
    rest: &[String],
    step: usize,
) -> String {
    let mk = format!("m{{{key}}}");
    let lk = format!("l{{{key}}}");
    let mut margs: Vec<&str> = vec![cmd, &mk];
    margs.extend(rest.iter().map(String::as_str));
    let module = run(c, &margs).replace(&mk, &lk);
    let largs: Vec<&str> = std::iter::once(lk.as_str())
        .chain(rest.iter().map(String::as_str))
        .collect();
    let script = show(&lua.call(c, cmd, &largs));
    assert_eq!(module, script, "step {step}: {cmd} {key} {rest:?}");
    module
}

fn compare(c: &mut Connection, step: usize, last: &str) {
    let m: Vec<String> = dump_keys(c, "m{*")
        .into_iter()
        .map(|l| format!("l{}", &l[1..]))
        .collect();
    assert_eq!(m, dump_keys(c, "l{*"), "step {step} after {last}");
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("m{*").query(c).unwrap();
    keys.sort();
    for k in keys {
        let l = format!("l{}", &k[1..]);
        let a = int(c, &["PEXPIRETIME", &k]);
        let b = int(c, &["PEXPIRETIME", &l]);
        assert_eq!(a, b, "step {step} after {last}: expiry of {k}");
    }
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
    let mut fences: Vec<i64> = vec![1, T0];
    for step in 0..steps {
        now += match rng.gen_range(0..10) {
            0..=4 => 0,
            5..=8 => rng.gen_range(1..400),
            _ => rng.gen_range(1000..5000),
        };
        let key = s(rng.gen_range(0..4usize));
        let fp = s(["fa", "fb", "f:c"][rng.gen_range(0..3)]);
        let fence = if rng.gen_bool(0.85) {
            fences[rng.gen_range(0..fences.len())]
        } else {
            rng.gen_range(-2..3)
        };
        let op = rng.gen_range(0..100);
        let (cmd, rest): (&str, Vec<String>) = if op < 35 {
            let lease = s([1, 50, 300, 1000, 3000][rng.gen_range(0..5)]);
            let mut rest = vec![fp, lease];
            if rng.gen_bool(0.3) {
                rest.extend([s("TTL"), s(rng.gen_range(1..200))]);
            }
            rest.extend([s("NOW"), s(now)]);
            ("IDEM.BEGIN", rest)
        } else if op < 60 {
            let result = s(["ok", "", "r:2", "a b"][rng.gen_range(0..4)]);
            ("IDEM.COMPLETE", vec![s(fence), result, s("NOW"), s(now)])
        } else if op < 72 {
            ("IDEM.ABORT", vec![s(fence)])
        } else if op < 84 {
            ("IDEM.GET", vec![s("NOW"), s(now)])
        } else if op < 94 {
            let bad: &[(&str, &[&str])] = &[
                ("IDEM.BEGIN", &["f"]),
                ("IDEM.BEGIN", &["", "10"]),
                ("IDEM.BEGIN", &["f", "0"]),
                ("IDEM.BEGIN", &["f", "010"]),
                ("IDEM.BEGIN", &["f", "3153600000001"]),
                ("IDEM.BEGIN", &["f", "10", "TTL"]),
                ("IDEM.BEGIN", &["f", "10", "TTL", "0"]),
                ("IDEM.BEGIN", &["f", "10", "TTL", "3153600001"]),
                ("IDEM.BEGIN", &["f", "10", "ttl", "5", "TTL", "5"]),
                ("IDEM.BEGIN", &["f", "10", "NOW", "253402300800000"]),
                ("IDEM.BEGIN", &["f", "10", "LEASE", "5"]),
                ("IDEM.COMPLETE", &["1"]),
                ("IDEM.COMPLETE", &["x", "r"]),
                ("IDEM.COMPLETE", &["1", "r", "NOW"]),
                ("IDEM.COMPLETE", &["1", "r", "NOW", "5", "NOW", "5"]),
                ("IDEM.COMPLETE", &["9223372036854775808", "r"]),
                ("IDEM.ABORT", &[]),
                ("IDEM.ABORT", &["1", "2"]),
                ("IDEM.ABORT", &["1.5"]),
                ("IDEM.GET", &["NOW"]),
                ("IDEM.GET", &["LATER", "5"]),
                ("IDEM.GET", &["NOW", "-1"]),
            ];
            let (cmd, args) = bad[rng.gen_range(0..bad.len())];
            (cmd, args.iter().map(s).collect())
        } else {
            let far = s(T0 + 100_000_000);
            let max = s((1i64 << 53) - 1);
            let edits: Vec<Vec<&str>> = vec![
                vec!["HSET", "K", "state", "weird"],
                vec!["HSET", "K", "fp", ""],
                vec!["HSET", "K", "fence", "-1"],
                vec!["HSET", "K", "lease", "x"],
                vec!["HSET", "K", "ttl", "0"],
                vec!["HSET", "K", "result", "x"],
                vec!["HDEL", "K", "result"],
                vec!["SET", "K", "junk"],
                vec![
                    "HSET", "K", "state", "aborted", "fp", "fa", "fence", &max, "lease", "0",
                    "ttl", "10",
                ],
                vec!["PEXPIREAT", "K", &far],
                vec!["DEL", "K"],
            ];
            // Half of the edits clear the key, so that corrupt state does
            // not take over the stream.
            let e = if rng.gen_bool(0.5) {
                edits[edits.len() - 1].clone()
            } else {
                edits[rng.gen_range(0..edits.len())].clone()
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
        let reply = both(&mut c, &lua, cmd, &key, &rest, step);
        if let Some(f) = reply.strip_prefix("[NEW, ") {
            fences.push(f.trim_end_matches(']').parse().unwrap());
        }
        compare(&mut c, step, cmd);
    }
}

#[test]
fn lua_twins_match_the_module_on_random_streams() {
    for seed in 0..4 {
        let via = if seed % 2 == 0 {
            Via::Script
        } else {
            Via::Function
        };
        random_stream(seed, 1200, via);
    }
}

#[test]
fn lua_twins_read_the_clock_when_no_now_is_given() {
    for via in [Via::Script, Via::Function] {
        let srv = Server::start();
        let mut c = srv.conn();
        let lua = KeyedTwins::load(&mut c, via, &SCRIPTS);
        let m = run(&mut c, &["IDEM.BEGIN", "m{t}", "f", "600000"]);
        let l = show(&lua.call(&mut c, "IDEM.BEGIN", &["l{t}", "f", "600000"]));
        // Both read the clock: NEW with a fence near now on each side.
        for r in [&m, &l] {
            let f: i64 = r
                .trim_start_matches("[NEW, ")
                .trim_end_matches(']')
                .parse()
                .unwrap();
            assert!((now_ms() - f).abs() < 10_000, "{r}");
        }
        // A retry answers RUNNING on both sides (the ms left may differ by
        // the time between the two clock reads).
        let m = run(&mut c, &["IDEM.BEGIN", "m{t}", "f", "600000"]);
        let l = show(&lua.call(&mut c, "IDEM.BEGIN", &["l{t}", "f", "600000"]));
        assert!(
            m.starts_with("[RUNNING, ") && l.starts_with("[RUNNING, "),
            "{m} {l}"
        );
        assert!(run(&mut c, &["IDEM.GET", "m{t}"]).starts_with("[running, f, "));
        assert!(show(&lua.call(&mut c, "IDEM.GET", &["l{t}"])).starts_with("[running, f, "));
    }
}
