//! STOCK on a real server: reservations, the same reply for the same
//! order, per-user limits, confirmations, releases, lapsed leases returned
//! exactly once and in bounded steps, restocks and removals, the audit,
//! every error with nothing written, the sold-out fast path, RESP2 and
//! RESP3, 50 concurrent clients checked after every batch, kill -9 under
//! `appendfsync always`, a failover after WAIT, replication, AOF and RDB
//! with the TTL's one instant on every key.

use crate::common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::*;

const T0: i64 = 1_767_225_600_000;

fn at(t: i64) -> String {
    (T0 + t).to_string()
}

/// Runs `args` with `NOW T0+t` appended.
fn now(c: &mut Connection, args: &[&str], t: i64) -> String {
    let n = at(t);
    let mut a = args.to_vec();
    a.extend_from_slice(&["NOW", &n]);
    run(c, &a)
}

/// STOCK.INFO as (total, available, reserved, sold).
fn counts(c: &mut Connection, key: &str) -> (i64, i64, i64, i64) {
    let v: Vec<Value> = redis::cmd("STOCK.INFO").arg(key).query(c).unwrap();
    let f = |name: &str| -> i64 {
        let i = v
            .iter()
            .position(|x| matches!(x, Value::BulkString(b) if b == name.as_bytes()))
            .unwrap_or_else(|| panic!("{name} in {v:?}"));
        match v[i + 1] {
            Value::Int(n) => n,
            ref o => panic!("{o:?}"),
        }
    };
    (f("total"), f("available"), f("reserved"), f("sold"))
}

/// Runs the whole audit (cursor to 0) and returns every problem found.
fn audit(c: &mut Connection, key: &str) -> Vec<String> {
    let mut cursor = "0".to_string();
    let mut problems = Vec::new();
    loop {
        let v: Vec<Value> = redis::cmd("STOCK.AUDIT")
            .arg(key)
            .arg(&cursor)
            .arg("COUNT")
            .arg(500)
            .query(c)
            .unwrap();
        cursor = match &v[0] {
            Value::BulkString(b) => String::from_utf8(b.clone()).unwrap(),
            o => panic!("{o:?}"),
        };
        for p in &v[2..] {
            if let Value::BulkString(b) = p {
                problems.push(String::from_utf8_lossy(b).into_owned());
            }
        }
        if cursor == "0" {
            return problems;
        }
    }
}

const NOTINT: &str = "ERR<ERR value is not an integer or out of range>";
const SYNTAX: &str = "ERR<ERR syntax error>";
const WRONGTYPE: &str = "ERR<WRONGTYPE Operation against a key holding the wrong kind of value>";

#[test]
fn reservations_confirmations_and_releases_keep_the_ledger() {
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(
        run(
            &mut c,
            &["STOCK.CREATE", "s", "5", "LIMIT", "3", "LEASE", "1000"]
        ),
        "OK"
    );
    assert_eq!(run(&mut c, &["GET", "s"]), "5:0:0:5:3:1000:0");
    assert_eq!(
        now(&mut c, &["STOCK.RESERVE", "s", "al:ice", "o1", "2"], 0),
        format!("[OK, 3, {}]", at(1000))
    );
    // The same order, later: the same reply, nothing changes.
    assert_eq!(
        now(&mut c, &["STOCK.RESERVE", "s", "al:ice", "o1", "2"], 500),
        format!("[OK, 3, {}]", at(1000))
    );
    assert_eq!(
        run(&mut c, &["HGET", "s:orders", "o1"]),
        format!("R:2:{}:3:al:ice", at(1000))
    );
    assert_eq!(run(&mut c, &["HGET", "s:users", "al:ice"]), "2");
    assert_eq!(
        run(&mut c, &["ZSCORE", "s:leases", "o1"]),
        at(1000).to_string()
    );
    // A second order of the same user counts against the limit.
    assert_eq!(
        now(&mut c, &["STOCK.RESERVE", "s", "al:ice", "o2", "2"], 10),
        "[LIMIT, 3, 0]"
    );
    assert_eq!(
        now(&mut c, &["STOCK.RESERVE", "s", "al:ice", "o2", "1"], 10),
        format!("[OK, 2, {}]", at(1010))
    );
    assert_eq!(
        now(&mut c, &["STOCK.RESERVE", "s", "bob", "o3", "3"], 20),
        "[SOLDOUT, 2, 0]"
    );
    // A refused order is not recorded: a retry is a new attempt.
    assert_eq!(int(&mut c, &["HEXISTS", "s:orders", "o3"]), 0);
    assert_eq!(
        now(&mut c, &["STOCK.RESERVE", "s", "bob", "o3", "2"], 20),
        format!("[OK, 0, {}]", at(1020))
    );
    assert_eq!(run(&mut c, &["GET", "s"]), "0:5:0:5:3:1000:0");
    // Confirm, twice; release, twice; a sold order is not released.
    assert_eq!(now(&mut c, &["STOCK.CONFIRM", "s", "o1"], 999), "1");
    assert_eq!(now(&mut c, &["STOCK.CONFIRM", "s", "o1"], 5000), "0");
    assert_eq!(run(&mut c, &["ZSCORE", "s:leases", "o1"]), "nil");
    assert_eq!(run(&mut c, &["STOCK.RELEASE", "s", "o2"]), "1");
    assert_eq!(run(&mut c, &["STOCK.RELEASE", "s", "o2"]), "0");
    assert_eq!(run(&mut c, &["STOCK.RELEASE", "s", "nope"]), "0");
    assert_eq!(
        run(&mut c, &["STOCK.RELEASE", "s", "o1"]),
        "ERR<ERR stock: order is confirmed>"
    );
    assert_eq!(
        now(&mut c, &["STOCK.CONFIRM", "s", "o2"], 0),
        "ERR<ERR stock: order released>"
    );
    // The sold units stay with the user: alice holds 2 of 3.
    assert_eq!(run(&mut c, &["HGET", "s:users", "al:ice"]), "2");
    assert_eq!(run(&mut c, &["GET", "s"]), "1:2:2:5:3:1000:0");
    assert_eq!(counts(&mut c, "s"), (5, 1, 2, 2));
    // A repeated order with other arguments is refused.
    assert_eq!(
        now(&mut c, &["STOCK.RESERVE", "s", "bob", "o3", "1"], 30),
        "ERR<ERR stock: order exists with another user or quantity>"
    );
    assert_eq!(
        now(&mut c, &["STOCK.RESERVE", "s", "eve", "o3", "2"], 30),
        "ERR<ERR stock: order exists with another user or quantity>"
    );
    // Restock and removal: only available units can be removed.
    assert_eq!(now(&mut c, &["STOCK.RESTOCK", "s", "4"], 40), "5");
    assert_eq!(
        now(&mut c, &["STOCK.RESTOCK", "s", "-6"], 40),
        "ERR<ERR stock: not enough available units>"
    );
    assert_eq!(now(&mut c, &["STOCK.RESTOCK", "s", "-5"], 40), "0");
    assert_eq!(counts(&mut c, "s"), (4, 0, 2, 2));
    assert_eq!(
        run(&mut c, &["STOCK.INFO", "s"]),
        "[total, 4, available, 0, reserved, 2, sold, 2, limit, 3, lease_ms, 1000, orders, 3]"
    );
    assert_eq!(run(&mut c, &["STOCK.INFO", "none"]), "[]");
    assert_eq!(audit(&mut c, "s"), Vec::<String>::new());
    assert_eq!(run(&mut c, &["STOCK.AUDIT", "s", "0"]), "[0, 3]");
}

