//! No POLL or RANK command stalls the server, at a million members: with
//! `slowlog-log-slower-than 1000` (1 ms), the slow log stays empty for the
//! hot commands (every write, INFO, COUNT and every `fast` command) and for
//! the commands whose work runs in slices (SYNC, MERGE, IMPORT: the
//! command itself only starts the work).
//!
//! A loaded machine can pause any process for a millisecond, so a few
//! logged calls among thousands prove nothing: a command fails the test
//! when at least a tenth of its calls are logged, in every one of three
//! rounds. A command that is slow by design (O(N) at a million members) is
//! logged every time.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};

use common::*;

const N: usize = 1_000_000;
const SCALE: i64 = 10_000_000_000;
const T0: i64 = 1_700_000_000_000;

fn fill(c: &mut Connection, key: &str, prefix: &str, score: impl Fn(usize) -> i64) {
    let mut pipe = redis::pipe();
    for start in (0..N).step_by(1000) {
        let cmd = pipe.cmd("ZADD").arg(key);
        for i in start..start + 1000 {
            cmd.arg(score(i)).arg(format!("{prefix}{i}"));
        }
        cmd.ignore();
        if start % 50_000 == 49_000 {
            let _: () = pipe.query(c).unwrap();
            pipe = redis::pipe();
        }
    }
    let _: () = pipe.query(c).unwrap();
}

/// Runs `round` up to three times, each after `SLOWLOG RESET`; `round`
/// returns how many calls it made of each command. Returns the module
/// commands of which at least a tenth of the calls were logged in every
/// round.
fn slow_every_round(
    c: &mut Connection,
    mut round: impl FnMut(&mut Connection, usize) -> BTreeMap<&'static str, usize>,
) -> BTreeSet<String> {
    let mut always: Option<BTreeSet<String>> = None;
    for n in 0..3 {
        run(c, &["SLOWLOG", "RESET"]);
        let calls = round(c, n);
        let log: Vec<Value> = redis::cmd("SLOWLOG")
            .arg("GET")
            .arg(100_000)
            .query(c)
            .unwrap();
        let mut logged: BTreeMap<String, usize> = BTreeMap::new();
        for e in &log {
            if let Value::Array(f) = e {
                if let Some(Value::Array(args)) = f.get(3) {
                    if let Some(a) = args.first() {
                        *logged
                            .entry(show(&Ok(a.clone())).to_lowercase())
                            .or_default() += 1;
                    }
                }
            }
        }
        let slow: BTreeSet<String> = logged
            .into_iter()
            .filter(|(name, k)| {
                let made = calls.get(name.as_str()).copied().unwrap_or(0);
                (name.starts_with("poll.") || name.starts_with("rank.")) && *k * 10 >= made.max(1)
            })
            .map(|(name, _)| name)
            .collect();
        let now = match always {
            None => slow,
            Some(prev) => prev.intersection(&slow).cloned().collect(),
        };
        if now.is_empty() {
            return now;
        }
        always = Some(now);
    }
    always.unwrap_or_default()
}

fn server() -> Server {
    Server::start_with(&[
        "--slowlog-log-slower-than",
        "1000",
        "--slowlog-max-len",
        "1000",
    ])
}

