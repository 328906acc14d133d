//! The integration-test harness: one real `redis-server` (or
//! `valkey-server`) per test on a free port with the module loaded, killed
//! and reaped in `Drop`, plus helpers for a master+replica pair, an AOF
//! restart and an RDB reload.
//!
//! The server binary is `$HOTPATH_SERVER` (default `redis-server`); the
//! module is the `libhotpath.so` built with the test binary (see
//! [`module_path`]).

#![allow(dead_code)]

pub mod cluster;
pub mod twins;

pub use twins::{assert_same_data, mirrored_data, Twins};

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

pub use redis::{Connection, RedisResult, Value};

static SEQ: AtomicU32 = AtomicU32::new(0);

/// Returns the path of the module under test: `$HOTPATH_MODULE` when set,
/// else the `libhotpath.so` that the build of this test binary produced
/// beside it (cargo builds the library's cdylib into the same `deps/`
/// folder as the test binary, for whichever profile runs the tests, so a
/// debug `cargo test` tests a debug build, never a stale release one).
pub fn module_path() -> PathBuf {
    if let Ok(p) = std::env::var("HOTPATH_MODULE") {
        let p = PathBuf::from(p);
        assert!(p.exists(), "HOTPATH_MODULE={} does not exist", p.display());
        return p;
    }
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("the test binary's folder");
    let p = deps.join(format!(
        "{}hotpath{}",
        std::env::consts::DLL_PREFIX,
        std::env::consts::DLL_SUFFIX
    ));
    assert!(
        p.exists(),
        "{} is missing: cargo builds it with the test binary (crate-type cdylib); \
         set HOTPATH_MODULE to test another build",
        p.display()
    );
    p
}

/// Returns this machine's clock in Unix milliseconds (the servers under
/// test run on the same clock).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Returns the server binary under test.
pub fn server_bin() -> String {
    std::env::var("HOTPATH_SERVER").unwrap_or_else(|_| "redis-server".into())
}

/// Returns the Python that runs the examples: `$HOTPATH_PYTHON` (the
/// Makefile sets it to the project's venv), else `.venv/bin/python` when
/// scripts/deps.sh has made it, else `python3`.
pub fn python_bin() -> String {
    if let Ok(p) = std::env::var("HOTPATH_PYTHON") {
        return p;
    }
    let venv = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/python");
    if venv.exists() {
        return venv.display().to_string();
    }
    "python3".into()
}

/// Returns a port that is free right now, and whose cluster bus port
/// (port + 10000) is a valid port and free too: a cluster node refuses to
/// start on a port above 55535, and the OS hands out ports up to 60999.
pub fn free_port() -> u16 {
    let pick = || {
        TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    };
    for _ in 0..200 {
        let port = pick();
        if port <= 55535 && TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            return port;
        }
    }
    pick()
}

/// A running server; killed and reaped on drop, its directory removed.
pub struct Server {
    pub port: u16,
    pub dir: PathBuf,
    child: Option<Child>,
    extra: Vec<String>,
}

impl Server {
    /// Starts a server with the module loaded and no persistence.
    pub fn start() -> Server {
        Server::start_with(&[])
    }

    /// Starts a server with extra `--name value` arguments (e.g. module
    /// configs are passed as `["--loadmodule-args", …]` through `module_args`).
    pub fn start_with(extra: &[&str]) -> Server {
        Server::start_full(extra, &[])
    }

    /// Starts a server with extra server arguments and module arguments.
    pub fn start_full(extra: &[&str], module_args: &[&str]) -> Server {
        let mut extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        let mut load = vec![module_path().display().to_string()];
        load.extend(module_args.iter().map(|s| s.to_string()));
        extra.push("--loadmodule".into());
        extra.extend(load);
        Server::launch(extra)
    }

    /// Starts a server without the module (for `MODULE LOAD` tests), with
    /// extra server arguments.
    pub fn start_bare(extra: &[&str]) -> Server {
        Server::launch(extra.iter().map(|s| s.to_string()).collect())
    }

