//! RATE on a real redis-server with the module loaded, through the `redis`
//! crate: every algorithm's allow/deny sequence at fixed NOW values, COST
//! and PEEK, MULTI all-or-nothing, THROTTLE against redis-cell's documented
//! example, high rates, TTLs, every error with nothing written,
//! concurrency, replication, AOF and RDB.

mod common;

use std::time::Duration;

use common::*;

// A multiple of a day (2025-12-03T00:00Z). Keys expire by the server's
// clock, so sequences at fixed NOW values use periods long enough that no
// state expires while a test runs.
const T0: i64 = 1_764_720_000_000;

fn at(t: i64) -> String {
    (T0 + t).to_string()
}

fn check(c: &mut Connection, key: &str, rest: &[&str], t: i64) -> String {
    let now = at(t);
    let mut args = vec!["RATE.CHECK", key];
    args.extend_from_slice(rest);
    args.extend_from_slice(&["NOW", &now]);
    run(c, &args)
}

#[test]
fn gcra_lets_a_burst_through_then_one_per_spacing() {
    let srv = Server::start();
    let mut c = srv.conn();
    let a = ["5", "60000"]; // spacing 12 s
    for i in 0..5 {
        let want = format!("[1, 5, {}, -1, {}]", 4 - i, 12000 * (i + 1));
        assert_eq!(check(&mut c, "g", &a, 0), want);
    }
    assert_eq!(check(&mut c, "g", &a, 0), "[0, 5, 0, 12000, 60000]");
    assert_eq!(check(&mut c, "g", &a, 11999), "[0, 5, 0, 1, 48001]");
    assert_eq!(check(&mut c, "g", &a, 12000), "[1, 5, 0, -1, 60000]");
    // The state is the theoretical arrival time, exact: T0 + 72 s.
    assert_eq!(
        run(&mut c, &["GET", "g"]),
        format!("gcra:{}:0:5", T0 + 72000)
    );
    // BURST 1: no tolerance, spacing only.
    assert_eq!(
        check(&mut c, "g1", &["5", "60000", "BURST", "1"], 0),
        "[1, 5, 0, -1, 12000]"
    );
    assert_eq!(
        check(&mut c, "g1", &["5", "60000", "BURST", "1"], 6000),
        "[0, 5, 0, 6000, 6000]"
    );
    // Explicit ALGO GCRA is the default.
    assert_eq!(
        check(
            &mut c,
            "g1",
            &["5", "60000", "ALGO", "gcra", "BURST", "1"],
            12000
        ),
        "[1, 5, 0, -1, 12000]"
    );
}

#[test]
fn fixed_counts_per_window_aligned_to_the_period() {
    let srv = Server::start();
    let mut c = srv.conn();
    let a = ["3", "60000", "ALGO", "FIXED"];
    assert_eq!(check(&mut c, "f", &a, 0), "[1, 3, 2, -1, 60000]");
    assert_eq!(check(&mut c, "f", &a, 100), "[1, 3, 1, -1, 59900]");
    assert_eq!(check(&mut c, "f", &a, 200), "[1, 3, 0, -1, 59800]");
    assert_eq!(check(&mut c, "f", &a, 200), "[0, 3, 0, 59800, 59800]");
    assert_eq!(run(&mut c, &["GET", "f"]), format!("fixed:{T0}:3"));
    assert_eq!(
        check(&mut c, "f", &a, 60000),
        "[1, 3, 2, -1, 60000]",
        "a new window starts at the multiple"
    );
}

#[test]
fn sliding_weighs_the_previous_window() {
    let srv = Server::start();
    let mut c = srv.conn();
    let a = ["10", "60000", "ALGO", "SLIDING"];
    for _ in 0..10 {
        assert!(check(&mut c, "s", &a, 30000).starts_with("[1,"));
    }
    // Full: in the next window 10 × (1 − e/60000) + 1 ≤ 10 from e = 6 s.
    assert_eq!(check(&mut c, "s", &a, 59999), "[0, 10, 0, 6001, 60001]");
    // 25% into the next window: 10 × 0.75 = 7.5, so 2 more pass.
    assert_eq!(check(&mut c, "s", &a, 75000), "[1, 10, 1, -1, 105000]");
    assert_eq!(check(&mut c, "s", &a, 75000), "[1, 10, 0, -1, 105000]");
    assert_eq!(check(&mut c, "s", &a, 75000), "[0, 10, 0, 3000, 105000]");
    assert_eq!(check(&mut c, "s", &a, 78000), "[1, 10, 0, -1, 102000]");
    let h = run(&mut c, &["HGETALL", "s"]);
    assert_eq!(
        h,
        format!(
            "[algo, sliding, window, {}, count, 3, prev, 10]",
            T0 + 60000
        )
    );
}

