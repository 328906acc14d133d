//! The Lua twins of STOCK (the EVALSHA scripts and the Functions library,
//! each test run both ways) against the module: random streams of
//! creations, reservations (repeated orders, per-user limits, sold-out
//! stocks), confirmations, releases, restocks and removals, lapsed leases
//! returned by the next writes, reads, audits, malformed arguments and
//! hand-edited records, sent to the module on stocks `m{…}` and to the
//! scripts on stocks `l{…}`; every reply (key names aside) and the
//! resulting data (the stock, its orders, users and leases, and which keys
//! expire) must be identical. The spread form (shards, the pool and its
//! transfers) runs the module in database 0 and the twins in database 1
//! under the same key names (shard keys begin with their own `{tag}`).

use crate::common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::*;

const SCRIPTS: [(&str, &str); 11] = [
    ("STOCK.CREATE", "stock/create.lua"),
    ("STOCK.RESERVE", "stock/reserve.lua"),
    ("STOCK.CONFIRM", "stock/confirm.lua"),
    ("STOCK.RELEASE", "stock/release.lua"),
    ("STOCK.RESTOCK", "stock/restock.lua"),
    ("STOCK.INFO", "stock/info.lua"),
    ("STOCK.AUDIT", "stock/audit.lua"),
    ("STOCK.TRANSFER", "stock/transfer.lua"),
    ("STOCK.APPLY", "stock/apply.lua"),
    ("STOCK.SETTLE", "stock/settle.lua"),
    ("STOCK.POOL", "stock/pool.lua"),
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

// ---- the spread form (docs/stock.md, "Spread form") ----
//
// Shard keys start with their own `{tag}`, so the two sides cannot be told
// apart by a key prefix: the module writes in database 0 and the twins in
// database 1 of the same server, under the very same key names.

use hotpath_client::routing;

struct SpreadSides {
    m: Connection,
    l: Connection,
    twins: KeyedTwins,
    /// Every reply seen (command and reply), for the coverage checks.
    seen: Vec<String>,
}

impl SpreadSides {
    fn new(srv: &Server, via: Via) -> SpreadSides {
        let m = srv.conn();
        let mut l = srv.conn();
        run(&mut l, &["SELECT", "1"]);
        let twins = KeyedTwins::load(&mut l, via, &SCRIPTS);
        SpreadSides {
            m,
            l,
            twins,
            seen: Vec::new(),
        }
    }

    /// `cmd key args…` through the module (database 0) and the twin
    /// (database 1): both replies must be the same; returns it.
    fn both(&mut self, cmd: &str, key: &str, args: &[&str]) -> String {
        let mut margs: Vec<&str> = vec![cmd, key];
        margs.extend_from_slice(args);
        let ours = run(&mut self.m, &margs);
        let theirs = show(&self.twins.call(&mut self.l, cmd, &margs[1..]));
        assert_eq!(ours, theirs, "{cmd} {key} {args:?}");
        self.seen.push(format!("{cmd} {ours}"));
        ours
    }

    /// The same hand edit on both sides.
    fn raw(&mut self, args: &[&str]) {
        run(&mut self.m, args);
        run(&mut self.l, args);
    }

    /// Every key, value and absolute expiry the same on both sides.
    fn assert_same_data(&mut self, what: &str) {
        let mut sides = Vec::new();
        for c in [&mut self.m, &mut self.l] {
            let mut d = dump_keys(c, "*");
            let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
            keys.sort();
            for k in keys {
                let at = int(c, &["PEXPIRETIME", &k]);
                d.push(format!("{k} expires {at}"));
            }
            sides.push(d);
        }
        assert_eq!(sides[0], sides[1], "data differs after {what}");
    }
}

/// Every key of the connection's database: name, absolute expiry, DUMP.
fn snapshot(c: &mut Connection) -> Vec<(String, i64, Vec<u8>)> {
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    keys.into_iter()
        .map(|k| {
            let at = int(c, &["PEXPIRETIME", &k]);
            let d: Vec<u8> = redis::cmd("DUMP").arg(&k).query(c).unwrap();
            (k, at, d)
        })
        .collect()
}

/// Replaces the connection's database with a [`snapshot`].
fn restore(c: &mut Connection, keys: &[(String, i64, Vec<u8>)]) {
    run(c, &["FLUSHDB"]);
    for (k, at, d) in keys {
        let _: () = redis::cmd("RESTORE")
            .arg(k)
            .arg((*at).max(0))
            .arg(d.as_slice())
            .arg("ABSTTL")
            .query(c)
            .unwrap();
    }
}

fn refs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

fn shard_keys(base: &str, n: u32) -> Vec<String> {
    routing::shard_keys(base.as_bytes(), n)
        .into_iter()
        .map(|k| String::from_utf8(k).unwrap())
        .collect()
}

/// The `k`-th integer user of shard `i` of `n` (integer ids route by
/// their value mod n).
fn user_of(i: u32, n: u32, k: u32) -> String {
    let u = (k * n + i).to_string();
    assert_eq!(routing::shard_of(u.as_bytes(), n), i);
    u
}

/// A whole spread lifecycle through the twins and the module, step by
/// step: creation and its refusals, the buyer's shard, each transfer step
/// replayed, reservations on a shard until it lacks units, confirmations,
/// releases and lapsed leases, a handback, the pool drained, the dry mark
/// set (REFILL becomes SOLDOUT) and cleared by a later refill, POOL, INFO
/// and AUDIT on every shard, a transfer left open and finished, bad input
/// and hand-edited records; every reply and all data equal after each step.
fn spread_lifecycle(via: Via) {
    let srv = Server::start();
    let mut t = SpreadSides::new(&srv, via);
    let t0 = now_ms();
    let at = |d: i64| (t0 + d).to_string();
    let base = "sku:{7}";
    let k = shard_keys(base, 3);
    let (k0, k1, k2) = (k[0].as_str(), k[1].as_str(), k[2].as_str());
    let u = |i: u32, j: u32| user_of(i, 3, j);
    let pool_err = format!("ERR<ERR stock: the pool is on shard 0 of 3 ('{k0}'), not on '{k1}'>");

    // Before any shard exists; creation and its refusals.
    let r = t.both("STOCK.RESERVE", k1, &[&u(1, 0), "o", "1", "SPREAD", "3"]);
    assert!(r.contains("does not exist"), "{r}");
    let r = t.both("STOCK.CREATE", base, &["30", "SPREAD", "3"]);
    assert!(r.contains("is not a shard key of 3 shards"), "{r}");
    for bad in [
        &["30", "SPREAD", "0"][..],
        &["30", "SPREAD", "x"],
        &["30", "SPREAD"],
        &["30", "SPREAD", "1025"],
    ] {
        t.both("STOCK.CREATE", k0, bad);
    }
    let now0 = at(0);
    let create = [
        "30", "LIMIT", "2", "LEASE", "1000", "TTL", "3600", "NOW", &now0, "SPREAD", "3",
    ];
    for key in [k0, k1, k2] {
        assert_eq!(t.both("STOCK.CREATE", key, &create), "OK");
    }
    t.assert_same_data("creation");
    let r = t.both("STOCK.CREATE", k0, &create);
    assert_eq!(r, "ERR<ERR stock: already exists>");
    for (cmd, args) in [
        ("STOCK.CREATE", &["5"][..]),
        ("STOCK.RESERVE", &["alice", "o", "1"]),
        ("STOCK.CONFIRM", &["o"]),
        ("STOCK.RELEASE", &["o"]),
        ("STOCK.RESTOCK", &["1"]),
        ("STOCK.AUDIT", &["0"]),
    ] {
        let r = t.both(cmd, base, args);
        assert!(r.contains("is spread over 3 shards"), "{cmd}: {r}");
    }
    assert_eq!(t.both("STOCK.INFO", base, &[]), "[]");
    // A single-slot stock under a base shadows no spread one.
    t.both("STOCK.CREATE", "sku:{8}", &["5"]);
    let k8 = shard_keys("sku:{8}", 2);
    let r = t.both("STOCK.CREATE", &k8[0], &["5", "SPREAD", "2"]);
    assert!(r.contains("is a single-slot stock already"), "{r}");
    t.both("STOCK.CREATE", &k8[1], &["5", "SPREAD", "2"]);
    t.assert_same_data("refusals");

    // The buyer's shard: an empty shard, not dry, answers REFILL.
    let sp = ["SPREAD", "3"];
    let reserve = |user: &str, order: &str, qty: &str, now: &str| -> Vec<String> {
        [user, order, qty, "NOW", now, "SPREAD", "3"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    let r = reserve(&u(1, 0), "o-0", "2", &now0);
    assert_eq!(t.both("STOCK.RESERVE", k1, &refs(&r)), "[REFILL, 0, 0]");
    let r = t.both("STOCK.RESERVE", k1, &[&u(2, 0), "o", "1", "SPREAD", "3"]);
    assert!(r.contains("wrong shard: user"), "{r}");
    let r = t.both("STOCK.RESERVE", k1, &[&u(1, 0), "o", "1", "SPREAD", "4"]);
    assert!(r.contains("shard counts disagree"), "{r}");
    // A raw call on a shard key finds its record without SPREAD.
    t.both("STOCK.RESERVE", k1, &[&u(1, 0), "o", "1", "NOW", &now0]);

    // A refill, each step twice, and the replays that disagree.
    assert_eq!(
        t.both("STOCK.TRANSFER", k1, &["t1", "1", "10", "SPREAD", "3"]),
        pool_err
    );
    assert_eq!(
        t.both("STOCK.TRANSFER", k0, &["t1", "1", "10", "SPREAD", "3"]),
        "[OPEN, 10, 20, 1]"
    );
    assert_eq!(
        t.both("STOCK.TRANSFER", k0, &["t1", "1", "10", "SPREAD", "3"]),
        "[OPEN, 10, 20, 1]"
    );
    for (sh, d) in [("1", "11"), ("2", "10"), ("1", "-10")] {
        let r = t.both("STOCK.TRANSFER", k0, &["t1", sh, d, "SPREAD", "3"]);
        assert_eq!(
            r,
            "ERR<ERR stock: transfer exists with another shard or quantity>"
        );
    }
    assert_eq!(
        t.both("STOCK.POOL", k0, &sp),
        "[total, 30, free, 20, transit, 10, open, 1, pending, [t1, 1, 10]]"
    );
    assert_eq!(t.both("STOCK.POOL", k1, &sp), pool_err);
    t.assert_same_data("a refill opened");
    assert_eq!(
        t.both("STOCK.APPLY", k1, &["t1", "10", "SPREAD", "3"]),
        "[10, 10]"
    );
    assert_eq!(
        t.both("STOCK.APPLY", k1, &["t1", "10", "SPREAD", "3"]),
        "[10, 10]"
    );
    let r = t.both("STOCK.APPLY", k1, &["t1", "9", "SPREAD", "3"]);
    assert!(r.contains("another shard or quantity"), "{r}");
    let r = t.both("STOCK.SETTLE", k0, &["t1", "9", "SPREAD", "3"]);
    assert_eq!(r, "ERR<ERR stock: units do not match the transfer>");
    assert_eq!(
        t.both("STOCK.SETTLE", k0, &["t1", "10", "SPREAD", "3"]),
        "1"
    );
    assert_eq!(
        t.both("STOCK.SETTLE", k0, &["t1", "10", "SPREAD", "3"]),
        "0"
    );
    assert_eq!(
        t.both("STOCK.TRANSFER", k0, &["t1", "1", "10", "SPREAD", "3"]),
        "[CLOSED, 10, 20, 0]"
    );
    let r = t.both("STOCK.SETTLE", k0, &["nope", "1", "SPREAD", "3"]);
    assert_eq!(r, "ERR<ERR stock: no such transfer>");
    t.assert_same_data("a refill settled");

    // Buyers of shard 1 until it lacks units; a replayed order; the
    // limit; confirmations, releases and lapsed leases.
    for j in 0..6u32 {
        let r = reserve(&u(1, j), &format!("o-{j}"), "2", &at(i64::from(j)));
        let want = if j < 5 { "[OK, " } else { "[REFILL, " };
        assert!(t.both("STOCK.RESERVE", k1, &refs(&r)).starts_with(want));
    }
    let r = reserve(&u(1, 0), "o-0", "2", &at(7));
    assert_eq!(
        t.both("STOCK.RESERVE", k1, &refs(&r)),
        format!("[OK, 8, {}]", t0 + 1000)
    );
    let r = reserve(&u(1, 0), "o-x", "1", &at(7));
    assert!(t
        .both("STOCK.RESERVE", k1, &refs(&r))
        .starts_with("[REFILL, "));
    assert_eq!(
        t.both("STOCK.CONFIRM", k1, &["o-0", "NOW", &at(10), "SPREAD", "3"]),
        "1"
    );
    assert_eq!(
        t.both("STOCK.CONFIRM", k1, &["o-0", "NOW", &at(11), "SPREAD", "3"]),
        "0"
    );
    assert_eq!(t.both("STOCK.RELEASE", k1, &["o-1", "SPREAD", "3"]), "1");
    assert_eq!(t.both("STOCK.RELEASE", k1, &["o-1", "SPREAD", "3"]), "0");
    let r = reserve(&u(1, 5), "o-5", "2", &at(12));
    assert!(t
        .both("STOCK.RESERVE", k1, &refs(&r))
        .starts_with("[OK, 0, "));
    let r = reserve(&u(1, 5), "o-6", "1", &at(13));
    assert!(t
        .both("STOCK.RESERVE", k1, &refs(&r))
        .starts_with("[REFILL, "));
    let r = t.both("STOCK.RESTOCK", k1, &["5", "NOW", &at(20), "SPREAD", "3"]);
    assert!(r.contains("takes units only by transfers"), "{r}");
    // Every lease but the confirmed one lapsed: RESTOCK 0 returns them.
    assert_eq!(
        t.both("STOCK.RESTOCK", k1, &["0", "NOW", &at(5000), "SPREAD", "3"]),
        "8"
    );
    let r = t.both(
        "STOCK.CONFIRM",
        k1,
        &["o-2", "NOW", &at(5001), "SPREAD", "3"],
    );
    assert_eq!(r, "ERR<ERR stock: lease expired>");
    t.assert_same_data("shard 1 sold and lapsed");

    // A handback from shard 1, each step twice.
    assert_eq!(
        t.both("STOCK.TRANSFER", k0, &["h1", "1", "-3", "SPREAD", "3"]),
        "[OPEN, 0, 20, 1]"
    );
    assert_eq!(
        t.both("STOCK.APPLY", k1, &["h1", "-3", "SPREAD", "3"]),
        "[-3, 5]"
    );
    assert_eq!(
        t.both("STOCK.APPLY", k1, &["h1", "-3", "SPREAD", "3"]),
        "[-3, 5]"
    );
    let r = t.both("STOCK.APPLY", k1, &["h1", "-2", "SPREAD", "3"]);
    assert!(r.contains("another shard or quantity"), "{r}");
    let r = t.both("STOCK.SETTLE", k0, &["h1", "-4", "SPREAD", "3"]);
    assert!(r.contains("units do not match"), "{r}");
    let r = t.both("STOCK.SETTLE", k0, &["h1", "1", "SPREAD", "3"]);
    assert!(r.contains("units do not match"), "{r}");
    assert_eq!(
        t.both("STOCK.SETTLE", k0, &["h1", "-3", "SPREAD", "3"]),
        "1"
    );
    assert_eq!(
        t.both("STOCK.SETTLE", k0, &["h1", "-3", "SPREAD", "3"]),
        "0"
    );
    t.assert_same_data("a handback");

    // The pool drained into shard 2: the next refill is DRY.
    assert_eq!(
        t.both("STOCK.TRANSFER", k0, &["t2", "2", "1000", "SPREAD", "3"]),
        "[OPEN, 23, 0, 1]"
    );
    assert_eq!(
        t.both("STOCK.APPLY", k2, &["t2", "23", "SPREAD", "3"]),
        "[23, 23]"
    );
    assert_eq!(
        t.both("STOCK.SETTLE", k0, &["t2", "23", "SPREAD", "3"]),
        "1"
    );
    assert_eq!(
        t.both("STOCK.TRANSFER", k0, &["t3", "0", "5", "SPREAD", "3"]),
        "[DRY, 0, 0, 0]"
    );
    // Shard 0 lacks units: REFILL until it is marked dry, then SOLDOUT
    // (from the sold-out fast path, its record begins 0:0:).
    let r = reserve(&u(0, 1), "p-1", "1", &at(6000));
    assert_eq!(t.both("STOCK.RESERVE", k0, &refs(&r)), "[REFILL, 0, 0]");
    assert_eq!(
        t.both("STOCK.APPLY", k0, &["d0", "0", "SPREAD", "3"]),
        "[0, 0]"
    );
    assert_eq!(
        t.both("STOCK.APPLY", k0, &["d0", "0", "SPREAD", "3"]),
        "[0, 0]"
    );
    assert_eq!(t.both("STOCK.RESERVE", k0, &refs(&r)), "[SOLDOUT, 0, 0]");
    t.assert_same_data("shard 0 dry");
    // A dry shard with units reserved answers SOLDOUT past the fast path.
    let r2 = reserve(&u(2, 1), "q-1", "2", &at(6000));
    assert!(t
        .both("STOCK.RESERVE", k2, &refs(&r2))
        .starts_with("[OK, 21, "));
    let r2 = reserve(&u(2, 2), "q-2", "21", &at(6000));
    assert!(t
        .both("STOCK.RESERVE", k2, &refs(&r2))
        .starts_with("[LIMIT, 21, "));
    assert_eq!(
        t.both("STOCK.APPLY", k2, &["d2", "0", "SPREAD", "3"]),
        "[0, 21]"
    );
    let r2 = reserve(&u(2, 0), "q-1", "2", &at(6001));
    assert!(t
        .both("STOCK.RESERVE", k2, &refs(&r2))
        .contains("another user"));
    // Units come back to shard 0 from shard 2: the dry mark goes.
    assert_eq!(
        t.both("STOCK.TRANSFER", k0, &["h2", "2", "-4", "SPREAD", "3"]),
        "[OPEN, 0, 0, 1]"
    );
    assert_eq!(
        t.both("STOCK.APPLY", k2, &["h2", "-4", "SPREAD", "3"]),
        "[-4, 17]"
    );
    assert_eq!(
        t.both("STOCK.SETTLE", k0, &["h2", "-4", "SPREAD", "3"]),
        "1"
    );
    assert_eq!(
        t.both("STOCK.TRANSFER", k0, &["t4", "0", "4", "SPREAD", "3"]),
        "[OPEN, 4, 0, 1]"
    );
    assert_eq!(
        t.both("STOCK.APPLY", k0, &["t4", "4", "SPREAD", "3"]),
        "[4, 4]"
    );
    assert_eq!(t.both("STOCK.SETTLE", k0, &["t4", "4", "SPREAD", "3"]), "1");
    assert!(t
        .both("STOCK.RESERVE", k0, &refs(&r))
        .starts_with("[OK, 3, "));
    t.assert_same_data("shard 0 refilled");

    // A transfer left open (a crash between steps), seen by POOL and
    // finished; a handback of more than the shard has.
    t.both("STOCK.TRANSFER", k0, &["h3", "1", "-100", "SPREAD", "3"]);
    t.both("STOCK.TRANSFER", k0, &["h4", "2", "-1", "SPREAD", "3"]);
    assert_eq!(
        t.both("STOCK.POOL", k0, &sp),
        "[total, 30, free, 0, transit, 0, open, 2, pending, [h3, 1, -100, h4, 2, -1]]"
    );
    assert_eq!(
        t.both("STOCK.APPLY", k1, &["h3", "-100", "SPREAD", "3"]),
        "[-5, 0]"
    );
    assert_eq!(
        t.both("STOCK.SETTLE", k0, &["h3", "-5", "SPREAD", "3"]),
        "1"
    );
    t.assert_same_data("an open transfer finished");
    for key in [k0, k1, k2] {
        t.both("STOCK.INFO", key, &sp);
        t.both("STOCK.INFO", key, &[]);
        let r = t.both("STOCK.AUDIT", key, &["0", "COUNT", "50", "SPREAD", "3"]);
        assert_eq!(r.matches(", ").count(), 1, "{key}: {r}");
        t.both("STOCK.AUDIT", key, &["0", "SPREAD", "3", "COUNT", "2"]);
    }

    // Bad input on the spread commands.
    let bad: &[(&str, &str, &[&str])] = &[
        ("STOCK.TRANSFER", k0, &["x", "1", "1", "SPREAD"]),
        ("STOCK.TRANSFER", k0, &["x", "1", "1", "SPREAD", "3", "NOW"]),
        ("STOCK.TRANSFER", k0, &["x", "a", "1", "SPREAD", "3"]),
        ("STOCK.TRANSFER", k0, &["x", "1024", "1", "SPREAD", "3"]),
        ("STOCK.TRANSFER", k0, &["x", "-1", "1", "SPREAD", "3"]),
        ("STOCK.TRANSFER", k0, &["x", "1", "1.5", "SPREAD", "3"]),
        (
            "STOCK.TRANSFER",
            k0,
            &["x", "1", "9007199254740992", "SPREAD", "3"],
        ),
        ("STOCK.TRANSFER", k0, &["x", "1", "1", "FOO", "3"]),
        ("STOCK.TRANSFER", k0, &["x", "1", "1", "SPREAD", "0"]),
        ("STOCK.TRANSFER", k0, &["", "1", "1", "SPREAD", "3"]),
        ("STOCK.TRANSFER", k0, &["x", "1", "0", "SPREAD", "3"]),
        ("STOCK.TRANSFER", k0, &["x", "3", "1", "SPREAD", "3"]),
        ("STOCK.TRANSFER", k0, &["x", "1", "1", "SPREAD", "4"]),
        ("STOCK.TRANSFER", base, &["x", "1", "1", "SPREAD", "3"]),
        ("STOCK.APPLY", k1, &["x", "1", "SPREAD"]),
        ("STOCK.APPLY", k1, &["x", "y", "SPREAD", "3"]),
        ("STOCK.APPLY", k1, &["x", "1", "spread", "x"]),
        ("STOCK.APPLY", k1, &["", "1", "SPREAD", "3"]),
        ("STOCK.APPLY", k1, &["x", "1", "LATER", "3"]),
        ("STOCK.APPLY", base, &["x", "1", "SPREAD", "3"]),
        ("STOCK.APPLY", &k8[1], &["x", "1", "SPREAD", "3"]),
        ("STOCK.SETTLE", k0, &["x", "1"]),
        ("STOCK.SETTLE", k0, &["x", "z", "SPREAD", "3"]),
        ("STOCK.SETTLE", k0, &["", "1", "SPREAD", "3"]),
        ("STOCK.SETTLE", k2, &["t2", "23", "SPREAD", "3"]),
        ("STOCK.POOL", k0, &["SPREAD"]),
        ("STOCK.POOL", k0, &["FOO", "3"]),
        ("STOCK.POOL", k0, &["SPREAD", "2"]),
        ("STOCK.POOL", k0, &[]),
        (
            "STOCK.RESERVE",
            k1,
            &["1", "o", "1", "SPREAD", "3", "SPREAD", "3"],
        ),
        ("STOCK.RESERVE", k1, &["1", "o", "1", "SPREAD"]),
        ("STOCK.RESERVE", k1, &["1", "o", "1", "SPREAD", "3", "NOW"]),
        ("STOCK.CONFIRM", k1, &["o", "SPREAD", "-1"]),
        ("STOCK.RELEASE", k1, &["o", "SPREAD", "3", "X"]),
        ("STOCK.RELEASE", k1, &["o", "SPREAD"]),
        ("STOCK.RELEASE", k1, &["o", "X", "3"]),
        ("STOCK.INFO", k1, &["SPREAD"]),
        ("STOCK.INFO", k1, &["X"]),
        ("STOCK.INFO", k1, &["SPREAD", "4"]),
        ("STOCK.INFO", "sku:{9}", &["SPREAD", "3"]),
        ("STOCK.AUDIT", k1, &["0", "SPREAD"]),
        ("STOCK.AUDIT", k1, &["0", "SPREAD", "5000"]),
        ("STOCK.RESTOCK", k1, &["0", "SPREAD", "3", "NOW", "x"]),
    ];
    for (cmd, key, args) in bad {
        let r = t.both(cmd, key, args);
        assert!(r.starts_with("ERR<"), "{cmd} {key} {args:?}: {r}");
    }
    t.assert_same_data("bad input");

    // Hand-edited records: each refused alike, nothing written.
    let edits: &[(&[&str], &str, &str, &[&str])] = &[
        (
            &["HSET", "K0:transfers", "bad", "O:R:1:5:0"],
            "STOCK.TRANSFER",
            k0,
            &["bad", "1", "5", "SPREAD", "3"],
        ),
        (
            &["HSET", "K0:transfers", "bad", "C:X:1:5:5"],
            "STOCK.SETTLE",
            k0,
            &["bad", "5", "SPREAD", "3"],
        ),
        (
            &["HSET", "K0:transfers", "bad", "O:H:1:5:2"],
            "STOCK.TRANSFER",
            k0,
            &["bad", "1", "-5", "SPREAD", "3"],
        ),
        (
            &["ZADD", "K0:open", "0", "ghost"],
            "STOCK.POOL",
            k0,
            &["SPREAD", "3"],
        ),
        (
            &["HSET", "K1:applied", "bad", "-0"],
            "STOCK.APPLY",
            k1,
            &["bad", "1", "SPREAD", "3"],
        ),
        (
            &["HSET", "K1:applied", "bad", "01"],
            "STOCK.APPLY",
            k1,
            &["bad", "1", "SPREAD", "3"],
        ),
        (
            &["SET", "K0:pool", "5:0:4:0"],
            "STOCK.TRANSFER",
            k0,
            &["y", "1", "1", "SPREAD", "3"],
        ),
        (&["DEL", "K0:pool"], "STOCK.POOL", k0, &["SPREAD", "3"]),
        (
            &["SET", "K0:open", "x"],
            "STOCK.TRANSFER",
            k0,
            &["y", "1", "1", "SPREAD", "3"],
        ),
        (
            &["SET", "K1:applied", "x"],
            "STOCK.APPLY",
            k1,
            &["y", "1", "SPREAD", "3"],
        ),
        // A shard's mark names another shard (a copied record): read
        // alone on the sold-out path, and with the counts on the others.
        (
            &["SET", "K1", "0:0:0:0:2:1000:0:3:2:1"],
            "STOCK.RESERVE",
            k1,
            &["1", "o", "1", "SPREAD", "3"],
        ),
        (
            &["SET", "K1", "2:0:0:2:2:1000:0:3:2:0"],
            "STOCK.RESERVE",
            k1,
            &["1", "o", "1"],
        ),
        // A shard (by its meta) whose record has no mark, or a bad one.
        (
            &["SET", "K1", "2:0:0:2:2:1000:0"],
            "STOCK.RESERVE",
            k1,
            &["1", "o", "1", "SPREAD", "3"],
        ),
        (
            &["SET", "K1", "2:0:0:2:2:1000:0:3:1:2"],
            "STOCK.CONFIRM",
            k1,
            &["o-5", "SPREAD", "3"],
        ),
        (
            &["SET", "K1", "0:0:0:0:2:1000:0:3:1"],
            "STOCK.RESTOCK",
            k1,
            &["0", "SPREAD", "3"],
        ),
        (&["SET", "K1", "junk"], "STOCK.INFO", k1, &["SPREAD", "3"]),
        // The mark decides alone: another count is refused from it.
        (
            &["HDEL", "K1:meta", "spread", "shard"],
            "STOCK.RESERVE",
            k1,
            &["1", "o", "1", "SPREAD", "4"],
        ),
        (&["DEL", "K0:meta"], "STOCK.RESERVE", base, &["1", "o", "1"]),
        (
            &["DEL", "K0:meta"],
            "STOCK.CREATE",
            k0,
            &["5", "SPREAD", "3"],
        ),
    ];
    for (e, cmd, key, args) in edits {
        let snapshot = snapshot(&mut t.m);
        let e: Vec<String> = e
            .iter()
            .map(|a| a.replace("K0", k0).replace("K1", k1))
            .collect();
        t.raw(&e.iter().map(String::as_str).collect::<Vec<_>>());
        let r = t.both(cmd, key, args);
        assert!(r.starts_with("ERR<"), "{e:?} {cmd}: {r}");
        t.assert_same_data(&format!("edit {e:?}"));
        // Back to the state before the edit, on both sides.
        restore(&mut t.m, &snapshot);
        restore(&mut t.l, &snapshot);
    }
    let statuses = ["OPEN", "CLOSED", "DRY", "REFILL", "SOLDOUT", "LIMIT"];
    for s in statuses {
        assert!(
            t.seen.iter().any(|r| r.contains(&format!("[{s}, "))),
            "no {s} seen"
        );
    }
}

#[test]
fn lua_twins_run_the_spread_form_as_the_module() {
    for via in [Via::Script, Via::Function] {
        spread_lifecycle(via);
    }
}

/// Random steps on a spread SKU of 3 shards: reservations (mostly on the
/// buyer's shard), confirmations, releases, lapsed leases, transfers
/// opened, applied and settled in any order and replayed (mostly with the
/// right units, sometimes not), dry marks, reads and audits; every reply
/// and all data equal after each step.
fn spread_random_stream(seed: u64, steps: usize, via: Via) {
    let srv = Server::start();
    let mut t = SpreadSides::new(&srv, via);
    let mut rng = StdRng::seed_from_u64(seed);
    let n = 3u32;
    let k = shard_keys("sku:{r}", n);
    let mut now = now_ms();
    let create = [
        "12",
        "LIMIT",
        "3",
        "LEASE",
        "3000",
        "NOW",
        &now.to_string(),
        "SPREAD",
        "3",
    ]
    .map(String::from);
    for key in &k {
        let c: Vec<&str> = create.iter().map(String::as_str).collect();
        assert_eq!(t.both("STOCK.CREATE", key, &c), "OK");
    }
    // Transfers as the replies told them: id → (shard, APPLY's delta,
    // APPLY's reply once known).
    let mut opened: Vec<(String, u32, i64, Option<i64>)> = Vec::new();
    // The orders reserved (shard, order), for CONFIRM and RELEASE.
    let mut held: Vec<(usize, String)> = Vec::new();
    // The arguments of every TRANSFER answered OPEN.
    let mut sent: Vec<Vec<String>> = Vec::new();
    for step in 0..steps {
        now += [0, 0, 50, 200, 1500][rng.gen_range(0..5)];
        let ts = now.to_string();
        let user = rng.gen_range(0..12u32);
        let own = routing::shard_of(user.to_string().as_bytes(), n) as usize;
        let i = if rng.gen_bool(0.9) {
            own
        } else {
            rng.gen_range(0..3)
        };
        let spread: Vec<String> = match rng.gen_range(0..20) {
            0 => vec![],
            1 => vec!["SPREAD".into(), "4".into()],
            _ => vec!["SPREAD".into(), "3".into()],
        };
        let order = format!("o{}", rng.gen_range(0..10));
        let (cmd, key, mut args): (&str, String, Vec<String>) = match rng.gen_range(0..100) {
            0..=34 => (
                "STOCK.RESERVE",
                k[i].clone(),
                vec![
                    user.to_string(),
                    order,
                    rng.gen_range(1..4).to_string(),
                    "NOW".into(),
                    ts.clone(),
                ],
            ),
            35..=44 => {
                let (i, order) = pick(&mut rng, &held, i, order);
                (
                    "STOCK.CONFIRM",
                    k[i].clone(),
                    vec![order, "NOW".into(), ts.clone()],
                )
            }
            45..=51 => {
                let (i, order) = pick(&mut rng, &held, i, order);
                ("STOCK.RELEASE", k[i].clone(), vec![order])
            }
            52..=63 => {
                let sh = rng.gen_range(0..3u32);
                let d: i64 = if rng.gen_bool(0.75) {
                    rng.gen_range(1..6)
                } else {
                    -rng.gen_range(1..4)
                };
                let id = format!("t{}", rng.gen_range(0..40));
                let key = if rng.gen_bool(0.95) { &k[0] } else { &k[1] };
                let args = match sent.len() {
                    // A replay of a transfer opened before.
                    m if m > 0 && rng.gen_bool(0.3) => sent[rng.gen_range(0..m)].clone(),
                    _ => vec![id, sh.to_string(), d.to_string()],
                };
                ("STOCK.TRANSFER", key.clone(), args)
            }
            64..=75 if !opened.is_empty() => {
                let j = rng.gen_range(0..opened.len());
                let (id, sh, d, _) = opened[j].clone();
                let d = if rng.gen_bool(0.85) { d } else { d + 1 };
                (
                    "STOCK.APPLY",
                    k[sh as usize].clone(),
                    vec![id, d.to_string()],
                )
            }
            76..=85 if !opened.is_empty() => {
                let j = rng.gen_range(0..opened.len());
                let (id, _, d, a) = opened[j].clone();
                let a = match a {
                    Some(a) if rng.gen_bool(0.85) => a,
                    _ => d + rng.gen_range(-1..2),
                };
                ("STOCK.SETTLE", k[0].clone(), vec![id, a.to_string()])
            }
            86..=87 => ("STOCK.APPLY", k[i].clone(), vec!["dry".into(), "0".into()]),
            88..=90 => ("STOCK.POOL", k[0].clone(), vec![]),
            91..=93 => ("STOCK.INFO", k[i].clone(), vec![]),
            94..=96 => ("STOCK.AUDIT", k[i].clone(), vec!["0".into()]),
            _ => (
                "STOCK.RESTOCK",
                k[i].clone(),
                vec!["0".into(), "NOW".into(), ts.clone()],
            ),
        };
        args.extend(spread);
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = t.both(cmd, &key, &refs);
        if cmd == "STOCK.RESERVE" && r.starts_with("[OK, ") {
            held.push((i, args[1].clone()));
        }
        if cmd == "STOCK.TRANSFER" && r.starts_with("[OPEN, ") {
            let units: i64 = r[7..].split(',').next().unwrap().parse().unwrap();
            let d: i64 = args[2].parse().unwrap();
            let apply = if d > 0 { units } else { d };
            sent.push(args[..3].to_vec());
            if !opened.iter().any(|o| o.0 == args[0]) {
                opened.push((args[0].clone(), args[1].parse().unwrap(), apply, None));
            }
        }
        if cmd == "STOCK.APPLY" && args[0] != "dry" && r.starts_with('[') {
            let a: i64 = r[1..].split(',').next().unwrap().parse().unwrap();
            if let Some(o) = opened.iter_mut().find(|o| o.0 == args[0]) {
                o.3 = Some(a);
            }
        }
        t.assert_same_data(&format!("step {step}: {cmd} {key} {args:?}"));
    }
    for want in [
        "STOCK.RESERVE [OK, ",
        "STOCK.RESERVE [REFILL, ",
        "STOCK.RESERVE [SOLDOUT, ",
        "STOCK.TRANSFER [OPEN, ",
        "STOCK.TRANSFER [CLOSED, ",
        "STOCK.TRANSFER [DRY, ",
        "STOCK.SETTLE 1",
        "STOCK.CONFIRM 1",
    ] {
        assert!(
            t.seen.iter().any(|r| r.starts_with(want)),
            "seed {seed}: no {want} in {:?}",
            t.seen
        );
    }
}

/// Mostly an order reserved before, on its shard; else `(i, order)`.
fn pick(rng: &mut StdRng, held: &[(usize, String)], i: usize, order: String) -> (usize, String) {
    if !held.is_empty() && rng.gen_bool(0.7) {
        return held[rng.gen_range(0..held.len())].clone();
    }
    (i, order)
}

#[test]
fn lua_twins_match_the_module_on_random_spread_streams() {
    for seed in 0..2 {
        let via = if seed % 2 == 0 {
            Via::Script
        } else {
            Via::Function
        };
        spread_random_stream(seed, 400, via);
    }
}
