//! REDPACKET on a real server: every command and option, every error with
//! nothing written, one share per user under 50 concurrent clients,
//! expiry, and replication / AOF / RDB of every write command.

use crate::common;

use std::sync::{Arc, Barrier};

use common::*;

fn ints(c: &mut Connection, args: &[&str]) -> Vec<i64> {
    let v: Vec<String> = redis::cmd(args[0]).arg(&args[1..]).query(c).unwrap();
    v.iter().map(|s| s.parse().unwrap()).collect()
}

fn pool(c: &mut Connection, b: &str) -> Vec<i64> {
    ints(c, &["LRANGE", &format!("{b}:pool"), "0", "-1"])
}

fn grabbed(c: &mut Connection, b: &str) -> Vec<(String, i64)> {
    redis::cmd("HGETALL")
        .arg(format!("{b}:grabbed"))
        .query(c)
        .unwrap()
}

fn meta(c: &mut Connection, b: &str) -> Vec<(String, String)> {
    let mut m: Vec<(String, String)> = redis::cmd("HGETALL")
        .arg(format!("{b}:meta"))
        .query(c)
        .unwrap();
    m.sort();
    m
}

/// Returns `[status, cents]` of a GRAB as ("OK", 123).
fn grab(c: &mut Connection, args: &[&str]) -> (String, i64) {
    let mut full = vec!["REDPACKET.GRAB"];
    full.extend_from_slice(args);
    redis::cmd(full[0]).arg(&full[1..]).query(c).unwrap()
}

/// Asserts the money invariant: grabbed + pool = total.
fn assert_conserved(c: &mut Connection, b: &str, total: i64) {
    let g: i64 = grabbed(c, b).iter().map(|(_, v)| v).sum();
    let p: i64 = pool(c, b).iter().sum();
    assert_eq!(g + p, total, "grabbed {g} + pool {p} != {total}");
}

#[test]
fn split_random_fills_the_pool_and_meta() {
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(int(&mut c, &["REDPACKET.SPLIT", "p", "10000", "10"]), 10);
    let shares = pool(&mut c, "p");
    assert_eq!(shares.len(), 10);
    assert_eq!(shares.iter().sum::<i64>(), 10000);
    assert!(shares.iter().all(|&x| x >= 1));
    let m = meta(&mut c, "p");
    assert_eq!(
        m,
        vec![
            ("count".into(), "10".into()),
            ("expires".into(), "0".into()),
            ("left_cents".into(), "10000".into()),
            ("state".into(), "open".into()),
            ("total".into(), "10000".into())
        ]
    );
    assert_eq!(int(&mut c, &["PTTL", "p:pool"]), -1);
    // The smallest possible packet: one cent per share.
    assert_eq!(
        int(
            &mut c,
            &["REDPACKET.SPLIT", "tiny", "5", "5", "MODE", "random"]
        ),
        5
    );
    assert_eq!(pool(&mut c, "tiny"), vec![1, 1, 1, 1, 1]);
    assert_eq!(int(&mut c, &["REDPACKET.SPLIT", "one", "777", "1"]), 1);
    assert_eq!(pool(&mut c, "one"), vec![777]);
}

#[test]
fn split_random_differs_between_packets() {
    let s = Server::start();
    let mut c = s.conn();
    let mut seen = std::collections::HashSet::new();
    for i in 0..20 {
        let b = format!("p{i}");
        int(&mut c, &["REDPACKET.SPLIT", &b, "100000", "10"]);
        seen.insert(pool(&mut c, &b));
    }
    assert!(
        seen.len() >= 19,
        "splits repeat: {} distinct of 20",
        seen.len()
    );
}

#[test]
fn split_equal_spreads_the_remainder_one_cent_at_a_time() {
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(
        int(
            &mut c,
            &["REDPACKET.SPLIT", "e", "10", "3", "MODE", "EQUAL"]
        ),
        3
    );
    assert_eq!(pool(&mut c, "e"), vec![4, 3, 3]);
    int(
        &mut c,
        &["REDPACKET.SPLIT", "f", "10003", "10", "mode", "equal"],
    );
    assert_eq!(
        pool(&mut c, "f"),
        vec![1001, 1001, 1001, 1000, 1000, 1000, 1000, 1000, 1000, 1000]
    );
}

#[test]
fn split_with_ttl_expires_every_key_together() {
    let s = Server::start();
    let mut c = s.conn();
    let now = now_ms();
    let expires = now + 600_000;
    int(
        &mut c,
        &[
            "REDPACKET.SPLIT",
            "p",
            "1000",
            "4",
            "TTL",
            "600",
            "NOW",
            &now.to_string(),
        ],
    );
    assert!(meta(&mut c, "p").contains(&("expires".into(), expires.to_string())));
    assert_eq!(int(&mut c, &["PEXPIRETIME", "p:pool"]), expires);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "p:meta"]), expires);
    // B:grabbed is created by the first grab and gets the same expiry.
    assert_eq!(grab(&mut c, &["p", "u1"]).0, "OK");
    assert_eq!(int(&mut c, &["PEXPIRETIME", "p:grabbed"]), expires);
    assert_eq!(grab(&mut c, &["p", "u2"]).0, "OK");
    assert_eq!(int(&mut c, &["PEXPIRETIME", "p:grabbed"]), expires);
    // REFUND keeps the expiry of the meta.
    int(&mut c, &["REDPACKET.REFUND", "p"]);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "p:meta"]), expires);
}

