//! docs/migration.md: each recipe run on seed-style data (the keys the
//! designs in SEEDS.md write) against a real server, and the module then
//! answers the same counts, ranks and members as the seed data.
//!
//! The recipes are written here the way an operator's script would run
//! them: bounded batches (`SSCAN`/`ZSCAN`/`ZRANGE` pages, `RANK.IMPORT …
//! COUNT`), the module's own commands, and the live-traffic steps the
//! guide describes (a second pass, a re-check, dual writes) interleaved
//! with "live" writes at the moments that matter.

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashMap};

use common::*;

const NOW: &str = "1767225600000";

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        Value::Okay => "OK".into(),
        other => panic!("expected a string, got {other:?}"),
    }
}

fn items(v: Value) -> Vec<Value> {
    match v {
        Value::Array(a) | Value::Set(a) => a,
        Value::Map(m) => m.into_iter().flat_map(|(k, v)| [k, v]).collect(),
        Value::Nil => Vec::new(),
        other => panic!("expected an array, got {other:?}"),
    }
}

fn strings(c: &mut Connection, args: &[&str]) -> Vec<String> {
    items(cmd(c, args).unwrap()).iter().map(text).collect()
}

fn pairs(c: &mut Connection, args: &[&str]) -> Vec<(String, String)> {
    strings(c, args)
        .chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect()
}

/// One page of `SSCAN`/`ZSCAN`/`HSCAN key cursor COUNT n`: the next cursor
/// and the page's elements.
fn scan_page(
    c: &mut Connection,
    verb: &str,
    key: &str,
    cursor: &str,
    n: usize,
) -> (String, Vec<String>) {
    let mut r = items(cmd(c, &[verb, key, cursor, "COUNT", &n.to_string()]).unwrap());
    let page = items(r.pop().unwrap()).iter().map(text).collect();
    (text(&r[0]), page)
}

/// Every element of a Set, Sorted Set (member, score, …) or Hash, page by
/// page, calling `each` per page.
fn scan_all(
    c: &mut Connection,
    verb: &str,
    key: &str,
    n: usize,
    mut each: impl FnMut(&mut Connection, Vec<String>),
) {
    let mut cursor = "0".to_string();
    loop {
        let (next, page) = scan_page(c, verb, key, &cursor, n);
        each(c, page);
        if next == "0" {
            break;
        }
        cursor = next;
    }
}

// ------------------------------------------------------------------ POLL

