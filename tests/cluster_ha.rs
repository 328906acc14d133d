//! High availability on a real cluster (3 masters, 1 replica each): a
//! master killed under load loses no write that `WAIT` acknowledged, and a
//! slot moved under load keeps every key of the entities it holds.
//! Also proves the cluster harness of tests/common/cluster.rs.

use crate::common;

// The fan-out benchmark of docs/spread.md (ignored; make cluster-bench).
#[path = "cluster_ha/bus_bench.rs"]
mod bus_bench;

use std::collections::{BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::cluster::{Cluster, ClusterOpts};
use common::*;
use redis::cluster::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};

fn q(c: &mut ClusterConnection, args: &[&str]) -> RedisResult<Value> {
    let mut cmd = redis::cmd(args[0]);
    for a in &args[1..] {
        cmd.arg(*a);
    }
    cmd.query(c)
}

/// A cluster connection that an application keeps alive: the `redis`
/// crate's sync cluster client reconnects to a dead master's address for
/// ever (it refreshes its slot map only on MOVED), so after an I/O error
/// the connection is rebuilt from the seed nodes, which reads the new
/// topology.
struct Conn {
    urls: Vec<String>,
    c: ClusterConnection,
}

impl Conn {
    fn new(cl: &Cluster) -> Conn {
        Conn {
            urls: cl.urls(),
            c: cl.client(),
        }
    }

    fn rebuild(&mut self) {
        let client = redis::cluster::ClusterClient::builder(self.urls.clone())
            .retries(5)
            .connection_timeout(Duration::from_secs(1))
            .response_timeout(Duration::from_secs(5))
            .build()
            .unwrap();
        if let Ok(c) = client.get_connection() {
            self.c = c;
        }
    }

    /// Runs a command, retrying transient failures (a dead master's refused
    /// connections, CLUSTERDOWN while the replica is elected, TRYAGAIN) for
    /// up to 30 s, as an application would. Counts the retries.
    fn retry(&mut self, args: &[&str], retries: &AtomicU64) -> RedisResult<Value> {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        loop {
            match q(&mut self.c, args) {
                Ok(v) => return Ok(v),
                Err(e) => {
                    let io = e.is_io_error()
                        || e.is_connection_dropped()
                        || e.is_connection_refusal()
                        || e.is_timeout();
                    let transient = io
                        || matches!(
                            e.code(),
                            Some("CLUSTERDOWN" | "TRYAGAIN" | "MOVED" | "ASK" | "LOADING")
                        );
                    if !transient || std::time::Instant::now() > deadline {
                        return Err(e);
                    }
                    retries.fetch_add(1, Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(50));
                    if io {
                        self.rebuild();
                    }
                }
            }
        }
    }
}

/// Sends `WAIT 1 <ms>` to the master of `slot` through the cluster
/// connection (the same node connection its writes used).
fn wait_slot(c: &mut ClusterConnection, slot: u16, ms: u64) -> i64 {
    let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::new(
        slot,
        SlotAddr::Master,
    )));
    match c.route_command(redis::cmd("WAIT").arg(1).arg(ms), route) {
        Ok(Value::Int(n)) => n,
        _ => -1,
    }
}