#[test]
fn expired_packets_are_closed_then_gone() {
    let s = Server::start();
    let mut c = s.conn();
    let now = now_ms();
    let t = now.to_string();
    int(
        &mut c,
        &["REDPACKET.SPLIT", "p", "1000", "4", "TTL", "60", "NOW", &t],
    );
    let last_ms = (now + 59_999).to_string();
    let end = (now + 60_000).to_string();
    assert_eq!(grab(&mut c, &["p", "u1", "NOW", &last_ms]).0, "OK");
    assert_eq!(
        grab(&mut c, &["p", "u2", "NOW", &end]),
        ("CLOSED".into(), 0)
    );
    assert_eq!(grab(&mut c, &["p", "u1", "NOW", &end]).0, "ALREADY");
    let info = run(&mut c, &["REDPACKET.INFO", "p", "NOW", &end]);
    assert!(info.contains("state, closed"), "{info}");
    let info = run(&mut c, &["REDPACKET.INFO", "p", "NOW", &t]);
    assert!(info.contains("state, open"), "{info}");
    assert_conserved(&mut c, "p", 1000);

    // A real TTL: after it, the keys are gone and the packet is unknown.
    int(&mut c, &["REDPACKET.SPLIT", "q", "100", "2", "TTL", "1"]);
    assert_eq!(grab(&mut c, &["q", "u1"]).0, "OK");
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(grab(&mut c, &["q", "u2"]), ("NOSUCH".into(), 0));
    assert!(dump_keys(&mut c, "q*").is_empty());
}

#[test]
fn grab_gives_one_share_per_user_then_empty() {
    let s = Server::start();
    let mut c = s.conn();
    int(&mut c, &["REDPACKET.SPLIT", "p", "1000", "3"]);
    let shares = pool(&mut c, "p");
    let (st, a) = grab(&mut c, &["p", "alice"]);
    assert_eq!((st.as_str(), a), ("OK", shares[0]));
    assert_eq!(grab(&mut c, &["p", "alice"]), ("ALREADY".into(), a));
    assert_eq!(grab(&mut c, &["p", "bob"]), ("OK".into(), shares[1]));
    assert_eq!(grab(&mut c, &["p", "carol"]), ("OK".into(), shares[2]));
    assert_eq!(grab(&mut c, &["p", "dave"]), ("EMPTY".into(), 0));
    assert_eq!(grab(&mut c, &["p", "bob"]), ("ALREADY".into(), shares[1]));
    assert_eq!(int(&mut c, &["EXISTS", "p:pool"]), 0);
    assert_eq!(grab(&mut c, &["nope", "alice"]), ("NOSUCH".into(), 0));
    assert!(dump_keys(&mut c, "nope*").is_empty());
    assert_conserved(&mut c, "p", 1000);
    let g = run(&mut c, &["REDPACKET.GRABBED", "p"]);
    assert_eq!(
        g,
        format!(
            "[alice, {}, bob, {}, carol, {}]",
            shares[0], shares[1], shares[2]
        )
    );
    assert_eq!(run(&mut c, &["REDPACKET.GRABBED", "nope"]), "[]");
}

#[test]
fn info_reports_what_is_left() {
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(run(&mut c, &["REDPACKET.INFO", "p"]), "[]");
    int(
        &mut c,
        &["REDPACKET.SPLIT", "p", "1000", "4", "MODE", "EQUAL"],
    );
    assert_eq!(
        run(&mut c, &["REDPACKET.INFO", "p"]),
        "[total, 1000, count, 4, left_cents, 1000, left_count, 4, state, open, expires, 0]"
    );
    grab(&mut c, &["p", "u"]);
    assert_eq!(
        run(&mut c, &["REDPACKET.INFO", "p"]),
        "[total, 1000, count, 4, left_cents, 750, left_count, 3, state, open, expires, 0]"
    );
    assert_eq!(int(&mut c, &["REDPACKET.REFUND", "p"]), 750);
    assert_eq!(
        run(&mut c, &["REDPACKET.INFO", "p"]),
        "[total, 1000, count, 4, left_cents, 0, left_count, 0, state, closed, expires, 0]"
    );
}

#[test]
fn refund_returns_exactly_what_is_left_and_closes() {
    let s = Server::start();
    let mut c = s.conn();
    int(&mut c, &["REDPACKET.SPLIT", "p", "10000", "10"]);
    let mut won = 0;
    for u in ["a", "b", "c"] {
        won += grab(&mut c, &["p", u]).1;
    }
    assert_eq!(int(&mut c, &["REDPACKET.REFUND", "p"]), 10000 - won);
    assert_eq!(int(&mut c, &["EXISTS", "p:pool"]), 0);
    assert!(meta(&mut c, "p").contains(&("state".into(), "closed".into())));
    assert_eq!(int(&mut c, &["REDPACKET.REFUND", "p"]), 0);
    assert_eq!(grab(&mut c, &["p", "d"]), ("CLOSED".into(), 0));
    assert_eq!(grab(&mut c, &["p", "a"]).0, "ALREADY");
    // Grabbed shares stay where they are.
    assert_eq!(
        grabbed(&mut c, "p").iter().map(|(_, v)| v).sum::<i64>(),
        won
    );
    // Unknown packet: 0, nothing created.
    assert_eq!(int(&mut c, &["REDPACKET.REFUND", "nope"]), 0);
    assert!(dump_keys(&mut c, "nope*").is_empty());
    // A fully grabbed packet refunds 0 and is closed.
    int(&mut c, &["REDPACKET.SPLIT", "q", "2", "2"]);
    grab(&mut c, &["q", "a"]);
    grab(&mut c, &["q", "b"]);
    assert_eq!(int(&mut c, &["REDPACKET.REFUND", "q"]), 0);
    assert_eq!(grab(&mut c, &["q", "c"]), ("CLOSED".into(), 0));
}