/// The seed's MULTI poll: a Set of `user:candidate` ballots, a ZSet board,
/// a Hash `user → ms` of audit. The recipe: POLL.CREATE with the rules,
/// then every ballot replayed with POLL.VOTE (NOW = the audit time) in
/// SSCAN pages, once before and once after the writers switched. A ballot
/// the module already has answers 0, so the second pass only adds the
/// seed's late votes and never counts a voter twice.
#[test]
fn poll_multi_ballots_replayed_by_vote_in_two_passes() {
    let srv = Server::start();
    let mut c = srv.conn();
    let (voters, board, audit) = (
        "seed:poll:7:voters",
        "seed:poll:7:board",
        "seed:poll:7:audit",
    );
    let seed_vote = |c: &mut Connection, user: &str, cand: &str, ms: &str| {
        run(c, &["SADD", voters, &format!("{user}:{cand}")]);
        run(c, &["ZINCRBY", board, "1", cand]);
        run(c, &["HSET", audit, user, ms]);
    };
    for u in 0..300 {
        let user = format!("user:{u}");
        let ms = (1767225000000i64 + u).to_string();
        seed_vote(&mut c, &user, ["go", "rust", "zig"][u as usize % 3], &ms);
        if u % 4 == 0 {
            seed_vote(&mut c, &user, "c", &ms);
        }
    }
    let b = "poll:{7}";
    run(
        &mut c,
        &[
            "POLL.CREATE",
            b,
            "MODE",
            "MULTI",
            "MAXVOTES",
            "2",
            "CANDIDATES",
            "4",
            "go",
            "rust",
            "zig",
            "c",
        ],
    );
    let replay = |c: &mut Connection| -> i64 {
        let mut counted = 0;
        scan_all(c, "SSCAN", voters, 100, |c, page| {
            for ballot in page {
                let (user, cand) = ballot.rsplit_once(':').unwrap();
                let ms = text(&cmd(c, &["HGET", audit, user]).unwrap());
                counted += int(c, &["POLL.VOTE", b, user, cand, "NOW", &ms]);
            }
        });
        counted
    };
    assert_eq!(replay(&mut c), int(&mut c, &["SCARD", voters]));
    // Live traffic: a late vote lands in the seed before the writers
    // switch; after the switch user:900 votes in the module, then votes
    // again there for the candidate of its seed ballot.
    seed_vote(&mut c, "user:900", "zig", "1767225500000");
    assert_eq!(
        int(&mut c, &["POLL.VOTE", b, "user:901", "go", "NOW", NOW]),
        1
    );
    seed_vote(&mut c, "user:902", "rust", "1767225500001");
    assert_eq!(
        int(&mut c, &["POLL.VOTE", b, "user:902", "rust", "NOW", NOW]),
        1
    );
    // The second pass adds only user:900's late ballot.
    assert_eq!(replay(&mut c), 1);

    // The module answers the seed's board (plus user:901's module-only
    // vote), ballot by ballot.
    let mut want: BTreeMap<String, i64> =
        pairs(&mut c, &["ZRANGE", board, "0", "-1", "WITHSCORES"])
            .into_iter()
            .map(|(m, s)| (m, s.parse().unwrap()))
            .collect();
    *want.get_mut("go").unwrap() += 1;
    let got: BTreeMap<String, i64> = pairs(&mut c, &["POLL.TOP", b, "10"])
        .into_iter()
        .map(|(m, s)| (m, s.parse().unwrap()))
        .collect();
    assert_eq!(got, want);
    let info: HashMap<String, String> = pairs(&mut c, &["POLL.INFO", b]).into_iter().collect();
    let ballots = int(&mut c, &["SCARD", voters]) + 1;
    assert_eq!(info["ballots"], ballots.to_string());
    assert_eq!(info["votes"], ballots.to_string());
    for u in [0, 4, 7, 900, 902] {
        let user = format!("user:{u}");
        let mut seed: Vec<String> = strings(&mut c, &["SMEMBERS", voters])
            .into_iter()
            .filter_map(|m| {
                m.rsplit_once(':')
                    .filter(|(u, _)| *u == user)
                    .map(|(_, c)| c.to_string())
            })
            .collect();
        seed.sort();
        let mut module = strings(&mut c, &["POLL.STATUS", b, &user]);
        module.sort();
        assert_eq!(module, seed, "{user}");
    }
    // The audit time came along: a revoke and a re-vote work as for any
    // module ballot.
    assert_eq!(int(&mut c, &["POLL.REVOKE", b, "user:4", "c"]), 1);
    let voted = text(&cmd(&mut c, &["HGET", &format!("{b}:voted"), "user:7:rust"]).unwrap());
    assert_eq!(voted, "rust:1767225000007");
}