#[test]
fn harness_builds_three_masters_with_a_replica_each() {
    let cl = Cluster::start();
    assert_eq!(cl.nodes.len(), 6);
    let masters = cl.masters();
    assert_eq!(masters.len(), 3, "{:?}", cl.view());
    for &m in &masters {
        assert_eq!(cl.replicas_of(m).len(), 1);
        // The module is loaded on every node, masters and replicas.
        for n in std::iter::once(m).chain(cl.replicas_of(m)) {
            let mods = run(&mut cl.nodes[n].conn(), &["MODULE", "LIST"]);
            assert!(mods.contains("hotpath"), "node {n}: {mods}");
        }
    }
    // Keys land where CLUSTER KEYSLOT says, and commandstats count there.
    let mut c = cl.client();
    cl.reset_stats();
    for tag in 0..30 {
        let post = format!("post:{{{tag}}}");
        assert_eq!(show(&q(&mut c, &["LIKE.ADD", &post, "1"])), "[1, 1]");
        let owner = cl.owner_of_key(&post);
        assert_eq!(
            show(&cl.on_key_owner(&post, &["LIKE.COUNT", &post])),
            "1",
            "{post} on node {owner}"
        );
    }
    // On the masters: a LIKE write replicates verbatim, so each replica
    // runs (and counts) its master's calls too.
    let calls: HashMap<usize, u64> = cl
        .calls_per_node("like.add")
        .into_iter()
        .filter(|(n, _)| masters.contains(n))
        .collect();
    assert_eq!(calls.values().sum::<u64>(), 30);
    assert!(calls.values().filter(|&&n| n > 0).count() == 3, "{calls:?}");
    // redis-cli --cluster reshard moves slots with their keys.
    let (a, b) = (masters[0], masters[1]);
    let before = cl.dbsizes();
    cl.reshard(a, b, 100);
    let after = cl.dbsizes();
    assert_eq!(
        before.values().sum::<i64>(),
        after.values().sum::<i64>(),
        "{before:?} -> {after:?}"
    );
    let mut c = cl.client();
    for tag in 0..30 {
        let post = format!("post:{{{tag}}}");
        assert_eq!(show(&q(&mut c, &["LIKE.COUNT", &post])), "1");
    }
    // Our own slot function agrees with the server's.
    for key in ["post:{9}", "foo", "{user1000}.following", "a{}b", "{06S}x"] {
        assert_eq!(
            cl.slot_of(key),
            hotpath_route::key_slot(key.as_bytes()),
            "{key}"
        );
    }
}

// The routing spec, the crate the module and the Rust client share.
use hotpath_client::routing as hotpath_route;

/// Writers that like a post and vote in a poll (both on one master) with
/// the cluster client. A write counts as durable when its reply came back
/// and a `WAIT 1` on its master then reported a replica.
struct Load {
    stop: Arc<AtomicBool>,
    done: Arc<AtomicU64>,
    retries: Arc<AtomicU64>,
    durable: Arc<Mutex<BTreeSet<u64>>>,
    replied: Arc<Mutex<BTreeSet<u64>>>,
    errors: Arc<Mutex<Vec<String>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

fn start_load(cl: &Cluster, post: &str, poll: &str, writers: u64) -> Load {
    let load = Load {
        stop: Arc::new(AtomicBool::new(false)),
        done: Arc::new(AtomicU64::new(0)),
        retries: Arc::new(AtomicU64::new(0)),
        durable: Arc::new(Mutex::new(BTreeSet::new())),
        replied: Arc::new(Mutex::new(BTreeSet::new())),
        errors: Arc::new(Mutex::new(Vec::new())),
        threads: Vec::new(),
    };
    let slot = cl.slot_of(post);
    let mut threads = Vec::new();
    for w in 0..writers {
        let mut c = Conn::new(cl);
        let (post, poll) = (post.to_string(), poll.to_string());
        let (stop, done, retries) = (load.stop.clone(), load.done.clone(), load.retries.clone());
        let (durable, replied, errors) = (
            load.durable.clone(),
            load.replied.clone(),
            load.errors.clone(),
        );
        threads.push(std::thread::spawn(move || {
            let mut id = w;
            while !stop.load(Ordering::Relaxed) {
                let user = id.to_string();
                let a = c.retry(&["LIKE.ADD", &post, &user], &retries);
                let cand = format!("c{}", id % 3);
                let b = c.retry(&["POLL.VOTE", &poll, &user, &cand], &retries);
                match (&a, &b) {
                    (Ok(_), Ok(_)) => {
                        replied.lock().unwrap().insert(id);
                        if wait_slot(&mut c.c, slot, 200) >= 1 {
                            durable.lock().unwrap().insert(id);
                        }
                    }
                    _ => errors
                        .lock()
                        .unwrap()
                        .push(format!("{id}: {} / {}", show(&a), show(&b))),
                }
                done.fetch_add(1, Ordering::Relaxed);
                id += writers;
            }
        }));
    }
    Load { threads, ..load }
}

impl Load {
    fn finish(self) -> (BTreeSet<u64>, BTreeSet<u64>, Vec<String>) {
        self.stop.store(true, Ordering::Relaxed);
        eprintln!("load: {} retries", self.retries.load(Ordering::Relaxed));
        for t in self.threads {
            t.join().unwrap();
        }
        let d = self.durable.lock().unwrap().clone();
        let r = self.replied.lock().unwrap().clone();
        let e = self.errors.lock().unwrap().clone();
        (d, r, e)
    }

