//! RANK on a real server: ties, negative points, exact-range errors, GT/LT,
//! INCR, AROUND edges, paging, MERGE, TTL, bad input, replication, AOF/RDB.

use crate::common;

use common::*;

const T0: i64 = 1_700_000_000_000;

fn now(ms: i64) -> String {
    ms.to_string()
}

fn add(c: &mut Connection, b: &str, m: &str, p: i64, at: i64) -> String {
    run(c, &["RANK.ADD", b, m, &p.to_string(), "NOW", &now(at)])
}

fn cmd_value(c: &mut Connection, args: &[&str]) -> Value {
    cmd(c, args).unwrap()
}

fn exists(c: &mut Connection, k: &str) -> i64 {
    int(c, &["EXISTS", k])
}

#[test]
fn ties_go_to_the_earlier_achiever_not_the_member_name() {
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(add(&mut c, "b", "zed", 10, T0), "10");
    assert_eq!(add(&mut c, "b", "abe", 10, T0 + 5_000), "10");
    assert_eq!(add(&mut c, "b", "mid", 10, T0 + 2_000), "10");
    assert_eq!(add(&mut c, "b", "top", 11, T0 + 9_000), "11");
    assert_eq!(
        run(&mut c, &["RANK.TOP", "b"]),
        "[top, 11, zed, 10, mid, 10, abe, 10]"
    );
    // The board is a plain Sorted Set already in leaderboard order.
    assert_eq!(
        run(&mut c, &["ZREVRANGE", "b", "0", "-1"]),
        "[top, zed, mid, abe]"
    );

    assert_eq!(
        run(&mut c, &["RANK.CREATE", "late", "TIEBREAK", "LATER"]),
        "OK"
    );
    add(&mut c, "late", "zed", 10, T0);
    add(&mut c, "late", "abe", 10, T0 + 5_000);
    assert_eq!(run(&mut c, &["RANK.TOP", "late"]), "[abe, 10, zed, 10]");

    // NONE keeps no time: equal points fall back to Redis's member order.
    assert_eq!(
        run(&mut c, &["RANK.CREATE", "none", "TIEBREAK", "none"]),
        "OK"
    );
    add(&mut c, "none", "abe", 10, T0);
    add(&mut c, "none", "zed", 10, T0 + 5_000);
    assert_eq!(run(&mut c, &["RANK.TOP", "none"]), "[zed, 10, abe, 10]");
    assert_eq!(run(&mut c, &["ZSCORE", "none", "zed"]), "10");
    assert_eq!(run(&mut c, &["RANK.GET", "none", "abe"]), "[10, 1, nil]");
    assert_eq!(
        run(&mut c, &["HGETALL", "none:meta"]),
        "[layout, NONE S 0 0]"
    );
}

#[test]
fn milliseconds_and_epoch_layouts_order_and_report_time() {
    let s = Server::start();
    let mut c = s.conn();
    let cmd_ = [
        "RANK.CREATE",
        "b",
        "UNIT",
        "MS",
        "DIGITS",
        "9",
        "EPOCH",
        &now(T0),
        "NOW",
        &now(T0 + 1),
    ];
    assert_eq!(run(&mut c, &cmd_), "OK");
    add(&mut c, "b", "x", 3, T0 + 20);
    add(&mut c, "b", "y", 3, T0 + 19);
    assert_eq!(run(&mut c, &["RANK.TOP", "b"]), "[y, 3, x, 3]");
    assert_eq!(
        run(&mut c, &["RANK.GET", "b", "x"]),
        format!("[3, 1, {}]", T0 + 20)
    );
    // Seconds round down to the second.
    add(&mut c, "d", "x", 1, T0 + 1_999);
    assert_eq!(
        run(&mut c, &["RANK.GET", "d", "x"]),
        format!("[1, 0, {}]", T0 + 1_000)
    );
}

#[test]
fn negative_points_rank_below_zero_and_decode_exactly() {
    let s = Server::start();
    let mut c = s.conn();
    add(&mut c, "b", "neg", -5, T0);
    add(&mut c, "b", "zero", 0, T0 + 9_000);
    add(&mut c, "b", "minus1", -1, T0);
    add(&mut c, "b", "floor", -900_718, T0 + 1_000);
    assert_eq!(
        run(&mut c, &["RANK.TOP", "b"]),
        "[zero, 0, minus1, -1, neg, -5, floor, -900718]"
    );
    assert_eq!(
        run(&mut c, &["RANK.GET", "b", "neg"]),
        format!("[-5, 2, {T0}]")
    );
    assert_eq!(
        run(&mut c, &["RANK.GET", "b", "floor"]),
        format!("[-900718, 3, {}]", T0 + 1_000)
    );
    assert_eq!(
        run(&mut c, &["RANK.INCR", "b", "neg", "7", "NOW", &now(T0)]),
        "2"
    );
}

