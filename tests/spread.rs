//! Spread entities on one server (every shard on it): creation, routing,
//! what each shard stores, the errors for bad input with nothing written,
//! results equal to a single-slot entity fed the same inputs, and
//! replication and AOF replay of every spread command. The cluster runs
//! (load spread over the masters, failover, resharding) are in
//! tests/cluster_spread.rs.

use crate::common;

use common::*;

/// A pool score as an integer: score × 2^52 (exact for every score the
/// module writes, and for the marks -1, -1.5, -2, -3).
const SCORE_K: f64 = 4_503_599_627_370_496.0;

fn to_r(sc: f64) -> i64 {
    (sc * SCORE_K) as i64
}

/// The text a reply gives for the score `r` / 2^52 (`%.17g`).
#[allow(dead_code)]
fn r_text(r: i64) -> String {
    hotpath::luckybag::model::format_score(r as f64 / SCORE_K)
}
use hotpath_client::routing;

#[path = "spread/poll.rs"]
mod poll;

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
        run(
            &mut c,
            &["LIKE.CHECK", &keys[0], "0", "4", "8", "SPREAD", "4"]
        ),
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
        run(
            &mut c,
            &["ZRANGE", &format!("{}:recent", keys[3]), "0", "-1"]
        ),
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
        assert_eq!(run(&mut c, &["LIKE.CHECK", k, &id, "SPREAD", "3"]), "[1]");
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
        let shard = run(&mut c, &[op, &keys[(u % 5) as usize], &us, "SPREAD", "5"]);
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
            run(
                &mut c,
                &["LIKE.CHECK", &keys[(u % 5) as usize], &us, "SPREAD", "5"]
            ),
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
    let corrupt = format!(
        "ERR like: corrupt data in '{}:meta' field 'spread'",
        keys[1]
    );
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
            run(
                &mut m,
                &["LIKE.REM", &keys[(u % 3) as usize], &us, "SPREAD", "3"],
            );
        }
    }
    pair.assert_equal();

    let mut s = start_aof();
    let mut c = s.conn();
    let keys = create_like(&mut c, "post:{aof}", 2);
    for u in 0..2000u64 {
        let us = u.to_string();
        run(
            &mut c,
            &["LIKE.ADD", &keys[(u % 2) as usize], &us, "SPREAD", "2"],
        );
    }
    drop(c);
    assert_aof_restart_equal(&mut s);
}

// ---- LUCKYBAG ----

use hotpath_client::{BagOptions, BagResult, DrawOptions, LuckyBag, SpreadLuckyBag, Winner};

/// A draw on one server: no replica to wait for.
fn no_wait(token: Option<&str>) -> DrawOptions {
    DrawOptions {
        token: token.map(str::to_string),
        replicas: 0,
        ..DrawOptions::default()
    }
}

/// Every member of a bag shard's pools, with `r` = score × 2^52 (as
/// a signed number: -1, -2 and -3 mark users that cannot win).
fn pool_of(c: &mut Connection, key: &str, internal: u64) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for s in 0..internal {
        let v: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(format!("{key}:cand:{s}"))
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(c)
            .unwrap();
        out.extend(v.into_iter().map(|(u, sc)| (u, to_r(sc))));
    }
    out
}

/// The winners a single-node draw must give for these pools: scores in
/// [0, 1], score descending then user descending byte-wise, the best `w`.
fn expected_top(pools: &[(String, i64)], w: usize) -> Vec<(String, i64)> {
    let mut all: Vec<(String, i64)> = pools
        .iter()
        .filter(|(_, r)| (0..=1i64 << 52).contains(r))
        .cloned()
        .collect();
    all.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| b.0.as_bytes().cmp(a.0.as_bytes()))
    });
    all.truncate(w);
    all
}

fn as_pairs(ws: &[Winner]) -> Vec<(String, i64)> {
    ws.iter().map(|w| (w.user.clone(), to_r(w.score))).collect()
}

/// Users of every kind: integers (routed by `id mod n`) and names (FNV-1a).
fn bag_users(count: u64) -> Vec<String> {
    (0..count)
        .map(|i| {
            if i % 5 == 4 {
                format!("user-{i}")
            } else {
                i.to_string()
            }
        })
        .collect()
}

