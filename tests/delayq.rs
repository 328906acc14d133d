//! DELAYQ on a real server: idempotent adds, due order, leases and
//! receipts, ack / nack / backoff / extend, leases that run out, dead
//! letters and re-drive, every error with nothing written, blocking polls
//! woken by adds and by a timer at the due instant, 50 consumers that
//! crash, kill -9 under `appendfsync always`, failover, replication, AOF
//! and RDB.

use crate::common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use common::*;

const T0: i64 = 1_764_720_000_000;

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

const NOTINT: &str = "ERR<ERR value is not an integer or out of range>";
const SYNTAX: &str = "ERR<ERR syntax error>";
const WRONGTYPE: &str = "ERR<WRONGTYPE Operation against a key holding the wrong kind of value>";

#[test]
fn jobs_are_added_once_and_polled_in_due_order() {
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(
        now(&mut c, &["DELAYQ.ADD", "q", "a", "pa", "DELAY", "500"], 0),
        "1"
    );
    assert_eq!(now(&mut c, &["DELAYQ.ADD", "q", "b", "pb"], 0), "1");
    assert_eq!(
        now(&mut c, &["DELAYQ.ADD", "q", "c", "pc", "AT", &at(200)], 0),
        "1"
    );
    // Idempotent on the id: the second add changes nothing.
    assert_eq!(
        now(&mut c, &["DELAYQ.ADD", "q", "b", "other", "DELAY", "9"], 0),
        "0"
    );
    assert_eq!(run(&mut c, &["HGET", "q:jobs", "b"]), "2:0:5:0:pb");
    assert_eq!(
        run(&mut c, &["ZRANGE", "q:due", "0", "-1", "WITHSCORES"]),
        format!("[b, {T0}, c, {}, a, {}]", T0 + 200, T0 + 500)
    );
    // Only due jobs are taken, oldest due first, each leased.
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "1000", "COUNT", "5"], 300),
        "[b, pb, 1, 2000001, c, pc, 1, 3000001]"
    );
    assert_eq!(now(&mut c, &["DELAYQ.POLL", "q", "1000"], 300), "[]");
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "1000"], 500),
        "[a, pa, 1, 1000001]"
    );
    // Three jobs added: three generations.
    assert_eq!(run(&mut c, &["GET", "q:seq"]), "3");
    assert_eq!(run(&mut c, &["HGET", "q:jobs", "b"]), "2:1:5:1:pb");
    assert_eq!(
        run(&mut c, &["ZSCORE", "q:due", "b"]),
        (T0 + 1300).to_string()
    );
    assert_eq!(
        now(&mut c, &["DELAYQ.INFO", "q"], 600),
        "[jobs, 3, ready, 0, scheduled, 3, dead, 0]"
    );
    // Ack with the receipt removes the job; a wrong receipt does nothing.
    assert_eq!(run(&mut c, &["DELAYQ.ACK", "q", "b", "3000001"]), "0");
    assert_eq!(run(&mut c, &["DELAYQ.ACK", "q", "b", "2000001"]), "1");
    assert_eq!(run(&mut c, &["DELAYQ.ACK", "q", "b", "2000001"]), "0");
    assert_eq!(int(&mut c, &["HEXISTS", "q:jobs", "b"]), 0);
    assert_eq!(run(&mut c, &["ZSCORE", "q:due", "b"]), "nil");
    // The id can be used again once acked.
    assert_eq!(now(&mut c, &["DELAYQ.ADD", "q", "b", "again"], 700), "1");
    assert_eq!(run(&mut c, &["PTTL", "q:seq"]), "-1");
}

#[test]
fn a_lease_that_runs_out_gives_the_job_to_the_next_consumer() {
    let srv = Server::start();
    let mut c = srv.conn();
    now(&mut c, &["DELAYQ.ADD", "q", "j", "p", "ATTEMPTS", "3"], 0);
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "1000"], 0),
        "[j, p, 1, 1000001]"
    );
    // Held: nobody else gets it before the lease ends.
    assert_eq!(now(&mut c, &["DELAYQ.POLL", "q", "1000"], 999), "[]");
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "1000"], 1000),
        "[j, p, 2, 1000002]"
    );
    // The first consumer's receipt is stale now.
    assert_eq!(run(&mut c, &["DELAYQ.ACK", "q", "j", "1000001"]), "0");
    assert_eq!(
        now(&mut c, &["DELAYQ.NACK", "q", "j", "1000001"], 1000),
        "0"
    );
    assert_eq!(
        now(
            &mut c,
            &["DELAYQ.EXTEND", "q", "j", "1000001", "5000"],
            1000
        ),
        "0"
    );
    // A heartbeat keeps it.
    assert_eq!(
        now(
            &mut c,
            &["DELAYQ.EXTEND", "q", "j", "1000002", "5000"],
            1500
        ),
        "1"
    );
    assert_eq!(now(&mut c, &["DELAYQ.POLL", "q", "1000"], 2000), "[]");
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "1000"], 6500),
        "[j, p, 3, 1000003]"
    );
    // Its last lease runs out: the next poll moves it to the dead letters
    // at the instant that lease ended, and delivers nothing.
    assert_eq!(now(&mut c, &["DELAYQ.POLL", "q", "1000"], 9000), "[]");
    assert_eq!(
        run(&mut c, &["ZSCORE", "q:dead", "j"]),
        (T0 + 7500).to_string()
    );
    assert_eq!(
        run(&mut c, &["DELAYQ.DEAD", "q"]),
        format!("[j, p, 3, {}]", T0 + 7500)
    );
    assert_eq!(run(&mut c, &["HGET", "q:jobs", "j"]), "1:3:3:0:p");
    assert_eq!(run(&mut c, &["DELAYQ.ACK", "q", "j", "1000003"]), "0");
}

#[test]
fn nack_retries_with_delay_or_backoff_then_dead_letters() {
    let srv = Server::start();
    let mut c = srv.conn();
    now(&mut c, &["DELAYQ.ADD", "q", "j", "p", "ATTEMPTS", "4"], 0);
    let r = now(&mut c, &["DELAYQ.POLL", "q", "60000"], 0);
    assert_eq!(r, "[j, p, 1, 1000001]");
    assert_eq!(now(&mut c, &["DELAYQ.NACK", "q", "j", "1000001"], 10), "1");
    assert_eq!(
        run(&mut c, &["ZSCORE", "q:due", "j"]),
        (T0 + 10).to_string()
    );
    assert_eq!(run(&mut c, &["HGET", "q:jobs", "j"]), "1:1:4:0:p");
    // A nacked job's old receipt no longer acts.
    assert_eq!(now(&mut c, &["DELAYQ.NACK", "q", "j", "1000001"], 10), "0");
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "60000"], 10),
        "[j, p, 2, 1000002]"
    );
    assert_eq!(
        now(
            &mut c,
            &["DELAYQ.NACK", "q", "j", "1000002", "DELAY", "300"],
            20
        ),
        "1"
    );
    assert_eq!(
        run(&mut c, &["ZSCORE", "q:due", "j"]),
        (T0 + 320).to_string()
    );
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "60000"], 320),
        "[j, p, 3, 1000003]"
    );
    // Backoff: base × 2^(attempt − 1), capped.
    assert_eq!(
        now(
            &mut c,
            &[
                "DELAYQ.NACK",
                "q",
                "j",
                "1000003",
                "BACKOFF",
                "1000",
                "3000"
            ],
            400
        ),
        "1"
    );
    assert_eq!(
        run(&mut c, &["ZSCORE", "q:due", "j"]),
        (T0 + 3400).to_string()
    );
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "60000"], 3400),
        "[j, p, 4, 1000004]"
    );
    // The last attempt fails: to the dead letters, at the NACK's instant.
    assert_eq!(
        now(&mut c, &["DELAYQ.NACK", "q", "j", "1000004"], 3500),
        "2"
    );
    assert_eq!(run(&mut c, &["ZSCORE", "q:due", "j"]), "nil");
    assert_eq!(
        run(&mut c, &["ZSCORE", "q:dead", "j"]),
        (T0 + 3500).to_string()
    );
    assert_eq!(
        now(&mut c, &["DELAYQ.INFO", "q"], 3500),
        "[jobs, 1, ready, 0, scheduled, 0, dead, 1]"
    );
    // Re-drive: due now, attempts from zero in a new generation.
    assert_eq!(now(&mut c, &["DELAYQ.REDRIVE", "q"], 4000), "1");
    assert_eq!(run(&mut c, &["DELAYQ.DEAD", "q"]), "[]");
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "60000"], 4000),
        "[j, p, 1, 2000001]"
    );
}

