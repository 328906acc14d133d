//! IDEM on a real server: every reply and error of BEGIN, COMPLETE, ABORT
//! and GET with nothing written on a refusal, fences and take-over after a
//! lease, a stale worker refused, record TTLs (argument, config, lease),
//! replica, AOF and RDB byte-identical with the same PEXPIRETIME, RESP2
//! and RESP3, and many workers racing for the same keys.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use common::*;
use redis::Value;

/// A NOW in the future (2030-01-01), so that records with a TTL counted
/// from it do not expire while the test runs.
const T0: i64 = 1_893_456_000_000;

fn at(t: i64) -> String {
    (T0 + t).to_string()
}

fn begin(c: &mut Connection, key: &str, fp: &str, lease: i64, t: i64, extra: &[&str]) -> String {
    let (lease, now) = (lease.to_string(), at(t));
    let mut args = vec!["IDEM.BEGIN", key, fp, &lease];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["NOW", &now]);
    run(c, &args)
}

fn complete(c: &mut Connection, key: &str, fence: i64, result: &str, t: i64) -> String {
    let (fence, now) = (fence.to_string(), at(t));
    run(c, &["IDEM.COMPLETE", key, &fence, result, "NOW", &now])
}

fn get(c: &mut Connection, key: &str, t: i64) -> String {
    let now = at(t);
    run(c, &["IDEM.GET", key, "NOW", &now])
}

fn pexpiretime(c: &mut Connection, key: &str) -> i64 {
    int(c, &["PEXPIRETIME", key])
}

#[test]
fn begin_answers_new_running_mismatch_done_and_takes_over_after_the_lease() {
    let srv = Server::start();
    let mut c = srv.conn();
    let f1 = T0;
    assert_eq!(
        begin(&mut c, "k", "fa", 1000, 0, &[]),
        format!("[NEW, {f1}]")
    );
    assert_eq!(
        run(&mut c, &["HGETALL", "k"]),
        format!(
            "[state, running, fp, fa, fence, {f1}, lease, {}, ttl, 86400]",
            T0 + 1000
        )
    );
    assert_eq!(pexpiretime(&mut c, "k"), T0 + 86_400_000);
    assert_eq!(begin(&mut c, "k", "fa", 1000, 400, &[]), "[RUNNING, 600]");
    assert_eq!(begin(&mut c, "k", "fb", 1000, 400, &[]), "[MISMATCH, nil]");
    assert_eq!(
        get(&mut c, "k", 400),
        format!("[running, fa, {f1}, 600, nil]")
    );
    // The lease is over: GET shows it, another fingerprint is still a
    // mismatch, and the same request is taken over with a higher fence.
    assert_eq!(get(&mut c, "k", 1000), format!("[ended, fa, {f1}, 0, nil]"));
    assert_eq!(begin(&mut c, "k", "fb", 1000, 1000, &[]), "[MISMATCH, nil]");
    let f2 = T0 + 1000;
    assert_eq!(
        begin(&mut c, "k", "fa", 1000, 1000, &["TTL", "60"]),
        format!("[NEW, {f2}]")
    );
    assert_eq!(pexpiretime(&mut c, "k"), T0 + 1000 + 60_000);
    // The first worker comes back: refused, nothing written.
    let d = srv.digest();
    assert_eq!(
        complete(&mut c, "k", f1, "r1", 1100),
        format!("ERR<ERR idem: stale fence {f1}>")
    );
    assert_eq!(srv.digest(), d);
    assert_eq!(complete(&mut c, "k", f2, "r2", 1200), "1");
    assert_eq!(pexpiretime(&mut c, "k"), T0 + 1200 + 60_000);
    // A retried COMPLETE is answered 0 and changes nothing, another result
    // under the same fence is an error.
    let d = srv.digest();
    assert_eq!(complete(&mut c, "k", f2, "r2", 5000), "0");
    assert_eq!(
        complete(&mut c, "k", f2, "r3", 5000),
        "ERR<ERR idem: already completed with another result>"
    );
    assert_eq!(
        complete(&mut c, "k", f1, "r2", 5000),
        format!("ERR<ERR idem: stale fence {f1}>")
    );
    assert_eq!(pexpiretime(&mut c, "k"), T0 + 1200 + 60_000);
    assert_eq!(srv.digest(), d);
    // Done: the result is replayed, whatever the clock; a mismatch stays one.
    assert_eq!(begin(&mut c, "k", "fa", 1000, 1300, &[]), "[DONE, r2]");
    assert_eq!(begin(&mut c, "k", "fa", 1000, 50_000, &[]), "[DONE, r2]");
    assert_eq!(begin(&mut c, "k", "fb", 1000, 1300, &[]), "[MISMATCH, nil]");
    assert_eq!(get(&mut c, "k", 1300), format!("[done, fa, {f2}, 0, r2]"));
    assert_eq!(srv.digest(), d);
    assert_eq!(get(&mut c, "none", 0), "nil");
    assert_eq!(
        complete(&mut c, "none", 1, "r", 0),
        "ERR<ERR idem: no such record>"
    );
    // A binary result with a NUL and an empty one come back as they were.
    assert_eq!(
        begin(&mut c, "b", "f", 1000, 0, &[]),
        format!("[NEW, {T0}]")
    );
    let mut q = redis::cmd("IDEM.COMPLETE");
    q.arg("b").arg(T0).arg(b"a\0b\xff".as_slice());
    let one: i64 = q.query(&mut c).unwrap();
    assert_eq!(one, 1);
    let v: Vec<Value> = redis::cmd("IDEM.BEGIN")
        .arg("b")
        .arg("f")
        .arg(1000)
        .query(&mut c)
        .unwrap();
    assert_eq!(v[1], Value::BulkString(b"a\0b\xff".to_vec()));
    assert_eq!(
        begin(&mut c, "e", "f", 1000, 0, &[]),
        format!("[NEW, {T0}]")
    );
    assert_eq!(complete(&mut c, "e", T0, "", 10), "1");
    assert_eq!(begin(&mut c, "e", "f", 1000, 20, &[]), "[DONE, ]");
}