#[test]
fn points_beyond_exact_range_are_refused_with_nothing_written() {
    let s = Server::start();
    let mut c = s.conn();
    let e = "ERR rank: points out of exact range (max +/-900718)";
    assert_eq!(add(&mut c, "b", "x", 900_718, T0), "900718");
    assert_eq!(err(&mut c, &["RANK.ADD", "b", "y", "900719"]), e);
    assert_eq!(err(&mut c, &["RANK.ADD", "b", "y", "-900719"]), e);
    assert_eq!(
        err(&mut c, &["RANK.ADD", "b", "y", "9223372036854775807"]),
        e
    );
    assert_eq!(err(&mut c, &["RANK.INCR", "b", "x", "1"]), e);
    assert_eq!(
        err(&mut c, &["RANK.INCR", "b", "x", "9223372036854775807"]),
        e
    );
    assert_eq!(
        err(&mut c, &["RANK.ADD", "b", "y", "9223372036854775808"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(int(&mut c, &["RANK.COUNT", "b"]), 1);
    assert_eq!(
        run(&mut c, &["RANK.GET", "b", "x"]),
        format!("[900718, 0, {T0}]")
    );
    // Nothing at all for a board that did not exist.
    assert_eq!(err(&mut c, &["RANK.ADD", "fresh", "y", "900719"]), e);
    assert_eq!(exists(&mut c, "fresh"), 0);

    // The limit follows the layout.
    run(&mut c, &["RANK.CREATE", "ms", "UNIT", "MS", "DIGITS", "13"]);
    assert_eq!(
        err(&mut c, &["RANK.ADD", "ms", "y", "900"]),
        "ERR rank: points out of exact range (max +/-899)"
    );
    run(&mut c, &["RANK.CREATE", "plain", "TIEBREAK", "NONE"]);
    assert_eq!(
        int(&mut c, &["RANK.ADD", "plain", "y", "9007199254740991"]),
        9_007_199_254_740_991
    );
    assert_eq!(
        err(&mut c, &["RANK.ADD", "plain", "y", "9007199254740992"]),
        "ERR rank: points out of exact range (max +/-9007199254740991)"
    );
    assert_eq!(
        int(&mut c, &["RANK.INCR", "plain", "y", "-18014398509481982"]),
        -9_007_199_254_740_991
    );
}

#[test]
fn timestamps_outside_the_layout_are_refused() {
    let s = Server::start();
    let mut c = s.conn();
    let e = "ERR rank: timestamp out of range";
    run(
        &mut c,
        &[
            "RANK.CREATE",
            "b",
            "EPOCH",
            &now(T0),
            "DIGITS",
            "3",
            "NOW",
            &now(T0),
        ],
    );
    assert_eq!(
        err(&mut c, &["RANK.ADD", "b", "x", "1", "NOW", &now(T0 - 1)]),
        e
    );
    assert_eq!(
        err(
            &mut c,
            &["RANK.ADD", "b", "x", "1", "NOW", &now(T0 + 1_000_000)]
        ),
        e
    );
    assert_eq!(
        err(
            &mut c,
            &["RANK.INCR", "b", "x", "1", "NOW", &now(T0 + 1_000_000)]
        ),
        e
    );
    assert_eq!(
        int(
            &mut c,
            &["RANK.ADD", "b", "x", "1", "NOW", &now(T0 + 999_999)]
        ),
        1
    );
    assert_eq!(exists(&mut c, "b"), 1);
    // A layout that cannot hold the current time is refused at CREATE.
    assert_eq!(
        err(&mut c, &["RANK.CREATE", "c", "UNIT", "MS", "DIGITS", "12"]),
        e
    );
    assert_eq!(err(&mut c, &["RANK.CREATE", "c", "DIGITS", "9"]), e);
    assert_eq!(
        err(&mut c, &["RANK.CREATE", "c", "EPOCH", "9000000000000000"]),
        e
    );
    assert_eq!(exists(&mut c, "c:meta"), 0);
    assert_eq!(
        run(&mut c, &["RANK.CREATE", "c", "UNIT", "MS", "DIGITS", "13"]),
        "OK"
    );
    // And a board of the default layout holds the clock.
    assert_eq!(int(&mut c, &["RANK.ADD", "d", "x", "1"]), 1);
}

#[test]
fn create_refuses_an_existing_board() {
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(run(&mut c, &["RANK.CREATE", "b"]), "OK");
    assert_eq!(
        err(&mut c, &["RANK.CREATE", "b"]),
        "ERR rank: board already exists"
    );
    add(&mut c, "used", "x", 1, T0);
    assert_eq!(
        err(&mut c, &["RANK.CREATE", "used", "TIEBREAK", "LATER"]),
        "ERR rank: board already exists"
    );
    assert_eq!(exists(&mut c, "used:meta"), 0);
}

#[test]
fn add_gt_lt_and_same_points_keep_the_original_time() {
    let s = Server::start();
    let mut c = s.conn();
    add(&mut c, "b", "x", 10, T0);
    assert_eq!(add(&mut c, "b", "x", 10, T0 + 60_000), "10");
    assert_eq!(
        run(&mut c, &["RANK.GET", "b", "x"]),
        format!("[10, 0, {T0}]")
    );
    assert_eq!(
        run(
            &mut c,
            &["RANK.ADD", "b", "x", "5", "GT", "NOW", &now(T0 + 1_000)]
        ),
        "10"
    );
    assert_eq!(
        run(
            &mut c,
            &["RANK.ADD", "b", "x", "15", "gt", "NOW", &now(T0 + 2_000)]
        ),
        "15"
    );
    assert_eq!(
        run(&mut c, &["RANK.GET", "b", "x"]),
        format!("[15, 0, {}]", T0 + 2_000)
    );
    assert_eq!(
        run(
            &mut c,
            &["RANK.ADD", "b", "x", "20", "LT", "NOW", &now(T0 + 3_000)]
        ),
        "15"
    );
    assert_eq!(
        run(
            &mut c,
            &["RANK.ADD", "b", "x", "12", "LT", "NOW", &now(T0 + 4_000)]
        ),
        "12"
    );
    assert_eq!(
        run(
            &mut c,
            &["RANK.ADD", "b", "new", "-3", "GT", "NOW", &now(T0)]
        ),
        "-3"
    );
    // Plain ADD may lower.
    assert_eq!(add(&mut c, "b", "x", 1, T0 + 5_000), "1");
    assert_eq!(
        run(&mut c, &["RANK.GET", "b", "x"]),
        format!("[1, 0, {}]", T0 + 5_000)
    );
}

#[test]
fn incr_adds_and_moves_the_achievement_time() {
    let s = Server::start();
    let mut c = s.conn();
    add(&mut c, "b", "a", 10, T0);
    add(&mut c, "b", "b", 7, T0 + 1_000);
    assert_eq!(
        run(
            &mut c,
            &["RANK.INCR", "b", "b", "3", "NOW", &now(T0 + 2_000)]
        ),
        "10"
    );
    // b reached 10 later than a did.
    assert_eq!(run(&mut c, &["RANK.TOP", "b"]), "[a, 10, b, 10]");
    assert_eq!(
        run(&mut c, &["RANK.GET", "b", "b"]),
        format!("[10, 1, {}]", T0 + 2_000)
    );
    assert_eq!(
        run(&mut c, &["RANK.INCR", "b", "new", "-4", "NOW", &now(T0)]),
        "-4"
    );
    assert_eq!(
        run(
            &mut c,
            &["RANK.INCR", "b", "a", "0", "NOW", &now(T0 + 3_000)]
        ),
        "10"
    );
    assert_eq!(run(&mut c, &["RANK.TOP", "b", "2"]), "[b, 10, a, 10]");
}

#[test]
fn get_top_count_and_rem() {
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(run(&mut c, &["RANK.GET", "b", "x"]), "nil");
    assert_eq!(run(&mut c, &["RANK.TOP", "b"]), "[]");
    assert_eq!(int(&mut c, &["RANK.COUNT", "b"]), 0);
    for i in 0..15 {
        add(&mut c, "b", &format!("m{i:02}"), i, T0);
    }
    assert_eq!(int(&mut c, &["RANK.COUNT", "b"]), 15);
    let top = run(&mut c, &["RANK.TOP", "b"]);
    assert!(
        top.starts_with("[m14, 14, m13, 13") && top.ends_with("m05, 5]"),
        "{top}"
    );
    assert_eq!(run(&mut c, &["RANK.TOP", "b", "0"]), "[]");
    assert_eq!(
        run(&mut c, &["RANK.GET", "b", "m10"]),
        format!("[10, 4, {T0}]")
    );
    assert_eq!(int(&mut c, &["RANK.REM", "b", "m14", "m13", "nobody"]), 2);
    assert_eq!(int(&mut c, &["RANK.REM", "b", "m14"]), 0);
    assert_eq!(run(&mut c, &["RANK.TOP", "b", "2"]), "[m12, 12, m11, 11]");
    let all: Vec<String> = (0..13).map(|i| format!("m{i:02}")).collect();
    let mut args = vec!["RANK.REM", "b"];
    args.extend(all.iter().map(|s| s.as_str()));
    assert_eq!(int(&mut c, &args), 13);
    assert_eq!(exists(&mut c, "b"), 0);
}

#[test]
fn paging_with_offset_matches_zrevrange_near_and_far() {
    let s = Server::start();
    let mut c = s.conn();
    let mut z = redis::cmd("ZADD");
    z.arg("b");
    for i in 0..3000i64 {
        // Packed default-layout scores: points i, time T0 (t = T0 / 1000).
        let packed = i * 10_000_000_000 + (10_000_000_000 - 1 - T0 / 1000);
        z.arg(packed).arg(format!("m{i}"));
    }
    let _: i64 = z.query(&mut c).unwrap();
    for (count, offset) in [
        (3, 0),
        (5, 3),
        (10, 1024),
        (7, 1025),
        (5, 2000),
        (50, 2990),
        (5, 3000),
        (5, 9999),
    ] {
        let got = run(
            &mut c,
            &[
                "RANK.TOP",
                "b",
                &count.to_string(),
                "OFFSET",
                &offset.to_string(),
            ],
        );
        let stop = (offset + count - 1).to_string();
        let want: Vec<String> = redis::cmd("ZREVRANGE")
            .arg("b")
            .arg(offset)
            .arg(&stop)
            .query(&mut c)
            .unwrap();
        let want: Vec<String> = want
            .iter()
            .flat_map(|m| [m.clone(), m.trim_start_matches('m').to_string()])
            .collect();
        assert_eq!(
            got,
            format!("[{}]", want.join(", ")),
            "TOP {count} OFFSET {offset}"
        );
    }
    assert_eq!(
        run(&mut c, &["RANK.TOP", "b", "OFFSET", "2998"]),
        "[m1, 1, m0, 0]"
    );
    assert_eq!(
        run(
            &mut c,
            &["RANK.TOP", "b", "2", "OFFSET", "1", "OFFSET", "0"]
        ),
        "[m2999, 2999, m2998, 2998]"
    );
}

#[test]
fn around_at_the_top_middle_and_bottom() {
    let s = Server::start();
    let mut c = s.conn();
    for i in 0..6 {
        add(&mut c, "b", &format!("p{i}"), 100 - i, T0);
    }
    assert_eq!(
        run(&mut c, &["RANK.AROUND", "b", "p0", "2"]),
        "[0, p0, 100, 1, p1, 99, 2, p2, 98]"
    );
    assert_eq!(
        run(&mut c, &["RANK.AROUND", "b", "p3", "1"]),
        "[2, p2, 98, 3, p3, 97, 4, p4, 96]"
    );
    assert_eq!(
        run(&mut c, &["RANK.AROUND", "b", "p5", "2"]),
        "[3, p3, 97, 4, p4, 96, 5, p5, 95]"
    );
    assert_eq!(run(&mut c, &["RANK.AROUND", "b", "p5", "0"]), "[5, p5, 95]");
    let all = run(&mut c, &["RANK.AROUND", "b", "p2", "1000"]);
    assert!(
        all.starts_with("[0, p0, 100") && all.ends_with("5, p5, 95]"),
        "{all}"
    );
    // n is bounded (rank-range-max, 1000 by default): no AROUND walks a
    // whole board.
    assert_eq!(
        err(&mut c, &["RANK.AROUND", "b", "p2", "9223372036854775807"]),
        "ERR rank: n must be at most 1000 (rank-range-max)"
    );
    run(&mut c, &["CONFIG", "SET", "hotpath.rank-range-max", "2"]);
    assert_eq!(
        err(&mut c, &["RANK.AROUND", "b", "p2", "3"]),
        "ERR rank: n must be at most 2 (rank-range-max)"
    );
    assert_eq!(
        err(&mut c, &["RANK.TOP", "b", "3"]),
        "ERR rank: count must be at most 2 (rank-range-max)"
    );
    assert_eq!(
        run(&mut c, &["RANK.TOP", "b", "2", "OFFSET", "4"]),
        "[p4, 96, p5, 95]"
    );
    run(&mut c, &["CONFIG", "SET", "hotpath.rank-range-max", "1000"]);
    assert_eq!(run(&mut c, &["RANK.AROUND", "b", "nobody", "2"]), "nil");
    assert_eq!(run(&mut c, &["RANK.AROUND", "missing", "p0", "2"]), "nil");
}

#[test]
fn merge_sums_or_keeps_the_best_across_boards_and_layouts() {
    let s = Server::start();
    let mut c = s.conn();
    add(&mut c, "w1", "a", 10, T0);
    add(&mut c, "w1", "b", 5, T0 + 1_000);
    add(&mut c, "w2", "a", 3, T0 + 9_000);
    add(&mut c, "w2", "c", 8, T0 + 2_000);
    run(&mut c, &["RANK.CREATE", "w3", "UNIT", "MS", "DIGITS", "13"]);
    add(&mut c, "w3", "b", 9, T0 + 500);
    assert_eq!(
        int(&mut c, &["RANK.MERGE", "total", "3", "w1", "w2", "w3"]),
        3
    );
    assert_eq!(run(&mut c, &["RANK.TOP", "total"]), "[b, 14, a, 13, c, 8]");
    assert_eq!(
        run(&mut c, &["RANK.GET", "total", "a"]),
        format!("[13, 1, {}]", T0 + 9_000)
    );
    assert_eq!(
        run(&mut c, &["RANK.GET", "total", "b"]),
        format!("[14, 0, {}]", T0 + 1_000)
    );

    assert_eq!(
        int(
            &mut c,
            &[
                "RANK.MERGE",
                "best",
                "3",
                "w1",
                "w2",
                "w3",
                "AGGREGATE",
                "max"
            ]
        ),
        3
    );
    assert_eq!(run(&mut c, &["RANK.TOP", "best"]), "[a, 10, b, 9, c, 8]");
    // MAX breaks equal points by the destination's tiebreak.
    add(&mut c, "x1", "a", 10, T0 + 5_000);
    add(&mut c, "x2", "a", 10, T0);
    run(
        &mut c,
        &["RANK.MERGE", "bx", "2", "x1", "x2", "AGGREGATE", "MAX"],
    );
    assert_eq!(
        run(&mut c, &["RANK.GET", "bx", "a"]),
        format!("[10, 0, {T0}]")
    );

    // The destination is replaced, unless it is also a source.
    assert_eq!(int(&mut c, &["RANK.MERGE", "total", "1", "w2"]), 2);
    assert_eq!(run(&mut c, &["RANK.TOP", "total"]), "[c, 8, a, 3]");
    assert_eq!(int(&mut c, &["RANK.MERGE", "total", "2", "total", "w2"]), 2);
    assert_eq!(run(&mut c, &["RANK.TOP", "total"]), "[c, 16, a, 6]");
    // Empty sources leave no destination.
    assert_eq!(int(&mut c, &["RANK.MERGE", "total", "1", "nothing"]), 0);
    assert_eq!(exists(&mut c, "total"), 0);

    // A result the destination's layout cannot hold writes nothing.
    run(
        &mut c,
        &["RANK.CREATE", "small", "UNIT", "MS", "DIGITS", "13"],
    );
    add(&mut c, "big", "z", 900, T0);
    add(&mut c, "small", "keep", 1, T0);
    assert_eq!(
        err(&mut c, &["RANK.MERGE", "small", "1", "big"]),
        "ERR rank: points out of exact range (max +/-899)"
    );
    assert_eq!(run(&mut c, &["RANK.TOP", "small"]), "[keep, 1]");
    // A NONE source has no time: its entries count as achieved at NOW.
    run(&mut c, &["RANK.CREATE", "plain", "TIEBREAK", "NONE"]);
    add(&mut c, "plain", "p", 4, T0);
    run(
        &mut c,
        &[
            "RANK.MERGE",
            "fromplain",
            "1",
            "plain",
            "NOW",
            &now(T0 + 7_000),
        ],
    );
    assert_eq!(
        run(&mut c, &["RANK.GET", "fromplain", "p"]),
        format!("[4, 0, {}]", T0 + 7_000)
    );
}

#[test]
fn ttl_lands_on_every_key_of_the_board() {
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(run(&mut c, &["RANK.CREATE", "b", "TTL", "100"]), "OK");
    let meta_at = int(&mut c, &["PEXPIRETIME", "b:meta"]);
    assert!(meta_at > 0);
    add(&mut c, "b", "x", 1, T0);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "b"]), meta_at);
    // The board emptied and created again takes the same instant.
    run(&mut c, &["RANK.REM", "b", "x"]);
    run(&mut c, &["RANK.INCR", "b", "y", "1"]);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "b"]), meta_at);
    // MERGE TTL sets destination and its meta; without TTL the destination
    // takes its meta's expiry.
    run(&mut c, &["RANK.CREATE", "d"]);
    run(&mut c, &["RANK.MERGE", "d", "1", "b", "TTL", "50"]);
    let d_at = int(&mut c, &["PEXPIRETIME", "d"]);
    assert!(d_at > 0 && d_at < meta_at);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "d:meta"]), d_at);
    run(&mut c, &["RANK.MERGE", "d", "1", "b"]);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "d"]), d_at);
    // No TTL anywhere without one.
    add(&mut c, "plain", "x", 1, T0);
    assert_eq!(int(&mut c, &["PTTL", "plain"]), -1);
    // Keys really go.
    run(&mut c, &["RANK.CREATE", "short", "TTL", "1"]);
    add(&mut c, "short", "x", 1, T0);
    std::thread::sleep(std::time::Duration::from_millis(1_200));
    assert_eq!(int(&mut c, &["EXISTS", "short", "short:meta"]), 0);
}