#[test]
fn redrive_takes_the_oldest_or_one_by_id_and_replace_is_explicit() {
    let srv = Server::start();
    let mut c = srv.conn();
    for (i, id) in ["a", "b", "c"].iter().enumerate() {
        now(
            &mut c,
            &["DELAYQ.ADD", "q", id, id, "ATTEMPTS", "1"],
            i as i64,
        );
    }
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "100", "COUNT", "3"], 10),
        "[a, a, 1, 1000001, b, b, 1, 2000001, c, c, 1, 3000001]"
    );
    // All three leases run out with no attempt left.
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "100", "COUNT", "3"], 200),
        "[]"
    );
    assert_eq!(int(&mut c, &["ZCARD", "q:dead"]), 3);
    assert_eq!(
        run(&mut c, &["DELAYQ.DEAD", "q", "COUNT", "2"]),
        format!("[a, a, 1, {t}, b, b, 1, {t}]", t = T0 + 110)
    );
    assert_eq!(now(&mut c, &["DELAYQ.REDRIVE", "q", "ID", "c"], 300), "1");
    assert_eq!(now(&mut c, &["DELAYQ.REDRIVE", "q", "ID", "zz"], 300), "0");
    assert_eq!(
        now(&mut c, &["DELAYQ.REDRIVE", "q", "COUNT", "1"], 300),
        "1"
    );
    assert_eq!(run(&mut c, &["ZRANGE", "q:dead", "0", "-1"]), "[b]");
    // REPLACE gives a dead job a fresh start; a leased one is refused.
    assert_eq!(
        now(
            &mut c,
            &["DELAYQ.ADD", "q", "b", "new", "REPLACE", "DELAY", "50"],
            300
        ),
        "1"
    );
    assert_eq!(run(&mut c, &["DELAYQ.DEAD", "q"]), "[]");
    assert_eq!(run(&mut c, &["HGET", "q:jobs", "b"]), "6:0:5:0:new");
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "1000"], 300),
        "[a, a, 1, 5000001]"
    );
    assert_eq!(
        now(&mut c, &["DELAYQ.ADD", "q", "a", "x", "REPLACE"], 400),
        "ERR<ERR delayq: job is leased>"
    );
    assert_eq!(
        now(&mut c, &["DELAYQ.ADD", "q", "a", "x", "REPLACE"], 1300),
        "1"
    );
    assert_eq!(run(&mut c, &["HGET", "q:jobs", "a"]), "7:0:5:0:x");
}

#[test]
fn lostmax_caps_redeliveries_after_lost_leases_apart_from_nacks() {
    let srv = Server::start();
    let mut c = srv.conn();
    let add = [
        "DELAYQ.ADD",
        "q",
        "j",
        "p",
        "ATTEMPTS",
        "10",
        "LOSTMAX",
        "1",
    ];
    assert_eq!(now(&mut c, &add, 0), "1");
    assert_eq!(run(&mut c, &["HGET", "q:jobs", "j"]), "1:0:10:0/0/1:p");
    let poll = ["DELAYQ.POLL", "q", "100"];
    assert_eq!(now(&mut c, &poll, 0), "[j, p, 1, 1000001]");
    // A NACK gives the job back: not a lost lease.
    let nack = ["DELAYQ.NACK", "q", "j", "1000001"];
    assert_eq!(now(&mut c, &nack, 10), "1");
    assert_eq!(now(&mut c, &poll, 10), "[j, p, 2, 1000002]");
    assert_eq!(run(&mut c, &["HGET", "q:jobs", "j"]), "1:2:10:1/0/1:p");
    // Its lease runs out: one delivery after a lost lease is allowed.
    assert_eq!(now(&mut c, &poll, 200), "[j, p, 3, 1000003]");
    assert_eq!(run(&mut c, &["HGET", "q:jobs", "j"]), "1:3:10:1/1/1:p");
    // The second lost lease passes the cap: a dead letter at the lease
    // end, with 7 attempts to spare; the record tells why (2 lost > 1).
    assert_eq!(now(&mut c, &poll, 400), "[]");
    assert_eq!(
        run(&mut c, &["DELAYQ.DEAD", "q"]),
        format!("[j, p, 3, {}]", T0 + 300)
    );
    assert_eq!(run(&mut c, &["HGET", "q:jobs", "j"]), "1:3:10:0/2/1:p");
    assert_eq!(run(&mut c, &["DELAYQ.ACK", "q", "j", "1000003"]), "0");
    // Re-driven: the count starts over, the cap stays.
    assert_eq!(now(&mut c, &["DELAYQ.REDRIVE", "q", "ID", "j"], 500), "1");
    assert_eq!(run(&mut c, &["HGET", "q:jobs", "j"]), "2:0:10:0/0/1:p");
    // LOSTMAX 0: the first lost lease is the end.
    let add0 = ["DELAYQ.ADD", "q", "k", "p", "LOSTMAX", "0"];
    assert_eq!(now(&mut c, &add0, 500), "1");
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "100", "COUNT", "5"], 500),
        "[j, p, 1, 2000001, k, p, 1, 3000001]"
    );
    assert_eq!(run(&mut c, &["DELAYQ.ACK", "q", "j", "2000001"]), "1");
    assert_eq!(run(&mut c, &["HEXISTS", "q:jobs", "j"]), "0");
    assert_eq!(now(&mut c, &poll, 700), "[]");
    assert_eq!(run(&mut c, &["HGET", "q:jobs", "k"]), "3:1:5:0/1/0:p");
    assert_eq!(
        run(&mut c, &["DELAYQ.DEAD", "q"]),
        format!("[k, p, 1, {}]", T0 + 600)
    );
    // REPLACE starts over with this ADD's options: no cap, the 2.0.0 record.
    let re = ["DELAYQ.ADD", "q", "k", "p2", "REPLACE"];
    assert_eq!(now(&mut c, &re, 800), "1");
    assert_eq!(run(&mut c, &["HGET", "q:jobs", "k"]), "4:0:5:0:p2");
    assert_eq!(now(&mut c, &poll, 800), "[k, p2, 1, 4000001]");
    assert_eq!(now(&mut c, &poll, 1000), "[k, p2, 2, 4000002]");
    assert_eq!(run(&mut c, &["HGET", "q:jobs", "k"]), "4:2:5:1:p2");
    // CANCEL, ACK and PURGE remove the record, count and all.
    let add1 = ["DELAYQ.ADD", "q", "m", "p", "LOSTMAX", "3"];
    assert_eq!(now(&mut c, &add1, 1000), "1");
    assert_eq!(now(&mut c, &["DELAYQ.CANCEL", "q", "m"], 1000), "1");
    assert_eq!(run(&mut c, &["HEXISTS", "q:jobs", "m"]), "0");
    // Out of range, or no value: refused, nothing written.
    let before = run(&mut c, &["DEBUG", "DIGEST"]);
    for (bad, want) in [
        (&["LOSTMAX", "-1"][..], NOTINT),
        (&["LOSTMAX", "1000000"][..], NOTINT),
        (&["LOSTMAX", "x"][..], NOTINT),
        (&["LOSTMAX"][..], SYNTAX),
    ] {
        let mut a = vec!["DELAYQ.ADD", "q", "n", "p"];
        a.extend_from_slice(bad);
        assert_eq!(run(&mut c, &a), want, "{bad:?}");
    }
    assert_eq!(run(&mut c, &["DEBUG", "DIGEST"]), before);
    // Lost leases found (j twice, k once, k again without a cap) and the
    // jobs the cap sent to the dead letters (j, k).
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    for want in ["delayq_lost:4", "delayq_lost_dead:2", "delayq_dead:2"] {
        assert!(info.contains(&format!("{want}\r\n")), "{want}: {info}");
    }
}

