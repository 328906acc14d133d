//! The Lua twins of RATE against the module: random request streams over
//! every algorithm, RATE.MULTI, RATE.THROTTLE, RATE.RESET and malformed
//! arguments, sent to the module on keys `m{…}` and to the scripts on keys
//! `l{…}`; every reply and the resulting data must be identical.
//!
//! The state never depends on when a key expires (an expired limiter reads
//! as a full one), so after comparing each step the keys are made
//! persistent: the server's real clock then cannot make the two sides
//! differ while NOW jumps around. Between a write and that comparison only
//! milliseconds pass, so periods are long enough that no TTL is that short
//! (FIXED, whose TTL is the end of its window, skips the last second of a
//! window).

mod common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::*;

const T0: i64 = 1_764_720_000_000;
const ALGOS: [&str; 5] = ["GCRA", "FIXED", "SLIDING", "LOG", "BUCKET"];

struct Twins {
    check: String,
    multi: String,
    throttle: String,
    reset: String,
}

/// Runs one operation both ways and asserts equal replies.
fn both(c: &mut Connection, lua: &Twins, cmd: &str, keys: &[String], rest: &[String], step: usize) {
    let mk: Vec<String> = keys.iter().map(|k| format!("m{{{k}}}")).collect();
    let lk: Vec<String> = keys.iter().map(|k| format!("l{{{k}}}")).collect();
    let mut margs: Vec<&str> = vec![cmd];
    let n = keys.len().to_string();
    if cmd == "RATE.MULTI" {
        margs.push(&n);
    }
    margs.extend(mk.iter().map(String::as_str));
    margs.extend(rest.iter().map(String::as_str));
    let module = run(c, &margs);
    let sha = match cmd {
        "RATE.CHECK" => &lua.check,
        "RATE.MULTI" => &lua.multi,
        "RATE.THROTTLE" => &lua.throttle,
        _ => &lua.reset,
    };
    let mut largs: Vec<&str> = lk.iter().map(String::as_str).collect();
    largs.extend(rest.iter().map(String::as_str));
    let script = show(&evalsha(c, sha, lk.len(), &largs));
    assert_eq!(module, script, "step {step}: {cmd} {keys:?} {rest:?}");
}

fn compare_and_persist(c: &mut Connection, step: usize, last: &str) {
    let m: Vec<String> = dump_keys(c, "m{*")
        .into_iter()
        .map(|l| format!("l{}", &l[1..]))
        .collect();
    let l = dump_keys(c, "l{*");
    assert_eq!(m, l, "step {step} after {last}");
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    for k in keys {
        let _: i64 = redis::cmd("PERSIST").arg(&k).query(c).unwrap();
    }
}

fn s<T: ToString>(v: T) -> String {
    v.to_string()
}