#[test]
fn a_worker_whose_lease_ran_out_completes_while_nobody_took_over() {
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(begin(&mut c, "k", "f", 100, 0, &[]), format!("[NEW, {T0}]"));
    assert_eq!(complete(&mut c, "k", T0, "late", 5000), "1");
    assert_eq!(begin(&mut c, "k", "f", 100, 6000, &[]), "[DONE, late]");
}

#[test]
fn abort_lets_the_next_begin_in_with_a_higher_fence() {
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(
        begin(&mut c, "k", "fa", 60_000, 0, &[]),
        format!("[NEW, {T0}]")
    );
    let exp = pexpiretime(&mut c, "k");
    let d = srv.digest();
    for (fence, why) in [(T0 + 1, "another fence"), (0, "another fence")] {
        let f = fence.to_string();
        assert_eq!(run(&mut c, &["IDEM.ABORT", "k", &f]), "0", "{why}");
    }
    assert_eq!(run(&mut c, &["IDEM.ABORT", "none", "1"]), "0");
    assert_eq!(srv.digest(), d);
    let f = T0.to_string();
    assert_eq!(run(&mut c, &["IDEM.ABORT", "k", &f]), "1");
    assert_eq!(run(&mut c, &["HGET", "k", "state"]), "aborted");
    assert_eq!(pexpiretime(&mut c, "k"), exp, "the expiry stays");
    assert_eq!(run(&mut c, &["IDEM.ABORT", "k", &f]), "0");
    assert_eq!(get(&mut c, "k", 10), format!("[aborted, fa, {T0}, 0, nil]"));
    // The aborted worker cannot complete; the next BEGIN, with any
    // fingerprint, starts again above the old fence even at the same NOW.
    assert_eq!(
        complete(&mut c, "k", T0, "r", 10),
        format!("ERR<ERR idem: stale fence {T0}>")
    );
    assert_eq!(
        begin(&mut c, "k", "fb", 60_000, 0, &[]),
        format!("[NEW, {}]", T0 + 1)
    );
    // A done record is not aborted.
    assert_eq!(complete(&mut c, "k", T0 + 1, "r", 10), "1");
    let f = (T0 + 1).to_string();
    assert_eq!(run(&mut c, &["IDEM.ABORT", "k", &f]), "0");
    assert_eq!(begin(&mut c, "k", "fb", 60_000, 20, &[]), "[DONE, r]");
}