#[test]
fn a_lapsed_lease_returns_its_units_once_and_cannot_be_confirmed() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["STOCK.CREATE", "s", "3", "LEASE", "100"]);
    now(&mut c, &["STOCK.RESERVE", "s", "u1", "o1", "2"], 0);
    now(&mut c, &["STOCK.RESERVE", "s", "u2", "o2", "1"], 50);
    // At the lease end exactly the lease has lapsed: CONFIRM is refused
    // and writes nothing (the units go back with the next write).
    let before = dump_keys(&mut c, "*");
    assert_eq!(
        now(&mut c, &["STOCK.CONFIRM", "s", "o1"], 100),
        "ERR<ERR stock: lease expired>"
    );
    assert_eq!(dump_keys(&mut c, "*"), before);
    assert_eq!(counts(&mut c, "s"), (3, 0, 3, 0));
    // The next reservation returns o1 first and takes from its units.
    assert_eq!(
        now(&mut c, &["STOCK.RESERVE", "s", "u3", "o3", "2"], 120),
        format!("[OK, 0, {}]", at(220))
    );
    assert_eq!(
        run(&mut c, &["HGET", "s:orders", "o1"]),
        format!("E:2:{}:1:u1", at(100))
    );
    assert_eq!(int(&mut c, &["HEXISTS", "s:users", "u1"]), 0);
    assert_eq!(counts(&mut c, "s"), (3, 0, 3, 0));
    // Returned once: neither a release nor a confirm gives it again.
    assert_eq!(run(&mut c, &["STOCK.RELEASE", "s", "o1"]), "0");
    assert_eq!(
        now(&mut c, &["STOCK.CONFIRM", "s", "o1"], 0),
        "ERR<ERR stock: lease expired>"
    );
    // The repeated reservation still gets its first reply.
    assert_eq!(
        now(&mut c, &["STOCK.RESERVE", "s", "u1", "o1", "2"], 130),
        format!("[OK, 1, {}]", at(100))
    );
    // A lapsed lease not yet returned can still be released, once.
    assert_eq!(run(&mut c, &["STOCK.RELEASE", "s", "o2"]), "1");
    assert_eq!(now(&mut c, &["STOCK.RESTOCK", "s", "0"], 1000), "3");
    assert_eq!(counts(&mut c, "s"), (3, 3, 0, 0));
    assert_eq!(audit(&mut c, "s"), Vec::<String>::new());
    assert_eq!(int(&mut c, &["EXISTS", "s:leases", "s:users"]), 0);
}

#[test]
fn a_backlog_of_lapsed_leases_is_returned_in_bounded_steps() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["STOCK.CREATE", "s", "250", "LEASE", "10"]);
    let mut pipe = redis::pipe();
    for i in 0..250 {
        pipe.cmd("STOCK.RESERVE").arg(&[
            "s",
            &format!("u{i}"),
            &format!("o{i}"),
            "1",
            "NOW",
            &at(0),
        ]);
    }
    pipe.query::<()>(&mut c).unwrap();
    assert_eq!(counts(&mut c, "s"), (250, 0, 250, 0));
    // 100 per write: three writes return all 250, oldest first.
    assert_eq!(now(&mut c, &["STOCK.RESTOCK", "s", "0"], 20), "100");
    assert_eq!(now(&mut c, &["STOCK.RESTOCK", "s", "0"], 20), "200");
    assert_eq!(
        now(&mut c, &["STOCK.RESERVE", "s", "x", "ox", "1"], 20),
        format!("[OK, 249, {}]", at(30))
    );
    assert_eq!(counts(&mut c, "s"), (250, 249, 1, 0));
    assert_eq!(int(&mut c, &["ZCARD", "s:leases"]), 1);
    assert_eq!(audit(&mut c, "s"), Vec::<String>::new());
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    assert!(info.contains("hotpath_stock_expired:250"), "{info}");
}