fn wrong_type_keys(c: &mut Connection) {
    run(c, &["SET", "str", "v"]);
    run(c, &["HSET", "hb", "f", "v"]);
    run(c, &["SET", "sm:meta", "v"]);
    run(c, &["ZADD", "sm", "1", "x"]);
}

#[test]
fn bad_input_is_refused_with_nothing_written() {
    let s = Server::start();
    let mut c = s.conn();
    add(&mut c, "b", "x", 5, T0);
    run(&mut c, &["RANK.CREATE", "cb", "TTL", "100"]);
    wrong_type_keys(&mut c);
    let before = dump_keys(&mut c, "*");
    let arity = |n: &str| format!("ERR wrong number of arguments for '{n}' command");
    let syntax = "ERR syntax error";
    let not_int = "ERR value is not an integer or out of range";
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["RANK.CREATE"], arity("rank.create")),
        (vec!["RANK.CREATE", "n", "TIEBREAK"], syntax.into()),
        (vec!["RANK.CREATE", "n", "TIEBREAK", "FIRST"], syntax.into()),
        (vec!["RANK.CREATE", "n", "UNIT", "H"], syntax.into()),
        (vec!["RANK.CREATE", "n", "DIGITS", "16"], not_int.into()),
        (vec!["RANK.CREATE", "n", "DIGITS", "x"], not_int.into()),
        (vec!["RANK.CREATE", "n", "EPOCH", "-1"], not_int.into()),
        (vec!["RANK.CREATE", "n", "TTL", "0"], not_int.into()),
        (vec!["RANK.CREATE", "n", "NOW", "1.5"], not_int.into()),
        (vec!["RANK.CREATE", "n", "BOGUS"], syntax.into()),
        (vec!["RANK.CREATE", "str"], wrongtype.into()),
        (vec!["RANK.CREATE", "sm"], wrongtype.into()),
        (vec!["RANK.ADD", "b", "x"], arity("rank.add")),
        (vec!["RANK.ADD", "b", "x", "1.5"], not_int.into()),
        (vec!["RANK.ADD", "b", "x", " 1"], not_int.into()),
        (vec!["RANK.ADD", "b", "x", "01"], not_int.into()),
        (vec!["RANK.ADD", "b", "x", "1", "GT", "LT"], syntax.into()),
        (vec!["RANK.ADD", "b", "x", "1", "NX"], syntax.into()),
        (vec!["RANK.ADD", "b", "x", "1", "NOW"], syntax.into()),
        (vec!["RANK.ADD", "b", "x", "1", "NOW", "-1"], not_int.into()),
        (
            vec!["RANK.ADD", "b", "x", "1", "NOW", "9007199254740992"],
            not_int.into(),
        ),
        (vec!["RANK.ADD", "str", "x", "1"], wrongtype.into()),
        (vec!["RANK.ADD", "sm", "x", "1"], wrongtype.into()),
        (vec!["RANK.INCR", "b", "x"], arity("rank.incr")),
        (vec!["RANK.INCR", "b", "x", "a"], not_int.into()),
        (vec!["RANK.INCR", "b", "x", "1", "GT"], syntax.into()),
        (vec!["RANK.INCR", "str", "x", "1"], wrongtype.into()),
        (vec!["RANK.INCR", "sm", "x", "1"], wrongtype.into()),
        (vec!["RANK.GET", "b"], arity("rank.get")),
        (vec!["RANK.GET", "b", "x", "y"], arity("rank.get")),
        (vec!["RANK.GET", "str", "x"], wrongtype.into()),
        (vec!["RANK.GET", "sm", "x"], wrongtype.into()),
        (vec!["RANK.TOP"], arity("rank.top")),
        (vec!["RANK.TOP", "b", "-1"], not_int.into()),
        (vec!["RANK.TOP", "b", "x"], not_int.into()),
        (vec!["RANK.TOP", "b", "1", "2"], syntax.into()),
        (vec!["RANK.TOP", "b", "OFFSET"], syntax.into()),
        (vec!["RANK.TOP", "b", "OFFSET", "-1"], not_int.into()),
        (vec!["RANK.TOP", "hb"], wrongtype.into()),
        (vec!["RANK.AROUND", "b", "x"], arity("rank.around")),
        (vec!["RANK.AROUND", "b", "x", "-1"], not_int.into()),
        (vec!["RANK.AROUND", "str", "x", "1"], wrongtype.into()),
        (vec!["RANK.REM", "b"], arity("rank.rem")),
        (vec!["RANK.REM", "str", "x"], wrongtype.into()),
        (vec!["RANK.COUNT"], arity("rank.count")),
        (vec!["RANK.COUNT", "hb"], wrongtype.into()),
        (vec!["RANK.MERGE", "d", "1"], arity("rank.merge")),
        (vec!["RANK.MERGE", "d", "0", "b"], not_int.into()),
        (vec!["RANK.MERGE", "d", "x", "b"], not_int.into()),
        (vec!["RANK.MERGE", "d", "3", "b", "b"], syntax.into()),
        (
            vec!["RANK.MERGE", "d", "1", "b", "AGGREGATE", "MIN"],
            syntax.into(),
        ),
        (
            vec!["RANK.MERGE", "d", "1", "b", "WEIGHTS", "2"],
            syntax.into(),
        ),
        (
            vec!["RANK.MERGE", "d", "1", "b", "TTL", "-5"],
            not_int.into(),
        ),
        (vec!["RANK.MERGE", "d", "2", "b", "str"], wrongtype.into()),
        (vec!["RANK.MERGE", "d", "2", "b", "sm"], wrongtype.into()),
        (vec!["RANK.MERGE", "str", "1", "b"], wrongtype.into()),
        (vec!["RANK.MERGE", "sm", "1", "b"], wrongtype.into()),
        (vec!["RANK.MERGE", "b", "1", "hb"], wrongtype.into()),
    ];
    for (args, want) in &cases {
        assert_eq!(&err(&mut c, args), want, "{args:?}");
    }
    // A corrupt layout is reported with its key and field, not guessed.
    for bad in [
        "EARLIER S 99 0",
        "EARLIER S 10",
        "earlier S 10 0",
        "",
        "EARLIER S 10 0 IMPORT x",
        "EARLIER S 10 0 1 2",
    ] {
        run(&mut c, &["HSET", "bad:meta", "layout", bad]);
        assert_eq!(
            err(&mut c, &["RANK.ADD", "bad", "x", "1"]),
            "ERR rank: corrupt data in 'bad:meta' field 'layout'",
            "{bad:?}"
        );
    }
    run(&mut c, &["DEL", "bad:meta"]);
    assert_eq!(dump_keys(&mut c, "*"), before);
    // The server is alive and the data untouched.
    assert_eq!(
        run(&mut c, &["RANK.GET", "b", "x"]),
        format!("[5, 0, {T0}]")
    );
}

#[test]
fn merge_reports_its_keys() {
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(
        run(
            &mut c,
            &[
                "COMMAND",
                "GETKEYS",
                "RANK.MERGE",
                "d",
                "2",
                "a",
                "b",
                "AGGREGATE",
                "MAX"
            ]
        ),
        "[d, a, b]"
    );
    assert_eq!(
        run(&mut c, &["COMMAND", "GETKEYS", "RANK.ADD", "b", "m", "1"]),
        "[b]"
    );
}