    fn wait_for(&self, n: u64) {
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while self.done.load(Ordering::Relaxed) < n {
            assert!(
                std::time::Instant::now() < deadline,
                "load stalled at {} of {n} ({} retries)",
                self.done.load(Ordering::Relaxed),
                self.retries.load(Ordering::Relaxed)
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Returns the likers and the voters present now (read from the master).
fn present(
    c: &mut ClusterConnection,
    post: &str,
    poll: &str,
    upto: u64,
) -> (BTreeSet<u64>, BTreeSet<u64>) {
    let ids: Vec<u64> = (0..upto).collect();
    let mut likers = BTreeSet::new();
    for chunk in ids.chunks(500) {
        let mut cmd = redis::cmd("LIKE.CHECK");
        cmd.arg(post);
        for id in chunk {
            cmd.arg(*id);
        }
        let flags: Vec<i64> = cmd.query(c).unwrap();
        for (id, f) in chunk.iter().zip(flags) {
            if f == 1 {
                likers.insert(*id);
            }
        }
    }
    let voted: Vec<String> = redis::cmd("HKEYS")
        .arg(format!("{poll}:voted"))
        .query(c)
        .unwrap();
    let voters = voted.iter().map(|v| v.parse().unwrap()).collect();
    (likers, voters)
}

#[test]
fn failover_loses_no_write_acknowledged_by_wait() {
    let mut cl = Cluster::start_opts(ClusterOpts {
        node_timeout_ms: 2000,
        ..ClusterOpts::default()
    });
    let (post, poll) = ("post:{ha}", "poll:{ha}");
    let mut c = cl.client();
    assert_eq!(
        show(&q(
            &mut c,
            &["POLL.CREATE", poll, "CANDIDATES", "3", "c0", "c1", "c2"]
        )),
        "OK"
    );
    let victim = cl.owner_of_key(post);
    let load = start_load(&cl, post, poll, 3);
    load.wait_for(1500);
    let t = std::time::Instant::now();
    let promoted = cl.kill_master(victim);
    assert_ne!(promoted, victim);
    eprintln!(
        "failover took {:?}; {} writes done",
        t.elapsed(),
        load.done.load(Ordering::Relaxed)
    );
    // The dead master comes back, while the load goes on, as a replica of
    // the promoted one (until then WAIT on the new master finds no replica
    // and nothing written there counts as durable).
    cl.nodes[victim].restart(&[]);
    cl.wait_stable(Duration::from_secs(60));
    assert_eq!(cl.owner_of_key(post), promoted);
    assert!(cl.replicas_of(promoted).contains(&victim));
    let before = load.done.load(Ordering::Relaxed);
    load.wait_for(before + 1500);
    let (durable, replied, errors) = load.finish();
    assert!(durable.len() >= 2000, "{} durable writes", durable.len());
    cl.wait_replication(5000);
    let mut c = cl.client();
    let upto = replied.iter().chain(&durable).max().copied().unwrap_or(0) + 64;
    let (likers, voters) = present(&mut c, post, poll, upto);
    let lost: Vec<u64> = durable.difference(&likers).copied().collect();
    assert!(lost.is_empty(), "durable likes lost: {lost:?}");
    let lost: Vec<u64> = durable.difference(&voters).copied().collect();
    assert!(lost.is_empty(), "durable votes lost: {lost:?}");
    // Every write the promoted master acknowledged is there too, and the
    // counts are exact for what is there.
    assert_eq!(
        show(&q(&mut c, &["LIKE.COUNT", post])),
        likers.len().to_string()
    );
    let info = show(&q(&mut c, &["POLL.INFO", poll]));
    assert!(
        info.ends_with(&format!(
            "ballots, {}, votes, {}]",
            voters.len(),
            voters.len()
        )),
        "{info} vs {} voters",
        voters.len()
    );
    // Replies lost with the old master are the only writes allowed to be
    // missing; the clients retried through the failover and none gave up.
    eprintln!(
        "failover: {} durable, {} replied, {} present, {} errors",
        durable.len(),
        replied.len(),
        likers.len(),
        errors.len()
    );
    assert!(errors.is_empty(), "{:?}", &errors[..errors.len().min(5)]);
    // The replica of the new master holds the same data.
    let replica = cl.replicas_of(promoted)[0];
    let (m, r) = (cl.nodes[promoted].digest(), cl.nodes[replica].digest());
    assert_eq!(m, r);
}

#[test]
fn moving_a_slot_under_load_keeps_every_key_of_a_poll() {
    let cl = Cluster::start();
    let (post, poll) = ("post:{mv}", "poll:{mv}");
    let mut c = cl.client();
    assert_eq!(
        show(&q(
            &mut c,
            &["POLL.CREATE", poll, "CANDIDATES", "3", "c0", "c1", "c2"]
        )),
        "OK"
    );
    let slot = cl.slot_of(poll);
    let from = cl.owner_of_slot(slot);
    let to = *cl.masters().iter().find(|&&m| m != from).unwrap();
    let load = start_load(&cl, post, poll, 3);
    load.wait_for(300);
    // One key per MIGRATE with pauses: the slot stays half-moved for a
    // while, with writes going on.
    let moved = cl.move_slot(slot, to, 1, Duration::from_millis(200));
    assert!(moved >= 5, "moved {moved} keys");
    let before = load.done.load(Ordering::Relaxed);
    load.wait_for(before + 300);
    let (_durable, replied, errors) = load.finish();
    assert!(
        errors.is_empty(),
        "clients gave up: {:?}",
        &errors[..errors.len().min(5)]
    );
    assert_eq!(cl.owner_of_slot(slot), to);
    // Nothing of the slot stayed behind on the old owner.
    let left = int(
        &mut cl.nodes[from].conn(),
        &["CLUSTER", "COUNTKEYSINSLOT", &slot.to_string()],
    );
    assert_eq!(left, 0);
    let upto = replied.iter().max().copied().unwrap_or(0) + 64;
    let (likers, voters) = present(&mut c, post, poll, upto);
    assert_eq!(likers, replied, "likes");
    assert_eq!(voters, replied, "votes");
    assert_eq!(
        show(&q(&mut c, &["LIKE.COUNT", post])),
        replied.len().to_string()
    );
    let info = show(&q(&mut c, &["POLL.INFO", poll]));
    let n = replied.len();
    assert!(
        info.ends_with(&format!("ballots, {n}, votes, {n}]")),
        "{info} vs {n}"
    );
    // The guard sent the clients TRYAGAIN while the slot was half-moved
    // (the cluster client retried them): that is the only error they met.
    let tryagain: u64 = [from, to]
        .iter()
        .map(|&i| {
            let info = run(&mut cl.nodes[i].conn(), &["INFO", "errorstats"]);
            info.lines()
                .find_map(|l| l.strip_prefix("errorstat_TRYAGAIN:count="))
                .map(|v| v.trim().parse::<u64>().unwrap())
                .unwrap_or(0)
        })
        .sum();
    assert!(tryagain > 0, "no TRYAGAIN while the slot moved");
    // Replicas ran everything their masters did (the guard never refuses
    // a replicated command).
    cl.wait_replication(5000);
    for m in [from, to] {
        let r = cl.replicas_of(m)[0];
        assert_eq!(
            cl.nodes[m].digest(),
            cl.nodes[r].digest(),
            "master {m} vs replica {r}"
        );
    }
    eprintln!("reshard: {moved} keys moved, {n} writes, {tryagain} TRYAGAIN replies");
}

/// `make cluster-soak`: three rounds of a master killed and brought back
/// plus a slot moved, all under continuous load on one post and one poll;
/// no durable write is lost and no client gives up.
#[test]
#[ignore]
fn soak_failovers_and_slot_moves() {
    let mut cl = Cluster::start_opts(ClusterOpts {
        node_timeout_ms: 2000,
        ..ClusterOpts::default()
    });
    let (post, poll) = ("post:{soak}", "poll:{soak}");
    let mut c = cl.client();
    assert_eq!(
        show(&q(
            &mut c,
            &["POLL.CREATE", poll, "CANDIDATES", "3", "c0", "c1", "c2"]
        )),
        "OK"
    );
    let slot = cl.slot_of(post);
    let load = start_load(&cl, post, poll, 4);
    for round in 0..3 {
        load.wait_for(load.done.load(Ordering::Relaxed) + 2000);
        let victim = cl.owner_of_slot(slot);
        let promoted = cl.kill_master(victim);
        cl.nodes[victim].restart(&[]);
        cl.wait_stable(Duration::from_secs(60));
        load.wait_for(load.done.load(Ordering::Relaxed) + 2000);
        let to = *cl.masters().iter().find(|&&m| m != promoted).unwrap();
        let moved = cl.move_slot(slot, to, 1, Duration::from_millis(100));
        eprintln!(
            "round {round}: killed {victim}, promoted {promoted}, moved {moved} keys to {to}"
        );
    }
    load.wait_for(load.done.load(Ordering::Relaxed) + 2000);
    let (durable, replied, errors) = load.finish();
    assert!(errors.is_empty(), "{:?}", &errors[..errors.len().min(5)]);
    cl.wait_replication(5000);
    let mut c = cl.client();
    let upto = replied.iter().max().copied().unwrap_or(0) + 64;
    let (likers, voters) = present(&mut c, post, poll, upto);
    assert!(durable.is_subset(&likers) && durable.is_subset(&voters));
    assert_eq!(
        show(&q(&mut c, &["LIKE.COUNT", post])),
        likers.len().to_string()
    );
    eprintln!(
        "soak: {} writes replied, {} durable, {} present",
        replied.len(),
        durable.len(),
        likers.len()
    );
}

/// The routing spec on the real cluster: the shard keys of one entity,
/// written through the cluster client by the documented id → shard rule,
/// put each master within 1.25× of an even share of the writes (INFO
/// commandstats of every node).
#[test]
fn shards_of_one_entity_share_the_writes_evenly() {
    let cl = Cluster::start();
    let mut c = cl.client();
    cl.reset_stats();
    let n = 16;
    let writes = 16_000u64;
    for id in 0..writes {
        let user = id.to_string();
        let shard = hotpath_route::shard_of(user.as_bytes(), n);
        let key = String::from_utf8(hotpath_route::shard_key(b"post:9", n, shard)).unwrap();
        let _: i64 = redis::cmd("INCR").arg(&key).query(&mut c).unwrap();
    }
    let calls = cl.calls_per_node("incr");
    let masters = cl.masters();
    let even = writes as f64 / masters.len() as f64;
    for &m in &masters {
        let share = calls.get(&m).copied().unwrap_or(0) as f64;
        eprintln!("master {m}: {share} writes ({:.3}× even)", share / even);
        assert!(
            share <= 1.25 * even,
            "master {m} took {share} of {writes}: {calls:?}"
        );
    }
    // Replicas count the replicated writes too: the masters' calls alone
    // add up to the writes sent.
    let on_masters: u64 = masters
        .iter()
        .map(|m| calls.get(m).copied().unwrap_or(0))
        .sum();
    assert_eq!(on_masters, writes);
    // Every shard key holds exactly its ids, on the master of its slot.
    for i in 0..n {
        let key = String::from_utf8(hotpath_route::shard_key(b"post:9", n, i)).unwrap();
        let owner = cl.owner_of_key(&key);
        let v = show(&cl.on_key_owner(&key, &["GET", &key]));
        assert_eq!(v, (writes / u64::from(n)).to_string(), "{key} on {owner}");
    }
}