#[test]
fn the_per_user_limit_holds_across_orders_and_returns() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(
        &mut c,
        &["STOCK.CREATE", "s", "100", "LIMIT", "2", "LEASE", "100"],
    );
    assert!(now(&mut c, &["STOCK.RESERVE", "s", "u", "a", "1"], 0).starts_with("[OK"));
    assert!(now(&mut c, &["STOCK.RESERVE", "s", "u", "b", "1"], 0).starts_with("[OK"));
    assert_eq!(
        now(&mut c, &["STOCK.RESERVE", "s", "u", "c", "1"], 0),
        "[LIMIT, 98, 0]"
    );
    assert_eq!(
        now(&mut c, &["STOCK.RESERVE", "s", "u", "d", "3"], 0),
        "[LIMIT, 98, 0]"
    );
    now(&mut c, &["STOCK.CONFIRM", "s", "a"], 10);
    // b's lease lapses and its unit goes back: u may reserve one more,
    // but not two (a was sold).
    assert_eq!(
        now(&mut c, &["STOCK.RESERVE", "s", "u", "e", "2"], 200),
        "[LIMIT, 99, 0]"
    );
    assert!(now(&mut c, &["STOCK.RESERVE", "s", "u", "f", "1"], 200).starts_with("[OK"));
    assert_eq!(run(&mut c, &["HGET", "s:users", "u"]), "2");
    // Another user is not affected.
    assert!(now(&mut c, &["STOCK.RESERVE", "s", "v", "g", "2"], 200).starts_with("[OK"));
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    for want in [
        "hotpath_stock_created:1",
        "hotpath_stock_reserved:4",
        "hotpath_stock_limited:3",
        "hotpath_stock_confirmed:1",
        "hotpath_stock_expired:1",
    ] {
        assert!(info.contains(want), "{want} in {info}");
    }
}

#[test]
fn a_finished_stock_answers_soldout_from_its_one_value() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["STOCK.CREATE", "s", "2", "LEASE", "1000"]);
    now(&mut c, &["STOCK.RESERVE", "s", "u1", "o1", "1"], 0);
    now(&mut c, &["STOCK.RESERVE", "s", "u2", "o2", "1"], 0);
    // Sold out while a lease is alive: the order is still read, so a
    // retry of o1 gets its reply.
    assert_eq!(
        now(&mut c, &["STOCK.RESERVE", "s", "u1", "o1", "1"], 5),
        format!("[OK, 1, {}]", at(1000))
    );
    assert_eq!(
        now(&mut c, &["STOCK.RESERVE", "s", "u3", "o3", "1"], 5),
        "[SOLDOUT, 0, 0]"
    );
    now(&mut c, &["STOCK.CONFIRM", "s", "o1"], 10);
    now(&mut c, &["STOCK.CONFIRM", "s", "o2"], 10);
    assert_eq!(run(&mut c, &["GET", "s"]), "0:0:2:2:0:1000:0");
    // Finished: every order hears SOLDOUT, even over a corrupt ledger,
    // which the fast path does not read.
    run(&mut c, &["DEL", "s:orders"]);
    run(&mut c, &["SET", "s:users", "x"]);
    let before = dump_keys(&mut c, "*");
    for o in ["o1", "o3", "o4"] {
        assert_eq!(
            now(&mut c, &["STOCK.RESERVE", "s", "u1", o, "1"], 20),
            "[SOLDOUT, 0, 0]"
        );
    }
    assert_eq!(dump_keys(&mut c, "*"), before);
    // A restock reopens the sale (and then reads the ledger again).
    run(&mut c, &["DEL", "s:users"]);
    assert_eq!(now(&mut c, &["STOCK.RESTOCK", "s", "1"], 30), "1");
    assert!(now(&mut c, &["STOCK.RESERVE", "s", "u4", "o4", "1"], 30).starts_with("[OK"));
}

