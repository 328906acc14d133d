//! `IDEM token`, what tests/idem_token.rs left out: the Rust client's
//! static `Rate::multi_idem` (module and Functions-library backends), and
//! STOCK.RESTOCK and REDPACKET.SPLIT: a retry replays, a reuse with other
//! arguments is refused, and neither writes anything; and a
//! LOCK.ACQUIRE … BLOCK that waits, stored with its late reply.

use crate::common;

use common::*;
use hotpath_client::*;

/// A NOW far ahead (2030-01-01), so that explicit instants stay valid.
const T0: i64 = 1_893_456_000_000;

fn rate_multi_idem_on(c: &mut redis::Connection, tag: &str, module: bool) {
    let (a, b) = (format!("{{{tag}}}a"), format!("{{{tag}}}b"));
    let rules = [(a.as_str(), 2, 60_000), (b.as_str(), 5, 60_000)];
    let o = RateOptions::default();
    let first = Rate::multi_idem(c, &rules, &o, Some(T0), "t1").unwrap();
    assert!(first.allowed);
    assert_eq!(first.remaining, 1);
    for _ in 0..3 {
        let again = Rate::multi_idem(c, &rules, &o, Some(T0), "t1").unwrap();
        assert_eq!(again, first, "{tag}: replayed, nothing consumed");
    }
    // A new token consumes; the pipeline form (the module's command)
    // sends the token too.
    let second = Rate::multi_idem(c, &rules, &o, Some(T0), "t2").unwrap();
    assert_eq!(second.remaining, 0);
    if module {
        let cmd = Rate::multi_idem_cmd(&rules, &o, Some(T0), "t2");
        let v: redis::Value = cmd.query(c).unwrap();
        let text = format!("{v:?}");
        assert!(text.contains("int(0)") || text.contains("Int(0)"), "{text}");
    }
    // Same token, other arguments: refused.
    let cost = RateOptions {
        cost: Some(2),
        ..RateOptions::default()
    };
    let e = Rate::multi_idem(c, &rules, &cost, Some(T0), "t1").unwrap_err();
    assert!(
        e.to_string()
            .contains("IDEM token reused with other arguments"),
        "{e}"
    );
    // Without a token it consumes as before: the third call is refused.
    assert!(!Rate::multi(c, &rules, &o, Some(T0)).unwrap().allowed);
}

#[test]
fn rust_rate_multi_takes_a_token_on_the_module_and_the_twins() {
    let s = Server::start();
    rate_multi_idem_on(&mut s.conn(), "m", true);
    let bare = Server::start_bare(&[]);
    let mut c = bare.conn();
    load_library(&mut c);
    rate_multi_idem_on(&mut c, "l", false);
}

/// The data of every key but the token stores.
fn data(c: &mut redis::Connection) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    keys.retain(|k| !k.ends_with(":idem"));
    keys.sort();
    keys.iter().flat_map(|k| dump_keys(c, k)).collect()
}

#[test]
fn restock_and_split_replay_refuse_and_write_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    let t = T0.to_string();
    run(&mut c, &["STOCK.CREATE", "st", "10", "NOW", &t]);
    let cases: [(&[&str], &[&str]); 2] = [
        (
            &["STOCK.RESTOCK", "st", "5", "NOW", &t, "IDEM", "r1"],
            &["STOCK.RESTOCK", "st", "6", "NOW", &t, "IDEM", "r1"],
        ),
        (
            &[
                "REDPACKET.SPLIT",
                "rp",
                "1000",
                "4",
                "NOW",
                &t,
                "IDEM",
                "s1",
            ],
            &[
                "REDPACKET.SPLIT",
                "rp",
                "1000",
                "5",
                "NOW",
                &t,
                "IDEM",
                "s1",
            ],
        ),
    ];
    for (first, other) in cases {
        let a = run(&mut c, first);
        assert!(!a.starts_with("ERR"), "{first:?}: {a}");
        let before = data(&mut c);
        assert_eq!(run(&mut c, first), a, "{first:?}: replayed");
        assert_eq!(data(&mut c), before, "{first:?}: the replay wrote nothing");
        let e = run(&mut c, other);
        assert!(e.contains("IDEM token reused with other arguments"), "{e}");
        assert_eq!(data(&mut c), before, "{other:?}: the refusal wrote nothing");
    }
}

