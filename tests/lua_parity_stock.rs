//! The Lua twins of STOCK (the EVALSHA scripts and the Functions library,
//! each test run both ways) against the module: random streams of
//! creations, reservations (repeated orders, per-user limits, sold-out
//! stocks), confirmations, releases, restocks and removals, lapsed leases
//! returned by the next writes, reads, audits, malformed arguments and
//! hand-edited records, sent to the module on stocks `m{…}` and to the
//! scripts on stocks `l{…}`; every reply (key names aside) and the
//! resulting data (the stock, its orders, users and leases, and which keys
//! expire) must be identical.

use crate::common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::*;

const SCRIPTS: [(&str, &str); 7] = [
    ("STOCK.CREATE", "stock/create.lua"),
    ("STOCK.RESERVE", "stock/reserve.lua"),
    ("STOCK.CONFIRM", "stock/confirm.lua"),
    ("STOCK.RELEASE", "stock/release.lua"),
    ("STOCK.RESTOCK", "stock/restock.lua"),
    ("STOCK.INFO", "stock/info.lua"),
    ("STOCK.AUDIT", "stock/audit.lua"),
];

/// Runs one command both ways, asserts equal replies (the module's key
/// names are mapped to the script's in its errors) and returns the reply.
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
}

fn s<T: ToString>(v: T) -> String {
    v.to_string()
}

/// Applies a hand edit to both sides: `K` is the stock's name.
fn edit(c: &mut Connection, key: &str, e: &[&str]) {
    for p in ["m", "l"] {
        let name = format!("{p}{{{key}}}");
        let args: Vec<String> = e.iter().map(|a| a.replace('K', &name)).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let _ = cmd(c, &args);
    }
}