/// A ONCE seed keeps only who voted (a Set of users); the candidate comes
/// from the application's database. With it, the same replay rebuilds
/// the board exactly.
#[test]
fn poll_once_voters_replayed_with_candidates_from_the_database() {
    let srv = Server::start();
    let mut c = srv.conn();
    let database: Vec<(&str, &str)> = vec![
        ("ann", "a"),
        ("bob", "a"),
        ("cy", "b"),
        ("di", "a"),
        ("ed", "c"),
    ];
    for (user, cand) in &database {
        run(&mut c, &["SADD", "seed:p1:voters", user]);
        run(&mut c, &["ZINCRBY", "seed:p1:board", "1", cand]);
    }
    let db: HashMap<&str, &str> = database.iter().copied().collect();
    run(&mut c, &["POLL.CREATE", "p1:{x}"]);
    scan_all(&mut c, "SSCAN", "seed:p1:voters", 2, |c, page| {
        for user in page {
            assert_eq!(
                int(
                    c,
                    &["POLL.VOTE", "p1:{x}", &user, db[user.as_str()], "NOW", NOW]
                ),
                1
            );
        }
    });
    assert_eq!(
        strings(&mut c, &["POLL.TOP", "p1:{x}"]),
        strings(
            &mut c,
            &["ZREVRANGE", "seed:p1:board", "0", "-1", "WITHSCORES"]
        )
    );
    for (user, cand) in &database {
        assert_eq!(
            strings(&mut c, &["POLL.STATUS", "p1:{x}", user]),
            vec![cand.to_string()]
        );
        assert_eq!(
            int(&mut c, &["POLL.VOTE", "p1:{x}", user, "b", "NOW", NOW]),
            0
        );
    }
}

// ------------------------------------------------------------------ RANK

/// A board of plain points packed in place by RANK.IMPORT, COUNT members
/// per call: afterwards every member has the same points and the same
/// place as in the seed board (`ZREVRANGE` order, ties included).
#[test]
fn rank_plain_board_imported_in_place_keeps_points_and_places() {
    let srv = Server::start();
    let mut c = srv.conn();
    let board = "game:{1}";
    for i in 0..250 {
        let points = ((i * 37) % 90).to_string();
        run(&mut c, &["ZADD", board, &points, &format!("player{i}")]);
    }
    run(&mut c, &["PEXPIREAT", board, "4102444800000"]);
    let seed = strings(&mut c, &["ZREVRANGE", board, "0", "-1", "WITHSCORES"]);
    let mut calls = 0;
    let mut left = int(&mut c, &["RANK.IMPORT", board, "COUNT", "100", "NOW", NOW]);
    while left > 0 {
        calls += 1;
        assert!(err(&mut c, &["RANK.TOP", board]).contains("being imported"));
        left = int(&mut c, &["RANK.IMPORT", board, "COUNT", "100"]);
    }
    assert_eq!(calls, 2, "250 members at 100 per call");
    assert_eq!(int(&mut c, &["RANK.COUNT", board]), 250);
    assert_eq!(strings(&mut c, &["RANK.TOP", board, "250"]), seed);
    for (place, pair) in seed.chunks(2).enumerate() {
        let got = strings(&mut c, &["RANK.GET", board, &pair[0]]);
        assert_eq!(
            got,
            vec![
                pair[1].clone(),
                place.to_string(),
                NOW[..10].to_string() + "000"
            ]
        );
    }
    assert_eq!(int(&mut c, &["PEXPIRETIME", board]), 4102444800000);
    assert_eq!(
        int(&mut c, &["PEXPIRETIME", &format!("{board}:meta")]),
        4102444800000
    );
    // The board is now a module board: new scores take their time.
    assert_eq!(
        int(
            &mut c,
            &["RANK.INCR", board, "player0", "5", "NOW", "1767225700000"]
        ),
        5
    );
    assert_eq!(int(&mut c, &["EXISTS", &format!("{board}:import")]), 0);
}