#[test]
fn bad_input_is_refused_with_nothing_written() {
    let s = Server::start();
    let mut c = s.conn();
    let arity = |n: &str| format!("ERR wrong number of arguments for 'redpacket.{n}' command");
    let notint = "ERR value is not an integer or out of range".to_string();
    let syntax = "ERR syntax error".to_string();
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["REDPACKET.SPLIT", "p", "100"], arity("split")),
        (vec!["REDPACKET.SPLIT"], arity("split")),
        (vec!["REDPACKET.SPLIT", "p", "x", "10"], notint.clone()),
        (vec!["REDPACKET.SPLIT", "p", "1.5", "10"], notint.clone()),
        (vec!["REDPACKET.SPLIT", "p", "100", "ten"], notint.clone()),
        (
            vec!["REDPACKET.SPLIT", "p", "100", "99999999999999999999"],
            notint.clone(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "9", "10"],
            "ERR redpacket: total must be at least count cents".into(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "0", "1"],
            "ERR redpacket: total must be at least count cents".into(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "-100", "1"],
            "ERR redpacket: total must be at least count cents".into(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "100", "0"],
            "ERR redpacket: count must be from 1 to 10000".into(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "100", "-2"],
            "ERR redpacket: count must be from 1 to 10000".into(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "1000000", "10001"],
            "ERR redpacket: count must be from 1 to 10000".into(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "100", "2", "MODE"],
            syntax.clone(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "100", "2", "MODE", "FAIR"],
            syntax.clone(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "100", "2", "TTL"],
            syntax.clone(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "100", "2", "TTL", "0"],
            notint.clone(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "100", "2", "TTL", "-5"],
            notint.clone(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "100", "2", "TTL", "1x"],
            notint.clone(),
        ),
        (
            vec![
                "REDPACKET.SPLIT",
                "p",
                "100",
                "2",
                "TTL",
                "9223372036854775",
            ],
            notint.clone(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "100", "2", "TTL", "3153600001"],
            notint.clone(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "9007199254740992", "2"],
            notint.clone(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "100", "2", "NOW", "-1"],
            notint.clone(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "100", "2", "NOW", "253402300800000"],
            notint.clone(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "100", "2", "NOW"],
            syntax.clone(),
        ),
        (
            vec!["REDPACKET.SPLIT", "p", "100", "2", "LATER"],
            syntax.clone(),
        ),
        (vec!["REDPACKET.GRAB", "p"], arity("grab")),
        (vec!["REDPACKET.GRAB", "p", "u", "NOW"], syntax.clone()),
        (
            vec!["REDPACKET.GRAB", "p", "u", "NOW", "soon"],
            notint.clone(),
        ),
        (vec!["REDPACKET.GRAB", "p", "u", "AGAIN"], syntax.clone()),
        (vec!["REDPACKET.INFO"], arity("info")),
        (vec!["REDPACKET.INFO", "p", "NOW", "x"], notint.clone()),
        (vec!["REDPACKET.INFO", "p", "x"], syntax.clone()),
        (vec!["REDPACKET.GRABBED"], arity("grabbed")),
        (vec!["REDPACKET.GRABBED", "p", "x"], arity("grabbed")),
        (vec!["REDPACKET.REFUND"], arity("refund")),
        (vec!["REDPACKET.REFUND", "p", "x"], arity("refund")),
    ];
    for (args, want) in &cases {
        assert_eq!(&err(&mut c, args), want, "{args:?}");
    }
    assert!(dump_keys(&mut c, "*").is_empty(), "something was written");

    // An existing packet is refused and left as it was.
    int(&mut c, &["REDPACKET.SPLIT", "p", "100", "2"]);
    grab(&mut c, &["p", "u"]);
    let before = dump_keys(&mut c, "*");
    assert_eq!(
        err(&mut c, &["REDPACKET.SPLIT", "p", "500", "5"]),
        "ERR redpacket: packet already exists"
    );
    assert_eq!(
        err(
            &mut c,
            &[
                "REDPACKET.SPLIT",
                "p",
                "500",
                "5",
                "MODE",
                "EQUAL",
                "TTL",
                "9"
            ]
        ),
        "ERR redpacket: packet already exists"
    );
    // Also when only a leftover B:grabbed remains.
    int(&mut c, &["HSET", "q:grabbed", "u", "5"]);
    assert_eq!(
        err(&mut c, &["REDPACKET.SPLIT", "q", "500", "5"]),
        "ERR redpacket: packet already exists"
    );
    int(&mut c, &["DEL", "q:grabbed"]);
    assert_eq!(dump_keys(&mut c, "*"), before);
}