#[test]
fn ttl_comes_from_the_argument_the_config_and_the_lease() {
    let srv = Server::start_full(&[], &["idem-ttl", "100"]);
    let mut c = srv.conn();
    assert_eq!(
        run(&mut c, &["CONFIG", "GET", "hotpath.idem-ttl"]),
        "[hotpath.idem-ttl, 100]"
    );
    begin(&mut c, "a", "f", 1000, 0, &[]);
    assert_eq!(pexpiretime(&mut c, "a"), T0 + 100_000);
    assert_eq!(run(&mut c, &["HGET", "a", "ttl"]), "100");
    // A lease longer than the TTL keeps the record to the lease end.
    begin(&mut c, "b", "f", 500_000, 0, &["TTL", "10"]);
    assert_eq!(pexpiretime(&mut c, "b"), T0 + 500_000);
    // COMPLETE counts the record's own TTL from its NOW.
    assert_eq!(complete(&mut c, "b", T0, "r", 7000), "1");
    assert_eq!(pexpiretime(&mut c, "b"), T0 + 7000 + 10_000);
    run(&mut c, &["CONFIG", "SET", "hotpath.idem-ttl", "86400"]);
    begin(&mut c, "c", "f", 1000, 0, &[]);
    assert_eq!(pexpiretime(&mut c, "c"), T0 + 86_400_000);
    assert!(err(&mut c, &["CONFIG", "SET", "hotpath.idem-ttl", "0"]).starts_with("ERR"));
    // Without NOW the clock is read once: the expiry is TTL after it.
    let before = now_ms();
    let r = run(&mut c, &["IDEM.BEGIN", "d", "f", "1000", "TTL", "50"]);
    let after = now_ms();
    let fence: i64 = r
        .trim_start_matches("[NEW, ")
        .trim_end_matches(']')
        .parse()
        .unwrap();
    assert!((before..=after).contains(&fence), "{r}");
    assert_eq!(pexpiretime(&mut c, "d"), fence + 50_000);
}

