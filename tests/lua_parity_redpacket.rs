//! The module against its Lua twins (`lua-compat/generated/redpacket/*.lua`): random
//! operation sequences run on base keys `m{…}` through the module and on
//! `l{…}` through the scripts, on the same server.
//!
//! SPLIT RANDOM draws different amounts on each side, so for it the test
//! checks the invariants on both pools and then copies the module's pool
//! over the twin's; every other command (and EQUAL splits) must give the
//! same replies and leave the same data.

use crate::common;

use std::collections::HashMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::*;

/// Runs `REDPACKET.<cmd>` through the module on `m{k}` and through its
/// twin on `l{k}`; returns both replies in readable form (key names in the
/// module's errors read as the twin's).
fn both(
    c: &mut Connection,
    twins: &Twins,
    cmd: &str,
    k: &str,
    args: &[String],
) -> (String, String) {
    let name = format!("REDPACKET.{}", cmd.to_uppercase());
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    twins.both(c, &name, &[k], &args)
}

fn list(c: &mut Connection, key: &str) -> Vec<i64> {
    let v: Vec<String> = redis::cmd("LRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .query(c)
        .unwrap();
    v.iter().map(|s| s.parse().unwrap()).collect()
}

/// Checks a RANDOM split: count shares, each at least a cent, each draw
/// within the double-mean bound, summing to the total.
fn assert_valid_split(shares: &[i64], total: i64, count: i64) {
    assert_eq!(shares.len() as i64, count);
    assert_eq!(shares.iter().sum::<i64>(), total);
    let mut rest = total;
    for (i, &s) in shares.iter().enumerate() {
        let left = count - i as i64;
        assert!(s >= 1);
        if left > 1 {
            assert!(s < 2 * rest / left, "{s} over the bound: {shares:?}");
        }
        rest -= s;
    }
}

fn random_split_args(rng: &mut StdRng, now: i64) -> Vec<String> {
    let count: i64 = match rng.gen_range(0..10) {
        0 => rng.gen_range(-2..=0),
        1 => 10_001,
        _ => rng.gen_range(1..=12),
    };
    let total: i64 = match rng.gen_range(0..8) {
        0 => count.max(1) - 1,
        1 => count.max(1),
        _ => rng.gen_range(count.max(1)..=100_000),
    };
    let mut a = vec![total.to_string(), count.to_string()];
    if rng.gen_bool(0.5) {
        a.push("MODE".into());
        a.push(["RANDOM", "EQUAL", "equal", "random", "BOTH"][rng.gen_range(0..5)].into());
    }
    if rng.gen_bool(0.4) {
        a.push("TTL".into());
        a.push(["3600", "60", "0", "-1", "x"][rng.gen_range(0..5)].into());
        a.push("NOW".into());
        // Now, or so long ago that the packet is born expired.
        a.push(if rng.gen_bool(0.8) {
            now.to_string()
        } else {
            "1000".into()
        });
    }
    if rng.gen_bool(0.05) {
        a.push(["NOW", "FOO", "TTL"][rng.gen_range(0..3)].into());
    }
    a
}

fn random_now(rng: &mut StdRng, now: i64) -> Vec<String> {
    match rng.gen_range(0..4) {
        0 => vec!["NOW".into(), now.to_string()],
        1 => vec!["NOW".into(), (now + 60_000).to_string()],
        2 if rng.gen_bool(0.1) => vec!["NOW".into(), "soon".into()],
        _ => vec![],
    }
}

fn module_and_lua_twins_agree_on_random_sequences_once() {
    let s = Server::start();
    let mut c = s.conn();
    let twins = Twins::here(&mut c, "redpacket");
    let now = now_ms();
    let mut seen: HashMap<String, usize> = HashMap::new();
    for seed in 0..12u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        for step in 0..120 {
            let k = format!("k{}", rng.gen_range(0..4));
            let op = rng.gen_range(0..20);
            let (cmd, args): (&str, Vec<String>) = match op {
                0..=2 => ("split", random_split_args(&mut rng, now)),
                3..=11 => {
                    let mut a = vec![format!("u{}", rng.gen_range(0..8))];
                    a.extend(random_now(&mut rng, now));
                    ("grab", a)
                }
                12..=13 => ("info", random_now(&mut rng, now)),
                14..=15 => ("grabbed", vec![]),
                16 => ("refund", vec![]),
                17 => {
                    // Break one derived key's type on both sides.
                    let suffix = ["meta", "pool", "grabbed"][rng.gen_range(0..3)];
                    for side in ["m", "l"] {
                        let key = format!("{side}{{{k}}}:{suffix}");
                        let _: () = redis::cmd("SET").arg(&key).arg("x").query(&mut c).unwrap();
                    }
                    continue;
                }
                _ => {
                    // Start the packet over on both sides.
                    for side in ["m", "l"] {
                        for suffix in ["meta", "pool", "grabbed"] {
                            let _: i64 = redis::cmd("DEL")
                                .arg(format!("{side}{{{k}}}:{suffix}"))
                                .query(&mut c)
                                .unwrap();
                        }
                    }
                    continue;
                }
            };
            let (m, l) = both(&mut c, &twins, cmd, &k, &args);
            assert_eq!(m, l, "seed {seed} step {step}: {cmd} {k} {args:?}");
            let outcome = m
                .split([',', ' ', '>'])
                .next()
                .unwrap_or("")
                .trim_start_matches('[');
            *seen.entry(format!("{cmd} {outcome}")).or_default() += 1;
            let random = !args.iter().any(|a| a.eq_ignore_ascii_case("EQUAL"));
            if cmd == "split" && !m.starts_with("ERR") && random {
                let total: i64 = args[0].parse().unwrap();
                let count: i64 = args[1].parse().unwrap();
                let mpool = format!("m{{{k}}}:pool");
                let lpool = format!("l{{{k}}}:pool");
                let mshares = list(&mut c, &mpool);
                if mshares.is_empty() {
                    // Born expired: both sides deleted the packet at once.
                    assert!(list(&mut c, &lpool).is_empty());
                    continue;
                }
                assert_valid_split(&mshares, total, count);
                assert_valid_split(&list(&mut c, &lpool), total, count);
                // Same pool on both sides from here on.
                let ttl: i64 = redis::cmd("PEXPIRETIME").arg(&lpool).query(&mut c).unwrap();
                let _: i64 = redis::cmd("DEL").arg(&lpool).query(&mut c).unwrap();
                let _: i64 = redis::cmd("RPUSH")
                    .arg(&lpool)
                    .arg(&mshares)
                    .query(&mut c)
                    .unwrap();
                if ttl > 0 {
                    let _: i64 = redis::cmd("PEXPIREAT")
                        .arg(&lpool)
                        .arg(ttl)
                        .query(&mut c)
                        .unwrap();
                }
            }
            let (dm, dl) = mirrored_data(&mut c);
            assert_eq!(
                dm, dl,
                "seed {seed} step {step}: data differs after {cmd} {k} {args:?}"
            );
        }
    }
    // The sequences reach every outcome, not only errors.
    for outcome in [
        "grab OK",
        "grab ALREADY",
        "grab EMPTY",
        "grab CLOSED",
        "grab NOSUCH",
        "grab ERR<WRONGTYPE",
        "info total",
        "refund 0",
    ] {
        assert!(
            seen.get(outcome).copied().unwrap_or(0) >= 3,
            "{outcome} too rare: {seen:?}"
        );
    }
    let splits = seen
        .iter()
        .filter(|(k, _)| k.starts_with("split") && !k.contains("ERR"))
        .map(|(_, n)| n)
        .sum::<usize>();
    assert!(splits >= 20, "{seen:?}");
}