#[test]
fn concurrent_incr_loses_nothing() {
    let s = Server::start();
    let threads: Vec<_> = (0..4)
        .map(|t| {
            let mut c = s.conn();
            std::thread::spawn(move || {
                for i in 0..250 {
                    int(&mut c, &["RANK.INCR", "b", "shared", "2"]);
                    int(&mut c, &["RANK.INCR", "b", &format!("t{t}"), "1"]);
                    if i % 50 == 0 {
                        run(&mut c, &["RANK.TOP", "b", "3"]);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let mut c = s.conn();
    assert_eq!(
        run(&mut c, &["RANK.GET", "b", "shared"])
            .split(", ")
            .next()
            .unwrap(),
        "[2000"
    );
    assert_eq!(int(&mut c, &["RANK.COUNT", "b"]), 5);
}

#[test]
fn counters_and_keyspace_events() {
    let s = Server::start();
    let mut c = s.conn();
    run(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEd"]);
    let mut sub = s.conn();
    let mut ps = sub.as_pubsub();
    ps.psubscribe("__keyspace@0__:b").unwrap();
    add(&mut c, "b", "x", 1, T0);
    add(&mut c, "b", "x", 1, T0);
    let _ = err(&mut c, &["RANK.ADD", "b", "x", "999999999"]);
    run(&mut c, &["RANK.REM", "b", "x"]);
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    for want in [
        "rank_updates:1",
        "rank_kept:1",
        "rank_refused:1",
        "rank_removed:1",
    ] {
        assert!(info.contains(want), "{want} in {info}");
    }
    ps.set_read_timeout(Some(std::time::Duration::from_secs(2)))
        .unwrap();
    let m: String = ps.get_message().unwrap().get_payload().unwrap();
    assert_eq!(m, "hotpath.rank.add");
}

/// Every write command, using the server clock (no NOW) so replicas and
/// AOF replay must get the master's values, not their own.
fn every_write(c: &mut Connection) {
    run(
        c,
        &[
            "RANK.CREATE",
            "b",
            "TTL",
            "1000",
            "UNIT",
            "MS",
            "DIGITS",
            "13",
        ],
    );
    run(c, &["RANK.CREATE", "late", "TIEBREAK", "LATER"]);
    for i in 0..20 {
        assert!(!run(
            c,
            &["RANK.ADD", "b", &format!("m{i}"), &(i % 7).to_string()]
        )
        .starts_with("ERR"));
        run(
            c,
            &["RANK.ADD", "late", &format!("m{i}"), &(i % 3).to_string()],
        );
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    run(c, &["RANK.ADD", "b", "m1", "50", "GT"]);
    run(c, &["RANK.ADD", "b", "m2", "-1", "LT"]);
    run(c, &["RANK.INCR", "b", "m3", "4"]);
    run(c, &["RANK.INCR", "fresh", "z", "4"]);
    run(c, &["RANK.REM", "b", "m4", "m5"]);
    assert_eq!(
        int(c, &["RANK.MERGE", "sum", "2", "b", "late", "TTL", "500"]),
        20
    );
    run(
        c,
        &["RANK.MERGE", "max", "2", "b", "late", "AGGREGATE", "MAX"],
    );
    run(c, &["RANK.MERGE", "b", "2", "b", "late"]);
}

#[test]
fn replica_ends_identical_to_master() {
    let p = Pair::start();
    let mut c = p.master.conn();
    every_write(&mut c);
    p.assert_equal();
    let mut r = p.replica.conn();
    assert_eq!(dump_keys(&mut r, "*"), dump_keys(&mut c, "*"));
    for k in ["b", "b:meta", "sum"] {
        assert_eq!(
            int(&mut r, &["PEXPIRETIME", k]),
            int(&mut c, &["PEXPIRETIME", k]),
            "{k}"
        );
    }
}

#[test]
fn aof_restart_and_rdb_reload_end_identical() {
    let mut s = start_aof();
    let mut c = s.conn();
    every_write(&mut c);
    let before = dump_keys(&mut c, "*");
    let at = int(&mut c, &["PEXPIRETIME", "b"]);
    assert_aof_restart_equal(&mut s);
    let mut c = s.conn();
    assert_eq!(dump_keys(&mut c, "*"), before);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "b"]), at);
    assert_rdb_reload_equal(&s);
}

/// A one-node cluster that owns every slot: cluster rules (hash tags,
/// CROSSSLOT, key extraction through MERGE's getkeys-api) without a
/// three-node setup.
fn one_node_cluster() -> Server {
    let s = Server::start_with(&["--cluster-enabled", "yes"]);
    let mut c = s.conn();
    run(&mut c, &["CLUSTER", "ADDSLOTSRANGE", "0", "16383"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !run(&mut c, &["CLUSTER", "INFO"]).contains("cluster_state:ok") {
        assert!(
            std::time::Instant::now() < deadline,
            "cluster never became ok"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    s
}

#[test]
fn cluster_mode_needs_hash_tags_and_one_slot_for_merge() {
    let s = one_node_cluster();
    let mut c = s.conn();
    let e = "ERR rank: base key needs a {hash tag} in cluster mode";
    assert_eq!(err(&mut c, &["RANK.ADD", "plain", "x", "1"]), e);
    assert_eq!(err(&mut c, &["RANK.CREATE", "plain"]), e);
    assert_eq!(exists(&mut c, "plain"), 0);
    assert_eq!(run(&mut c, &["RANK.CREATE", "w1:{s1}"]), "OK");
    assert_eq!(add(&mut c, "w1:{s1}", "a", 3, T0), "3");
    assert_eq!(add(&mut c, "w2:{s1}", "a", 4, T0), "4");
    assert_eq!(
        int(
            &mut c,
            &["RANK.MERGE", "all:{s1}", "2", "w1:{s1}", "w2:{s1}"]
        ),
        1
    );
    assert_eq!(
        run(&mut c, &["RANK.GET", "all:{s1}", "a"]),
        format!("[7, 0, {T0}]")
    );
    let cross = err(&mut c, &["RANK.MERGE", "all:{s1}", "1", "w:{other}"]);
    assert!(cross.starts_with("CROSSSLOT"), "{cross}");
    assert_eq!(run(&mut c, &["RANK.TOP", "all:{s1}"]), "[a, 7]");
    // IMPORT derives `B:import` and `B:meta`: it needs the hash tag too.
    run(&mut c, &["ZADD", "seed", "5", "x"]);
    assert_eq!(err(&mut c, &["RANK.IMPORT", "seed"]), e);
    run(&mut c, &["ZADD", "seed:{s2}", "5", "x", "6", "y"]);
    assert_eq!(int(&mut c, &["RANK.IMPORT", "seed:{s2}", "COUNT", "1"]), 1);
    assert_eq!(int(&mut c, &["RANK.IMPORT", "seed:{s2}"]), 0);
    assert_eq!(run(&mut c, &["RANK.TOP", "seed:{s2}"]), "[y, 6, x, 5]");
    // A MERGE large enough to run in slices works in cluster mode.
    let mut q = redis::cmd("ZADD");
    q.arg("big:{s1}");
    for i in 0..50_000 {
        q.arg(i).arg(format!("m{i}"));
    }
    let _: () = q.query(&mut c).unwrap();
    run(&mut c, &["HSET", "big:{s1}:meta", "layout", "NONE S 0 0"]);
    run(&mut c, &["RANK.CREATE", "bigsum:{s1}", "TIEBREAK", "NONE"]);
    assert_eq!(
        int(
            &mut c,
            &["RANK.MERGE", "bigsum:{s1}", "2", "big:{s1}", "big:{s1}"]
        ),
        50_000
    );
    assert_eq!(
        run(&mut c, &["RANK.GET", "bigsum:{s1}", "m49999"]),
        "[99998, 0, nil]"
    );
}

#[test]
fn writes_leave_a_watched_meta_untouched() {
    let s = Server::start();
    let mut c = s.conn();
    let mut w = s.conn();
    run(&mut c, &["RANK.CREATE", "b"]);
    run(&mut w, &["WATCH", "b:meta"]);
    add(&mut c, "b", "x", 1, T0);
    run(&mut c, &["RANK.INCR", "b", "x", "1", "NOW", &now(T0)]);
    run(&mut w, &["MULTI"]);
    run(&mut w, &["SET", "k", "v"]);
    assert_eq!(run(&mut w, &["EXEC"]), "[OK]");
    // The board itself is signalled, as ZADD would be.
    run(&mut w, &["WATCH", "b"]);
    add(&mut c, "b", "y", 1, T0);
    run(&mut w, &["MULTI"]);
    run(&mut w, &["SET", "k", "v"]);
    assert_eq!(run(&mut w, &["EXEC"]), "nil");
}

#[test]
fn a_kept_value_leaves_a_watched_board_untouched() {
    let s = Server::start();
    let mut c = s.conn();
    let mut w = s.conn();
    add(&mut c, "b", "x", 10, T0);
    run(&mut w, &["WATCH", "b"]);
    add(&mut c, "b", "x", 10, T0 + 1_000);
    run(&mut c, &["RANK.ADD", "b", "x", "5", "GT"]);
    run(&mut w, &["MULTI"]);
    run(&mut w, &["SET", "k", "v"]);
    assert_eq!(run(&mut w, &["EXEC"]), "[OK]");
}

/// Every key with its absolute expiry (`PEXPIRETIME`, -1 for none), sorted.
fn expiries(c: &mut Connection) -> Vec<(String, i64)> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let at = int(c, &["PEXPIRETIME", &k]);
            (k, at)
        })
        .collect()
}

#[test]
fn scores_the_module_never_writes_are_refused_naming_the_member() {
    let s = Server::start();
    let mut c = s.conn();
    add(&mut c, "b", "ok", 5, T0);
    run(&mut c, &["ZADD", "b", "1.5", "frac", "1e300", "huge"]);
    let before = dump_keys(&mut c, "*");
    let want = |m: &str| format!("ERR rank: corrupt data in 'b' field '{m}'");
    assert_eq!(err(&mut c, &["RANK.ADD", "b", "frac", "3"]), want("frac"));
    assert_eq!(
        err(&mut c, &["RANK.ADD", "b", "frac", "3", "GT"]),
        want("frac")
    );
    assert_eq!(err(&mut c, &["RANK.INCR", "b", "huge", "1"]), want("huge"));
    assert_eq!(err(&mut c, &["RANK.GET", "b", "frac"]), want("frac"));
    assert_eq!(err(&mut c, &["RANK.TOP", "b"]), want("huge"));
    assert_eq!(err(&mut c, &["RANK.AROUND", "b", "ok", "1"]), want("huge"));
    let e = err(&mut c, &["RANK.MERGE", "d", "1", "b"]);
    assert!(e == want("frac") || e == want("huge"), "{e}");
    assert_eq!(dump_keys(&mut c, "*"), before);
    // Members with scores the module wrote are unaffected.
    assert_eq!(
        run(&mut c, &["RANK.GET", "b", "ok"]),
        format!("[5, 1, {T0}]")
    );
    assert_eq!(run(&mut c, &["RANK.INCR", "b", "ok", "1"]), "6");
}

#[test]
fn empty_members_are_refused_like_empty_users_everywhere() {
    let s = Server::start();
    let mut c = s.conn();
    let want = "ERR rank: user must not be empty";
    assert_eq!(err(&mut c, &["RANK.ADD", "b", "", "1"]), want);
    assert_eq!(err(&mut c, &["RANK.INCR", "b", "", "1"]), want);
    assert_eq!(err(&mut c, &["RANK.GET", "b", ""]), want);
    assert_eq!(err(&mut c, &["RANK.AROUND", "b", "", "1"]), want);
    assert_eq!(err(&mut c, &["RANK.REM", "b", "x", ""]), want);
    assert_eq!(int(&mut c, &["DBSIZE"]), 0);
}

#[test]
fn merge_checks_every_type_before_any_layout() {
    let s = Server::start();
    let mut c = s.conn();
    const WT: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
    run(&mut c, &["HSET", "d:meta", "layout", "garbage"]);
    add(&mut c, "a", "x", 1, T0);
    run(&mut c, &["SET", "s", "x"]);
    assert_eq!(err(&mut c, &["RANK.MERGE", "d", "2", "a", "s"]), WT);
    run(&mut c, &["DEL", "s"]);
    run(&mut c, &["SET", "s:meta", "x"]);
    assert_eq!(err(&mut c, &["RANK.MERGE", "d", "2", "a", "s"]), WT);
    run(&mut c, &["DEL", "s:meta"]);
    assert_eq!(
        err(&mut c, &["RANK.MERGE", "d", "2", "a", "s"]),
        "ERR rank: corrupt data in 'd:meta' field 'layout'"
    );
}

#[test]
fn import_packs_a_plain_board_in_place_a_batch_per_call() {
    let s = Server::start();
    let mut c = s.conn();
    // The seed design: points written with ZADD, no B:meta.
    for (m, p) in [
        ("zed", 10),
        ("abe", 10),
        ("kim", 7),
        ("neg", -3),
        ("nil", 0),
    ] {
        run(&mut c, &["ZADD", "seed", &p.to_string(), m]);
    }
    run(&mut c, &["PEXPIRE", "seed", "5000000"]);
    let at = int(&mut c, &["PEXPIRETIME", "seed"]);
    // Read without import, the scores are not packed: the board would
    // answer zeros. IMPORT packs it, two members per call here.
    let t = T0 + 60_000;
    assert_eq!(
        int(
            &mut c,
            &["RANK.IMPORT", "seed", "COUNT", "2", "NOW", &now(t)]
        ),
        3
    );
    // While the import runs, the board is refused rather than misread.
    let busy = "ERR rank: board is being imported (call RANK.IMPORT until it replies 0)";
    assert_eq!(err(&mut c, &["RANK.TOP", "seed"]), busy);
    assert_eq!(err(&mut c, &["RANK.ADD", "seed", "x", "1"]), busy);
    assert_eq!(err(&mut c, &["RANK.COUNT", "seed"]), busy);
    assert_eq!(
        err(&mut c, &["RANK.IMPORT", "seed", "TIEBREAK", "LATER"]),
        "ERR rank: import in progress: only COUNT may be given"
    );
    assert_eq!(int(&mut c, &["RANK.IMPORT", "seed", "COUNT", "2"]), 1);
    assert_eq!(int(&mut c, &["RANK.IMPORT", "seed"]), 0);
    assert_eq!(int(&mut c, &["EXISTS", "seed:import"]), 0);
    assert_eq!(
        run(&mut c, &["HGET", "seed:meta", "layout"]),
        "EARLIER S 10 0"
    );
    // Every member keeps its points, achieved at the import's time; equal
    // points keep Redis's member order.
    assert_eq!(
        run(&mut c, &["RANK.TOP", "seed"]),
        "[zed, 10, abe, 10, kim, 7, nil, 0, neg, -3]"
    );
    assert_eq!(
        run(&mut c, &["RANK.GET", "seed", "kim"]),
        format!("[7, 2, {t}]")
    );
    // The board kept its expiry, on both keys.
    assert_eq!(int(&mut c, &["PEXPIRETIME", "seed"]), at);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "seed:meta"]), at);
    // Done: a second import is refused, a missing board imports nothing.
    assert_eq!(
        err(&mut c, &["RANK.IMPORT", "seed"]),
        "ERR rank: board already exists"
    );
    assert_eq!(int(&mut c, &["RANK.IMPORT", "nothing"]), 0);
    assert_eq!(int(&mut c, &["EXISTS", "nothing", "nothing:meta"]), 0);
}

#[test]
fn import_refuses_what_it_cannot_pack_with_nothing_written() {
    let s = Server::start();
    let mut c = s.conn();
    run(&mut c, &["ZADD", "p", "1", "a", "2.5", "b", "3", "c"]);
    let before = dump_keys(&mut c, "*");
    // The first batch is checked before the board moves.
    assert_eq!(
        err(&mut c, &["RANK.IMPORT", "p"]),
        "ERR rank: corrupt data in 'p' field 'b'"
    );
    assert_eq!(dump_keys(&mut c, "*"), before);
    run(&mut c, &["ZADD", "p", "2", "b", "900719", "big"]);
    assert_eq!(
        err(&mut c, &["RANK.IMPORT", "p"]),
        "ERR rank: points out of exact range (max +/-900718)"
    );
    // A later batch that fails leaves the import where it was; fixed by
    // hand, it goes on.
    assert_eq!(int(&mut c, &["RANK.IMPORT", "p", "COUNT", "2"]), 2);
    let middle = dump_keys(&mut c, "*");
    run(&mut c, &["ZADD", "p:import", "7.5", "c"]);
    assert_eq!(
        err(&mut c, &["RANK.IMPORT", "p", "COUNT", "2"]),
        "ERR rank: corrupt data in 'p:import' field 'c'"
    );
    run(&mut c, &["ZADD", "p:import", "3", "c"]);
    run(&mut c, &["ZREM", "p:import", "big"]);
    assert_eq!(int(&mut c, &["RANK.IMPORT", "p", "COUNT", "2"]), 0);
    assert_ne!(dump_keys(&mut c, "*"), middle);
    assert_eq!(run(&mut c, &["RANK.TOP", "p"]).split(", ").count(), 6);
    assert_eq!(
        err(&mut c, &["RANK.IMPORT", "q", "COUNT", "1001"]),
        "ERR rank: COUNT must be at most 1000 (rank-range-max)"
    );
}

/// Writes that create keys of a board with an expiry at different times.
fn expiring_boards(c: &mut Connection) {
    run(c, &["RANK.CREATE", "e", "TTL", "5000"]);
    run(c, &["RANK.ADD", "e", "a", "3"]);
    run(c, &["RANK.REM", "e", "a"]);
    run(c, &["RANK.INCR", "e", "b", "2"]);
    run(c, &["RANK.CREATE", "f", "TIEBREAK", "LATER"]);
    run(c, &["RANK.ADD", "f", "x", "1"]);
    run(c, &["RANK.MERGE", "g", "2", "e", "f", "TTL", "4000"]);
    run(c, &["ZADD", "s", "4", "p", "5", "q"]);
    run(c, &["PEXPIRE", "s", "3000000"]);
    run(c, &["RANK.IMPORT", "s", "COUNT", "1"]);
    run(c, &["RANK.IMPORT", "s", "COUNT", "1"]);
}

#[test]
fn every_key_of_a_board_expires_at_one_instant_everywhere() {
    let pair = Pair::start();
    let mut m = pair.master.conn();
    expiring_boards(&mut m);
    let on_master = expiries(&mut m);
    let at = |k: &str| on_master.iter().find(|(n, _)| n == k).unwrap().1;
    for (board, keys) in [
        ("e", &["e", "e:meta"][..]),
        ("g", &["g"]),
        ("s", &["s", "s:meta"]),
    ] {
        for k in keys {
            assert!(at(k) > 0, "{k}: {on_master:?}");
            assert_eq!(at(k), at(board), "{k}");
        }
    }
    pair.assert_equal();
    let mut r = pair.replica.conn();
    assert_eq!(expiries(&mut r), on_master);

    let mut aof = start_aof();
    let mut a = aof.conn();
    expiring_boards(&mut a);
    let before = expiries(&mut a);
    assert_aof_restart_equal(&mut aof);
    let mut a = aof.conn();
    assert_eq!(expiries(&mut a), before);
    assert_rdb_reload_equal(&aof);
    let mut a = aof.conn();
    assert_eq!(expiries(&mut a), before);
}

fn fill(c: &mut Connection, key: &str, n: usize, score: impl Fn(usize) -> i64) {
    for start in (0..n).step_by(1000) {
        let mut q = redis::cmd("ZADD");
        q.arg(key);
        for i in start..(start + 1000).min(n) {
            q.arg(score(i)).arg(format!("m{i}"));
        }
        let _: () = q.query(c).unwrap();
    }
}

#[test]
fn a_large_merge_runs_in_slices_and_replicates_exactly() {
    let pair = Pair::start();
    let mut c = pair.master.conn();
    let scale = 10_000_000_000i64;
    fill(&mut c, "a", 150_000, |i| (i as i64 % 1000) * scale + 5);
    fill(&mut c, "b", 150_000, |i| (i as i64 % 10) * scale + 7);
    run(&mut c, &["RANK.CREATE", "d", "TTL", "9000"]);
    assert_eq!(int(&mut c, &["RANK.MERGE", "d", "2", "a", "b"]), 150_000);
    assert_eq!(int(&mut c, &["ZCARD", "d"]), 150_000);
    assert_eq!(int(&mut c, &["EXISTS", "d:merging"]), 0);
    // SUM: points add up.
    let got = run(&mut c, &["RANK.GET", "d", "m12345"]);
    assert!(got.starts_with(&format!("[{}, ", 345 + 5)), "{got}");
    assert_eq!(
        int(&mut c, &["PEXPIRETIME", "d"]),
        int(&mut c, &["PEXPIRETIME", "d:meta"])
    );
    pair.assert_equal();
    let mut r = pair.replica.conn();
    assert_eq!(expiries(&mut r), expiries(&mut c));
}

#[test]
fn a_second_merge_into_a_board_being_merged_is_refused() {
    let s = Server::start();
    let mut c = s.conn();
    fill(&mut c, "a", 400_000, |i| i as i64);
    run(&mut c, &["RANK.CREATE", "n", "TIEBREAK", "NONE"]);
    run(&mut c, &["RANK.CREATE", "d", "TIEBREAK", "NONE"]);
    run(&mut c, &["HSET", "a:meta", "layout", "NONE S 0 0"]);
    // The first MERGE blocks its own client; a second client sees it busy
    // (or, on a fast machine, runs after it).
    let mut a = s.conn();
    let mut b = s.conn();
    let t = std::thread::spawn(move || {
        redis::cmd("RANK.MERGE")
            .arg("d")
            .arg(1)
            .arg("a")
            .query::<i64>(&mut a)
    });
    std::thread::sleep(std::time::Duration::from_millis(30));
    let second = redis::cmd("RANK.MERGE")
        .arg("d")
        .arg(1)
        .arg("a")
        .query::<i64>(&mut b);
    let first = t.join().unwrap();
    assert_eq!(first.unwrap(), 400_000);
    match second {
        Ok(n) => assert_eq!(n, 400_000, "ran after the first one ended"),
        Err(e) => assert_eq!(
            error_text(&e),
            "ERR rank: a MERGE into this board is already running"
        ),
    }
    assert_eq!(int(&mut c, &["ZCARD", "d"]), 400_000);
}

#[test]
fn writes_raise_keyspace_events() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEd"]);
    let mut sub = srv.conn();
    let _: () = redis::cmd("PSUBSCRIBE")
        .arg("__keyevent@0__:hotpath.rank.*")
        .query(&mut sub)
        .unwrap();
    int(&mut c, &["RANK.ADD", "b", "u", "5"]);
    int(&mut c, &["RANK.INCR", "b", "u", "2"]);
    let mut got = Vec::new();
    for _ in 0..2 {
        let msg: Vec<redis::Value> = match sub.recv_response().unwrap() {
            redis::Value::Array(v) | redis::Value::Push { data: v, .. } => v,
            other => panic!("{other:?}"),
        };
        let text: Vec<String> = msg.iter().map(|v| show(&Ok(v.clone()))).collect();
        got.push((text[2].clone(), text[3].clone()));
    }
    assert_eq!(
        got,
        [
            (
                "__keyevent@0__:hotpath.rank.add".to_string(),
                "b".to_string()
            ),
            (
                "__keyevent@0__:hotpath.rank.incr".to_string(),
                "b".to_string()
            ),
        ]
    );
}

/// RANK.ADD and RANK.INCR replicate themselves (issue 27, decision 1):
/// verbatim when the client gave NOW or the board keeps no time, with the
/// master's NOW appended otherwise; the effect (a ZADD) is no longer in
/// the stream. The AOF replays to the same data.
#[test]
fn rank_writes_replicate_the_command_itself() {
    let mut s = start_aof();
    let mut c = s.conn();
    let strs = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    run(
        &mut c,
        &["RANK.ADD", "b{1}", "alice", "10", "NOW", "1767225600000"],
    );
    run(&mut c, &["RANK.INCR", "b{1}", "alice", "5"]);
    run(&mut c, &["RANK.ADD", "b{1}", "bob", "7", "GT"]);
    // A kept value writes nothing and replicates nothing.
    run(
        &mut c,
        &["RANK.ADD", "b{1}", "bob", "6", "GT", "NOW", "1767225600000"],
    );
    run(&mut c, &["RANK.CREATE", "n{1}", "TIEBREAK", "NONE"]);
    run(&mut c, &["RANK.ADD", "n{1}", "carol", "3"]);
    let cmds = aof_commands(&s);
    let rank: Vec<&Vec<String>> = cmds
        .iter()
        .filter(|c| {
            c[0].to_ascii_uppercase().starts_with("RANK.") || c[0].eq_ignore_ascii_case("ZADD")
        })
        .filter(|c| !c[0].eq_ignore_ascii_case("RANK.CREATE"))
        .collect();
    assert_eq!(rank.len(), 4, "{rank:?}");
    assert_eq!(
        *rank[0],
        strs(&["RANK.ADD", "b{1}", "alice", "10", "NOW", "1767225600000"])
    );
    assert_eq!(rank[1][..4], strs(&["RANK.INCR", "b{1}", "alice", "5"])[..]);
    assert_eq!(rank[1][4], "NOW");
    assert!(
        rank[1][5].parse::<i64>().unwrap() > 1767225600000,
        "{:?}",
        rank[1]
    );
    assert_eq!(
        rank[2][..5],
        strs(&["RANK.ADD", "b{1}", "bob", "7", "GT"])[..]
    );
    assert_eq!(rank[2][5], "NOW");
    assert_eq!(*rank[3], strs(&["RANK.ADD", "n{1}", "carol", "3"]));
    assert_aof_restart_equal(&mut s);
}

/// A write without NOW replicates the instant it packed, call by call:
/// the instant's string is kept while the clock stays on one millisecond
/// (src/replicate.rs), and a new millisecond must never replicate the
/// last one. Bursts of pipelined writes (many per millisecond) with
/// pauses between them (new milliseconds); on a UNIT MS board every
/// member's achievement time is the instant its INCR used, which the
/// AOF's `NOW` must equal.
#[test]
fn writes_without_now_replicate_the_instant_they_used() {
    let mut s = start_aof();
    let mut c = s.conn();
    run(
        &mut c,
        &["RANK.CREATE", "ms{1}", "UNIT", "MS", "DIGITS", "13"],
    );
    for burst in 0..8 {
        let mut p = redis::pipe();
        for i in 0..25 {
            p.cmd("RANK.INCR")
                .arg("ms{1}")
                .arg(format!("m{burst}-{i}"))
                .arg(1);
        }
        let _: Vec<i64> = p.query(&mut c).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    let mut instants = std::collections::BTreeSet::new();
    let mut seen = 0;
    for cmd in aof_commands(&s) {
        if !cmd[0].eq_ignore_ascii_case("RANK.INCR") {
            continue;
        }
        assert_eq!(cmd.len(), 6, "{cmd:?}");
        assert_eq!(cmd[4], "NOW", "{cmd:?}");
        let got = match cmd_value(&mut c, &["RANK.GET", "ms{1}", &cmd[2]]) {
            Value::Array(v) => match v[2] {
                Value::Int(ms) => ms,
                ref other => panic!("{other:?}"),
            },
            other => panic!("{other:?}"),
        };
        assert_eq!(cmd[5], got.to_string(), "{cmd:?}");
        instants.insert(got);
        seen += 1;
    }
    assert_eq!(seen, 200);
    assert!(instants.len() >= 8, "{instants:?}");
    assert_aof_restart_equal(&mut s);
}

#[test]
fn a_merge_cut_short_by_a_crash_leaves_a_union_that_expires() {
    let mut srv = start_aof();
    let mut c = srv.conn();
    fill(&mut c, "a", 200_000, |i| i as i64);
    fill(&mut c, "b", 200_000, |i| i as i64 * 2);
    // A MERGE sent by a client that goes away; watched while it writes.
    {
        use std::io::Write;
        let mut gone = std::net::TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
        gone.write_all(b"*5\r\n$10\r\nRANK.MERGE\r\n$1\r\nd\r\n$1\r\n2\r\n$1\r\na\r\n$1\r\nb\r\n")
            .unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let at = loop {
        let at = int(&mut c, &["PEXPIRETIME", "d:merging"]);
        if at > 0 {
            break at;
        }
        assert!(
            std::time::Instant::now() < deadline && int(&mut c, &["EXISTS", "d"]) == 0,
            "the union was never seen with an expiry while written ({at})"
        );
    };
    let now = now_ms();
    assert!(
        at > now && at <= now + 3_600_000 + 1000,
        "work in progress expires within the hour: {at} at {now}"
    );
    // SIGKILL while it writes: after the AOF replay the leftover (if the
    // crash came before the swap) still expires, at the same instant.
    srv.stop();
    srv.restart(&[]);
    let mut c = srv.conn();
    if int(&mut c, &["EXISTS", "d:merging"]) == 1 {
        let left = int(&mut c, &["PEXPIRETIME", "d:merging"]);
        assert!(left >= at && left <= now_ms() + 3_600_000, "{left}");
    }
    // A MERGE that completes leaves a board without an expiry (none was
    // asked) and no union behind.
    run(&mut c, &["DEL", "d", "d:merging"]);
    assert_eq!(int(&mut c, &["RANK.MERGE", "d", "2", "a", "b"]), 200_000);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "d"]), -1);
    assert_eq!(int(&mut c, &["EXISTS", "d:merging"]), 0);
}

// ---- LAYOUT WIDE and RANK.DECR (issue 27) ----

const MAX: i64 = 9_007_199_254_740_991;

/// An error reply as [`run`] shows it.
fn fails(e: &str) -> String {
    format!("ERR<{e}>")
}

#[test]
fn wide_boards_hold_exact_points_beyond_the_packed_cap_with_ms_ties() {
    let s = Server::start();
    let mut c = s.conn();
    assert_eq!(run(&mut c, &["RANK.CREATE", "w", "LAYOUT", "WIDE"]), "OK");
    assert_eq!(run(&mut c, &["HGET", "w:meta", "layout"]), "EARLIER WIDE");
    // Billions of points, ties to the millisecond, times from 1970 on.
    let five = 5_000_000_000i64;
    assert_eq!(add(&mut c, "w", "zed", five, T0), five.to_string());
    assert_eq!(add(&mut c, "w", "abe", five, T0 + 1), five.to_string());
    assert_eq!(add(&mut c, "w", "mid", five, 1), five.to_string());
    assert_eq!(add(&mut c, "w", "top", MAX, T0), MAX.to_string());
    assert_eq!(add(&mut c, "w", "low", -MAX, 0), (-MAX).to_string());
    assert_eq!(
        run(&mut c, &["RANK.TOP", "w"]),
        format!("[top, {MAX}, mid, {five}, zed, {five}, abe, {five}, low, -{MAX}]")
    );
    // A plain Sorted Set whose ZREVRANGE is the board's order: the score is
    // the points, the member starts with the 16-digit time prefix.
    let names: Vec<String> = redis::cmd("ZREVRANGE")
        .arg("w")
        .arg(0)
        .arg(-1)
        .query(&mut c)
        .unwrap();
    let members: Vec<&str> = names.iter().map(|n| &n[17..]).collect();
    assert_eq!(members, ["top", "mid", "zed", "abe", "low"]);
    assert_eq!(names[2], format!("{:016}:zed", 9_999_999_999_999_999 - T0));
    assert_eq!(run(&mut c, &["ZSCORE", "w", &names[0]]), MAX.to_string());
    assert_eq!(
        run(&mut c, &["HGET", "w:time", "abe"]),
        (T0 + 1).to_string()
    );
    assert_eq!(
        run(&mut c, &["RANK.GET", "w", "abe"]),
        format!("[{five}, 3, {}]", T0 + 1)
    );
    assert_eq!(
        run(&mut c, &["RANK.AROUND", "w", "zed", "1"]),
        format!("[1, mid, {five}, 2, zed, {five}, 3, abe, {five}]")
    );
    assert_eq!(run(&mut c, &["RANK.GET", "w", "nobody"]), "nil");
    assert_eq!(run(&mut c, &["RANK.AROUND", "w", "nobody", "1"]), "nil");

    // The exact range is the whole of ±(2^53 − 1); nothing is written
    // beyond it.
    let digest = s.digest();
    let range = fails(&format!(
        "ERR rank: points out of exact range (max +/-{MAX})"
    ));
    assert_eq!(add(&mut c, "w", "top", MAX + 1, T0), range);
    assert_eq!(run(&mut c, &["RANK.INCR", "w", "top", "1"]), range);
    assert_eq!(run(&mut c, &["RANK.DECR", "w", "low", "1"]), range);
    assert_eq!(
        run(&mut c, &["RANK.DECR", "w", "low", "-9223372036854775808"]),
        range
    );
    assert_eq!(s.digest(), digest);

    // Set if better (GT): the same best keeps the time it was first
    // reached, a worse one is kept, a better one moves the time.
    let gt = |c: &mut Connection, p: i64, at: i64| {
        run(
            c,
            &[
                "RANK.ADD",
                "w",
                "zed",
                &p.to_string(),
                "GT",
                "NOW",
                &at.to_string(),
            ],
        )
    };
    assert_eq!(gt(&mut c, five, T0 + 50), five.to_string());
    assert_eq!(gt(&mut c, 4, T0 + 50), five.to_string());
    assert_eq!(s.digest(), digest);
    assert_eq!(
        run(&mut c, &["RANK.GET", "w", "zed"]),
        format!("[{five}, 2, {T0}]")
    );
    assert_eq!(gt(&mut c, 2 * five, T0 + 60), (2 * five).to_string());
    assert_eq!(
        run(&mut c, &["RANK.GET", "w", "zed"]),
        format!("[{}, 1, {}]", 2 * five, T0 + 60)
    );
    // DECR moves the time too: zed now ties behind abe.
    assert_eq!(
        run(
            &mut c,
            &[
                "RANK.DECR",
                "w",
                "zed",
                &five.to_string(),
                "NOW",
                &now(T0 + 70)
            ]
        ),
        five.to_string()
    );
    assert_eq!(
        run(&mut c, &["RANK.TOP", "w", "3", "OFFSET", "1"]),
        format!("[mid, {five}, abe, {five}, zed, {five}]")
    );
    assert_eq!(int(&mut c, &["HLEN", "w:time"]), 5);
    assert_eq!(int(&mut c, &["ZCARD", "w"]), 5);
    assert_eq!(int(&mut c, &["RANK.REM", "w", "zed", "nobody", "zed"]), 1);
    assert_eq!(int(&mut c, &["HEXISTS", "w:time", "zed"]), 0);
    assert_eq!(int(&mut c, &["RANK.COUNT", "w"]), 4);

    // LATER: the later achiever first.
    run(
        &mut c,
        &["RANK.CREATE", "l", "LAYOUT", "wide", "TIEBREAK", "LATER"],
    );
    add(&mut c, "l", "x", 1, T0);
    add(&mut c, "l", "y", 1, T0 + 1);
    assert_eq!(run(&mut c, &["RANK.TOP", "l"]), "[y, 1, x, 1]");
    assert_eq!(run(&mut c, &["HGET", "l:meta", "layout"]), "LATER WIDE");

    // Options WIDE does not take, and the commands that do not take it yet.
    let only =
        "ERR rank: LAYOUT WIDE takes TIEBREAK EARLIER or LATER only (no UNIT, DIGITS or EPOCH)";
    for extra in [
        &["UNIT", "MS"][..],
        &["DIGITS", "13"],
        &["EPOCH", "0"],
        &["TIEBREAK", "NONE"],
    ] {
        let mut a = vec!["RANK.CREATE", "x", "LAYOUT", "WIDE"];
        a.extend(extra);
        assert_eq!(err(&mut c, &a), only);
    }
    assert_eq!(
        err(&mut c, &["RANK.CREATE", "x", "LAYOUT", "SPARSE"]),
        "ERR syntax error"
    );
    assert_eq!(exists(&mut c, "x:meta"), 0);

    // B:time of another type, an index entry that is not a time or points
    // at nothing, a stored name without its prefix: refused, not misread.
    run(&mut c, &["RANK.CREATE", "t", "LAYOUT", "WIDE"]);
    run(&mut c, &["SET", "t:time", "x"]);
    assert!(add(&mut c, "t", "a", 1, T0).starts_with("ERR<WRONGTYPE"));
    run(&mut c, &["HSET", "w:time", "ghost", "5"]);
    run(&mut c, &["HSET", "w:time", "bad", "x"]);
    for m in ["ghost", "bad"] {
        let e = fails(&format!("ERR rank: corrupt data in 'w:time' field '{m}'"));
        assert_eq!(run(&mut c, &["RANK.GET", "w", m]), e);
        assert_eq!(run(&mut c, &["RANK.INCR", "w", m, "1"]), e);
        assert_eq!(run(&mut c, &["RANK.REM", "w", "abe", m]), e);
    }
    run(&mut c, &["ZADD", "w", "1", "plain"]);
    assert_eq!(
        err(&mut c, &["RANK.TOP", "w", "10"]),
        "ERR rank: corrupt data in 'w' field 'plain'"
    );
    assert_eq!(int(&mut c, &["RANK.COUNT", "w"]), 5);
}

#[test]
fn decr_subtracts_on_the_packed_layout_too() {
    let s = Server::start();
    let mut c = s.conn();
    add(&mut c, "b", "m", 10, T0);
    assert_eq!(
        run(
            &mut c,
            &["RANK.DECR", "b", "m", "3", "NOW", &now(T0 + 5_000)]
        ),
        "7"
    );
    assert_eq!(
        run(&mut c, &["RANK.GET", "b", "m"]),
        format!("[7, 0, {}]", T0 + 5_000)
    );
    assert_eq!(run(&mut c, &["RANK.DECR", "b", "m", "-900711"]), "900718");
    let range = fails("ERR rank: points out of exact range (max +/-900718)");
    assert_eq!(run(&mut c, &["RANK.DECR", "b", "m", "-1"]), range);
    assert_eq!(
        run(&mut c, &["RANK.DECR", "b", "m", "-9223372036854775808"]),
        range
    );
    assert_eq!(run(&mut c, &["RANK.DECR", "b", "new", "5"]), "-5");
    assert_eq!(
        err(&mut c, &["RANK.DECR", "b", "m"]),
        "ERR wrong number of arguments for 'rank.decr' command"
    );
    assert_eq!(
        err(&mut c, &["RANK.DECR", "b", "m", "1.5"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(run(&mut c, &["RANK.TOP", "b"]), "[m, 900718, new, -5]");
}

/// Writes on wide boards with the server clock (no NOW), with a TTL.
fn wide_writes(c: &mut Connection) {
    run(c, &["RANK.CREATE", "w", "LAYOUT", "WIDE", "TTL", "1000"]);
    run(
        c,
        &["RANK.CREATE", "v", "LAYOUT", "WIDE", "TIEBREAK", "LATER"],
    );
    for i in 0..20 {
        let p = (MAX - (i % 4)).to_string();
        assert_eq!(run(c, &["RANK.ADD", "w", &format!("m{i}"), &p]), p);
        run(c, &["RANK.INCR", "v", &format!("m{i}"), "-3000000000"]);
        std::thread::sleep(std::time::Duration::from_millis(2));
    }
    run(c, &["RANK.ADD", "w", "m1", &MAX.to_string(), "GT"]);
    run(c, &["RANK.ADD", "w", "m2", "5", "LT"]);
    run(c, &["RANK.DECR", "w", "m3", "4"]);
    run(c, &["RANK.INCR", "v", "m3", "4"]);
    run(c, &["RANK.REM", "w", "m4", "m5"]);
    run(c, &["RANK.REM", "v", "m6"]);
    // A board whose only member moves keeps its expiry.
    run(c, &["RANK.CREATE", "one", "LAYOUT", "WIDE", "TTL", "900"]);
    run(c, &["RANK.ADD", "one", "a", "1"]);
    std::thread::sleep(std::time::Duration::from_millis(2));
    run(c, &["RANK.INCR", "one", "a", "1"]);
    // A wide MERGE (its index renamed with the board, the meta's expiry
    // on both) and a wide IMPORT at the server's clock, in three calls.
    run(c, &["RANK.CREATE", "wm", "LAYOUT", "WIDE", "TTL", "800"]);
    assert_eq!(int(c, &["RANK.MERGE", "wm", "2", "w", "v"]), 20);
    run(c, &["ZADD", "g", "5", "a", "6", "b", "7", "c"]);
    run(c, &["PEXPIRE", "g", "700000"]);
    assert_eq!(
        int(c, &["RANK.IMPORT", "g", "LAYOUT", "WIDE", "COUNT", "1"]),
        2
    );
    assert_eq!(int(c, &["RANK.IMPORT", "g", "COUNT", "1"]), 1);
    assert_eq!(int(c, &["RANK.IMPORT", "g"]), 0);
}

#[test]
fn wide_boards_end_identical_on_a_replica_and_after_aof_and_rdb() {
    let p = Pair::start();
    let mut c = p.master.conn();
    wide_writes(&mut c);
    p.assert_equal();
    let on_master = expiries(&mut c);
    let at = |k: &str| on_master.iter().find(|(n, _)| n == k).unwrap().1;
    assert!(at("w:meta") > 0, "{on_master:?}");
    assert_eq!(at("w"), at("w:meta"));
    assert_eq!(at("w:time"), at("w:meta"));
    assert_eq!(at("v:time"), -1);
    assert!(at("one:meta") > 0);
    assert_eq!(at("one"), at("one:meta"));
    assert_eq!(at("one:time"), at("one:meta"));
    for k in ["wm", "wm:time"] {
        assert_eq!(at(k), at("wm:meta"), "{k}");
    }
    for k in ["g", "g:time"] {
        assert_eq!(at(k), at("g:meta"), "{k}");
    }
    assert!(at("g:meta") > 0);
    let mut r = p.replica.conn();
    assert_eq!(expiries(&mut r), on_master);
    assert_eq!(
        run(&mut r, &["RANK.TOP", "w", "20"]),
        run(&mut c, &["RANK.TOP", "w", "20"])
    );

    let mut s = start_aof();
    let mut a = s.conn();
    wide_writes(&mut a);
    let before = expiries(&mut a);
    let top = run(&mut a, &["RANK.TOP", "v", "20"]);
    assert_aof_restart_equal(&mut s);
    let mut a = s.conn();
    assert_eq!(expiries(&mut a), before);
    assert_eq!(run(&mut a, &["RANK.TOP", "v", "20"]), top);
    assert_rdb_reload_equal(&s);
}

/// `ZREVRANGE key 0 -1 WITHSCORES` as `name=score` strings.
fn stored(c: &mut Connection, key: &str) -> Vec<String> {
    let v: Vec<(String, String)> = redis::cmd("ZREVRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(c)
        .unwrap();
    v.into_iter().map(|(m, s)| format!("{m}={s}")).collect()
}

/// The stored name of `member` at `ms` on an EARLIER wide board.
fn early(ms: i64, member: &str) -> String {
    format!("{:016}:{member}", 9_999_999_999_999_999 - ms)
}

#[test]
fn wide_boards_merge_with_their_index_and_convert_between_layouts() {
    let s = Server::start();
    let mut c = s.conn();
    let big = 4_000_000_000_000_000i64;
    for b in ["a", "b"] {
        run(&mut c, &["RANK.CREATE", b, "LAYOUT", "WIDE"]);
    }
    add(&mut c, "a", "x", big, T0 + 5);
    add(&mut c, "a", "y", 1, T0);
    add(&mut c, "b", "x", big, T0 + 9);
    add(&mut c, "b", "z", -big, T0 + 1);
    run(
        &mut c,
        &["RANK.CREATE", "d", "LAYOUT", "WIDE", "TTL", "1000"],
    );
    // A member only the old destination had leaves its index too.
    add(&mut c, "d", "old", 3, T0);
    // SUM beyond every packed limit; the latest time kept.
    assert_eq!(int(&mut c, &["RANK.MERGE", "d", "2", "a", "b"]), 3);
    assert_eq!(
        run(&mut c, &["RANK.TOP", "d"]),
        format!("[x, {}, y, 1, z, -{big}]", 2 * big)
    );
    assert_eq!(
        stored(&mut c, "d"),
        [
            format!("{}={}", early(T0 + 9, "x"), 2 * big),
            format!("{}=1", early(T0, "y")),
            format!("{}=-{big}", early(T0 + 1, "z")),
        ]
    );
    assert_eq!(
        run(&mut c, &["HGETALL", "d:time"]),
        format!("[x, {}, y, {T0}, z, {}]", T0 + 9, T0 + 1)
    );
    assert_eq!(
        run(&mut c, &["RANK.GET", "d", "x"]),
        format!("[{}, 0, {}]", 2 * big, T0 + 9)
    );
    let at = int(&mut c, &["PEXPIRETIME", "d:meta"]);
    assert!(at > 0);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "d"]), at);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "d:time"]), at);
    assert_eq!(exists(&mut c, "d:merging"), 0);
    assert_eq!(exists(&mut c, "d:merging:time"), 0);
    // MAX: the best entry, ties by the destination's TIEBREAK.
    assert_eq!(
        int(
            &mut c,
            &["RANK.MERGE", "d", "2", "a", "b", "AGGREGATE", "MAX"]
        ),
        3
    );
    assert_eq!(
        run(&mut c, &["RANK.GET", "d", "x"]),
        format!("[{big}, 0, {}]", T0 + 5)
    );
    run(
        &mut c,
        &["RANK.CREATE", "l", "LAYOUT", "WIDE", "TIEBREAK", "LATER"],
    );
    assert_eq!(
        int(
            &mut c,
            &["RANK.MERGE", "l", "2", "a", "b", "AGGREGATE", "MAX"]
        ),
        3
    );
    assert_eq!(
        run(&mut c, &["RANK.GET", "l", "x"]),
        format!("[{big}, 0, {}]", T0 + 9)
    );

    // Packed (and NONE) into wide: the entry's points and time, a NONE
    // entry at NOW.
    add(&mut c, "p", "y", 7, T0 + 2_000);
    run(&mut c, &["RANK.CREATE", "n", "TIEBREAK", "NONE"]);
    add(&mut c, "n", "y", 2, T0);
    assert_eq!(
        int(
            &mut c,
            &[
                "RANK.MERGE",
                "d",
                "3",
                "a",
                "p",
                "n",
                "NOW",
                &now(T0 + 7_000)
            ]
        ),
        2
    );
    assert_eq!(
        run(&mut c, &["RANK.GET", "d", "y"]),
        format!("[10, 1, {}]", T0 + 7_000)
    );
    assert_eq!(int(&mut c, &["HLEN", "d:time"]), 2);
    // Wide into packed: what fits is converted (times to the packed
    // layout's UNIT), what does not is refused with nothing written.
    add(&mut c, "small", "q", 4, T0 + 1_234);
    run(&mut c, &["RANK.CREATE", "sw", "LAYOUT", "WIDE"]);
    add(&mut c, "sw", "q", 5, T0 + 1_999);
    assert_eq!(int(&mut c, &["RANK.MERGE", "pk", "2", "sw", "small"]), 1);
    assert_eq!(
        run(&mut c, &["RANK.GET", "pk", "q"]),
        format!("[9, 0, {}]", T0 + 1_000)
    );
    assert_eq!(exists(&mut c, "pk:time"), 0);
    run(
        &mut c,
        &[
            "RANK.CREATE",
            "ms",
            "UNIT",
            "MS",
            "DIGITS",
            "13",
            "EPOCH",
            &now(T0 + 5_000),
        ],
    );
    let digest = s.digest();
    assert_eq!(
        run(&mut c, &["RANK.MERGE", "pk", "1", "a"]),
        fails("ERR rank: points out of exact range (max +/-900718)")
    );
    assert_eq!(
        run(&mut c, &["RANK.MERGE", "ms", "1", "sw"]),
        fails("ERR rank: timestamp out of range")
    );
    // Beyond 2^53 - 1 on a wide destination too.
    assert_eq!(
        run(&mut c, &["RANK.MERGE", "d", "3", "a", "a", "b"]),
        fails(&format!(
            "ERR rank: points out of exact range (max +/-{MAX})"
        ))
    );
    assert_eq!(s.digest(), digest);
    // A source's stored name without its prefix is corrupt.
    run(&mut c, &["ZADD", "b", "1", "plain"]);
    assert_eq!(
        run(&mut c, &["RANK.MERGE", "d", "1", "b"]),
        fails("ERR rank: corrupt data in 'b' field 'plain'")
    );
    // A wide destination's index of another type.
    run(&mut c, &["RANK.CREATE", "e", "LAYOUT", "WIDE"]);
    run(&mut c, &["SET", "e:time", "x"]);
    let before = s.digest();
    assert!(run(&mut c, &["RANK.MERGE", "e", "1", "a"]).starts_with("ERR<WRONGTYPE"));
    assert_eq!(s.digest(), before);
    run(&mut c, &["DEL", "e:time"]);
    run(&mut c, &["ZREM", "b", "plain"]);
    // An empty union deletes the board and its index.
    run(&mut c, &["RANK.CREATE", "empty", "LAYOUT", "WIDE"]);
    assert_eq!(int(&mut c, &["RANK.MERGE", "d", "1", "empty"]), 0);
    assert_eq!(exists(&mut c, "d") + exists(&mut c, "d:time"), 0);
}