#[test]
fn max_count_follows_the_config() {
    let s = Server::start_full(&[], &["redpacket-max-count", "3"]);
    let mut c = s.conn();
    assert_eq!(
        err(&mut c, &["REDPACKET.SPLIT", "p", "100", "4"]),
        "ERR redpacket: count must be from 1 to 3"
    );
    assert_eq!(int(&mut c, &["REDPACKET.SPLIT", "p", "100", "3"]), 3);
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("hotpath.redpacket-max-count")
        .arg("20000")
        .query(&mut c)
        .unwrap();
    assert_eq!(
        int(&mut c, &["REDPACKET.SPLIT", "big", "20000", "20000"]),
        20000
    );
    assert_eq!(pool(&mut c, "big").len(), 20000);
    assert_eq!(
        err(&mut c, &["REDPACKET.SPLIT", "q", "30000", "20001"]),
        "ERR redpacket: count must be from 1 to 20000"
    );
}

#[test]
fn wrong_types_are_refused_with_nothing_written() {
    let s = Server::start();
    let mut c = s.conn();
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    for suffix in ["meta", "pool", "grabbed"] {
        let b = format!("w{suffix}");
        let key = format!("{b}:{suffix}");
        // A key of the wrong type: a String (and for the List, a Hash).
        int(&mut c, &["DEL", &key]);
        let _: () = redis::cmd("SET").arg(&key).arg("x").query(&mut c).unwrap();
        let before = dump_keys(&mut c, "*");
        for args in [
            vec!["REDPACKET.SPLIT", &b, "100", "2"],
            vec!["REDPACKET.GRAB", &b, "u"],
            vec!["REDPACKET.INFO", &b],
            vec!["REDPACKET.GRABBED", &b],
            vec!["REDPACKET.REFUND", &b],
        ] {
            assert_eq!(err(&mut c, &args), wrongtype, "{args:?}");
        }
        assert_eq!(dump_keys(&mut c, "*"), before);
    }
    // A live packet whose pool was replaced by another type.
    int(&mut c, &["REDPACKET.SPLIT", "p", "100", "2"]);
    int(&mut c, &["DEL", "p:pool"]);
    int(&mut c, &["HSET", "p:pool", "a", "1"]);
    let before = dump_keys(&mut c, "p*");
    assert_eq!(err(&mut c, &["REDPACKET.GRAB", "p", "u"]), wrongtype);
    assert_eq!(err(&mut c, &["REDPACKET.REFUND", "p"]), wrongtype);
    assert_eq!(dump_keys(&mut c, "p*"), before);
}