#[test]
fn bad_input_is_refused_and_nothing_is_written() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["STOCK.CREATE", "s", "5", "LIMIT", "2"]);
    now(&mut c, &["STOCK.RESERVE", "s", "u", "o1", "1"], 0);
    now(&mut c, &["STOCK.RESERVE", "s", "u", "o2", "1"], 0);
    now(&mut c, &["STOCK.CONFIRM", "s", "o2"], 0);
    // CREATE deletes leftover derived keys: the wrong types come after.
    run(&mut c, &["STOCK.CREATE", "w", "1"]);
    run(&mut c, &["SET", "w:orders", "x"]);
    run(&mut c, &["STOCK.CREATE", "w2", "1"]);
    run(&mut c, &["SET", "w2:users", "x"]);
    run(&mut c, &["STOCK.CREATE", "w3", "1"]);
    run(&mut c, &["SET", "w3:leases", "x"]);
    run(&mut c, &["RPUSH", "list", "x"]);
    let before = dump_keys(&mut c, "*");
    let arity = |n: &str| format!("ERR<ERR wrong number of arguments for '{n}' command>");
    let max = "9007199254740991";
    let over = "9007199254740992";
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["STOCK.CREATE", "n"], arity("stock.create")),
        (vec!["STOCK.RESERVE", "s", "u", "o"], arity("stock.reserve")),
        (vec!["STOCK.CONFIRM", "s"], arity("stock.confirm")),
        (vec!["STOCK.RELEASE", "s"], arity("stock.release")),
        (vec!["STOCK.RELEASE", "s", "o1", "x"], SYNTAX.into()),
        (vec!["STOCK.RESTOCK", "s"], arity("stock.restock")),
        (vec!["STOCK.INFO"], arity("stock.info")),
        (vec!["STOCK.INFO", "s", "x"], SYNTAX.into()),
        (vec!["STOCK.AUDIT", "s"], arity("stock.audit")),
        (vec!["STOCK.CREATE", "n", "-1"], NOTINT.into()),
        (vec!["STOCK.CREATE", "n", over], NOTINT.into()),
        (vec!["STOCK.CREATE", "n", "1", "LIMIT", "-1"], NOTINT.into()),
        (vec!["STOCK.CREATE", "n", "1", "LEASE", "0"], NOTINT.into()),
        (
            vec!["STOCK.CREATE", "n", "1", "LEASE", "3153600000001"],
            NOTINT.into(),
        ),
        (vec!["STOCK.CREATE", "n", "1", "TTL", "0"], NOTINT.into()),
        (vec!["STOCK.CREATE", "n", "1", "NOW", "-1"], NOTINT.into()),
        (vec!["STOCK.CREATE", "n", "1", "LIMIT"], SYNTAX.into()),
        (
            vec!["STOCK.CREATE", "n", "1", "SPREAD", "3"],
            "ERR<ERR stock: 'n' is not a shard key of 3 shards (see docs/spread.md)>".into(),
        ),
        (
            vec!["STOCK.CREATE", "s", "1"],
            "ERR<ERR stock: already exists>".into(),
        ),
        (vec!["STOCK.CREATE", "list", "1"], WRONGTYPE.into()),
        (vec!["STOCK.RESERVE", "s", "u", "o", "0"], NOTINT.into()),
        (vec!["STOCK.RESERVE", "s", "u", "o", over], NOTINT.into()),
        (vec!["STOCK.RESERVE", "s", "u", "o", "x"], NOTINT.into()),
        (
            vec![
                "STOCK.RESERVE",
                "s",
                "u",
                "o",
                "1",
                "NOW",
                "253402300800000",
            ],
            NOTINT.into(),
        ),
        (
            vec!["STOCK.RESERVE", "s", "u", "o", "1", "NOW"],
            SYNTAX.into(),
        ),
        (
            vec!["STOCK.RESERVE", "s", "u", "o", "1", "X", "1"],
            SYNTAX.into(),
        ),
        (
            vec!["STOCK.RESERVE", "s", "", "o", "1"],
            "ERR<ERR stock: user must not be empty>".into(),
        ),
        (
            vec!["STOCK.RESERVE", "s", "u", "", "1"],
            "ERR<ERR stock: order must not be empty>".into(),
        ),
        (
            vec!["STOCK.RESERVE", "nope", "u", "o", "1"],
            "ERR<ERR stock: no such stock>".into(),
        ),
        (
            vec!["STOCK.RESERVE", "list", "u", "o", "1"],
            WRONGTYPE.into(),
        ),
        (vec!["STOCK.RESERVE", "w", "u", "o", "1"], WRONGTYPE.into()),
        (vec!["STOCK.RESERVE", "w2", "u", "o", "1"], WRONGTYPE.into()),
        (vec!["STOCK.RESERVE", "w3", "u", "o", "1"], WRONGTYPE.into()),
        (
            vec!["STOCK.RESERVE", "s", "v", "o1", "1"],
            "ERR<ERR stock: order exists with another user or quantity>".into(),
        ),
        (
            vec!["STOCK.CONFIRM", "s", ""],
            "ERR<ERR stock: order must not be empty>".into(),
        ),
        (
            vec!["STOCK.CONFIRM", "s", "zz"],
            "ERR<ERR stock: no such order>".into(),
        ),
        (
            vec!["STOCK.CONFIRM", "nope", "o1"],
            "ERR<ERR stock: no such stock>".into(),
        ),
        (vec!["STOCK.CONFIRM", "s", "o1", "NOW", "x"], NOTINT.into()),
        (vec!["STOCK.CONFIRM", "s", "o1", "LATER"], SYNTAX.into()),
        (
            vec!["STOCK.CONFIRM", "s", "o1", "NOW", "253402300799999"],
            "ERR<ERR stock: lease expired>".into(),
        ),
        (vec!["STOCK.CONFIRM", "w", "o1"], WRONGTYPE.into()),
        (
            vec!["STOCK.RELEASE", "s", "o2"],
            "ERR<ERR stock: order is confirmed>".into(),
        ),
        (
            vec!["STOCK.RELEASE", "nope", "o2"],
            "ERR<ERR stock: no such stock>".into(),
        ),
        (
            vec!["STOCK.RELEASE", "s", ""],
            "ERR<ERR stock: order must not be empty>".into(),
        ),
        (vec!["STOCK.RELEASE", "list", "o1"], WRONGTYPE.into()),
        (vec!["STOCK.RESTOCK", "s", over], NOTINT.into()),
        (
            vec!["STOCK.RESTOCK", "s", "-9007199254740992"],
            NOTINT.into(),
        ),
        (vec!["STOCK.RESTOCK", "s", "1", "2"], SYNTAX.into()),
        // o1's lease (from T0) has lapsed by the server clock: the
        // removal counts its unit as available, and still writes nothing.
        (
            vec!["STOCK.RESTOCK", "s", "-5"],
            "ERR<ERR stock: not enough available units>".into(),
        ),
        (
            vec!["STOCK.RESTOCK", "s", max],
            "ERR<ERR stock: integer overflow in 's'>".into(),
        ),
        (
            vec!["STOCK.RESTOCK", "nope", "1"],
            "ERR<ERR stock: no such stock>".into(),
        ),
        (vec!["STOCK.RESTOCK", "w3", "1"], WRONGTYPE.into()),
        (vec!["STOCK.INFO", "list"], WRONGTYPE.into()),
        (vec!["STOCK.INFO", "w"], WRONGTYPE.into()),
        (vec!["STOCK.AUDIT", "s", "-1"], NOTINT.into()),
        (vec!["STOCK.AUDIT", "s", "x"], NOTINT.into()),
        (vec!["STOCK.AUDIT", "s", "0", "COUNT", "0"], NOTINT.into()),
        (vec!["STOCK.AUDIT", "s", "0", "COUNT", "501"], NOTINT.into()),
        (vec!["STOCK.AUDIT", "s", "0", "MATCH", "x"], SYNTAX.into()),
        (
            vec!["STOCK.AUDIT", "nope", "0"],
            "ERR<ERR stock: no such stock>".into(),
        ),
        (vec!["STOCK.AUDIT", "w", "0"], WRONGTYPE.into()),
    ];
    for (args, want) in &cases {
        assert_eq!(&run(&mut c, args), want, "{args:?}");
    }
    assert_eq!(dump_keys(&mut c, "*"), before, "a refused call wrote");
}