/// A board the seed packed its own way (`points × 10^11 + (10^11 − last
/// 11 digits of the ms time)`) is read page by page and re-added with
/// RANK.ADD into a board whose layout keeps 11 digits of milliseconds
/// from the start of the seed's 10^11 ms block: same points, same order.
#[test]
fn rank_seed_packed_board_readded_with_its_times() {
    let srv = Server::start();
    let mut c = srv.conn();
    let block: i64 = 1_767_225_600_000 / 100_000_000_000 * 100_000_000_000;
    let mut achieved = BTreeMap::new();
    for i in 0..120i64 {
        let points = (i * 7) % 25;
        let ms = 1_767_225_600_000 + (i * 7919) % 5000;
        let score = points * 100_000_000_000 + (100_000_000_000 - (ms % 100_000_000_000));
        run(
            &mut c,
            &["ZADD", "seed:board", &score.to_string(), &format!("p{i}")],
        );
        achieved.insert(format!("p{i}"), (points, ms));
    }
    let b = "season:{9}";
    run(
        &mut c,
        &[
            "RANK.CREATE",
            b,
            "UNIT",
            "MS",
            "DIGITS",
            "11",
            "EPOCH",
            &block.to_string(),
            "NOW",
            NOW,
        ],
    );
    scan_all(&mut c, "ZSCAN", "seed:board", 50, |c, page| {
        for p in page.chunks(2) {
            let score: i64 = p[1].parse().unwrap();
            let points = score.div_euclid(100_000_000_000);
            let ms = block + (100_000_000_000 - score.rem_euclid(100_000_000_000));
            assert_eq!(
                int(
                    c,
                    &[
                        "RANK.ADD",
                        b,
                        &p[0],
                        &points.to_string(),
                        "NOW",
                        &ms.to_string()
                    ]
                ),
                points
            );
        }
    });
    let seed: Vec<String> = pairs(
        &mut c,
        &["ZREVRANGE", "seed:board", "0", "-1", "WITHSCORES"],
    )
    .into_iter()
    .flat_map(|(m, s)| [m, (s.parse::<i64>().unwrap() / 100_000_000_000).to_string()])
    .collect();
    assert_eq!(strings(&mut c, &["RANK.TOP", b, "120"]), seed);
    for (m, (points, ms)) in &achieved {
        let got = strings(&mut c, &["RANK.GET", b, m]);
        assert_eq!(
            (got[0].clone(), got[2].clone()),
            (points.to_string(), ms.to_string())
        );
    }
}

// ------------------------------------------------------------------ LIKE

/// A Set of likers moved with LIKE.ADD page by page while the writers
/// dual-write (seed first, then the module): after each page the batch is
/// re-checked against the seed and users who left it meanwhile are taken
/// back with LIKE.REM, so an unlike racing the copy is not lost. The
/// post crosses the promotion threshold on the way.
#[test]
fn like_set_moved_by_add_with_a_recheck_under_dual_writes() {
    let srv = Server::start();
    let mut c = srv.conn();
    let seed = "seed:post:9:likers";
    let b = "post:{9}";
    for id in (0..3000).filter(|i| i % 7 != 3) {
        run(&mut c, &["SADD", seed, &id.to_string()]);
    }
    let mut raced = false;
    let mut cursor = "0".to_string();
    loop {
        let (next, page) = scan_page(&mut c, "SSCAN", seed, &cursor, 200);
        if !raced && page.len() > 2 {
            // A dual-writing client unlikes a user of this page after the
            // page was read and before it is copied (SREM, then LIKE.REM),
            // and another likes a user the copy has not seen yet.
            run(&mut c, &["SREM", seed, &page[1]]);
            run(&mut c, &["LIKE.REM", b, &page[1]]);
            run(&mut c, &["SADD", seed, "5000"]);
            run(&mut c, &["LIKE.ADD", b, "5000"]);
            raced = true;
        }
        for user in &page {
            cmd(&mut c, &["LIKE.ADD", b, user]).unwrap();
        }
        if !page.is_empty() {
            let mut args = vec!["SMISMEMBER", seed];
            args.extend(page.iter().map(String::as_str));
            let still = items(cmd(&mut c, &args).unwrap());
            for (user, v) in page.iter().zip(still) {
                if v == Value::Int(0) {
                    cmd(&mut c, &["LIKE.REM", b, user]).unwrap();
                }
            }
        }
        if next == "0" {
            break;
        }
        cursor = next;
    }
    assert!(raced);
    assert_eq!(
        int(&mut c, &["LIKE.COUNT", b]),
        int(&mut c, &["SCARD", seed])
    );
    let ids: Vec<String> = (0..5010).map(|i| i.to_string()).collect();
    for chunk in ids.chunks(500) {
        let mut a = vec!["LIKE.CHECK", b];
        a.extend(chunk.iter().map(String::as_str));
        let mut s = vec!["SMISMEMBER", seed];
        s.extend(chunk.iter().map(String::as_str));
        assert_eq!(cmd(&mut c, &a).unwrap(), cmd(&mut c, &s).unwrap());
    }
    let info: HashMap<String, String> = pairs(&mut c, &["LIKE.INFO", b]).into_iter().collect();
    assert_ne!(
        info["encoding"], "set",
        "2,500 dense likers start moving to chunks: {info:?}"
    );
}