#[test]
fn bad_input_is_refused_and_nothing_is_written() {
    let srv = Server::start();
    let mut c = srv.conn();
    now(&mut c, &["DELAYQ.ADD", "q", "a", "p"], 0);
    now(&mut c, &["DELAYQ.POLL", "q", "1000"], 0);
    run(&mut c, &["SET", "w:jobs", "x"]);
    run(&mut c, &["SET", "w2:due", "x"]);
    run(&mut c, &["SET", "w3:dead", "x"]);
    run(&mut c, &["RPUSH", "w4:seq", "x"]);
    let before = dump_keys(&mut c, "*");
    let arity = |n: &str| format!("ERR<ERR wrong number of arguments for '{n}' command>");
    let big = "x".repeat(1_048_577);
    let t10 = at(10);
    let cases: Vec<(Vec<&str>, String)> = vec![
        (vec!["DELAYQ.ADD", "q", "a"], arity("delayq.add")),
        (vec!["DELAYQ.POLL", "q"], arity("delayq.poll")),
        (vec!["DELAYQ.ACK", "q", "a"], arity("delayq.ack")),
        (vec!["DELAYQ.ACK", "q", "a", "1", "2"], arity("delayq.ack")),
        (vec!["DELAYQ.NACK", "q", "a"], arity("delayq.nack")),
        (vec!["DELAYQ.EXTEND", "q", "a", "1"], arity("delayq.extend")),
        (vec!["DELAYQ.DEAD"], arity("delayq.dead")),
        (
            vec!["DELAYQ.ADD", "q", "", "p"],
            "ERR<ERR delayq: id must not be empty>".into(),
        ),
        (
            vec!["DELAYQ.ACK", "q", "", "1"],
            "ERR<ERR delayq: id must not be empty>".into(),
        ),
        (
            vec!["DELAYQ.NACK", "q", "", "1"],
            "ERR<ERR delayq: id must not be empty>".into(),
        ),
        (
            vec!["DELAYQ.REDRIVE", "q", "ID", ""],
            "ERR<ERR delayq: id must not be empty>".into(),
        ),
        (
            vec!["DELAYQ.ADD", "q", "n", &big],
            "ERR<ERR delayq: payload exceeds 1048576 bytes>".into(),
        ),
        (
            vec!["DELAYQ.ADD", "q", "n", "p", "DELAY", "-1"],
            NOTINT.into(),
        ),
        (
            vec!["DELAYQ.ADD", "q", "n", "p", "DELAY", "3153600000001"],
            NOTINT.into(),
        ),
        (vec!["DELAYQ.ADD", "q", "n", "p", "AT", "-5"], NOTINT.into()),
        (
            vec!["DELAYQ.ADD", "q", "n", "p", "ATTEMPTS", "0"],
            NOTINT.into(),
        ),
        (
            vec!["DELAYQ.ADD", "q", "n", "p", "ATTEMPTS", "1000001"],
            NOTINT.into(),
        ),
        (
            vec!["DELAYQ.ADD", "q", "n", "p", "DELAY", "1", "AT", "5"],
            SYNTAX.into(),
        ),
        (
            vec!["DELAYQ.ADD", "q", "n", "p", "AT", "5", "DELAY", "1"],
            SYNTAX.into(),
        ),
        (vec!["DELAYQ.ADD", "q", "n", "p", "DELAY"], SYNTAX.into()),
        (vec!["DELAYQ.ADD", "q", "n", "p", "LATER"], SYNTAX.into()),
        (vec!["DELAYQ.POLL", "q", "0"], NOTINT.into()),
        (vec!["DELAYQ.POLL", "q", "-1000"], NOTINT.into()),
        (
            vec!["DELAYQ.POLL", "q", "1000", "COUNT", "0"],
            NOTINT.into(),
        ),
        (
            vec!["DELAYQ.POLL", "q", "1000", "COUNT", "101"],
            NOTINT.into(),
        ),
        (
            vec!["DELAYQ.POLL", "q", "1000", "COUNT", "99999999999"],
            NOTINT.into(),
        ),
        (
            vec!["DELAYQ.POLL", "q", "1000", "BLOCK", "-1"],
            NOTINT.into(),
        ),
        (vec!["DELAYQ.POLL", "q", "1000", "BLOCK"], SYNTAX.into()),
        (vec!["DELAYQ.ACK", "q", "a", "x"], NOTINT.into()),
        (
            vec!["DELAYQ.NACK", "q", "a", "1", "DELAY", "-1"],
            NOTINT.into(),
        ),
        (
            vec!["DELAYQ.NACK", "q", "a", "1", "BACKOFF", "10"],
            SYNTAX.into(),
        ),
        (
            vec!["DELAYQ.NACK", "q", "a", "1", "BACKOFF", "0", "10"],
            NOTINT.into(),
        ),
        (
            vec![
                "DELAYQ.NACK",
                "q",
                "a",
                "1",
                "DELAY",
                "1",
                "BACKOFF",
                "1",
                "2",
            ],
            SYNTAX.into(),
        ),
        (vec!["DELAYQ.EXTEND", "q", "a", "1", "0"], NOTINT.into()),
        (vec!["DELAYQ.DEAD", "q", "COUNT", "0"], NOTINT.into()),
        (
            vec!["DELAYQ.REDRIVE", "q", "COUNT", "1", "ID", "a"],
            SYNTAX.into(),
        ),
        (vec!["DELAYQ.INFO", "q", "NOW", "-1"], NOTINT.into()),
        (vec!["DELAYQ.ADD", "w", "a", "p"], WRONGTYPE.into()),
        (vec!["DELAYQ.POLL", "w2", "10"], WRONGTYPE.into()),
        (vec!["DELAYQ.NACK", "w3", "a", "1"], WRONGTYPE.into()),
        (vec!["DELAYQ.ADD", "w4", "a", "p"], WRONGTYPE.into()),
        (vec!["DELAYQ.ACK", "w", "a", "1000001"], WRONGTYPE.into()),
        (vec!["DELAYQ.REDRIVE", "w4"], WRONGTYPE.into()),
        (vec!["DELAYQ.DEAD", "w3"], WRONGTYPE.into()),
        (vec!["DELAYQ.CANCEL", "q"], arity("delayq.cancel")),
        (
            vec!["DELAYQ.CANCEL", "q", ""],
            "ERR<ERR delayq: id must not be empty>".into(),
        ),
        (vec!["DELAYQ.CANCEL", "q", "a", "NOW", "x"], NOTINT.into()),
        (vec!["DELAYQ.CANCEL", "q", "a", "NOW"], SYNTAX.into()),
        (
            vec!["DELAYQ.CANCEL", "q", "a", "FORCE", "FORCE"],
            SYNTAX.into(),
        ),
        (
            vec!["DELAYQ.CANCEL", "q", "a", "NOW", "1", "NOW", "2"],
            SYNTAX.into(),
        ),
        (vec!["DELAYQ.CANCEL", "q", "a", "LATER"], SYNTAX.into()),
        // `a` is leased until T0 + 1000.
        (
            vec!["DELAYQ.CANCEL", "q", "a", "NOW", &t10],
            "ERR<ERR delayq: job is leased>".into(),
        ),
        (vec!["DELAYQ.CANCEL", "w", "a"], WRONGTYPE.into()),
        (vec!["DELAYQ.CANCEL", "w2", "a"], WRONGTYPE.into()),
        (vec!["DELAYQ.CANCEL", "w3", "a"], WRONGTYPE.into()),
        (vec!["DELAYQ.PEEK"], arity("delayq.peek")),
        (vec!["DELAYQ.PEEK", "q", "COUNT", "0"], NOTINT.into()),
        (vec!["DELAYQ.PEEK", "q", "COUNT", "101"], NOTINT.into()),
        (vec!["DELAYQ.PEEK", "q", "COUNT"], SYNTAX.into()),
        (
            vec!["DELAYQ.PEEK", "q", "COUNT", "1", "COUNT", "2"],
            SYNTAX.into(),
        ),
        (
            vec!["DELAYQ.PEEK", "q", "COUNT", "1", "ID", "a"],
            SYNTAX.into(),
        ),
        (
            vec!["DELAYQ.PEEK", "q", "ID", "a", "COUNT", "1"],
            SYNTAX.into(),
        ),
        (
            vec!["DELAYQ.PEEK", "q", "ID", ""],
            "ERR<ERR delayq: id must not be empty>".into(),
        ),
        (vec!["DELAYQ.PEEK", "w"], WRONGTYPE.into()),
        (vec!["DELAYQ.PEEK", "w2", "ID", "a"], WRONGTYPE.into()),
        (vec!["DELAYQ.PURGE"], arity("delayq.purge")),
        (vec!["DELAYQ.PURGE", "q"], SYNTAX.into()),
        (vec!["DELAYQ.PURGE", "q", "NOW", "5"], SYNTAX.into()),
        (vec!["DELAYQ.PURGE", "q", "MAXLEN", "-1"], NOTINT.into()),
        (
            vec!["DELAYQ.PURGE", "q", "MAXLEN", "9007199254740992"],
            NOTINT.into(),
        ),
        (
            vec!["DELAYQ.PURGE", "q", "MAXAGE", "3153600000001"],
            NOTINT.into(),
        ),
        (vec!["DELAYQ.PURGE", "q", "MAXAGE"], SYNTAX.into()),
        (
            vec!["DELAYQ.PURGE", "q", "MAXLEN", "1", "MAXLEN", "2"],
            SYNTAX.into(),
        ),
        (vec!["DELAYQ.PURGE", "w3", "MAXLEN", "0"], WRONGTYPE.into()),
        (vec!["DELAYQ.PURGE", "w", "MAXLEN", "0"], WRONGTYPE.into()),
    ];
    for (args, want) in &cases {
        assert_eq!(&run(&mut c, args), want, "{:?}", &args[..args.len().min(5)]);
    }
    assert_eq!(
        dump_keys(&mut c, "*"),
        before,
        "a refused command wrote something"
    );
}