/// Hand-edited data: every stored value a command reads is checked, and a
/// value the module never writes is a clear error naming the key and the
/// field, with nothing written (the whole dataset is compared).
#[test]
fn corrupt_data_is_named_and_nothing_is_written() {
    let s = Server::start();
    let mut c = s.conn();
    let fresh = |c: &mut Connection| {
        let _: () = redis::cmd("FLUSHALL").query(c).unwrap();
        int(c, &["REDPACKET.SPLIT", "p", "100", "3", "MODE", "EQUAL"]);
        assert_eq!(grab(c, &["p", "u0"]), ("OK".into(), 34));
    };
    let meta_err = |f: &str| format!("ERR redpacket: corrupt data in 'p:meta' field '{f}'");
    // (hand edit, command, error)
    let cases: Vec<(Vec<&str>, Vec<&str>, String)> = vec![
        (
            vec!["HSET", "p:meta", "total", "x"],
            vec!["REDPACKET.INFO", "p"],
            meta_err("total"),
        ),
        (
            vec!["HSET", "p:meta", "total", "-5"],
            vec!["REDPACKET.INFO", "p"],
            meta_err("total"),
        ),
        (
            vec!["HSET", "p:meta", "count", "zero"],
            vec!["REDPACKET.INFO", "p"],
            meta_err("count"),
        ),
        (
            vec!["HSET", "p:meta", "expires", "soon"],
            vec!["REDPACKET.INFO", "p"],
            meta_err("expires"),
        ),
        (
            vec!["HSET", "p:meta", "expires", "soon"],
            vec!["REDPACKET.GRAB", "p", "u1"],
            meta_err("expires"),
        ),
        (
            vec!["HSET", "p:meta", "state", "half"],
            vec!["REDPACKET.INFO", "p"],
            meta_err("state"),
        ),
        (
            vec!["HSET", "p:meta", "state", "half"],
            vec!["REDPACKET.REFUND", "p"],
            meta_err("state"),
        ),
        (
            vec!["HDEL", "p:meta", "left_cents"],
            vec!["REDPACKET.GRAB", "p", "u1"],
            meta_err("left_cents"),
        ),
        (
            vec!["HSET", "p:meta", "left_cents", "-1"],
            vec!["REDPACKET.REFUND", "p"],
            meta_err("left_cents"),
        ),
        (
            vec!["HSET", "p:meta", "left_cents", "101"],
            vec!["REDPACKET.INFO", "p"],
            meta_err("left_cents"),
        ),
        // REFUND checks every field of the meta, as INFO does.
        (
            vec!["HSET", "p:meta", "total", "x"],
            vec!["REDPACKET.REFUND", "p"],
            meta_err("total"),
        ),
        (
            vec!["HSET", "p:meta", "count", "x"],
            vec!["REDPACKET.REFUND", "p"],
            meta_err("count"),
        ),
        (
            vec!["HSET", "p:meta", "expires", "x"],
            vec!["REDPACKET.REFUND", "p"],
            meta_err("expires"),
        ),
        (
            vec!["HSET", "p:meta", "left_cents", "101"],
            vec!["REDPACKET.REFUND", "p"],
            meta_err("left_cents"),
        ),
        // The running total says less is left than the next share.
        (
            vec!["HSET", "p:meta", "left_cents", "5"],
            vec!["REDPACKET.GRAB", "p", "u1"],
            meta_err("left_cents"),
        ),
        // Shares of -5, 0 or garbage are never paid out.
        (
            vec!["LSET", "p:pool", "0", "-5"],
            vec!["REDPACKET.GRAB", "p", "u1"],
            "ERR redpacket: corrupt data in 'p:pool'".into(),
        ),
        (
            vec!["LSET", "p:pool", "0", "0"],
            vec!["REDPACKET.GRAB", "p", "u1"],
            "ERR redpacket: corrupt data in 'p:pool'".into(),
        ),
        (
            vec!["LSET", "p:pool", "0", "abc"],
            vec!["REDPACKET.GRAB", "p", "u1"],
            "ERR redpacket: corrupt data in 'p:pool'".into(),
        ),
        (
            vec!["HSET", "p:grabbed", "u0", "lots"],
            vec!["REDPACKET.GRAB", "p", "u0"],
            "ERR redpacket: corrupt data in 'p:grabbed' field 'u0'".into(),
        ),
    ];
    for (edit, command, want) in &cases {
        fresh(&mut c);
        cmd(&mut c, edit).unwrap();
        let before = dump_keys(&mut c, "*");
        let digest = s.digest();
        assert_eq!(err(&mut c, command), *want, "{edit:?} then {command:?}");
        assert_eq!(
            dump_keys(&mut c, "*"),
            before,
            "{edit:?} then {command:?} wrote"
        );
        assert_eq!(s.digest(), digest, "{edit:?} then {command:?} wrote");
    }
    // A bad last share goes back with the pool's expiry.
    let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
    int(&mut c, &["REDPACKET.SPLIT", "p", "2", "1", "TTL", "600"]);
    run(&mut c, &["LSET", "p:pool", "0", "-5"]);
    let at = int(&mut c, &["PEXPIRETIME", "p:pool"]);
    assert_eq!(
        err(&mut c, &["REDPACKET.GRAB", "p", "u1"]),
        "ERR redpacket: corrupt data in 'p:pool'"
    );
    assert_eq!(pool(&mut c, "p"), vec![-5]);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "p:pool"]), at);
    // GRAB pops the head share before checking it; a refused share goes
    // back without signalling the pool as modified: a WATCH on the
    // packet's keys holds, for the last share (the pop deletes the pool,
    // the share makes it again) as for one of several.
    for count in ["1", "3"] {
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        int(
            &mut c,
            &["REDPACKET.SPLIT", "w", "100", count, "TTL", "600"],
        );
        run(&mut c, &["LSET", "w:pool", "0", "-5"]);
        let before = dump_keys(&mut c, "*");
        run(&mut c, &["WATCH", "w:pool", "w:meta", "w:grabbed"]);
        assert_eq!(
            err(&mut c, &["REDPACKET.GRAB", "w", "u1"]),
            "ERR redpacket: corrupt data in 'w:pool'"
        );
        run(&mut c, &["MULTI"]);
        run(&mut c, &["PING"]);
        let exec: Value = redis::cmd("EXEC").query(&mut c).unwrap();
        assert!(
            !matches!(exec, Value::Nil),
            "a refused grab ({count} shares) signalled a watched key"
        );
        assert_eq!(dump_keys(&mut c, "*"), before, "{count} shares");
    }
    // Empty user ids are refused before any key is read.
    assert_eq!(
        err(&mut c, &["REDPACKET.GRAB", "p", ""]),
        "ERR redpacket: user must not be empty"
    );
}

#[test]
fn fifty_clients_grabbing_at_once_conserve_money() {
    let s = Server::start();
    let port = s.port;
    for round in 0..5 {
        let b = format!("p{round}");
        let total = 100_000;
        let shares = 30;
        let mut c = s.conn();
        int(
            &mut c,
            &[
                "REDPACKET.SPLIT",
                &b,
                &total.to_string(),
                &shares.to_string(),
            ],
        );
        let barrier = Arc::new(Barrier::new(50));
        let handles: Vec<_> = (0..50)
            .map(|t| {
                let barrier = barrier.clone();
                let b = b.clone();
                std::thread::spawn(move || {
                    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
                    let mut c = client.get_connection().unwrap();
                    // Two clients share every user id: they race on it.
                    let user = format!("user{}", t % 25);
                    barrier.wait();
                    let mut out = Vec::new();
                    for _ in 0..3 {
                        out.push((user.clone(), grab(&mut c, &[&b, &user])));
                    }
                    out
                })
            })
            .collect();
        let results: Vec<(String, (String, i64))> = handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect();
        assert_conserved(&mut c, &b, total);
        let held: std::collections::HashMap<String, i64> =
            grabbed(&mut c, &b).into_iter().collect();
        // 25 users, 30 shares: every user won exactly one share.
        assert_eq!(held.len(), 25);
        let won: Vec<_> = results.iter().filter(|(_, (st, _))| st == "OK").collect();
        assert_eq!(won.len(), 25, "one OK per user");
        for (user, (st, cents)) in &results {
            assert!(st == "OK" || st == "ALREADY", "{st}");
            assert_eq!(*cents, held[user], "{user} saw another share");
        }
        assert_eq!(pool(&mut c, &b).len(), 5);
    }
    // More users than shares: exactly `shares` winners, the rest EMPTY.
    let mut c = s.conn();
    int(&mut c, &["REDPACKET.SPLIT", "few", "1000", "10"]);
    let barrier = Arc::new(Barrier::new(50));
    let handles: Vec<_> = (0..50)
        .map(|t| {
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
                let mut c = client.get_connection().unwrap();
                barrier.wait();
                grab(&mut c, &["few", &format!("u{t}")]).0
            })
        })
        .collect();
    let statuses: Vec<String> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(statuses.iter().filter(|s| *s == "OK").count(), 10);
    assert_eq!(statuses.iter().filter(|s| *s == "EMPTY").count(), 40);
    assert_conserved(&mut c, "few", 1000);
}

