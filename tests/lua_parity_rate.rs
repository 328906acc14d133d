//! The Lua twins of RATE (the EVALSHA scripts and the Functions library,
//! each test run both ways) against the module: random request streams over
//! every algorithm, RATE.MULTI, RATE.THROTTLE, RATE.RESET and malformed
//! arguments, sent to the module on keys `m{…}` and to the scripts on keys
//! `l{…}`; every reply and the resulting data must be identical.
//!
//! Times are microseconds (`NOWUS`, and `NOW` in whole milliseconds). The
//! streams also use the largest limits, periods and bursts, where the
//! twins' doubles need their exact multiply-divide, states written by the
//! millisecond version, damaged states, and LOGs long enough for the
//! module's O(log N) path.
//!
//! `PARITY_TRACE=1` prints every command and the module's reply, to find
//! the step where the two sides part.
//!
//! The state never depends on when a key expires (an expired limiter reads
//! as a full one), so after comparing each step the keys are made
//! persistent: the server's real clock then cannot make the two sides
//! differ while NOW jumps around. Between a write and that comparison only
//! milliseconds pass, so periods are long enough that no TTL is that short
//! (FIXED, whose TTL is the end of its window, skips the last second of a
//! window).

use crate::common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::*;
use redis::Value;

const T0: i64 = 1_764_720_000_000;
const ALGOS: [&str; 5] = ["GCRA", "FIXED", "SLIDING", "LOG", "BUCKET"];

/// Runs one operation both ways and asserts equal replies (errors name
/// the key, so the module's `m{…}` is read as the script's `l{…}`).
fn both(
    c: &mut Connection,
    lua: &Twins,
    cmd: &str,
    keys: &[String],
    rest: &[String],
    step: usize,
) -> String {
    let mk: Vec<String> = keys.iter().map(|k| format!("m{{{k}}}")).collect();
    let lk: Vec<String> = keys.iter().map(|k| format!("l{{{k}}}")).collect();
    let mut margs: Vec<&str> = vec![cmd];
    let n = keys.len().to_string();
    if cmd == "RATE.MULTI" {
        margs.push(&n);
    }
    margs.extend(mk.iter().map(String::as_str));
    margs.extend(rest.iter().map(String::as_str));
    if std::env::var("PARITY_TRACE").is_ok() {
        eprintln!("{step}: {margs:?}");
    }
    let module = frozen(c, &margs, &mk).replace("'m{", "'l{");
    if std::env::var("PARITY_TRACE").is_ok() {
        eprintln!("= {module}");
    }
    let n = lk.len().to_string();
    let mut largs: Vec<&str> = vec![lua.word(), lua.name(cmd), &n];
    largs.extend(lk.iter().map(String::as_str));
    largs.extend(rest.iter().map(String::as_str));
    let script = frozen(c, &largs, &lk);
    assert_eq!(module, script, "step {step}: {cmd} {keys:?} {rest:?}");
    module
}

/// Runs a command and makes its keys persistent in one MULTI/EXEC, where
/// the server's clock stands still: a limiter whose TTL is a millisecond
/// (a fast rule in the largest values) cannot expire before it is
/// compared.
fn frozen(c: &mut Connection, args: &[&str], keys: &[String]) -> String {
    let mut p = redis::pipe();
    p.atomic();
    let q = p.cmd(args[0]);
    for a in &args[1..] {
        q.arg(*a);
    }
    for k in keys {
        p.cmd("PERSIST").arg(k).ignore();
    }
    let r: redis::RedisResult<Vec<Value>> = p.query(c);
    show(&r.map(|mut v| v.swap_remove(0)))
}

fn compare_and_persist(c: &mut Connection, step: usize, last: &str) {
    assert_same_data(c, &format!("step {step} after {last}"));
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    for k in keys {
        let _: i64 = redis::cmd("PERSIST").arg(&k).query(c).unwrap();
    }
}

fn s<T: ToString>(v: T) -> String {
    v.to_string()
}