#[test]
fn log_is_an_exact_sliding_log() {
    let srv = Server::start();
    let mut c = srv.conn();
    let a = ["3", "60000", "ALGO", "LOG"];
    for t in [0, 1000, 2000] {
        assert!(check(&mut c, "l", &a, t).starts_with("[1,"));
    }
    assert_eq!(check(&mut c, "l", &a, 59999), "[0, 3, 0, 1, 2001]");
    assert_eq!(check(&mut c, "l", &a, 60000), "[1, 3, 0, -1, 60000]");
    // The entry at T0 left the window and was dropped.
    assert_eq!(int(&mut c, &["ZCARD", "l"]), 3);
    assert_eq!(
        run(&mut c, &["ZRANGE", "l", "0", "0", "WITHSCORES"]),
        format!("[{}-1, {}]", T0 + 1000, T0 + 1000)
    );
    // COST adds one entry per unit, numbered within the millisecond.
    assert!(
        check(&mut c, "l2", &["5", "60000", "ALGO", "LOG", "COST", "3"], 0)
            .starts_with("[1, 5, 2,")
    );
    assert_eq!(
        run(&mut c, &["ZRANGE", "l2", "0", "-1"]),
        format!("[{T0}-0, {T0}-1, {T0}-2]")
    );
}

#[test]
fn bucket_refills_continuously() {
    let srv = Server::start();
    let mut c = srv.conn();
    let a = ["1", "60000", "ALGO", "BUCKET", "BURST", "3"];
    for i in 0..3 {
        assert_eq!(
            check(&mut c, "b", &a, 0),
            format!("[1, 1, {}, -1, {}]", 2 - i, 60000 * (i + 1))
        );
    }
    assert_eq!(check(&mut c, "b", &a, 0), "[0, 1, 0, 60000, 180000]");
    assert_eq!(check(&mut c, "b", &a, 36000), "[0, 1, 0, 24000, 144000]");
    assert_eq!(check(&mut c, "b", &a, 60000), "[1, 1, 0, -1, 180000]");
    assert_eq!(
        run(&mut c, &["HGETALL", "b"]),
        format!("[algo, bucket, tokens, 0, carry, 0, ts, {}]", T0 + 60000)
    );
}

#[test]
fn cost_and_peek_and_refusals_consume_nothing() {
    let srv = Server::start();
    let mut c = srv.conn();
    for algo in ["GCRA", "FIXED", "SLIDING", "LOG", "BUCKET"] {
        let k = format!("k{algo}");
        let a = ["5", "100000", "ALGO", algo];
        // PEEK answers as the request would, without consuming.
        assert_eq!(
            check(&mut c, &k, &[&a[..], &["COST", "2", "PEEK"]].concat(), 0).get(..5),
            Some("[1, 5")
        );
        assert_eq!(int(&mut c, &["EXISTS", &k]), 0, "{algo}: PEEK wrote");
        assert!(
            check(&mut c, &k, &[&a[..], &["COST", "4"]].concat(), 0).starts_with("[1, 5, 1,"),
            "{algo}"
        );
        let dump = dump_keys(&mut c, &k);
        // Refused: 4 more would exceed, 6 never fits.
        assert!(
            check(&mut c, &k, &[&a[..], &["COST", "4"]].concat(), 0).starts_with("[0, 5, 1,"),
            "{algo}"
        );
        assert!(
            check(&mut c, &k, &[&a[..], &["COST", "6"]].concat(), 0).starts_with("[0, 5, 1, -1,"),
            "{algo}"
        );
        // COST 0 reports the current state.
        assert!(
            check(&mut c, &k, &[&a[..], &["COST", "0"]].concat(), 0).starts_with("[1, 5, 1, -1"),
            "{algo}"
        );
        assert_eq!(dump_keys(&mut c, &k), dump, "{algo}: a refusal wrote");
        assert!(check(&mut c, &k, &a, 0).starts_with("[1, 5, 0,"), "{algo}");
    }
}