#[test]
fn hand_edited_records_are_refused_and_nothing_is_written() {
    let srv = Server::start();
    let mut c = srv.conn();
    for i in 0..3 {
        now(&mut c, &["DELAYQ.ADD", "q", &format!("j{i}"), "p"], i);
    }
    run(&mut c, &["HSET", "q:jobs", "j1", "garbage"]);
    let before = dump_keys(&mut c, "*");
    let bad = "ERR<ERR delayq: corrupt data in 'q:jobs' field 'j1'>";
    // The poll meets j1 after j0: j0 is not leased either.
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "100", "COUNT", "3"], 10),
        bad
    );
    assert_eq!(now(&mut c, &["DELAYQ.ADD", "q", "j1", "x"], 10), bad);
    assert_eq!(run(&mut c, &["DELAYQ.ACK", "q", "j1", "1"]), bad);
    assert_eq!(dump_keys(&mut c, "*"), before);
    // A listed id without a record, a bad generation counter.
    run(&mut c, &["HSET", "q:jobs", "j1", "1:0:5:0:p"]);
    run(&mut c, &["HDEL", "q:jobs", "j0"]);
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "100"], 10),
        "ERR<ERR delayq: corrupt data in 'q:jobs' field 'j0'>"
    );
    run(&mut c, &["ZREM", "q:due", "j0"]);
    run(&mut c, &["SET", "q:seq", "-3"]);
    assert_eq!(
        now(&mut c, &["DELAYQ.ADD", "q", "new", "p"], 10),
        "ERR<ERR delayq: corrupt data in 'q:seq'>"
    );
    run(&mut c, &["SET", "q:seq", "9007199253"]);
    assert_eq!(
        now(&mut c, &["DELAYQ.ADD", "q", "new", "p"], 10),
        "ERR<ERR delayq: integer overflow in 'q:seq'>"
    );
    // Past the last generation is an overflow too, as the reference says;
    // beyond an integer it is corrupt data.
    run(&mut c, &["SET", "q:seq", "9007199254"]);
    assert_eq!(
        now(&mut c, &["DELAYQ.ADD", "q", "new", "p"], 10),
        "ERR<ERR delayq: integer overflow in 'q:seq'>"
    );
    run(&mut c, &["SET", "q:seq", "99999999999999999999"]);
    assert_eq!(
        now(&mut c, &["DELAYQ.ADD", "q", "new", "p"], 10),
        "ERR<ERR delayq: corrupt data in 'q:seq'>"
    );
    assert_eq!(int(&mut c, &["HEXISTS", "q:jobs", "new"]), 0);
    assert_eq!(run(&mut c, &["HGET", "q:jobs", "j1"]), "1:0:5:0:p");
}

#[test]
fn a_backlog_of_exhausted_jobs_is_cleared_in_bounded_steps() {
    let srv = Server::start();
    let mut c = srv.conn();
    let mut pipe = redis::pipe();
    for i in 0..300 {
        let id = format!("x{i:04}");
        pipe.cmd("HSET").arg("q:jobs").arg(&id).arg("1:1:1:1:p");
        pipe.cmd("ZADD").arg("q:due").arg(T0).arg(&id);
    }
    pipe.cmd("HSET").arg("q:jobs").arg("live").arg("2:0:5:0:p");
    pipe.cmd("ZADD").arg("q:due").arg(T0 + 1).arg("live");
    pipe.query::<()>(&mut c).unwrap();
    // At most 200 entries per call: the first poll only clears.
    assert_eq!(now(&mut c, &["DELAYQ.POLL", "q", "100"], 10), "[]");
    assert_eq!(int(&mut c, &["ZCARD", "q:dead"]), 200);
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "100"], 10),
        "[live, p, 1, 2000001]"
    );
    assert_eq!(int(&mut c, &["ZCARD", "q:dead"]), 300);
}

fn blocked(srv: &Server, args: Vec<String>) -> thread::JoinHandle<(String, Instant)> {
    let mut c = srv.conn();
    thread::spawn(move || {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        (run(&mut c, &a), Instant::now())
    })
}

