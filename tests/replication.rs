//! Replication coverage, enforced: every write command the server lists for
//! the module must have a case here, and every case runs on a master with a
//! real replica, on an AOF server restarted (replaying the AOF) and through
//! an RDB reload, all compared with `DEBUG DIGEST`. Commands that read the
//! clock or draw random numbers run without `NOW`, so the master's own time
//! and draws must reach the replica and the AOF.
//!
//! The examples of every page of the command reference run the same way,
//! each page in a database of its own: a write command that succeeds in
//! its page's examples needs no case in [`cases`], so a new family's page
//! brings its replication case with it.

use crate::common;

use common::*;

/// The write commands and the workload that exercises each (also each
/// family's workload in tests/aof_replay.rs).
pub(crate) fn cases() -> Vec<(&'static str, Vec<Vec<String>>)> {
    let v = |lines: &[&str]| -> Vec<Vec<String>> {
        lines
            .iter()
            .map(|l| l.split_whitespace().map(String::from).collect())
            .collect()
    };
    let mut out = vec![
        (
            "poll.create",
            v(&[
                "POLL.CREATE r:p1 MODE MULTI MAXVOTES 2 CANDIDATES 3 a b c TTL 1000",
                "POLL.CREATE r:p2 MODE DAILY TZ 60",
            ]),
        ),
        (
            "poll.vote",
            v(&[
                "POLL.VOTE r:p1 u1 a",
                "POLL.VOTE r:p1 u1 b",
                "POLL.VOTE r:p2 u1 a",
                "POLL.VOTE r:p3 u1 z",
                "POLL.VOTE r:p3 u2 z",
            ]),
        ),
        (
            "poll.revoke",
            v(&[
                "POLL.REVOKE r:p1 u1 a",
                "POLL.REVOKE r:p2 u1",
                "POLL.REVOKE r:p3 u2",
            ]),
        ),
        ("poll.sync", v(&["POLL.SYNC r:p1", "POLL.SYNC r:p3"])),
        (
            "poll.syncack",
            v(&[
                "POLL.SYNCACK r:p1 1",
                "POLL.VOTE r:p1 u2 c",
                "POLL.SYNC r:p1",
            ]),
        ),
    ];
    out.extend(family_cases());
    out.extend(lock_delayq_cases());
    out.extend(stock_cases());
    out
}

/// STOCK: every write without `NOW`, so the master's instant (lease ends,
/// lapsed leases returned) must reach the replica and the AOF; the TTL's
/// one instant must too (the tests compare PEXPIRETIME as well).
fn stock_cases() -> Vec<(&'static str, Vec<Vec<String>>)> {
    let v = |lines: &[&str]| -> Vec<Vec<String>> {
        lines
            .iter()
            .map(|l| l.split_whitespace().map(String::from).collect())
            .collect()
    };
    vec![
        (
            "stock.create",
            v(&[
                "STOCK.CREATE r:{s1} 10 LIMIT 3 LEASE 60000 TTL 1000",
                "STOCK.CREATE r:{s2} 4 LEASE 1",
            ]),
        ),
        (
            "stock.reserve",
            v(&[
                "STOCK.RESERVE r:{s1} u1 o1 2",
                "STOCK.RESERVE r:{s1} u1 o2 2",
                "STOCK.RESERVE r:{s1} u2 o3 1",
                "STOCK.RESERVE r:{s2} u1 o1 3",
                "STOCK.RESERVE r:{s2} u2 o2 4",
            ]),
        ),
        ("stock.confirm", v(&["STOCK.CONFIRM r:{s1} o1"])),
        ("stock.release", v(&["STOCK.RELEASE r:{s1} o3"])),
        (
            "stock.restock",
            v(&["STOCK.RESTOCK r:{s1} 5", "STOCK.RESTOCK r:{s2} 0"]),
        ),
        // A spread stock of 2 shards ({4Kh}r:sku holds the pool): a
        // refill and a handback through their three steps, a dry mark.
        (
            "stock.transfer",
            v(&[
                "STOCK.CREATE {4Kh}r:sku 10 TTL 1000 SPREAD 2",
                "STOCK.CREATE {4il}r:sku 10 TTL 1000 SPREAD 2",
                "STOCK.TRANSFER {4Kh}r:sku t1 1 4 SPREAD 2",
                "STOCK.TRANSFER {4Kh}r:sku t2 1 -2 SPREAD 2",
            ]),
        ),
        (
            "stock.apply",
            v(&[
                "STOCK.APPLY {4il}r:sku t1 4 SPREAD 2",
                "STOCK.RESERVE {4il}r:sku 1 o1 1 SPREAD 2",
                "STOCK.APPLY {4il}r:sku t2 -2 SPREAD 2",
                "STOCK.APPLY {4il}r:sku d1 0 SPREAD 2",
            ]),
        ),
        (
            "stock.settle",
            v(&[
                "STOCK.SETTLE {4Kh}r:sku t1 4 SPREAD 2",
                "STOCK.SETTLE {4Kh}r:sku t2 -2 SPREAD 2",
            ]),
        ),
    ]
}

