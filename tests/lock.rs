//! LOCK on a real server: holds, reentrance, release and renew by the
//! owner only, MAXHOLD, fencing tokens, semaphores, every error with
//! nothing written, fair blocking (woken by a release or a lease end, in
//! order, never by polling), 50 concurrent clients, kill -9 under
//! `appendfsync always`, failover, replication, AOF and RDB.

use crate::common;

use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::*;

const T0: i64 = 1_764_720_000_000;

fn at(t: i64) -> String {
    (T0 + t).to_string()
}

fn acquire(c: &mut Connection, key: &str, owner: &str, ttl: i64, t: i64, extra: &[&str]) -> String {
    let (ttl, now) = (ttl.to_string(), at(t));
    let mut args = vec!["LOCK.ACQUIRE", key, owner, &ttl];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["NOW", &now]);
    run(c, &args)
}

fn with_now(c: &mut Connection, args: &[&str], t: i64) -> String {
    let now = at(t);
    let mut a = args.to_vec();
    a.extend_from_slice(&["NOW", &now]);
    run(c, &a)
}

#[test]
fn a_lock_has_one_holder_and_tokens_strictly_increase() {
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(acquire(&mut c, "l", "alice", 1000, 0, &[]), "1");
    assert_eq!(acquire(&mut c, "l", "bob", 1000, 10, &[]), "nil");
    assert_eq!(
        run(&mut c, &["GET", "l"]),
        format!("1:1:{}:0:alice", T0 + 1000)
    );
    // Reentrant: same token, count up, the lease restarts.
    assert_eq!(acquire(&mut c, "l", "alice", 1000, 500, &[]), "1");
    assert_eq!(
        with_now(&mut c, &["LOCK.INFO", "l"], 600),
        "[alice, 1, 2, 900]"
    );
    // Release by anyone else changes nothing.
    assert_eq!(with_now(&mut c, &["LOCK.RELEASE", "l", "bob"], 600), "0");
    assert_eq!(with_now(&mut c, &["LOCK.RELEASE", "l", "alice"], 600), "1");
    assert_eq!(
        with_now(&mut c, &["LOCK.INFO", "l"], 600),
        "[alice, 1, 1, 900]"
    );
    assert_eq!(with_now(&mut c, &["LOCK.RELEASE", "l", "alice"], 600), "1");
    assert_eq!(run(&mut c, &["GET", "l"]), "1:0:0:0:");
    assert_eq!(with_now(&mut c, &["LOCK.INFO", "l"], 600), "[]");
    assert_eq!(with_now(&mut c, &["LOCK.RELEASE", "l", "alice"], 600), "0");
    // A free lock keeps its fence: the next token is larger.
    assert_eq!(acquire(&mut c, "l", "bob", 1000, 700, &[]), "2");
    // The lease ends: the next acquirer gets a new token, and the former
    // holder can no longer release, renew or pass the check.
    assert_eq!(acquire(&mut c, "l", "carol", 1000, 1700, &[]), "3");
    assert_eq!(with_now(&mut c, &["LOCK.RELEASE", "l", "bob"], 1700), "0");
    assert_eq!(
        with_now(&mut c, &["LOCK.RENEW", "l", "bob", "1000"], 1700),
        "0"
    );
    assert_eq!(with_now(&mut c, &["LOCK.CHECK", "l", "2"], 1700), "0");
    assert_eq!(with_now(&mut c, &["LOCK.CHECK", "l", "3"], 1700), "1");
    assert_eq!(with_now(&mut c, &["LOCK.CHECK", "l", "3"], 2700), "0");
    // Even the same owner gets a new token once its lease ended.
    assert_eq!(acquire(&mut c, "l", "carol", 1000, 2700, &[]), "4");
    assert_eq!(run(&mut c, &["PTTL", "l"]), "-1", "the fence never expires");
}

#[test]
fn renew_is_a_watchdog_capped_by_maxhold() {
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(
        acquire(&mut c, "w", "a", 1000, 0, &["MAXHOLD", "2500"]),
        "1"
    );
    assert_eq!(
        with_now(&mut c, &["LOCK.RENEW", "w", "a", "1000"], 900),
        "1000"
    );
    assert_eq!(
        with_now(&mut c, &["LOCK.RENEW", "w", "a", "1000"], 1800),
        "700"
    );
    assert_eq!(
        run(&mut c, &["GET", "w"]),
        format!("1:1:{}:{}:a", T0 + 2500, T0 + 2500)
    );
    // Past MAXHOLD the watchdog cannot keep it: the lock is free.
    assert_eq!(
        with_now(&mut c, &["LOCK.RENEW", "w", "a", "1000"], 2500),
        "0"
    );
    assert_eq!(acquire(&mut c, "w", "b", 1000, 2500, &[]), "2");
    // Renewing never touches another owner's lock.
    let before = run(&mut c, &["GET", "w"]);
    assert_eq!(
        with_now(&mut c, &["LOCK.RENEW", "w", "a", "99999"], 2600),
        "0"
    );
    assert_eq!(run(&mut c, &["GET", "w"]), before);
    // Renew may also shorten the lease.
    assert_eq!(
        with_now(&mut c, &["LOCK.RENEW", "w", "b", "10"], 2600),
        "10"
    );
}

