//! Spread entities on a real cluster (3 masters, 1 replica each, on
//! loopback), driven through the Rust client library by several
//! concurrent clients:
//!
//! - the writes of one entity are shared evenly by the masters (INFO
//!   commandstats of every node: each master within 1.25× of an even
//!   share), and the result equals a single-slot entity on a standalone
//!   server fed the same inputs;
//! - a master killed under load: its replica is promoted, the clients
//!   retry, and after `WAIT` no acknowledged write is lost (every write is
//!   followed by `WAIT 1` on its shard's master, and applied again until a
//!   replica has it: the writes used there are idempotent, so the result
//!   still equals the single-node run exactly);
//! - one shard's slot moved under load (`CLUSTER SETSLOT … MIGRATING /
//!   IMPORTING` + `MIGRATE`, key by key with pauses): no data lost, the
//!   clients see only redirections and `TRYAGAIN`.
//!
//! In `make test` every run is sized to a few seconds; `make cluster-soak`
//! runs the same code with 200,000 writes per entity (`soak_` tests).

use crate::common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::cluster::{Cluster, ClusterOpts};
use common::*;
use hotpath_client::*;
use redis::cluster::ClusterConnection;
use redis::cluster_routing::{Route, RoutingInfo, SingleNodeRoutingInfo, SlotAddr};

/// A pool score as an integer: score × 2^52 (exact for every score the
/// module writes, and for the marks -1, -1.5, -2, -3).
const SCORE_K: f64 = 4_503_599_627_370_496.0;

fn to_r(sc: f64) -> i64 {
    (sc * SCORE_K) as i64
}

/// The text a reply gives for the score `r` / 2^52 (`%.17g`).
#[allow(dead_code)]
fn r_text(r: i64) -> String {
    hotpath::luckybag::model::format_score(r as f64 / SCORE_K)
}

/// One write of a workload: the id it is about, what to do, a value.
#[derive(Clone, Copy, Debug)]
struct Op {
    id: u64,
    kind: u8,
    #[allow(dead_code)]
    value: i64,
}

/// A small deterministic generator (xorshift64*), so that every thread's
/// writes can be replayed on the single-node reference.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A family's spread entity under load.
trait Workload: Send + Sync {
    fn name(&self) -> &'static str;
    /// The write commands counted for the share of each master.
    fn commands(&self) -> &'static [&'static str];
    /// The shard keys.
    fn shard_keys(&self) -> Vec<String>;
    fn create(&self, c: &mut ClusterConnection);
    fn create_single(&self, c: &mut Connection);
    /// A write about an id owned by thread `t` of `threads` (ids are split
    /// between threads, so that the final state does not depend on how
    /// the threads interleave). `idempotent`: only writes that can be
    /// applied twice (a retry after a lost reply) with the same result.
    fn op(&self, rng: &mut Rng, t: u64, threads: u64, idempotent: bool) -> Op;
    /// Applies a write to the spread entity; returns the shard key written.
    fn apply(&self, c: &mut ClusterConnection, op: Op) -> RedisResult<String>;
    fn apply_single(&self, c: &mut Connection, op: Op);
    /// Asserts that the spread entity reads as the single-slot one.
    fn compare(&self, c: &mut ClusterConnection, s: &mut Connection);
    /// Runs after the load phases, on the same cluster (the lucky bag's
    /// draw).
    fn finish(&self, _cl: &mut Cluster, _s: &mut Connection) {}
}

// ---- LIKE ----

struct LikeLoad {
    post: SpreadLike,
    users: u64,
}

const SINGLE_POST: &str = "post:{single}";