fn random_stream(seed: u64, steps: usize, via: Via) {
    let srv = Server::start();
    let mut c = srv.conn();
    let lua = KeyedTwins::load(&mut c, via, &SCRIPTS);
    let mut rng = StdRng::seed_from_u64(seed);
    // Instants near the server clock: a TTL counts from NOW and the keys
    // expire on the server's clock.
    let mut now = now_ms() + rng.gen_range(0..5000);
    let users = ["alice", "bob", "carol", "d:e\u{e9}"];
    let mut counts = std::collections::BTreeMap::<String, usize>::new();
    for step in 0..steps {
        now += match rng.gen_range(0..10) {
            0..=4 => 0,
            5..=8 => rng.gen_range(1..400),
            _ => rng.gen_range(1000..4000),
        };
        let k = rng.gen_range(0..3usize);
        let key = s(k);
        let user = s(users[rng.gen_range(0..users.len())]);
        let order = format!("o{}", rng.gen_range(0..12));
        let pin = [s("NOW"), s(now)];
        let op = rng.gen_range(0..100);
        let (cmd, rest): (&str, Vec<String>) = if op < 8 {
            let mut rest = vec![s(rng.gen_range(0..12))];
            if rng.gen_bool(0.6) {
                rest.extend([s("LIMIT"), s(rng.gen_range(0..4))]);
            }
            if rng.gen_bool(0.8) {
                let lease = [50, 300, 1000, 3000][rng.gen_range(0..4)];
                rest.extend([s("lease"), s(lease)]);
            }
            if rng.gen_bool(0.2) {
                rest.extend([s("TTL"), s(rng.gen_range(100..100_000))]);
            }
            // A TTL counts from NOW: pinned, so both sides store one instant.
            if rng.gen_bool(0.9) || rest.iter().any(|a| a == "TTL") {
                rest.extend(pin);
            }
            // A stock's creation deletes the leftovers of an earlier one.
            if rng.gen_bool(0.5) {
                edit(&mut c, &key, &["DEL", "K"]);
            }
            ("STOCK.CREATE", rest)
        } else if op < 45 {
            let qty = [1, 1, 1, 2, 3][rng.gen_range(0..5)];
            let mut rest = vec![user, order, s(qty)];
            rest.extend(pin);
            ("STOCK.RESERVE", rest)
        } else if op < 60 {
            let mut rest = vec![order];
            rest.extend(pin);
            ("STOCK.CONFIRM", rest)
        } else if op < 70 {
            ("STOCK.RELEASE", vec![order])
        } else if op < 77 {
            let mut rest = vec![s(rng.gen_range(-4..6))];
            rest.extend(pin);
            ("STOCK.RESTOCK", rest)
        } else if op < 82 {
            ("STOCK.INFO", vec![])
        } else if op < 88 {
            let mut rest = vec![s("0")];
            if rng.gen_bool(0.5) {
                rest.extend([s("COUNT"), s(rng.gen_range(1..20))]);
            }
            ("STOCK.AUDIT", rest)
        } else if op < 95 {
            let bad: &[(&str, &[&str])] = &[
                ("STOCK.CREATE", &["x"]),
                ("STOCK.CREATE", &["-1"]),
                ("STOCK.CREATE", &["9007199254740992"]),
                ("STOCK.CREATE", &["5", "LIMIT"]),
                ("STOCK.CREATE", &["5", "LIMIT", "-1"]),
                ("STOCK.CREATE", &["5", "LEASE", "0"]),
                ("STOCK.CREATE", &["5", "LEASE", "3153600000001"]),
                ("STOCK.CREATE", &["5", "TTL", "0"]),
                ("STOCK.CREATE", &["5", "TTL", "3153600001"]),
                ("STOCK.CREATE", &["5", "NOW", "253402300800000"]),
                ("STOCK.CREATE", &["05"]),
                ("STOCK.RESERVE", &["a", "o"]),
                ("STOCK.RESERVE", &["a", "o", "0"]),
                ("STOCK.RESERVE", &["a", "o", "1.5"]),
                ("STOCK.RESERVE", &["a", "o", "9007199254740992"]),
                ("STOCK.RESERVE", &["", "o", "1"]),
                ("STOCK.RESERVE", &["a", "", "1"]),
                ("STOCK.RESERVE", &["", "", "x"]),
                ("STOCK.RESERVE", &["a", "o", "1", "NOW"]),
                ("STOCK.RESERVE", &["a", "o", "1", "NOW", "-1"]),
                ("STOCK.RESERVE", &["a", "o", "1", "LATER", "5"]),
                ("STOCK.CONFIRM", &[""]),
                ("STOCK.CONFIRM", &["o1", "NOW"]),
                ("STOCK.CONFIRM", &["o1", "NOW", "x"]),
                ("STOCK.RELEASE", &[""]),
                ("STOCK.RESTOCK", &["x"]),
                ("STOCK.RESTOCK", &["-9007199254740992"]),
                ("STOCK.RESTOCK", &["9007199254740991"]),
                ("STOCK.RESTOCK", &["-100"]),
                ("STOCK.RESTOCK", &["1", "NOW", "1", "X"]),
                ("STOCK.AUDIT", &["-1"]),
                ("STOCK.AUDIT", &["x"]),
                ("STOCK.AUDIT", &["18446744073709551616"]),
                ("STOCK.AUDIT", &["0", "COUNT", "0"]),
                ("STOCK.AUDIT", &["0", "COUNT", "1001"]),
                ("STOCK.AUDIT", &["0", "COUNT"]),
                ("STOCK.AUDIT", &["0", "LIMIT", "5"]),
            ];
            let (cmd, args) = bad[rng.gen_range(0..bad.len())];
            (cmd, args.iter().map(s).collect())
        } else {
            // Hand-edit both sides the same way; half the edits delete the
            // stock and its ledger, so that corrupt state does not take
            // over the stream.
            let far = s(now + 1_000_000);
            let edits: Vec<Vec<String>> = vec![
                vec![s("SET"), s("K"), s("junk")],
                vec![s("SET"), s("K"), s("0:0:3:3:0:1000:0")],
                vec![s("SET"), s("K"), s("1:0:0:2:0:1000:0")],
                vec![s("SET"), s("K"), s("01:0:0:1:0:1000:0")],
                vec![s("SET"), s("K"), s("4:1:0:5:0:0:0")],
                vec![s("SET"), s("K"), s("0:1:4:5:2:1000:0")],
                vec![s("HSET"), s("K:orders"), order.clone(), s("junk")],
                vec![
                    s("HSET"),
                    s("K:orders"),
                    order.clone(),
                    format!("R:1:{far}:0:alice"),
                ],
                vec![s("HSET"), s("K:users"), s("alice"), s("x")],
                vec![s("HSET"), s("K:users"), s("bob"), s("0")],
                vec![s("HSET"), s("K:users"), s("carol"), s("9")],
                vec![s("ZADD"), s("K:leases"), s(now - 10), order.clone()],
                vec![s("ZADD"), s("K:leases"), s("1.5"), s("o1")],
                vec![s("ZADD"), s("K:leases"), s("-inf"), s("o2")],
                vec![s("ZREM"), s("K:leases"), order.clone()],
                vec![s("RPUSH"), s("K:users"), s("x")],
                vec![s("DEL"), s("K:users")],
            ];
            let e = if rng.gen_bool(0.5) {
                vec![s("DEL"), s("K"), s("K:orders"), s("K:users"), s("K:leases")]
            } else {
                edits[rng.gen_range(0..edits.len())].clone()
            };
            let e: Vec<&str> = e.iter().map(String::as_str).collect();
            edit(&mut c, &key, &e);
            compare(&mut c, step, "edit");
            continue;
        };
        let reply = both(&mut c, &lua, cmd, &key, &rest, step);
        let outcome = match reply.split([',', ']']).next() {
            Some(r) if r.starts_with("ERR<") => format!("{cmd} error"),
            Some(r) => format!("{cmd} {}", r.trim_start_matches('[')),
            None => cmd.to_string(),
        };
        *counts.entry(outcome).or_default() += 1;
        compare(&mut c, step, cmd);
    }
    // The stream reached the paths that matter.
    for want in [
        "STOCK.RESERVE OK",
        "STOCK.RESERVE SOLDOUT",
        "STOCK.RESERVE LIMIT",
        "STOCK.CONFIRM 1",
        "STOCK.RELEASE 1",
        "STOCK.CONFIRM error",
    ] {
        assert!(
            counts.get(want).copied().unwrap_or(0) > 0,
            "seed {seed}: no {want} in {counts:?}"
        );
    }
}