#[test]
fn every_error_writes_nothing() {
    let srv = Server::start();
    let mut c = srv.conn();
    begin(&mut c, "k", "f", 1000, 0, &[]);
    run(&mut c, &["SET", "str", "x"]);
    run(&mut c, &["HSET", "bad", "state", "weird"]);
    run(&mut c, &["HSET", "nofp", "state", "running", "fence", "1"]);
    let big = (1i64 << 53) - 1;
    let full = format!("{big}");
    run(
        &mut c,
        &[
            "HSET", "full", "state", "aborted", "fp", "f", "fence", &full, "lease", "0", "ttl",
            "10",
        ],
    );
    run(
        &mut c,
        &[
            "HSET", "res", "state", "running", "fp", "f", "fence", "1", "lease", "0", "ttl", "10",
            "result", "x",
        ],
    );
    let d = srv.digest();
    let now = at(0);
    let cases: Vec<(Vec<&str>, String)> = vec![
        (
            vec!["IDEM.BEGIN", "k", "f"],
            "ERR wrong number of arguments for 'idem.begin' command".into(),
        ),
        (
            vec!["IDEM.BEGIN", "k", "", "1000"],
            "ERR idem: fingerprint must not be empty".into(),
        ),
        (
            vec!["IDEM.BEGIN", "k", "f", "0"],
            "ERR value is not an integer or out of range".into(),
        ),
        (
            vec!["IDEM.BEGIN", "k", "f", "3153600000001"],
            "ERR value is not an integer or out of range".into(),
        ),
        (
            vec!["IDEM.BEGIN", "k", "f", "10", "TTL", "0"],
            "ERR value is not an integer or out of range".into(),
        ),
        (
            vec!["IDEM.BEGIN", "k", "f", "10", "NOW", "-1"],
            "ERR value is not an integer or out of range".into(),
        ),
        (
            vec!["IDEM.BEGIN", "k", "f", "10", "TTL"],
            "ERR syntax error".into(),
        ),
        (
            vec!["IDEM.BEGIN", "k", "f", "10", "TTL", "5", "TTL", "5"],
            "ERR syntax error".into(),
        ),
        (
            vec!["IDEM.BEGIN", "k", "f", "10", "LEASE", "5"],
            "ERR syntax error".into(),
        ),
        (
            vec!["IDEM.BEGIN", "str", "f", "10"],
            "WRONGTYPE Operation against a key holding the wrong kind of value".into(),
        ),
        (
            vec!["IDEM.BEGIN", "bad", "f", "10"],
            "ERR idem: corrupt data in 'bad' field 'state'".into(),
        ),
        (
            vec!["IDEM.BEGIN", "nofp", "f", "10"],
            "ERR idem: corrupt data in 'nofp' field 'fp'".into(),
        ),
        (
            vec!["IDEM.BEGIN", "res", "f", "10"],
            "ERR idem: corrupt data in 'res' field 'result'".into(),
        ),
        (
            vec!["IDEM.BEGIN", "full", "f", "10", "NOW", &now],
            "ERR idem: integer overflow in 'full' field 'fence'".into(),
        ),
        (
            vec!["IDEM.COMPLETE", "k", "1"],
            "ERR wrong number of arguments for 'idem.complete' command".into(),
        ),
        (
            vec!["IDEM.COMPLETE", "k", "x", "r"],
            "ERR value is not an integer or out of range".into(),
        ),
        (
            vec!["IDEM.COMPLETE", "k", "1", "r", "NOW"],
            "ERR syntax error".into(),
        ),
        (
            vec!["IDEM.COMPLETE", "k", "1", "r", "NOW", "1", "NOW", "1"],
            "ERR syntax error".into(),
        ),
        (
            vec!["IDEM.COMPLETE", "str", "1", "r"],
            "WRONGTYPE Operation against a key holding the wrong kind of value".into(),
        ),
        (
            vec!["IDEM.COMPLETE", "bad", "1", "r"],
            "ERR idem: corrupt data in 'bad' field 'state'".into(),
        ),
        (
            vec!["IDEM.ABORT", "k"],
            "ERR wrong number of arguments for 'idem.abort' command".into(),
        ),
        (
            vec!["IDEM.ABORT", "k", "1", "2"],
            "ERR wrong number of arguments for 'idem.abort' command".into(),
        ),
        (
            vec!["IDEM.ABORT", "k", "1.5"],
            "ERR value is not an integer or out of range".into(),
        ),
        (
            vec!["IDEM.ABORT", "str", "1"],
            "WRONGTYPE Operation against a key holding the wrong kind of value".into(),
        ),
        (
            vec!["IDEM.GET"],
            "ERR wrong number of arguments for 'idem.get' command".into(),
        ),
        (
            vec!["IDEM.GET", "k", "NOW", "x"],
            "ERR value is not an integer or out of range".into(),
        ),
        (vec!["IDEM.GET", "k", "SOON"], "ERR syntax error".into()),
        (
            vec!["IDEM.GET", "str"],
            "WRONGTYPE Operation against a key holding the wrong kind of value".into(),
        ),
        (
            vec!["IDEM.GET", "res"],
            "ERR idem: corrupt data in 'res' field 'result'".into(),
        ),
    ];
    for (args, want) in &cases {
        assert_eq!(&err(&mut c, args), want, "{args:?}");
        assert_eq!(srv.digest(), d, "{args:?} wrote");
    }
}

#[test]
fn resp2_and_resp3_replies() {
    let srv = Server::start();
    let mut r2 = srv.conn();
    let url = format!("redis://127.0.0.1:{}/?protocol=resp3", srv.port);
    let mut r3 = redis::Client::open(url).unwrap().get_connection().unwrap();
    let now = at(0);
    let bulk = |s: &str| Value::BulkString(s.as_bytes().to_vec());
    let new = Value::Array(vec![bulk("NEW"), Value::Int(T0)]);
    assert_eq!(
        cmd(&mut r2, &["IDEM.BEGIN", "a", "f", "1000", "NOW", &now]).unwrap(),
        new
    );
    assert_eq!(
        cmd(&mut r3, &["IDEM.BEGIN", "b", "f", "1000", "NOW", &now]).unwrap(),
        new
    );
    let mismatch = Value::Array(vec![bulk("MISMATCH"), Value::Nil]);
    assert_eq!(
        cmd(&mut r2, &["IDEM.BEGIN", "a", "g", "1000", "NOW", &now]).unwrap(),
        mismatch
    );
    assert_eq!(
        cmd(&mut r3, &["IDEM.BEGIN", "b", "g", "1000", "NOW", &now]).unwrap(),
        mismatch
    );
    let fields = [
        ("state", bulk("running")),
        ("fingerprint", bulk("f")),
        ("fence", Value::Int(T0)),
        ("lease_ms", Value::Int(1000)),
        ("result", Value::Nil),
    ];
    assert_eq!(
        cmd(&mut r2, &["IDEM.GET", "a", "NOW", &now]).unwrap(),
        Value::Array(fields.iter().map(|(_, v)| v.clone()).collect())
    );
    assert_eq!(
        cmd(&mut r3, &["IDEM.GET", "b", "NOW", &now]).unwrap(),
        Value::Map(fields.iter().map(|(n, v)| (bulk(n), v.clone())).collect())
    );
    assert_eq!(cmd(&mut r2, &["IDEM.GET", "none"]).unwrap(), Value::Nil);
    assert_eq!(cmd(&mut r3, &["IDEM.GET", "none"]).unwrap(), Value::Nil);
}