#[test]
fn throttle_matches_redis_cell() {
    let srv = Server::start();
    let mut c = srv.conn();
    // redis-cell's README: CL.THROTTLE user123 15 30 60 → 0 16 15 -1 2
    assert_eq!(
        run(&mut c, &["RATE.THROTTLE", "user123", "15", "30", "60"]),
        "[0, 16, 15, -1, 2]"
    );
    // redis-cell's own test table (max_burst 4, 1 per second).
    let t = |c: &mut Connection, dt: i64, q: &str| {
        run(
            c,
            &["RATE.THROTTLE", "cell", "4", "1", "1", q, "NOW", &at(dt)],
        )
    };
    assert_eq!(t(&mut c, 0, "6"), "[1, 5, 5, -1, 0]");
    for i in 0..5 {
        assert_eq!(
            t(&mut c, 0, "1"),
            format!("[0, 5, {}, -1, {}]", 4 - i, i + 1)
        );
    }
    assert_eq!(t(&mut c, 0, "1"), "[1, 5, 0, 1, 5]");
    assert_eq!(t(&mut c, 3000, "1"), "[0, 5, 2, -1, 3]");
    assert_eq!(t(&mut c, 3100, "1"), "[0, 5, 1, -1, 4]");
    assert_eq!(t(&mut c, 3100, "0"), "[0, 5, 1, -1, 4]", "quantity 0 peeks");
    assert_eq!(t(&mut c, 9500, "5"), "[0, 5, 0, -1, 5]");
    assert_eq!(t(&mut c, 9500, "1"), "[1, 5, 0, 1, 5]");
    // THROTTLE and RATE.CHECK share the GCRA state.
    assert!(run(
        &mut c,
        &["RATE.THROTTLE", "shared", "0", "1", "1", "NOW", &at(0)]
    )
    .starts_with("[0,"));
    assert_eq!(
        check(&mut c, "shared", &["1", "1000", "BURST", "1"], 0),
        "[0, 1, 0, 1000, 1000]"
    );
}

#[test]
fn multi_consumes_only_when_every_rule_allows() {
    let srv = Server::start();
    let mut c = srv.conn();
    let m = |c: &mut Connection, t: i64| {
        run(
            c,
            &[
                "RATE.MULTI",
                "2",
                "u:{1}:s",
                "u:{1}:d",
                "LIMITS",
                "2",
                "60000",
                "3",
                "86400000",
                "NOW",
                &at(t),
            ],
        )
    };
    assert_eq!(m(&mut c, 0), "[1, 2, 1, -1, 30000]");
    assert_eq!(m(&mut c, 0), "[1, 2, 0, -1, 60000]");
    let day = run(&mut c, &["GET", "u:{1}:d"]);
    assert_eq!(
        m(&mut c, 0),
        "[0, 2, 0, 30000, 60000]",
        "the per-minute rule refuses"
    );
    assert_eq!(
        run(&mut c, &["GET", "u:{1}:d"]),
        day,
        "so the daily rule consumed nothing"
    );
    assert_eq!(m(&mut c, 30000), "[1, 2, 0, -1, 60000]");
    let r = m(&mut c, 60000);
    assert!(
        r.starts_with("[0, 3, 0, "),
        "now the daily rule refuses: {r}"
    );
    // PEEK and a key holding another algorithm.
    assert!(run(
        &mut c,
        &["RATE.MULTI", "1", "p", "LIMITS", "1", "1000", "PEEK"]
    )
    .starts_with("[1,"));
    assert_eq!(int(&mut c, &["EXISTS", "p"]), 0);
    check(&mut c, "fx", &["1", "100000", "ALGO", "FIXED"], 0);
    assert_eq!(
        err(
            &mut c,
            &[
                "RATE.MULTI",
                "2",
                "p",
                "fx",
                "LIMITS",
                "1",
                "1000",
                "1",
                "1000"
            ]
        ),
        "ERR rate: key holds a fixed limiter"
    );
    assert_eq!(int(&mut c, &["EXISTS", "p"]), 0);
    // Cluster routing and ACLs find every key of a MULTI.
    assert_eq!(
        run(
            &mut c,
            &[
                "COMMAND",
                "GETKEYS",
                "RATE.MULTI",
                "2",
                "a",
                "b",
                "LIMITS",
                "1",
                "1",
                "1",
                "1"
            ]
        ),
        "[a, b]"
    );
}