/// Cases of the other families (kept apart to merge cleanly).
fn family_cases() -> Vec<(&'static str, Vec<Vec<String>>)> {
    let v = |lines: &[&str]| -> Vec<Vec<String>> {
        lines
            .iter()
            .map(|l| l.split_whitespace().map(String::from).collect())
            .collect()
    };
    let mut likes = vec!["LIKE.ADD r:l2 1".to_string()];
    // Enough likers to cross the default promotion threshold.
    likes.extend((0..1100).map(|u| format!("LIKE.ADD r:l3 {}", u * 7)));
    let likes: Vec<Vec<String>> = likes
        .iter()
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect();
    let mut joins = Vec::new();
    for u in 0..200 {
        joins.push(format!("LUCKYBAG.JOIN r:b1 {u}"));
    }
    joins.push("LUCKYBAG.JOIN r:b1 9001 TASK PENDING".into());
    joins.push("LUCKYBAG.JOIN r:b2 1".into());
    let joins: Vec<Vec<String>> = joins
        .iter()
        .map(|l| l.split_whitespace().map(String::from).collect())
        .collect();
    vec![
        (
            "rank.create",
            v(&[
                "RANK.CREATE r:k1 TIEBREAK EARLIER UNIT MS DIGITS 13 TTL 1000",
                "RANK.CREATE r:k2 TIEBREAK LATER",
            ]),
        ),
        (
            "rank.add",
            v(&[
                "RANK.ADD r:k1 alice 10",
                "RANK.ADD r:k1 bob 10",
                "RANK.ADD r:k2 carol 5 GT",
                "RANK.ADD r:k3 dave -3",
            ]),
        ),
        (
            "rank.incr",
            v(&[
                "RANK.INCR r:k1 alice 5",
                "RANK.INCR r:k2 carol -2",
                "RANK.INCR r:k3 erin 1",
            ]),
        ),
        ("rank.rem", v(&["RANK.REM r:k1 bob", "RANK.ADD r:k1 bob 3"])),
        (
            "rank.decr",
            v(&[
                "RANK.DECR r:k1 alice 2",
                "RANK.CREATE r:w1 LAYOUT WIDE TTL 1000",
                "RANK.ADD r:w1 alice 9007199254740000",
                "RANK.ADD r:w1 bob 9007199254740000",
                "RANK.DECR r:w1 alice 5",
                "RANK.INCR r:w1 bob 3",
                "RANK.ADD r:w1 carol 7 GT",
                "RANK.ADD r:w1 carol 7 GT",
                "RANK.REM r:w1 alice",
                "RANK.DECR r:w2 dave 1",
            ]),
        ),
        (
            "rank.merge",
            v(&[
                "RANK.MERGE r:k4 2 r:k1 r:k2 AGGREGATE SUM",
                "RANK.MERGE r:k5 2 r:k1 r:k3 AGGREGATE MAX TTL 500",
            ]),
        ),
        (
            "rank.import",
            v(&[
                "ZADD r:k6 5 a 7 b -2 c 9 d",
                "PEXPIRE r:k6 900000",
                "RANK.IMPORT r:k6 COUNT 2",
                "RANK.IMPORT r:k6 COUNT 2",
                "ZADD r:k7 1 x",
                "RANK.IMPORT r:k7 TIEBREAK LATER",
            ]),
        ),
        (
            "like.toggle",
            v(&[
                "LIKE.TOGGLE r:l1 5",
                "LIKE.TOGGLE r:l1 6",
                "LIKE.TOGGLE r:l1 5",
            ]),
        ),
        ("like.add", likes),
        ("like.rem", v(&["LIKE.REM r:l1 6", "LIKE.REM r:l3 7"])),
        // A migration step as a master replicates it, on r:l3 promoted
        // above (its range 0 has a chunk): liker 5, left in the Set by
        // hand, moves to the chunk; 9 is not a liker.
        (
            "like.migrate",
            v(&[
                "SADD r:l3:set 5",
                "INCR r:l3:count",
                "LIKE.MIGRATE r:l3 5 9",
            ]),
        ),
        (
            "redpacket.split",
            v(&[
                "REDPACKET.SPLIT r:r1 10000 10",
                "REDPACKET.SPLIT r:r2 1000 7 MODE EQUAL TTL 1000",
                "REDPACKET.SPLIT r:r3 500 5",
            ]),
        ),
        (
            "redpacket.grab",
            v(&[
                "REDPACKET.GRAB r:r1 u1",
                "REDPACKET.GRAB r:r1 u2",
                "REDPACKET.GRAB r:r1 u1",
                "REDPACKET.GRAB r:r2 u1",
                "REDPACKET.GRAB r:r3 u3",
            ]),
        ),
        ("redpacket.refund", v(&["REDPACKET.REFUND r:r1"])),
        (
            "luckybag.create",
            v(&[
                "LUCKYBAG.CREATE r:b1 WINNERS 5 SHARDS 4 POOLCAP 100 HIGHSCORE 0.5",
                "LUCKYBAG.CREATE r:b2 WINNERS 2 RESTORE NO TTL 1000",
            ]),
        ),
        ("luckybag.join", joins),
        ("luckybag.task", v(&["LUCKYBAG.TASK r:b1 9001"])),
        (
            "luckybag.leave",
            v(&[
                "LUCKYBAG.LEAVE r:b1 3",
                "LUCKYBAG.LEAVE r:b1 4",
                "LUCKYBAG.LEAVE r:b2 1",
            ]),
        ),
        (
            "luckybag.enter",
            v(&["LUCKYBAG.ENTER r:b1 3", "LUCKYBAG.ENTER r:b2 1"]),
        ),
        (
            "luckybag.draw",
            v(&["LUCKYBAG.DRAW r:b1", "LUCKYBAG.DRAW r:b1"]),
        ),
        // Spread forms (docs/reference/spread.md): a post's shards, and a
        // bag of two shards drawn step by step (its participants' tasks
        // are pending, so the right winner list is the empty one).
        (
            "like.create",
            v(&[
                "LIKE.CREATE {0VD}post:9 SPREAD 2",
                "LIKE.CREATE {00H}post:9 SPREAD 2",
                "LIKE.ADD {00H}post:9 7 SPREAD 2",
            ]),
        ),
        (
            "luckybag.drawbegin",
            v(&[
                "LUCKYBAG.CREATE {5R0}bag:{live10} WINNERS 2 TTL 1000 SPREAD 2",
                "LUCKYBAG.CREATE {5p4}bag:{live10} WINNERS 2 TTL 1000 SPREAD 2",
                "LUCKYBAG.JOIN {5R0}bag:{live10} u2 TASK PENDING SPREAD 2",
                "LUCKYBAG.JOIN {5p4}bag:{live10} u1 TASK PENDING SPREAD 2",
                "LUCKYBAG.DRAWBEGIN {5R0}bag:{live10} t1 LEASE 60000 SPREAD 2",
            ]),
        ),
        (
            "luckybag.freeze",
            v(&[
                "LUCKYBAG.FREEZE {5R0}bag:{live10} 2 SPREAD 2",
                "LUCKYBAG.FREEZE {5p4}bag:{live10} 2 SPREAD 2",
                "LUCKYBAG.FREEZE {5p4}bag:{live10} 2 SPREAD 2",
            ]),
        ),
        (
            "luckybag.commit",
            v(&[
                "LUCKYBAG.COMMIT {5R0}bag:{live10} t1 SPREAD 2",
                "LUCKYBAG.COMMIT {5R0}bag:{live10} t1 SPREAD 2",
            ]),
        ),
        (
            "luckybag.publish",
            v(&[
                "LUCKYBAG.PUBLISH {5R0}bag:{live10} SPREAD 2",
                "LUCKYBAG.PUBLISH {5p4}bag:{live10} SPREAD 2",
            ]),
        ),
        (
            "rate.check",
            v(&[
                "RATE.CHECK r:t1 10 1000",
                "RATE.CHECK r:t1 10 1000 COST 3",
                "RATE.CHECK r:t2 5 60000 ALGO FIXED",
                "RATE.CHECK r:t3 5 60000 ALGO SLIDING",
                "RATE.CHECK r:t4 5 60000 ALGO LOG",
                "RATE.CHECK r:t4 5 60000 ALGO LOG",
                "RATE.CHECK r:t5 5 60000 ALGO BUCKET BURST 10",
            ]),
        ),
        (
            "rate.multi",
            v(&[
                "RATE.MULTI 2 r:t6 r:t7 LIMITS 10 60000 1000 86400000",
                "RATE.MULTI 2 r:t6 r:t7 LIMITS 10 60000 1000 86400000 COST 2",
            ]),
        ),
        (
            "rate.throttle",
            v(&[
                "RATE.THROTTLE r:t8 15 30 60",
                "RATE.THROTTLE r:t8 15 30 60 3",
            ]),
        ),
        ("rate.reset", v(&["RATE.RESET r:t1"])),
    ]
}