#[test]
fn stall_poll_commands_at_a_million_candidates() {
    let s = server();
    let mut c = s.conn();
    run(
        &mut c,
        &[
            "POLL.CREATE",
            "p",
            "MODE",
            "MULTI",
            "MAXVOTES",
            "3",
            "TTL",
            "100000",
        ],
    );
    fill(&mut c, "p:board", "c", |i| (i % 1000) as i64);
    let slow = slow_every_round(&mut c, |c, round| {
        let mut pipe = redis::pipe();
        let mut calls = BTreeMap::new();
        for (name, n) in [
            ("poll.vote", 4000),
            ("poll.revoke", 200),
            ("poll.status", 200),
            ("poll.rank", 200),
            ("poll.info", 200),
            ("poll.top", 200),
            ("poll.sync", 1),
            ("poll.syncack", 1),
        ] {
            calls.insert(name, n);
        }
        for i in 0..2000 {
            let u = format!("r{round}u{i}");
            let cand = format!("c{}", (i * 7919) % N);
            pipe.cmd("POLL.VOTE").arg("p").arg(&u).arg(&cand).ignore();
            pipe.cmd("POLL.VOTE").arg("p").arg(&u).arg(&cand).ignore();
            if i % 10 == 0 {
                pipe.cmd("POLL.REVOKE").arg("p").arg(&u).ignore();
                pipe.cmd("POLL.STATUS").arg("p").arg(&u).ignore();
                pipe.cmd("POLL.RANK").arg("p").arg(&cand).ignore();
                pipe.cmd("POLL.INFO").arg("p").ignore();
                pipe.cmd("POLL.TOP").arg("p").arg(10).ignore();
            }
        }
        let _: () = pipe.query(c).unwrap();
        // The write-back of the whole board: the command starts it, slices
        // do it.
        let sync: Vec<Value> = redis::cmd("POLL.SYNC").arg("p").query(c).unwrap();
        // The first time, every candidate with votes has a delta (the 1,000
        // at zero none); later, the candidates voted on since.
        if round == 0 {
            assert!(sync.len() > N, "{}", sync.len());
        }
        let epoch = show(&Ok(sync[0].clone()));
        assert_eq!(int(c, &["POLL.SYNCACK", "p", &epoch]), 1);
        calls
    });
    assert!(
        slow.is_empty(),
        "logged as slower than 1 ms in every round: {slow:?}"
    );
}

#[test]
fn stall_rank_commands_at_a_million_members() {
    let s = server();
    let mut c = s.conn();
    run(&mut c, &["RANK.CREATE", "b"]);
    let packed = |i: usize| (i % 100_000) as i64 * SCALE + (SCALE - 1 - (T0 / 1000 + i as i64));
    fill(&mut c, "b", "u", packed);
    fill(&mut c, "seed", "s", |i| (i % 5000) as i64);
    let slow = slow_every_round(&mut c, |c, round| {
        let mut pipe = redis::pipe();
        let mut calls = BTreeMap::new();
        for (name, n) in [
            ("rank.incr", 2000),
            ("rank.add", 4000),
            ("rank.get", 200),
            ("rank.count", 201),
            ("rank.top", 200),
            ("rank.around", 200),
            ("rank.rem", 200),
            ("rank.merge", 1),
            ("rank.import", 50),
        ] {
            calls.insert(name, n);
        }
        for i in 0..2000 {
            let m = format!("u{}", (i * 7919 + round) % N);
            pipe.cmd("RANK.INCR").arg("b").arg(&m).arg(3).ignore();
            pipe.cmd("RANK.ADD")
                .arg("b")
                .arg(&m)
                .arg(5)
                .arg("GT")
                .ignore();
            pipe.cmd("RANK.ADD")
                .arg("b")
                .arg(format!("new{round}_{i}"))
                .arg(i)
                .ignore();
            if i % 10 == 0 {
                pipe.cmd("RANK.GET").arg("b").arg(&m).ignore();
                pipe.cmd("RANK.COUNT").arg("b").ignore();
                pipe.cmd("RANK.TOP").arg("b").arg(10).ignore();
                pipe.cmd("RANK.AROUND").arg("b").arg(&m).arg(10).ignore();
                pipe.cmd("RANK.REM")
                    .arg("b")
                    .arg(format!("new{round}_{i}"))
                    .ignore();
            }
        }
        let _: () = pipe.query(c).unwrap();
        // A merge of the million-member board (slices) and an import of a
        // million-member seed board, a batch per call.
        assert_eq!(
            int(c, &["RANK.MERGE", "m", "1", "b"]),
            int(c, &["ZCARD", "b"])
        );
        for _ in 0..50 {
            int(c, &["RANK.IMPORT", "seed"]);
        }
        calls
    });
    assert!(
        slow.is_empty(),
        "logged as slower than 1 ms in every round: {slow:?}"
    );
}