#[test]
fn luckybag_spread_draw_is_the_single_slot_draw_of_the_same_pools() {
    let s = Server::start();
    let mut c = s.conn();
    let bag = SpreadLuckyBag::new("bag:live", 4);
    let keys = bag.shards().keys().to_vec();
    assert!(bag.create(&mut c, 50, &BagOptions::default()).unwrap());
    for (i, k) in keys.iter().enumerate() {
        let meta = run(&mut c, &["HGETALL", &format!("{k}:meta")]);
        assert!(meta.ends_with(&format!("spread, 4, shard, {i}]")), "{meta}");
        // One internal pool per shard by default.
        assert!(meta.contains("shards, 1,"), "{meta}");
    }
    let users = bag_users(3000);
    let mut joined = 0;
    for (i, u) in users.iter().enumerate() {
        let j = bag.join(&mut c, u, i % 11 == 3).unwrap();
        assert!(j.new);
        assert_eq!(j.shard, bag.shards().shard_of(u));
        joined += 1;
        // Some leave the room (-1), some never finish their task (-2).
        if i % 13 == 5 {
            assert!(bag.leave(&mut c, u).unwrap());
        }
    }
    // Joining again is a duplicate on the user's shard.
    assert!(!bag.join(&mut c, &users[7], false).unwrap().new);
    // Each user sits in its own shard only.
    let mut pools = Vec::new();
    for (i, k) in keys.iter().enumerate() {
        let p = pool_of(&mut c, k, 1);
        for (u, _) in &p {
            assert_eq!(bag.shards().shard_of(u), i as u32, "{u} in {k}");
        }
        pools.extend(p);
    }
    assert_eq!(pools.len(), joined);
    let info = bag.info(&mut c).unwrap();
    assert_eq!(info.participants, joined as i64);
    assert_eq!(info.state, "open");
    assert_eq!(info.winners, 50);
    assert_eq!(info.per_shard.len(), 4);

    // The single-slot reference: a bag with the very same pool.
    let single = LuckyBag::new("bag:{single}");
    let o = BagOptions {
        shards: Some(1),
        ..BagOptions::default()
    };
    assert!(single.create(&mut c, 50, &o).unwrap());
    for (u, r) in &pools {
        let score = *r as f64 / SCORE_K;
        let _: i64 = redis::cmd("ZADD")
            .arg("bag:{single}:cand:0")
            .arg(score)
            .arg(u)
            .query(&mut c)
            .unwrap();
    }
    let want = single.draw(&mut c).unwrap();
    assert_eq!(want.len(), 50);
    assert_eq!(as_pairs(&want), expected_top(&pools, 50));

    let got = bag.draw(&mut c, &no_wait(None)).unwrap();
    assert_eq!(got, want, "the spread draw is the single-node draw");
    assert_eq!(bag.info(&mut c).unwrap().state, "drawn");
    // Each user's result, from the user's shard.
    let winners: std::collections::HashSet<&str> = got.iter().map(|w| w.user.as_str()).collect();
    for u in users.iter().step_by(7) {
        let want = if winners.contains(u.as_str()) {
            BagResult::Won
        } else {
            BagResult::Lost
        };
        assert_eq!(bag.result(&mut c, u).unwrap(), want, "{u}");
    }
    for w in &got {
        assert_eq!(bag.result(&mut c, &w.user).unwrap(), BagResult::Won);
    }
    assert_eq!(bag.result(&mut c, "nobody").unwrap(), BagResult::Absent);
    // Drawing again, by anyone, answers the same winners.
    assert_eq!(bag.draw(&mut c, &no_wait(None)).unwrap(), got);
    // The bag is closed on every shard.
    for u in ["0", "1", "2", "3", "late"] {
        let e = error_text(&bag.join(&mut c, u, false).unwrap_err());
        assert!(e.contains("luckybag: bag is closed"), "{e}");
    }
}