/// Writes the same raw data under `m{k}` and `l{k}`.
fn seed(c: &mut Connection, k: &str, cmd: &[&str]) {
    for p in ["m", "l"] {
        let name = format!("{p}{{{k}}}");
        let mut args: Vec<&str> = vec![cmd[0], &name];
        args.extend_from_slice(&cmd[1..]);
        run(c, &args);
    }
}

/// Returns the time option of a request at `now` µs: `NOW` when it is a
/// whole millisecond (half of those), else `NOWUS`.
fn time_opt(rng: &mut StdRng, now: i64) -> [String; 2] {
    if now % 1000 == 0 && rng.gen_bool(0.5) {
        [s("NOW"), s(now / 1000)]
    } else {
        [s("NOWUS"), s(now)]
    }
}

fn random_stream(seed_n: u64, steps: usize, huge: bool, via: Via) {
    let srv = Server::start();
    let mut c = srv.conn();
    let lua = Twins::of(&mut c, via, "rate");
    let mut rng = StdRng::seed_from_u64(seed_n);
    let mut now = (T0 + rng.gen_range(0..5000)) * 1000;
    // Each key mostly keeps one algorithm, sometimes another is tried.
    let home: Vec<&str> = (0..6).map(|i| ALGOS[i % 5]).collect();
    // Some periods no small limit divides, so spacings have fractions.
    let periods = [60_000, 60_007, 90_001, 180_000, 600_011];
    for step in 0..steps {
        now += match rng.gen_range(0..10) {
            0..=2 => 0,
            3 => 1000 * rng.gen_range(1..5000),
            4..=7 => rng.gen_range(1..5_000_000),
            _ => rng.gen_range(10_000_000..200_000_000),
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
            let (limit, period) = if huge {
                (
                    rng.gen_range(1..=1_000_000_000_000i64),
                    rng.gen_range(60_000..=1_000_000_000_000i64),
                )
            } else {
                (
                    rng.gen_range(1..9),
                    periods[rng.gen_range(0..periods.len())],
                )
            };
            if algo == "FIXED" && period - ((now / 1000) % period) < 1000 {
                continue;
            }
            let mut rest = vec![s(limit), s(period)];
            if algo != "GCRA" || rng.gen_bool(0.5) {
                rest.extend([s("ALGO"), algo.to_lowercase()]);
            }
            let burst_ok = algo == "GCRA" || algo == "BUCKET";
            if (burst_ok && rng.gen_bool(0.5)) || rng.gen_bool(0.02) {
                let b = if huge {
                    rng.gen_range(1..=1_000_000_000_000i64)
                } else {
                    rng.gen_range(1..9)
                };
                rest.extend([s("BURST"), s(b)]);
            }
            if rng.gen_bool(0.5) {
                let cost = if rng.gen_bool(0.1) {
                    9
                } else if huge && rng.gen_bool(0.5) && algo != "LOG" {
                    rng.gen_range(0..1_000_000_000_000i64)
                } else {
                    rng.gen_range(0..4)
                };
                rest.extend([s("COST"), s(cost)]);
            }
            if rng.gen_bool(0.15) {
                rest.push(s("PEEK"));
            }
            rest.extend(time_opt(&mut rng, now));
            ("RATE.CHECK", key, rest)
        } else if op < 80 {
            let n = rng.gen_range(1..4);
            let keys: Vec<String> = (0..n).map(|_| s(rng.gen_range(0..6))).collect();
            let mut rest = vec![s("LIMITS")];
            for _ in 0..n {
                if huge {
                    rest.extend([
                        s(rng.gen_range(1..=1_000_000_000_000i64)),
                        s(rng.gen_range(60_000..=1_000_000_000_000i64)),
                    ]);
                } else {
                    rest.extend([
                        s(rng.gen_range(1..9)),
                        s(periods[rng.gen_range(0..periods.len())]),
                    ]);
                }
            }
            if rng.gen_bool(0.4) {
                rest.extend([s("COST"), s(rng.gen_range(0..4))]);
            }
            if rng.gen_bool(0.15) {
                rest.push(s("PEEK"));
            }
            rest.extend(time_opt(&mut rng, now));
            ("RATE.MULTI", keys, rest)
        } else if op < 90 {
            let mut rest = if huge {
                vec![
                    s(rng.gen_range(0..1_000_000_000i64)),
                    s(rng.gen_range(1..=1_000_000_000_000i64)),
                    s(rng.gen_range(60..1_000_000_000i64)),
                ]
            } else {
                vec![
                    s(rng.gen_range(0..5)),
                    s(rng.gen_range(1..9)),
                    s(rng.gen_range(60..200)),
                ]
            };
            if rng.gen_bool(0.5) {
                rest.push(s(rng.gen_range(0..4)));
            }
            rest.extend(time_opt(&mut rng, now));
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
                &["5", "1000", "NOW", "4500000000001"],
                &["5", "1000", "NOWUS", "4500000000000001"],
                &["5", "1000", "NOWUS"],
                &["5", "1000", "ALGO", "FIXED", "BURST", "2"],
                &["100001", "1000", "ALGO", "LOG"],
                &["5", "1000", "ALGO", "LOG", "COST", "101"],
                &["1", "1000000000000", "BURST", "5"],
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
        // Each seed one way, both ways over the seeds: the differential
        // test (tests/differential) runs these families' streams too.
        let via = if seed % 2 == 0 {
            Via::Script
        } else {
            Via::Function
        };
        random_stream(seed, 1500, false, via);
    }
}

#[test]
fn lua_twins_match_the_module_at_the_largest_values() {
    for seed in 10..12 {
        // Each seed one way, both ways over the seeds: the differential
        // test (tests/differential) runs these families' streams too.
        let via = if seed % 2 == 0 {
            Via::Script
        } else {
            Via::Function
        };
        random_stream(seed, 1500, true, via);
    }
}

#[test]
fn lua_twins_refuse_wrong_keys_like_the_module() {
    for via in [Via::Script, Via::Function] {
        refuse_wrong_keys_like_the_module(via);
    }
}

fn refuse_wrong_keys_like_the_module(via: Via) {
    let srv = Server::start();
    let mut c = srv.conn();
    let lua = Twins::of(&mut c, via, "rate");
    seed(&mut c, "str", &["SET", "hello"]);
    seed(&mut c, "hash", &["HSET", "algo", "other"]);
    seed(&mut c, "badb", &["HSET", "algo", "bucket", "tokens", "x"]);
    seed(
        &mut c,
        "bads",
        &["HSET", "algo", "sliding", "window", "5", "count", "1"],
    );
    seed(&mut c, "set", &["SADD", "a"]);
    seed(&mut c, "tat", &["SET", "gcra:1:5:3"]);
    seed(&mut c, "tat2", &["SET", "gcra:1:2"]);
    seed(&mut c, "fix", &["SET", "fixed:1:1000000000001"]);
    seed(&mut c, "sl", &["SET", "sliding:x:1:2"]);
    seed(&mut c, "bk", &["SET", "bucket:1:2:99999999999999999"]);
    seed(&mut c, "zf", &["ZADD", "1.5", "0000000000000001-0"]);
    seed(&mut c, "zinf", &["ZADD", "+inf", "0000000000000001-0"]);
    for k in [
        "str", "hash", "badb", "bads", "set", "tat", "tat2", "fix", "sl", "bk", "zf", "zinf",
    ] {
        let key = vec![k.to_string()];
        for a in ALGOS {
            let rest: Vec<String> = ["3", "1000", "ALGO", a]
                .iter()
                .map(|x| x.to_string())
                .collect();
            both(&mut c, &lua, "RATE.CHECK", &key, &rest, 0);
        }
        let t = ["1", "1", "1"].map(String::from);
        both(&mut c, &lua, "RATE.THROTTLE", &key, &t, 0);
        let m = ["LIMITS", "1", "1000"].map(String::from);
        both(&mut c, &lua, "RATE.MULTI", &key, &m, 0);
    }
    let m: Vec<String> = dump_keys(&mut c, "m{*")
        .into_iter()
        .map(|l| format!("l{}", &l[1..]))
        .collect();
    assert_eq!(m, dump_keys(&mut c, "l{*"), "an error wrote something");
    for k in ["str", "hash", "badb", "set", "tat", "bk", "zf"] {
        both(&mut c, &lua, "RATE.RESET", &[k.to_string()], &[], 0);
    }
    compare_and_persist(&mut c, 0, "RATE.RESET");
}

#[test]
fn lua_twins_read_millisecond_states_like_the_module() {
    for via in [Via::Script, Via::Function] {
        read_millisecond_states_like_the_module(via);
    }
}

fn read_millisecond_states_like_the_module(via: Via) {
    let srv = Server::start();
    let mut c = srv.conn();
    let lua = Twins::of(&mut c, via, "rate");
    let t0 = T0.to_string();
    // States as the millisecond version wrote them.
    seed(&mut c, "g", &["SET", &format!("gcra:{}:2:5", T0 + 30_000)]);
    seed(&mut c, "g3", &["SET", &format!("gcra:{}:1:3", T0 + 5_000)]);
    seed(
        &mut c,
        "s",
        &[
            "HSET", "algo", "sliding", "window", &t0, "count", "4", "prev", "7",
        ],
    );
    seed(
        &mut c,
        "b",
        &[
            "HSET", "algo", "bucket", "tokens", "2", "carry", "400", "ts", &t0,
        ],
    );
    seed(
        &mut c,
        "l",
        &[
            "ZADD",
            &t0,
            &format!("{T0}-0"),
            &(T0 + 10).to_string(),
            &format!("{}-1", T0 + 10),
        ],
    );
    let mut rng = StdRng::seed_from_u64(99);
    let mut now = T0 * 1000 + 500;
    for step in 0..400 {
        now += rng.gen_range(0..3_000_000);
        let (k, rest): (&str, Vec<String>) = match rng.gen_range(0..6) {
            0 => ("g", vec![s(5), s(60_000)]),
            1 => ("g3", vec![s(3), s(60_000), s("BURST"), s(4)]),
            2 => ("s", vec![s(10), s(60_000), s("ALGO"), s("SLIDING")]),
            3 => (
                "b",
                vec![s(1), s(1000), s("ALGO"), s("BUCKET"), s("BURST"), s(5)],
            ),
            4 => ("l", vec![s(6), s(30_000), s("ALGO"), s("LOG")]),
            _ => ("g", vec![s(2), s(60_000), s("ALGO"), s("SLIDING")]),
        };
        let mut rest = rest;
        rest.extend(time_opt(&mut rng, now));
        both(&mut c, &lua, "RATE.CHECK", &[k.to_string()], &rest, step);
        compare_and_persist(&mut c, step, k);
    }
}

#[test]
fn lua_twins_match_the_module_on_long_logs() {
    for via in [Via::Script, Via::Function] {
        match_the_module_on_long_logs(via);
    }
}

fn match_the_module_on_long_logs(via: Via) {
    // Logs longer than the module walks entry by entry (256), so that its
    // ZCOUNT/ZRANGE path is compared too, with entries leaving the window
    // in bounded batches.
    let srv = Server::start();
    let mut c = srv.conn();
    let lua = Twins::of(&mut c, via, "rate");
    let mut rng = StdRng::seed_from_u64(5);
    let mut now = T0 * 1000;
    for step in 0..600 {
        now += rng.gen_range(0..400_000);
        let cost = if rng.gen_bool(0.2) {
            rng.gen_range(10..=100)
        } else {
            rng.gen_range(0..4)
        };
        let limit = if rng.gen_bool(0.8) { 1000 } else { 300 };
        let mut rest = vec![s(limit), s(60_000), s("ALGO"), s("LOG"), s("COST"), s(cost)];
        if rng.gen_bool(0.1) {
            rest.push(s("PEEK"));
        }
        rest.extend([s("NOWUS"), s(now)]);
        both(
            &mut c,
            &lua,
            "RATE.CHECK",
            &["big".to_string()],
            &rest,
            step,
        );
        compare_and_persist(&mut c, step, "LOG");
    }
    let n = int(&mut c, &["ZCARD", "m{big}"]);
    assert!(n > 256, "the log stayed short ({n})");
}