fn strs(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

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
        assert!(Instant::now() < deadline, "never {n} blocked");
        thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_blocked_poll_is_woken_by_an_add_in_order() {
    let srv = Server::start();
    let mut c = srv.conn();
    let w1 = blocked(&srv, strs(&["DELAYQ.POLL", "b", "30000", "BLOCK", "10000"]));
    wait_blocked(&mut c, 1);
    let w2 = blocked(
        &srv,
        strs(&["DELAYQ.POLL", "b", "30000", "COUNT", "2", "BLOCK", "10000"]),
    );
    wait_blocked(&mut c, 2);
    assert_eq!(run(&mut c, &["DELAYQ.ADD", "b", "j1", "p1"]), "1");
    assert_eq!(w1.join().unwrap().0, "[j1, p1, 1, 1000001]");
    // A poll that does not block queues behind the waiter: nothing for it.
    assert_eq!(run(&mut c, &["DELAYQ.POLL", "b", "1000"]), "[]");
    assert_eq!(run(&mut c, &["DELAYQ.ADD", "b", "j2", "p2"]), "1");
    assert_eq!(w2.join().unwrap().0, "[j2, p2, 1, 2000001]");
    // A timeout replies an empty array.
    let w3 = blocked(&srv, strs(&["DELAYQ.POLL", "b", "1000", "BLOCK", "200"]));
    assert_eq!(w3.join().unwrap().0, "[]");
}

#[test]
fn a_blocked_poll_wakes_when_a_delayed_job_falls_due_or_a_lease_runs_out() {
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(
        run(&mut c, &["DELAYQ.ADD", "t", "later", "p", "DELAY", "800"]),
        "1"
    );
    let start = Instant::now();
    let w = blocked(&srv, strs(&["DELAYQ.POLL", "t", "600", "BLOCK", "10000"]));
    let (r, when) = w.join().unwrap();
    assert_eq!(r, "[later, p, 1, 1000001]");
    let waited = when.duration_since(start);
    assert!(
        waited >= Duration::from_millis(700) && waited < Duration::from_millis(5000),
        "{waited:?}"
    );
    // That consumer dies: its lease (600 ms from the first delivery, which
    // `when` follows) runs out and a waiting one gets it. Measured from
    // the first delivery, not from a clock read after the join, which a
    // loaded machine can delay.
    let first = when;
    let w = blocked(&srv, strs(&["DELAYQ.POLL", "t", "600", "BLOCK", "10000"]));
    let (r, when) = w.join().unwrap();
    assert_eq!(r, "[later, p, 2, 1000002]");
    assert!(
        when.duration_since(first) >= Duration::from_millis(400),
        "{:?}",
        when.duration_since(first)
    );
    let stats = run(&mut c, &["INFO", "commandstats"]);
    let calls = stats
        .split("cmdstat_delayq.poll:calls=")
        .nth(1)
        .and_then(|s| s.split(',').next())
        .unwrap_or("0");
    assert_eq!(calls, "2", "waiting must not re-run the poll: {stats}");
}

#[test]
fn a_nack_or_a_redrive_wakes_a_blocked_poll() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["DELAYQ.ADD", "n", "j", "p", "ATTEMPTS", "1"]);
    assert_eq!(
        run(&mut c, &["DELAYQ.POLL", "n", "60000"]),
        "[j, p, 1, 1000001]"
    );
    let w = blocked(&srv, strs(&["DELAYQ.POLL", "n", "60000", "BLOCK", "10000"]));
    wait_blocked(&mut c, 1);
    assert_eq!(run(&mut c, &["DELAYQ.NACK", "n", "j", "1000001"]), "2");
    assert_eq!(run(&mut c, &["DELAYQ.REDRIVE", "n"]), "1");
    assert_eq!(w.join().unwrap().0, "[j, p, 1, 2000001]");
}

#[test]
fn block_does_not_wait_inside_multi_or_scripts() {
    let srv = Server::start();
    let mut c = srv.conn();
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("DELAYQ.POLL")
        .arg(&["m", "1000", "BLOCK", "0"]);
    let v: Vec<Value> = pipe.query(&mut c).unwrap();
    assert_eq!(v, vec![Value::Array(vec![])]);
    let r = run(
        &mut c,
        &[
            "EVAL",
            "return redis.call('DELAYQ.POLL', KEYS[1], 1000, 'BLOCK', 0)",
            "1",
            "m",
        ],
    );
    assert_eq!(r, "[]");
}

#[test]
fn fifty_consumers_that_crash_ack_every_job_exactly_once() {
    let srv = Server::start();
    let mut c = srv.conn();
    let jobs = 1000;
    let mut pipe = redis::pipe();
    for i in 0..jobs {
        pipe.cmd("DELAYQ.ADD").arg(&[
            "work",
            &format!("job{i}"),
            &format!("payload{i}"),
            "ATTEMPTS",
            "1000",
        ]);
    }
    pipe.query::<()>(&mut c).unwrap();
    let acked: Arc<Mutex<HashMap<String, usize>>> = Arc::new(Mutex::new(HashMap::new()));
    let deliveries = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::new();
    for w in 0..50 {
        let acked = acked.clone();
        let deliveries = deliveries.clone();
        let srv_port = srv.port;
        handles.push(thread::spawn(move || {
            let client = redis::Client::open(format!("redis://127.0.0.1:{srv_port}/")).unwrap();
            let mut c = client.get_connection().unwrap();
            let mut n = 0u64;
            loop {
                let r: Vec<Value> = redis::cmd("DELAYQ.POLL")
                    .arg(&["work", "300", "COUNT", "2", "BLOCK", "1500"])
                    .query(&mut c)
                    .unwrap();
                if r.is_empty() {
                    if acked.lock().unwrap().len() == jobs {
                        return;
                    }
                    continue;
                }
                for job in r.chunks(4) {
                    deliveries.fetch_add(1, Ordering::Relaxed);
                    let id = match &job[0] {
                        Value::BulkString(b) => String::from_utf8(b.clone()).unwrap(),
                        v => panic!("{v:?}"),
                    };
                    let receipt = match &job[3] {
                        Value::Int(i) => *i,
                        v => panic!("{v:?}"),
                    };
                    n += 1;
                    // Every seventh delivery "crashes": the consumer drops
                    // the job and its connection without acking.
                    if (n + w).is_multiple_of(7) {
                        c = client.get_connection().unwrap();
                        continue;
                    }
                    let ok: i64 = redis::cmd("DELAYQ.ACK")
                        .arg(&["work", &id])
                        .arg(receipt)
                        .query(&mut c)
                        .unwrap();
                    if ok == 1 {
                        *acked.lock().unwrap().entry(id).or_default() += 1;
                    }
                }
            }
        }));
    }
    for h in handles {
        h.join().unwrap();
    }
    let acked = acked.lock().unwrap();
    assert_eq!(acked.len(), jobs, "every job acked");
    assert!(acked.values().all(|&n| n == 1), "a job acked twice");
    assert!(
        deliveries.load(Ordering::Relaxed) > jobs,
        "some were re-delivered"
    );
    assert_eq!(
        int(&mut c, &["EXISTS", "work:jobs", "work:due", "work:dead"]),
        0
    );
}

#[test]
fn kill_9_under_appendfsync_always_loses_no_acknowledged_operation() {
    let mut srv = start_aof();
    let mut c = srv.conn();
    for i in 0..300 {
        assert_eq!(
            run(
                &mut c,
                &["DELAYQ.ADD", "k", &format!("j{i}"), "p", "DELAY", "0"]
            ),
            "1"
        );
    }
    let mut receipts = Vec::new();
    for _ in 0..100 {
        let r: Vec<Value> = redis::cmd("DELAYQ.POLL")
            .arg(&["k", "600000", "COUNT", "2"])
            .query(&mut c)
            .unwrap();
        for j in r.chunks(4) {
            if let (Value::BulkString(id), Value::Int(rc)) = (&j[0], &j[3]) {
                receipts.push((String::from_utf8(id.clone()).unwrap(), *rc));
            }
        }
    }
    assert_eq!(receipts.len(), 200);
    for (id, rc) in &receipts[..150] {
        assert_eq!(run(&mut c, &["DELAYQ.ACK", "k", id, &rc.to_string()]), "1");
    }
    srv.restart(&[]); // SIGKILL, then replay the AOF
    let mut c = srv.conn();
    assert_eq!(int(&mut c, &["HLEN", "k:jobs"]), 150);
    for (id, rc) in &receipts[..150] {
        assert_eq!(
            run(&mut c, &["DELAYQ.ACK", "k", id, &rc.to_string()]),
            "0",
            "{id} came back"
        );
    }
    // The 50 leased but unacked jobs are still held by their receipts.
    for (id, rc) in &receipts[150..] {
        assert_eq!(run(&mut c, &["DELAYQ.ACK", "k", id, &rc.to_string()]), "1");
    }
    assert_eq!(run(&mut c, &["GET", "k:seq"]), "300");
    let r = run(&mut c, &["DELAYQ.POLL", "k", "1000", "COUNT", "100"]);
    assert_eq!(r.matches(", ").count() + 1, 100 * 4);
}