#[test]
fn counters_and_notifications() {
    let s = Server::start();
    let mut c = s.conn();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("notify-keyspace-events")
        .arg("KEA")
        .query(&mut c)
        .unwrap();
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/", s.port)).unwrap();
    let mut sub = client.get_connection().unwrap();
    let mut pubsub = sub.as_pubsub();
    pubsub
        .psubscribe("__keyevent@0__:hotpath.redpacket.*")
        .unwrap();
    pubsub
        .set_read_timeout(Some(std::time::Duration::from_secs(2)))
        .unwrap();
    int(&mut c, &["REDPACKET.SPLIT", "p", "100", "2"]);
    grab(&mut c, &["p", "a"]);
    grab(&mut c, &["p", "a"]);
    grab(&mut c, &["p", "b"]);
    grab(&mut c, &["p", "c"]);
    int(&mut c, &["REDPACKET.REFUND", "p"]);
    grab(&mut c, &["p", "d"]);
    let mut events = Vec::new();
    for _ in 0..4 {
        let m = pubsub.get_message().unwrap();
        let payload: String = m.get_payload().unwrap();
        events.push(format!("{} {payload}", m.get_channel_name()));
    }
    assert_eq!(
        events,
        vec![
            "__keyevent@0__:hotpath.redpacket.split p",
            "__keyevent@0__:hotpath.redpacket.grab p",
            "__keyevent@0__:hotpath.redpacket.grab p",
            "__keyevent@0__:hotpath.redpacket.refund p",
        ]
    );
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    for line in [
        "redpacket_splits:1",
        "redpacket_grabbed:2",
        "redpacket_already:1",
        "redpacket_empty:1",
        "redpacket_closed:1",
        "redpacket_refunds:1",
        "redpacket_refunded_cents:0",
    ] {
        assert!(info.contains(line), "{line} missing in {info}");
    }
}

/// Returns every key with its type, absolute expiry and content.
fn full_dump(c: &mut Connection) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    keys.sort();
    keys.iter()
        .map(|k| {
            let at = int(c, &["PEXPIRETIME", k]);
            let body = dump_keys(c, k).join("");
            format!("{body} at={at}")
        })
        .collect()
}

/// Runs every write command of the family, with and without TTL and NOW.
fn workload(c: &mut Connection) {
    let now = now_ms();
    let t = now.to_string();
    int(c, &["REDPACKET.SPLIT", "r{1}", "100000", "50"]);
    int(
        c,
        &[
            "REDPACKET.SPLIT",
            "r{2}",
            "99999",
            "40",
            "MODE",
            "EQUAL",
            "TTL",
            "3600",
        ],
    );
    int(
        c,
        &[
            "REDPACKET.SPLIT",
            "r{3}",
            "5000",
            "30",
            "TTL",
            "3600",
            "NOW",
            &t,
        ],
    );
    // Born expired (NOW long ago): deleted on the master at once, and on
    // the replicas and in the AOF too.
    int(
        c,
        &[
            "REDPACKET.SPLIT",
            "r{4}",
            "100",
            "2",
            "TTL",
            "60",
            "NOW",
            "1000",
        ],
    );
    assert!(dump_keys(c, "r{4}*").is_empty());
    for u in 0..35 {
        for b in ["r{1}", "r{2}", "r{3}"] {
            grab(c, &[b, &format!("u{u}")]);
        }
    }
    grab(c, &["r{3}", "late", "NOW", &(now + 1).to_string()]);
    grab(
        c,
        &["r{3}", "expired", "NOW", &(now + 3_600_000).to_string()],
    );
    int(c, &["REDPACKET.REFUND", "r{1}"]);
    int(c, &["REDPACKET.REFUND", "r{2}"]);
    grab(c, &["r{2}", "after"]);
}