#[test]
fn high_rates_are_exact() {
    let srv = Server::start();
    let mut c = srv.conn();
    // 100,000 per second: 100 pass per millisecond, not one more.
    let now = at(0);
    // MULTI/EXEC freezes the server's expiry clock: the 1 ms TTL of a
    // drained 100/ms limiter cannot lapse in the middle.
    let mut p = redis::pipe();
    p.atomic();
    for _ in 0..1000 {
        p.cmd("RATE.CHECK")
            .arg("h")
            .arg(100_000)
            .arg(1000)
            .arg("BURST")
            .arg(100)
            .arg("NOW")
            .arg(&now);
    }
    let out: Vec<Vec<i64>> = p.query(&mut c).unwrap();
    assert_eq!(out.iter().filter(|r| r[0] == 1).count(), 100);
    let later = at(1);
    let mut p = redis::pipe();
    p.atomic();
    for _ in 0..1000 {
        p.cmd("RATE.CHECK")
            .arg("h")
            .arg(100_000)
            .arg(1000)
            .arg("BURST")
            .arg(100)
            .arg("NOW")
            .arg(&later);
    }
    let out: Vec<Vec<i64>> = p.query(&mut c).unwrap();
    assert_eq!(out.iter().filter(|r| r[0] == 1).count(), 100);
    // 10,000,000 per second with a burst of 1: one request each 100 ns.
    let h2 = |p: &mut redis::Pipeline| {
        p.cmd("RATE.CHECK")
            .arg("h2")
            .arg(10_000_000)
            .arg(1000)
            .arg("BURST")
            .arg(1)
            .arg("NOW")
            .arg(at(0));
    };
    let mut p = redis::pipe();
    p.atomic();
    h2(&mut p);
    h2(&mut p);
    let out: Vec<Vec<i64>> = p.query(&mut c).unwrap();
    assert_eq!(
        out,
        vec![vec![1, 10_000_000, 0, -1, 1], vec![0, 10_000_000, 0, 1, 1]]
    );
    // A period of a day: 7 per day.
    assert_eq!(
        check(&mut c, "d", &["7", "86400000", "BURST", "1"], 0),
        "[1, 7, 0, -1, 12342858]"
    );
    assert_eq!(
        check(&mut c, "d", &["7", "86400000", "BURST", "1"], 0),
        "[0, 7, 0, 12342858, 12342858]"
    );
}

#[test]
fn keys_expire_once_idle() {
    let srv = Server::start();
    let mut c = srv.conn();
    let now = util_now().to_string();
    let algos = ["GCRA", "FIXED", "SLIDING", "LOG", "BUCKET"];
    for algo in algos {
        let k = format!("e{algo}");
        run(
            &mut c,
            &["RATE.CHECK", &k, "2", "60", "ALGO", algo, "NOW", &now],
        );
        let pttl = int(&mut c, &["PTTL", &k]);
        assert!(pttl > 0 && pttl <= 120, "{algo}: pttl {pttl}");
    }
    // A day-long limiter keeps its key for as long as it is not full.
    run(
        &mut c,
        &["RATE.CHECK", "long", "1", "86400000", "NOW", &now],
    );
    let pttl = int(&mut c, &["PTTL", "long"]);
    assert!(pttl > 86_390_000 && pttl <= 86_400_000, "{pttl}");
    std::thread::sleep(Duration::from_millis(250));
    for algo in algos {
        assert_eq!(
            int(&mut c, &["EXISTS", &format!("e{algo}")]),
            0,
            "{algo} did not expire"
        );
    }
}