#[test]
fn luckybag_spread_draw_interrupted_or_raced_gives_the_same_winners() {
    let s = Server::start();
    let mut c = s.conn();
    let bag = SpreadLuckyBag::new("bag:{race}", 3);
    let k = bag.shards().keys().to_vec();
    bag.create(&mut c, 20, &BagOptions::default()).unwrap();
    for u in bag_users(600) {
        bag.join(&mut c, &u, false).unwrap();
    }
    // A drawer takes the lease and freezes one shard, then stops.
    assert_eq!(
        run(&mut c, &["LUCKYBAG.DRAWBEGIN", &k[0], "A", "SPREAD", "3"]),
        "[drawing, 20]"
    );
    let frozen = run(&mut c, &["LUCKYBAG.FREEZE", &k[1], "5", "SPREAD", "3"]);
    assert_eq!(frozen.matches(", ").count(), 9, "5 candidates: {frozen}");
    // The frozen shard takes no more joins; the others still do (their
    // pools are read when they are frozen).
    let on1 = (1000..)
        .map(|i| i.to_string())
        .find(|u| bag.shards().shard_of(u) == 1)
        .unwrap();
    let on2 = (1000..)
        .map(|i| i.to_string())
        .find(|u| bag.shards().shard_of(u) == 2)
        .unwrap();
    let e = error_text(&bag.join(&mut c, &on1, false).unwrap_err());
    assert!(e.contains("bag is closed"), "{e}");
    for cmd_ in ["LUCKYBAG.TASK", "LUCKYBAG.LEAVE", "LUCKYBAG.ENTER"] {
        let e = err(&mut c, &[cmd_, &k[1], "1", "SPREAD", "3"]);
        assert_eq!(e, "ERR luckybag: bag is closed", "{cmd_}");
    }
    assert!(bag.join(&mut c, &on2, false).unwrap().new);
    // A second drawer racing the first is refused while the lease runs.
    let e = error_text(&bag.draw(&mut c, &no_wait(Some("B"))).unwrap_err());
    assert!(e.contains("luckybag: draw in progress"), "{e}");
    assert!(e.contains(&k[0]), "the error names shard 0: {e}");
    // The first drawer runs again with its token and completes.
    let pools: Vec<(String, i64)> = k.iter().flat_map(|key| pool_of(&mut c, key, 1)).collect();
    let got = bag.draw(&mut c, &no_wait(Some("A"))).unwrap();
    assert_eq!(as_pairs(&got), expected_top(&pools, 20));
    assert!(
        got.iter().any(|w| w.user == on2)
            || !expected_top(&pools, 20).iter().any(|(u, _)| *u == on2)
    );
    // B now gets the committed winners.
    assert_eq!(bag.draw(&mut c, &no_wait(Some("B"))).unwrap(), got);

    // Interrupted between COMMIT and PUBLISH: results are PENDING on the
    // shards not yet published; a re-run only publishes.
    let bag2 = SpreadLuckyBag::new("bag:{cut}", 4);
    let k2 = bag2.shards().keys().to_vec();
    bag2.create(&mut c, 10, &BagOptions::default()).unwrap();
    for u in bag_users(400) {
        bag2.join(&mut c, &u, false).unwrap();
    }
    run(&mut c, &["LUCKYBAG.DRAWBEGIN", &k2[0], "T", "SPREAD", "4"]);
    for key in &k2 {
        run(&mut c, &["LUCKYBAG.FREEZE", key, "10", "SPREAD", "4"]);
    }
    let pools: Vec<(String, i64)> = k2.iter().flat_map(|key| pool_of(&mut c, key, 1)).collect();
    let top = expected_top(&pools, 10);
    let mut commit: Vec<String> = vec!["LUCKYBAG.COMMIT".into(), k2[0].clone(), "T".into()];
    for (u, r) in &top {
        commit.push(u.clone());
        commit.push(r_text(*r));
    }
    commit.extend(["SPREAD".into(), "4".into()]);
    let argv: Vec<&str> = commit.iter().map(String::as_str).collect();
    assert_eq!(run(&mut c, &argv), "OK");
    // The same commit again is a no-op; another list is refused.
    assert_eq!(run(&mut c, &argv), "OK");
    let mut other = argv.clone();
    other.truncate(argv.len() - 4);
    other.extend(["SPREAD", "4"]);
    assert_eq!(
        err(&mut c, &other),
        "ERR luckybag: the draw was committed with other winners"
    );
    assert_eq!(bag2.info(&mut c).unwrap().state, "drawn");
    assert_eq!(bag2.result(&mut c, &top[0].0).unwrap(), BagResult::Pending);
    let got = bag2.draw(&mut c, &no_wait(Some("someone-else"))).unwrap();
    assert_eq!(as_pairs(&got), top);
    for (u, _) in &top {
        assert_eq!(bag2.result(&mut c, u).unwrap(), BagResult::Won, "{u}");
    }

    // The lease: another token is refused until it runs out, then takes
    // the draw over.
    let bag3 = SpreadLuckyBag::new("bag:{lease}", 2);
    let k3 = bag3.shards().keys().to_vec();
    bag3.create(&mut c, 3, &BagOptions::default()).unwrap();
    let begin = |c: &mut Connection, t: &str, now: &str| {
        run(
            c,
            &[
                "LUCKYBAG.DRAWBEGIN",
                &k3[0],
                t,
                "LEASE",
                "100",
                "NOW",
                now,
                "SPREAD",
                "2",
            ],
        )
    };
    assert_eq!(begin(&mut c, "A", "1000"), "[drawing, 3]");
    assert_eq!(
        begin(&mut c, "B", "1099"),
        "ERR<ERR luckybag: draw in progress>"
    );
    assert_eq!(begin(&mut c, "A", "1099"), "[drawing, 3]");
    assert_eq!(begin(&mut c, "B", "1199"), "[drawing, 3]");
    // A's commit after the take-over is refused.
    assert_eq!(
        err(&mut c, &["LUCKYBAG.COMMIT", &k3[0], "A", "SPREAD", "2"]),
        "ERR luckybag: draw in progress"
    );
    assert_eq!(
        run(&mut c, &["HGET", &format!("{}:meta", k3[0]), "drawlease"]),
        "1299"
    );
}

/// `user score` arguments of a winner list.
fn list_args(list: &[(String, i64)]) -> Vec<String> {
    list.iter()
        .flat_map(|(u, r)| [u.clone(), r_text(*r)])
        .collect()
}