#[test]
fn a_semaphore_admits_up_to_its_limit() {
    let srv = Server::start();
    let mut c = srv.conn();
    let sem = ["LIMIT", "3"];
    assert_eq!(acquire(&mut c, "s", "a", 1000, 0, &sem), "1");
    assert_eq!(acquire(&mut c, "s", "b", 2000, 10, &sem), "2");
    assert_eq!(acquire(&mut c, "s", "c", 3000, 20, &sem), "3");
    assert_eq!(acquire(&mut c, "s", "d", 1000, 30, &sem), "nil");
    // Reentrant per owner; LIMIT may be left out once the semaphore exists.
    assert_eq!(acquire(&mut c, "s", "b", 2000, 40, &[]), "2");
    assert_eq!(
        with_now(&mut c, &["LOCK.INFO", "s"], 100),
        "[a, 1, 1, 900, b, 2, 2, 1940, c, 3, 1, 2920]"
    );
    assert_eq!(with_now(&mut c, &["LOCK.CHECK", "s", "2"], 100), "1");
    assert_eq!(with_now(&mut c, &["LOCK.CHECK", "s", "4"], 100), "0");
    // a's lease ends: d gets a slot and the ended hold is dropped.
    assert_eq!(acquire(&mut c, "s", "d", 1000, 1000, &sem), "4");
    assert_eq!(int(&mut c, &["HEXISTS", "s", "holder:a"]), 0);
    assert_eq!(run(&mut c, &["HGET", "s", "fence"]), "4");
    assert_eq!(run(&mut c, &["HGET", "s", "next"]), at(2000));
    assert_eq!(with_now(&mut c, &["LOCK.RELEASE", "s", "c"], 1000), "1");
    assert_eq!(int(&mut c, &["HEXISTS", "s", "holder:c"]), 0);
    // The limit cannot change while there are holders, nor the kind.
    assert_eq!(
        acquire(&mut c, "s", "e", 1000, 1000, &["LIMIT", "5"]),
        "ERR<ERR lock: LIMIT 5 differs from the lock's limit 3>"
    );
    assert_eq!(
        acquire(&mut c, "s", "e", 1000, 1000, &["LIMIT", "1"]),
        "ERR<ERR lock: LIMIT 1 differs from the lock's limit 3>"
    );
    assert_eq!(acquire(&mut c, "m", "a", 1000, 0, &[]), "1");
    assert_eq!(
        acquire(&mut c, "m", "a", 1000, 0, &["LIMIT", "2"]),
        "ERR<ERR lock: LIMIT 2 differs from the lock's limit 1>"
    );
    // Once empty, a semaphore takes a new limit (its fence goes on).
    assert_eq!(acquire(&mut c, "s", "x", 1000, 5000, &["LIMIT", "2"]), "5");
    assert_eq!(run(&mut c, &["HGET", "s", "limit"]), "2");
    assert_eq!(int(&mut c, &["HLEN", "s"]), 4);
    assert_eq!(run(&mut c, &["PTTL", "s"]), "-1");
}

/// Every key with its type and content, for "nothing was written".
fn snapshot(c: &mut Connection) -> Vec<String> {
    dump_keys(c, "*")
}