impl Workload for LikeLoad {
    fn name(&self) -> &'static str {
        "LIKE"
    }
    fn commands(&self) -> &'static [&'static str] {
        &["like.add", "like.rem", "like.toggle"]
    }
    fn shard_keys(&self) -> Vec<String> {
        self.post.shards().keys().to_vec()
    }
    fn create(&self, c: &mut ClusterConnection) {
        assert!(self.post.create(c).unwrap());
    }
    fn create_single(&self, _c: &mut Connection) {}
    fn op(&self, rng: &mut Rng, t: u64, threads: u64, idempotent: bool) -> Op {
        let id = rng.below(self.users / threads) * threads + t;
        // Mostly likes, some unlikes; toggles only where a retry cannot
        // apply one twice.
        let kind = match rng.below(10) {
            0..=6 => 0,
            7 | 8 => 1,
            _ if idempotent => 0,
            _ => 2,
        };
        Op { id, kind, value: 0 }
    }
    fn apply(&self, c: &mut ClusterConnection, op: Op) -> RedisResult<String> {
        match op.kind {
            0 => self.post.add(c, op.id)?,
            1 => self.post.rem(c, op.id)?,
            _ => self.post.toggle(c, op.id)?,
        };
        Ok(self.post.shards().keys()[self.post.shard_of(op.id) as usize].clone())
    }
    fn apply_single(&self, c: &mut Connection, op: Op) {
        let p = Like::new(SINGLE_POST);
        match op.kind {
            0 => p.add(c, op.id).map(|_| ()),
            1 => p.rem(c, op.id).map(|_| ()),
            _ => p.toggle(c, op.id).map(|_| ()),
        }
        .unwrap();
    }
    fn compare(&self, c: &mut ClusterConnection, s: &mut Connection) {
        let single = Like::new(SINGLE_POST);
        assert_eq!(self.post.count(c).unwrap(), single.count(s).unwrap());
        let ids: Vec<u64> = (0..self.users).collect();
        for chunk in ids.chunks(5000) {
            assert_eq!(
                self.post.check(c, chunk).unwrap(),
                single.check(s, chunk).unwrap(),
                "likes of users {}…",
                chunk[0]
            );
        }
    }
}

// ---- LUCKYBAG ----

struct BagLoad {
    bag: SpreadLuckyBag,
    users: u64,
    winners: i64,
}

const SINGLE_BAG: &str = "bag:{single}";

/// A user id of the bag: integers, and every fifth one a name (routed by
/// FNV-1a rather than `id mod n`).
fn bag_user(id: u64) -> String {
    if id % 5 == 4 {
        format!("user-{id}")
    } else {
        id.to_string()
    }
}

/// Every member of the pools of a spread bag's shards (one internal pool
/// each), with `r` = score × 2^52 (-1, -2: cannot win).
fn spread_pools(c: &mut ClusterConnection, keys: &[String]) -> Vec<(String, i64)> {
    let mut out = Vec::new();
    for k in keys {
        let v: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(format!("{k}:cand:0"))
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(c)
            .unwrap();
        out.extend(v.into_iter().map(|(u, sc)| (u, to_r(sc))));
    }
    out
}

fn single_pool(s: &mut Connection) -> Vec<(String, i64)> {
    let v: Vec<(String, f64)> = redis::cmd("ZRANGE")
        .arg(format!("{SINGLE_BAG}:cand:0"))
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(s)
        .unwrap();
    v.into_iter().map(|(u, sc)| (u, to_r(sc))).collect()
}

/// Who is in a pool and whether they can win (scores are random, so a
/// spread bag and a single-slot one fed the same joins agree on this,
/// not on the scores).
fn membership(pool: &[(String, i64)]) -> Vec<(String, i64)> {
    let mut m: Vec<(String, i64)> = pool
        .iter()
        .map(|(u, r)| (u.clone(), if *r < 0 { *r } else { 0 }))
        .collect();
    m.sort();
    m
}

