//! A real 3-master Redis Cluster on loopback ports, driven through the
//! `redis` crate's cluster client: hash-tagged base keys work on every
//! node, a base key without a hash tag gets the family's error.

use crate::common;

use std::time::{Duration, Instant};

use common::*;
use redis::cluster::ClusterClient;

pub struct Cluster {
    pub nodes: Vec<Server>,
}

impl Cluster {
    pub fn start() -> Cluster {
        let nodes: Vec<Server> = (0..3)
            .map(|_| {
                Server::start_with(&["--cluster-enabled", "yes", "--cluster-node-timeout", "5000"])
            })
            .collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = std::process::Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .arg("--cluster-replicas")
            .arg("0")
            .arg("--cluster-yes")
            .output()
            .expect("redis-cli --cluster create");
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stdout)
        );
        let deadline = Instant::now() + Duration::from_secs(30);
        for n in &nodes {
            let mut c = n.conn();
            loop {
                let info: String = redis::cmd("CLUSTER").arg("INFO").query(&mut c).unwrap();
                if info.contains("cluster_state:ok") {
                    break;
                }
                assert!(Instant::now() < deadline, "cluster never became ok: {info}");
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        Cluster { nodes }
    }

    pub fn client(&self) -> redis::cluster::ClusterConnection {
        let urls: Vec<String> = self
            .nodes
            .iter()
            .map(|n| format!("redis://127.0.0.1:{}/", n.port))
            .collect();
        ClusterClient::new(urls).unwrap().get_connection().unwrap()
    }
}

fn q(c: &mut redis::cluster::ClusterConnection, args: &[&str]) -> String {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    show(&cmd.query::<Value>(c))
}

#[test]
fn every_family_works_with_hash_tags_across_the_cluster() {
    let cl = Cluster::start();
    let mut c = cl.client();
    // Base keys spread over all three masters.
    for tag in ["a", "b", "c", "d", "e", "f"] {
        let b = format!("poll:{{{tag}}}");
        assert_eq!(q(&mut c, &["POLL.CREATE", &b, "MODE", "MULTI"]), "OK");
        assert_eq!(q(&mut c, &["POLL.VOTE", &b, "u1", "x"]), "1");
        assert_eq!(q(&mut c, &["POLL.VOTE", &b, "u1", "x"]), "0");
        assert_eq!(q(&mut c, &["POLL.TOP", &b]), "[x, 1]");
        assert_eq!(q(&mut c, &["ZSCORE", &format!("{b}:board"), "x"]), "1");
    }
    for tag in ["a", "b", "c", "d"] {
        let b = format!("rank:{{{tag}}}");
        assert_eq!(q(&mut c, &["RANK.CREATE", &b]), "OK");
        assert_eq!(
            q(&mut c, &["RANK.ADD", &b, "alice", "10", "NOW", "1000000"]),
            "10"
        );
        assert_eq!(q(&mut c, &["RANK.TOP", &b]), "[alice, 10]");
        let bag = format!("bag:{{{tag}}}");
        assert_eq!(
            q(
                &mut c,
                &["LUCKYBAG.CREATE", &bag, "WINNERS", "1", "SHARDS", "4"]
            ),
            "OK"
        );
        assert_eq!(q(&mut c, &["LUCKYBAG.JOIN", &bag, "7"]), "[1, 1, 1]");
        assert_eq!(q(&mut c, &["LUCKYBAG.DRAW", &bag]).matches(", ").count(), 1);
        assert_eq!(q(&mut c, &["LUCKYBAG.RESULT", &bag, "7"]), "WON");
        let post = format!("post:{{{tag}}}");
        assert_eq!(q(&mut c, &["LIKE.TOGGLE", &post, "5"]), "[1, 1]");
        assert_eq!(q(&mut c, &["LIKE.CHECK", &post, "5", "6"]), "[1, 0]");
        let rp = format!("rp:{{{tag}}}");
        assert_eq!(
            q(
                &mut c,
                &["REDPACKET.SPLIT", &rp, "100", "2", "MODE", "EQUAL"]
            ),
            "2"
        );
        assert_eq!(q(&mut c, &["REDPACKET.GRAB", &rp, "u1"]), "[OK, 50]");
        let lim = format!("rate:{{{tag}}}");
        assert_eq!(
            q(&mut c, &["RATE.CHECK", &lim, "1", "60000", "NOW", "1000"]),
            "[1, 1, 0, -1, 60000]"
        );
        assert_eq!(
            q(&mut c, &["RATE.CHECK", &lim, "1", "60000", "NOW", "1000"]),
            "[0, 1, 0, 60000, 60000]"
        );
    }
    let used: std::collections::HashSet<u16> = cl
        .nodes
        .iter()
        .filter(|n| int(&mut n.conn(), &["DBSIZE"]) > 0)
        .map(|n| n.port)
        .collect();
    assert!(used.len() >= 2, "keys should spread over the masters");
}