/// Cases of LOCK and DELAYQ (no NOW: the master's clock must reach the
/// replica and the AOF). Receipts are deterministic (generation × 10^6 +
/// attempt, one generation per add): both servers run the same lines in
/// the same order.
fn lock_delayq_cases() -> Vec<(&'static str, Vec<Vec<String>>)> {
    let v = |lines: &[&str]| -> Vec<Vec<String>> {
        lines
            .iter()
            .map(|l| l.split_whitespace().map(String::from).collect())
            .collect()
    };
    vec![
        (
            "lock.acquire",
            v(&[
                "LOCK.ACQUIRE r:lk1 o1 60000",
                "LOCK.ACQUIRE r:lk1 o1 60000 MAXHOLD 90000",
                "LOCK.ACQUIRE r:lk2 o1 60000 LIMIT 3",
                "LOCK.ACQUIRE r:lk2 o2 60000 LIMIT 3",
            ]),
        ),
        (
            "lock.renew",
            v(&["LOCK.RENEW r:lk1 o1 30000", "LOCK.RENEW r:lk2 o2 50000"]),
        ),
        (
            "lock.release",
            v(&["LOCK.RELEASE r:lk1 o1", "LOCK.RELEASE r:lk2 o1"]),
        ),
        (
            "delayq.add",
            v(&[
                "DELAYQ.ADD r:q1 a pa",
                "DELAYQ.ADD r:q1 b pb DELAY 60000",
                "DELAYQ.ADD r:q1 c pc ATTEMPTS 1",
                "DELAYQ.ADD r:q1 d pd",
            ]),
        ),
        ("delayq.poll", v(&["DELAYQ.POLL r:q1 60000 COUNT 3"])),
        ("delayq.ack", v(&["DELAYQ.ACK r:q1 a 1000001"])),
        (
            "delayq.nack",
            v(&[
                "DELAYQ.NACK r:q1 c 3000001",
                "DELAYQ.NACK r:q1 d 4000001 BACKOFF 1000 5000",
            ]),
        ),
        (
            "delayq.extend",
            v(&[
                "DELAYQ.ADD r:q1 e pe",
                "DELAYQ.POLL r:q1 30000",
                "DELAYQ.EXTEND r:q1 e 5000001 90000",
            ]),
        ),
        ("delayq.redrive", v(&["DELAYQ.REDRIVE r:q1"])),
        // IDEM: BEGIN reads the clock (fence, lease, expiry); COMPLETE
        // too (the expiry). A BEGIN at a fixed future NOW gives a fence
        // the lines can name.
        (
            "idem.begin",
            v(&[
                "IDEM.BEGIN r:i1 fp-a 60000",
                "IDEM.BEGIN r:i1 fp-a 60000",
                "IDEM.BEGIN r:i2 fp-b 60000 TTL 100000000 NOW 1893456000000",
                "IDEM.BEGIN r:i3 fp-c 60000 NOW 1893456000000",
            ]),
        ),
        (
            "idem.complete",
            v(&[
                "IDEM.COMPLETE r:i2 1893456000000 result-b",
                "IDEM.COMPLETE r:i2 1893456000000 result-b",
            ]),
        ),
        ("idem.abort", v(&["IDEM.ABORT r:i3 1893456000000"])),
        (
            "delayq.cancel",
            v(&[
                "DELAYQ.ADD r:q1 f pf DELAY 60000",
                "DELAYQ.CANCEL r:q1 f",
                "DELAYQ.CANCEL r:q1 e FORCE",
            ]),
        ),
        (
            "delayq.purge",
            v(&[
                "DELAYQ.ADD r:q1 g pg ATTEMPTS 1",
                "DELAYQ.POLL r:q1 60000 COUNT 10",
                "DELAYQ.NACK r:q1 g 8000001",
                "DELAYQ.PURGE r:q1 MAXLEN 0",
            ]),
        ),
    ]
}