/// The seed's hot-post form: N bitmap shards `praise:post:<id>:shard_<n>`
/// written at bit `userId` for `n = userId mod N`. Their set bits are read
/// 8 KB at a time (GETRANGE) and added with LIKE.ADD.
#[test]
fn like_sharded_bitmaps_read_in_ranges_and_added() {
    let srv = Server::start();
    let mut c = srv.conn();
    let shards = 8u64;
    let likers: BTreeSet<u64> = (0..40_000u64)
        .filter(|u| u % 13 == 0 || u % 29 == 1)
        .collect();
    for u in &likers {
        run(
            &mut c,
            &[
                "SETBIT",
                &format!("praise:post:5:shard_{}", u % shards),
                &u.to_string(),
                "1",
            ],
        );
    }
    let b = "post:{5}";
    for n in 0..shards {
        let key = format!("praise:post:5:shard_{n}");
        let len = int(&mut c, &["STRLEN", &key]) as u64;
        let mut at = 0;
        while at < len {
            let end = (at + 8192).min(len) - 1;
            let bytes: Vec<u8> = redis::cmd("GETRANGE")
                .arg(&key)
                .arg(at)
                .arg(end)
                .query(&mut c)
                .unwrap();
            for (i, byte) in bytes.iter().enumerate() {
                for bit in 0..8 {
                    if byte & (0x80 >> bit) != 0 {
                        let user = (at + i as u64) * 8 + bit;
                        cmd(&mut c, &["LIKE.ADD", b, &user.to_string()]).unwrap();
                    }
                }
            }
            at = end + 1;
        }
    }
    let total: i64 = (0..shards)
        .map(|n| int(&mut c, &["BITCOUNT", &format!("praise:post:5:shard_{n}")]))
        .sum();
    assert_eq!(int(&mut c, &["LIKE.COUNT", b]), total);
    assert_eq!(total as usize, likers.len());
    let probe: Vec<String> = (0..40_000u64).step_by(7).map(|u| u.to_string()).collect();
    for chunk in probe.chunks(500) {
        let mut a = vec!["LIKE.CHECK", b];
        a.extend(chunk.iter().map(String::as_str));
        let got: Vec<bool> = items(cmd(&mut c, &a).unwrap())
            .into_iter()
            .map(|v| v == Value::Int(1))
            .collect();
        let want: Vec<bool> = chunk
            .iter()
            .map(|u| likers.contains(&u.parse().unwrap()))
            .collect();
        assert_eq!(got, want);
    }
}

// ------------------------------------------------------------- REDPACKET