#[test]
fn luckybag_spread_publish_refuses_a_list_that_is_not_the_true_top() {
    let s = Server::start();
    let mut c = s.conn();
    let bag = SpreadLuckyBag::new("bag:{forge}", 3);
    let k = bag.shards().keys().to_vec();
    bag.create(&mut c, 5, &BagOptions::default()).unwrap();
    for u in bag_users(300) {
        bag.join(&mut c, &u, false).unwrap();
    }
    run(&mut c, &["LUCKYBAG.DRAWBEGIN", &k[0], "T", "SPREAD", "3"]);
    for key in &k {
        run(&mut c, &["LUCKYBAG.FREEZE", key, "5", "SPREAD", "3"]);
    }
    let pools: Vec<(String, i64)> = k.iter().flat_map(|key| pool_of(&mut c, key, 1)).collect();
    let top6 = expected_top(&pools, 6);
    // The forged list: the true top 5 without the best, with the 6th.
    let forged: Vec<(String, i64)> = top6[1..].to_vec();
    let best = &top6[0];
    let best_shard = bag.shards().shard_of(&best.0) as usize;
    let last = forged.last().unwrap().clone();
    let part = |list: &[(String, i64)], i: usize| -> Vec<(String, i64)> {
        list.iter()
            .filter(|(u, _)| bag.shards().shard_of(u) as usize == i)
            .cloned()
            .collect()
    };
    let publish = |list: &[(String, i64)], i: usize, tail: &[String]| -> Vec<String> {
        let mut a = vec!["LUCKYBAG.PUBLISH".to_string(), k[i].clone()];
        a.extend(list_args(&part(list, i)));
        a.extend(tail.iter().cloned());
        a.extend(["SPREAD".to_string(), "3".to_string()]);
        a
    };
    let last_tail = list_args(std::slice::from_ref(&last));
    let with_last: Vec<String> = ["LAST".to_string()]
        .into_iter()
        .chain(last_tail.clone())
        .collect();
    let before = snapshot(&mut c);
    let fmt = r_text;
    let refusal = |winner: Option<&(String, i64)>| -> String {
        let why = match winner {
            Some((u, r)) => format!("does not rank after '{u}' with score {}", fmt(*r)),
            None => "the winner list is shorter than WINNERS without LAST".into(),
        };
        format!(
            "ERR luckybag: not the true top: '{}' with score {} of '{}' is not a winner but {why}",
            best.0,
            fmt(best.1),
            k[best_shard]
        )
    };
    // The shard that holds the left-out best refuses, with VERIFY too; the
    // error names the candidate left out and a winner it ranks before.
    let mut verify_tail = with_last.clone();
    verify_tail.push("VERIFY".into());
    let args = publish(&forged, best_shard, &verify_tail);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let e = err(&mut c, &argv);
    let own = part(&forged, best_shard);
    let above = own.first().unwrap_or(&last);
    assert_eq!(e, refusal(Some(above)), "{argv:?}");
    // Without LAST a full list reads as a short one: refused too.
    let args = publish(&forged, best_shard, &[]);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    let e = err(&mut c, &argv);
    if own.is_empty() {
        assert_eq!(e, refusal(None));
    } else {
        assert_eq!(e, refusal(Some(&own[0])));
    }
    // LAST must rank after the shard's winners, and be a score. One winner
    // only: with all five true winners on shard 0 (1 run in 243), five
    // winners and a sixth LAST are refused first for their count.
    let mut bad = vec!["LUCKYBAG.PUBLISH".to_string(), k[0].clone()];
    let first_of_0: Vec<(String, i64)> = part(&top6[..5], 0).into_iter().take(1).collect();
    bad.extend(list_args(&first_of_0));
    bad.extend([
        "LAST".into(),
        "zz".into(),
        "1".into(),
        "SPREAD".into(),
        "3".into(),
    ]);
    let argv: Vec<&str> = bad.iter().map(String::as_str).collect();
    if !part(&top6[..5], 0).is_empty() {
        assert_eq!(
            err(&mut c, &argv),
            "ERR luckybag: bad winner list: winners out of order or repeated"
        );
    }
    let argv = [
        "LUCKYBAG.PUBLISH",
        k[0].as_str(),
        "LAST",
        "zz",
        "high",
        "SPREAD",
        "3",
    ];
    assert_eq!(
        err(&mut c, &argv),
        "ERR luckybag: winner scores must be scores from 0 to 1 as replies print them (17 significant digits)"
    );
    // The true list verifies on every shard, and VERIFY writes nothing.
    let true_last: Vec<String> = ["LAST".to_string()]
        .into_iter()
        .chain(list_args(&top6[4..5]))
        .chain(["VERIFY".to_string()])
        .collect();
    for i in 0..3 {
        let args = publish(&top6[..5], i, &true_last);
        let argv: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(
            int(&mut c, &argv),
            part(&top6[..5], i).len() as i64,
            "{argv:?}"
        );
    }
    assert_eq!(
        snapshot(&mut c),
        before,
        "refusals and VERIFY write nothing"
    );

    // A raw client that commits the forged list anyway (the coordinator
    // cannot read the other shards): its PUBLISH on the shard holding the
    // left-out best is refused and that shard stays frozen.
    let mut commit = vec!["LUCKYBAG.COMMIT".to_string(), k[0].clone(), "T".into()];
    commit.extend(list_args(&forged));
    commit.extend(["SPREAD".into(), "3".into()]);
    let argv: Vec<&str> = commit.iter().map(String::as_str).collect();
    assert_eq!(run(&mut c, &argv), "OK");
    let args = publish(&forged, best_shard, &with_last);
    let argv: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(err(&mut c, &argv), refusal(Some(above)));
    assert_eq!(bag.result(&mut c, &best.0).unwrap(), BagResult::Pending);
    let e = error_text(&bag.draw(&mut c, &no_wait(Some("T"))).unwrap_err());
    assert!(e.contains("not the true top"), "{e}");

    // The client's own draw of a fresh bag verifies before it commits and
    // gives the true top; a re-run answers the same.
    let bag2 = SpreadLuckyBag::new("bag:{fair}", 3);
    let k2 = bag2.shards().keys().to_vec();
    bag2.create(&mut c, 5, &BagOptions::default()).unwrap();
    for u in bag_users(300) {
        bag2.join(&mut c, &u, false).unwrap();
    }
    let got = bag2.draw(&mut c, &no_wait(None)).unwrap();
    let pools: Vec<(String, i64)> = k2.iter().flat_map(|key| pool_of(&mut c, key, 1)).collect();
    assert_eq!(as_pairs(&got), expected_top(&pools, 5));
    assert_eq!(bag2.draw(&mut c, &no_wait(None)).unwrap(), got);
}