/// The reply's fourth element (a DELAYQ.POLL receipt).
fn receipt(c: &mut redis::Connection, q: &str, t: &str) -> String {
    let v: Vec<redis::Value> = redis::cmd("DELAYQ.POLL")
        .arg(q)
        .arg(60_000)
        .arg("NOW")
        .arg(t)
        .query(c)
        .unwrap();
    assert_eq!(v.len(), 4, "{v:?}");
    redis::from_redis_value(&v[3]).unwrap()
}

/// DELAYQ.NACK and POLL.REVOKE: a retry replays (where a plain retry
/// would answer otherwise: a stale receipt, nothing left to revoke), a
/// reuse with other arguments is refused, nothing is written.
#[test]
fn nack_and_revoke_replay_refuse_and_write_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    let t = T0.to_string();
    run(&mut c, &["DELAYQ.ADD", "q", "j1", "p", "NOW", &t]);
    let r = receipt(&mut c, "q", &t);
    run(
        &mut c,
        &["POLL.CREATE", "pl", "CANDIDATES", "2", "a", "b", "NOW", &t],
    );
    assert_eq!(run(&mut c, &["POLL.VOTE", "pl", "u1", "a", "NOW", &t]), "1");
    let cases: [(&[&str], &[&str], &[&str]); 2] = [
        (
            &[
                "DELAYQ.NACK",
                "q",
                "j1",
                &r,
                "DELAY",
                "1000",
                "NOW",
                &t,
                "IDEM",
                "n1",
            ],
            &[
                "DELAYQ.NACK",
                "q",
                "j1",
                &r,
                "DELAY",
                "2000",
                "NOW",
                &t,
                "IDEM",
                "n1",
            ],
            &["DELAYQ.NACK", "q", "j1", &r, "DELAY", "1000", "NOW", &t],
        ),
        (
            &["POLL.REVOKE", "pl", "u1", "NOW", &t, "IDEM", "v1"],
            &["POLL.REVOKE", "pl", "u1", "a", "NOW", &t, "IDEM", "v1"],
            &["POLL.REVOKE", "pl", "u1", "NOW", &t],
        ),
    ];
    for (first, other, plain) in cases {
        let a = run(&mut c, first);
        assert_eq!(a, "1", "{first:?}");
        let before = data(&mut c);
        assert_eq!(run(&mut c, first), a, "{first:?}: replayed");
        assert_eq!(data(&mut c), before, "{first:?}: the replay wrote nothing");
        let e = run(&mut c, other);
        assert!(e.contains("IDEM token reused with other arguments"), "{e}");
        assert_eq!(data(&mut c), before, "{other:?}: the refusal wrote nothing");
        // Without the token the retry is another call: it answers 0.
        assert_eq!(run(&mut c, plain), "0", "{plain:?}");
    }
}