#[test]
fn base_key_without_hash_tag_is_refused_in_cluster_mode() {
    let cl = Cluster::start();
    let mut c = cl.client();
    assert_eq!(
        q(&mut c, &["POLL.VOTE", "poll:untagged", "u", "a"]),
        "ERR<ERR poll: base key needs a {hash tag} in cluster mode>"
    );
    assert_eq!(q(&mut c, &["EXISTS", "poll:untagged:voted"]), "0");
    assert_eq!(
        q(&mut c, &["RANK.CREATE", "rank:untagged"]),
        "ERR<ERR rank: base key needs a {hash tag} in cluster mode>"
    );
    assert_eq!(
        q(&mut c, &["LIKE.TOGGLE", "post:untagged", "1"]),
        "ERR<ERR like: base key needs a {hash tag} in cluster mode>"
    );
    assert_eq!(
        q(&mut c, &["REDPACKET.SPLIT", "rp:untagged", "100", "2"]),
        "ERR<ERR redpacket: base key needs a {hash tag} in cluster mode>"
    );
    assert_eq!(
        q(&mut c, &["LUCKYBAG.CREATE", "bag:untagged", "WINNERS", "1"]),
        "ERR<ERR luckybag: base key needs a {hash tag} in cluster mode>"
    );
}

/// Sends a command to the nodes until one does not redirect it (so that
/// the server, not the client library, judges the slots).
fn on_owner(cl: &Cluster, args: &[&str]) -> String {
    for n in &cl.nodes {
        let mut c = n.conn();
        let r = cmd(&mut c, args);
        if !show(&r).starts_with("ERR<MOVED") {
            return show(&r);
        }
    }
    panic!("no node took {args:?}");
}

#[test]
fn multi_key_commands_work_in_one_slot_and_refuse_cross_slot() {
    let cl = Cluster::start();
    let mut c = cl.client();
    q(&mut c, &["RANK.ADD", "r:{s}:1", "a", "1", "NOW", "1000000"]);
    q(&mut c, &["RANK.ADD", "r:{s}:2", "a", "2", "NOW", "1000000"]);
    assert_eq!(
        on_owner(
            &cl,
            &[
                "RANK.MERGE",
                "r:{s}:d",
                "2",
                "r:{s}:1",
                "r:{s}:2",
                "NOW",
                "1000000"
            ]
        ),
        "1"
    );
    let cross = on_owner(&cl, &["RANK.MERGE", "r:{s}:d", "2", "r:{s}:1", "r:{t}:2"]);
    assert!(cross.starts_with("ERR<CROSSSLOT"), "{cross}");
    q(&mut c, &["LIKE.ADD", "p:{s}:1", "5"]);
    q(&mut c, &["LIKE.ADD", "p:{s}:2", "5"]);
    assert_eq!(on_owner(&cl, &["LIKE.COMMON", "p:{s}:1", "p:{s}:2"]), "[5]");
    let cross = on_owner(&cl, &["LIKE.COMMON", "p:{s}:1", "p:{t}:2"]);
    assert!(cross.starts_with("ERR<CROSSSLOT"), "{cross}");
    let both = on_owner(
        &cl,
        &[
            "RATE.MULTI",
            "2",
            "u:{s}",
            "ip:{s}",
            "LIMITS",
            "10",
            "1000",
            "100",
            "60000",
            "NOW",
            "5000",
        ],
    );
    assert!(both.starts_with("[1, "), "{both}");
    let cross = on_owner(
        &cl,
        &[
            "RATE.MULTI",
            "2",
            "u:{s}",
            "ip:{t}",
            "LIMITS",
            "10",
            "1000",
            "100",
            "60000",
        ],
    );
    assert!(cross.starts_with("ERR<CROSSSLOT"), "{cross}");
}

#[test]
fn lock_and_delayq_work_across_the_cluster() {
    let cl = Cluster::start();
    let mut c = cl.client();
    for tag in ["a", "b", "c", "d"] {
        let lk = format!("lock:{{{tag}}}");
        assert_eq!(q(&mut c, &["LOCK.ACQUIRE", &lk, "o1", "60000"]), "1");
        assert_eq!(q(&mut c, &["LOCK.ACQUIRE", &lk, "o2", "60000"]), "nil");
        assert_eq!(q(&mut c, &["LOCK.RELEASE", &lk, "o1"]), "1");
        assert_eq!(q(&mut c, &["LOCK.ACQUIRE", &lk, "o2", "60000"]), "2");
        let dq = format!("dq:{{{tag}}}");
        assert_eq!(q(&mut c, &["DELAYQ.ADD", &dq, "j", "p"]), "1");
        assert_eq!(
            q(&mut c, &["DELAYQ.POLL", &dq, "60000"]),
            "[j, p, 1, 1000001]"
        );
        assert_eq!(q(&mut c, &["DELAYQ.ACK", &dq, "j", "1000001"]), "1");
    }
    // A lock is one key: it needs no hash tag.
    assert_eq!(
        q(&mut c, &["LOCK.ACQUIRE", "lock:untagged", "o", "1000"]),
        "1"
    );
    // A queue has derived keys: it does.
    assert_eq!(
        q(&mut c, &["DELAYQ.ADD", "dq:untagged", "j", "p"]),
        "ERR<ERR delayq: base key needs a {hash tag} in cluster mode>"
    );
    assert_eq!(q(&mut c, &["EXISTS", "dq:untagged:jobs"]), "0");
}