#[test]
fn luckybag_spread_bad_input_is_a_clear_error_and_writes_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    let bag = SpreadLuckyBag::new("bag:bad", 4);
    let k = bag.shards().keys().to_vec();
    bag.create(&mut c, 5, &BagOptions::default()).unwrap();
    for u in 0..40 {
        bag.join(&mut c, &u.to_string(), false).unwrap();
    }
    let before = snapshot(&mut c);
    let k0 = k[0].as_str();
    let k1 = k[1].as_str();
    let k8_1 = SpreadLuckyBag::new("bag:bad", 8).shards().keys()[1].clone();
    let cases: Vec<(Vec<&str>, String)> = vec![
        // A user sent to the wrong shard: the error names the right one.
        (
            vec!["LUCKYBAG.JOIN", k0, "1", "SPREAD", "4"],
            format!("ERR luckybag: wrong shard: user '1' belongs to '{k1}' (shard 1 of 4)"),
        ),
        (
            vec!["LUCKYBAG.JOIN", k0, "1"],
            format!("ERR luckybag: wrong shard: user '1' belongs to '{k1}' (shard 1 of 4)"),
        ),
        (
            vec!["LUCKYBAG.RESULT", k0, "5", "SPREAD", "4"],
            format!("ERR luckybag: wrong shard: user '5' belongs to '{k1}' (shard 1 of 4)"),
        ),
        // Shard counts that disagree.
        (
            vec!["LUCKYBAG.JOIN", k0, "0", "SPREAD", "8"],
            format!("ERR luckybag: shard counts disagree: '{k0}' is shard 0 of 4, the call says 8"),
        ),
        (
            vec!["LUCKYBAG.INFO", k1, "SPREAD", "2"],
            format!("ERR luckybag: shard counts disagree: '{k1}' is shard 1 of 4, the call says 2"),
        ),
        // The base key of a spread bag used by single-slot commands.
        (
            vec!["LUCKYBAG.JOIN", "bag:bad", "1"],
            format!("ERR luckybag: 'bag:bad' is spread over 4 shards: call its shard keys ('{k0}' is shard 0) or use a client library"),
        ),
        (
            vec!["LUCKYBAG.DRAW", "bag:bad"],
            format!("ERR luckybag: 'bag:bad' is spread over 4 shards: call its shard keys ('{k0}' is shard 0) or use a client library"),
        ),
        (
            vec!["LUCKYBAG.DRAW", k1],
            format!("ERR luckybag: '{k1}' is shard 1 of a bag spread over 4 shards: draw it with a client library (docs/spread.md)"),
        ),
        // Draw steps in the wrong place or without SPREAD.
        (
            vec!["LUCKYBAG.DRAWBEGIN", k1, "t", "SPREAD", "4"],
            format!("ERR luckybag: the draw of a spread bag is coordinated by its shard 0 ('{k0}')"),
        ),
        (
            vec!["LUCKYBAG.DRAWBEGIN", k0, "t"],
            "ERR luckybag: the draw steps of a spread bag need SPREAD n".into(),
        ),
        (
            vec!["LUCKYBAG.DRAWBEGIN", k0, "", "SPREAD", "4"],
            "ERR luckybag: a draw token must be 1 to 128 bytes".into(),
        ),
        (
            vec!["LUCKYBAG.COMMIT", k0, "t", "SPREAD", "4"],
            "ERR luckybag: no draw in progress (LUCKYBAG.DRAWBEGIN first)".into(),
        ),
        (
            vec!["LUCKYBAG.PUBLISH", k1, "SPREAD", "4"],
            format!("ERR luckybag: shard '{k1}' is not frozen (LUCKYBAG.FREEZE first)"),
        ),
        (
            vec!["LUCKYBAG.PUBLISH", k1, "5", "0.5", "SPREAD", "4"],
            format!("ERR luckybag: '5' is not a candidate of '{k1}' with score 0.5"),
        ),
        (
            vec!["LUCKYBAG.PUBLISH", k1, "4", "0.5", "SPREAD", "4"],
            format!("ERR luckybag: wrong shard: user '4' belongs to '{k0}' (shard 0 of 4)"),
        ),
        (
            vec!["LUCKYBAG.PUBLISH", k1, "5", "half", "SPREAD", "4"],
            "ERR luckybag: winner scores must be scores from 0 to 1 as replies print them (17 significant digits)".into(),
        ),
        (
            vec!["LUCKYBAG.PUBLISH", k1, "1", "0.25", "5", "0.5", "SPREAD", "4"],
            "ERR luckybag: bad winner list: winners out of order or repeated".into(),
        ),
        (
            vec!["LUCKYBAG.FREEZE", k1, "0", "SPREAD", "4"],
            "ERR value is not an integer or out of range".into(),
        ),
        (
            vec!["LUCKYBAG.FREEZE", k1, "1", "SPREAD", "0"],
            "ERR luckybag: SPREAD must be from 1 to 1024".into(),
        ),
        (
            vec!["LUCKYBAG.TASK", k1, "5", "SPREAD"],
            "ERR wrong number of arguments for 'luckybag.task' command".into(),
        ),
        // A key that is no shard key of that count.
        (
            vec!["LUCKYBAG.JOIN", "bag:other", "1", "SPREAD", "4"],
            "ERR luckybag: 'bag:other' is not a shard key of 4 shards (see docs/spread.md)".into(),
        ),
        // Another count's shard: it does not exist.
        (
            vec!["LUCKYBAG.INFO", &k8_1, "SPREAD", "8"],
            format!("ERR luckybag: shard '{k8_1}' (1 of 8) does not exist"),
        ),
        // A single-slot bag of the same name cannot be shadowed.
        (
            vec!["LUCKYBAG.CREATE", k0, "WINNERS", "6", "SPREAD", "4"],
            "ERR luckybag: bag already exists".into(),
        ),
    ];
    for (args, want) in &cases {
        assert_eq!(&err(&mut c, args), want, "{args:?}");
    }
    assert_eq!(snapshot(&mut c), before, "nothing was written");

    // A missing shard: the fan-outs and the draw fail naming it, before
    // anything is decided.
    run(&mut c, &["RENAME", &format!("{}:meta", k[2]), "saved"]);
    let e = error_text(&bag.info(&mut c).unwrap_err());
    assert!(e.contains(&k[2]), "{e}");
    assert!(
        e.contains("corrupt data"),
        "a shard with data and no record: {e}"
    );
    let e = error_text(&bag.draw(&mut c, &no_wait(Some("x"))).unwrap_err());
    assert!(e.contains(&k[2]), "{e}");
    // Nothing was committed: shard 0 is still drawing, never drawn.
    assert_eq!(
        run(&mut c, &["HGET", &format!("{k0}:meta"), "draw"]),
        "drawing"
    );
    run(&mut c, &["RENAME", "saved", &format!("{}:meta", k[2])]);
    let w = bag.draw(&mut c, &no_wait(Some("x"))).unwrap();
    assert_eq!(w.len(), 5);
}

