//! RATE on a real redis-server with the module loaded, through the `redis`
//! crate: every algorithm's allow/deny sequence at fixed NOW values, COST
//! and PEEK, MULTI all-or-nothing, THROTTLE against redis-cell's documented
//! example, high rates, TTLs, every error with nothing written,
//! concurrency, replication, AOF and RDB.

use crate::common;

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
    // The state is the theoretical arrival time, exact: T0 + 72 s (in
    // ms plus a fraction of 1000 × limit).
    assert_eq!(
        run(&mut c, &["GET", "g"]),
        format!("gcra:{}:0:5000", T0 + 72000)
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
    assert_eq!(
        run(&mut c, &["GET", "s"]),
        format!("sliding:{}:3:10", T0 + 60000)
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
    // The entry at T0 left the window and was dropped. Entries are
    // scored by their microsecond and named after it.
    assert_eq!(int(&mut c, &["ZCARD", "l"]), 3);
    let t1 = (T0 + 1000) * 1000;
    assert_eq!(
        run(&mut c, &["ZRANGE", "l", "0", "0", "WITHSCORES"]),
        format!("[{t1}-0, {t1}]")
    );
    // COST adds one entry per unit, numbered within the microsecond.
    assert!(
        check(&mut c, "l2", &["5", "60000", "ALGO", "LOG", "COST", "3"], 0)
            .starts_with("[1, 5, 2,")
    );
    let t = T0 * 1000;
    assert_eq!(
        run(&mut c, &["ZRANGE", "l2", "0", "-1"]),
        format!("[{t}-0, {t}-1, {t}-2]")
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
        run(&mut c, &["GET", "b"]),
        format!("bucket:0:0:{}", (T0 + 60000) * 1000)
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
        // Expiry times are rounded up from the microsecond: at most one
        // millisecond more than the time to full.
        let pttl = int(&mut c, &["PTTL", &k]);
        assert!(pttl > 0 && pttl <= 121, "{algo}: pttl {pttl}");
    }
    // A day-long limiter keeps its key for as long as it is not full.
    run(
        &mut c,
        &["RATE.CHECK", "long", "1", "86400000", "NOW", &now],
    );
    let pttl = int(&mut c, &["PTTL", "long"]);
    assert!(pttl > 86_390_000 && pttl <= 86_400_001, "{pttl}");
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
            &["RATE.CHECK", "x", "1", "1000000000000", "BURST", "5"],
            "ERR rate: burst * period-ms / limit exceeds 4500000000000",
        ),
        (
            &["RATE.CHECK", "x", "1", "1000", "NOW", "4500000000001"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["RATE.CHECK", "x", "1", "1000", "NOWUS", "4500000000000001"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["RATE.CHECK", "x", "1", "1000", "NOWUS"],
            "ERR syntax error",
        ),
        (
            &["RATE.CHECK", "x", "5", "1000", "ALGO", "LOG", "COST", "101"],
            "ERR rate: LOG cost must be at most 100",
        ),
        (
            &["RATE.THROTTLE", "x", "999999999999", "1", "1000000000"],
            "ERR rate: burst * period-ms / limit exceeds 4500000000000",
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
            &["RATE.MULTI", "101", "x", "LIMITS", "1", "1"],
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
        holds("gcra")
    );
    assert_eq!(
        err(
            &mut c,
            &["RATE.CHECK", "LSLIDING", "5", "1000", "ALGO", "FIXED"]
        ),
        holds("sliding")
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
    // Sub-millisecond instants given explicitly.
    let us = (T0 * 1000 + 123).to_string();
    for a in ["GCRA", "FIXED", "SLIDING", "LOG", "BUCKET"] {
        run(
            c,
            &[
                "RATE.CHECK",
                &format!("u{a}"),
                "3",
                "60000",
                "ALGO",
                a,
                "NOWUS",
                &us,
            ],
        );
    }
    // States of the millisecond version, replaced by their next write.
    let t = util_now();
    let ts = t.to_string();
    let window = (t - t % 60_000).to_string();
    let later = (t + 120_000).to_string();
    run(
        c,
        &[
            "HSET", "oldS", "algo", "sliding", "window", &window, "count", "1", "prev", "2",
        ],
    );
    run(c, &["PEXPIREAT", "oldS", &later]);
    run(
        c,
        &[
            "HSET", "oldB", "algo", "bucket", "tokens", "3", "carry", "10", "ts", &ts,
        ],
    );
    run(c, &["PEXPIREAT", "oldB", &later]);
    run(
        c,
        &[
            "SET",
            "oldG",
            &format!("gcra:{}:1:3", t + 1000),
            "PXAT",
            &later,
        ],
    );
    run(c, &["ZADD", "oldL", &ts, &format!("{t}-0")]);
    run(c, &["PEXPIREAT", "oldL", &later]);
    run(c, &["RATE.CHECK", "oldS", "5", "60000", "ALGO", "SLIDING"]);
    run(c, &["RATE.CHECK", "oldB", "5", "60000", "ALGO", "BUCKET"]);
    run(c, &["RATE.CHECK", "oldG", "3", "60000"]);
    run(c, &["RATE.CHECK", "oldL", "5", "60000", "ALGO", "LOG"]);
    // A LOG longer than the module walks (the ZCOUNT path), whose entries
    // then leave the window and are trimmed in bounded batches.
    let long = ["RATE.CHECK", "long", "1000", "300", "ALGO", "LOG", "COST"];
    for _ in 0..4 {
        run(c, &[&long[..], &["100"]].concat());
    }
    std::thread::sleep(Duration::from_millis(200));
    run(c, &[&long[..], &["1"]].concat());
    std::thread::sleep(Duration::from_millis(150));
    run(c, &[&long[..], &["1"]].concat());
    run(c, &[&long[..], &["3"]].concat());
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
    // The workload's 300 ms LOG limiter would expire while a loaded
    // machine restarts the server: its life is extended (PEXPIRE goes to
    // the AOF as PEXPIREAT, an absolute instant, so the replay matches).
    run(&mut c, &["PEXPIRE", "long", "60000"]);
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
    // The workload's 300 ms LOG limiter may expire between the digest and
    // the reload on a loaded machine (a load drops an expired key): its
    // life is extended, as the AOF test does.
    run(&mut c, &["PEXPIRE", "long", "60000"]);
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
    assert_eq!(first, "__keyevent@0__:hotpath.rate.check");
    assert_eq!(second, "__keyevent@0__:hotpath.rate.reset");
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    assert!(info.contains("rate_allowed:1"), "{info}");
    assert!(info.contains("rate_limited:1"), "{info}");
    assert!(info.contains("rate_resets:1"), "{info}");
}

/// Returns the server's `TIME` in microseconds.
fn time_us(v: &redis::Value) -> i64 {
    let parts: Vec<i64> = redis::from_redis_value(v).unwrap();
    parts[0] * 1_000_000 + parts[1]
}

/// Returns the fewest and the most requests an exact GCRA with no
/// tolerance (one request per `spacing` µs) can let through when request
/// `j` arrives at some instant in `[before[j], after[j]]` (the brackets
/// follow each other). The most: let each request through as soon as it
/// may arrive at its slot, arriving as early as it can. The fewest: let a
/// request through only when it cannot arrive before its slot, arriving
/// as late as it can.
fn gcra_bounds(before: &[i64], after: &[i64], spacing: i64) -> (usize, usize) {
    let (mut most, mut tat) = (0, i64::MIN);
    for (&b, &e) in before.iter().zip(after) {
        if e >= tat {
            most += 1;
            tat = b.max(tat) + spacing;
        }
    }
    let (mut fewest, mut tat) = (0, i64::MIN);
    for (&b, &e) in before.iter().zip(after) {
        if b >= tat {
            fewest += 1;
            tat = e + spacing;
        }
    }
    (fewest, most)
}

/// Counts the requests an exact GCRA with no tolerance lets through at
/// `spacing` µs when the requests arrive at `times`.
fn exact_gcra(times: &[i64], spacing: i64) -> usize {
    let mut tat = i64::MIN;
    let mut n = 0;
    for &t in times {
        if t >= tat {
            n += 1;
            tat = t + spacing;
        }
    }
    n
}

/// Sends `calls` pipelined, each between two `TIME`s, and returns (the
/// replies, the TIME before each call, the TIME after each call).
fn bracketed(c: &mut Connection, calls: &[Vec<String>]) -> (Vec<redis::Value>, Vec<i64>, Vec<i64>) {
    let mut p = redis::pipe();
    p.cmd("TIME");
    for call in calls {
        let q = p.cmd(&call[0]);
        for a in &call[1..] {
            q.arg(a);
        }
        p.cmd("TIME");
    }
    let out: Vec<redis::Value> = p.query(c).unwrap();
    let times: Vec<i64> = out.iter().step_by(2).map(time_us).collect();
    let replies: Vec<redis::Value> = out.iter().skip(1).step_by(2).cloned().collect();
    (replies, times[..calls.len()].to_vec(), times[1..].to_vec())
}

#[test]
fn the_clock_is_read_to_the_microsecond() {
    // 100,000 per second with no burst tolerance (redis-cell's max_burst
    // 0, RATE.CHECK's BURST 1): one request every 10 µs. Pipelined calls
    // for about 50 ms, each between two TIMEs, so that the test knows the
    // instant of every call to within its bracket. An exact GCRA run on
    // those instants must let the same number through, within 1%; a
    // millisecond clock let about one per millisecond through (52 of
    // 20,000 calls over 51 ms).
    let srv = Server::start();
    let mut c = srv.conn();
    // (command, arguments after the key, whether a reply means allowed)
    type Form<'a> = (&'a str, Vec<&'a str>, fn(&[i64]) -> bool);
    let forms: [Form; 2] = [
        ("RATE.THROTTLE", vec!["0", "100000", "1"], |r| r[0] == 0),
        ("RATE.CHECK", vec!["100000", "1000", "BURST", "1"], |r| {
            r[0] == 1
        }),
    ];
    for (i, (cmd, args, allowed)) in forms.iter().enumerate() {
        let key = format!("fast{i}");
        let mut n = 12_000;
        loop {
            let calls: Vec<Vec<String>> = (0..n)
                .map(|_| {
                    let mut v = vec![cmd.to_string(), key.clone()];
                    v.extend(args.iter().map(|a| a.to_string()));
                    v
                })
                .collect();
            let (replies, before, after) = bracketed(&mut c, &calls);
            let span = after[n - 1] - before[0];
            if span < 45_000 && n < 200_000 {
                // Too fast a machine for 50 ms: send more.
                n = n * 50_000 / span.max(1) as usize + 1000;
                run(&mut c, &["DEL", &key]);
                continue;
            }
            let got = replies
                .iter()
                .filter(|v| allowed(&redis::from_redis_value::<Vec<i64>>(v).unwrap()))
                .count();
            // Any exact GCRA, whatever the instant of each call within its
            // bracket, lets through between `fewest` and `most`.
            let (fewest, most) = gcra_bounds(&before, &after, 10);
            let mid: Vec<i64> = before
                .iter()
                .zip(&after)
                .map(|(b, e)| (b + e) / 2)
                .collect();
            let middle = exact_gcra(&mid, 10);
            let report = format!(
                "{cmd}: {got} allowed of {n} over {span} µs; an exact GCRA on the TIME brackets: \
                 {fewest}..={most}, {middle} with each call mid-bracket"
            );
            eprintln!("{report}");
            assert!((fewest..=most).contains(&got), "{report}");
            // A millisecond clock lets at most one per millisecond through.
            let per_ms = span as usize / 1000 + 1;
            assert!(got > 3 * per_ms, "{report}");
            break;
        }
    }
}

#[test]
fn explicit_microseconds_are_exact() {
    let srv = Server::start();
    let mut c = srv.conn();
    // 100,000 per second, no tolerance, a request every 2.5 µs for 50 ms:
    // exactly one in four passes. (In MULTI/EXEC: the server's clock, from
    // which the 10 µs TTL counts, stands still meanwhile.)
    let t = T0 * 1000;
    let mut p = redis::pipe();
    p.atomic();
    for i in 0..20_000i64 {
        p.cmd("RATE.THROTTLE")
            .arg("k")
            .arg(0)
            .arg(100_000)
            .arg(1)
            .arg("NOWUS")
            .arg(t + i * 5 / 2);
    }
    let out: Vec<Vec<i64>> = p.query(&mut c).unwrap();
    assert_eq!(out.iter().filter(|r| r[0] == 0).count(), 5000);
    // NOW in ms is NOWUS × 1000: the same replies and state.
    let a = run(
        &mut c,
        &["RATE.CHECK", "a", "3", "1000", "NOW", &T0.to_string()],
    );
    let b = run(
        &mut c,
        &[
            "RATE.CHECK",
            "b",
            "3",
            "1000",
            "NOWUS",
            &(T0 * 1000).to_string(),
        ],
    );
    assert_eq!(a, b);
    assert_eq!(run(&mut c, &["GET", "a"]), run(&mut c, &["GET", "b"]));
    // A request 1 µs before its slot waits, at its slot passes.
    run(
        &mut c,
        &[
            "RATE.CHECK",
            "s",
            "3",
            "1000",
            "BURST",
            "1",
            "NOWUS",
            &t.to_string(),
        ],
    );
    let slot = t + 333_334; // 333,333⅓ µs, rounded up
    let early = run(
        &mut c,
        &[
            "RATE.CHECK",
            "s",
            "3",
            "1000",
            "BURST",
            "1",
            "NOWUS",
            &(slot - 1).to_string(),
        ],
    );
    assert_eq!(early, "[0, 3, 0, 1, 1]");
    let on = run(
        &mut c,
        &[
            "RATE.CHECK",
            "s",
            "3",
            "1000",
            "BURST",
            "1",
            "NOWUS",
            &slot.to_string(),
        ],
    );
    assert!(on.starts_with("[1,"), "{on}");
}

#[test]
fn states_of_the_millisecond_version_are_read_exactly() {
    let srv = Server::start();
    let mut c = srv.conn();
    let t0 = T0.to_string();
    // GCRA `ms + num/limit`: the same debt. 3 per minute, burst 5, a debt
    // of 30,000⅔ ms = 1.5 requests and a bit: 3 more pass, not 4.
    run(&mut c, &["SET", "g", &format!("gcra:{}:2:3", T0 + 30_000)]);
    for want in ["[1, 3, 2,", "[1, 3, 1,", "[1, 3, 0,", "[0, 3, 0,"] {
        let r = check(&mut c, "g", &["3", "60000", "BURST", "5"], 0);
        assert!(r.starts_with(want), "{r}");
    }
    assert_eq!(
        run(&mut c, &["GET", "g"]),
        format!("gcra:{}:2000:3000", T0 + 90_000),
        "rewritten in the microsecond form, the same instant"
    );
    // SLIDING and BUCKET Hashes become Strings on their next write.
    run(
        &mut c,
        &[
            "HSET", "s", "algo", "sliding", "window", &t0, "count", "4", "prev", "7",
        ],
    );
    assert_eq!(
        check(
            &mut c,
            "s",
            &["10", "60000", "ALGO", "SLIDING", "PEEK"],
            30_000
        ),
        "[1, 10, 1, -1, 90000]",
        "7 × 0.5 + 4 + 1 = 8.5: one more after this one"
    );
    assert_eq!(run(&mut c, &["TYPE", "s"]), "hash", "PEEK wrote");
    check(&mut c, "s", &["10", "60000", "ALGO", "SLIDING"], 30_000);
    assert_eq!(run(&mut c, &["GET", "s"]), format!("sliding:{T0}:5:7"));
    run(
        &mut c,
        &[
            "HSET", "b", "algo", "bucket", "tokens", "2", "carry", "400", "ts", &t0,
        ],
    );
    // 1 per second, burst 5: 2.4 tokens at T0, 3 at T0 + 600 ms.
    assert!(check(
        &mut c,
        "b",
        &["1", "1000", "ALGO", "BUCKET", "BURST", "5", "COST", "3"],
        599
    )
    .starts_with("[0,"));
    assert!(check(
        &mut c,
        "b",
        &["1", "1000", "ALGO", "BUCKET", "BURST", "5", "COST", "3"],
        600
    )
    .starts_with("[1,"));
    assert_eq!(
        run(&mut c, &["GET", "b"]),
        format!("bucket:0:0:{}", (T0 + 600) * 1000)
    );
    // A LOG in milliseconds keeps its resolution (and its names).
    run(
        &mut c,
        &[
            "ZADD",
            "l",
            &t0,
            &format!("{T0}-0"),
            &t0,
            &format!("{T0}-1"),
        ],
    );
    let a = ["3", "60000", "ALGO", "LOG"];
    assert!(check(&mut c, "l", &a, 10).starts_with("[1, 3, 0,"));
    assert_eq!(check(&mut c, "l", &a, 20), "[0, 3, 0, 59980, 59990]");
    assert_eq!(
        run(&mut c, &["ZRANGE", "l", "0", "-1", "WITHSCORES"]),
        format!("[{T0}-0, {T0}, {T0}-1, {T0}, {}-0, {}]", T0 + 10, T0 + 10)
    );
    // An old Hash is still refused for another algorithm, by name.
    run(
        &mut c,
        &[
            "HSET", "s2", "algo", "sliding", "window", "1", "count", "1", "prev", "1",
        ],
    );
    assert_eq!(
        err(&mut c, &["RATE.CHECK", "s2", "1", "1000"]),
        "ERR rate: key holds a sliding limiter"
    );
}

#[test]
fn corrupt_states_are_refused_naming_the_key() {
    let srv = Server::start();
    let mut c = srv.conn();
    let cases: &[(&str, &[&str], &[&str], &str)] = &[
        (
            "g1",
            &["SET", "g1", "gcra:1:5:3"],
            &["GCRA"],
            "ERR rate: corrupt data in 'g1'",
        ),
        (
            "g2",
            &["SET", "g2", "gcra:x"],
            &["GCRA", "FIXED"],
            "ERR rate: corrupt data in 'g2'",
        ),
        (
            "g3",
            &["SET", "g3", "gcra:99999999999999:0:1"],
            &["GCRA"],
            "ERR rate: corrupt data in 'g3'",
        ),
        (
            "f1",
            &["SET", "f1", "fixed:1:1000000000001"],
            &["FIXED"],
            "ERR rate: corrupt data in 'f1'",
        ),
        (
            "s1",
            &["SET", "s1", "sliding:1:2"],
            &["SLIDING"],
            "ERR rate: corrupt data in 's1'",
        ),
        (
            "b1",
            &["SET", "b1", "bucket:-1:0:0"],
            &["BUCKET"],
            "ERR rate: corrupt data in 'b1'",
        ),
        (
            "h1",
            &[
                "HSET", "h1", "algo", "bucket", "tokens", "x", "carry", "0", "ts", "0",
            ],
            &["BUCKET"],
            "ERR rate: corrupt data in 'h1' field 'tokens'",
        ),
        (
            "h2",
            &[
                "HSET", "h2", "algo", "sliding", "window", "0", "count", "-3", "prev", "0",
            ],
            &["SLIDING"],
            "ERR rate: corrupt data in 'h2' field 'count'",
        ),
        (
            "z1",
            &["ZADD", "z1", "1.5", "0000000000000001-0"],
            &["LOG"],
            "ERR rate: corrupt data in 'z1'",
        ),
        (
            "z2",
            &["ZADD", "z2", "+inf", "x"],
            &["LOG"],
            "ERR rate: corrupt data in 'z2'",
        ),
        (
            "w\nx",
            &["SET", "w\nx", "gcra:"],
            &["GCRA"],
            "ERR rate: corrupt data in 'w?x'",
        ),
    ];
    for (key, setup, algos, want) in cases {
        run(&mut c, setup);
        let before = dump_keys(&mut c, "*");
        for a in *algos {
            assert_eq!(
                &err(&mut c, &["RATE.CHECK", key, "3", "60000", "ALGO", a]),
                want,
                "{key} {a}"
            );
        }
        if algos.contains(&"GCRA") {
            assert_eq!(&err(&mut c, &["RATE.THROTTLE", key, "1", "1", "1"]), want);
            assert_eq!(
                &err(&mut c, &["RATE.MULTI", "1", key, "LIMITS", "1", "1000"]),
                want
            );
        }
        assert_eq!(dump_keys(&mut c, "*"), before, "{key}: an error wrote");
        // RATE.RESET drops a damaged limiter (the remedy).
        assert_eq!(int(&mut c, &["RATE.RESET", key]), 1, "{key}");
    }
    // Type checks come first: a MULTI with a damaged limiter and a List
    // answers WRONGTYPE and writes nothing.
    run(&mut c, &["SET", "bad", "gcra:1:5:3"]);
    run(&mut c, &["LPUSH", "list", "a"]);
    assert!(err(
        &mut c,
        &[
            "RATE.MULTI",
            "2",
            "bad",
            "list",
            "LIMITS",
            "1",
            "1",
            "1",
            "1"
        ]
    )
    .starts_with("WRONGTYPE"));
}

#[test]
fn the_largest_values_neither_overflow_nor_wrap() {
    let srv = Server::start();
    let mut c = srv.conn();
    let max = "1000000000000";
    let now = ["NOW", "4500000000000"];
    for a in ["GCRA", "FIXED", "SLIDING", "BUCKET"] {
        let r = run(
            &mut c,
            &[
                &["RATE.CHECK", a, max, max, "ALGO", a, "COST", max][..],
                &now[..],
            ]
            .concat(),
        );
        assert!(r.starts_with("[1, 1000000000000, 0, -1, "), "{a}: {r}");
        let r = run(
            &mut c,
            &[&["RATE.CHECK", a, max, max, "ALGO", a][..], &now[..]].concat(),
        );
        assert!(r.starts_with("[0, 1000000000000, 0, "), "{a}: {r}");
        let fields: Vec<i64> = r[1..r.len() - 1]
            .split(", ")
            .map(|x| x.parse().unwrap())
            .collect();
        assert!(
            fields
                .iter()
                .all(|&f| (-1..=1_000_000_000_000_000).contains(&f)),
            "{a}: {r}"
        );
    }
    let r = run(
        &mut c,
        &[
            &["RATE.THROTTLE", "t", "999999999999", max, "1000000000"][..],
            &now[..],
        ]
        .concat(),
    );
    assert_eq!(r, "[0, 1000000000000, 999999999999, -1, 1]");
    // A stored state at the largest instant a state may name.
    run(&mut c, &["SET", "far", "gcra:9000000000000:0:1"]);
    let r = check(&mut c, "far", &["1", "1000", "BURST", "1"], 0);
    assert!(r.starts_with("[0, 1, 0, "), "{r}");
}

#[test]
fn work_per_call_is_bounded() {
    let srv = Server::start();
    let mut c = srv.conn();
    // A LOG of 2,000 entries whose window has passed loses at most
    // cost + 128 of them per write (the rest leave with later writes or
    // the key's expiry), and the counts stay exact meanwhile.
    let t = T0 * 1000;
    for i in 0..20 {
        run(
            &mut c,
            &[
                "RATE.CHECK",
                "L",
                "5000",
                "60000",
                "ALGO",
                "LOG",
                "COST",
                "100",
                "NOWUS",
                &(t + i).to_string(),
            ],
        );
    }
    assert_eq!(int(&mut c, &["ZCARD", "L"]), 2000);
    let later = (t + 60_000_000 + 20).to_string();
    let r = run(
        &mut c,
        &[
            "RATE.CHECK",
            "L",
            "5000",
            "60000",
            "ALGO",
            "LOG",
            "COST",
            "2",
            "NOWUS",
            &later,
        ],
    );
    assert_eq!(
        r, "[1, 5000, 4998, -1, 60000]",
        "the old entries no longer count"
    );
    assert_eq!(int(&mut c, &["ZCARD", "L"]), 2000 - 130 + 2);
    // A refusal on a long LOG finds the entry to wait for by rank (the
    // oldest in the window, after 1,870 that left it).
    let l = |limit: &str, peek: &[&str], at: &str| -> Vec<String> {
        [
            &["RATE.CHECK", "L", limit, "60000", "ALGO", "LOG"][..],
            peek,
            &["NOWUS", at],
        ]
        .concat()
        .iter()
        .map(|s| s.to_string())
        .collect()
    };
    let argv = l("2", &[], &later);
    let r = run(&mut c, &argv.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(r, "[0, 2, 0, 60000, 60000]");
    let almost = (t + 60_000_000 + 20 + 59_999_999).to_string();
    let argv = l("2", &["PEEK"], &almost);
    let r = run(&mut c, &argv.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(
        r, "[0, 2, 0, 1, 1]",
        "1 µs before they leave: 1 ms, rounded up"
    );
}

/// Returns the duration (µs) of every logged call of `name`.
fn slowlog_durations(c: &mut Connection, name: &str) -> Vec<i64> {
    let v: Vec<redis::Value> = redis::cmd("SLOWLOG").arg("GET").arg(-1).query(c).unwrap();
    v.iter()
        .filter_map(|e| {
            let e: Vec<redis::Value> = redis::from_redis_value(e).ok()?;
            let args: Vec<String> = redis::from_redis_value(&e[3]).ok()?;
            let d: i64 = redis::from_redis_value(&e[2]).ok()?;
            args[0].eq_ignore_ascii_case(name).then_some(d)
        })
        .collect()
}

#[test]
fn stall_no_rate_command_stalls_the_server() {
    // The largest sizes each command accepts: a LOG of 100,000 entries
    // (its limit) filled 100 at a time, MULTI with 100 rules, the largest
    // values. Each call is repeated and timed by SLOWLOG; the quickest of
    // the repeats must stay under 1 ms (a slower one alone can be the
    // shared machine's noise, the quickest is the command's own cost).
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["CONFIG", "SET", "slowlog-max-len", "100000"]);
    let t = util_now() * 1000;
    let log = |cost: &str, limit: &str, at: i64| -> Vec<String> {
        [
            "RATE.CHECK",
            "L",
            limit,
            "3600000",
            "ALGO",
            "LOG",
            "COST",
            cost,
            "NOWUS",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([at.to_string()])
        .collect()
    };
    for i in 0..1000 {
        let a = log("100", "100000", t + i);
        run(&mut c, &a.iter().map(String::as_str).collect::<Vec<_>>());
    }
    assert_eq!(int(&mut c, &["ZCARD", "L"]), 100_000);
    let keys: Vec<String> = (0..100).map(|i| format!("m{{x}}{i}")).collect();
    let mut multi: Vec<String> = vec!["RATE.MULTI".into(), "100".into()];
    multi.extend(keys.iter().cloned());
    multi.push("LIMITS".into());
    for _ in 0..100 {
        multi.extend(["1000000".to_string(), "60000".to_string()]);
    }
    let max = "1000000000000".to_string();
    let cases: Vec<(&str, Vec<String>)> = vec![
        ("LOG refused, full", log("1", "100000", t + 2000)),
        ("LOG refused, cost 100", log("100", "100000", t + 2000)),
        ("LOG refused, limit lowered", log("1", "10", t + 2000)),
        (
            "LOG allowed, entries trimmed",
            log("100", "100000", t + 3_600_000_000 + 500),
        ),
        ("MULTI, 100 rules", multi),
        (
            "GCRA, largest values",
            ["RATE.CHECK", "G", &max, &max, "COST", &max]
                .map(String::from)
                .to_vec(),
        ),
        (
            "BUCKET, largest values",
            ["RATE.CHECK", "B", &max, &max, "ALGO", "BUCKET", "COST", "1"]
                .map(String::from)
                .to_vec(),
        ),
        (
            "THROTTLE, largest values",
            ["RATE.THROTTLE", "T", "999999999999", &max, "1000000000"]
                .map(String::from)
                .to_vec(),
        ),
    ];
    for (what, args) in &cases {
        run(&mut c, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
        run(&mut c, &["SLOWLOG", "RESET"]);
        for _ in 0..5 {
            run(&mut c, &args.iter().map(String::as_str).collect::<Vec<_>>());
        }
        let d = slowlog_durations(&mut c, &args[0]);
        assert_eq!(d.len(), 5, "{what}");
        let quickest = *d.iter().min().unwrap();
        assert!(quickest < 1000, "{what}: {d:?} µs");
    }
    // RESET of a 100,000-entry LOG frees it in the background (three
    // such LOGs, copied, for three timings).
    for k in ["L1", "L2"] {
        run(&mut c, &["COPY", "L", k]);
    }
    run(&mut c, &["SLOWLOG", "RESET"]);
    for k in ["L", "L1", "L2"] {
        assert_eq!(int(&mut c, &["RATE.RESET", k]), 1);
    }
    let d = slowlog_durations(&mut c, "RATE.RESET");
    assert!(d.iter().min().unwrap() < &1000, "RESET: {d:?} µs");
}