#[test]
fn position_reads_a_wide_board_by_points_and_stored_name() {
    let s = Server::start();
    let mut c = s.conn();
    run(&mut c, &["RANK.CREATE", "w", "LAYOUT", "WIDE"]);
    let five = 5_000_000_000i64;
    add(&mut c, "w", "top", MAX, T0);
    add(&mut c, "w", "zed", five, T0);
    add(&mut c, "w", "abe", five, T0 + 1);
    add(&mut c, "w", "low", -five, T0);
    let (top, zed, abe, low) = (
        early(T0, "top"),
        early(T0, "zed"),
        early(T0 + 1, "abe"),
        early(T0, "low"),
    );
    // Entries are [member, points, stored name].
    assert_eq!(
        run(&mut c, &["RANK.POSITION", "w", "2"]),
        format!("[0, nil, [], [top, {MAX}, {top}, zed, {five}, {zed}]]")
    );
    assert_eq!(
        run(&mut c, &["RANK.POSITION", "w", "1", "MEMBER", "abe"]),
        format!("[2, [abe, {five}, {abe}], [zed, {five}, {zed}], [low, -{five}, {low}]]")
    );
    assert_eq!(
        run(&mut c, &["RANK.POSITION", "w", "1", "MEMBER", "nobody"]),
        "nil"
    );
    // AT a position of another shard: between zed and abe in time.
    let mid = early(T0, "zzz");
    assert_eq!(
        run(
            &mut c,
            &["RANK.POSITION", "w", "1", "AT", &five.to_string(), &mid]
        ),
        format!("[1, nil, [top, {MAX}, {top}], [zed, {five}, {zed}]]")
    );
    let after = early(T0 + 1, "abf");
    assert_eq!(
        run(
            &mut c,
            &["RANK.POSITION", "w", "0", "AT", &five.to_string(), &after]
        ),
        "[2, nil, [], []]"
    );
    // AT the position of a member the board holds: its entry.
    assert_eq!(
        run(
            &mut c,
            &["RANK.POSITION", "w", "0", "AT", &five.to_string(), &zed]
        ),
        format!("[1, [zed, {five}, {zed}], [], []]")
    );
    // A large tie block is searched by halving, as on a packed board.
    for i in 0..40 {
        add(&mut c, "w", &format!("t{i:02}"), 7, T0 + i);
    }
    let probe = early(T0 + 20, "t19x");
    // Above the probe: top, zed, abe, then t00 … t19 (earlier times), and
    // t20 whose name is greater at the same time ("t20" > "t19x").
    assert_eq!(
        run(&mut c, &["RANK.POSITION", "w", "0", "AT", "7", &probe]),
        "[24, nil, [], []]"
    );
    // A hand-damaged name is refused naming it.
    run(&mut c, &["ZADD", "w", "1", "plain"]);
    assert_eq!(
        run(&mut c, &["RANK.POSITION", "w", "1000"]),
        fails("ERR rank: corrupt data in 'w' field 'plain'")
    );
}