#[test]
fn hand_edited_records_are_refused_and_nothing_is_written() {
    let srv = Server::start();
    let mut c = srv.conn();
    // Each case starts from the stock `s` with one order o1 of user u,
    // reserved at NOW 0 for 100 ms: `R:1:100:4:u`, its lease at 100.
    let cases: Vec<(Vec<&str>, Vec<&str>, &str)> = vec![
        (
            vec!["SET", "s", "5:0:0:6:0:100:0"],
            vec!["STOCK.RESERVE", "s", "v", "o2", "1", "NOW", "1"],
            "ERR<ERR stock: corrupt data in 's'>",
        ),
        (
            vec!["SET", "s", "x"],
            vec!["STOCK.INFO", "s"],
            "ERR<ERR stock: corrupt data in 's'>",
        ),
        (
            vec!["HSET", "s:orders", "o1", "R:x"],
            vec!["STOCK.CONFIRM", "s", "o1", "NOW", "1"],
            "ERR<ERR stock: corrupt data in 's:orders' field 'o1'>",
        ),
        (
            vec!["HSET", "s:orders", "o1", "R:1:100:4:"],
            vec!["STOCK.RESERVE", "s", "u", "o1", "1", "NOW", "1"],
            "ERR<ERR stock: corrupt data in 's:orders' field 'o1'>",
        ),
        (
            vec!["HSET", "s:users", "u", "0"],
            vec!["STOCK.RELEASE", "s", "o1"],
            "ERR<ERR stock: corrupt data in 's:users' field 'u'>",
        ),
        (
            vec!["HSET", "s:users", "u", "x"],
            vec!["STOCK.RESERVE", "s", "u", "o2", "1", "NOW", "1"],
            "ERR<ERR stock: corrupt data in 's:users' field 'u'>",
        ),
        (
            vec!["ZADD", "s:leases", "5", "ghost"],
            vec!["STOCK.RESERVE", "s", "v", "o2", "1", "NOW", "10"],
            "ERR<ERR stock: corrupt data in 's:leases' field 'ghost'>",
        ),
        (
            vec!["ZADD", "s:leases", "1.5", "o1"],
            vec!["STOCK.RESTOCK", "s", "1", "NOW", "200"],
            "ERR<ERR stock: corrupt data in 's:leases' field 'o1'>",
        ),
        (
            vec!["ZREM", "s:leases", "o1"],
            vec!["STOCK.CONFIRM", "s", "o1", "NOW", "1"],
            "ERR<ERR stock: corrupt data in 's:orders' field 'o1'>",
        ),
    ];
    for (edit, args, want) in cases {
        run(&mut c, &["FLUSHALL"]);
        run(&mut c, &["STOCK.CREATE", "s", "5", "LEASE", "100"]);
        assert_eq!(
            run(&mut c, &["STOCK.RESERVE", "s", "u", "o1", "1", "NOW", "0"]),
            "[OK, 4, 100]"
        );
        run(&mut c, &edit);
        let before = dump_keys(&mut c, "*");
        assert_eq!(run(&mut c, &args), want, "{edit:?} then {args:?}");
        assert_eq!(dump_keys(&mut c, "*"), before, "{args:?} wrote");
    }
    // The audit names what is wrong instead of refusing.
    run(&mut c, &["FLUSHALL"]);
    run(&mut c, &["STOCK.CREATE", "s", "5", "LIMIT", "1"]);
    now(&mut c, &["STOCK.RESERVE", "s", "u", "o1", "1"], 0);
    now(&mut c, &["STOCK.RESERVE", "s", "v", "o2", "1"], 0);
    run(&mut c, &["ZREM", "s:leases", "o1"]);
    run(&mut c, &["HSET", "s:users", "v", "3"]);
    run(&mut c, &["HSET", "s:orders", "bad", "nope"]);
    let mut p = audit(&mut c, "s");
    p.sort();
    assert_eq!(
        p,
        vec![
            "ledger: 1 leases for 2 reserved orders",
            "ledger: user 'v' holds 3, orders hold 1",
            "order 'bad': corrupt record",
            "order 'o1': reserved without its lease",
            "user 'v': holds 3 over the limit 1",
        ]
    );
}

#[test]
fn replies_are_arrays_and_info_a_map_in_resp3() {
    let srv = Server::start();
    let client =
        redis::Client::open(format!("redis://127.0.0.1:{}/?protocol=resp3", srv.port)).unwrap();
    let mut c3 = client.get_connection().unwrap();
    let mut c2 = srv.conn();
    run(&mut c2, &["STOCK.CREATE", "s", "3", "LEASE", "1000"]);
    let r = cmd(
        &mut c3,
        &["STOCK.RESERVE", "s", "u", "o", "1", "NOW", &at(0)],
    )
    .unwrap();
    let want = Value::Array(vec![
        Value::BulkString(b"OK".to_vec()),
        Value::Int(2),
        Value::Int(T0 + 1000),
    ]);
    assert_eq!(r, want);
    let r2 = cmd(
        &mut c2,
        &["STOCK.RESERVE", "s", "u", "o", "1", "NOW", &at(0)],
    )
    .unwrap();
    assert_eq!(r2, want);
    let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
    let info = cmd(&mut c3, &["STOCK.INFO", "s"]).unwrap();
    let fields: Vec<(Value, Value)> = [
        ("total", 3),
        ("available", 2),
        ("reserved", 1),
        ("sold", 0),
        ("limit", 0),
        ("lease_ms", 1000),
        ("orders", 1),
    ]
    .iter()
    .map(|(k, v)| (bulk(k), Value::Int(*v)))
    .collect();
    assert_eq!(info, Value::Map(fields));
    assert_eq!(
        cmd(&mut c3, &["STOCK.INFO", "none"]).unwrap(),
        Value::Map(vec![])
    );
    assert_eq!(
        cmd(&mut c3, &["STOCK.AUDIT", "s", "0"]).unwrap(),
        Value::Array(vec![bulk("0"), Value::Int(1)])
    );
}