/// An open seed packet (a List pool of shares, a Hash of who grabbed what)
/// moved into the module's public keys in one MULTI/EXEC while its grabs
/// are paused: the pool is renamed (O(1)), `key:meta` written with the
/// running total, `key:grabbed` copied. The module then continues it:
/// earlier grabbers get ALREADY and their share, the next grab pops the
/// seed's next share, and the money adds up.
#[test]
fn redpacket_open_packet_moved_into_the_module_keys() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(
        &mut c,
        &[
            "RPUSH",
            "seed:rp:{5}:pool",
            "250",
            "150",
            "300",
            "200",
            "100",
        ],
    );
    // Two grabs on the seed: LPOP and a record of who grabbed.
    for user in ["alice", "bob"] {
        let share = text(&cmd(&mut c, &["LPOP", "seed:rp:{5}:pool"]).unwrap());
        run(&mut c, &["HSET", "seed:rp:{5}:grabbed", user, &share]);
    }
    let (total, count) = (1000, 5);
    // Grabs paused: read the running total page by page, then move.
    let mut left = 0i64;
    let len = int(&mut c, &["LLEN", "seed:rp:{5}:pool"]);
    for start in (0..len).step_by(2) {
        for s in strings(
            &mut c,
            &[
                "LRANGE",
                "seed:rp:{5}:pool",
                &start.to_string(),
                &(start + 1).to_string(),
            ],
        ) {
            left += s.parse::<i64>().unwrap();
        }
    }
    let grabbed = pairs(&mut c, &["HGETALL", "seed:rp:{5}:grabbed"]);
    run(&mut c, &["MULTI"]);
    run(
        &mut c,
        &[
            "HSET",
            "rp:{5}:meta",
            "expires",
            "0",
            "left_cents",
            &left.to_string(),
            "state",
            "open",
            "total",
            &total.to_string(),
            "count",
            &count.to_string(),
        ],
    );
    for (user, cents) in &grabbed {
        run(&mut c, &["HSET", "rp:{5}:grabbed", user, cents]);
    }
    run(&mut c, &["RENAME", "seed:rp:{5}:pool", "rp:{5}:pool"]);
    run(&mut c, &["DEL", "seed:rp:{5}:grabbed"]);
    run(&mut c, &["EXEC"]);

    let info: HashMap<String, String> = pairs(&mut c, &["REDPACKET.INFO", "rp:{5}"])
        .into_iter()
        .collect();
    assert_eq!(info["total"], "1000");
    assert_eq!(info["count"], "5");
    assert_eq!(info["left_cents"], "600");
    assert_eq!(info["left_count"], "3");
    assert_eq!(info["state"], "open");
    assert_eq!(
        strings(&mut c, &["REDPACKET.GRAB", "rp:{5}", "alice"]),
        vec!["ALREADY", "250"]
    );
    assert_eq!(
        strings(&mut c, &["REDPACKET.GRAB", "rp:{5}", "carol"]),
        vec!["OK", "300"]
    );
    assert_eq!(
        strings(&mut c, &["REDPACKET.GRAB", "rp:{5}", "dave"]),
        vec!["OK", "200"]
    );
    assert_eq!(int(&mut c, &["REDPACKET.REFUND", "rp:{5}"]), 100);
    let shares: i64 = pairs(&mut c, &["REDPACKET.GRABBED", "rp:{5}"])
        .iter()
        .map(|(_, v)| v.parse::<i64>().unwrap())
        .sum();
    assert_eq!(shares + 100, total);
}

// -------------------------------------------------------------- LUCKYBAG