#[test]
fn a_failover_keeps_leases_and_receipts() {
    let pair = Pair::start();
    let mut m = pair.master.conn();
    run(&mut m, &["DELAYQ.ADD", "f", "a", "pa"]);
    run(&mut m, &["DELAYQ.ADD", "f", "b", "pb"]);
    assert_eq!(
        run(&mut m, &["DELAYQ.POLL", "f", "3000"]),
        "[a, pa, 1, 1000001]"
    );
    let _: i64 = redis::cmd("WAIT").arg(1).arg(5000).query(&mut m).unwrap();
    let Pair {
        mut master,
        replica,
    } = pair;
    master.stop();
    let mut r = replica.conn();
    assert_eq!(run(&mut r, &["REPLICAOF", "NO", "ONE"]), "OK");
    // a is still leased on the new master (a 3 s lease: a failover on a
    // loaded machine can take longer than a short one); its lease ends at the same
    // instant and then a is delivered again, with a new receipt.
    assert_eq!(
        run(&mut r, &["DELAYQ.POLL", "f", "3000", "COUNT", "5"]),
        "[b, pb, 1, 2000001]"
    );
    let w = blocked(
        &replica,
        strs(&["DELAYQ.POLL", "f", "3000", "BLOCK", "10000"]),
    );
    assert_eq!(w.join().unwrap().0, "[a, pa, 2, 1000002]");
}

fn workload(c: &mut Connection) {
    for args in [
        vec!["DELAYQ.ADD", "w", "a", "pa"],
        vec!["DELAYQ.ADD", "w", "b", "pb", "DELAY", "60000"],
        vec!["DELAYQ.ADD", "w", "c", "pc", "ATTEMPTS", "1"],
        vec!["DELAYQ.ADD", "w", "d", "pd"],
        vec!["DELAYQ.POLL", "w", "60000", "COUNT", "3"],
        vec!["DELAYQ.ACK", "w", "a", "1000001"],
        vec!["DELAYQ.NACK", "w", "c", "3000001"],
        vec![
            "DELAYQ.NACK",
            "w",
            "d",
            "4000001",
            "BACKOFF",
            "1000",
            "5000",
        ],
        vec![
            "DELAYQ.ADD",
            "w",
            "b",
            "pb2",
            "REPLACE",
            "AT",
            "1764720000000",
        ],
        vec!["DELAYQ.POLL", "w", "30000"],
        vec!["DELAYQ.EXTEND", "w", "b", "5000001", "90000"],
        vec!["DELAYQ.REDRIVE", "w"],
        vec!["DELAYQ.ADD", "w", "e", "pe", "DELAY", "60000"],
        vec!["DELAYQ.ADD", "w", "f", "pf", "ATTEMPTS", "1"],
        vec!["DELAYQ.CANCEL", "w", "e"],
        vec!["DELAYQ.POLL", "w", "60000", "COUNT", "3"],
        vec!["DELAYQ.CANCEL", "w", "b", "FORCE"],
        vec!["DELAYQ.NACK", "w", "f", "8000001"],
        vec!["DELAYQ.PURGE", "w", "MAXAGE", "60000"],
        vec!["DELAYQ.PURGE", "w", "MAXLEN", "0"],
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
fn replica_aof_and_rdb_end_byte_identical() {
    let pair = Pair::start();
    let mut aof = start_aof();
    let mut m = pair.master.conn();
    let mut a = aof.conn();
    workload(&mut m);
    workload(&mut a);
    assert_eq!(run(&mut m, &["ZCARD", "w:due"]), "2");
    assert_eq!(run(&mut m, &["HKEYS", "w:jobs"]), "[c, d]");
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
fn a_waiter_served_by_an_add_replicates_exactly() {
    let pair = Pair::start();
    let mut m = pair.master.conn();
    let w = blocked(
        &pair.master,
        strs(&["DELAYQ.POLL", "s", "60000", "BLOCK", "10000"]),
    );
    wait_blocked(&mut m, 1);
    run(&mut m, &["DELAYQ.ADD", "s", "j", "p"]);
    assert_eq!(w.join().unwrap().0, "[j, p, 1, 1000001]");
    let l = run(&mut m, &["LOCK.ACQUIRE", "lk", "a", "400"]);
    assert_eq!(l, "1");
    let w = blocked(
        &pair.master,
        strs(&["LOCK.ACQUIRE", "lk", "b", "60000", "BLOCK", "10000"]),
    );
    assert_eq!(w.join().unwrap().0, "2");
    pair.assert_equal();
    let mut r = pair.replica.conn();
    assert_eq!(run(&mut r, &["HGET", "s:jobs", "j"]), "1:1:5:1:p");
    assert_eq!(run(&mut r, &["GET", "lk"]), run(&mut m, &["GET", "lk"]));
}

#[test]
fn stall_no_command_blocks_the_server_over_a_millisecond() {
    let slow = persistent_stalls(stall_run);
    assert!(
        slow.is_empty(),
        "DELAYQ commands over 1 ms in every run: {slow:?}"
    );
}

/// One run of the stall scenario on a fresh server; returns the slow
/// DELAYQ commands.
fn stall_run() -> Vec<String> {
    let srv = Server::start();
    let mut c = srv.conn();
    let mut pipe = redis::pipe();
    for i in 0..3000 {
        pipe.cmd("DELAYQ.ADD")
            .arg(&["big", &format!("job{i}"), "a small payload"])
            .arg("NOW")
            .arg(T0 + i);
    }
    pipe.query::<()>(&mut c).unwrap();
    // 300 exhausted jobs in the way, then full polls of 100.
    let mut pipe = redis::pipe();
    for i in 0..300 {
        pipe.cmd("HSET")
            .arg("big:jobs")
            .arg(format!("dead{i}"))
            .arg("1:3:3:1:p");
        pipe.cmd("ZADD")
            .arg("big:due")
            .arg(T0 - 1)
            .arg(format!("dead{i}"));
    }
    pipe.query::<()>(&mut c).unwrap();
    run(
        &mut c,
        &["CONFIG", "SET", "slowlog-log-slower-than", "1000"],
    );
    run(&mut c, &["SLOWLOG", "RESET"]);
    for round in 0..6 {
        let t = at(10_000 + round);
        run(
            &mut c,
            &["DELAYQ.POLL", "big", "1000", "COUNT", "100", "NOW", &t],
        );
    }
    let t = at(10_000);
    let r = run(
        &mut c,
        &["DELAYQ.POLL", "big", "1000", "COUNT", "100", "NOW", &t],
    );
    assert_eq!(r.matches(", ").count() + 1, 400);
    run(&mut c, &["DELAYQ.INFO", "big"]);
    run(&mut c, &["DELAYQ.DEAD", "big", "COUNT", "100"]);
    run(&mut c, &["DELAYQ.REDRIVE", "big", "COUNT", "100"]);
    run(&mut c, &["DELAYQ.PEEK", "big", "COUNT", "100"]);
    let purged = run(&mut c, &["DELAYQ.PURGE", "big", "MAXLEN", "0"]);
    assert_eq!(purged, "100");
    slow_commands(&mut c, "delayq.")
}

#[test]
fn info_counts_and_events_fire() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KA"]);
    let mut sub = srv.conn();
    let mut ps = sub.as_pubsub();
    ps.psubscribe("__keyspace@0__:ev").unwrap();
    let script: &[&[&str]] = &[
        &["DELAYQ.ADD", "ev", "j", "p", "ATTEMPTS", "2"],
        &["DELAYQ.ADD", "ev", "j", "p"],
        &["DELAYQ.POLL", "ev", "60000"],
        &["DELAYQ.EXTEND", "ev", "j", "1000001", "60000"],
        &["DELAYQ.NACK", "ev", "j", "1000001"],
        &["DELAYQ.POLL", "ev", "60000"],
        &["DELAYQ.NACK", "ev", "j", "1000002"],
        &["DELAYQ.REDRIVE", "ev"],
        &["DELAYQ.POLL", "ev", "60000"],
        &["DELAYQ.ACK", "ev", "j", "2000001"],
    ];
    for args in script {
        cmd(&mut c, args).unwrap();
    }
    // A consumer waiting on the queue, fed by an ADD: the ADD's event,
    // then the served poll's.
    let w = blocked(
        &srv,
        strs(&["DELAYQ.POLL", "ev", "60000", "BLOCK", "10000"]),
    );
    wait_blocked(&mut c, 1);
    cmd(&mut c, &["DELAYQ.ADD", "ev", "k", "p"]).unwrap();
    assert!(w.join().unwrap().0.starts_with("[k, p, 1,"));
    let mut events = Vec::new();
    ps.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    while let Ok(msg) = ps.get_message() {
        let e: String = msg.get_payload().unwrap();
        events.push(e.trim_start_matches("hotpath.delayq.").to_string());
        if events.len() == 11 {
            break;
        }
    }
    // Nothing more arrives: one event per call that changed the queue,
    // named after the command (a NACK to the dead letters is a nack).
    assert!(ps.get_message().is_err(), "an extra event");
    assert_eq!(
        events,
        [
            "add", "poll", "extend", "nack", "poll", "nack", "redrive", "poll", "ack", "add",
            "poll"
        ]
    );
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    for want in [
        "delayq_added:2",
        "delayq_duplicates:1",
        "delayq_delivered:4",
        "delayq_acked:1",
        "delayq_nacked:2",
        "delayq_dead:1",
        "delayq_redriven:1",
    ] {
        assert!(info.contains(want), "{want}: {info}");
    }
}

#[test]
fn an_extend_that_shortens_the_lease_wakes_a_blocked_poll_at_the_new_end() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["DELAYQ.ADD", "x", "j", "p"]);
    assert_eq!(
        run(&mut c, &["DELAYQ.POLL", "x", "5000"]),
        "[j, p, 1, 1000001]"
    );
    let w = blocked(&srv, strs(&["DELAYQ.POLL", "x", "5000", "BLOCK", "10000"]));
    wait_blocked(&mut c, 1);
    let start = Instant::now();
    assert_eq!(
        run(&mut c, &["DELAYQ.EXTEND", "x", "j", "1000001", "100"]),
        "1"
    );
    let (r, when) = w.join().unwrap();
    assert_eq!(r, "[j, p, 2, 1000002]");
    let waited = when.duration_since(start);
    assert!(
        waited >= Duration::from_millis(80) && waited < Duration::from_millis(600),
        "served {waited:?} after the extend"
    );
}