/// One client's share of a batch: random RESERVE / CONFIRM / RELEASE on
/// its own orders, with the real clock and short leases. Returns what it
/// was told: units confirmed (CONFIRM replied 1) and units released.
fn client_batch(port: u16, id: usize, batch: usize, ops: usize, seed: u64) -> (i64, i64) {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
    let mut c = client.get_connection().unwrap();
    let mut rng = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(id as u64);
    let mut next = |n: u64| {
        rng = rng
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (rng >> 33) % n
    };
    let mut mine: Vec<(String, i64)> = Vec::new();
    let (mut sold, mut released) = (0, 0);
    for i in 0..ops {
        match next(10) {
            0..=4 => {
                // New buyers each batch (the ones before have reached
                // their limit), 120 of them sharing the batch's orders.
                let user = format!("u{batch}-{}", next(120));
                let order = format!("c{id}-b{batch}-{i}");
                let qty = 1 + next(3) as i64;
                let r: Vec<Value> = redis::cmd("STOCK.RESERVE")
                    .arg(&["flash", &user, &order])
                    .arg(qty)
                    .query(&mut c)
                    .unwrap();
                if r[0] == Value::BulkString(b"OK".to_vec()) {
                    mine.push((order, qty));
                }
            }
            5..=7 if !mine.is_empty() => {
                let (order, qty) = mine.swap_remove(next(mine.len() as u64) as usize);
                let r: redis::RedisResult<i64> = redis::cmd("STOCK.CONFIRM")
                    .arg(&["flash", &order])
                    .query(&mut c);
                match r {
                    Ok(1) => sold += qty,
                    Ok(n) => panic!("confirm {order}: {n}"),
                    Err(e) => assert_eq!(error_text(&e), "ERR stock: lease expired"),
                }
            }
            8 if !mine.is_empty() => {
                let (order, qty) = mine.swap_remove(next(mine.len() as u64) as usize);
                let n: i64 = redis::cmd("STOCK.RELEASE")
                    .arg(&["flash", &order])
                    .query(&mut c)
                    .unwrap();
                // 0 when its lease lapsed and a write returned it first.
                released += n * qty;
            }
            _ => thread::sleep(Duration::from_millis(next(3))),
        }
    }
    // A buyer who never pays: this reservation is left to lapse, so that
    // every batch leaves leases for the next writes to return (the ones
    // above are mostly confirmed or released before their 150 ms end).
    let _: Vec<Value> = redis::cmd("STOCK.RESERVE")
        .arg(&["flash", &format!("u{batch}-unpaid-{id}")])
        .arg(format!("c{id}-b{batch}-unpaid"))
        .arg(1)
        .query(&mut c)
        .unwrap();
    (sold, released)
}

/// Checks the law, the audit and the limit; returns the counts.
fn check_invariants(c: &mut Connection, total: i64, limit: i64, sold: i64) -> (i64, i64, i64) {
    let (t, a, r, s) = counts(c, "flash");
    assert_eq!(t, total, "total");
    assert_eq!(a + r + s, t, "available + reserved + sold = total");
    assert!(a >= 0 && r >= 0 && s >= 0);
    assert_eq!(s, sold, "sold = what clients were told was confirmed");
    assert!(s <= total, "oversold");
    assert_eq!(audit(c, "flash"), Vec::<String>::new());
    let held: HashMap<String, i64> = redis::cmd("HGETALL").arg("flash:users").query(c).unwrap();
    assert!(held.values().all(|&n| n > 0 && n <= limit), "{held:?}");
    // The ledger's sums (the audit checks them only when the whole ledger
    // fits in one step): reserved and confirmed orders hold the counts,
    // and each user's count is what their orders hold.
    let orders: HashMap<String, String> =
        redis::cmd("HGETALL").arg("flash:orders").query(c).unwrap();
    let (mut rs, mut ss) = (0, 0);
    let mut own: HashMap<String, i64> = HashMap::new();
    for rec in orders.values() {
        let f: Vec<&str> = rec.splitn(5, ':').collect();
        let qty: i64 = f[1].parse().unwrap();
        match f[0] {
            "R" => rs += qty,
            "S" => ss += qty,
            _ => continue,
        }
        *own.entry(f[4].to_string()).or_default() += qty;
    }
    assert_eq!((rs, ss), (r, s), "orders hold the counts");
    assert_eq!(own, held, "users' counts are what their orders hold");
    let live = orders.values().filter(|v| v.starts_with("R:")).count() as i64;
    assert_eq!(
        int(c, &["ZCARD", "flash:leases"]),
        live,
        "one lease per reserved order"
    );
    (a, r, s)
}

#[test]
fn fifty_clients_never_oversell_and_leak_nothing() {
    fifty_clients(3, 60);
}

#[test]
#[ignore = "long: make stock-soak"]
fn soak_fifty_clients_never_oversell_and_leak_nothing() {
    fifty_clients(40, 200);
}