    /// Returns a new, empty directory for one server.
    pub fn new_dir() -> PathBuf {
        let n = SEQ.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("hotpath-test-{}-{}", std::process::id(), n));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }

    fn launch(extra: Vec<String>) -> Server {
        let dir = Server::new_dir();
        for attempt in 0..20 {
            let port = free_port();
            let mut s = Server {
                port,
                dir: dir.clone(),
                child: None,
                extra: extra.clone(),
            };
            if s.spawn() {
                return s;
            }
            // The failed attempt's drop removes its directory (it is this
            // server's): make it again, or every later attempt fails too
            // (its --dir and --logfile would not exist). A failed attempt
            // leaves nothing else behind: a cluster node's nodes.conf
            // names the old port (and is locked while its process lives,
            // which `spawn` now ends).
            drop(s);
            std::fs::create_dir_all(&dir).unwrap();
            std::thread::sleep(Duration::from_millis(20 * attempt));
        }
        panic!("could not start {}", server_bin());
    }

    fn spawn(&mut self) -> bool {
        let mut cmd = Command::new(server_bin());
        cmd.arg("--port")
            .arg(self.port.to_string())
            .arg("--bind")
            .arg("127.0.0.1")
            .arg("--dir")
            .arg(&self.dir)
            .arg("--save")
            .arg("")
            .arg("--appendonly")
            .arg("no")
            .arg("--enable-debug-command")
            .arg("yes")
            .arg("--logfile")
            .arg(self.dir.join("server.log"));
        let mut i = 0;
        while i < self.extra.len() {
            if self.extra[i] == "--loadmodule" {
                cmd.args(&self.extra[i..i + 1]);
                // The module path and its arguments form one directive.
                let rest: Vec<String> = self.extra[i + 1..].to_vec();
                cmd.args(rest);
                break;
            }
            cmd.arg(&self.extra[i]);
            i += 1;
        }
        cmd.stdout(Stdio::null()).stderr(Stdio::null());
        let child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => panic!("cannot run {}: {e}", server_bin()),
        };
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(c) = self.child.as_mut() {
                if let Ok(Some(_)) = c.try_wait() {
                    self.child = None;
                    return false; // exited early: port taken, or load failure
                }
            }
            if let Ok(mut con) = self.try_conn() {
                // Another test's server may hold the port: only our own
                // process counts as ready.
                let info: RedisResult<String> = redis::cmd("INFO").arg("server").query(&mut con);
                if let Ok(info) = info {
                    let pid = self.child.as_ref().map(|c| c.id()).unwrap_or(0);
                    if info.contains(&format!("process_id:{pid}\r\n")) {
                        // Ready means done loading the RDB/AOF too. The
                        // field is matched whole: `async_loading:0` also
                        // ends in `loading:0`.
                        let p: RedisResult<String> =
                            redis::cmd("INFO").arg("persistence").query(&mut con);
                        if p.map(|p| p.contains("\r\nloading:0\r\n")).unwrap_or(false) {
                            return true;
                        }
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // Not ready in time (a loaded machine): end it, so that the next
        // attempt does not meet it on the directory or the port.
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        false
    }

    fn try_conn(&self) -> RedisResult<Connection> {
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))?;
        client.get_connection_with_timeout(Duration::from_secs(5))
    }

    /// Returns a new connection.
    pub fn conn(&self) -> Connection {
        self.try_conn().expect("connect")
    }

    /// Returns a new connection, or `None` when the server does not answer.
    pub fn conn_opt(&self) -> Option<Connection> {
        self.try_conn().ok()
    }

    /// Returns true until [`stop`](Self::stop) (the process was started by
    /// this harness and not stopped since).
    pub fn running(&self) -> bool {
        self.child.is_some()
    }

    /// Returns the server log (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("server.log")).unwrap_or_default()
    }

    /// Returns true while the server process is running.
    pub fn alive(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    /// Stops the server (SHUTDOWN NOSAVE) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Restarts the server on the same port and directory with the same
    /// arguments plus `extra` (e.g. `--appendonly yes` to replay the AOF).
    pub fn restart(&mut self, extra: &[&str]) {
        self.stop();
        let mut args: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        args.extend(self.extra.iter().filter(|a| !a.is_empty()).cloned());
        self.extra = args;
        // The old port may have been taken meanwhile by another test's
        // server: then move to a new one.
        for attempt in 0..20 {
            if self.spawn() {
                return;
            }
            self.port = free_port();
            std::thread::sleep(Duration::from_millis(20 * attempt));
        }
        panic!("restart failed: {}", self.log());
    }

    /// Returns `DEBUG DIGEST`: equal digests mean byte-identical datasets.
    pub fn digest(&self) -> String {
        let mut c = self.conn();
        redis::cmd("DEBUG").arg("DIGEST").query(&mut c).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A master and a replica attached to it, both with the module.
pub struct Pair {
    pub master: Server,
    pub replica: Server,
}

impl Pair {
    /// Starts both and waits until the replica is in sync.
    pub fn start() -> Pair {
        let master = Server::start();
        let replica = Server::start();
        let mut c = replica.conn();
        let _: () = redis::cmd("REPLICAOF")
            .arg("127.0.0.1")
            .arg(master.port)
            .query(&mut c)
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let info: String = redis::cmd("INFO").arg("replication").query(&mut c).unwrap();
            if info.contains("master_link_status:up") {
                break;
            }
            assert!(Instant::now() < deadline, "replica never synced: {info}");
            std::thread::sleep(Duration::from_millis(50));
        }
        Pair { master, replica }
    }

    /// Waits until the replica has every write of the master, then returns
    /// (master digest, replica digest).
    pub fn sync_digests(&self) -> (String, String) {
        let mut m = self.master.conn();
        let mut r = self.replica.conn();
        let offset = |info: &str, field: &str| -> Option<i64> {
            info.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().parse().ok())
        };
        // WAIT alone can time out on a loaded machine: the replica must
        // have acknowledged the master's whole stream, and have processed
        // it (its own offset equal to the master's), before the digests
        // are compared.
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let acked: i64 = redis::cmd("WAIT").arg(1).arg(1000).query(&mut m).unwrap();
            let mi: String = redis::cmd("INFO").arg("replication").query(&mut m).unwrap();
            let ri: String = redis::cmd("INFO").arg("replication").query(&mut r).unwrap();
            let mo = offset(&mi, "master_repl_offset:");
            let ro = offset(&ri, "slave_repl_offset:");
            if acked >= 1 && mo.is_some() && mo == ro {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "replica never caught up: master {mi}\nreplica {ri}"
            );
        }
        (self.master.digest(), self.replica.digest())
    }

    /// Asserts master and replica hold byte-identical data.
    pub fn assert_equal(&self) {
        let (a, b) = self.sync_digests();
        assert_eq!(a, b, "replica differs from master");
        assert_ne!(
            a, "0000000000000000000000000000000000000000",
            "dataset is empty"
        );
    }
}