#[test]
fn luckybag_spread_replicates_and_replays_exactly() {
    let pair = Pair::start();
    let mut m = pair.master.conn();
    let bag = SpreadLuckyBag::new("bag:{rep}", 3);
    bag.create(
        &mut m,
        10,
        &BagOptions {
            poolcap: Some(100),
            ..BagOptions::default()
        },
    )
    .unwrap();
    for u in bag_users(500) {
        bag.join(&mut m, &u, false).unwrap();
    }
    let w = bag
        .draw(
            &mut m,
            &DrawOptions {
                replicas: 1,
                ..DrawOptions::default()
            },
        )
        .unwrap();
    assert_eq!(w.len(), 10);
    pair.assert_equal();

    let mut s = start_aof();
    let mut c = s.conn();
    let bag = SpreadLuckyBag::new("bag:{aof}", 2);
    bag.create(&mut c, 4, &BagOptions::default()).unwrap();
    for u in bag_users(200) {
        bag.join(&mut c, &u, false).unwrap();
    }
    bag.draw(&mut c, &no_wait(None)).unwrap();
    drop(c);
    assert_aof_restart_equal(&mut s);
}

// ---- RANK ----

#[path = "spread/rank.rs"]
mod rank;

// ---- a shard whose record was deleted by hand (issue 24 item 7) ----

/// Shard 0 of a spread entity (`{TAG[slot(B)]}B`, the same key for every
/// count) whose `:meta` record was deleted while its data stayed: a
/// single-slot command on the base key, or a call without `SPREAD n` on
/// the shard key, must refuse it as corrupt instead of creating a
/// single-slot entity beside the spread one (LIKE.ADD) or reading its data
/// without the shard's layout (RANK.TOP read points as 0). Nothing is
/// written.
fn assert_corrupt_shard_zero(c: &mut Connection, family: &str, k0: &str, calls: &[Vec<&str>]) {
    let want = format!("ERR {family}: corrupt data in '{k0}:meta' field 'spread'");
    let before = snapshot(c);
    for args in calls {
        assert_eq!(err(c, args), want, "{args:?}");
        assert_eq!(snapshot(c), before, "{args:?} wrote something");
    }
}