fn fifty_clients(batches: usize, ops: usize) {
    let srv = Server::start();
    let mut c = srv.conn();
    let (mut total, limit) = (600, 4);
    run(
        &mut c,
        &["STOCK.CREATE", "flash", "600", "LIMIT", "4", "LEASE", "150"],
    );
    let sold = Arc::new(AtomicI64::new(0));
    for batch in 0..batches {
        let handles: Vec<_> = (0..50)
            .map(|id| {
                let port = srv.port;
                thread::spawn(move || client_batch(port, id, batch, ops, batch as u64 + 1))
            })
            .collect();
        for h in handles {
            let (s, _) = h.join().unwrap();
            sold.fetch_add(s, Ordering::Relaxed);
        }
        check_invariants(&mut c, total, limit, sold.load(Ordering::Relaxed));
        // The unpaid reservations lapse (LEASE 150): the restock below
        // returns them.
        thread::sleep(Duration::from_millis(160));
        check_invariants(&mut c, total, limit, sold.load(Ordering::Relaxed));
        // More units for the next batch's buyers (a restock while
        // reservations and lapsed leases are outstanding).
        run(&mut c, &["STOCK.RESTOCK", "flash", "200"]);
        total += 200;
    }
    // Every lease lapses; the next writes return every unit.
    thread::sleep(Duration::from_millis(200));
    for _ in 0..100 {
        let (_, _, r, _) = counts(&mut c, "flash");
        if r == 0 {
            break;
        }
        run(&mut c, &["STOCK.RESTOCK", "flash", "0"]);
    }
    let s = sold.load(Ordering::Relaxed);
    let (a, r, _) = check_invariants(&mut c, total, limit, s);
    assert_eq!((a, r), (total - s, 0), "leaked units");
    assert!(s > 0, "nothing was sold");
    // The run exercised every path: leases lapsed and were returned by
    // later writes, and clients released orders.
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    for name in ["hotpath_stock_expired:", "hotpath_stock_released:"] {
        let n: i64 = info
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        assert!(n > 0, "{name} {n}");
    }
    assert_eq!(int(&mut c, &["EXISTS", "flash:leases"]), 0);
    // What users hold is exactly what they bought.
    let held: HashMap<String, i64> = redis::cmd("HGETALL")
        .arg("flash:users")
        .query(&mut c)
        .unwrap();
    assert_eq!(held.values().sum::<i64>(), s);
}

/// An acknowledged operation: the order, its user, `R` (reserved) or `S`
/// (confirmed).
type Acked = (String, String, &'static str);

#[test]
fn kill_9_under_appendfsync_always_loses_no_acknowledged_operation() {
    let mut srv = start_aof();
    let mut c = srv.conn();
    run(
        &mut c,
        &[
            "STOCK.CREATE",
            "k",
            "100000",
            "LIMIT",
            "3",
            "LEASE",
            "600000",
        ],
    );
    let acked: Arc<Mutex<Vec<Acked>>> = Arc::default();
    let port = srv.port;
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let acked = acked.clone();
            thread::spawn(move || {
                let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
                let Ok(mut c) = client.get_connection() else {
                    return;
                };
                for i in 0.. {
                    let order = format!("w{w}-{i}");
                    let user = format!("u{w}-{}", i / 2);
                    let r: redis::RedisResult<Vec<Value>> = redis::cmd("STOCK.RESERVE")
                        .arg(&["k", &user, &order, "1"])
                        .query(&mut c);
                    let Ok(r) = r else { return };
                    assert_eq!(r[0], Value::BulkString(b"OK".to_vec()));
                    acked.lock().unwrap().push((order.clone(), user, "R"));
                    if i % 3 == 0 {
                        let r: redis::RedisResult<i64> = redis::cmd("STOCK.CONFIRM")
                            .arg(&["k", &order])
                            .query(&mut c);
                        let Ok(1) = r else { return };
                        acked.lock().unwrap().push((order, String::new(), "S"));
                    }
                }
            })
        })
        .collect();
    let deadline = Instant::now() + Duration::from_secs(10);
    while acked.lock().unwrap().len() < 400 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    srv.restart(&[]); // SIGKILL mid-flight, then replay the AOF
    for w in writers {
        w.join().unwrap();
    }
    let acked = acked.lock().unwrap();
    assert!(acked.len() >= 400, "only {} acknowledged", acked.len());
    let mut c = srv.conn();
    for (order, _, state) in acked.iter() {
        let rec = run(&mut c, &["HGET", "k:orders", order]);
        match *state {
            "S" => assert!(rec.starts_with("S:"), "{order}: {rec}"),
            _ => assert!(
                rec.starts_with("R:") || rec.starts_with("S:"),
                "{order}: {rec}"
            ),
        }
    }
    let (t, a, r, s) = counts(&mut c, "k");
    assert_eq!(a + r + s, t);
    assert_eq!(audit(&mut c, "k"), Vec::<String>::new());
    // A retried reservation after the restart gets its first reply.
    let (order, user, _) = &acked[0];
    let again = run(&mut c, &["STOCK.RESERVE", "k", user, order, "1"]);
    assert!(again.starts_with("[OK, "), "{again}");
}

#[test]
fn a_failover_after_wait_keeps_every_unit() {
    let pair = Pair::start();
    let mut m = pair.master.conn();
    run(&mut m, &["STOCK.CREATE", "f{x}", "10", "LEASE", "600000"]);
    let first = run(&mut m, &["STOCK.RESERVE", "f{x}", "u1", "o1", "3"]);
    run(&mut m, &["STOCK.RESERVE", "f{x}", "u2", "o2", "2"]);
    assert_eq!(run(&mut m, &["STOCK.CONFIRM", "f{x}", "o2"]), "1");
    let n: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut m).unwrap();
    assert_eq!(n, 1);
    let before = dump_keys(&mut m, "*");
    let Pair {
        mut master,
        replica,
    } = pair;
    master.stop();
    let mut r = replica.conn();
    assert_eq!(run(&mut r, &["REPLICAOF", "NO", "ONE"]), "OK");
    assert_eq!(dump_keys(&mut r, "*"), before);
    // The same order on the new master: the same reply, no second unit.
    assert_eq!(
        run(&mut r, &["STOCK.RESERVE", "f{x}", "u1", "o1", "3"]),
        first
    );
    assert_eq!(run(&mut r, &["STOCK.CONFIRM", "f{x}", "o1"]), "1");
    assert_eq!(counts(&mut r, "f{x}"), (10, 5, 0, 5));
}

