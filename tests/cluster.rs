//! A real 3-master Redis Cluster on loopback ports, driven through the
//! `redis` crate's cluster client: hash-tagged base keys work on every
//! node, a base key without a hash tag gets the family's error.

mod common;

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
}
