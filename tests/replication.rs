//! Replication coverage, enforced: every write command the server lists for
//! the module must have a case here, and every case runs on a master with a
//! real replica, on an AOF server restarted (replaying the AOF) and through
//! an RDB reload, all compared with `DEBUG DIGEST`. Commands that read the
//! clock or draw random numbers run without `NOW`, so the master's own time
//! and draws must reach the replica and the AOF.

mod common;

use common::*;

/// The write commands and the workload that exercises each.
fn cases() -> Vec<(&'static str, Vec<Vec<String>>)> {
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
    out
}

/// Cases of the other families (kept apart to merge cleanly).
fn family_cases() -> Vec<(&'static str, Vec<Vec<String>>)> {
    Vec::new()
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

fn apply(c: &mut Connection, name: &str, lines: &[Vec<String>]) {
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
    let covered: Vec<&str> = cases().iter().map(|(n, _)| *n).collect();
    let missing: Vec<String> = write_commands(&mut c)
        .into_iter()
        .filter(|n| !covered.contains(&n.as_str()))
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
    for (name, lines) in cases() {
        apply(&mut m, name, &lines);
        apply(&mut a, name, &lines);
        pair.assert_equal();
    }
    assert_aof_restart_equal(&mut aof);
    assert_rdb_reload_equal(&aof);
    assert_rdb_reload_equal(&pair.master);
    pair.assert_equal();
}