/// Writes without NOW (the master's clock must reach the replica and the
/// AOF): new records, a take-over, completions, an abort.
fn workload(c: &mut Connection) {
    for i in 0..20 {
        let k = format!("w{i}");
        run(c, &["IDEM.BEGIN", &k, "f", "60000"]);
    }
    run(c, &["IDEM.BEGIN", "short", "f", "1"]);
    thread::sleep(Duration::from_millis(5));
    run(c, &["IDEM.BEGIN", "short", "f", "60000", "TTL", "500"]);
    for i in 0..20 {
        let k = format!("w{i}");
        let r = run(c, &["IDEM.GET", &k]);
        let fence = r.split(", ").nth(2).unwrap().to_string();
        match i % 3 {
            0 => assert_eq!(run(c, &["IDEM.COMPLETE", &k, &fence, "ok"]), "1"),
            1 => assert_eq!(run(c, &["IDEM.ABORT", &k, &fence]), "1"),
            _ => {}
        }
    }
}

/// Returns every key with its PEXPIRETIME.
fn expiry_times(c: &mut Connection) -> Vec<(String, i64)> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let t = pexpiretime(c, &k);
            (k, t)
        })
        .collect()
}

#[test]
fn replica_aof_and_rdb_end_byte_identical_with_the_same_expiries() {
    let pair = Pair::start();
    let mut aof = start_aof();
    let mut m = pair.master.conn();
    let mut a = aof.conn();
    workload(&mut m);
    workload(&mut a);
    pair.assert_equal();
    let mut r = pair.replica.conn();
    let times = expiry_times(&mut m);
    assert_eq!(times.len(), 21);
    assert!(times.iter().all(|(_, t)| *t > 0), "{times:?}");
    assert_eq!(times, expiry_times(&mut r));
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
    begin(&mut c, "ev", "f", 10, 0, &[]); // begun
    begin(&mut c, "ev", "f", 10, 5, &[]); // running
    begin(&mut c, "ev", "g", 10, 5, &[]); // mismatched
    begin(&mut c, "ev", "f", 10, 20, &[]); // begun, taken over
    complete(&mut c, "ev", T0, "r", 21); // stale
    complete(&mut c, "ev", T0 + 20, "r", 21); // completed
    begin(&mut c, "ev", "f", 10, 30, &[]); // replayed
    begin(&mut c, "ev2", "f", 10, 0, &[]);
    run(&mut c, &["IDEM.ABORT", "ev2", &T0.to_string()]);
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    for (name, n) in [
        ("begun", 3),
        ("taken_over", 1),
        ("running", 1),
        ("mismatched", 1),
        ("replayed", 1),
        ("completed", 1),
        ("stale", 1),
        ("aborted", 1),
    ] {
        let line = format!("hotpath_idem_{name}:{n}");
        assert!(info.contains(&line), "no {line} in {info}");
    }
    let mut events = Vec::new();
    ps.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    while let Ok(msg) = ps.get_message() {
        events.push(msg.get_payload::<String>().unwrap());
        if events.len() == 3 {
            break;
        }
    }
    assert!(ps.get_message().is_err(), "an extra event");
    assert_eq!(
        events,
        [
            "hotpath.idem.begin",
            "hotpath.idem.begin",
            "hotpath.idem.complete"
        ]
    );
}