fn twins_give_the_same_errors_once() {
    let s = Server::start();
    let mut c = s.conn();
    let twins = Twins::here(&mut c, "redpacket");
    let cases: Vec<(&str, Vec<&str>)> = vec![
        ("split", vec!["100"]),
        ("split", vec!["x", "2"]),
        ("split", vec!["1.5", "2"]),
        ("split", vec!["100", "01"]),
        ("split", vec!["100", "-0"]),
        ("split", vec!["1", "2"]),
        ("split", vec!["100", "0"]),
        ("split", vec!["100000", "10001"]),
        ("split", vec!["100", "2", "MODE"]),
        ("split", vec!["100", "2", "MODE", "x"]),
        ("split", vec!["100", "2", "TTL", "0"]),
        ("split", vec!["100", "2", "TTL"]),
        ("split", vec!["100", "2", "NOW", "-5"]),
        ("split", vec!["100", "2", "WHAT", "1"]),
        ("split", vec!["9007199254740992", "2"]),
        ("split", vec!["100", "9999999999999999999"]),
        ("split", vec!["100", "-9999999999999999999"]),
        ("split", vec!["100", "2", "TTL", "3153600001"]),
        ("split", vec!["100", "2", "NOW", "253402300800000"]),
        ("grab", vec!["u", "NOW", "253402300800000"]),
        ("grab", vec![]),
        ("grab", vec!["u", "NOW"]),
        ("grab", vec!["u", "NOW", "1e3"]),
        ("grab", vec!["u", "X", "1"]),
        ("info", vec!["NOW"]),
        ("info", vec!["LATER", "5"]),
    ];
    for (cmd, args) in cases {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        let (m, l) = both(&mut c, &twins, cmd, "e", &args);
        assert!(m.starts_with("ERR<"), "{cmd} {args:?} should fail: {m}");
        assert_eq!(m, l, "{cmd} {args:?}");
    }
    let (m, l) = mirrored_data(&mut c);
    assert!(
        m.is_empty() && l.is_empty(),
        "errors wrote data: {m:?} {l:?}"
    );
    // The largest accepted values behave alike.
    let big: Vec<String> = [
        "9007199254740991",
        "3",
        "MODE",
        "EQUAL",
        "TTL",
        "3153600000",
        "NOW",
        "253402300799999",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let (m, l) = both(&mut c, &twins, "split", "big", &big);
    assert_eq!((m.as_str(), l.as_str()), ("3", "3"));
    let (m, l) = mirrored_data(&mut c);
    assert_eq!(m, l);
}

fn equal_splits_are_identical_once() {
    let s = Server::start();
    let mut c = s.conn();
    let twins = Twins::here(&mut c, "redpacket");
    let now = now_ms().to_string();
    let args: Vec<String> = ["100003", "7", "MODE", "EQUAL", "TTL", "600", "NOW", &now]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let (m, l) = both(&mut c, &twins, "split", "eq", &args);
    assert_eq!((m.as_str(), l.as_str()), ("7", "7"));
    let (dm, dl) = mirrored_data(&mut c);
    assert_eq!(dm, dl);
    assert_eq!(
        list(&mut c, "l{eq}:pool"),
        vec![14287, 14286, 14286, 14286, 14286, 14286, 14286]
    );
}

/// Hand-edited data: module and twins refuse the same corrupt values with
/// the same error (naming the key and field), and write nothing.
fn twins_refuse_corrupt_data_alike_once() {
    let s = Server::start();
    let mut c = s.conn();
    let twins = Twins::here(&mut c, "redpacket");
    let v = |xs: &[&str]| xs.iter().map(|x| x.to_string()).collect::<Vec<String>>();
    // (edit: command, suffix, args), then the command that must refuse.
    type Case<'a> = (&'a str, &'a str, Vec<&'a str>, &'a str, Vec<&'a str>);
    let cases: Vec<Case> = vec![
        ("HSET", ":meta", vec!["total", "x"], "info", vec![]),
        ("HSET", ":meta", vec!["count", "0"], "info", vec![]),
        ("HSET", ":meta", vec!["expires", "soon"], "info", vec![]),
        ("HSET", ":meta", vec!["state", "half"], "refund", vec![]),
        ("HSET", ":meta", vec!["left_cents", "x"], "refund", vec![]),
        // REFUND checks every meta field, as INFO does.
        ("HSET", ":meta", vec!["total", "x"], "refund", vec![]),
        ("HSET", ":meta", vec!["count", "x"], "refund", vec![]),
        ("HSET", ":meta", vec!["expires", "x"], "refund", vec![]),
        ("HDEL", ":meta", vec!["total"], "refund", vec![]),
        ("HSET", ":meta", vec!["left_cents", "101"], "refund", vec![]),
        ("HDEL", ":meta", vec!["left_cents"], "grab", vec!["u1"]),
        ("HSET", ":meta", vec!["left_cents", "5"], "grab", vec!["u1"]),
        ("HSET", ":meta", vec!["left_cents", "101"], "info", vec![]),
        ("LSET", ":pool", vec!["0", "-5"], "grab", vec!["u1"]),
        ("LSET", ":pool", vec!["0", "0"], "grab", vec!["u1"]),
        ("LSET", ":pool", vec!["0", "x"], "grab", vec!["u1"]),
        ("HSET", ":grabbed", vec!["u0", "x"], "grab", vec!["u0"]),
        ("HSET", ":grabbed", vec!["u0", "-5"], "grab", vec!["u0"]),
    ];
    for (edit, suffix, eargs, command, args) in cases {
        for side in ["m", "l"] {
            for sfx in [":meta", ":pool", ":grabbed"] {
                let _: i64 = redis::cmd("DEL")
                    .arg(format!("{side}{{k}}{sfx}"))
                    .query(&mut c)
                    .unwrap();
            }
        }
        let (m, l) = both(
            &mut c,
            &twins,
            "split",
            "k",
            &v(&[
                "100",
                "3",
                "MODE",
                "EQUAL",
                "TTL",
                "600",
                "NOW",
                &now_ms().to_string(),
            ]),
        );
        assert_eq!((m.as_str(), l.as_str()), ("3", "3"));
        // Same expiry instant on both sides, so the data compares equal.
        let at = int(&mut c, &["PEXPIRETIME", "m{k}:meta"]);
        for sfx in [":meta", ":pool"] {
            let _: i64 = redis::cmd("PEXPIREAT")
                .arg(format!("l{{k}}{sfx}"))
                .arg(at)
                .query(&mut c)
                .unwrap();
        }
        let (m, l) = both(&mut c, &twins, "grab", "k", &v(&["u0"]));
        assert_eq!(m, l);
        let _: i64 = redis::cmd("PEXPIREAT")
            .arg("l{k}:grabbed")
            .arg(at)
            .query(&mut c)
            .unwrap();
        for side in ["m", "l"] {
            let mut a: Vec<String> = vec![edit.into(), format!("{side}{{k}}{suffix}")];
            a.extend(eargs.iter().map(|x| x.to_string()));
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            cmd(&mut c, &a).unwrap();
        }
        let before = mirrored_data(&mut c);
        assert_eq!(before.0, before.1);
        let (m, l) = both(&mut c, &twins, command, "k", &v(&args));
        assert!(
            m.starts_with("ERR<ERR redpacket: corrupt data in 'l{k}:"),
            "{edit} {eargs:?}: {m}"
        );
        assert_eq!(m, l, "{edit} {eargs:?} then {command}");
        assert_eq!(
            mirrored_data(&mut c),
            before,
            "{edit} {eargs:?} then {command} wrote"
        );
    }
}

/// [`module_and_lua_twins_agree_on_random_sequences_once`] through the EVALSHA scripts, then through the
/// Functions library (FCALL).
#[test]
fn module_and_lua_twins_agree_on_random_sequences() {
    for via in [Via::Script, Via::Function] {
        twins_via(via, module_and_lua_twins_agree_on_random_sequences_once);
    }
}

/// [`twins_give_the_same_errors_once`] through the EVALSHA scripts, then through the
/// Functions library (FCALL).
#[test]
fn twins_give_the_same_errors() {
    for via in [Via::Script, Via::Function] {
        twins_via(via, twins_give_the_same_errors_once);
    }
}

/// [`equal_splits_are_identical_once`] through the EVALSHA scripts, then through the
/// Functions library (FCALL).
#[test]
fn equal_splits_are_identical() {
    for via in [Via::Script, Via::Function] {
        twins_via(via, equal_splits_are_identical_once);
    }
}

/// [`twins_refuse_corrupt_data_alike_once`] through the EVALSHA scripts, then through the
/// Functions library (FCALL).
#[test]
fn twins_refuse_corrupt_data_alike() {
    for via in [Via::Script, Via::Function] {
        twins_via(via, twins_refuse_corrupt_data_alike_once);
    }
}