/// The seed's 16 candidate shards (`lb:candidate:<activity>:<shard>`,
/// scores r in [0, 1), -2 task pending, -1 left with the score kept in
/// `lb:candidate:stored:<activity>:<user>`) re-joined shard by shard:
/// JOIN (TASK PENDING for -2), then LEAVE for -1. Scores are drawn again
/// (a lottery ticket carries no value before the draw); who is in, who is
/// pending and who is out of the room come along.
#[test]
fn luckybag_seed_shards_rejoined_with_their_states() {
    let srv = Server::start();
    let mut c = srv.conn();
    let mut state: BTreeMap<String, &str> = BTreeMap::new();
    for u in 0..400u64 {
        let user = u.to_string();
        let shard = format!("lb:candidate:act1:{}", u & 15);
        let (score, s) = match u % 10 {
            0 => ("-2", "pending"),
            1 => {
                run(
                    &mut c,
                    &["SET", &format!("lb:candidate:stored:act1:{u}"), "0.5"],
                );
                ("-1", "left")
            }
            _ => ("0.25", "in"),
        };
        run(&mut c, &["ZADD", &shard, score, &user]);
        state.insert(user, s);
    }
    run(&mut c, &["SET", "lb:count:act1", "400"]);
    let b = "bag:{act1}";
    run(
        &mut c,
        &["LUCKYBAG.CREATE", b, "WINNERS", "20", "SHARDS", "16"],
    );
    for shard in 0..16 {
        scan_all(
            &mut c,
            "ZSCAN",
            &format!("lb:candidate:act1:{shard}"),
            10,
            |c, page| {
                for p in page.chunks(2) {
                    let (user, score) = (&p[0], p[1].as_str());
                    let pending = score == "-2";
                    let mut join = vec!["LUCKYBAG.JOIN", b, user];
                    if pending {
                        join.extend(["TASK", "PENDING"]);
                    }
                    let new = items(cmd(c, &join).unwrap())[0].clone();
                    if new == Value::Int(1) && score == "-1" {
                        assert_eq!(int(c, &["LUCKYBAG.LEAVE", b, user]), 1);
                    }
                }
            },
        );
    }
    let info: HashMap<String, String> = pairs(&mut c, &["LUCKYBAG.INFO", b]).into_iter().collect();
    assert_eq!(
        info["participants"],
        text(&cmd(&mut c, &["GET", "lb:count:act1"]).unwrap())
    );
    assert_eq!(info["pooled"], "400");
    for (user, s) in &state {
        assert_eq!(
            text(&cmd(&mut c, &["LUCKYBAG.RESULT", b, user]).unwrap()),
            "PENDING"
        );
        let want = if *s == "pending" { 1 } else { 0 };
        assert_eq!(int(&mut c, &["LUCKYBAG.TASK", b, user]), want, "{user} {s}");
    }
    // The pending users just finished their task; the ones who left are
    // still out of the room, until they come back.
    assert_eq!(int(&mut c, &["LUCKYBAG.ENTER", b, "1"]), 1);
    let winners = pairs(&mut c, &["LUCKYBAG.DRAW", b]);
    assert_eq!(winners.len(), 20);
    for (user, _) in &winners {
        assert!(
            state[user] != "left" || user.as_str() == "1",
            "{user} left the room and cannot win"
        );
    }
}

// ------------------------------------------------------------------ RATE

/// Limiter state lives for one period: a new key starts fresh, and the
/// seed's current usage is carried with one RATE.CHECK … COST <used>
/// (capped at the limit), so nobody gets twice the limit at the switch.
#[test]
fn rate_fixed_window_usage_carried_with_cost() {
    let srv = Server::start();
    let mut c = srv.conn();
    // The seed: INCR + EXPIRE per window; 3 of 5 used, and an abuser at 7.
    for _ in 0..3 {
        run(&mut c, &["INCR", "seed:rl:u1"]);
    }
    run(&mut c, &["SET", "seed:rl:u2", "7"]);
    for (seed, key, left) in [("seed:rl:u1", "rl:{u1}", 2), ("seed:rl:u2", "rl:{u2}", 0)] {
        let used: i64 = text(&cmd(&mut c, &["GET", seed]).unwrap()).parse().unwrap();
        let cost = used.min(5).to_string();
        let r = strings(
            &mut c,
            &[
                "RATE.CHECK",
                key,
                "5",
                "60000",
                "ALGO",
                "FIXED",
                "COST",
                &cost,
                "NOW",
                NOW,
            ],
        );
        assert_eq!(r[0], "1");
        assert_eq!(r[2], left.to_string());
        for _ in 0..left {
            assert_eq!(
                strings(
                    &mut c,
                    &["RATE.CHECK", key, "5", "60000", "ALGO", "FIXED", "NOW", NOW]
                )[0],
                "1"
            );
        }
        assert_eq!(
            strings(
                &mut c,
                &["RATE.CHECK", key, "5", "60000", "ALGO", "FIXED", "NOW", NOW]
            )[0],
            "0"
        );
    }
}

// ------------------------------------------------------------------ LOCK