#[test]
fn lua_twins_match_the_module_on_random_streams() {
    for seed in 0..4 {
        // Each seed one way, both ways over the seeds: the differential
        // test (tests/differential) runs these streams on three servers.
        let via = if seed % 2 == 0 {
            Via::Script
        } else {
            Via::Function
        };
        random_stream(seed, 1500, via);
    }
}

/// Lapsed leases, a backlog longer than one call returns, a sold-out
/// stock and the audit's findings, step by step on both sides.
#[test]
fn lua_twins_return_lapsed_leases_and_audit_alike() {
    for via in [Via::Script, Via::Function] {
        let srv = Server::start();
        let mut c = srv.conn();
        let lua = KeyedTwins::load(&mut c, via, &SCRIPTS);
        let t0 = now_ms();
        let at = |d: i64| [s("NOW"), s(t0 + d)];
        let mut step = 0;
        let mut go = |c: &mut Connection, cmd: &str, rest: Vec<String>| {
            step += 1;
            let r = both(c, &lua, cmd, "b", &rest, step);
            compare(c, step, cmd);
            r
        };
        let mut create = vec![s(250), s("LEASE"), s(100), s("TTL"), s(3600)];
        create.extend(at(0));
        assert_eq!(go(&mut c, "STOCK.CREATE", create), "OK");
        // 120 one-unit reservations at one instant, all lapsing: the next
        // write returns 100, the one after the other 20.
        for i in 0..120 {
            let mut r = vec![format!("u{}", i % 7), format!("o{i}"), s(1)];
            r.extend(at(0));
            go(&mut c, "STOCK.RESERVE", r);
        }
        let mut r = vec![s(0)];
        r.extend(at(10_000));
        assert_eq!(go(&mut c, "STOCK.RESTOCK", r.clone()), "230");
        assert_eq!(go(&mut c, "STOCK.RESTOCK", r), "250");
        // A lapsed order cannot be confirmed, released or reserved again.
        let mut r = vec![s("o3")];
        r.extend(at(10_001));
        assert_eq!(
            go(&mut c, "STOCK.CONFIRM", r),
            "ERR<ERR stock: lease expired>"
        );
        assert_eq!(go(&mut c, "STOCK.RELEASE", vec![s("o3")]), "0");
        let audit = go(&mut c, "STOCK.AUDIT", vec![s(0), s("COUNT"), s(500)]);
        assert!(audit.starts_with("["), "{audit}");
        // Sell everything: then every order hears SOLDOUT from `key`.
        let mut r = vec![s("big"), s("all"), s(250)];
        r.extend(at(20_000));
        assert_eq!(
            go(&mut c, "STOCK.RESERVE", r),
            "[OK, 0, ".to_string() + &(t0 + 20_100).to_string() + "]"
        );
        let mut r = vec![s("all")];
        r.extend(at(20_050));
        assert_eq!(go(&mut c, "STOCK.CONFIRM", r), "1");
        let mut r = vec![s("big"), s("all"), s(250)];
        r.extend(at(20_060));
        assert_eq!(go(&mut c, "STOCK.RESERVE", r), "[SOLDOUT, 0, 0]");
        // The audit's findings on a hand-edited ledger.
        edit(&mut c, "b", &["HSET", "K:users", "u1", "99"]);
        edit(&mut c, "b", &["HSET", "K:orders", "zz\u{1}", "junk"]);
        edit(&mut c, "b", &["ZADD", "K:leases", "5", "o4"]);
        let audit = go(&mut c, "STOCK.AUDIT", vec![s(0), s("COUNT"), s(500)]);
        for want in [
            "corrupt record",
            "lease on an order not reserved",
            "leases for 0 reserved orders",
            "user 'u1' holds 99",
        ] {
            assert!(audit.contains(want), "{want} in {audit}");
        }
    }
}