/// Many workers BEGIN the same keys with the server's clock and short
/// leases; a worker that gets NEW sometimes stalls past its lease,
/// sometimes aborts, and otherwise completes with a result naming its
/// fence. After every batch: each key has exactly one stored result,
/// stored by exactly one COMPLETE that replied 1, under the last fence
/// issued for the key; every DONE a worker saw is that result; the fences
/// issued for a key are distinct and every refused COMPLETE had a fence
/// below the key's last one.
#[test]
fn concurrent_workers_complete_each_key_exactly_once() {
    let srv = Server::start();
    const WORKERS: usize = 8;
    const KEYS: usize = 12;
    #[derive(Default)]
    struct Seen {
        /// key -> fences replied NEW.
        fences: BTreeMap<String, Vec<i64>>,
        /// key -> fences whose COMPLETE replied 1.
        stored: BTreeMap<String, Vec<i64>>,
        /// key -> fences whose COMPLETE was refused as stale.
        stale: BTreeMap<String, Vec<i64>>,
        /// key -> results replied by DONE.
        done: BTreeMap<String, BTreeSet<String>>,
    }
    for batch in 0..3 {
        let seen = Arc::new(Mutex::new(Seen::default()));
        let mut handles = Vec::new();
        for w in 0..WORKERS {
            let seen = seen.clone();
            let mut c = srv.conn();
            handles.push(thread::spawn(move || {
                let mut rng = (w as u64 + 1) * 0x9e37_79b9_7f4a_7c15 + batch;
                let mut next = move |n: u64| {
                    rng ^= rng << 13;
                    rng ^= rng >> 7;
                    rng ^= rng << 17;
                    rng % n
                };
                for round in 0..60 {
                    let k = format!("b{batch}:k{}", (round + w) % KEYS);
                    let r = cmd(&mut c, &["IDEM.BEGIN", &k, "fp", "15"]).unwrap();
                    let Value::Array(r) = r else { panic!("{r:?}") };
                    let status = match &r[0] {
                        Value::BulkString(b) => String::from_utf8(b.clone()).unwrap(),
                        v => panic!("{v:?}"),
                    };
                    match status.as_str() {
                        "NEW" => {
                            let Value::Int(fence) = r[1] else { panic!() };
                            seen.lock()
                                .unwrap()
                                .fences
                                .entry(k.clone())
                                .or_default()
                                .push(fence);
                            match next(10) {
                                // Stalls past the lease, then completes.
                                0 => thread::sleep(Duration::from_millis(20)),
                                // Gives up.
                                1 => {
                                    let f = fence.to_string();
                                    run(&mut c, &["IDEM.ABORT", &k, &f]);
                                    continue;
                                }
                                _ => {}
                            }
                            let f = fence.to_string();
                            let result = format!("by:{fence}");
                            match cmd(&mut c, &["IDEM.COMPLETE", &k, &f, &result]) {
                                Ok(Value::Int(1)) => seen
                                    .lock()
                                    .unwrap()
                                    .stored
                                    .entry(k)
                                    .or_default()
                                    .push(fence),
                                Err(e) if error_text(&e).contains("stale fence") => {
                                    seen.lock().unwrap().stale.entry(k).or_default().push(fence)
                                }
                                other => panic!("{k} {fence}: {other:?}"),
                            }
                        }
                        "DONE" => {
                            let Value::BulkString(b) = &r[1] else {
                                panic!()
                            };
                            let s = String::from_utf8(b.clone()).unwrap();
                            seen.lock().unwrap().done.entry(k).or_default().insert(s);
                        }
                        "RUNNING" => {
                            let Value::Int(left) = r[1] else { panic!() };
                            assert!((1..=15).contains(&left), "{left}");
                        }
                        other => panic!("{other} {r:?}"),
                    }
                }
            }));
        }
        for h in handles {
            h.join().unwrap();
        }
        // Finish what the batch left running or aborted, the way a client
        // retrying would, so that every key ends done.
        let mut c = srv.conn();
        let mut seen = seen.lock().unwrap();
        for i in 0..KEYS {
            let k = format!("b{batch}:k{i}");
            loop {
                let r = run(&mut c, &["IDEM.BEGIN", &k, "fp", "60000"]);
                if r.starts_with("[DONE") {
                    break;
                }
                if let Some(f) = r.strip_prefix("[NEW, ") {
                    let fence: i64 = f.trim_end_matches(']').parse().unwrap();
                    seen.fences.entry(k.clone()).or_default().push(fence);
                    let res = format!("by:{fence}");
                    assert_eq!(
                        run(
                            &mut c,
                            &["IDEM.COMPLETE", &k, f.trim_end_matches(']'), &res]
                        ),
                        "1"
                    );
                    seen.stored.entry(k.clone()).or_default().push(fence);
                    break;
                }
                thread::sleep(Duration::from_millis(5));
            }
        }
        for i in 0..KEYS {
            let k = format!("b{batch}:k{i}");
            let fences = &seen.fences[&k];
            let distinct: BTreeSet<i64> = fences.iter().copied().collect();
            assert_eq!(distinct.len(), fences.len(), "{k}: a fence issued twice");
            let stored = &seen.stored[&k];
            assert_eq!(stored.len(), 1, "{k}: stored by {stored:?}");
            let last = *distinct.iter().next_back().unwrap();
            assert_eq!(stored[0], last, "{k}: stored under an old fence");
            let want = format!("by:{last}");
            let got = get(&mut c, &k, 0);
            assert!(got.starts_with("[done, fp, "), "{k}: {got}");
            assert!(got.ends_with(&format!(", {want}]")), "{k}: {got}");
            for s in seen.done.get(&k).into_iter().flatten() {
                assert_eq!(s, &want, "{k}: DONE replied another result");
            }
            for f in seen.stale.get(&k).into_iter().flatten() {
                assert!(*f < last, "{k}: the live fence {f} refused");
            }
        }
    }
}