fn random_stream(seed: u64, steps: usize) {
    let srv = Server::start();
    let mut c = srv.conn();
    let lua = Twins {
        check: load_script(&mut c, "rate/check.lua"),
        multi: load_script(&mut c, "rate/multi.lua"),
        throttle: load_script(&mut c, "rate/throttle.lua"),
        reset: load_script(&mut c, "rate/reset.lua"),
    };
    let mut rng = StdRng::seed_from_u64(seed);
    let mut now = T0 + rng.gen_range(0..5000);
    // Each key mostly keeps one algorithm, sometimes another is tried.
    let home: Vec<&str> = (0..6).map(|i| ALGOS[i % 5]).collect();
    // Some periods no small limit divides, so spacings have fractions.
    let periods = [60_000, 60_007, 90_001, 180_000, 600_011];
    for step in 0..steps {
        now += match rng.gen_range(0..10) {
            0..=3 => 0,
            4..=7 => rng.gen_range(1..5000),
            _ => rng.gen_range(10_000..200_000),
        };
        let k = rng.gen_range(0..6usize);
        let key = vec![s(k)];
        let op = rng.gen_range(0..100);
        let (cmd, keys, rest): (&str, Vec<String>, Vec<String>) = if op < 70 {
            let algo = if rng.gen_bool(0.9) {
                home[k]
            } else {
                ALGOS[rng.gen_range(0..5)]
            };
            let limit = rng.gen_range(1..9);
            let period = periods[rng.gen_range(0..periods.len())];
            if algo == "FIXED" && period - (now % period) < 1000 {
                continue;
            }
            let mut rest = vec![s(limit), s(period)];
            if algo != "GCRA" || rng.gen_bool(0.5) {
                rest.extend([s("ALGO"), algo.to_lowercase()]);
            }
            let burst_ok = algo == "GCRA" || algo == "BUCKET";
            if (burst_ok && rng.gen_bool(0.5)) || rng.gen_bool(0.02) {
                rest.extend([s("BURST"), s(rng.gen_range(1..9))]);
            }
            if rng.gen_bool(0.5) {
                let cost = if rng.gen_bool(0.1) {
                    9
                } else {
                    rng.gen_range(0..4)
                };
                rest.extend([s("COST"), s(cost)]);
            }
            if rng.gen_bool(0.15) {
                rest.push(s("PEEK"));
            }
            rest.extend([s("NOW"), s(now)]);
            ("RATE.CHECK", key, rest)
        } else if op < 80 {
            let n = rng.gen_range(1..4);
            let keys: Vec<String> = (0..n).map(|_| s(rng.gen_range(0..6))).collect();
            let mut rest = vec![s("LIMITS")];
            for _ in 0..n {
                rest.extend([
                    s(rng.gen_range(1..9)),
                    s(periods[rng.gen_range(0..periods.len())]),
                ]);
            }
            if rng.gen_bool(0.4) {
                rest.extend([s("COST"), s(rng.gen_range(0..4))]);
            }
            if rng.gen_bool(0.15) {
                rest.push(s("PEEK"));
            }
            rest.extend([s("NOW"), s(now)]);
            ("RATE.MULTI", keys, rest)
        } else if op < 90 {
            let mut rest = vec![
                s(rng.gen_range(0..5)),
                s(rng.gen_range(1..9)),
                s(rng.gen_range(60..200)),
            ];
            if rng.gen_bool(0.5) {
                rest.push(s(rng.gen_range(0..4)));
            }
            rest.extend([s("NOW"), s(now)]);
            ("RATE.THROTTLE", key, rest)
        } else if op < 95 {
            ("RATE.RESET", key, vec![])
        } else {
            let bad: &[&[&str]] = &[
                &["0", "1000"],
                &["x", "1000"],
                &["5", "1000", "ALGO"],
                &["5", "1000", "ALGO", "nope"],
                &["5", "1000", "COST", "-1"],
                &["5", "1000", "COST"],
                &["5", "1000", "NOW", "1.5"],
                &["5", "1000", "ALGO", "FIXED", "BURST", "2"],
                &["100001", "1000", "ALGO", "LOG"],
                &["5", "1000000000000", "BURST", "5000"],
                &["5", "1000", "EXTRA"],
                &["5", "01000"],
            ];
            let b = bad[rng.gen_range(0..bad.len())];
            ("RATE.CHECK", key, b.iter().map(s).collect())
        };
        both(&mut c, &lua, cmd, &keys, &rest, step);
        compare_and_persist(&mut c, step, cmd);
    }
}

#[test]
fn lua_twins_match_the_module_on_random_streams() {
    for seed in 0..4 {
        random_stream(seed, 1500);
    }
}

#[test]
fn lua_twins_refuse_wrong_keys_like_the_module() {
    let srv = Server::start();
    let mut c = srv.conn();
    let lua = Twins {
        check: load_script(&mut c, "rate/check.lua"),
        multi: load_script(&mut c, "rate/multi.lua"),
        throttle: load_script(&mut c, "rate/throttle.lua"),
        reset: load_script(&mut c, "rate/reset.lua"),
    };
    for p in ["m", "l"] {
        run(&mut c, &["SET", &format!("{p}{{str}}"), "hello"]);
        run(&mut c, &["HSET", &format!("{p}{{hash}}"), "algo", "other"]);
        run(
            &mut c,
            &[
                "HSET",
                &format!("{p}{{badb}}"),
                "algo",
                "bucket",
                "tokens",
                "x",
            ],
        );
        run(&mut c, &["SADD", &format!("{p}{{set}}"), "a"]);
        run(&mut c, &["SET", &format!("{p}{{tat}}"), "gcra:1:5:3"]);
    }
    for k in ["str", "hash", "badb", "set", "tat"] {
        let key = vec![k.to_string()];
        for a in ALGOS {
            let rest: Vec<String> = ["3", "1000", "ALGO", a]
                .iter()
                .map(|x| x.to_string())
                .collect();
            both(&mut c, &lua, "RATE.CHECK", &key, &rest, 0);
        }
        both(
            &mut c,
            &lua,
            "RATE.THROTTLE",
            &key,
            &["1".into(), "1".into(), "1".into()],
            0,
        );
        both(
            &mut c,
            &lua,
            "RATE.MULTI",
            &key,
            &["LIMITS".into(), "1".into(), "1000".into()],
            0,
        );
        both(&mut c, &lua, "RATE.RESET", &key, &[], 0);
    }
    let m: Vec<String> = dump_keys(&mut c, "m{*")
        .into_iter()
        .map(|l| format!("l{}", &l[1..]))
        .collect();
    assert_eq!(m, dump_keys(&mut c, "l{*"));
}