/// Starts a server with the AOF on (fsync always), for restart tests.
pub fn start_aof() -> Server {
    Server::start_with(&["--appendonly", "yes", "--appendfsync", "always"])
}

/// Restarts an AOF server (replaying the AOF) and asserts the digest is
/// the same as before the restart.
pub fn assert_aof_restart_equal(s: &mut Server) {
    let before = s.digest();
    assert_ne!(
        before, "0000000000000000000000000000000000000000",
        "dataset is empty"
    );
    s.restart(&[]);
    let after = s.digest();
    assert_eq!(before, after, "AOF replay differs");
}

/// Saves an RDB, restarts (loading it) and asserts the digest is unchanged.
pub fn assert_rdb_reload_equal(s: &Server) {
    let before = s.digest();
    let mut c = s.conn();
    let _: () = redis::cmd("DEBUG").arg("RELOAD").query(&mut c).unwrap();
    assert_eq!(before, s.digest(), "RDB reload differs");
}

/// Runs a command and returns its raw reply (errors as `Err`).
pub fn cmd(c: &mut Connection, args: &[&str]) -> RedisResult<Value> {
    let mut q = redis::cmd(args[0]);
    for a in &args[1..] {
        q.arg(*a);
    }
    q.query(c)
}

/// The server under test as `INFO server` names it: `redis` or `valkey`,
/// and its own version (Valkey's `valkey_version`, not the `redis_version`
/// 7.2.4 it reports for compatibility; a Redis 8.0 milestone reports 7.9.x).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerVersion {
    pub name: String,
    pub version: (u32, u32, u32),
}