/// A spread write with a token: the token lives with the shard key that
/// took the write (`<shard key>:idem`); a retry to the same shard replays.
#[test]
fn spread_writes_keep_their_token_with_the_shard() {
    let s = Server::start();
    let mut c = s.conn();
    let t = T0.to_string();
    let shards: Vec<String> = hotpath_client::routing::shard_keys(b"sp", 2)
        .into_iter()
        .map(|k| String::from_utf8(k).unwrap())
        .collect();
    for k in &shards {
        let r = run(&mut c, &["STOCK.CREATE", k, "10", "NOW", &t, "SPREAD", "2"]);
        assert_eq!(r, "OK", "{k}");
    }
    // u1 belongs to shard 1 of 2 (users are routed by id).
    let k0 = shards[1].as_str();
    let w = [
        "STOCK.RESERVE",
        k0,
        "u1",
        "o1",
        "2",
        "NOW",
        &t,
        "SPREAD",
        "2",
        "IDEM",
        "s1",
    ];
    let a = run(&mut c, &w);
    assert!(!a.starts_with("ERR"), "{a}");
    let before = data(&mut c);
    assert_eq!(run(&mut c, &w), a, "replayed on the same shard");
    assert_eq!(data(&mut c), before);
    let store = format!("{k0}:idem");
    let n: i64 = redis::cmd("HEXISTS")
        .arg(&store)
        .arg("s1")
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 1, "the token is in {store}");
    let other = format!("{}:idem", shards[0]);
    let n: i64 = redis::cmd("EXISTS").arg(&other).query(&mut c).unwrap();
    assert_eq!(n, 0, "nothing in the other shard's store");
    // The same token on the other shard is that shard's own token (a
    // user of shard 0: the first one shard 1 refuses).
    let u0 = (2..200)
        .map(|u| format!("u{u}"))
        .find(|u| {
            let o = format!("p{u}");
            let w = ["STOCK.RESERVE", k0, u, &o, "1", "NOW", &t, "SPREAD", "2"];
            run(&mut c, &w).contains("wrong shard")
        })
        .expect("a user of shard 0");
    let w1 = [
        "STOCK.RESERVE",
        &shards[0],
        &u0,
        "o2",
        "3",
        "NOW",
        &t,
        "SPREAD",
        "2",
        "IDEM",
        "s1",
    ];
    let b = run(&mut c, &w1);
    assert!(!b.starts_with("ERR"), "{b}");
    let n: i64 = redis::cmd("HEXISTS")
        .arg(&other)
        .arg("s1")
        .query(&mut c)
        .unwrap();
    assert_eq!(n, 1, "shard 0 stored its own s1");
}