/// A lock cannot be moved while held; the module refuses the seed's own
/// key (a bare token string) instead of sharing it, so the switch uses a
/// new name, and a client of the switch period holds both.
#[test]
fn lock_seed_key_refused_and_both_held_during_the_switch() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(
        &mut c,
        &["SET", "lock:order:1", "uuid-old", "NX", "PX", "30000"],
    );
    assert!(
        err(&mut c, &["LOCK.ACQUIRE", "lock:order:1", "me", "10000"])
            .starts_with("ERR lock: corrupt data")
    );
    // A client of the switch period: the seed's lock first, then the
    // module's. While an old client holds the seed lock, it gets neither.
    let new_client = |c: &mut Connection, owner: &str| -> Option<i64> {
        if cmd(c, &["SET", "lock:order:1", owner, "NX", "PX", "30000"]).unwrap() == Value::Nil {
            return None;
        }
        match cmd(c, &["LOCK.ACQUIRE", "lk:order:1", owner, "30000"]).unwrap() {
            Value::Int(t) => Some(t),
            _ => {
                run(c, &["DEL", "lock:order:1"]);
                None
            }
        }
    };
    assert_eq!(new_client(&mut c, "me"), None);
    run(&mut c, &["DEL", "lock:order:1"]); // the old holder's compare-and-delete
    let token = new_client(&mut c, "me").expect("both locks");
    assert_eq!(new_client(&mut c, "you"), None);
    assert_eq!(
        int(&mut c, &["LOCK.CHECK", "lk:order:1", &token.to_string()]),
        1
    );
}

// ---------------------------------------------------------------- DELAYQ

/// A seed delay queue (a ZSet member → due time) moved page by page, the
/// lowest due first: DELAYQ.ADD with the member as id and payload and
/// AT the due time, then ZREM from the seed. ADD is idempotent on the id,
/// so a move interrupted between the two is simply run again.
#[test]
fn delayq_seed_zset_moved_with_add_at_due_time() {
    let srv = Server::start();
    let mut c = srv.conn();
    let now: i64 = NOW.parse().unwrap();
    for i in 0..25i64 {
        run(
            &mut c,
            &[
                "ZADD",
                "seed:dq",
                &(now - 5000 + i * 1000).to_string(),
                &format!("job-{i}"),
            ],
        );
    }
    let seed = pairs(&mut c, &["ZRANGE", "seed:dq", "0", "-1", "WITHSCORES"]);
    let b = "dq:{jobs}";
    // A move that stopped between ADD and ZREM is run again: the id is
    // refused as a duplicate and only removed from the seed.
    assert_eq!(
        int(
            &mut c,
            &[
                "DELAYQ.ADD",
                b,
                "job-0",
                "job-0",
                "AT",
                &(now - 5000).to_string(),
                "NOW",
                NOW
            ]
        ),
        1
    );
    loop {
        let page = pairs(&mut c, &["ZRANGE", "seed:dq", "0", "9", "WITHSCORES"]);
        if page.is_empty() {
            break;
        }
        for (member, due) in page {
            cmd(
                &mut c,
                &["DELAYQ.ADD", b, &member, &member, "AT", &due, "NOW", NOW],
            )
            .unwrap();
            run(&mut c, &["ZREM", "seed:dq", &member]);
        }
    }
    let info: HashMap<String, String> = pairs(&mut c, &["DELAYQ.INFO", b, "NOW", NOW])
        .into_iter()
        .collect();
    assert_eq!(info["jobs"], "25");
    assert_eq!(info["ready"], "6", "due at or before NOW");
    let polled = strings(
        &mut c,
        &["DELAYQ.POLL", b, "60000", "COUNT", "100", "NOW", NOW],
    );
    let ids: Vec<&str> = polled.chunks(4).map(|j| j[0].as_str()).collect();
    let due: Vec<&str> = seed
        .iter()
        .filter(|(_, d)| d.parse::<i64>().unwrap() <= now)
        .map(|(m, _)| m.as_str())
        .collect();
    assert_eq!(ids, due);
    assert!(polled.chunks(4).all(|j| j[0] == j[1]));
}