/// Every family page's example lines (`CONFIG` lines left out: a
/// replica keeps its own configs), with the database they run in.
fn page_cases() -> Vec<(String, usize, Vec<Vec<String>>)> {
    crate::reference::family_pages()
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let stem = p.file_stem().unwrap().to_string_lossy().into_owned();
            let mut lines = crate::reference::example_commands(&stem);
            lines.retain(|l| !l[0].eq_ignore_ascii_case("CONFIG"));
            (stem, i + 1, lines)
        })
        .collect()
}

/// Runs every page's examples in its database ([`page_cases`]) and
/// returns the module's commands (lower case) that succeeded at least
/// once.
fn apply_pages(c: &mut Connection) -> Vec<String> {
    let mut ok = Vec::new();
    for (page, db, lines) in page_cases() {
        run(c, &["SELECT", &db.to_string()]);
        let mut any = false;
        for l in &lines {
            let args: Vec<&str> = l.iter().map(String::as_str).collect();
            if cmd(c, &args).is_ok() {
                any = true;
                ok.push(l[0].to_ascii_lowercase());
            }
        }
        assert!(any, "no example line of docs/reference/{page}.md succeeded");
    }
    run(c, &["SELECT", "0"]);
    ok.sort();
    ok.dedup();
    ok
}