/// IDEM's writes replicate themselves (issue 27, decision 1): BEGIN with
/// the TTL and the NOW it used made explicit (the TTL may come from the
/// `idem-ttl` config, which a replica may have set otherwise), COMPLETE
/// with NOW appended, ABORT verbatim; no HSET or PEXPIREAT in the stream.
/// The AOF replays to the same data and expiry.
#[test]
fn idem_writes_replicate_the_command_itself() {
    let mut s = start_aof();
    let mut c = s.conn();
    let strs = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    run(&mut c, &["CONFIG", "SET", "hotpath.idem-ttl", "5000"]);
    let t = at(0);
    assert_eq!(
        run(&mut c, &["IDEM.BEGIN", "k{1}", "fp", "30000", "NOW", &t]),
        format!("[NEW, {t}]")
    );
    assert_eq!(run(&mut c, &["IDEM.COMPLETE", "k{1}", &t, "res"]), "1");
    let r = run(&mut c, &["IDEM.BEGIN", "k{2}", "fp", "30000", "TTL", "60"]);
    let fence = r
        .trim_start_matches("[NEW, ")
        .trim_end_matches(']')
        .to_string();
    assert_eq!(run(&mut c, &["IDEM.ABORT", "k{2}", &fence]), "1");
    // Answers that write nothing replicate nothing.
    run(&mut c, &["IDEM.BEGIN", "k{1}", "fp", "30000"]);
    let cmds: Vec<Vec<String>> = aof_commands(&s)
        .into_iter()
        .filter(|c| !c[0].eq_ignore_ascii_case("CONFIG") && !c[0].eq_ignore_ascii_case("SELECT"))
        .filter(|c| !c[0].eq_ignore_ascii_case("MULTI") && !c[0].eq_ignore_ascii_case("EXEC"))
        .collect();
    assert_eq!(cmds.len(), 4, "{cmds:?}");
    assert_eq!(
        cmds[0],
        strs(&[
            "IDEM.BEGIN",
            "k{1}",
            "fp",
            "30000",
            "TTL",
            "5000",
            "NOW",
            &t
        ])
    );
    assert_eq!(
        cmds[1][..4],
        strs(&["IDEM.COMPLETE", "k{1}", &t, "res"])[..]
    );
    assert_eq!(cmds[1][4], "NOW");
    assert!(cmds[1][5].parse::<i64>().unwrap() > 1_700_000_000_000);
    assert_eq!(
        cmds[2][..6],
        strs(&["IDEM.BEGIN", "k{2}", "fp", "30000", "TTL", "60"])[..]
    );
    assert_eq!(cmds[2][6], "NOW");
    assert_eq!(*cmds[3], strs(&["IDEM.ABORT", "k{2}", &fence]));
    let before = (pexpiretime(&mut c, "k{1}"), pexpiretime(&mut c, "k{2}"));
    assert!(before.0 > 0 && before.1 > 0);
    assert_aof_restart_equal(&mut s);
    let mut c = s.conn();
    assert_eq!(
        (pexpiretime(&mut c, "k{1}"), pexpiretime(&mut c, "k{2}")),
        before
    );
}