/// Keyspace events of `key` raised while `f` runs (named without the
/// `hotpath.delayq.` prefix).
fn events_of(srv: &Server, key: &str, n: usize, f: impl FnOnce()) -> Vec<String> {
    let mut sub = srv.conn();
    let mut ps = sub.as_pubsub();
    ps.psubscribe(format!("__keyspace@0__:{key}")).unwrap();
    f();
    ps.set_read_timeout(Some(Duration::from_millis(500)))
        .unwrap();
    let mut events = Vec::new();
    while let Ok(msg) = ps.get_message() {
        let e: String = msg.get_payload().unwrap();
        events.push(e.trim_start_matches("hotpath.delayq.").to_string());
        if events.len() > n {
            break;
        }
    }
    events
}

#[test]
fn cancel_removes_waiting_expired_and_dead_jobs_and_a_running_lease_only_with_force() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KA"]);
    now(
        &mut c,
        &["DELAYQ.ADD", "q", "wait", "pw", "DELAY", "5000"],
        0,
    );
    now(&mut c, &["DELAYQ.ADD", "q", "held", "ph"], 0);
    now(
        &mut c,
        &["DELAYQ.ADD", "q", "gone", "pg", "ATTEMPTS", "1"],
        1,
    );
    now(&mut c, &["DELAYQ.ADD", "q", "other", "po"], 2);
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "1000", "COUNT", "2"], 10),
        "[held, ph, 1, 2000001, gone, pg, 1, 3000001]"
    );
    assert_eq!(
        now(&mut c, &["DELAYQ.NACK", "q", "gone", "3000001"], 20),
        "2"
    );
    let events = events_of(&srv, "q", 5, || {
        let mut c = srv.conn();
        // A waiting job, and one with no such id.
        assert_eq!(now(&mut c, &["DELAYQ.CANCEL", "q", "wait"], 30), "1");
        assert_eq!(now(&mut c, &["DELAYQ.CANCEL", "q", "wait"], 30), "0");
        assert_eq!(now(&mut c, &["DELAYQ.CANCEL", "q", "nope"], 30), "0");
        // A dead letter.
        assert_eq!(now(&mut c, &["DELAYQ.CANCEL", "q", "gone"], 30), "1");
        // A running lease: refused without FORCE, nothing written.
        let before = dump_keys(&mut c, "*");
        assert_eq!(
            now(&mut c, &["DELAYQ.CANCEL", "q", "held"], 1009),
            "ERR<ERR delayq: job is leased>"
        );
        assert_eq!(dump_keys(&mut c, "*"), before);
        // Once the lease ran out, the job is ready again: no FORCE needed.
        assert_eq!(now(&mut c, &["DELAYQ.CANCEL", "q", "held"], 1010), "1");
    });
    assert_eq!(events, ["cancel", "cancel", "cancel"]);
    assert_eq!(int(&mut c, &["HLEN", "q:jobs"]), 1);
    assert_eq!(int(&mut c, &["ZCARD", "q:due"]), 1);
    assert_eq!(int(&mut c, &["EXISTS", "q:dead"]), 0);
    // FORCE takes a running lease: the holder's receipt is stale.
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "60000"], 2000),
        "[other, po, 1, 4000001]"
    );
    assert_eq!(
        now(&mut c, &["DELAYQ.CANCEL", "q", "other", "force"], 2001),
        "1"
    );
    assert_eq!(run(&mut c, &["DELAYQ.ACK", "q", "other", "4000001"]), "0");
    assert_eq!(
        now(
            &mut c,
            &["DELAYQ.EXTEND", "q", "other", "4000001", "100"],
            2002
        ),
        "0"
    );
    assert_eq!(
        now(&mut c, &["DELAYQ.NACK", "q", "other", "4000001"], 2002),
        "0"
    );
    assert_eq!(int(&mut c, &["EXISTS", "q:jobs", "q:due", "q:dead"]), 0);
    // The same id added again starts over, with a new generation.
    assert_eq!(now(&mut c, &["DELAYQ.ADD", "q", "other", "p2"], 3000), "1");
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "60000"], 3000),
        "[other, p2, 1, 5000001]"
    );
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    assert!(info.contains("delayq_cancelled:4"), "{info}");
    // A corrupt lease end is refused, not read as running or not.
    run(&mut c, &["ZADD", "q:due", "1.5", "other"]);
    assert_eq!(
        now(&mut c, &["DELAYQ.CANCEL", "q", "other", "FORCE"], 3001),
        "ERR<ERR delayq: corrupt data in 'q:due' field 'other'>"
    );
    run(&mut c, &["HSET", "q:jobs", "bad", "junk"]);
    assert_eq!(
        now(&mut c, &["DELAYQ.CANCEL", "q", "bad"], 3001),
        "ERR<ERR delayq: corrupt data in 'q:jobs' field 'bad'>"
    );
    assert_eq!(run(&mut c, &["HGET", "q:jobs", "bad"]), "junk");
}