#[test]
fn bad_input_is_refused_and_nothing_is_written() {
    let srv = Server::start();
    let mut c = srv.conn();
    acquire(&mut c, "l", "a", 1000, 0, &[]);
    acquire(&mut c, "s", "a", 1000, 0, &["LIMIT", "2"]);
    run(&mut c, &["RPUSH", "list", "x"]);
    let before = snapshot(&mut c);
    let arity = |n: &str| format!("ERR<ERR wrong number of arguments for '{n}' command>");
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["LOCK.ACQUIRE", "l", "a"], arity("lock.acquire")),
        (vec!["LOCK.RELEASE", "l"], arity("lock.release")),
        (vec!["LOCK.RENEW", "l", "a"], arity("lock.renew")),
        (vec!["LOCK.CHECK", "l"], arity("lock.check")),
        (vec!["LOCK.INFO"], arity("lock.info")),
        (
            vec!["LOCK.ACQUIRE", "l", "", "1000"],
            "ERR<ERR lock: user must not be empty>".into(),
        ),
        (
            vec!["LOCK.RELEASE", "l", ""],
            "ERR<ERR lock: user must not be empty>".into(),
        ),
        (
            vec!["LOCK.RENEW", "l", "", "5"],
            "ERR<ERR lock: user must not be empty>".into(),
        ),
        (vec!["LOCK.ACQUIRE", "l", "b", "-1"], NOTINT.into()),
        (vec!["LOCK.ACQUIRE", "l", "b", "0"], NOTINT.into()),
        (vec!["LOCK.ACQUIRE", "l", "b", "1.5"], NOTINT.into()),
        (
            vec!["LOCK.ACQUIRE", "l", "b", "3153600000001"],
            NOTINT.into(),
        ),
        (
            vec!["LOCK.ACQUIRE", "l", "b", "99999999999999999999999"],
            NOTINT.into(),
        ),
        (
            vec!["LOCK.ACQUIRE", "n", "b", "10", "LIMIT", "0"],
            NOTINT.into(),
        ),
        (
            vec!["LOCK.ACQUIRE", "n", "b", "10", "LIMIT", "101"],
            NOTINT.into(),
        ),
        (
            vec!["LOCK.ACQUIRE", "n", "b", "10", "MAXHOLD", "-5"],
            NOTINT.into(),
        ),
        (
            vec!["LOCK.ACQUIRE", "n", "b", "10", "BLOCK", "-1"],
            NOTINT.into(),
        ),
        (
            vec!["LOCK.ACQUIRE", "n", "b", "10", "NOW", "-1"],
            NOTINT.into(),
        ),
        (
            vec!["LOCK.ACQUIRE", "n", "b", "10", "NOW", "253402300800000"],
            NOTINT.into(),
        ),
        (vec!["LOCK.ACQUIRE", "n", "b", "10", "LIMIT"], SYNTAX.into()),
        (vec!["LOCK.ACQUIRE", "n", "b", "10", "FAIR"], SYNTAX.into()),
        // An option is given once.
        (
            vec!["LOCK.ACQUIRE", "n", "b", "10", "LIMIT", "1", "LIMIT", "1"],
            SYNTAX.into(),
        ),
        (
            vec![
                "LOCK.ACQUIRE",
                "n",
                "b",
                "10",
                "MAXHOLD",
                "5",
                "MAXHOLD",
                "5",
            ],
            SYNTAX.into(),
        ),
        (
            vec!["LOCK.ACQUIRE", "n", "b", "10", "BLOCK", "0", "BLOCK", "0"],
            SYNTAX.into(),
        ),
        (
            vec!["LOCK.ACQUIRE", "n", "b", "10", "NOW", "5", "NOW", "5"],
            SYNTAX.into(),
        ),
        (
            vec!["LOCK.RELEASE", "l", "a", "NOW", "5", "NOW", "5"],
            SYNTAX.into(),
        ),
        (
            vec!["LOCK.RENEW", "l", "a", "10", "NOW", "5", "NOW", "5"],
            SYNTAX.into(),
        ),
        (
            vec!["LOCK.INFO", "l", "NOW", "5", "NOW", "5"],
            SYNTAX.into(),
        ),
        (
            vec!["LOCK.CHECK", "l", "1", "NOW", "5", "NOW", "5"],
            SYNTAX.into(),
        ),
        (vec!["LOCK.RELEASE", "l", "a", "NOW"], SYNTAX.into()),
        (vec!["LOCK.RELEASE", "l", "a", "LATER", "1"], SYNTAX.into()),
        (vec!["LOCK.RENEW", "l", "a", "-10"], NOTINT.into()),
        (vec!["LOCK.CHECK", "l", "x"], NOTINT.into()),
        (vec!["LOCK.INFO", "l", "NOW", "x"], NOTINT.into()),
        (vec!["LOCK.ACQUIRE", "list", "a", "10"], WRONGTYPE.into()),
        (vec!["LOCK.RELEASE", "list", "a"], WRONGTYPE.into()),
        (vec!["LOCK.RENEW", "list", "a", "10"], WRONGTYPE.into()),
        (vec!["LOCK.INFO", "list"], WRONGTYPE.into()),
        (vec!["LOCK.CHECK", "list", "1"], WRONGTYPE.into()),
        (
            vec!["LOCK.ACQUIRE", "s", "b", "10", "LIMIT", "1"],
            "ERR<ERR lock: LIMIT 1 differs from the lock's limit 2>".into(),
        ),
    ];
    for (args, want) in &cases {
        assert_eq!(&run(&mut c, args), want, "{args:?}");
    }
    assert_eq!(
        snapshot(&mut c),
        before,
        "a refused command wrote something"
    );
}

const NOTINT: &str = "ERR<ERR value is not an integer or out of range>";
const SYNTAX: &str = "ERR<ERR syntax error>";
const WRONGTYPE: &str = "ERR<WRONGTYPE Operation against a key holding the wrong kind of value>";

#[test]
fn hand_edited_state_is_refused_and_left_alone() {
    let srv = Server::start();
    let mut c = srv.conn();
    for v in [
        "foo",
        "1:1:5:0:",
        "0:1:5:0:a",
        "1:0:0:0:a",
        "x:1:5:0:a",
        "9007199254740992:0:0:0:",
    ] {
        run(&mut c, &["SET", "k", v]);
        for args in [
            vec!["LOCK.ACQUIRE", "k", "a", "10"],
            vec!["LOCK.RELEASE", "k", "a"],
            vec!["LOCK.RENEW", "k", "a", "10"],
            vec!["LOCK.INFO", "k"],
            vec!["LOCK.CHECK", "k", "1"],
        ] {
            assert_eq!(
                run(&mut c, &args),
                "ERR<ERR lock: corrupt data in 'k'>",
                "{v} {args:?}"
            );
        }
        assert_eq!(run(&mut c, &["GET", "k"]), v);
    }
    // A semaphore with a bad field.
    run(&mut c, &["DEL", "k"]);
    run(
        &mut c,
        &["HSET", "k", "fence", "3", "limit", "1", "next", "0"],
    );
    assert_eq!(
        run(&mut c, &["LOCK.ACQUIRE", "k", "a", "10"]),
        "ERR<ERR lock: corrupt data in 'k' field 'limit'>"
    );
    run(&mut c, &["HSET", "k", "limit", "2", "next", "5"]);
    run(&mut c, &["HSET", "k", "holder:b", "1:1:nope:0"]);
    assert_eq!(
        run(&mut c, &["LOCK.ACQUIRE", "k", "a", "10"]),
        "ERR<ERR lock: corrupt data in 'k' field 'holder:b'>"
    );
    assert_eq!(
        run(&mut c, &["LOCK.RELEASE", "k", "b"]),
        "ERR<ERR lock: corrupt data in 'k' field 'holder:b'>"
    );
    // The same holder while `next` is 0 (no lease end recorded): found,
    // not counted as a holder, and nothing is written.
    run(&mut c, &["HSET", "k", "next", "0"]);
    let before = run(&mut c, &["HGETALL", "k"]);
    assert_eq!(
        run(&mut c, &["LOCK.ACQUIRE", "k", "a", "10"]),
        "ERR<ERR lock: corrupt data in 'k' field 'holder:b'>"
    );
    assert_eq!(run(&mut c, &["HGETALL", "k"]), before);
    run(&mut c, &["HDEL", "k", "holder:b"]);
    run(&mut c, &["HSET", "k", "fence", "-1"]);
    assert_eq!(
        run(&mut c, &["LOCK.INFO", "k"]),
        "ERR<ERR lock: corrupt data in 'k' field 'fence'>"
    );
    // A fence at 2^53 − 1 cannot issue another token.
    run(&mut c, &["SET", "f", "9007199254740991:0:0:0:"]);
    assert_eq!(
        run(&mut c, &["LOCK.ACQUIRE", "f", "a", "10"]),
        "ERR<ERR lock: integer overflow in 'f'>"
    );
    assert_eq!(run(&mut c, &["GET", "f"]), "9007199254740991:0:0:0:");
}