#[test]
fn replicas_get_exactly_what_the_master_split_and_grabbed() {
    let pair = Pair::start();
    let mut m = pair.master.conn();
    workload(&mut m);
    pair.assert_equal();
    let mut r = pair.replica.conn();
    for b in ["r{1}", "r{2}", "r{3}"] {
        assert_eq!(
            dump_keys(&mut m, &format!("{b}*")),
            dump_keys(&mut r, &format!("{b}*"))
        );
        assert_eq!(grabbed(&mut m, b), grabbed(&mut r, b));
        assert_eq!(pool(&mut m, b), pool(&mut r, b));
    }
    assert!(dump_keys(&mut r, "r{4}*").is_empty());
    let n: i64 = redis::cmd("DBSIZE").query(&mut r).unwrap();
    let m_n: i64 = redis::cmd("DBSIZE").query(&mut m).unwrap();
    assert_eq!(n, m_n, "the replica keeps keys the master deleted");
    for k in [
        "r{2}:meta",
        "r{2}:pool",
        "r{2}:grabbed",
        "r{3}:meta",
        "r{3}:grabbed",
    ] {
        assert_eq!(
            int(&mut m, &["PEXPIRETIME", k]),
            int(&mut r, &["PEXPIRETIME", k]),
            "{k}"
        );
    }
}

#[test]
fn aof_replay_restores_the_same_packets() {
    let mut s = start_aof();
    let mut c = s.conn();
    workload(&mut c);
    let pools: Vec<_> = ["r{1}", "r{2}", "r{3}"]
        .iter()
        .map(|b| pool(&mut c, b))
        .collect();
    let data = full_dump(&mut c);
    drop(c);
    let digest = s.digest();
    s.restart(&[]);
    let mut c = s.conn();
    assert_eq!(data, full_dump(&mut c), "AOF replay differs");
    assert_eq!(digest, s.digest(), "AOF replay differs");
    let after: Vec<_> = ["r{1}", "r{2}", "r{3}"]
        .iter()
        .map(|b| pool(&mut c, b))
        .collect();
    assert_eq!(pools, after);
    assert_conserved(&mut c, "r{3}", 5000);
}

#[test]
fn rdb_reload_keeps_the_packets() {
    let s = Server::start();
    let mut c = s.conn();
    workload(&mut c);
    assert_rdb_reload_equal(&s);
    assert_conserved(&mut c, "r{3}", 5000);
    assert_eq!(
        int(&mut c, &["REDPACKET.REFUND", "r{3}"]),
        pool_sum_after_reload(&mut c)
    );
}

fn pool_sum_after_reload(c: &mut Connection) -> i64 {
    let g: i64 = grabbed(c, "r{3}").iter().map(|(_, v)| v).sum();
    5000 - g
}

#[test]
fn grabs_replay_from_the_aof_after_the_packet_closed() {
    // The keys are made persistent so they outlive `expires`; the grabs won
    // before that moment must replay as won, not as CLOSED, at restart.
    let mut s = start_aof();
    let mut c = s.conn();
    int(&mut c, &["REDPACKET.SPLIT", "p", "1000", "10", "TTL", "1"]);
    assert_eq!(grab(&mut c, &["p", "u1"]).0, "OK");
    assert_eq!(grab(&mut c, &["p", "u2"]).0, "OK");
    for k in ["p:pool", "p:meta", "p:grabbed"] {
        assert_eq!(int(&mut c, &["PERSIST", k]), 1, "{k}");
    }
    std::thread::sleep(std::time::Duration::from_millis(1100));
    assert_eq!(grab(&mut c, &["p", "u3"]), ("CLOSED".into(), 0));
    let before = (pool(&mut c, "p"), grabbed(&mut c, "p"));
    assert_eq!(before.0.len(), 8);
    drop(c);
    assert_aof_restart_equal(&mut s);
    let mut c = s.conn();
    assert_eq!((pool(&mut c, "p"), grabbed(&mut c, "p")), before);
}

#[test]
fn binary_keys_and_users_work() {
    let s = Server::start();
    let mut c = s.conn();
    let base: &[u8] = b"p\0\xff{1}";
    let user: &[u8] = b"\0u\xfe";
    let n: i64 = redis::cmd("REDPACKET.SPLIT")
        .arg(base)
        .arg(100)
        .arg(3)
        .arg("TTL")
        .arg(60)
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 3);
    let (st, cents): (String, i64) = redis::cmd("REDPACKET.GRAB")
        .arg(base)
        .arg(user)
        .query(&mut c)
        .unwrap();
    assert_eq!(st, "OK");
    let g: Vec<(Vec<u8>, i64)> = redis::cmd("REDPACKET.GRABBED")
        .arg(base)
        .query(&mut c)
        .unwrap();
    assert_eq!(g, vec![(user.to_vec(), cents)]);
    let left: i64 = redis::cmd("REDPACKET.REFUND")
        .arg(base)
        .query(&mut c)
        .unwrap();
    assert_eq!(left + cents, 100);
    let mut pool = base.to_vec();
    pool.extend_from_slice(b":meta");
    let ttl: i64 = redis::cmd("PTTL").arg(&pool).query(&mut c).unwrap();
    assert!(ttl > 0);
}

