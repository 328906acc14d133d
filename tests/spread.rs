//! Spread entities on one server (every shard on it): creation, routing,
//! what each shard stores, the errors for bad input with nothing written,
//! results equal to a single-slot entity fed the same inputs, and
//! replication and AOF replay of every spread command. The cluster runs
//! (load spread over the masters, failover, resharding) are in
//! tests/cluster_spread.rs.

mod common;

use common::*;
use hotpath_client::routing;

/// The shard keys of `base` with `n` shards.
fn keys_of(base: &str, n: u32) -> Vec<String> {
    routing::shard_keys(base.as_bytes(), n)
        .into_iter()
        .map(|k| String::from_utf8(k).unwrap())
        .collect()
}

fn create_like(c: &mut Connection, base: &str, n: u32) -> Vec<String> {
    let keys = keys_of(base, n);
    let ns = n.to_string();
    for k in &keys {
        assert_eq!(run(c, &["LIKE.CREATE", k, "SPREAD", &ns]), "OK", "{k}");
    }
    keys
}

/// Every key and its content, for "nothing was written" checks.
fn snapshot(c: &mut Connection) -> Vec<String> {
    dump_keys(c, "*")
}

#[test]
fn like_shards_route_by_id_mod_n_and_store_id_over_n() {
    let s = Server::start_full(&[], &["like-recent", "10"]);
    let mut c = s.conn();
    let keys = create_like(&mut c, "post:9", 4);
    // Creating again with the same count changes nothing.
    let before = snapshot(&mut c);
    for k in &keys {
        assert_eq!(run(&mut c, &["LIKE.CREATE", k, "SPREAD", "4"]), "OK");
    }
    assert_eq!(snapshot(&mut c), before);
    // Each shard records its count and index.
    for (i, k) in keys.iter().enumerate() {
        assert_eq!(
            run(&mut c, &["HGETALL", &format!("{k}:meta")]),
            format!("[spread, 4, shard, {i}]")
        );
    }
    // User u goes to shard u mod 4, stored as u / 4.
    let mut per_shard = [0i64; 4];
    for u in [0u64, 1, 2, 3, 4, 9, 4294967295] {
        let k = &keys[(u % 4) as usize];
        per_shard[(u % 4) as usize] += 1;
        let us = u.to_string();
        assert_eq!(
            run(&mut c, &["LIKE.ADD", k, &us, "NOW", "1000", "SPREAD", "4"]),
            format!("[1, {}]", per_shard[(u % 4) as usize]),
            "{u}"
        );
        let stored = (u / 4).to_string();
        assert_eq!(
            int(&mut c, &["SISMEMBER", &format!("{k}:set"), &stored]),
            1,
            "{u} stored as {stored}"
        );
    }
    let counts: Vec<i64> = keys
        .iter()
        .map(|k| int(&mut c, &["LIKE.COUNT", k, "SPREAD", "4"]))
        .collect();
    assert_eq!(counts, vec![2, 2, 1, 2]);
    // A raw call without SPREAD is routed by the shard's record too.
    assert_eq!(run(&mut c, &["LIKE.TOGGLE", &keys[1], "9"]), "[0, 1]");
    assert_eq!(
        err(&mut c, &["LIKE.TOGGLE", &keys[1], "10"]),
        format!(
            "ERR like: wrong shard: user '10' belongs to '{}' (shard 2 of 4)",
            keys[2]
        )
    );
    // Checks take real ids; every id must belong to the shard.
    assert_eq!(
        run(&mut c, &["LIKE.CHECK", &keys[0], "0", "4", "8", "SPREAD", "4"]),
        "[1, 1, 0]"
    );
    assert_eq!(
        err(&mut c, &["LIKE.CHECK", &keys[0], "0", "5", "SPREAD", "4"]),
        format!(
            "ERR like: wrong shard: user '5' belongs to '{}' (shard 1 of 4)",
            keys[1]
        )
    );
    // Recent likers are kept under their own ids.
    assert_eq!(
        run(&mut c, &["LIKE.RECENT", &keys[0], "2", "SPREAD", "4"]),
        "[4, 1000, 0, 1000]"
    );
    assert_eq!(
        run(&mut c, &["ZRANGE", &format!("{}:recent", keys[3]), "0", "-1"]),
        "[3, 4294967295]"
    );
    // INFO says which shard it is.
    let info = run(&mut c, &["LIKE.INFO", &keys[2], "SPREAD", "4"]);
    assert!(
        info.ends_with("promotion, none, spread, 4, shard, 2]"),
        "{info}"
    );
    // The last unlike of a shard keeps its record.
    assert_eq!(
        run(&mut c, &["LIKE.REM", &keys[2], "2", "SPREAD", "4"]),
        "[1, 0]"
    );
    assert_eq!(
        keys_like(&mut c, &keys[2]),
        vec![format!("{}:meta", keys[2])]
    );
    assert_eq!(
        run(&mut c, &["HGETALL", &format!("{}:meta", keys[2])]),
        "[spread, 4, shard, 2]"
    );
}