fn util_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn bad_input_is_refused_with_nothing_written() {
    let srv = Server::start();
    let mut c = srv.conn();
    let cases: &[(&[&str], &str)] = &[
        (
            &["RATE.CHECK", "x", "1"],
            "ERR wrong number of arguments for 'rate.check' command",
        ),
        (
            &["RATE.CHECK", "x", "a", "1000"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["RATE.CHECK", "x", "0", "1000"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["RATE.CHECK", "x", "1", "0"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["RATE.CHECK", "x", "1", "-5"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["RATE.CHECK", "x", "1", "1000", "ALGO"],
            "ERR syntax error",
        ),
        (
            &["RATE.CHECK", "x", "1", "1000", "ALGO", "LEAKY"],
            "ERR syntax error",
        ),
        (
            &["RATE.CHECK", "x", "1", "1000", "BURST", "0"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["RATE.CHECK", "x", "1", "1000", "COST", "-1"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["RATE.CHECK", "x", "1", "1000", "COST", "1.5"],
            "ERR value is not an integer or out of range",
        ),
        (&["RATE.CHECK", "x", "1", "1000", "NOW"], "ERR syntax error"),
        (
            &["RATE.CHECK", "x", "1", "1000", "NOW", "-1"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["RATE.CHECK", "x", "1", "1000", "FAST"],
            "ERR syntax error",
        ),
        (
            &[
                "RATE.CHECK",
                "x",
                "1",
                "1000",
                "ALGO",
                "FIXED",
                "BURST",
                "2",
            ],
            "ERR rate: BURST applies only to GCRA and BUCKET",
        ),
        (
            &["RATE.CHECK", "x", "100001", "1000", "ALGO", "LOG"],
            "ERR rate: LOG limit must be at most 100000",
        ),
        (
            &["RATE.CHECK", "x", "1", "1000000000000", "BURST", "5000"],
            "ERR rate: limit or burst * period-ms exceeds 2^52",
        ),
        (
            &[
                "RATE.CHECK",
                "x",
                "10000",
                "1000000000000",
                "ALGO",
                "SLIDING",
            ],
            "ERR rate: limit or burst * period-ms exceeds 2^52",
        ),
        (
            &["RATE.MULTI", "1", "x", "LIMITS", "1"],
            "ERR wrong number of arguments for 'rate.multi' command",
        ),
        (
            &["RATE.MULTI", "0", "x", "LIMITS", "1", "1"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["RATE.MULTI", "5", "x", "LIMITS", "1", "1"],
            "ERR syntax error",
        ),
        (
            &["RATE.MULTI", "1", "x", "LIMIT", "1", "1"],
            "ERR syntax error",
        ),
        (
            &["RATE.MULTI", "2", "x", "y", "LIMITS", "1", "1", "1"],
            "ERR wrong number of arguments for 'rate.multi' command",
        ),
        (
            &["RATE.MULTI", "1", "x", "LIMITS", "1", "1", "BURST", "1"],
            "ERR syntax error",
        ),
        (
            &["RATE.THROTTLE", "x", "1", "1"],
            "ERR wrong number of arguments for 'rate.throttle' command",
        ),
        (
            &["RATE.THROTTLE", "x", "-1", "1", "1"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["RATE.THROTTLE", "x", "1", "0", "1"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["RATE.THROTTLE", "x", "1", "1", "1", "2", "3"],
            "ERR syntax error",
        ),
        (
            &["RATE.THROTTLE", "x", "1", "1", "1", "NOW"],
            "ERR syntax error",
        ),
        (
            &["RATE.RESET"],
            "ERR wrong number of arguments for 'rate.reset' command",
        ),
    ];
    for (args, want) in cases {
        assert_eq!(&err(&mut c, args), want, "{args:?}");
    }
    assert_eq!(int(&mut c, &["DBSIZE"]), 0, "an error wrote something");
}

#[test]
fn wrong_kinds_of_key_are_refused() {
    let srv = Server::start();
    let mut c = srv.conn();
    const WT: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
    run(&mut c, &["SET", "str", "hello"]);
    run(&mut c, &["SET", "num", "12345"]);
    run(&mut c, &["HSET", "hash", "f", "v"]);
    run(&mut c, &["LPUSH", "list", "a"]);
    run(&mut c, &["SADD", "set", "a"]);
    run(&mut c, &["ZADD", "zset", "1", "a"]);
    let algos = ["GCRA", "FIXED", "SLIDING", "LOG", "BUCKET"];
    for k in ["str", "num", "hash", "list", "set"] {
        for a in algos {
            assert_eq!(
                err(&mut c, &["RATE.CHECK", k, "1", "1000", "ALGO", a]),
                WT,
                "{k} {a}"
            );
        }
        assert_eq!(err(&mut c, &["RATE.THROTTLE", k, "1", "1", "1"]), WT, "{k}");
        assert_eq!(
            err(&mut c, &["RATE.MULTI", "1", k, "LIMITS", "1", "1000"]),
            WT,
            "{k}"
        );
        assert_eq!(err(&mut c, &["RATE.RESET", k]), WT, "{k}");
    }
    for a in ["GCRA", "FIXED", "SLIDING", "BUCKET"] {
        assert_eq!(
            err(&mut c, &["RATE.CHECK", "zset", "1", "1000", "ALGO", a]),
            WT,
            "zset {a}"
        );
    }
    // One limiter per key: another algorithm of the same Redis type is a
    // clear error, of another type WRONGTYPE.
    for a in algos {
        check(&mut c, &format!("L{a}"), &["5", "100000", "ALGO", a], 0);
    }
    let holds = |x: &str| format!("ERR rate: key holds a {x} limiter");
    assert_eq!(
        err(
            &mut c,
            &["RATE.CHECK", "LGCRA", "5", "1000", "ALGO", "FIXED"]
        ),
        holds("gcra")
    );
    assert_eq!(
        err(&mut c, &["RATE.CHECK", "LFIXED", "5", "1000"]),
        holds("fixed")
    );
    assert_eq!(
        err(&mut c, &["RATE.THROTTLE", "LFIXED", "1", "1", "1"]),
        holds("fixed")
    );
    assert_eq!(
        err(
            &mut c,
            &["RATE.CHECK", "LSLIDING", "5", "1000", "ALGO", "BUCKET"]
        ),
        holds("sliding")
    );
    assert_eq!(
        err(
            &mut c,
            &["RATE.CHECK", "LBUCKET", "5", "1000", "ALGO", "SLIDING"]
        ),
        holds("bucket")
    );
    assert_eq!(
        err(&mut c, &["RATE.CHECK", "LLOG", "5", "1000", "ALGO", "GCRA"]),
        WT
    );
    assert_eq!(
        err(
            &mut c,
            &["RATE.CHECK", "LGCRA", "5", "1000", "ALGO", "BUCKET"]
        ),
        WT
    );
    assert_eq!(run(&mut c, &["GET", "str"]), "hello");
    assert_eq!(run(&mut c, &["GET", "num"]), "12345");
    assert_eq!(run(&mut c, &["HGETALL", "hash"]), "[f, v]");
    assert_eq!(int(&mut c, &["DBSIZE"]), 11);
}

#[test]
fn reset_drops_state() {
    let srv = Server::start();
    let mut c = srv.conn();
    for a in ["GCRA", "FIXED", "SLIDING", "LOG", "BUCKET"] {
        let k = format!("r{a}");
        check(&mut c, &k, &["1", "100000", "ALGO", a], 0);
        assert!(check(&mut c, &k, &["1", "100000", "ALGO", a], 0).starts_with("[0,"));
        assert_eq!(int(&mut c, &["RATE.RESET", &k]), 1);
        assert_eq!(int(&mut c, &["RATE.RESET", &k]), 0);
        assert!(
            check(&mut c, &k, &["1", "100000", "ALGO", a], 0).starts_with("[1,"),
            "{a}"
        );
    }
}

#[test]
fn concurrent_clients_never_exceed_the_burst() {
    let srv = Server::start();
    let port = srv.port;
    let handles: Vec<_> = (0..8)
        .map(|_| {
            std::thread::spawn(move || {
                let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
                let mut c = client.get_connection().unwrap();
                let mut n = 0;
                for _ in 0..500 {
                    let r: Vec<i64> = redis::cmd("RATE.MULTI")
                        .arg(2)
                        .arg("c:{1}:a")
                        .arg("c:{1}:b")
                        .arg("LIMITS")
                        .arg(1000)
                        .arg(3_600_000)
                        .arg(700)
                        .arg(3_600_000)
                        .query(&mut c)
                        .unwrap();
                    let g: Vec<i64> = redis::cmd("RATE.CHECK")
                        .arg("c:g")
                        .arg(300)
                        .arg(3_600_000)
                        .arg("ALGO")
                        .arg("SLIDING")
                        .query(&mut c)
                        .unwrap();
                    n += r[0] * 1000 + g[0];
                }
                n
            })
        })
        .collect();
    let total: i64 = handles.into_iter().map(|h| h.join().unwrap()).sum();
    assert_eq!(total / 1000, 700, "MULTI: exactly the tighter rule's burst");
    assert_eq!(total % 1000, 300, "SLIDING: exactly the limit");
}

/// Runs every write command of the family, without NOW (the master's clock
/// must reach the replica), plus a few with NOW.
fn workload(c: &mut Connection) {
    for a in ["GCRA", "FIXED", "SLIDING", "LOG", "BUCKET"] {
        for i in 0..4 {
            let k = format!("w{a}{}", i % 2);
            run(c, &["RATE.CHECK", &k, "3", "60000", "ALGO", a]);
            run(c, &["RATE.CHECK", &k, "3", "60000", "ALGO", a, "COST", "2"]);
        }
        run(
            c,
            &[
                "RATE.CHECK",
                &format!("n{a}"),
                "3",
                "60000",
                "ALGO",
                a,
                "NOW",
                &at(5),
            ],
        );
    }
    for _ in 0..3 {
        run(
            c,
            &[
                "RATE.MULTI",
                "2",
                "m:{1}:a",
                "m:{1}:b",
                "LIMITS",
                "2",
                "60000",
                "5",
                "600000",
            ],
        );
        run(c, &["RATE.THROTTLE", "t", "2", "10", "60"]);
        run(c, &["RATE.THROTTLE", "t2", "2", "10", "60", "2"]);
    }
    run(c, &["RATE.RESET", "wGCRA1"]);
    run(c, &["RATE.RESET", "wLOG1"]);
}

fn expiry_times(c: &mut Connection) -> Vec<(String, i64)> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let t = int(c, &["PEXPIRETIME", &k]);
            (k, t)
        })
        .collect()
}

#[test]
fn replica_ends_identical_including_ttls() {
    let pair = Pair::start();
    let mut m = pair.master.conn();
    workload(&mut m);
    pair.assert_equal();
    let mut r = pair.replica.conn();
    let times = expiry_times(&mut m);
    assert!(times.iter().all(|(_, t)| *t > 0), "{times:?}");
    assert_eq!(times, expiry_times(&mut r), "absolute expiry times differ");
}

#[test]
fn aof_replay_ends_identical_including_ttls() {
    let mut srv = start_aof();
    let mut c = srv.conn();
    workload(&mut c);
    let before = expiry_times(&mut c);
    drop(c);
    assert_aof_restart_equal(&mut srv);
    let mut c = srv.conn();
    assert_eq!(expiry_times(&mut c), before);
}

#[test]
fn rdb_reload_ends_identical() {
    let srv = Server::start();
    let mut c = srv.conn();
    workload(&mut c);
    assert_rdb_reload_equal(&srv);
}

#[test]
fn info_counts_and_events_fire() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]);
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/", srv.port)).unwrap();
    let mut sub = client.get_connection().unwrap();
    let mut ps = sub.as_pubsub();
    ps.psubscribe("__keyevent@0__:hotpath.rate.*").unwrap();
    ps.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    check(&mut c, "i", &["1", "100000"], 0);
    check(&mut c, "i", &["1", "100000"], 0);
    run(&mut c, &["RATE.RESET", "i"]);
    let first: String = ps.get_message().unwrap().get_channel_name().to_string();
    let second: String = ps.get_message().unwrap().get_channel_name().to_string();
    assert_eq!(first, "__keyevent@0__:hotpath.rate.consume");
    assert_eq!(second, "__keyevent@0__:hotpath.rate.reset");
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    assert!(info.contains("rate_allowed:1"), "{info}");
    assert!(info.contains("rate_limited:1"), "{info}");
    assert!(info.contains("rate_resets:1"), "{info}");
}