#[test]
fn lua_twins_read_the_clock_when_no_now_is_given() {
    for via in [Via::Script, Via::Function] {
        let srv = Server::start();
        let mut c = srv.conn();
        let lua = KeyedTwins::load(&mut c, via, &SCRIPTS);
        let before = now_ms();
        both(
            &mut c,
            &lua,
            "STOCK.CREATE",
            "t",
            &[s(5), s("LEASE"), s(600_000)],
            0,
        );
        // The lease ends count from each side's own clock reading.
        let mk = "m{t}";
        let module = run(&mut c, &["STOCK.RESERVE", mk, "alice", "o1", "2"]);
        let script = show(&lua.call(&mut c, "STOCK.RESERVE", &["l{t}", "alice", "o1", "2"]));
        for r in [&module, &script] {
            let parts: Vec<&str> = r.trim_matches(['[', ']']).split(", ").collect();
            assert_eq!(&parts[..2], ["OK", "3"], "{r}");
            let end: i64 = parts[2].parse().unwrap();
            assert!((before + 600_000..before + 660_000).contains(&end), "{r}");
        }
        both(&mut c, &lua, "STOCK.CONFIRM", "t", &[s("o1")], 1);
        both(&mut c, &lua, "STOCK.RESTOCK", "t", &[s(2)], 2);
        both(&mut c, &lua, "STOCK.INFO", "t", &[], 3);
        // With a TTL from the clock (each side's own reading, so only
        // the replies and the expiries compare): every key of the stock
        // expires.
        both(
            &mut c,
            &lua,
            "STOCK.CREATE",
            "e",
            &[s(5), s("TTL"), s(3600)],
            4,
        );
        let pin = [s("NOW"), s(now_ms())];
        let mut r = vec![s("a"), s("o"), s(1)];
        r.extend(pin);
        both(&mut c, &lua, "STOCK.RESERVE", "e", &r, 5);
        for k in ["m{e}", "l{e}"] {
            for sfx in ["", ":orders", ":users", ":leases"] {
                let ttl = int(&mut c, &["PTTL", &format!("{k}{sfx}")]);
                assert!((3_500_000..=3_600_000).contains(&ttl), "{k}{sfx}: {ttl}");
            }
        }
    }
}

/// A lapsed buyer's unit goes to a new buyer at once: the stock record
/// does not change, and the ledger keys keep (or lose) their expiry on
/// both sides alike (the twin once emptied `B:users` before writing the
/// new buyer, which dropped its expiry where the module's kept it).
#[test]
fn lua_twins_keep_the_ledger_expiries_as_the_module() {
    for via in [Via::Script, Via::Function] {
        let srv = Server::start();
        let mut c = srv.conn();
        let lua = KeyedTwins::load(&mut c, via, &SCRIPTS);
        let t0 = now_ms();
        let at = |d: i64| vec![s("NOW"), s(t0 + d)];
        let mut create = vec![s(5), s("LEASE"), s(100), s("TTL"), s(3600)];
        create.extend(at(0));
        both(&mut c, &lua, "STOCK.CREATE", "x", &create, 0);
        let mut r = vec![s("alice"), s("o1"), s(1)];
        r.extend(at(0));
        both(&mut c, &lua, "STOCK.RESERVE", "x", &r, 1);
        compare(&mut c, 1, "first reservation");
        let mut r = vec![s("bob"), s("o2"), s(1)];
        r.extend(at(1000));
        assert_eq!(
            both(&mut c, &lua, "STOCK.RESERVE", "x", &r, 2),
            format!("[OK, 4, {}]", t0 + 1100)
        );
        compare(&mut c, 2, "a lapsed unit to a new buyer");
    }
}