impl Workload for BagLoad {
    fn name(&self) -> &'static str {
        "LUCKYBAG"
    }
    fn commands(&self) -> &'static [&'static str] {
        &["luckybag.join", "luckybag.leave", "luckybag.enter"]
    }
    fn shard_keys(&self) -> Vec<String> {
        self.bag.shards().keys().to_vec()
    }
    fn create(&self, c: &mut ClusterConnection) {
        assert!(self
            .bag
            .create(c, self.winners, &BagOptions::default())
            .unwrap());
    }
    fn create_single(&self, c: &mut Connection) {
        let o = BagOptions {
            shards: Some(1),
            ..BagOptions::default()
        };
        assert!(LuckyBag::new(SINGLE_BAG)
            .create(c, self.winners, &o)
            .unwrap());
    }
    fn op(&self, rng: &mut Rng, t: u64, threads: u64, _idempotent: bool) -> Op {
        // Mostly joins (a join again is a duplicate), some leave the room
        // and come back: each is safe to apply twice.
        let id = rng.below(self.users / threads) * threads + t;
        let kind = match rng.below(20) {
            0..=16 => 0,
            17 | 18 => 1,
            _ => 2,
        };
        Op { id, kind, value: 0 }
    }
    fn apply(&self, c: &mut ClusterConnection, op: Op) -> RedisResult<String> {
        let u = bag_user(op.id);
        match op.kind {
            0 => self.bag.join(c, &u, false).map(|_| ())?,
            1 => self.bag.leave(c, &u).map(|_| ())?,
            _ => self.bag.enter(c, &u).map(|_| ())?,
        };
        Ok(self.bag.shards().key_of(&u).to_string())
    }
    fn apply_single(&self, c: &mut Connection, op: Op) {
        let b = LuckyBag::new(SINGLE_BAG);
        let u = bag_user(op.id);
        match op.kind {
            0 => b.join(c, &u, false).map(|_| ()),
            1 => b.leave(c, &u).map(|_| ()),
            _ => b.enter(c, &u).map(|_| ()),
        }
        .unwrap();
    }
    fn compare(&self, c: &mut ClusterConnection, s: &mut Connection) {
        let single = LuckyBag::new(SINGLE_BAG).info(s).unwrap().unwrap();
        let info = self.bag.info(c).unwrap();
        assert_eq!(info.participants, single.participants);
        assert_eq!(info.state, "open");
        let spread = spread_pools(c, self.bag.shards().keys());
        assert_eq!(membership(&spread), membership(&single_pool(s)));
        for (i, k) in self.bag.shards().keys().iter().enumerate() {
            for (u, _) in spread_pools(c, std::slice::from_ref(k)) {
                assert_eq!(self.bag.shards().shard_of(&u), i as u32, "{u} in {k}");
            }
        }
    }
    /// The draw on the cluster: a drawer stops half way (its lease taken,
    /// half the shards frozen), the coordinator's master is killed and its
    /// replica promoted, then two clients race to draw once the lease ran
    /// out. One draws, the other is refused or finds the draw
    /// done; the winners are the exact top of the frozen pools, equal to
    /// the single-node DRAW of the same pools, and each winner's result is
    /// read on the master that owns the winner's shard.
    fn finish(&self, cl: &mut Cluster, s: &mut Connection) {
        let mut c = cl.client();
        let keys = self.bag.shards().keys().to_vec();
        let n = keys.len().to_string();
        let begin = redis::cmd("LUCKYBAG.DRAWBEGIN")
            .arg(&keys[0])
            .arg("stopped")
            .arg("LEASE")
            .arg(1500)
            .arg("SPREAD")
            .arg(&n)
            .query::<Value>(&mut c)
            .unwrap();
        assert!(format!("{begin:?}").contains("drawing"), "{begin:?}");
        for k in keys.iter().step_by(2) {
            let _: Value = redis::cmd("LUCKYBAG.FREEZE")
                .arg(k)
                .arg(10)
                .arg("SPREAD")
                .arg(&n)
                .query(&mut c)
                .unwrap();
        }
        // While the stopped drawer's lease runs, another draw is refused.
        let e = self.bag.draw(&mut c, &DrawOptions::default()).unwrap_err();
        assert!(error_text(&e).contains("draw in progress"), "{e}");
        // The coordinator's master dies: its replica, promoted, still holds
        // the lease and the frozen shards stay frozen.
        cl.wait_replication(5000);
        let victim = cl.owner_of_key(&keys[0]);
        let promoted = cl.kill_master(victim);
        cl.nodes[victim].restart(&[]);
        cl.wait_stable(Duration::from_secs(60));
        let mut c = cl.client();
        let frozen_user = (0..)
            .map(|i: u64| format!("late-{i}"))
            .find(|u| self.bag.shards().shard_of(u) == 0)
            .unwrap();
        let e = self.bag.join(&mut c, &frozen_user, false).unwrap_err();
        assert!(error_text(&e).contains("bag is closed"), "{e}");
        eprintln!(
            "LUCKYBAG: coordinator's master {victim} killed mid-draw, replica {promoted} promoted"
        );
        std::thread::sleep(Duration::from_millis(1600));
        let urls = cl.urls();
        let racers: Vec<_> = ["A", "B"]
            .into_iter()
            .map(|t| {
                let bag = self.bag.clone();
                let mut conn = Conn::new(&urls);
                std::thread::spawn(move || {
                    let o = DrawOptions {
                        token: Some(t.to_string()),
                        ..DrawOptions::default()
                    };
                    // Both racers stop after COMMIT: their PUBLISH never
                    // reaches a shard.
                    bag.draw(&mut NoPublish(&mut conn.c), &o)
                        .map_err(|e| error_text(&e))
                })
            })
            .collect();
        let results: Vec<Result<Vec<Winner>, String>> =
            racers.into_iter().map(|h| h.join().unwrap()).collect();
        // One racer committed and stopped at PUBLISH; the other was refused
        // while the draw ran, or found it committed and stopped at PUBLISH.
        assert!(
            results
                .iter()
                .any(|r| matches!(r, Err(e) if e.contains(NO_PUBLISH))),
            "{results:?}"
        );
        for r in &results {
            let e = r.as_ref().unwrap_err();
            assert!(
                e.contains("draw in progress") || e.contains(NO_PUBLISH),
                "{e}"
            );
        }
        let committed: Vec<(String, f64)> = redis::cmd("ZRANGE")
            .arg(format!("{}:allwinners", keys[0]))
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(&mut c)
            .unwrap();
        assert_eq!(committed.len() as i64, self.winners);
        for k in &keys {
            let won: i64 = redis::cmd("EXISTS")
                .arg(format!("{k}:winners"))
                .query(&mut c)
                .unwrap();
            assert_eq!(won, 0, "{k} was published");
        }

        // A failover between COMMIT and PUBLISH: the coordinator's master
        // dies again (the commit reached its replica: the draw waited for
        // it), and so does another shard's, then anyone drawing finishes
        // the draw with the committed winners.
        cl.wait_replication(5000);
        let first = cl.owner_of_key(&keys[0]);
        let second = keys
            .iter()
            .map(|k| cl.owner_of_key(k))
            .find(|&m| m != first)
            .unwrap();
        for victim in [first, second] {
            let promoted = cl.kill_master(victim);
            cl.nodes[victim].restart(&[]);
            cl.wait_stable(Duration::from_secs(60));
            eprintln!("LUCKYBAG: master {victim} killed between COMMIT and PUBLISH, replica {promoted} promoted");
        }
        let mut c = cl.client();
        let winners = self.bag.draw(&mut c, &DrawOptions::default()).unwrap();
        assert_eq!(winners.len() as i64, self.winners);
        let mut names: Vec<&str> = winners.iter().map(|w| w.user.as_str()).collect();
        let mut stored: Vec<&str> = committed.iter().map(|(u, _)| u.as_str()).collect();
        names.sort_unstable();
        stored.sort_unstable();
        assert_eq!(
            names, stored,
            "the draw finished with other winners than it committed"
        );
        // Anyone drawing now gets the same winners.
        assert_eq!(
            self.bag.draw(&mut c, &DrawOptions::default()).unwrap(),
            winners
        );

        // The same pools on one node give the same DRAW.
        let pools = spread_pools(&mut c, &keys);
        let _: () = redis::cmd("DEL")
            .arg(format!("{SINGLE_BAG}:cand:0"))
            .query(s)
            .unwrap();
        for (u, r) in &pools {
            let score = *r as f64 / SCORE_K;
            let _: i64 = redis::cmd("ZADD")
                .arg(format!("{SINGLE_BAG}:cand:0"))
                .arg(score)
                .arg(u)
                .query(s)
                .unwrap();
        }
        let single = LuckyBag::new(SINGLE_BAG).draw(s).unwrap();
        assert_eq!(winners, single, "spread draw vs single-node draw");

        // Each winner's result on the master of the winner's shard, with
        // no redirection.
        for w in &winners {
            let k = self.bag.shards().key_of(&w.user);
            let v = cl
                .on_key_owner(k, &["LUCKYBAG.RESULT", k, &w.user, "SPREAD", &n])
                .unwrap();
            assert_eq!(v, Value::SimpleString("WON".into()), "{}", w.user);
        }
        let loser = pools
            .iter()
            .find(|(u, _)| !winners.iter().any(|w| w.user == *u))
            .unwrap();
        assert_eq!(self.bag.result(&mut c, &loser.0).unwrap(), BagResult::Lost);
        let per: Vec<String> = keys
            .iter()
            .map(|k| cl.owner_of_key(k).to_string())
            .collect();
        eprintln!(
            "LUCKYBAG: drew {} winners of {} participants over {} shards (owners {per:?}): {:?}",
            winners.len(),
            pools.len(),
            keys.len(),
            results
                .iter()
                .map(|r| r.as_ref().map(|_| "drew"))
                .collect::<Vec<_>>()
        );
    }
}