#[test]
fn cluster_mode_needs_a_hash_tag() {
    let s = Server::start_with(&[
        "--cluster-enabled",
        "yes",
        "--cluster-config-file",
        "nodes.conf",
    ]);
    let mut c = s.conn();
    let _: () = redis::cmd("CLUSTER")
        .arg("ADDSLOTSRANGE")
        .arg(0)
        .arg(16383)
        .query(&mut c)
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut c).unwrap();
        if info.contains("cluster_state:ok") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{info}");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let refused = "ERR redpacket: base key needs a {hash tag} in cluster mode";
    for args in [
        vec!["REDPACKET.SPLIT", "rp:untagged", "100", "2"],
        vec!["REDPACKET.GRAB", "rp:untagged", "u"],
        vec!["REDPACKET.INFO", "rp:untagged"],
        vec!["REDPACKET.GRABBED", "rp:untagged"],
        vec!["REDPACKET.REFUND", "rp:untagged"],
    ] {
        assert_eq!(err(&mut c, &args), refused, "{args:?}");
    }
    assert!(dump_keys(&mut c, "*").is_empty());
    assert_eq!(int(&mut c, &["REDPACKET.SPLIT", "rp:{7}", "100", "2"]), 2);
    assert_eq!(grab(&mut c, &["rp:{7}", "u"]).0, "OK");
    assert_eq!(dump_keys(&mut c, "rp:{7}*").len(), 3);
}

/// Returns the slow-log entries of REDPACKET commands (over the threshold
/// the caller set), as "duration command".
fn stalls(c: &mut Connection) -> Vec<String> {
    let entries: Vec<Value> = redis::cmd("SLOWLOG").arg("GET").arg(1000).query(c).unwrap();
    let mut out = Vec::new();
    for e in entries {
        if let Value::Array(f) = e {
            let us = match &f[2] {
                Value::Int(i) => *i,
                _ => 0,
            };
            let args: Vec<String> = match &f[3] {
                Value::Array(a) => a.iter().map(|v| show(&Ok(v.clone()))).collect(),
                _ => vec![],
            };
            if args
                .first()
                .is_some_and(|n| n.to_uppercase().starts_with("REDPACKET"))
            {
                out.push(format!("{us} µs {}", args.join(" ")));
            }
        }
    }
    out
}

/// A packet of `n` shares of 100 cents written straight into its keys (the
/// config caps SPLIT at 100,000 shares; the hot commands must not care how
/// big the pool is), with `grabbed` users already paid.
fn big_packet(c: &mut Connection, b: &str, n: i64, grabbed: i64) {
    let _: i64 = redis::cmd("DEL")
        .arg(format!("{b}:pool"))
        .arg(format!("{b}:grabbed"))
        .arg(format!("{b}:meta"))
        .query(c)
        .unwrap();
    for chunk in (0..n).collect::<Vec<_>>().chunks(10_000) {
        let mut q = redis::cmd("RPUSH");
        q.arg(format!("{b}:pool"));
        for _ in chunk {
            q.arg(100);
        }
        let _: i64 = q.query(c).unwrap();
    }
    for chunk in (0..grabbed).collect::<Vec<_>>().chunks(10_000) {
        let mut q = redis::cmd("HSET");
        q.arg(format!("{b}:grabbed"));
        for u in chunk {
            q.arg(format!("old:{u}")).arg(100);
        }
        let _: i64 = q.query(c).unwrap();
    }
    let total = (n + grabbed) * 100;
    run(
        c,
        &[
            "HSET",
            &format!("{b}:meta"),
            "expires",
            "0",
            "left_cents",
            &(n * 100).to_string(),
            "state",
            "open",
            "total",
            &total.to_string(),
            "count",
            &(n + grabbed).to_string(),
        ],
    );
}

#[test]
fn stall_hot_commands_at_a_million_shares() {
    let s = Server::start();
    let mut c = s.conn();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-log-slower-than")
        .arg(1000)
        .query(&mut c)
        .unwrap();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("slowlog-max-len")
        .arg(1000)
        .query(&mut c)
        .unwrap();
    let mut first: Vec<String> = Vec::new();
    for attempt in 0..2 {
        big_packet(&mut c, "big{1}", 1_000_000, 1_000_000);
        let _: () = redis::cmd("SLOWLOG").arg("RESET").query(&mut c).unwrap();
        let mut p = redis::pipe();
        for u in 0..1000 {
            p.cmd("REDPACKET.GRAB")
                .arg("big{1}")
                .arg(format!("new:{attempt}:{u}"))
                .ignore();
            p.cmd("REDPACKET.GRAB")
                .arg("big{1}")
                .arg(format!("old:{u}"))
                .ignore();
            p.cmd("REDPACKET.INFO").arg("big{1}").ignore();
        }
        let _: () = p.query(&mut c).unwrap();
        // REFUND of a million shares: the total is kept, the pool unlinked.
        assert_eq!(int(&mut c, &["REDPACKET.REFUND", "big{1}"]), 999_000 * 100);
        assert_eq!(int(&mut c, &["EXISTS", "big{1}:pool"]), 0);
        // A loaded machine can stretch a few calls past 1 ms; an O(n)
        // command at a million shares is slow on every call (REFUND, one
        // call, counts at once).
        let slow = stalls(&mut c);
        let many = |name: &str| {
            slow.iter()
                .filter(|e| e.to_uppercase().contains(name))
                .count()
        };
        let stalled: Vec<&str> = ["REDPACKET.GRAB", "REDPACKET.INFO"]
            .into_iter()
            .filter(|n| many(n) >= 5)
            .chain((many("REDPACKET.REFUND") > 0).then_some("REDPACKET.REFUND"))
            .collect();
        if stalled.is_empty() {
            return;
        }
        if attempt == 1 && stalled.iter().any(|s| first.iter().any(|f| f.contains(s))) {
            panic!("stalls over 1 ms, twice:\n{first:#?}\n{slow:#?}");
        }
        first = slow;
    }
}