#[test]
fn import_can_make_a_wide_board() {
    let s = Server::start();
    let mut c = s.conn();
    let big = 3_000_000_000_000i64;
    run(
        &mut c,
        &[
            "ZADD",
            "g",
            &big.to_string(),
            "zed",
            &big.to_string(),
            "abe",
            "90",
            "kim",
        ],
    );
    run(&mut c, &["PEXPIRE", "g", "900000"]);
    let at = int(&mut c, &["PEXPIRETIME", "g"]);
    assert_eq!(
        int(
            &mut c,
            &[
                "RANK.IMPORT",
                "g",
                "LAYOUT",
                "WIDE",
                "COUNT",
                "2",
                "NOW",
                &now(T0)
            ]
        ),
        1
    );
    assert_eq!(
        run(&mut c, &["HGET", "g:meta", "layout"]),
        format!("EARLIER WIDE IMPORT {T0}")
    );
    assert_eq!(
        run(&mut c, &["RANK.TOP", "g"]),
        fails("ERR rank: board is being imported (call RANK.IMPORT until it replies 0)")
    );
    assert_eq!(
        run(&mut c, &["RANK.IMPORT", "g", "LAYOUT", "WIDE"]),
        fails("ERR rank: import in progress: only COUNT may be given")
    );
    assert_eq!(int(&mut c, &["RANK.IMPORT", "g", "COUNT", "2"]), 0);
    assert_eq!(run(&mut c, &["HGET", "g:meta", "layout"]), "EARLIER WIDE");
    // Equal points keep Redis's member order (one instant for all).
    assert_eq!(
        run(&mut c, &["RANK.TOP", "g"]),
        format!("[zed, {big}, abe, {big}, kim, 90]")
    );
    assert_eq!(
        stored(&mut c, "g"),
        [
            format!("{}={big}", early(T0, "zed")),
            format!("{}={big}", early(T0, "abe")),
            format!("{}=90", early(T0, "kim")),
        ]
    );
    assert_eq!(
        run(&mut c, &["RANK.GET", "g", "kim"]),
        format!("[90, 2, {T0}]")
    );
    assert_eq!(int(&mut c, &["HLEN", "g:time"]), 3);
    for k in ["g", "g:meta", "g:time"] {
        assert_eq!(int(&mut c, &["PEXPIRETIME", k]), at, "{k}");
    }
    assert_eq!(exists(&mut c, "g:import"), 0);
    // The board takes wide writes afterwards.
    assert_eq!(
        run(
            &mut c,
            &[
                "RANK.INCR",
                "g",
                "kim",
                &big.to_string(),
                "NOW",
                &now(T0 - 1)
            ]
        ),
        (big + 90).to_string()
    );
    assert_eq!(
        run(&mut c, &["RANK.TOP", "g", "1"]),
        format!("[kim, {}]", big + 90)
    );

    // LATER, in one call.
    run(&mut c, &["ZADD", "h", "1", "a", "1", "b"]);
    assert_eq!(
        int(
            &mut c,
            &[
                "RANK.IMPORT",
                "h",
                "TIEBREAK",
                "LATER",
                "LAYOUT",
                "WIDE",
                "NOW",
                &now(T0)
            ]
        ),
        0
    );
    assert_eq!(run(&mut c, &["HGET", "h:meta", "layout"]), "LATER WIDE");
    assert_eq!(
        stored(&mut c, "h"),
        [format!("{T0:016}:b=1"), format!("{T0:016}:a=1")]
    );

    // Refused with nothing written: options WIDE does not take, an index
    // already there, points beyond 2^53 - 1.
    run(&mut c, &["ZADD", "p", "1", "a"]);
    let digest = s.digest();
    assert_eq!(
        run(
            &mut c,
            &["RANK.IMPORT", "p", "LAYOUT", "WIDE", "UNIT", "MS"]
        ),
        fails(
            "ERR rank: LAYOUT WIDE takes TIEBREAK EARLIER or LATER only (no UNIT, DIGITS or EPOCH)"
        )
    );
    assert_eq!(
        run(&mut c, &["RANK.IMPORT", "p", "LAYOUT", "SPARSE"]),
        fails("ERR syntax error")
    );
    run(&mut c, &["HSET", "p:time", "a", "1"]);
    let digest2 = s.digest();
    assert_eq!(
        run(&mut c, &["RANK.IMPORT", "p", "LAYOUT", "WIDE"]),
        fails("ERR rank: board already exists")
    );
    assert_eq!(s.digest(), digest2);
    run(&mut c, &["DEL", "p:time"]);
    assert_eq!(s.digest(), digest);
    run(&mut c, &["SET", "p:time", "x"]);
    assert!(run(&mut c, &["RANK.IMPORT", "p", "LAYOUT", "WIDE"]).starts_with("ERR<WRONGTYPE"));
    run(&mut c, &["DEL", "p:time"]);
    run(&mut c, &["ZADD", "p", "9007199254740992", "b"]);
    let digest = s.digest();
    assert_eq!(
        run(&mut c, &["RANK.IMPORT", "p", "LAYOUT", "WIDE"]),
        fails("ERR rank: corrupt data in 'p' field 'b'")
    );
    assert_eq!(s.digest(), digest);
    // LAYOUT PACKED is the packed import.
    run(&mut c, &["ZREM", "p", "b"]);
    assert_eq!(
        int(
            &mut c,
            &["RANK.IMPORT", "p", "LAYOUT", "PACKED", "NOW", &now(T0)]
        ),
        0
    );
    assert_eq!(run(&mut c, &["HGET", "p:meta", "layout"]), "EARLIER S 10 0");
}