/// The first of `0, 1, …` (as `u<k>`) that belongs to shard 0 of 2.
fn shard_zero_id() -> String {
    (0..100)
        .map(|u| format!("u{u}"))
        .find(|u| routing::shard_of(u.as_bytes(), 2) == 0)
        .unwrap()
}

#[test]
fn like_shard_zero_whose_record_was_deleted_is_refused_as_corrupt() {
    let s = Server::start();
    let mut c = s.conn();
    // The issue's own case.
    let keys = create_like(&mut c, "post:{9}", 2);
    assert_eq!(keys[0], "{9}post:{9}");
    run(&mut c, &["LIKE.ADD", &keys[0], "4", "SPREAD", "2"]);
    run(&mut c, &["LIKE.ADD", &keys[1], "5", "SPREAD", "2"]);
    run(&mut c, &["DEL", &format!("{}:meta", keys[0])]);
    let k0 = keys[0].as_str();
    assert_corrupt_shard_zero(
        &mut c,
        "like",
        k0,
        &[
            vec!["LIKE.ADD", "post:{9}", "5"],
            vec!["LIKE.TOGGLE", "post:{9}", "6"],
            vec!["LIKE.REM", "post:{9}", "4"],
            vec!["LIKE.CHECK", "post:{9}", "4"],
            vec!["LIKE.COUNT", "post:{9}"],
            vec!["LIKE.INFO", "post:{9}"],
            vec!["LIKE.RECENT", "post:{9}"],
            vec!["LIKE.ADD", k0, "6"],
            vec!["LIKE.COUNT", k0],
            vec!["LIKE.ADD", k0, "6", "SPREAD", "2"],
        ],
    );
    // Shard 1 and single-slot posts of other names are not concerned.
    assert_eq!(run(&mut c, &["LIKE.COUNT", &keys[1], "SPREAD", "2"]), "1");
    assert_eq!(run(&mut c, &["LIKE.ADD", "{a}b", "1"]), "[1, 1]");
    assert_eq!(run(&mut c, &["LIKE.ADD", "{a}b", "2"]), "[1, 2]");
}

#[test]
fn rank_shard_zero_whose_record_was_deleted_is_refused_as_corrupt() {
    let s = Server::start();
    let mut c = s.conn();
    let keys = keys_of("week:{7}", 2);
    for k in &keys {
        run(
            &mut c,
            &["RANK.CREATE", k, "TIEBREAK", "NONE", "SPREAD", "2"],
        );
    }
    run(&mut c, &["RANK.ADD", &keys[0], "ann", "50", "SPREAD", "2"]);
    assert_eq!(run(&mut c, &["RANK.TOP", &keys[0], "5"]), "[ann, 50]");
    run(&mut c, &["DEL", &format!("{}:meta", keys[0])]);
    let k0 = keys[0].as_str();
    // RANK.TOP on the shard read the TIEBREAK NONE score 50 as points 0.
    assert_corrupt_shard_zero(
        &mut c,
        "rank",
        k0,
        &[
            vec!["RANK.TOP", k0, "5"],
            vec!["RANK.AROUND", k0, "ann", "1"],
            vec!["RANK.GET", k0, "ann"],
            vec!["RANK.ADD", k0, "bob", "3"],
            vec!["RANK.TOP", "week:{7}", "5"],
            vec!["RANK.AROUND", "week:{7}", "ann", "1"],
            vec!["RANK.ADD", "week:{7}", "bob", "3"],
            vec!["RANK.COUNT", "week:{7}"],
            vec!["RANK.CREATE", "week:{7}"],
        ],
    );
    assert_eq!(run(&mut c, &["RANK.ADD", "{a}w", "x", "5"]), "5");
    assert_eq!(run(&mut c, &["RANK.TOP", "{a}w", "5"]), "[x, 5]");
}

#[test]
fn poll_and_luckybag_shard_zero_whose_record_was_deleted_is_refused_as_corrupt() {
    let s = Server::start();
    let mut c = s.conn();
    let id = shard_zero_id();
    let keys = keys_of("poll:{5}", 2);
    for k in &keys {
        run(&mut c, &["POLL.CREATE", k, "SPREAD", "2"]);
    }
    run(&mut c, &["POLL.VOTE", &keys[0], &id, "a", "SPREAD", "2"]);
    run(&mut c, &["DEL", &format!("{}:meta", keys[0])]);
    let k0 = keys[0].as_str();
    assert_corrupt_shard_zero(
        &mut c,
        "poll",
        k0,
        &[
            vec!["POLL.VOTE", "poll:{5}", "v", "a"],
            vec!["POLL.TOP", "poll:{5}"],
            vec!["POLL.CREATE", "poll:{5}"],
            vec!["POLL.VOTE", k0, &id, "b"],
            vec!["POLL.TOP", k0],
        ],
    );

    let keys = keys_of("bag:{3}", 2);
    for k in &keys {
        run(
            &mut c,
            &["LUCKYBAG.CREATE", k, "WINNERS", "2", "SPREAD", "2"],
        );
    }
    run(&mut c, &["LUCKYBAG.JOIN", &keys[0], &id, "SPREAD", "2"]);
    run(&mut c, &["DEL", &format!("{}:meta", keys[0])]);
    let k0 = keys[0].as_str();
    assert_corrupt_shard_zero(
        &mut c,
        "luckybag",
        k0,
        &[
            vec!["LUCKYBAG.JOIN", "bag:{3}", "v"],
            vec!["LUCKYBAG.INFO", "bag:{3}"],
            vec!["LUCKYBAG.JOIN", k0, &id],
            vec!["LUCKYBAG.INFO", k0],
        ],
    );
}

