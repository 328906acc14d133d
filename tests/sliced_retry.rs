//! A client that gives up waiting for a sliced job (POLL.SYNC, RANK.MERGE)
//! and retries it: redis-py's default 5 s socket timeout fires during a
//! SYNC or MERGE of a million entries, and it sends the command again. The
//! retry of the same command attaches to the running job and gets its
//! reply; the job runs once. Another request on the same key is still
//! refused while the job runs.

use crate::common;

use std::time::{Duration, Instant};

use common::*;

const N: usize = 300_000;
/// Shorter than the job: the first client gives up while it runs.
const TIMEOUT: Duration = Duration::from_millis(150);

fn fill(c: &mut Connection, key: &str, score: impl Fn(usize) -> i64) {
    for start in (0..N).step_by(50_000) {
        let mut pipe = redis::pipe();
        for chunk in (start..start + 50_000).step_by(1000) {
            let cmd = pipe.cmd("ZADD").arg(key);
            for i in chunk..chunk + 1000 {
                cmd.arg(score(i)).arg(format!("m{i}"));
            }
            cmd.ignore();
        }
        let _: () = pipe.query(c).unwrap();
    }
}

fn counter(c: &mut Connection, name: &str) -> i64 {
    let info: String = redis::cmd("INFO").arg("hotpath").query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("hotpath_{name}:")))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {info}"))
}

/// Sends `args` on a connection that gives up after [`TIMEOUT`]; asserts
/// that it did give up (the job outlasts it).
fn give_up(srv: &Server, args: &[&str]) -> Instant {
    let mut c = srv.conn();
    c.set_read_timeout(Some(TIMEOUT)).unwrap();
    let sent = Instant::now();
    let r: redis::RedisResult<Value> = redis::cmd(args[0]).arg(&args[1..]).query(&mut c);
    let e = r.expect_err("the job ended before the client's timeout");
    assert!(e.is_timeout(), "{e:?}");
    sent
}

#[test]
fn a_retried_merge_attaches_to_the_running_one() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["RANK.CREATE", "b"]);
    let scale = 10_000_000_000i64;
    fill(&mut c, "b", |i| {
        (i % 100_000) as i64 * scale + (scale - 1 - 1_700_000_000 - i as i64)
    });
    let merge = ["RANK.MERGE", "m", "1", "b"];
    let sent = give_up(&srv, &merge);
    // Another request into the same board is refused while the job runs.
    let mut other = srv.conn();
    assert_eq!(
        run(
            &mut other,
            &["RANK.MERGE", "m", "1", "b", "AGGREGATE", "MAX"]
        ),
        "ERR<ERR rank: a MERGE into this board is already running>"
    );
    // The retry gets the job's reply.
    let mut retry = srv.conn();
    assert_eq!(run(&mut retry, &merge), N.to_string());
    let took = sent.elapsed();
    assert_eq!(counter(&mut c, "rank_merges"), 1, "the job ran twice");
    assert_eq!(int(&mut c, &["ZCARD", "m"]), N as i64);
    assert_eq!(int(&mut c, &["EXISTS", "m:merging"]), 0);
    eprintln!("merge of {N}: {took:?}");
    // Once it is over, the same command is a new job.
    assert_eq!(run(&mut retry, &merge), N.to_string());
    assert_eq!(counter(&mut c, "rank_merges"), 2);
}

#[test]
fn a_retried_sync_attaches_to_the_running_one() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(
        &mut c,
        &["POLL.CREATE", "p", "MODE", "MULTI", "MAXVOTES", "3"],
    );
    fill(&mut c, "p:board", |i| (i % 1000) as i64 + 1);
    let sent = give_up(&srv, &["POLL.SYNC", "p"]);
    let mut retry = srv.conn();
    let sync: Vec<Value> = redis::cmd("POLL.SYNC").arg("p").query(&mut retry).unwrap();
    let took = sent.elapsed();
    eprintln!("sync of {N}: {took:?}");
    assert_eq!(counter(&mut c, "poll_syncs"), 1, "the job ran twice");
    assert!(sync.len() > N, "{}", sync.len());
    let epoch = show(&Ok(sync[0].clone()));
    assert_eq!(epoch, "1");
    assert_eq!(int(&mut c, &["POLL.SYNCACK", "p", &epoch]), 1);
}