/// Deletes the keys of the pages' databases that expire within a minute
/// (examples that read the clock, e.g. RATE's, set expiries of a few ms):
/// their expiry would otherwise fall between two digests of the checks
/// that follow (the deletion replicates like any write).
fn drop_expiring(c: &mut Connection) {
    let soon = now_ms() + 60_000;
    for (_, db, _) in page_cases() {
        run(c, &["SELECT", &db.to_string()]);
        let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
        for k in keys {
            let at = int(c, &["PEXPIRETIME", &k]);
            if at > 0 && at < soon {
                run(c, &["DEL", &k]);
            }
        }
    }
    run(c, &["SELECT", "0"]);
}

fn write_commands(c: &mut Connection) -> Vec<String> {
    let names: Vec<String> = redis::cmd("COMMAND")
        .arg("LIST")
        .arg("FILTERBY")
        .arg("MODULE")
        .arg("hotpath")
        .query(c)
        .unwrap();
    let mut w: Vec<String> = names
        .into_iter()
        .filter(|n| run(c, &["COMMAND", "INFO", n]).contains("write"))
        .collect();
    w.sort();
    w
}

pub(crate) fn apply(c: &mut Connection, name: &str, lines: &[Vec<String>]) {
    let mut ok = 0;
    for l in lines {
        let args: Vec<&str> = l.iter().map(|s| s.as_str()).collect();
        if cmd(c, &args).is_ok() {
            ok += 1;
        }
    }
    assert!(ok > 0, "no line of the {name} case succeeded");
}

#[test]
fn every_write_command_has_a_replication_case() {
    let srv = Server::start();
    let mut c = srv.conn();
    let mut covered: Vec<String> = cases().iter().map(|(n, _)| n.to_string()).collect();
    covered.extend(apply_pages(&mut c));
    let missing: Vec<String> = write_commands(&mut c)
        .into_iter()
        .filter(|n| !covered.contains(n))
        .collect();
    assert!(
        missing.is_empty(),
        "write commands without a replication case: {missing:?}"
    );
}

#[test]
fn replica_aof_and_rdb_equal_the_master_for_every_write_command() {
    let pair = Pair::start();
    let mut aof = start_aof();
    let mut m = pair.master.conn();
    let mut a = aof.conn();
    let registered = write_commands(&mut m);
    // The pages first, so that the cases' keys (some expire in seconds)
    // meet the digests below as soon as they did before.
    apply_pages(&mut m);
    apply_pages(&mut a);
    drop_expiring(&mut m);
    drop_expiring(&mut a);
    pair.assert_equal();
    for (name, lines) in cases()
        .into_iter()
        .filter(|(n, _)| registered.iter().any(|r| r == n))
    {
        apply(&mut m, name, &lines);
        apply(&mut a, name, &lines);
        pair.assert_equal();
    }
    assert_aof_restart_equal(&mut aof);
    assert_rdb_reload_equal(&aof);
    assert_rdb_reload_equal(&pair.master);
    pair.assert_equal();
}