/// Starts `LOCK.ACQUIRE … BLOCK` on its own connection; the handle
/// returns the reply and when it came.
fn blocked(srv: &Server, args: Vec<String>) -> thread::JoinHandle<(String, Instant)> {
    let mut c = srv.conn();
    thread::spawn(move || {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = run(&mut c, &a);
        (r, Instant::now())
    })
}

fn strs(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// Waits until `n` clients are blocked on the server.
fn wait_blocked(c: &mut Connection, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info: String = redis::cmd("INFO").arg("clients").query(c).unwrap();
        let blocked = info
            .lines()
            .find_map(|l| l.strip_prefix("blocked_clients:"))
            .and_then(|v| v.trim().parse::<usize>().ok())
            .unwrap_or(0);
        if blocked >= n {
            return;
        }
        assert!(Instant::now() < deadline, "never {n} blocked: {info}");
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn waiters_are_served_in_order_on_release() {
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(run(&mut c, &["LOCK.ACQUIRE", "q", "holder", "60000"]), "1");
    let mut waiters = Vec::new();
    for i in 0..4 {
        waiters.push(blocked(
            &srv,
            strs(&[
                "LOCK.ACQUIRE",
                "q",
                &format!("w{i}"),
                "60000",
                "BLOCK",
                "20000",
            ]),
        ));
        wait_blocked(&mut c, i + 1);
    }
    // A newcomer does not jump the line, even with BLOCK 0 elsewhere.
    assert_eq!(run(&mut c, &["LOCK.ACQUIRE", "q", "late", "60000"]), "nil");
    for (i, w) in waiters.into_iter().enumerate() {
        let prev = if i == 0 {
            "holder".to_string()
        } else {
            format!("w{}", i - 1)
        };
        assert_eq!(run(&mut c, &["LOCK.RELEASE", "q", &prev]), "1");
        let (token, _) = w.join().unwrap();
        assert_eq!(token, (i + 2).to_string(), "waiter {i}");
        assert!(run(&mut c, &["LOCK.INFO", "q"]).starts_with(&format!("[w{i}, {}, 1,", i + 2)));
    }
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    assert!(info.contains("lock_handoffs:4"), "{info}");
}

#[test]
fn a_waiter_is_woken_when_the_lease_ends_without_polling() {
    let srv = Server::start();
    let mut c = srv.conn();
    let t0 = now_ms();
    assert_eq!(run(&mut c, &["LOCK.ACQUIRE", "e", "crashed", "700"]), "1");
    let start = Instant::now();
    let w = blocked(
        &srv,
        strs(&["LOCK.ACQUIRE", "e", "next", "5000", "BLOCK", "10000"]),
    );
    let (token, when) = w.join().unwrap();
    assert_eq!(token, "2");
    let waited = when.duration_since(start);
    assert!(
        waited >= Duration::from_millis(600) && waited < Duration::from_millis(5000),
        "woken after {waited:?}"
    );
    let exp: i64 = run(&mut c, &["GET", "e"])
        .split(':')
        .nth(2)
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        exp >= t0 + 700 + 5000,
        "the new lease starts at the hand-off"
    );
    // The server was idle while waiting: a single timer, not a poll loop
    // (a busy wait would run the module's commands or timers every tick).
    let stats = run(&mut c, &["INFO", "commandstats"]);
    let calls = stats
        .split("cmdstat_lock.acquire:calls=")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .unwrap_or("0");
    assert_eq!(calls, "2", "{stats}");
}

#[test]
fn renewing_moves_the_wake_up_and_a_timeout_replies_nil() {
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(run(&mut c, &["LOCK.ACQUIRE", "r", "a", "500"]), "1");
    let start = Instant::now();
    let w = blocked(
        &srv,
        strs(&["LOCK.ACQUIRE", "r", "b", "5000", "BLOCK", "4000"]),
    );
    wait_blocked(&mut c, 1);
    thread::sleep(Duration::from_millis(300));
    assert_eq!(run(&mut c, &["LOCK.RENEW", "r", "a", "1000"]), "1000");
    let (token, when) = w.join().unwrap();
    assert_eq!(token, "2");
    assert!(when.duration_since(start) >= Duration::from_millis(1200));
    // A waiter whose timeout passes gets nil and leaves the line.
    let start = Instant::now();
    let w = blocked(
        &srv,
        strs(&["LOCK.ACQUIRE", "r", "c", "5000", "BLOCK", "300"]),
    );
    let (reply, when) = w.join().unwrap();
    assert_eq!(reply, "nil");
    assert!(when.duration_since(start) < Duration::from_millis(3000));
    assert_eq!(run(&mut c, &["LOCK.RELEASE", "r", "b"]), "1");
    assert_eq!(
        run(&mut c, &["LOCK.INFO", "r"]),
        "[]",
        "the timed-out waiter got nothing"
    );
}

#[test]
fn a_disconnected_waiter_leaves_the_line() {
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(run(&mut c, &["LOCK.ACQUIRE", "d", "a", "60000"]), "1");
    // A client blocks, then is killed while it waits.
    let handle = {
        let mut gone = srv.conn();
        thread::spawn(move || {
            let _ = cmd(
                &mut gone,
                &["LOCK.ACQUIRE", "d", "gone", "60000", "BLOCK", "0"],
            );
        })
    };
    wait_blocked(&mut c, 1);
    let id = run(&mut c, &["CLIENT", "LIST"])
        .lines()
        .find(|l| l.contains("cmd=lock.acquire"))
        .and_then(|l| {
            l.split_whitespace()
                .next()
                .map(|s| s.trim_start_matches("id=").to_string())
        })
        .unwrap();
    assert_eq!(run(&mut c, &["CLIENT", "KILL", "ID", &id]), "1");
    handle.join().unwrap();
    let w = blocked(
        &srv,
        strs(&["LOCK.ACQUIRE", "d", "b", "60000", "BLOCK", "10000"]),
    );
    wait_blocked(&mut c, 1);
    assert_eq!(run(&mut c, &["LOCK.RELEASE", "d", "a"]), "1");
    assert_eq!(w.join().unwrap().0, "2");
    assert!(run(&mut c, &["LOCK.INFO", "d"]).starts_with("[b, 2,"));
}

#[test]
fn block_does_not_wait_inside_multi_or_scripts() {
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(run(&mut c, &["LOCK.ACQUIRE", "x", "a", "60000"]), "1");
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("LOCK.ACQUIRE")
        .arg(&["x", "b", "1000", "BLOCK", "0"]);
    let v: Vec<Value> = pipe.query(&mut c).unwrap();
    assert_eq!(v, vec![Value::Nil]);
    let r = run(
        &mut c,
        &[
            "EVAL",
            "return redis.call('LOCK.ACQUIRE', KEYS[1], 'b', 1000, 'BLOCK', 0)",
            "1",
            "x",
        ],
    );
    assert_eq!(r, "nil");
}

#[test]
fn semaphore_waiters_fill_the_free_slots() {
    let srv = Server::start();
    let mut c = srv.conn();
    for o in ["a", "b"] {
        assert!(
            run(&mut c, &["LOCK.ACQUIRE", "sw", o, "60000", "LIMIT", "2"])
                .parse::<i64>()
                .is_ok()
        );
    }
    let mut ws = Vec::new();
    for i in 0..3 {
        ws.push(blocked(
            &srv,
            strs(&[
                "LOCK.ACQUIRE",
                "sw",
                &format!("w{i}"),
                "60000",
                "BLOCK",
                "10000",
            ]),
        ));
        wait_blocked(&mut c, i + 1);
    }
    assert_eq!(run(&mut c, &["LOCK.RELEASE", "sw", "a"]), "1");
    assert_eq!(ws.remove(0).join().unwrap().0, "3");
    assert_eq!(run(&mut c, &["LOCK.RELEASE", "sw", "b"]), "1");
    assert_eq!(ws.remove(0).join().unwrap().0, "4");
    assert_eq!(run(&mut c, &["LOCK.RELEASE", "sw", "w0"]), "1");
    assert_eq!(ws.remove(0).join().unwrap().0, "5");
}

#[test]
fn fifty_clients_never_hold_one_lock_together() {
    let srv = Server::start();
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let rounds = 20;
    let mut handles = Vec::new();
    for i in 0..50 {
        let mut c = srv.conn();
        let tokens = tokens.clone();
        handles.push(thread::spawn(move || {
            let me = format!("client{i}");
            for _ in 0..rounds {
                let t = loop {
                    let r = run(
                        &mut c,
                        &["LOCK.ACQUIRE", "hot", &me, "30000", "BLOCK", "30000"],
                    );
                    if r != "nil" {
                        break r.parse::<i64>().unwrap();
                    }
                };
                // Inside the critical section: nobody else may be here.
                assert_eq!(int(&mut c, &["INCR", "inside"]), 1, "two holders");
                tokens.lock().unwrap().push(t);
                assert_eq!(int(&mut c, &["DECR", "inside"]), 0);
                assert_eq!(run(&mut c, &["LOCK.RELEASE", "hot", &me]), "1");
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    let tokens = tokens.lock().unwrap();
    assert_eq!(tokens.len(), 50 * rounds);
    assert!(
        tokens.windows(2).all(|w| w[0] < w[1]),
        "tokens must strictly increase in acquisition order"
    );
    let mut c = srv.conn();
    assert_eq!(
        run(&mut c, &["GET", "hot"]),
        format!("{}:0:0:0:", 50 * rounds)
    );
}

#[test]
fn fifty_clients_with_short_leases_get_unique_fenced_tokens() {
    // Leases end while holders still work, so holds overlap in time; each
    // hold still has a token of its own, every token issued went to
    // exactly one client, and a fenced store that keeps the largest token
    // seen refuses every write that came from an older hold.
    let srv = Server::start();
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let store = Arc::new(Mutex::new(0i64));
    let mut handles = Vec::new();
    for i in 0..50 {
        let mut c = srv.conn();
        let (tokens, store) = (tokens.clone(), store.clone());
        handles.push(thread::spawn(move || {
            let me = format!("c{i}");
            for _ in 0..10 {
                let r = run(
                    &mut c,
                    &["LOCK.ACQUIRE", "fenced", &me, "20", "BLOCK", "5000"],
                );
                let Ok(t) = r.parse::<i64>() else { continue };
                tokens.lock().unwrap().push(t);
                thread::sleep(Duration::from_millis((i % 3) as u64 * 10));
                let mut max = store.lock().unwrap();
                *max = (*max).max(t);
                drop(max);
                run(&mut c, &["LOCK.RELEASE", "fenced", &me]);
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    let mut tokens = tokens.lock().unwrap().clone();
    tokens.sort();
    let n = tokens.len();
    tokens.dedup();
    assert_eq!(tokens.len(), n, "two holds got the same token");
    let mut c = srv.conn();
    let fence: i64 = run(&mut c, &["GET", "fenced"])
        .split(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(n as i64, fence, "every token issued went to one client");
    assert_eq!(*store.lock().unwrap(), fence);
}

#[test]
fn kill_9_under_appendfsync_always_loses_no_acknowledged_acquisition() {
    let mut srv = start_aof();
    let mut c = srv.conn();
    let mut last = 0;
    for i in 0..200 {
        let r = run(&mut c, &["LOCK.ACQUIRE", "k9", &format!("o{i}"), "600000"]);
        if let Ok(t) = r.parse::<i64>() {
            last = t;
            assert_eq!(run(&mut c, &["LOCK.RELEASE", "k9", &format!("o{i}")]), "1");
        }
    }
    assert_eq!(
        run(&mut c, &["LOCK.ACQUIRE", "k9", "holder", "600000"]),
        "201"
    );
    assert_eq!(last, 200);
    srv.restart(&[]); // stop() is SIGKILL: no shutdown, no final fsync
    let mut c = srv.conn();
    assert!(run(&mut c, &["LOCK.INFO", "k9"]).starts_with("[holder, 201, 1,"));
    assert_eq!(run(&mut c, &["LOCK.ACQUIRE", "k9", "x", "1000"]), "nil");
    assert_eq!(run(&mut c, &["LOCK.RELEASE", "k9", "holder"]), "1");
    assert_eq!(run(&mut c, &["LOCK.ACQUIRE", "k9", "x", "1000"]), "202");
}

#[test]
fn tokens_keep_increasing_after_a_failover() {
    let pair = Pair::start();
    let mut m = pair.master.conn();
    for i in 0..5 {
        run(&mut m, &["LOCK.ACQUIRE", "fo", "a", "100000"]);
        run(&mut m, &["LOCK.RELEASE", "fo", "a"]);
        let _ = i;
    }
    assert_eq!(
        run(&mut m, &["LOCK.ACQUIRE", "fo", "holder", "100000"]),
        "6"
    );
    assert_eq!(
        run(
            &mut m,
            &["LOCK.ACQUIRE", "sem", "a", "100000", "LIMIT", "2"]
        ),
        "1"
    );
    // The acquisition is acknowledged by a replica before the failover.
    let _: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut m).unwrap();
    let Pair {
        mut master,
        replica,
    } = pair;
    master.stop();
    let mut r = replica.conn();
    assert_eq!(run(&mut r, &["REPLICAOF", "NO", "ONE"]), "OK");
    assert!(run(&mut r, &["LOCK.INFO", "fo"]).starts_with("[holder, 6, 1,"));
    assert_eq!(run(&mut r, &["LOCK.ACQUIRE", "fo", "other", "1000"]), "nil");
    assert_eq!(run(&mut r, &["LOCK.RELEASE", "fo", "holder"]), "1");
    assert_eq!(run(&mut r, &["LOCK.ACQUIRE", "fo", "other", "1000"]), "7");
    assert_eq!(run(&mut r, &["LOCK.ACQUIRE", "sem", "b", "100000"]), "2");
}

/// Runs LOCK commands without NOW (the master's clock must reach the
/// replica and the AOF).
fn workload(c: &mut Connection) {
    for args in [
        vec!["LOCK.ACQUIRE", "a", "o1", "60000"],
        vec!["LOCK.ACQUIRE", "a", "o1", "60000", "MAXHOLD", "90000"],
        vec!["LOCK.RENEW", "a", "o1", "30000"],
        vec!["LOCK.RELEASE", "a", "o1"],
        vec!["LOCK.ACQUIRE", "b", "o1", "60000"],
        vec!["LOCK.ACQUIRE", "c", "o1", "60000", "LIMIT", "3"],
        vec!["LOCK.ACQUIRE", "c", "o2", "50", "LIMIT", "3"],
        vec!["LOCK.ACQUIRE", "c", "o3", "60000", "LIMIT", "3"],
        vec!["LOCK.RENEW", "c", "o3", "70000"],
        vec!["LOCK.RELEASE", "c", "o1"],
    ] {
        cmd(c, &args).unwrap();
    }
    thread::sleep(Duration::from_millis(60));
    // o2's lease ended: o4 takes its slot and the ended hold is purged.
    assert_eq!(run(c, &["LOCK.ACQUIRE", "c", "o4", "60000"]), "4");
}

/// Returns every key with its PEXPIRETIME.
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
fn replica_aof_and_rdb_end_byte_identical() {
    let pair = Pair::start();
    let mut aof = start_aof();
    let mut m = pair.master.conn();
    let mut a = aof.conn();
    workload(&mut m);
    workload(&mut a);
    pair.assert_equal();
    let mut r = pair.replica.conn();
    assert_eq!(expiry_times(&mut m), expiry_times(&mut r));
    let before = expiry_times(&mut a);
    assert_aof_restart_equal(&mut aof);
    let mut a = aof.conn();
    assert_eq!(before, expiry_times(&mut a));
    assert_rdb_reload_equal(&aof);
    assert_rdb_reload_equal(&pair.master);
}

#[test]
fn info_counts_and_events_fire() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KA"]);
    let mut sub = srv.conn();
    let mut ps = sub.as_pubsub();
    ps.psubscribe("__keyspace@0__:ev").unwrap();
    run(&mut c, &["LOCK.ACQUIRE", "ev", "a", "60000"]);
    run(&mut c, &["LOCK.ACQUIRE", "ev", "a", "60000"]);
    run(&mut c, &["LOCK.ACQUIRE", "ev", "b", "60000"]);
    run(&mut c, &["LOCK.RENEW", "ev", "a", "60000"]);
    run(&mut c, &["LOCK.RELEASE", "ev", "a"]);
    // A waiter handed the lock by the last release raises its own
    // acquire event, after the release's.
    let w = blocked(
        &srv,
        strs(&["LOCK.ACQUIRE", "ev", "w", "60000", "BLOCK", "10000"]),
    );
    wait_blocked(&mut c, 1);
    run(&mut c, &["LOCK.RELEASE", "ev", "a"]);
    assert_eq!(w.join().unwrap().0, "2");
    let mut events = Vec::new();
    ps.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    while let Ok(msg) = ps.get_message() {
        let e: String = msg.get_payload().unwrap();
        events.push(e);
        if events.len() == 6 {
            break;
        }
    }
    // Nothing more arrives: one event per call that changed the lock.
    assert!(ps.get_message().is_err(), "an extra event");
    assert_eq!(
        events,
        [
            "hotpath.lock.acquire",
            "hotpath.lock.acquire",
            "hotpath.lock.renew",
            "hotpath.lock.release",
            "hotpath.lock.release",
            "hotpath.lock.acquire",
        ]
    );
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    for want in [
        "lock_acquired:1",
        "lock_reentered:1",
        "lock_busy:1",
        "lock_renewed:1",
        "lock_released:2",
        "lock_waits:1",
        "lock_handoffs:1",
    ] {
        assert!(info.contains(want), "{want}: {info}");
    }
}

#[test]
fn stall_no_command_blocks_the_server_over_a_millisecond() {
    let slow = persistent_stalls(stall_run);
    assert!(
        slow.is_empty(),
        "LOCK commands over 1 ms in every run: {slow:?}"
    );
}

/// One run of the stall scenario on a fresh server; returns the slow
/// LOCK commands.
fn stall_run() -> Vec<String> {
    let srv = Server::start();
    let mut c = srv.conn();
    run(
        &mut c,
        &["CONFIG", "SET", "slowlog-log-slower-than", "1000"],
    );
    run(&mut c, &["SLOWLOG", "RESET"]);
    // The largest semaphore: 100 holders whose leases all end, then one
    // acquisition that purges them all.
    for i in 0..100 {
        let t = format!("{}", T0 + i);
        assert!(!run(
            &mut c,
            &[
                "LOCK.ACQUIRE",
                "big",
                &format!("o{i}"),
                "1000",
                "LIMIT",
                "100",
                "NOW",
                &t
            ]
        )
        .starts_with("ERR"));
    }
    let late = at(5000);
    assert_eq!(
        run(
            &mut c,
            &["LOCK.ACQUIRE", "big", "new", "1000", "NOW", &late]
        ),
        "101"
    );
    assert_eq!(int(&mut c, &["HLEN", "big"]), 4);
    for i in 0..99 {
        let t = format!("{}", T0 + 6000 + i);
        run(
            &mut c,
            &["LOCK.ACQUIRE", "big", &format!("p{i}"), "100000", "NOW", &t],
        );
    }
    let t = at(7000);
    let info = run(&mut c, &["LOCK.INFO", "big", "NOW", &t]);
    assert_eq!(info.matches(", ").count(), 4 * 99 - 1);
    assert_eq!(run(&mut c, &["LOCK.CHECK", "big", "150", "NOW", &t]), "1");
    for i in 0..2000 {
        run(&mut c, &["LOCK.ACQUIRE", "m", "a", "1000"]);
        run(&mut c, &["LOCK.RELEASE", "m", "a"]);
        let _ = i;
    }
    slow_commands(&mut c, "lock.")
}

#[test]
fn a_renew_that_shortens_the_lease_wakes_the_waiter_at_the_new_end() {
    let srv = Server::start();
    let mut c = srv.conn();
    // A mutex held for 4 s, shortened to 100 ms while a client waits.
    assert_eq!(run(&mut c, &["LOCK.ACQUIRE", "s", "a", "4000"]), "1");
    let w = blocked(
        &srv,
        strs(&["LOCK.ACQUIRE", "s", "b", "5000", "BLOCK", "10000"]),
    );
    wait_blocked(&mut c, 1);
    let start = Instant::now();
    assert_eq!(run(&mut c, &["LOCK.RENEW", "s", "a", "100"]), "100");
    let (token, when) = w.join().unwrap();
    assert_eq!(token, "2");
    let waited = when.duration_since(start);
    assert!(
        waited >= Duration::from_millis(80) && waited < Duration::from_millis(600),
        "the mutex waiter was served {waited:?} after the renew"
    );
    // The same for a semaphore: both slots held for 4 s, one shortened.
    for owner in ["a", "b"] {
        assert_eq!(
            run(
                &mut c,
                &["LOCK.ACQUIRE", "sem", owner, "4000", "LIMIT", "2"]
            ),
            if owner == "a" { "1" } else { "2" }
        );
    }
    let w = blocked(
        &srv,
        strs(&[
            "LOCK.ACQUIRE",
            "sem",
            "c",
            "5000",
            "LIMIT",
            "2",
            "BLOCK",
            "10000",
        ]),
    );
    wait_blocked(&mut c, 1);
    let start = Instant::now();
    assert_eq!(run(&mut c, &["LOCK.RENEW", "sem", "b", "100"]), "100");
    let (token, when) = w.join().unwrap();
    assert_eq!(token, "3");
    let waited = when.duration_since(start);
    assert!(
        waited >= Duration::from_millis(80) && waited < Duration::from_millis(600),
        "the semaphore waiter was served {waited:?} after the renew"
    );
}

/// Holds lock `w` of database `db` for a minute, queues a `BLOCK 0`
/// waiter behind it, runs `wipe` (which removes the lock by hand) and
/// checks that the waiter is served at once, by itself, ahead of any
/// newcomer.
fn waiter_survives(db: &str, wipe: &[&[&str]]) {
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(run(&mut c, &["SELECT", db]), "OK");
    assert_eq!(run(&mut c, &["LOCK.ACQUIRE", "w", "holder", "60000"]), "1");
    let w = {
        let mut c = srv.conn();
        assert_eq!(run(&mut c, &["SELECT", db]), "OK");
        thread::spawn(move || {
            let r = run(
                &mut c,
                &["LOCK.ACQUIRE", "w", "waiter", "60000", "BLOCK", "0"],
            );
            (r, Instant::now())
        })
    };
    wait_blocked(&mut c, 1);
    let start = Instant::now();
    for args in wipe {
        run(&mut c, args);
    }
    let (token, when) = w.join().unwrap();
    assert_eq!(token, "1", "{wipe:?}: the lock starts again from nothing");
    assert_eq!(run(&mut c, &["SELECT", db]), "OK");
    let waited = when.duration_since(start);
    assert!(
        waited < Duration::from_millis(500),
        "{wipe:?}: the waiter was served {waited:?} after"
    );
    assert_eq!(run(&mut c, &["LOCK.ACQUIRE", "w", "late", "60000"]), "nil");
    assert!(run(&mut c, &["LOCK.INFO", "w"]).starts_with("[waiter, 1,"));
}

#[test]
fn a_lock_deleted_by_hand_serves_its_waiters() {
    waiter_survives("0", &[&["DEL", "w"]]);
    waiter_survives("5", &[&["UNLINK", "w"]]);
    waiter_survives("0", &[&["RENAME", "w", "elsewhere"]]);
}

#[test]
fn a_flush_serves_the_waiters() {
    waiter_survives("0", &[&["FLUSHALL"]]);
    waiter_survives("3", &[&["FLUSHDB"]]);
    // Flushed from a connection on another database.
    waiter_survives("4", &[&["SELECT", "0"], &["FLUSHALL"]]);
}

#[test]
fn a_swapdb_serves_the_waiters() {
    waiter_survives("0", &[&["SWAPDB", "0", "1"]]);
    waiter_survives("2", &[&["SELECT", "0"], &["SWAPDB", "7", "2"]]);
}

#[test]
fn a_newcomer_after_a_delete_does_not_jump_the_line() {
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(run(&mut c, &["LOCK.ACQUIRE", "n", "holder", "60000"]), "1");
    let w = blocked(
        &srv,
        strs(&["LOCK.ACQUIRE", "n", "waiter", "60000", "BLOCK", "0"]),
    );
    wait_blocked(&mut c, 1);
    let mut pipe = redis::pipe();
    pipe.cmd("DEL").arg("n");
    pipe.cmd("LOCK.ACQUIRE").arg(&["n", "late", "60000"]);
    let (_, late): (i64, Option<i64>) = pipe.query(&mut c).unwrap();
    assert_eq!(late, None);
    assert_eq!(w.join().unwrap().0, "1");
}
