//! Memory pressure: with a tiny `maxmemory` and `noeviction`, every module
//! write command that can grow memory is refused with Redis's OOM error and
//! nothing changes, while the ones that only free memory or overwrite in
//! place (LOCK.RELEASE, DELAYQ.ACK, …) still run, as native `DEL` does:
//! a full server must not keep a lock held. For each of those, the change
//! in `used_memory` over 10,000 calls is measured: it is never above
//! [`ONE_OFF`] bytes in all, so nothing per call (a single byte per call
//! would show as 10,000).

use crate::common;

use common::*;

/// The write commands registered without `denyoom`: each only frees
/// memory or overwrites what is there.
pub const FREEING: [&str; 9] = [
    "delayq.ack",
    "delayq.cancel",
    "delayq.purge",
    "lock.release",
    "poll.revoke",
    "rank.rem",
    "rate.reset",
    "redpacket.refund",
    "stock.release",
];

#[test]
fn every_write_command_is_refused_when_out_of_memory() {
    let srv = Server::start_with(&["--maxmemory-policy", "noeviction"]);
    let mut c = srv.conn();
    run(&mut c, &["POLL.VOTE", "{p}", "u", "a"]);
    let before = srv.digest();
    let names: Vec<String> = redis::cmd("COMMAND")
        .arg("LIST")
        .arg("FILTERBY")
        .arg("MODULE")
        .arg("hotpath")
        .query(&mut c)
        .unwrap();
    run(&mut c, &["CONFIG", "SET", "maxmemory", "1"]);
    let mut writes = 0;
    let mut freeing = Vec::new();
    for name in &names {
        let info = run(&mut c, &["COMMAND", "INFO", name]);
        if !info.contains("write") {
            continue;
        }
        if !info.contains("denyoom") {
            freeing.push(name.clone());
            continue;
        }
        writes += 1;
        let arity = match redis::cmd("COMMAND")
            .arg("INFO")
            .arg(name)
            .query::<Vec<Vec<redis::Value>>>(&mut c)
            .unwrap()[0][1]
        {
            redis::Value::Int(a) => a.unsigned_abs() as usize,
            _ => 2,
        };
        let mut args: Vec<String> = vec![name.clone(), "{p}".into()];
        while args.len() < arity {
            args.push("1".into());
        }
        let argv: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let e = err(&mut c, &argv);
        assert!(e.starts_with("OOM"), "{name}: {e}");
    }
    assert!(
        writes >= 4,
        "expected the module's write commands, found {writes}"
    );
    freeing.sort();
    assert_eq!(
        freeing, FREEING,
        "a write without denyoom must be proved not to grow memory below"
    );
    run(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(srv.digest(), before, "an OOM-refused command changed data");
}

/// Returns `used_memory` from `INFO memory`.
fn used_memory(c: &mut Connection) -> i64 {
    let info: String = redis::cmd("INFO").arg("memory").query(c).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap()
}

/// Sends `calls` in pipelines of 100 (so the query and reply buffers stay
/// as small during the setup as during the measure) and returns the
/// replies.
fn send(c: &mut Connection, calls: &[Vec<String>]) -> Vec<redis::Value> {
    let mut out = Vec::with_capacity(calls.len());
    for chunk in calls.chunks(100) {
        let mut pipe = redis::pipe();
        for call in chunk {
            pipe.cmd(&call[0]).arg(&call[1..]);
        }
        let r: Vec<redis::Value> = pipe.query(c).unwrap();
        out.extend(r);
    }
    out
}

const N: usize = 10_000;

/// A one-off allocation a server may make while the calls run, whatever
/// they are (16 bytes seen on valkey 9, built with libc malloc): far
/// below what one byte per call would add up to.
const ONE_OFF: i64 = 64;

/// The setup calls and the calls of each freeing command: one to warm up
/// and the 10,000 measured.
fn workload(name: &str) -> (Vec<Vec<String>>, Vec<Vec<String>>) {
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let (mut setup, mut calls) = (Vec::new(), Vec::new());
    for i in 0..=N {
        let (i, k) = (i.to_string(), format!("{name}:{i}"));
        match name {
            "lock.release" => {
                setup.push(v(&["LOCK.ACQUIRE", &k, "worker-7f3a", "60000"]));
                calls.push(v(&["LOCK.RELEASE", &k, "worker-7f3a"]));
            }
            "delayq.ack" => {
                setup.push(v(&["DELAYQ.ADD", "{q}", &i, "payload"]));
                setup.push(v(&["DELAYQ.POLL", "{q}", "60000"]));
                // The i-th job added has generation i + 1, attempt 1.
                let receipt = ((i.parse::<i64>().unwrap() + 1) * 1_000_000 + 1).to_string();
                calls.push(v(&["DELAYQ.ACK", "{q}", &i, &receipt]));
            }
            "delayq.cancel" => {
                setup.push(v(&["DELAYQ.ADD", "{qc}", &i, "payload", "DELAY", "60000"]));
                calls.push(v(&["DELAYQ.CANCEL", "{qc}", &i]));
            }
            "delayq.purge" => {
                // A queue per call, each with one dead letter.
                setup.push(v(&["DELAYQ.ADD", &k, "j", "payload", "ATTEMPTS", "1"]));
                setup.push(v(&["DELAYQ.POLL", &k, "60000"]));
                setup.push(v(&["DELAYQ.NACK", &k, "j", "1000001"]));
                calls.push(v(&["DELAYQ.PURGE", &k, "MAXLEN", "0"]));
            }
            "poll.revoke" => {
                setup.push(v(&["POLL.VOTE", "{v}", &i, "candidate"]));
                calls.push(v(&["POLL.REVOKE", "{v}", &i]));
            }
            "rank.rem" => {
                setup.push(v(&["RANK.ADD", "board", &i, "10"]));
                calls.push(v(&["RANK.REM", "board", &i]));
            }
            "rate.reset" => {
                setup.push(v(&["RATE.CHECK", &k, "10", "60000"]));
                calls.push(v(&["RATE.RESET", &k]));
            }
            "redpacket.refund" => {
                let k = format!("{{rp{i}}}");
                setup.push(v(&["REDPACKET.SPLIT", &k, "1000", "10"]));
                calls.push(v(&["REDPACKET.REFUND", &k]));
            }
            "stock.release" => {
                // The record is rewritten at its length (R to X), the
                // lease and the buyer's count are removed.
                let k = format!("{{st{i}}}");
                setup.push(v(&["STOCK.CREATE", &k, "1"]));
                setup.push(v(&["STOCK.RESERVE", &k, "u", "o", "1"]));
                calls.push(v(&["STOCK.RELEASE", &k, "o"]));
            }
            _ => unreachable!("{name}"),
        }
    }
    (setup, calls)
}

/// Returns true when `v` is a reply that did something: 1, a positive
/// count or amount.
fn did(v: &redis::Value) -> bool {
    matches!(v, redis::Value::Int(n) if *n > 0)
}

#[test]
fn commands_that_only_free_memory_never_grow_it_over_10000_calls() {
    let srv = Server::start();
    let mut c = srv.conn();
    for name in FREEING {
        let (setup, calls) = workload(name);
        send(&mut c, &setup);
        // The first call of a command allocates its latency histogram
        // (about 24 KB on Redis 7.0, once per server): it is not measured.
        let mut replies = send(&mut c, &calls[..1]);
        let before = used_memory(&mut c);
        replies.extend(send(&mut c, &calls[1..]));
        let after = used_memory(&mut c);
        assert!(
            replies.iter().all(did),
            "{name}: every call must do its work: {:?}",
            replies.iter().find(|r| !did(r))
        );
        println!(
            "{name}: used_memory {before} -> {after} ({:+})",
            after - before
        );
        assert!(
            after - before <= ONE_OFF,
            "{name}: used_memory grew by {} over {N} calls",
            after - before
        );
    }
}

#[test]
fn commands_that_only_free_memory_run_under_maxmemory() {
    let srv = Server::start_with(&["--maxmemory-policy", "noeviction"]);
    let mut c = srv.conn();
    let (mut setup, mut calls) = (Vec::new(), Vec::new());
    for name in FREEING {
        let (s, c) = workload(name);
        // The first target of each workload is enough here.
        let per_call = s.len() / (N + 1);
        setup.extend(s.into_iter().take(per_call));
        calls.push(c[0].clone());
    }
    send(&mut c, &setup);
    run(&mut c, &["SET", "native", "x"]);
    run(&mut c, &["CONFIG", "SET", "maxmemory", "1"]);
    // Growing is refused, native DEL works, and so do the freeing writes.
    let e = err(&mut c, &["LOCK.ACQUIRE", "other", "w", "1000"]);
    assert!(e.starts_with("OOM"), "{e}");
    assert_eq!(run(&mut c, &["DEL", "native"]), "1");
    for call in &calls {
        let args: Vec<&str> = call.iter().map(String::as_str).collect();
        let r = cmd(&mut c, &args);
        assert!(matches!(&r, Ok(v) if did(v)), "{}: {}", call[0], show(&r));
    }
    run(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
    // The lock is free: another owner takes it.
    assert_eq!(
        run(&mut c, &["LOCK.ACQUIRE", "lock.release:0", "next", "1000"]),
        "2"
    );
}

#[test]
fn a_refund_of_a_packet_grabbed_empty_grows_it_by_at_most_32_bytes() {
    // The one bounded exception: nothing is left to free, and `state`
    // becomes `closed` (2 bytes longer than `open`), once per packet.
    let srv = Server::start();
    let mut c = srv.conn();
    let v = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<String>>();
    let (mut setup, mut calls) = (Vec::new(), Vec::new());
    for i in 0..=N {
        let k = format!("{{rp{i}}}");
        setup.push(v(&["REDPACKET.SPLIT", &k, "100", "1"]));
        setup.push(v(&["REDPACKET.GRAB", &k, "u"]));
        calls.push(v(&["REDPACKET.REFUND", &k]));
    }
    send(&mut c, &setup);
    send(&mut c, &calls[..1]);
    let before = used_memory(&mut c);
    send(&mut c, &calls[1..]);
    let grown = used_memory(&mut c) - before;
    println!("redpacket.refund of drained packets: {grown:+} bytes");
    assert!(grown <= 32 * N as i64, "grew by {grown}");
}