fn keys_like(c: &mut Connection, k: &str) -> Vec<String> {
    let mut v: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{}*", k.replace('{', "\\{").replace('}', "\\}")))
        .query(c)
        .unwrap();
    v.sort();
    v
}

#[test]
fn like_shards_promote_to_dense_bitmaps() {
    let s = Server::start();
    let mut c = s.conn();
    let n = 3u32;
    let keys = create_like(&mut c, "post:{big}", n);
    // 3,000 likers per shard, ids 0 … 8,999: each shard holds 0 … 2,999.
    let mut p = redis::pipe();
    for u in 0..9000u64 {
        p.cmd("LIKE.ADD")
            .arg(&keys[(u % 3) as usize])
            .arg(u)
            .arg("SPREAD")
            .arg(n)
            .ignore();
    }
    p.query::<()>(&mut c).unwrap();
    // Promotion runs in steps carried by writes: a few more writes finish
    // it (toggling a liker off and on again).
    for _ in 0..400 {
        for (i, k) in keys.iter().enumerate() {
            let u = (i as u64).to_string();
            run(&mut c, &["LIKE.TOGGLE", k, &u, "SPREAD", "3"]);
            run(&mut c, &["LIKE.TOGGLE", k, &u, "SPREAD", "3"]);
        }
    }
    for (i, k) in keys.iter().enumerate() {
        let info = run(&mut c, &["LIKE.INFO", k, "SPREAD", "3"]);
        assert!(
            info.starts_with("[encoding, bitmap, count, 3000,"),
            "{k}: {info}"
        );
        // One chunk per shard: the ids stored are 0 … 2,999, dense.
        assert_eq!(
            int(&mut c, &["BITCOUNT", &format!("{k}:bits:0")]),
            3000,
            "{k}"
        );
        assert_eq!(int(&mut c, &["EXISTS", &format!("{k}:bits:1")]), 0);
        let id = (3 * 1234 + i).to_string();
        assert_eq!(
            run(&mut c, &["LIKE.CHECK", k, &id, "SPREAD", "3"]),
            "[1]"
        );
        assert_eq!(int(&mut c, &["GETBIT", &format!("{k}:bits:0"), "1234"]), 1);
    }
}

#[test]
fn like_spread_results_equal_a_single_slot_post() {
    let s = Server::start();
    let mut c = s.conn();
    let n = 5u32;
    let keys = create_like(&mut c, "post:{eq}", n);
    // The same random sequence of toggles, adds and removes on a spread
    // post and on a single-slot one.
    let mut rng: u64 = 0x9e3779b97f4a7c15;
    let mut next = || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for _ in 0..6000 {
        let r = next();
        let u = r % 2000;
        let op = ["LIKE.TOGGLE", "LIKE.ADD", "LIKE.REM"][(r >> 32) as usize % 3];
        let us = u.to_string();
        let single = run(&mut c, &[op, "post:{eq}:single", &us]);
        let shard = run(
            &mut c,
            &[op, &keys[(u % 5) as usize], &us, "SPREAD", "5"],
        );
        // The first element (liked / changed) is the same; counts differ
        // (the shard's count against the post's).
        assert_eq!(single[..2], shard[..2], "{op} {u}");
    }
    let total: i64 = keys
        .iter()
        .map(|k| int(&mut c, &["LIKE.COUNT", k, "SPREAD", "5"]))
        .sum();
    assert_eq!(total, int(&mut c, &["LIKE.COUNT", "post:{eq}:single"]));
    for u in 0..2000u64 {
        let us = u.to_string();
        assert_eq!(
            run(&mut c, &["LIKE.CHECK", "post:{eq}:single", &us]),
            run(&mut c, &["LIKE.CHECK", &keys[(u % 5) as usize], &us, "SPREAD", "5"]),
            "{u}"
        );
    }
}