/// What [`NoPublish`] answers instead of sending a PUBLISH.
const NO_PUBLISH: &str = "test: PUBLISH withheld";

/// A cluster connection that sends everything but a `LUCKYBAG.PUBLISH` that writes: a
/// draw through it stops right after its COMMIT, as when the drawer dies
/// there.
struct NoPublish<'a>(&'a mut ClusterConnection);

/// A PUBLISH that writes: `PUBLISH … VERIFY` (the check every draw runs
/// before its COMMIT) goes through.
fn is_publish(c: &redis::Cmd) -> bool {
    let simple = |a: redis::Arg<&[u8]>, w: &[u8]| matches!(a, redis::Arg::Simple(n) if n.eq_ignore_ascii_case(w));
    c.args_iter()
        .next()
        .is_some_and(|a| simple(a, b"LUCKYBAG.PUBLISH"))
        && !c.args_iter().any(|a| simple(a, b"VERIFY"))
}

fn withheld() -> redis::RedisError {
    redis::RedisError::from((
        redis::ErrorKind::ResponseError,
        "test",
        NO_PUBLISH.to_string(),
    ))
}

impl redis::ConnectionLike for NoPublish<'_> {
    fn req_packed_command(&mut self, cmd: &[u8]) -> RedisResult<Value> {
        self.0.req_packed_command(cmd)
    }
    fn req_packed_commands(
        &mut self,
        cmd: &[u8],
        offset: usize,
        count: usize,
    ) -> RedisResult<Vec<Value>> {
        self.0.req_packed_commands(cmd, offset, count)
    }
    fn req_command(&mut self, cmd: &redis::Cmd) -> RedisResult<Value> {
        if is_publish(cmd) {
            return Err(withheld());
        }
        self.0.req_command(cmd)
    }
    fn get_db(&self) -> i64 {
        self.0.get_db()
    }
    fn check_connection(&mut self) -> bool {
        self.0.check_connection()
    }
    fn is_open(&self) -> bool {
        self.0.is_open()
    }
}