impl ServerVersion {
    /// True on Redis at `(major, minor)` or later (false on Valkey).
    pub fn redis_at_least(&self, major: u32, minor: u32) -> bool {
        self.name == "redis" && (self.version.0, self.version.1) >= (major, minor)
    }

    /// True on Valkey at `(major, minor)` or later (false on Redis).
    pub fn valkey_at_least(&self, major: u32, minor: u32) -> bool {
        self.name == "valkey" && (self.version.0, self.version.1) >= (major, minor)
    }

    /// True on Valkey.
    pub fn is_valkey(&self) -> bool {
        self.name == "valkey"
    }
}

/// Reads [`ServerVersion`] from `INFO server`.
pub fn server_version(c: &mut Connection) -> ServerVersion {
    let info: String = redis::cmd("INFO").arg("server").query(c).unwrap();
    let field = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
            .map(|v| v.trim().to_string())
    };
    let name = field("server_name").unwrap_or_else(|| "redis".into());
    let text = field(&format!("{name}_version"))
        .or_else(|| field("redis_version"))
        .unwrap_or_else(|| panic!("no version in INFO server: {info}"));
    let mut parts = text.split('.').map(|p| p.parse::<u32>().unwrap_or(0));
    let mut next = || parts.next().unwrap_or(0);
    ServerVersion {
        name,
        version: (next(), next(), next()),
    }
}

/// Runs a command that must fail and returns its full error text, e.g.
/// `ERR syntax error` or `WRONGTYPE Operation against …`.
pub fn err(c: &mut Connection, args: &[&str]) -> String {
    match cmd(c, args) {
        Ok(v) => panic!("{args:?} should fail, got {v:?}"),
        Err(e) => error_text(&e),
    }
}

/// Returns the error text as the server sent it (code and message).
pub fn error_text(e: &redis::RedisError) -> String {
    match (e.code(), e.detail()) {
        (Some(code), Some(d)) => format!("{code} {d}"),
        (Some(code), None) => code.to_string(),
        _ => e.to_string(),
    }
}

/// Returns an integer reply.
pub fn int(c: &mut Connection, args: &[&str]) -> i64 {
    match cmd(c, args) {
        Ok(Value::Int(i)) => i,
        other => panic!("{args:?}: expected an integer, got {other:?}"),
    }
}

/// Converts a reply to a readable string form for comparisons:
/// integers as numbers, bulk strings as text, nil as `nil`, arrays as
/// `[a, b]`, errors as their text.
pub fn show(v: &RedisResult<Value>) -> String {
    match v {
        Ok(v) => show_value(v),
        Err(e) => format!("ERR<{}>", error_text(e)),
    }
}

fn show_value(v: &Value) -> String {
    match v {
        Value::Nil => "nil".into(),
        Value::Int(i) => i.to_string(),
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Okay => "OK".into(),
        Value::Array(a) => format!(
            "[{}]",
            a.iter().map(show_value).collect::<Vec<_>>().join(", ")
        ),
        other => format!("{other:?}"),
    }
}

/// Runs a command and returns [`show`] of its reply.
pub fn run(c: &mut Connection, args: &[&str]) -> String {
    show(&cmd(c, args))
}

/// Loads a Lua twin from `lua-compat/generated/<path>` and returns its SHA.
pub fn load_script(c: &mut Connection, path: &str) -> String {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("lua-compat/generated")
        .join(path);
    let src = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    redis::cmd("SCRIPT").arg("LOAD").arg(src).query(c).unwrap()
}