#[test]
fn a_large_wide_merge_runs_in_slices_and_replicates_exactly() {
    let pair = Pair::start();
    let mut c = pair.master.conn();
    let scale = 10_000_000_000i64;
    fill(&mut c, "a", 60_000, |i| (i as i64 % 1000) * scale + 5);
    run(&mut c, &["HSET", "a:meta", "layout", "NONE S 0 0"]);
    run(
        &mut c,
        &["RANK.CREATE", "d", "LAYOUT", "WIDE", "TTL", "9000"],
    );
    assert_eq!(
        int(&mut c, &["RANK.MERGE", "d", "1", "a", "NOW", &now(T0)]),
        60_000
    );
    run(
        &mut c,
        &["RANK.CREATE", "e", "LAYOUT", "WIDE", "TIEBREAK", "LATER"],
    );
    // From a wide board: the stored names read back into members.
    assert_eq!(int(&mut c, &["RANK.MERGE", "e", "2", "d", "a"]), 60_000);
    assert_eq!(int(&mut c, &["HLEN", "e:time"]), 60_000);
    let got = run(&mut c, &["RANK.GET", "e", "m12345"]);
    assert_eq!(
        got.split(", ").next().unwrap(),
        format!("[{}", 2 * (345 * scale + 5))
    );
    for k in ["d:merging", "d:merging:time", "e:merging", "e:merging:time"] {
        assert_eq!(exists(&mut c, k), 0, "{k}");
    }
    let at = int(&mut c, &["PEXPIRETIME", "d:meta"]);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "d"]), at);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "d:time"]), at);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "e:time"]), -1);
    pair.assert_equal();
    let mut r = pair.replica.conn();
    assert_eq!(expiries(&mut r), expiries(&mut c));
    assert_eq!(
        run(&mut r, &["RANK.TOP", "e", "5"]),
        run(&mut c, &["RANK.TOP", "e", "5"])
    );
}