impl FanOut for NoPublish<'_> {
    fn pipeline_all(&mut self, cmds: &[redis::Cmd]) -> RedisResult<Vec<Value>> {
        if cmds.iter().any(is_publish) {
            return Err(withheld());
        }
        self.0.pipeline_all(cmds)
    }
    fn wait_for(&mut self, key: &str, replicas: i64, timeout_ms: u64) -> RedisResult<i64> {
        self.0.wait_for(key, replicas, timeout_ms)
    }
}

// ---- the runner ----

/// A cluster connection that an application keeps alive: after an I/O
/// error it is rebuilt from the seed nodes (the `redis` crate's sync
/// cluster client would otherwise keep dialing a dead master).
struct Conn {
    urls: Vec<String>,
    c: ClusterConnection,
}

impl Conn {
    fn new(urls: &[String]) -> Conn {
        let c = redis::cluster::ClusterClient::builder(urls.to_vec())
            .retries(30)
            .min_retry_wait(100)
            .max_retry_wait(1000)
            .connection_timeout(Duration::from_secs(2))
            .response_timeout(Duration::from_secs(5))
            .build()
            .unwrap()
            .get_connection()
            .unwrap();
        Conn {
            urls: urls.to_vec(),
            c,
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

    /// Runs `f` until it succeeds, retrying what an application retries
    /// (I/O errors, CLUSTERDOWN, TRYAGAIN, redirections, LOADING) for up
    /// to a minute; counts the retries.
    fn retry<T>(
        &mut self,
        retries: &AtomicU64,
        mut f: impl FnMut(&mut ClusterConnection) -> RedisResult<T>,
    ) -> RedisResult<T> {
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            match f(&mut self.c) {
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
                    if !transient || Instant::now() > deadline {
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

/// `WAIT 1 <ms>` on the master of `key`'s slot.
fn wait_key(c: &mut ClusterConnection, key: &str, ms: u64) -> i64 {
    let slot = hotpath_client::routing::key_slot(key.as_bytes());
    let route = RoutingInfo::SingleNode(SingleNodeRoutingInfo::SpecificNode(Route::new(
        slot,
        SlotAddr::Master,
    )));
    match c.route_command(redis::cmd("WAIT").arg(1).arg(ms), route) {
        Ok(Value::Int(n)) => n,
        _ => -1,
    }
}

/// What a phase of load did.
struct Outcome {
    /// Each thread's writes, in the order it applied them.
    ops: Vec<Vec<Op>>,
    retries: u64,
    /// Writes applied again because `WAIT` found no replica with them.
    reapplied: u64,
    errors: Vec<String>,
    elapsed: Duration,
}

/// Runs `per_thread` writes on each of `threads` clients; with `wait`,
/// each write is followed by `WAIT 1` on its shard's master and applied
/// again until a replica has it. `during` runs on this thread while the
/// load goes on; it gets the count of writes done so far.
fn run_phase(
    urls: &[String],
    w: Arc<dyn Workload>,
    threads: u64,
    per_thread: u64,
    seed: u64,
    wait: bool,
    during: impl FnOnce(&dyn Fn() -> u64),
) -> Outcome {
    let done = Arc::new(AtomicU64::new(0));
    let retries = Arc::new(AtomicU64::new(0));
    let reapplied = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(Mutex::new(Vec::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let mut conn = Conn::new(urls);
            let (w, done, retries, reapplied, errors, stop) = (
                w.clone(),
                done.clone(),
                retries.clone(),
                reapplied.clone(),
                errors.clone(),
                stop.clone(),
            );
            std::thread::spawn(move || {
                let mut rng = Rng::new(seed * 1000 + t);
                let mut ops = Vec::with_capacity(per_thread as usize);
                for _ in 0..per_thread {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let op = w.op(&mut rng, t, threads, wait);
                    let mut attempts = 0;
                    loop {
                        match conn.retry(&retries, |c| w.apply(c, op)) {
                            Ok(key) => {
                                if !wait || wait_key(&mut conn.c, &key, 1000) >= 1 {
                                    break;
                                }
                                // Not on a replica yet (a master just died,
                                // or a new one has no replica yet): apply
                                // it again, then wait again.
                                reapplied.fetch_add(1, Ordering::Relaxed);
                                attempts += 1;
                                if attempts > 600 {
                                    errors
                                        .lock()
                                        .unwrap()
                                        .push(format!("{op:?}: never durable"));
                                    break;
                                }
                                std::thread::sleep(Duration::from_millis(50));
                            }
                            Err(e) => {
                                errors
                                    .lock()
                                    .unwrap()
                                    .push(format!("{op:?}: {}", error_text(&e)));
                                stop.store(true, Ordering::Relaxed);
                                break;
                            }
                        }
                    }
                    ops.push(op);
                    done.fetch_add(1, Ordering::Relaxed);
                }
                ops
            })
        })
        .collect();
    let progress = || done.load(Ordering::Relaxed);
    during(&progress);
    let ops = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let errors = errors.lock().unwrap().clone();
    Outcome {
        ops,
        retries: retries.load(Ordering::Relaxed),
        reapplied: reapplied.load(Ordering::Relaxed),
        errors,
        elapsed: started.elapsed(),
    }
}

/// Waits until `progress()` reaches `n` (a minute at most).
fn wait_progress(progress: &dyn Fn() -> u64, n: u64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while progress() < n {
        assert!(
            Instant::now() < deadline,
            "load stalled at {} of {n}",
            progress()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The calls of `commands` each master served, by node index.
fn master_calls(cl: &Cluster, commands: &[&str]) -> HashMap<usize, u64> {
    cl.masters()
        .into_iter()
        .map(|m| {
            let stats = cl.commandstats(m);
            let calls = commands
                .iter()
                .map(|c| stats.get(*c).map_or(0, |s| s.0))
                .sum();
            (m, calls)
        })
        .collect()
}

/// Asserts each master took at most 1.25× an even share of `total`.
fn assert_even(name: &str, calls: &HashMap<usize, u64>, total: u64) -> f64 {
    let even = total as f64 / calls.len() as f64;
    let mut worst: f64 = 0.0;
    for (m, &n) in calls {
        let ratio = n as f64 / even;
        eprintln!("{name}: master {m} served {n} of {total} writes ({ratio:.3}× an even share)");
        worst = worst.max(ratio);
        assert!(
            ratio <= 1.25,
            "{name}: master {m} took {ratio:.3}× an even share: {calls:?}"
        );
    }
    worst
}

/// Replays every thread's writes on the single-slot reference.
fn replay(w: &dyn Workload, s: &mut Connection, outcomes: &[&Outcome]) {
    for o in outcomes {
        for ops in &o.ops {
            for &op in ops {
                w.apply_single(s, op);
            }
        }
    }
}

/// The whole scenario for one entity: an even, exact run, then a master
/// killed and a shard's slot moved under load with every write made
/// durable.
fn scenario(w: Arc<dyn Workload>, threads: u64, even_ops: u64, fault_ops: u64) {
    let mut cl = Cluster::start_opts(ClusterOpts {
        node_timeout_ms: 2000,
        ..ClusterOpts::default()
    });
    let single = Server::start();
    let mut s = single.conn();
    let mut c = cl.client();
    w.create(&mut c);
    w.create_single(&mut s);
    let name = w.name();

    // 1. Even and exact.
    cl.reset_stats();
    let per = even_ops / threads;
    let a = run_phase(&cl.urls(), w.clone(), threads, per, 1, false, |_| {});
    assert!(
        a.errors.is_empty(),
        "{name}: {:?}",
        &a.errors[..a.errors.len().min(5)]
    );
    let total = per * threads;
    let calls = master_calls(&cl, w.commands());
    assert_eq!(calls.values().sum::<u64>(), total, "{name}: {calls:?}");
    let worst = assert_even(name, &calls, total);
    replay(&*w, &mut s, &[&a]);
    w.compare(&mut c, &mut s);
    eprintln!(
        "{name}: {total} writes by {threads} clients in {:.1?} ({:.0}/s), worst master {worst:.3}× even, equal to the single-node run",
        a.elapsed,
        total as f64 / a.elapsed.as_secs_f64()
    );

    // 2. A master killed, then a shard's slot moved, under load; every
    // write made durable.
    let keys = w.shard_keys();
    let victim = cl.owner_of_key(&keys[0]);
    let moving = keys[1 % keys.len()].clone();
    let per = fault_ops / threads;
    let mut moved = 0;
    let mut promoted = 0;
    let urls = cl.urls();
    let b = run_phase(&urls, w.clone(), threads, per, 2, true, |progress| {
        wait_progress(progress, per * threads / 4);
        promoted = cl.kill_master(victim);
        cl.nodes[victim].restart(&[]);
        cl.wait_stable(Duration::from_secs(60));
        wait_progress(progress, per * threads / 2);
        let slot = hotpath_client::routing::key_slot(moving.as_bytes());
        let from = cl.owner_of_slot(slot);
        let to = *cl.masters().iter().find(|&&m| m != from).unwrap();
        moved = cl.move_slot(slot, to, 1, Duration::from_millis(100));
    });
    assert!(
        b.errors.is_empty(),
        "{name}: {:?}",
        &b.errors[..b.errors.len().min(5)]
    );
    eprintln!(
        "{name}: killed master {victim} (replica {promoted} promoted), moved {moved} keys of '{moving}': {} durable writes in {:.1?}, {} retries, {} applied again after WAIT found no replica",
        per * threads,
        b.elapsed,
        b.retries,
        b.reapplied
    );
    cl.wait_replication(5000);
    let mut c = cl.client();
    replay(&*w, &mut s, &[&b]);
    w.compare(&mut c, &mut s);
    w.finish(&mut cl, &mut s);
    cl.wait_replication(5000);
    // Every master's replica holds what its master holds.
    for m in cl.masters() {
        for r in cl.replicas_of(m) {
            assert_eq!(
                cl.nodes[m].digest(),
                cl.nodes[r].digest(),
                "{name}: master {m} vs replica {r}"
            );
        }
    }
}

fn like_load(users: u64) -> Arc<dyn Workload> {
    Arc::new(LikeLoad {
        post: SpreadLike::new("post:hot", 16),
        users,
    })
}

#[test]
fn spread_like_on_a_cluster() {
    scenario(like_load(20_000), 4, 8_000, 3_000);
}

/// `make cluster-soak`: 200,000 writes on one spread post, then a failover
/// and a slot move under 20,000 more.
#[test]
#[ignore]
fn soak_spread_like() {
    scenario(like_load(1_000_000), 4, 200_000, 20_000);
}

fn bag_load(users: u64) -> Arc<dyn Workload> {
    Arc::new(BagLoad {
        bag: SpreadLuckyBag::new("bag:live", 16),
        users,
        winners: 100,
    })
}

#[test]
fn spread_luckybag_on_a_cluster() {
    scenario(bag_load(20_000), 4, 8_000, 3_000);
}

/// `make cluster-soak`: 200,000 joins on one spread bag, a failover and a
/// slot move under 20,000 more, then the draw.
#[test]
#[ignore]
fn soak_spread_luckybag() {
    scenario(bag_load(1_000_000), 4, 200_000, 20_000);
}

#[path = "cluster_spread/poll.rs"]
mod poll;

// ---- bench (make cluster-bench) ----

/// `(calls, usec)` of `command` on one standalone server.
fn server_stat(c: &mut Connection, command: &str) -> (u64, u64) {
    let info = run(c, &["INFO", "commandstats"]);
    for line in info.lines() {
        if let Some(rest) = line.strip_prefix(&format!("cmdstat_{command}:")) {
            let get = |k: &str| {
                rest.split(',')
                    .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
                    .and_then(|v| v.parse().ok())
                    .unwrap_or(0)
            };
            return (get("calls"), get("usec"));
        }
    }
    (0, 0)
}

/// Writes `per_thread` distinct ids from each of `threads` clients with
/// `write(connection, id)`; returns the wall time.
fn drive<C: Send + 'static>(
    threads: u64,
    per_thread: u64,
    connect: impl Fn() -> C,
    write: impl Fn(&mut C, u64) + Send + Sync + 'static,
) -> Duration {
    let write = Arc::new(write);
    let started = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let mut c = connect();
            let write = write.clone();
            std::thread::spawn(move || {
                for i in 0..per_thread {
                    write(&mut c, i * threads + t);
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    started.elapsed()
}

/// One spread post, one spread bag and one spread poll of 16 shards,
/// written by 4 clients:
/// on 1 master (every shard on one standalone server) and on 3 masters.
/// Prints each master's share of the calls and its server µs per call
/// (INFO commandstats), and the entity's capacity: the sum over its
/// masters of the calls one core serves per second at that cost. The
/// client-side wall rate is printed too, but on a machine with fewer
/// cores than nodes it measures the machine, not the cluster.
#[test]
#[ignore]
fn bench_spread_shares_and_capacity() {
    const THREADS: u64 = 4;
    const PER: u64 = 10_000;
    let post = SpreadLike::new("post:bench", 16);
    let bag = SpreadLuckyBag::new("bag:bench", 16);
    let poll = SpreadPoll::new("poll:bench", 16);
    let writes: [(&str, &str); 3] = [
        ("LIKE.ADD", "like.add"),
        ("LUCKYBAG.JOIN", "luckybag.join"),
        ("POLL.VOTE", "poll.vote"),
    ];
    // One write of each entity, by command name.
    fn bench_write<C: redis::ConnectionLike>(
        name: &str,
        (post, bag, poll): (&SpreadLike, &SpreadLuckyBag, &SpreadPoll),
        c: &mut C,
        id: u64,
    ) {
        match name {
            "LIKE.ADD" => post.add(c, id).map(|_| ()),
            "LUCKYBAG.JOIN" => bag.join(c, &id.to_string(), false).map(|_| ()),
            _ => poll
                .vote(c, &id.to_string(), &format!("c{}", id % 20))
                .map(|_| ()),
        }
        .unwrap();
    }

    // 1 master: the 16 shards on one server.
    let one = Server::start();
    {
        let mut c = one.conn();
        post.create(&mut c).unwrap();
        bag.create(&mut c, 100, &BagOptions::default()).unwrap();
        poll.create(&mut c, &PollOptions::default()).unwrap();
        run(&mut c, &["CONFIG", "RESETSTAT"]);
    }
    for (name, stat) in writes {
        let (p, b, v) = (post.clone(), bag.clone(), poll.clone());
        let port = one.port;
        let wall = drive(
            THREADS,
            PER,
            move || {
                redis::Client::open(format!("redis://127.0.0.1:{port}/"))
                    .unwrap()
                    .get_connection()
                    .unwrap()
            },
            move |c: &mut redis::Connection, id| bench_write(name, (&p, &b, &v), c, id),
        );
        let (calls, usec) = server_stat(&mut one.conn(), stat);
        let per_call = usec as f64 / calls as f64;
        eprintln!(
            "{name} spread 16, 1 master: {calls} calls, {per_call:.2} µs/call, capacity {:.0}/s; client wall rate {:.0}/s",
            1e6 / per_call,
            calls as f64 / wall.as_secs_f64()
        );
    }

    // 3 masters.
    let cl = Cluster::start();
    {
        let mut c = cl.client();
        post.create(&mut c).unwrap();
        bag.create(&mut c, 100, &BagOptions::default()).unwrap();
        poll.create(&mut c, &PollOptions::default()).unwrap();
    }
    for (name, stat) in writes {
        cl.reset_stats();
        let (p, b, v) = (post.clone(), bag.clone(), poll.clone());
        let urls = cl.urls();
        let wall = drive(
            THREADS,
            PER,
            move || Conn::new(&urls).c,
            move |c: &mut ClusterConnection, id| bench_write(name, (&p, &b, &v), c, id),
        );
        let total = THREADS * PER;
        let mut capacity = 0.0;
        for m in cl.masters() {
            let (calls, usec) = cl.commandstats(m).get(stat).copied().unwrap_or((0, 0));
            let per_call = usec as f64 / calls.max(1) as f64;
            capacity += 1e6 / per_call;
            eprintln!(
                "{name} spread 16, 3 masters: master {m} served {calls} of {total} ({:.3}× even), {per_call:.2} µs/call",
                calls as f64 / (total as f64 / 3.0)
            );
        }
        // The entity saturates when its busiest master does: capacity =
        // min over masters of (that master's rate / its share).
        let limit = cl
            .masters()
            .into_iter()
            .map(|m| {
                let (calls, usec) = cl.commandstats(m).get(stat).copied().unwrap_or((0, 0));
                let share = calls as f64 / total as f64;
                (1e6 / (usec as f64 / calls.max(1) as f64)) / share
            })
            .fold(f64::INFINITY, f64::min);
        eprintln!(
            "{name} spread 16, 3 masters: capacity {limit:.0}/s (the busiest master saturated; sum of per-master rates {:.0}/s); client wall rate {:.0}/s",
            capacity,
            total as f64 / wall.as_secs_f64()
        );
    }
}

// ---- RANK ----

#[path = "cluster_spread/rank.rs"]
mod rank;