#[test]
fn peek_lists_the_line_earliest_first_bounded_by_count() {
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(run(&mut c, &["DELAYQ.PEEK", "q"]), "[]");
    for i in 0..150 {
        let id = format!("j{i:03}");
        now(
            &mut c,
            &["DELAYQ.ADD", "q", &id, "p", "DELAY", "1000"],
            150 - i,
        );
    }
    assert_eq!(
        now(&mut c, &["DELAYQ.POLL", "q", "5000"], 1149),
        "[j149, p, 1, 150000001]"
    );
    let t = |ms: i64| at(ms);
    // Default 10, earliest first; the leased job is scored at its lease end.
    let first = run(&mut c, &["DELAYQ.PEEK", "q"]);
    assert_eq!(first.matches(", ").count() + 1, 50);
    assert!(
        first.starts_with(&format!(
            "[j148, p, 0, {}, 0, j147, p, 0, {}, 0,",
            t(1002),
            t(1003)
        )),
        "{first}"
    );
    let all = run(&mut c, &["DELAYQ.PEEK", "q", "COUNT", "100"]);
    assert_eq!(all.matches(", ").count() + 1, 500);
    assert!(
        all.ends_with(&format!("j049, p, 0, {}, 0]", t(1101))),
        "{all}"
    );
    // One by id, wherever it stands in line; nothing for a job not in line.
    assert_eq!(
        run(&mut c, &["DELAYQ.PEEK", "q", "ID", "j149"]),
        format!("[j149, p, 1, {}, 1]", t(6149))
    );
    assert_eq!(run(&mut c, &["DELAYQ.PEEK", "q", "ID", "none"]), "[]");
    // A dead letter is not in line.
    run(
        &mut c,
        &["DELAYQ.ADD", "q", "d", "pd", "ATTEMPTS", "1", "NOW", &t(0)],
    );
    now(&mut c, &["DELAYQ.POLL", "q", "5000"], 0);
    now(&mut c, &["DELAYQ.NACK", "q", "d", "151000001"], 0);
    assert_eq!(run(&mut c, &["DELAYQ.PEEK", "q", "ID", "d"]), "[]");
    // Corrupt records and scores are refused.
    run(&mut c, &["HSET", "q:jobs", "j148", "junk"]);
    assert_eq!(
        run(&mut c, &["DELAYQ.PEEK", "q", "COUNT", "1"]),
        "ERR<ERR delayq: corrupt data in 'q:jobs' field 'j148'>"
    );
    run(&mut c, &["ZADD", "q:due", "inf", "j000"]);
    assert_eq!(
        run(&mut c, &["DELAYQ.PEEK", "q", "ID", "j000"]),
        "ERR<ERR delayq: corrupt data in 'q:due' field 'j000'>"
    );
}

#[test]
fn purge_keeps_dead_letters_within_maxlen_and_maxage_in_steps_of_100() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KA"]);
    let mut pipe = redis::pipe();
    for i in 0..250 {
        let id = format!("x{i:03}");
        pipe.cmd("HSET").arg("q:jobs").arg(&id).arg("1:1:1:0:p");
        pipe.cmd("ZADD").arg("q:dead").arg(T0 + i).arg(&id);
    }
    pipe.cmd("HSET").arg("q:jobs").arg("live").arg("2:0:5:0:p");
    pipe.cmd("ZADD").arg("q:due").arg(T0).arg("live");
    pipe.query::<()>(&mut c).unwrap();
    let mut events = Vec::new();
    events.extend(events_of(&srv, "q", 3, || {
        let mut c = srv.conn();
        // Nothing to do: no event, nothing written.
        assert_eq!(run(&mut c, &["DELAYQ.PURGE", "q", "MAXLEN", "250"]), "0");
        // MAXLEN 20: 230 to go, 100 per call.
        assert_eq!(run(&mut c, &["DELAYQ.PURGE", "q", "MAXLEN", "20"]), "100");
        assert_eq!(run(&mut c, &["DELAYQ.PURGE", "q", "MAXLEN", "20"]), "100");
        assert_eq!(run(&mut c, &["DELAYQ.PURGE", "q", "MAXLEN", "20"]), "30");
    }));
    assert_eq!(events, ["purge", "purge", "purge"]);
    assert_eq!(int(&mut c, &["ZCARD", "q:dead"]), 20);
    // The oldest went, record and all; the newest stay.
    assert_eq!(int(&mut c, &["HEXISTS", "q:jobs", "x229"]), 0);
    assert_eq!(int(&mut c, &["HEXISTS", "q:jobs", "x230"]), 1);
    assert_eq!(run(&mut c, &["ZRANGE", "q:dead", "0", "0"]), "[x230]");
    // MAXAGE 10 at T0+249: dead at T0+230..238 are older than 10 ms.
    assert_eq!(
        now(&mut c, &["DELAYQ.PURGE", "q", "MAXAGE", "10"], 249),
        "9"
    );
    // Either limit removes: MAXLEN 5 with a MAXAGE nothing exceeds.
    assert_eq!(
        now(
            &mut c,
            &["DELAYQ.PURGE", "q", "MAXAGE", "1000", "MAXLEN", "5"],
            259
        ),
        "6"
    );
    assert_eq!(
        run(&mut c, &["ZRANGE", "q:dead", "0", "-1"]),
        "[x245, x246, x247, x248, x249]"
    );
    // The line is never touched.
    assert_eq!(run(&mut c, &["HGET", "q:jobs", "live"]), "2:0:5:0:p");
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    assert!(info.contains("delayq_purged:245"), "{info}");
    // A dead letter without its record, or with a hand-set score, is
    // refused before anything is removed.
    run(&mut c, &["HDEL", "q:jobs", "x246"]);
    let before = dump_keys(&mut c, "*");
    assert_eq!(
        run(&mut c, &["DELAYQ.PURGE", "q", "MAXLEN", "0"]),
        "ERR<ERR delayq: corrupt data in 'q:jobs' field 'x246'>"
    );
    assert_eq!(dump_keys(&mut c, "*"), before);
    run(&mut c, &["HSET", "q:jobs", "x246", "1:1:1:0:p"]);
    run(&mut c, &["ZADD", "q:dead", "1e300", "x249"]);
    let before2 = dump_keys(&mut c, "*");
    assert_eq!(
        run(&mut c, &["DELAYQ.PURGE", "q", "MAXLEN", "0"]),
        "ERR<ERR delayq: corrupt data in 'q:dead' field 'x249'>"
    );
    assert_eq!(dump_keys(&mut c, "*"), before2);
}

#[test]
fn a_cancelled_job_is_never_handed_to_a_blocked_poll() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["DELAYQ.ADD", "b", "soon", "p1", "DELAY", "300"]);
    let w = blocked(&srv, strs(&["DELAYQ.POLL", "b", "60000", "BLOCK", "10000"]));
    wait_blocked(&mut c, 1);
    assert_eq!(run(&mut c, &["DELAYQ.CANCEL", "b", "soon"]), "1");
    // The timer armed for `soon` fires and finds nothing: still waiting.
    thread::sleep(Duration::from_millis(600));
    wait_blocked(&mut c, 1);
    assert!(!w.is_finished(), "served a cancelled job");
    // A leased job cancelled with FORCE is not served when its lease would
    // have ended either.
    run(&mut c, &["DELAYQ.ADD", "b2", "held", "p"]);
    assert_eq!(
        run(&mut c, &["DELAYQ.POLL", "b2", "300"]),
        "[held, p, 1, 1000001]"
    );
    let w2 = blocked(
        &srv,
        strs(&["DELAYQ.POLL", "b2", "60000", "BLOCK", "10000"]),
    );
    wait_blocked(&mut c, 2);
    assert_eq!(run(&mut c, &["DELAYQ.CANCEL", "b2", "held", "FORCE"]), "1");
    thread::sleep(Duration::from_millis(600));
    assert!(!w2.is_finished(), "served a cancelled job");
    // The next job added goes to the waiters, first come first served.
    assert_eq!(run(&mut c, &["DELAYQ.ADD", "b", "next", "p2"]), "1");
    assert_eq!(w.join().unwrap().0, "[next, p2, 1, 2000001]");
    assert_eq!(run(&mut c, &["DELAYQ.ADD", "b2", "next", "p3"]), "1");
    assert_eq!(w2.join().unwrap().0, "[next, p3, 1, 2000001]");
}