#[test]
fn like_spread_bad_input_is_a_clear_error_and_writes_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    let keys = create_like(&mut c, "post:9", 4);
    run(&mut c, &["LIKE.ADD", &keys[1], "1", "SPREAD", "4"]);
    let before = snapshot(&mut c);
    let k0 = keys[0].as_str();
    let spread_base = format!(
        "ERR like: 'post:9' is spread over 4 shards: call its shard keys ('{k0}' is shard 0) or use a client library"
    );
    let cases: Vec<(Vec<&str>, String)> = vec![
        // A spread post used by single-slot commands.
        (vec!["LIKE.ADD", "post:9", "1"], spread_base.clone()),
        (vec!["LIKE.TOGGLE", "post:9", "1"], spread_base.clone()),
        (vec!["LIKE.REM", "post:9", "1"], spread_base.clone()),
        (vec!["LIKE.COUNT", "post:9"], spread_base.clone()),
        (vec!["LIKE.CHECK", "post:9", "1"], spread_base.clone()),
        (vec!["LIKE.RECENT", "post:9"], spread_base.clone()),
        (vec!["LIKE.INFO", "post:9"], spread_base.clone()),
        (vec!["LIKE.COMMON", "post:9", "other"], spread_base.clone()),
        (
            vec!["LIKE.COMMON", &keys[1], &keys[1]],
            format!(
                "ERR like: LIKE.COMMON does not take a shard of a spread post ('{}')",
                keys[1]
            ),
        ),
        // Shard counts that disagree.
        (
            vec!["LIKE.ADD", &keys[2], "2", "SPREAD", "8"],
            format!(
                "ERR like: shard counts disagree: '{}' is shard 2 of 4, the call says 8",
                keys[2]
            ),
        ),
        (
            vec!["LIKE.CREATE", &keys[2], "SPREAD", "8"],
            format!(
                "ERR like: shard counts disagree: '{}' is shard 2 of 4, the call says 8",
                keys[2]
            ),
        ),
        // Not a shard key of that count.
        (
            vec!["LIKE.ADD", &keys[1], "1", "SPREAD", "3"],
            format!(
                "ERR like: shard counts disagree: '{}' is shard 1 of 4, the call says 3",
                keys[1]
            ),
        ),
        (
            vec!["LIKE.ADD", "post:{x}", "1", "SPREAD", "3"],
            "ERR like: 'post:{x}' is not a shard key of 3 shards (see docs/spread.md)".into(),
        ),
        (
            vec!["LIKE.CREATE", "post:9", "SPREAD", "4"],
            "ERR like: 'post:9' is not a shard key of 4 shards (see docs/spread.md)".into(),
        ),
        // The wrong shard.
        (
            vec!["LIKE.ADD", &keys[1], "2", "SPREAD", "4"],
            format!(
                "ERR like: wrong shard: user '2' belongs to '{}' (shard 2 of 4)",
                keys[2]
            ),
        ),
        // Option values.
        (
            vec!["LIKE.ADD", &keys[1], "1", "SPREAD", "0"],
            "ERR like: SPREAD must be from 1 to 1024".into(),
        ),
        (
            vec!["LIKE.ADD", &keys[1], "1", "SPREAD", "1025"],
            "ERR like: SPREAD must be from 1 to 1024".into(),
        ),
        (
            vec!["LIKE.ADD", &keys[1], "1", "SPREAD", "x"],
            "ERR value is not an integer or out of range".into(),
        ),
        (
            vec!["LIKE.ADD", &keys[1], "1", "SPREAD"],
            "ERR syntax error".into(),
        ),
        (
            vec!["LIKE.CREATE", &keys[1]],
            "ERR like: LIKE.CREATE needs SPREAD n (a single-slot post needs no creation)".into(),
        ),
        (
            vec!["LIKE.CREATE", &keys[1], "SPREAD", "4", "TTL", "5"],
            "ERR syntax error".into(),
        ),
        (
            vec!["LIKE.COUNT", &keys[1], "SPREAD"],
            "ERR wrong number of arguments for 'like.count' command".into(),
        ),
        (
            vec!["LIKE.REM", &keys[1], "1", "NOW", "5"],
            "ERR wrong number of arguments for 'like.rem' command".into(),
        ),
    ];
    for (args, want) in &cases {
        assert_eq!(&err(&mut c, args), want, "{args:?}");
        assert_eq!(snapshot(&mut c), before, "{args:?} wrote something");
    }
    // A missing shard (never created, or deleted whole).
    run(&mut c, &["DEL", &format!("{}:meta", keys[3])]);
    let before = snapshot(&mut c);
    for args in [
        vec!["LIKE.ADD", &keys[3], "3", "SPREAD", "4"],
        vec!["LIKE.COUNT", &keys[3], "SPREAD", "4"],
        vec!["LIKE.CHECK", &keys[3], "3", "SPREAD", "4"],
        vec!["LIKE.INFO", &keys[3], "SPREAD", "4"],
        vec!["LIKE.RECENT", &keys[3], "SPREAD", "4"],
    ] {
        assert_eq!(
            err(&mut c, &args),
            format!("ERR like: shard '{}' (3 of 4) does not exist", keys[3]),
            "{args:?}"
        );
        assert_eq!(snapshot(&mut c), before);
    }
    // A hand-deleted shard meta, the shard's likes still there.
    run(&mut c, &["DEL", &format!("{}:meta", keys[1])]);
    let before = snapshot(&mut c);
    let corrupt = format!("ERR like: corrupt data in '{}:meta' field 'spread'", keys[1]);
    for args in [
        vec!["LIKE.ADD", &keys[1], "5", "SPREAD", "4"],
        vec!["LIKE.COUNT", &keys[1], "SPREAD", "4"],
        vec!["LIKE.CREATE", &keys[1], "SPREAD", "4"],
    ] {
        let want = if args[0] == "LIKE.CREATE" {
            format!("ERR like: '{}' already holds a single-slot post", keys[1])
        } else {
            corrupt.clone()
        };
        assert_eq!(err(&mut c, &args), want, "{args:?}");
        assert_eq!(snapshot(&mut c), before);
    }
    // Corrupt records.
    let m2 = format!("{}:meta", keys[2]);
    for (field, value, bad) in [
        ("spread", "x", "spread"),
        ("spread", "0", "spread"),
        ("shard", "9", "shard"),
        ("shard", "1", "shard"),
    ] {
        run(&mut c, &["HSET", &m2, "spread", "4", "shard", "2"]);
        run(&mut c, &["HSET", &m2, field, value]);
        let before = snapshot(&mut c);
        assert_eq!(
            err(&mut c, &["LIKE.ADD", &keys[2], "2", "SPREAD", "4"]),
            format!("ERR like: corrupt data in '{m2}' field '{bad}'"),
            "{field}={value}"
        );
        assert_eq!(snapshot(&mut c), before);
    }
    run(&mut c, &["DEL", &m2]);
    run(&mut c, &["SET", &m2, "x"]);
    assert_eq!(
        err(&mut c, &["LIKE.ADD", &keys[2], "2", "SPREAD", "4"]),
        "WRONGTYPE Operation against a key holding the wrong kind of value"
    );
    // A single-slot post under the base blocks shard 0's creation.
    run(&mut c, &["LIKE.ADD", "post:{7}", "1"]);
    let k = &keys_of("post:{7}", 2);
    let before = snapshot(&mut c);
    assert_eq!(
        err(&mut c, &["LIKE.CREATE", &k[0], "SPREAD", "2"]),
        "ERR like: 'post:{7}' is a single-slot post already"
    );
    assert_eq!(snapshot(&mut c), before);
}

#[test]
fn like_spread_replicates_and_replays_exactly() {
    let pair = Pair::start();
    let mut m = pair.master.conn();
    let keys = create_like(&mut m, "post:{rep}", 3);
    for u in 0..3000u64 {
        let us = u.to_string();
        run(
            &mut m,
            &["LIKE.TOGGLE", &keys[(u % 3) as usize], &us, "SPREAD", "3"],
        );
        if u % 7 == 0 {
            run(&mut m, &["LIKE.REM", &keys[(u % 3) as usize], &us, "SPREAD", "3"]);
        }
    }
    pair.assert_equal();

    let mut s = start_aof();
    let mut c = s.conn();
    let keys = create_like(&mut c, "post:{aof}", 2);
    for u in 0..2000u64 {
        let us = u.to_string();
        run(&mut c, &["LIKE.ADD", &keys[(u % 2) as usize], &us, "SPREAD", "2"]);
    }
    drop(c);
    assert_aof_restart_equal(&mut s);
}