/// Runs a loaded script with `numkeys` keys then arguments, like EVALSHA.
pub fn evalsha(c: &mut Connection, sha: &str, numkeys: usize, args: &[&str]) -> RedisResult<Value> {
    let mut q = redis::cmd("EVALSHA");
    q.arg(sha).arg(numkeys);
    for a in args {
        q.arg(*a);
    }
    q.query(c)
}

/// Returns a dump of every key: name, type, TTL presence and content, sorted;
/// for comparing the module's data with the Lua twin's.
pub fn dump_keys(c: &mut Connection, pattern: &str) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg(pattern).query(c).unwrap();
    keys.sort();
    keys.iter()
        .map(|k| {
            let t: String = redis::cmd("TYPE").arg(k).query(c).unwrap();
            let ttl: i64 = redis::cmd("PTTL").arg(k).query(c).unwrap();
            let body = match t.as_str() {
                "string" => run(c, &["GET", k]),
                "hash" => {
                    let mut kv: Vec<(String, String)> =
                        redis::cmd("HGETALL").arg(k).query(c).unwrap();
                    kv.sort();
                    format!("{kv:?}")
                }
                "zset" => run(c, &["ZRANGE", k, "0", "-1", "WITHSCORES"]),
                "set" => {
                    let mut m: Vec<String> = redis::cmd("SMEMBERS").arg(k).query(c).unwrap();
                    m.sort();
                    format!("{m:?}")
                }
                "list" => run(c, &["LRANGE", k, "0", "-1"]),
                _ => String::new(),
            };
            format!("{k} {t} ttl={} {body}", ttl >= 0)
        })
        .collect()
}

/// How a test reaches the Lua twins: the standalone scripts of
/// `lua-compat/generated/<family>/` with EVALSHA, or the Functions library
/// `lua-compat/generated/hotpath.lua` with FCALL.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Via {
    Script,
    Function,
}

/// Loads the Functions library `lua-compat/generated/hotpath.lua` (FUNCTION LOAD
/// REPLACE; Redis 7+, Valkey).
pub fn load_library(c: &mut Connection) {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("lua-compat/generated/hotpath.lua");
    let src = std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    let name: String = redis::cmd("FUNCTION")
        .arg("LOAD")
        .arg("REPLACE")
        .arg(src)
        .query(c)
        .unwrap();
    assert_eq!(name, "hotpath");
}

/// Returns the library's function for a command: `RATE.CHECK` is
/// `hotpath_rate_check`.
pub fn function_name(command: &str) -> String {
    format!("hotpath_{}", command.to_ascii_lowercase().replace('.', "_"))
}

/// Runs a function of the library with `numkeys` keys then arguments, like
/// FCALL.
pub fn fcall(
    c: &mut Connection,
    function: &str,
    numkeys: usize,
    args: &[&str],
) -> RedisResult<Value> {
    let mut q = redis::cmd("FCALL");
    q.arg(function).arg(numkeys);
    for a in args {
        q.arg(*a);
    }
    q.query(c)
}

thread_local! {
    /// How [`load_twin`] loads, and so how [`call_twin`] runs, the twins in
    /// this test thread (set by [`twins_via`]).
    static TWIN_VIA: std::cell::Cell<Via> = const { std::cell::Cell::new(Via::Script) };
}

/// Runs `f` with the twins reached `via` EVALSHA or FCALL: a parity test
/// written once runs through both forms of lua-compat.
pub fn twins_via(via: Via, f: impl FnOnce()) {
    TWIN_VIA.with(|v| v.set(via));
    f();
    TWIN_VIA.with(|v| v.set(Via::Script));
}

/// Returns how this test thread runs the twins (see [`twins_via`]).
pub fn current_via() -> Via {
    TWIN_VIA.with(|v| v.get())
}