/// On a 3-master cluster: RATE and LOCK refuse a token on a key without a
/// `{hash tag}` (their store would be in another slot) and take one with
/// a tag; every family's token writes in one slot replay, refuse a reuse
/// with other arguments and write nothing doing so; a spread post's
/// shards, on their own masters, keep their tokens there; and the writes
/// acknowledged by WAIT replay on the replica promoted after their master
/// is killed.
#[test]
fn cluster_tokens_need_a_tag_and_survive_a_promotion() {
    use common::cluster::{Cluster, ClusterOpts};
    let mut cl = Cluster::start_opts(ClusterOpts {
        node_timeout_ms: 2000,
        ..ClusterOpts::default()
    });
    let t = T0.to_string();
    for (key, args) in [
        ("u:1", vec!["RATE.CHECK", "u:1", "5", "60000", "NOW", &t]),
        (
            "lk:1",
            vec!["LOCK.ACQUIRE", "lk:1", "o", "60000", "NOW", &t],
        ),
    ] {
        let mut oc = cl.nodes[cl.owner_of_key(key)].conn();
        let mut with = args.clone();
        with.extend(["IDEM", "x"]);
        let e = run(&mut oc, &with);
        assert!(
            e.contains("needs a {hash tag} in cluster mode"),
            "{with:?}: {e}"
        );
        let ok = run(&mut oc, &args);
        assert!(!ok.starts_with("ERR"), "{args:?} without a token: {ok}");
    }
    // With a tag: every family's token writes in one slot, on its owner,
    // on one connection (WAIT counts its writes).
    let owner = cl.owner_of_key("x:{ha}");
    let mut oc = cl.nodes[owner].conn();
    let setup: [&[&str]; 7] = [
        &["RANK.CREATE", "r:{ha}", "NOW", &t],
        &[
            "POLL.CREATE",
            "p:{ha}",
            "MODE",
            "MULTI",
            "MAXVOTES",
            "3",
            "NOW",
            &t,
        ],
        &["LUCKYBAG.CREATE", "b:{ha}", "WINNERS", "2", "NOW", &t],
        &["STOCK.CREATE", "s:{ha}", "10", "NOW", &t],
        &[
            "REDPACKET.SPLIT",
            "g:{ha}",
            "1000",
            "4",
            "MODE",
            "EQUAL",
            "NOW",
            &t,
        ],
        &["DELAYQ.ADD", "q:{ha}", "j1", "x", "NOW", &t],
        &[
            "LOCK.ACQUIRE",
            "lk:{ha}",
            "o0",
            "60000",
            "LIMIT",
            "9",
            "NOW",
            &t,
        ],
    ];
    for w in setup {
        let r = run(&mut oc, w);
        assert!(!r.starts_with("ERR"), "{w:?}: {r}");
    }
    let rc = receipt(&mut oc, "q:{ha}", &t);
    let writes: Vec<Vec<&str>> = vec![
        vec![
            "RATE.CHECK",
            "u:{ha}",
            "2",
            "60000",
            "NOW",
            &t,
            "IDEM",
            "c1",
        ],
        vec![
            "RATE.MULTI",
            "2",
            "u:{ha}",
            "v:{ha}",
            "LIMITS",
            "5",
            "60000",
            "9",
            "60000",
            "NOW",
            &t,
            "IDEM",
            "m1",
        ],
        vec![
            "RATE.THROTTLE",
            "w:{ha}",
            "4",
            "10",
            "60",
            "NOW",
            &t,
            "IDEM",
            "h1",
        ],
        vec!["RANK.INCR", "r:{ha}", "m", "5", "NOW", &t, "IDEM", "i1"],
        vec!["RANK.ADD", "r:{ha}", "n", "7", "NOW", &t, "IDEM", "a1"],
        vec!["RANK.DECR", "r:{ha}", "n", "2", "NOW", &t, "IDEM", "d1"],
        vec!["LIKE.TOGGLE", "l:{ha}", "9", "NOW", &t, "IDEM", "l1"],
        vec!["POLL.VOTE", "p:{ha}", "u1", "a", "NOW", &t, "IDEM", "v1"],
        vec!["POLL.REVOKE", "p:{ha}", "u1", "a", "NOW", &t, "IDEM", "v2"],
        vec!["LUCKYBAG.JOIN", "b:{ha}", "u1", "IDEM", "j1"],
        vec!["STOCK.RESTOCK", "s:{ha}", "5", "NOW", &t, "IDEM", "k1"],
        vec![
            "STOCK.RESERVE",
            "s:{ha}",
            "u1",
            "o1",
            "2",
            "NOW",
            &t,
            "IDEM",
            "k2",
        ],
        vec!["REDPACKET.GRAB", "g:{ha}", "u1", "NOW", &t, "IDEM", "g1"],
        vec!["DELAYQ.ADD", "q:{ha}", "j2", "y", "NOW", &t, "IDEM", "e1"],
        vec!["DELAYQ.NACK", "q:{ha}", "j1", &rc, "NOW", &t, "IDEM", "e2"],
        vec![
            "LOCK.ACQUIRE",
            "lk:{ha}",
            "o1",
            "60000",
            "LIMIT",
            "9",
            "NOW",
            &t,
            "IDEM",
            "o1",
        ],
    ];
    let first: Vec<String> = writes.iter().map(|w| run(&mut oc, w)).collect();
    for (w, f) in writes.iter().zip(&first) {
        assert!(!f.starts_with("ERR"), "{w:?}: {f}");
    }
    assert_eq!(first[3], "5");
    let d: String = redis::cmd("DEBUG").arg("DIGEST").query(&mut oc).unwrap();
    for (w, f) in writes.iter().zip(&first) {
        assert_eq!(&run(&mut oc, w), f, "{w:?}: replayed");
        // The same token with other arguments (a NOW added: another
        // digest): refused before the command parses them.
        let mut other: Vec<&str> = w[..w.len() - 2].to_vec();
        other.extend(["NOW", "1", "IDEM", w[w.len() - 1]]);
        let e = run(&mut oc, &other);
        assert!(
            e.contains("IDEM token reused with other arguments"),
            "{other:?}: {e}"
        );
    }
    let d2: String = redis::cmd("DEBUG").arg("DIGEST").query(&mut oc).unwrap();
    assert_eq!(d, d2, "the replays and refusals wrote nothing");
    let acked: i64 = redis::cmd("WAIT")
        .arg(1)
        .arg(10_000)
        .query(&mut oc)
        .unwrap();
    assert_eq!(acked, 1);
    drop(oc);
    // A spread post: each shard's write on the shard's own master keeps
    // its token there, in `<shard key>:idem`.
    let shards: Vec<String> = hotpath_client::routing::shard_keys(b"post:{sp}", 3)
        .into_iter()
        .map(|k| String::from_utf8(k).unwrap())
        .collect();
    let owners: Vec<usize> = shards.iter().map(|k| cl.owner_of_key(k)).collect();
    assert!(owners.iter().any(|&o| o != owners[0]), "{owners:?}");
    for (i, k) in shards.iter().enumerate() {
        let mut sc = cl.nodes[owners[i]].conn();
        assert_eq!(run(&mut sc, &["LIKE.CREATE", k, "SPREAD", "3"]), "OK");
        let id = (i + 3).to_string(); // a user of shard i: id mod 3
        let w = [
            "LIKE.TOGGLE",
            k,
            &id,
            "NOW",
            &t,
            "SPREAD",
            "3",
            "IDEM",
            "s1",
        ];
        let a = run(&mut sc, &w);
        assert_eq!(a, "[1, 1]", "{w:?}");
        assert_eq!(run(&mut sc, &w), a, "{w:?}: replayed");
        let n: i64 = redis::cmd("HEXISTS")
            .arg(format!("{k}:idem"))
            .arg("s1")
            .query(&mut sc)
            .unwrap();
        assert_eq!(n, 1, "{k}:idem on node {}", owners[i]);
    }
    let promoted = cl.kill_master(owner);
    let mut pc = cl.nodes[promoted].conn();
    for (w, f) in writes.iter().zip(&first) {
        assert_eq!(
            &run(&mut pc, w),
            f,
            "{w:?}: replayed on the promoted replica"
        );
    }
    assert_eq!(
        run(
            &mut pc,
            &["RANK.INCR", "r:{ha}", "m", "5", "NOW", &t, "IDEM", "i2"]
        ),
        "10"
    );
}