/// A bare hash tag (`{bm}`, `{42}`, `{06S}`) is never a shard key: a
/// shard key's base is never empty. Before, such a key parsed as a shard
/// key of the empty base whenever its tag was its own slot's tag (most 1-
/// and 2-character tags are): every call on it looked for a shard record
/// in its `:meta` (the `{bm}` cost), a stray `spread` field there made a
/// post corrupt, `{06S}` (shard 0 of the empty base) was refused as a
/// corrupt shard from its second write on, and CREATE made a shard of the
/// empty base. In every family: the key is a single-slot entity, and
/// CREATE … SPREAD n refuses it.
#[test]
fn a_bare_hash_tag_is_a_single_slot_key_in_every_family() {
    let s = Server::start();
    let mut c = s.conn();
    let k0 = String::from_utf8(routing::shard_key(b"", 1, 0)).unwrap();
    let k1 = String::from_utf8(routing::shard_key(b"", 3, 1)).unwrap();
    assert_eq!(k0, "{06S}");
    type Scenario<'a> = (&'a str, Vec<Vec<&'a str>>, Vec<&'a str>, &'a str);
    let families: Vec<Scenario> = vec![
        (
            "like",
            vec![vec!["LIKE.ADD", "K", "1"], vec!["LIKE.ADD", "K", "2"]],
            vec!["LIKE.COUNT", "K"],
            "2",
        ),
        (
            "rank",
            vec![
                vec!["RANK.ADD", "K", "x", "5"],
                vec!["RANK.ADD", "K", "y", "6"],
            ],
            vec!["RANK.TOP", "K", "5"],
            "[y, 6, x, 5]",
        ),
        (
            "poll",
            vec![
                vec!["POLL.CREATE", "K"],
                vec!["POLL.VOTE", "K", "v1", "a"],
                vec!["POLL.VOTE", "K", "v2", "a"],
            ],
            vec!["POLL.TOP", "K"],
            "[a, 2]",
        ),
        (
            "luckybag",
            vec![
                vec!["LUCKYBAG.CREATE", "K", "WINNERS", "2"],
                vec!["LUCKYBAG.JOIN", "K", "u1"],
                vec!["LUCKYBAG.JOIN", "K", "u2"],
            ],
            vec!["LUCKYBAG.JOIN", "K", "u1"],
            "[0, 1, 2]",
        ),
    ];
    for (family, writes, read, want) in &families {
        run(&mut c, &["FLUSHALL"]);
        let upper = family.to_uppercase();
        let create = format!("{upper}.CREATE");
        for (k, n) in [(k0.as_str(), "1"), (k1.as_str(), "3"), ("{bm}", "7")] {
            let mut args = vec![create.as_str(), k];
            if *family == "luckybag" {
                args.extend(["WINNERS", "2"]);
            }
            args.extend(["SPREAD", n]);
            assert_eq!(
                err(&mut c, &args),
                format!(
                    "ERR {family}: '{k}' is not a shard key of {n} shards (see docs/spread.md)"
                ),
                "{family} {k}"
            );
        }
        assert!(
            dump_keys(&mut c, "*").is_empty(),
            "{family}: a refused CREATE wrote"
        );
        for k in [k0.as_str(), "{bm}", "{42}"] {
            let with = |args: &Vec<&str>| -> Vec<String> {
                args.iter()
                    .map(|a| {
                        if *a == "K" {
                            k.to_string()
                        } else {
                            a.to_string()
                        }
                    })
                    .collect()
            };
            for w in writes {
                let a = with(w);
                let a: Vec<&str> = a.iter().map(String::as_str).collect();
                run(&mut c, &a);
            }
            let a = with(read);
            let a: Vec<&str> = a.iter().map(String::as_str).collect();
            assert_eq!(run(&mut c, &a), *want, "{family} {k}");
        }
    }
    // A stray `spread` field in `{bm}:meta` is no shard record: the post
    // never reads one.
    run(&mut c, &["FLUSHALL"]);
    run(&mut c, &["HSET", "{bm}:meta", "spread", "garbage"]);
    assert_eq!(run(&mut c, &["LIKE.TOGGLE", "{bm}", "9"]), "[1, 1]");
    assert_eq!(run(&mut c, &["LIKE.CHECK", "{bm}", "9", "8"]), "[1, 0]");
}