fn workload(c: &mut Connection) {
    for args in [
        vec![
            "STOCK.CREATE",
            "w",
            "10",
            "LIMIT",
            "3",
            "LEASE",
            "60000",
            "TTL",
            "5000",
        ],
        vec!["STOCK.CREATE", "v", "4", "LEASE", "1"],
        vec!["STOCK.RESERVE", "w", "u1", "o1", "2"],
        vec!["STOCK.RESERVE", "w", "u1", "o2", "1"],
        vec!["STOCK.RESERVE", "w", "u2", "o3", "1"],
        vec!["STOCK.CONFIRM", "w", "o1"],
        vec!["STOCK.RELEASE", "w", "o3"],
        vec!["STOCK.RESTOCK", "w", "5"],
        vec!["STOCK.RESERVE", "v", "u1", "o1", "3"],
        vec!["STOCK.RESERVE", "v", "u2", "o2", "1"],
        vec!["STOCK.RESTOCK", "v", "0"],
        vec!["STOCK.RESERVE", "v", "u3", "o3", "4"],
    ] {
        cmd(c, &args).unwrap();
    }
}

fn expiry_times(c: &mut Connection) -> Vec<(String, i64)> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let t: i64 = redis::cmd("PEXPIRETIME").arg(&k).query(c).unwrap();
            (k, t)
        })
        .collect()
}

#[test]
fn replica_aof_and_rdb_end_byte_identical_with_one_expiry_instant() {
    let pair = Pair::start();
    let mut aof = start_aof();
    let mut m = pair.master.conn();
    let mut a = aof.conn();
    workload(&mut m);
    workload(&mut a);
    // Every key of `w` expires at the one instant CREATE set.
    let times = expiry_times(&mut m);
    let w: Vec<i64> = times
        .iter()
        .filter(|(k, _)| k == "w" || k.starts_with("w:"))
        .map(|(_, t)| *t)
        .collect();
    assert_eq!(w.len(), 4, "{times:?}");
    assert!(w.iter().all(|t| *t > 0 && *t == w[0]), "{times:?}");
    pair.assert_equal();
    let mut r = pair.replica.conn();
    assert_eq!(expiry_times(&mut r), times);
    let before = expiry_times(&mut a);
    assert_aof_restart_equal(&mut aof);
    let mut a = aof.conn();
    assert_eq!(before, expiry_times(&mut a));
    assert_rdb_reload_equal(&aof);
    assert_rdb_reload_equal(&pair.master);
}

/// A lapsed lease returned and a new reservation of the same quantity in
/// one RESERVE leave the counts as they were, yet the ledger changed: the
/// call is a write all the same. It was neither replicated (the replica
/// kept the old ledger) nor given the stock's expiry on `B:leases`, which
/// the ZREM emptied and the ZADD made again (found by the twins' parity
/// test).
#[test]
fn a_lapse_taken_over_at_once_is_replicated_and_keeps_the_expiry() {
    let pair = Pair::start();
    let mut m = pair.master.conn();
    run(
        &mut m,
        &["STOCK.CREATE", "x", "5", "LEASE", "100", "TTL", "3600"],
    );
    now(&mut m, &["STOCK.RESERVE", "x", "alice", "o1", "1"], 0);
    let before = counts(&mut m, "x");
    assert_eq!(
        now(&mut m, &["STOCK.RESERVE", "x", "bob", "o2", "1"], 1000),
        format!("[OK, 4, {}]", at(1100))
    );
    // The counts are unchanged: o1's unit went back and o2 took one.
    assert_eq!(counts(&mut m, "x"), before);
    let expires = int(&mut m, &["PEXPIRETIME", "x"]);
    assert!(expires > 0);
    for k in ["x:orders", "x:users", "x:leases"] {
        assert_eq!(int(&mut m, &["PEXPIRETIME", k]), expires, "{k}");
    }
    pair.assert_equal();
    let mut r = pair.replica.conn();
    assert_eq!(run(&mut r, &["ZRANGE", "x:leases", "0", "-1"]), "[o2]");
}

#[test]
fn stall_no_command_blocks_the_server_over_a_millisecond() {
    let slow = persistent_stalls(stall_run);
    assert!(
        slow.is_empty(),
        "STOCK commands over 1 ms in every run: {slow:?}"
    );
}

/// Writes that each return 100 lapsed leases, and an audit walk in steps
/// of the largest COUNT over 3,000 orders.
fn stall_run() -> Vec<String> {
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["STOCK.CREATE", "big", "100000", "LEASE", "10"]);
    let mut pipe = redis::pipe();
    for i in 0..3000 {
        pipe.cmd("STOCK.RESERVE")
            .arg(&["big", &format!("user{i}"), &format!("order{i}"), "1"])
            .arg("NOW")
            .arg(T0);
    }
    pipe.query::<()>(&mut c).unwrap();
    run(
        &mut c,
        &["CONFIG", "SET", "slowlog-log-slower-than", "1000"],
    );
    run(&mut c, &["SLOWLOG", "RESET"]);
    assert_eq!(now(&mut c, &["STOCK.RESTOCK", "big", "0"], 100), "97100");
    assert!(now(&mut c, &["STOCK.RESERVE", "big", "x", "y", "1"], 100).starts_with("[OK, 97199"));
    assert_eq!(now(&mut c, &["STOCK.CONFIRM", "big", "y"], 101), "1");
    assert_eq!(now(&mut c, &["STOCK.RESTOCK", "big", "-5"], 101), "97394");
    assert_eq!(audit(&mut c, "big"), Vec::<String>::new());
    run(&mut c, &["STOCK.INFO", "big"]);
    slow_commands(&mut c, "stock.")
}