/// Sends one command on its own socket and returns the raw bytes of its
/// one-line reply (an integer, a nil or an error).
fn raw_line(port: u16, args: &[&str]) -> Vec<u8> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut req = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        req.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
    }
    s.write_all(&req).unwrap();
    let mut out = Vec::new();
    let mut b = [0u8; 1];
    while !out.ends_with(b"\r\n") {
        assert_eq!(s.read(&mut b).unwrap(), 1, "closed: {out:?}");
        out.push(b[0]);
    }
    out
}

/// Waits until `n` clients are blocked on the server.
fn wait_blocked(c: &mut redis::Connection, n: usize) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
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
        assert!(std::time::Instant::now() < deadline, "never {n} blocked");
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
}

/// Starts a raw call on its own thread.
fn raw_later(port: u16, args: &[&str]) -> std::thread::JoinHandle<Vec<u8>> {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    std::thread::spawn(move || {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        raw_line(port, &a)
    })
}

#[test]
fn blocked_lock_acquire_stores_its_token_with_the_late_reply() {
    let p = Pair::start();
    let port = p.master.port;
    let mut c = p.master.conn();
    let state = |c: &mut redis::Connection| dump_keys(c, "L");
    assert_eq!(run(&mut c, &["LOCK.ACQUIRE", "L", "a", "60000"]), "1");

    // Woken by a release: the token is stored with the reply then.
    let w1 = [
        "LOCK.ACQUIRE",
        "L",
        "b",
        "60000",
        "BLOCK",
        "10000",
        "IDEM",
        "t1",
    ];
    let first = raw_later(port, &w1);
    wait_blocked(&mut c, 1);
    assert_eq!(run(&mut c, &["HEXISTS", "L:idem", "t1"]), "0", "waiting");
    assert_eq!(run(&mut c, &["LOCK.RELEASE", "L", "a"]), "1");
    let first = first.join().unwrap();
    assert_eq!(first, b":2\r\n");
    let before = state(&mut c);
    for _ in 0..2 {
        // Replayed at once, byte for byte; not reentered (count stays 1).
        assert_eq!(raw_line(port, &w1), first);
    }
    assert_eq!(state(&mut c), before, "a replay writes nothing");
    let other = [
        "LOCK.ACQUIRE",
        "L",
        "b",
        "5000",
        "BLOCK",
        "10000",
        "IDEM",
        "t1",
    ];
    let e = raw_line(port, &other);
    assert!(
        String::from_utf8_lossy(&e).contains("IDEM token reused with other arguments"),
        "{e:?}"
    );

    // A timeout's nil is stored too: after the lock is free, the retry
    // still answers nil and takes nothing.
    let w2 = [
        "LOCK.ACQUIRE",
        "L",
        "c",
        "5000",
        "BLOCK",
        "100",
        "IDEM",
        "t2",
    ];
    let nil = raw_line(port, &w2);
    assert!(nil == b"$-1\r\n" || nil == b"_\r\n", "{nil:?}");
    assert_eq!(run(&mut c, &["HEXISTS", "L:idem", "t2"]), "1");
    assert_eq!(run(&mut c, &["LOCK.RELEASE", "L", "b"]), "1");
    assert_eq!(raw_line(port, &w2), nil);
    assert_eq!(
        run(&mut c, &["LOCK.INFO", "L"]),
        "[]",
        "the retry took nothing"
    );

    // A waiter served by a call that itself carries a token (its store
    // is written twice in one command): both tokens stored.
    let t = (T0 + 120_000).to_string();
    assert_eq!(
        run(
            &mut c,
            &["LOCK.ACQUIRE", "M", "a", "1000", "NOW", &T0.to_string()]
        ),
        "1"
    );
    let w3 = [
        "LOCK.ACQUIRE",
        "M",
        "b",
        "60000",
        "BLOCK",
        "0",
        "IDEM",
        "t3",
    ];
    let third = raw_later(port, &w3);
    wait_blocked(&mut c, 1);
    let w4 = ["LOCK.ACQUIRE", "M", "c", "60000", "NOW", &t, "IDEM", "t4"];
    let fourth = raw_line(port, &w4);
    assert!(fourth == b"$-1\r\n" || fourth == b"_\r\n", "{fourth:?}");
    assert_eq!(third.join().unwrap(), b":2\r\n");
    assert_eq!(raw_line(port, &w3), b":2\r\n");
    assert_eq!(raw_line(port, &w4), fourth);

    // The replica holds the same stores, with the same expiries.
    p.assert_equal();
    let mut r = p.replica.conn();
    for (k, f) in [
        ("L:idem", "t1"),
        ("L:idem", "t2"),
        ("M:idem", "t3"),
        ("M:idem", "t4"),
    ] {
        let get = |c: &mut redis::Connection| run(c, &["HGET", k, f]);
        assert_eq!(get(&mut c), get(&mut r), "{k} {f}");
        assert_ne!(get(&mut c), "nil", "{k} {f}");
        let pt = |c: &mut redis::Connection| run(c, &["PEXPIRETIME", k]);
        assert_eq!(pt(&mut c), pt(&mut r), "{k}");
    }
}