/// Prepares the twin `lua-compat/generated/<family>/<command>.lua` for
/// [`call_twin`]: its SHA (SCRIPT LOAD) when the test thread runs scripts,
/// or `fcall:hotpath_<family>_<command>` after loading the library.
pub fn load_twin(c: &mut Connection, path: &str) -> String {
    match TWIN_VIA.with(|v| v.get()) {
        Via::Script => load_script(c, path),
        Via::Function => {
            load_library(c);
            let f = path.trim_end_matches(".lua").replace('/', "_");
            format!("fcall:hotpath_{f}")
        }
    }
}

/// Runs a twin prepared by [`load_twin`]: EVALSHA with a SHA, FCALL with
/// a function; `numkeys` keys then arguments.
pub fn call_twin<A: redis::ToRedisArgs>(
    c: &mut Connection,
    twin: &str,
    numkeys: usize,
    args: &[A],
) -> RedisResult<Value> {
    let mut q = match twin.strip_prefix("fcall:") {
        Some(f) => {
            let mut q = redis::cmd("FCALL");
            q.arg(f);
            q
        }
        None => {
            let mut q = redis::cmd("EVALSHA");
            q.arg(twin);
            q
        }
    };
    q.arg(numkeys);
    for a in args {
        q.arg(a);
    }
    q.query(c)
}

/// Returns the lower-case names of the commands in `SLOWLOG GET 128` whose
/// name starts with `prefix` (e.g. `"lock."`), one per entry.
pub fn slow_commands(c: &mut Connection, prefix: &str) -> Vec<String> {
    let entries: Vec<Value> = redis::cmd("SLOWLOG").arg("GET").arg(128).query(c).unwrap();
    let mut out = Vec::new();
    for e in entries {
        let Value::Array(fields) = e else { continue };
        let Some(Value::Array(argv)) = fields.get(3) else {
            continue;
        };
        if let Some(Value::BulkString(name)) = argv.first() {
            let name = String::from_utf8_lossy(name).to_lowercase();
            if name.starts_with(prefix) {
                out.push(name);
            }
        }
    }
    out
}

/// Runs a stall scenario (which starts its own server, sets
/// `slowlog-log-slower-than` and returns the slow commands it cares about)
/// up to three times and returns the commands that were slow in every
/// run. A command preempted once by another process on a busy machine
/// shows up in one run; a command that really blocks the server for more
/// than the threshold shows up in all of them.
pub fn persistent_stalls(mut scenario: impl FnMut() -> Vec<String>) -> Vec<String> {
    let mut common: Option<Vec<String>> = None;
    for _ in 0..3 {
        let mut slow = scenario();
        slow.sort();
        slow.dedup();
        let now: Vec<String> = match common {
            None => slow,
            Some(prev) => prev.into_iter().filter(|n| slow.contains(n)).collect(),
        };
        if now.is_empty() {
            return now;
        }
        common = Some(now);
    }
    common.unwrap_or_default()
}

/// The older name of [`Twins`], for the parity files that still list
/// their scripts (`KeyedTwins::load(c, via, &SCRIPTS)`).
pub type KeyedTwins = Twins;

/// The commands an AOF holds, in order (every `appendonlydir/*.incr.aof`).
pub fn aof_commands(s: &Server) -> Vec<Vec<String>> {
    let dir = s.dir.join("appendonlydir");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with(".incr.aof"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let bytes = std::fs::read(&f).unwrap();
        let mut i = 0;
        let line = |i: &mut usize| -> String {
            let end = bytes[*i..].windows(2).position(|w| w == b"\r\n").unwrap() + *i;
            let l = String::from_utf8_lossy(&bytes[*i..end]).into_owned();
            *i = end + 2;
            l
        };
        while i < bytes.len() {
            let head = line(&mut i);
            let n: usize = head.strip_prefix('*').expect("an array").parse().unwrap();
            let mut cmd = Vec::new();
            for _ in 0..n {
                let len: usize = line(&mut i).strip_prefix('$').unwrap().parse().unwrap();
                cmd.push(String::from_utf8_lossy(&bytes[i..i + len]).into_owned());
                i += len + 2;
            }
            out.push(cmd);
        }
    }
    out
}
