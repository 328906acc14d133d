//! The differential harness: the same calls to the module on one server
//! and to the Lua twins on two plain servers (no module loaded), one
//! running the standalone scripts (EVALSHA), one the Functions library
//! (FCALL). Every reply must be the same bytes on the wire (so the same
//! RESP type too), and after every call every key must be the same on the
//! three servers: name, type, content and expiry.
//!
//! A family plugs in through [`Family`]: it draws random calls, names its
//! keys, the faults its keys can be given (wrong types, garbage values)
//! and the calls of the fault sweep. The harness does the rest:
//!
//! - [`random`]: a seeded stream of calls, with single and paired faults
//!   thrown in and repaired later;
//! - [`sweep`]: every single fault and every pair of faults (on two
//!   different keys), each on a fresh populated state, followed by one
//!   call of every command.
//!
//! Calls that read the clock (no `NOW`) or draw random numbers cannot
//! give the same bytes: their replies are compared by the family's
//! invariants ([`Family::check_unpinned`]), then the module's data is
//! copied to the twins (DUMP/RESTORE) so that all three go on from the
//! same state.
//!
//! A family whose expiry times count from the server clock ([`Ttl::Clock`])
//! runs each call, the dump and a PERSIST of every key in one MULTI/EXEC,
//! where the clock stands still for expiry: the expiry instants are
//! compared within the wall time the three calls took, and no key expires
//! between a call and its comparison.

use std::collections::{BTreeMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::common::Server;

// ------------------------------------------------------------- RESP ----

/// One reply: its exact bytes on the wire, and its parsed form.
#[derive(Clone, Debug)]
pub struct Resp {
    pub raw: Vec<u8>,
    pub v: V,
}

/// A parsed RESP2 reply.
#[derive(Clone, Debug)]
pub enum V {
    Simple(Vec<u8>),
    Error(Vec<u8>),
    Int(i64),
    Bulk(Option<Vec<u8>>),
    Array(Option<Vec<Resp>>),
}

impl Resp {
    pub fn is_error(&self) -> bool {
        matches!(self.v, V::Error(_))
    }

    pub fn int(&self) -> Option<i64> {
        match self.v {
            V::Int(i) => Some(i),
            _ => None,
        }
    }

    pub fn bytes(&self) -> Option<&[u8]> {
        match &self.v {
            V::Bulk(Some(b)) | V::Simple(b) => Some(b),
            _ => None,
        }
    }

    pub fn items(&self) -> &[Resp] {
        match &self.v {
            V::Array(Some(a)) => a,
            _ => &[],
        }
    }
}

/// Shows a reply with its RESP type: `:5`, `"text"`, `+OK`, `-ERR …`,
/// `nil`, `[…]`.
impl std::fmt::Display for Resp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.v {
            V::Simple(s) => write!(f, "+{}", String::from_utf8_lossy(s)),
            V::Error(s) => write!(f, "-{}", String::from_utf8_lossy(s)),
            V::Int(i) => write!(f, ":{i}"),
            V::Bulk(None) | V::Array(None) => write!(f, "nil"),
            V::Bulk(Some(b)) => write!(f, "{:?}", String::from_utf8_lossy(b)),
            V::Array(Some(a)) => {
                write!(f, "[")?;
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        write!(f, ", ")?;
                    }
                    write!(f, "{x}")?;
                }
                write!(f, "]")
            }
        }
    }
}

/// A raw RESP connection: commands go out as arrays of bulk strings, and
/// replies come back as the bytes the server sent.
pub struct Conn {
    r: BufReader<TcpStream>,
    w: TcpStream,
}

impl Conn {
    pub fn open(port: u16) -> Conn {
        let s = TcpStream::connect(("127.0.0.1", port)).expect("connect");
        s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
        s.set_nodelay(true).unwrap();
        Conn {
            r: BufReader::new(s.try_clone().unwrap()),
            w: s,
        }
    }

    /// Sends commands without waiting (a pipeline).
    pub fn send(&mut self, cmds: &[Vec<Vec<u8>>]) {
        let mut out = Vec::new();
        for c in cmds {
            out.extend_from_slice(format!("*{}\r\n", c.len()).as_bytes());
            for a in c {
                out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
                out.extend_from_slice(a);
                out.extend_from_slice(b"\r\n");
            }
        }
        self.w.write_all(&out).expect("send");
    }

    pub fn read(&mut self) -> Resp {
        let mut raw = Vec::new();
        let v = read_into(&mut self.r, &mut raw);
        Resp { raw, v }
    }

    pub fn call(&mut self, cmd: Vec<Vec<u8>>) -> Resp {
        self.send(&[cmd]);
        self.read()
    }
}

fn read_into(r: &mut BufReader<TcpStream>, raw: &mut Vec<u8>) -> V {
    let mut line = Vec::new();
    r.read_until(b'\n', &mut line).expect("read");
    assert!(line.ends_with(b"\r\n"), "truncated reply {line:?}");
    raw.extend_from_slice(&line);
    let body = &line[1..line.len() - 2];
    let num = || -> i64 { std::str::from_utf8(body).unwrap().parse().unwrap() };
    match line[0] {
        b'+' => V::Simple(body.to_vec()),
        b'-' => V::Error(body.to_vec()),
        b':' => V::Int(num()),
        b'$' => {
            let n = num();
            if n < 0 {
                return V::Bulk(None);
            }
            let mut buf = vec![0u8; n as usize + 2];
            r.read_exact(&mut buf).expect("read");
            raw.extend_from_slice(&buf);
            buf.truncate(n as usize);
            V::Bulk(Some(buf))
        }
        b'*' => {
            let n = num();
            if n < 0 {
                return V::Array(None);
            }
            let mut items = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let mut sub = Vec::new();
                let v = read_into(r, &mut sub);
                raw.extend_from_slice(&sub);
                items.push(Resp { raw: sub, v });
            }
            V::Array(Some(items))
        }
        t => panic!("unexpected RESP type {:?} in {line:?}", t as char),
    }
}

pub fn argv<S: AsRef<[u8]>>(parts: &[S]) -> Vec<Vec<u8>> {
    parts.iter().map(|p| p.as_ref().to_vec()).collect()
}

// ----------------------------------------------------------- family ----

/// How a family's expiry times are compared.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Ttl {
    /// Absolute instants computed from `NOW` (or no expiry at all):
    /// equal to the millisecond.
    Exact,
    /// Counted from the server clock (RATE: the module sets the instant
    /// it computed from its clock, a script `PX` from the server's):
    /// equal within the wall time of the step, and keys are made
    /// persistent after each comparison (the clock would otherwise
    /// expire them at slightly different times on each server).
    Clock,
}

/// One call of a module command, and its twin.
#[derive(Clone, Debug)]
pub struct Call {
    /// The module command, e.g. `RATE.CHECK`.
    pub cmd: &'static str,
    /// The keys: numkeys for EVALSHA/FCALL.
    pub keys: Vec<String>,
    /// The arguments after the keys.
    pub args: Vec<Vec<u8>>,
    /// The module takes numkeys as its first argument (RATE.MULTI).
    pub numkeys_arg: bool,
    /// Replies depend only on the arguments and the data (NOW given, no
    /// randomness): compared byte for byte. Otherwise see
    /// [`Family::check_unpinned`].
    pub pinned: bool,
    /// The module may block (BLOCK): sent inside MULTI, where it answers
    /// at once as the twin does.
    pub may_block: bool,
    /// Arguments only the twin takes, before the command's own (LIKE's
    /// twins take the module's configs first).
    pub twin_prefix: Vec<Vec<u8>>,
}

impl Call {
    pub fn new(cmd: &'static str, key: &str, args: &[&str]) -> Call {
        Call {
            cmd,
            keys: vec![key.to_string()],
            args: args.iter().map(|a| a.as_bytes().to_vec()).collect(),
            numkeys_arg: false,
            pinned: true,
            may_block: false,
            twin_prefix: vec![],
        }
    }

    pub fn owned(cmd: &'static str, key: &str, args: Vec<String>) -> Call {
        Call {
            cmd,
            keys: vec![key.to_string()],
            args: args.into_iter().map(String::into_bytes).collect(),
            numkeys_arg: false,
            pinned: true,
            may_block: false,
            twin_prefix: vec![],
        }
    }

    /// The command with no key and no argument: the module's arity error,
    /// and the twin's when numkeys is 0.
    pub fn no_key(cmd: &'static str) -> Call {
        Call {
            cmd,
            keys: vec![],
            args: vec![],
            numkeys_arg: cmd == "RATE.MULTI",
            pinned: true,
            may_block: false,
            twin_prefix: vec![],
        }
    }

    pub fn unpinned(mut self) -> Call {
        self.pinned = false;
        self
    }

    /// Gives the twin `prefix` before the command's arguments.
    pub fn with_twin_prefix(mut self, prefix: &[&str]) -> Call {
        self.twin_prefix = prefix.iter().map(|a| a.as_bytes().to_vec()).collect();
        self
    }

    pub fn blocking(mut self) -> Call {
        self.may_block = true;
        self
    }

    /// The module's command line.
    pub fn module_argv(&self) -> Vec<Vec<u8>> {
        let mut v = vec![self.cmd.as_bytes().to_vec()];
        if self.numkeys_arg {
            v.push(self.keys.len().to_string().into_bytes());
        }
        v.extend(self.keys.iter().map(|k| k.as_bytes().to_vec()));
        v.extend(self.args.iter().cloned());
        v
    }

    /// The twin's command line after `EVALSHA sha` or `FCALL function`.
    fn twin_tail(&self) -> Vec<Vec<u8>> {
        let mut v = vec![self.keys.len().to_string().into_bytes()];
        v.extend(self.keys.iter().map(|k| k.as_bytes().to_vec()));
        v.extend(self.twin_prefix.iter().cloned());
        v.extend(self.args.iter().cloned());
        v
    }
}

impl std::fmt::Display for Call {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let parts: Vec<String> = self
            .module_argv()
            .iter()
            .map(|a| {
                let s = String::from_utf8_lossy(a);
                if s.is_empty() || s.contains(|c: char| c.is_whitespace() || c.is_control()) {
                    format!("{s:?}")
                } else {
                    s.into_owned()
                }
            })
            .collect();
        write!(f, "{}", parts.join(" "))?;
        if !self.pinned {
            write!(f, "  (unpinned)")?;
        }
        Ok(())
    }
}

/// A key that faults are put in.
pub struct Target {
    pub key: String,
    /// Types this key must not hold: each gives a fault (the key replaced
    /// by a value of that type).
    pub wrong_types: Vec<&'static str>,
    /// Garbage of the right type: each a list of commands.
    pub garbage: Vec<Vec<Vec<String>>>,
}

/// One fault: the commands that make it, and a name for messages.
#[derive(Clone, Debug)]
pub struct Fault {
    pub key: String,
    pub name: String,
    pub cmds: Vec<Vec<String>>,
}

impl Target {
    /// Every fault of this key.
    pub fn faults(&self) -> Vec<Fault> {
        let mut out = Vec::new();
        for t in &self.wrong_types {
            let k = self.key.clone();
            let write: Vec<String> = match *t {
                "string" => vec!["SET".into(), k.clone(), "x".into()],
                "list" => vec!["RPUSH".into(), k.clone(), "x".into()],
                "set" => vec!["SADD".into(), k.clone(), "x".into()],
                "zset" => vec!["ZADD".into(), k.clone(), "1".into(), "x".into()],
                "hash" => vec!["HSET".into(), k.clone(), "f".into(), "x".into()],
                other => panic!("unknown type {other}"),
            };
            out.push(Fault {
                key: k.clone(),
                name: format!("{k} a {t}"),
                cmds: vec![vec!["DEL".into(), k.clone()], write],
            });
        }
        for (i, g) in self.garbage.iter().enumerate() {
            out.push(Fault {
                key: self.key.clone(),
                name: format!("{} garbage #{i} {:?}", self.key, g),
                cmds: g.clone(),
            });
        }
        out
    }
}

/// A family under test.
pub trait Family {
    /// The family, as in `lua-compat/generated/<name>/` and its commands' prefix.
    const NAME: &'static str;
    /// The random stream's seed in `make test` (`DIFF_SEED` overrides it).
    const SEED: u64;
    /// How expiry times compare.
    const TTL: Ttl;

    fn new() -> Self;
    /// The base keys of the random stream.
    fn bases(&self) -> Vec<String>;
    /// Every key of one base: the base and its derived keys.
    fn keys_of(&self, base: &str) -> Vec<String>;
    /// The keys of one base that faults go into.
    fn targets(&self, base: &str) -> Vec<Target>;
    /// The next call of the random stream.
    fn step(&mut self, rng: &mut StdRng) -> Call;
    /// Sees the reply every side gave to a call (receipts and the like).
    fn observe(&mut self, _call: &Call, _reply: &Resp) {}
    /// The fault sweep on fresh bases: calls that populate them, then the
    /// probes (one call of each command, at least), run after the faults.
    fn sweep(&self, bases: &[String]) -> (Vec<Call>, Vec<Call>);
    /// Pairs of faults on two bases are tried too (not only on two keys of
    /// one base): for a family whose commands take several bases
    /// (RATE.MULTI).
    fn pairs_across_bases(&self) -> bool {
        false
    }
    /// Compares the replies of a call that is not pinned (a clock or a
    /// random draw): by default the same shape, the same strings and
    /// errors, and integers within `slack_ms` of each other.
    fn check_unpinned(
        &self,
        _call: &Call,
        m: &Resp,
        t: &Resp,
        slack_ms: i64,
    ) -> Result<(), String> {
        near(m, t, slack_ms)
    }
}

/// The default comparison of unpinned replies.
pub fn near(m: &Resp, t: &Resp, slack: i64) -> Result<(), String> {
    match (&m.v, &t.v) {
        (V::Int(a), V::Int(b)) if (a - b).abs() <= slack => Ok(()),
        (V::Array(Some(a)), V::Array(Some(b))) if a.len() == b.len() => {
            for (x, y) in a.iter().zip(b) {
                near(x, y, slack)?;
            }
            Ok(())
        }
        _ if m.raw == t.raw => Ok(()),
        _ => Err(format!("{m} vs {t} (slack {slack} ms)")),
    }
}

// ---------------------------------------------------------- servers ----

/// Every key of a server: type, expiry (PEXPIRETIME) and content, read
/// inside the server in one go.
const DUMP: &str = r#"
local out = {}
local keys = redis.call('KEYS', '*')
for _, k in ipairs(keys) do
  local t = redis.call('TYPE', k).ok
  local body
  if t == 'string' then body = {redis.call('GET', k)}
  elseif t == 'hash' then body = redis.call('HGETALL', k)
  elseif t == 'zset' then body = redis.call('ZRANGE', k, 0, -1, 'WITHSCORES')
  elseif t == 'set' then body = redis.call('SMEMBERS', k)
  elseif t == 'list' then body = redis.call('LRANGE', k, 0, -1)
  else body = {'?'} end
  out[#out + 1] = {k, t, redis.call('PEXPIRETIME', k), body}
end
return out
"#;

/// One key as dumped: type, expiry, content (hash fields and set members
/// sorted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyState {
    pub ty: String,
    pub expire: i64,
    pub body: Vec<Vec<u8>>,
}

pub type Dump = BTreeMap<Vec<u8>, KeyState>;

fn parse_dump(r: &Resp) -> Dump {
    let mut out = Dump::new();
    assert!(!r.is_error(), "dump failed: {r}");
    for k in r.items() {
        let f = k.items();
        let name = f[0].bytes().unwrap().to_vec();
        let ty = String::from_utf8_lossy(f[1].bytes().unwrap()).into_owned();
        let expire = f[2].int().unwrap();
        let mut body: Vec<Vec<u8>> = f[3]
            .items()
            .iter()
            .map(|x| x.bytes().unwrap_or(b"").to_vec())
            .collect();
        match ty.as_str() {
            "hash" => {
                let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = body
                    .chunks(2)
                    .map(|p| (p[0].clone(), p[1].clone()))
                    .collect();
                pairs.sort();
                body = pairs.into_iter().flat_map(|(a, b)| [a, b]).collect();
            }
            "set" => body.sort(),
            _ => {}
        }
        out.insert(name, KeyState { ty, expire, body });
    }
    out
}

fn show_key(k: &[u8], s: Option<&KeyState>) -> String {
    let name = String::from_utf8_lossy(k);
    match s {
        None => format!("{name}: (none)"),
        Some(s) => {
            let body: Vec<String> = s
                .body
                .iter()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .collect();
            format!("{name}: {} expire={} {:?}", s.ty, s.expire, body)
        }
    }
}

/// A connection to one side that runs a family's commands as that side
/// does (the module's command, EVALSHA or FCALL) and anything else as is.
pub struct SideConn<'a> {
    c: Conn,
    runs: &'a Runs,
}

impl SideConn<'_> {
    /// Runs `argv`: a command of the family (one key, its arguments) the
    /// side's way, anything else as is.
    pub fn call(&mut self, argv: Vec<Vec<u8>>) -> Resp {
        let name = String::from_utf8_lossy(&argv[0]).to_ascii_uppercase();
        let is_family = name.contains('.') && !matches!(self.runs, Runs::Module);
        if !is_family {
            return self.c.call(argv);
        }
        let tail: Vec<Vec<u8>> = std::iter::once(b"1".to_vec())
            .chain(argv[1..].iter().cloned())
            .collect();
        let mut v = match self.runs {
            Runs::Scripts(shas) => vec![b"EVALSHA".to_vec(), shas[&name].clone()],
            _ => vec![
                b"FCALL".to_vec(),
                format!("hotpath_{}", name.to_ascii_lowercase().replace('.', "_")).into_bytes(),
            ],
        };
        v.extend(tail);
        self.c.call(v)
    }
}

/// How a side runs a command.
enum Runs {
    Module,
    Scripts(BTreeMap<String, Vec<u8>>),
    Library,
}

/// One of the three servers.
struct Side {
    name: &'static str,
    _srv: Server,
    c: Conn,
    runs: Runs,
}

impl Side {
    fn argv(&self, call: &Call) -> Vec<Vec<u8>> {
        match &self.runs {
            Runs::Module => call.module_argv(),
            Runs::Scripts(shas) => {
                let sha = shas
                    .get(call.cmd)
                    .unwrap_or_else(|| panic!("no script for {}", call.cmd));
                let mut v = vec![b"EVALSHA".to_vec(), sha.clone()];
                v.extend(call.twin_tail());
                v
            }
            Runs::Library => {
                let f = format!(
                    "hotpath_{}",
                    call.cmd.to_ascii_lowercase().replace('.', "_")
                );
                let mut v = vec![b"FCALL".to_vec(), f.into_bytes()];
                v.extend(call.twin_tail());
                v
            }
        }
    }

    /// Runs a call and dumps every key; returns the reply and the dump.
    ///
    /// `atomic`: in one MULTI/EXEC. `persist` (with `atomic`): then, in
    /// the same EXEC, reads the expiry of each of these keys and makes it
    /// persistent, before the dump. Commands inside EXEC see one cached
    /// instant for expiry, so no key expires between the call and its
    /// comparison (a script does not: it reads expiry at its own start, so
    /// the dump alone could already miss a key set to live 1 ms).
    fn exec(&mut self, call: &Call, atomic: bool, persist: Option<&[String]>) -> (Resp, Dump) {
        let cmd = self.argv(call);
        let dump = argv(&["EVAL", DUMP, "0"]);
        if !atomic {
            self.c.send(&[cmd, dump]);
            let reply = self.c.read();
            return (reply, parse_dump(&self.c.read()));
        }
        let keys = persist.unwrap_or(&[]);
        let mut cmds = vec![argv(&["MULTI"]), cmd];
        for k in keys {
            cmds.push(argv(&["PEXPIRETIME", k.as_str()]));
            cmds.push(argv(&["PERSIST", k.as_str()]));
        }
        cmds.push(dump.clone());
        cmds.push(argv(&["EXEC"]));
        self.c.send(&cmds);
        let ok = self.c.read();
        assert_eq!(ok.raw, b"+OK\r\n", "{}: MULTI {ok}", self.name);
        let queued = self.c.read();
        for _ in 0..2 * keys.len() + 1 {
            let q = self.c.read();
            assert_eq!(q.raw, b"+QUEUED\r\n", "{}: {q}", self.name);
        }
        let exec = self.c.read();
        if queued.is_error() {
            // Refused when queued (the module's arity check): EXEC aborts,
            // nothing ran; the dump runs alone.
            assert!(exec.is_error(), "{}: {exec}", self.name);
            let d = self.c.call(dump);
            return (queued, parse_dump(&d));
        }
        let items = exec.items();
        assert_eq!(
            items.len(),
            2 * keys.len() + 2,
            "{}: EXEC {exec}",
            self.name
        );
        let mut d = parse_dump(&items[items.len() - 1]);
        for (i, k) in keys.iter().enumerate() {
            if let Some(st) = d.get_mut(k.as_bytes()) {
                st.expire = items[1 + 2 * i].int().unwrap();
            }
        }
        (items[0].clone(), d)
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The module server and the two servers of the twins.
pub struct Trio<F: Family> {
    sides: Vec<Side>,
    _f: std::marker::PhantomData<F>,
}

impl<F: Family> Trio<F> {
    pub fn start() -> Trio<F> {
        let m = Server::start();
        let s = Server::start_bare(&[]);
        let l = Server::start_bare(&[]);
        let mut sc = Conn::open(s.port);
        let mut shas = BTreeMap::new();
        let dir = root().join("lua-compat/generated").join(F::NAME);
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().map(|x| x == "lua").unwrap_or(false) {
                let stem = p.file_stem().unwrap().to_string_lossy().to_uppercase();
                let cmd = format!("{}.{}", F::NAME.to_uppercase(), stem);
                let src = std::fs::read(&p).unwrap();
                let sha = sc.call(vec![b"SCRIPT".to_vec(), b"LOAD".to_vec(), src]);
                assert!(!sha.is_error(), "{}: {sha}", p.display());
                shas.insert(cmd, sha.bytes().unwrap().to_vec());
            }
        }
        let mut lc = Conn::open(l.port);
        let lib = std::fs::read(root().join("lua-compat/generated/hotpath.lua")).unwrap();
        let r = lc.call(vec![
            b"FUNCTION".to_vec(),
            b"LOAD".to_vec(),
            b"REPLACE".to_vec(),
            lib,
        ]);
        assert_eq!(r.bytes(), Some(&b"hotpath"[..]), "FUNCTION LOAD: {r}");
        let mc = Conn::open(m.port);
        Trio {
            sides: vec![
                Side {
                    name: "module",
                    _srv: m,
                    c: mc,
                    runs: Runs::Module,
                },
                Side {
                    name: "scripts",
                    _srv: s,
                    c: sc,
                    runs: Runs::Scripts(shas),
                },
                Side {
                    name: "library",
                    _srv: l,
                    c: lc,
                    runs: Runs::Library,
                },
            ],
            _f: std::marker::PhantomData,
        }
    }

    /// Sends the same raw commands to every server; their replies must
    /// agree too (an edit is plain Redis).
    pub fn edit(&mut self, cmds: &[Vec<String>]) -> Result<(), String> {
        for c in cmds {
            let a = argv(c);
            let replies: Vec<Resp> = self.sides.iter_mut().map(|s| s.c.call(a.clone())).collect();
            if replies.iter().any(|r| r.raw != replies[0].raw) {
                return Err(format!(
                    "edit {c:?}: {} / {} / {}",
                    replies[0], replies[1], replies[2]
                ));
            }
        }
        Ok(())
    }

    /// Runs `f` on each server, the module's (its commands) and the
    /// twins' (the same commands rewritten as EVALSHA or FCALL when they
    /// are the family's); returns each side's name and result.
    pub fn on_every_side<T>(
        &self,
        mut f: impl FnMut(&mut SideConn) -> T,
    ) -> Vec<(&'static str, T)> {
        self.sides
            .iter()
            .map(|s| {
                let mut sc = SideConn {
                    c: Conn::open(s._srv.port),
                    runs: &s.runs,
                };
                (s.name, f(&mut sc))
            })
            .collect()
    }

    pub fn flushall(&mut self) {
        for s in &mut self.sides {
            let r = s.c.call(argv(&["FLUSHALL"]));
            assert!(!r.is_error(), "{r}");
        }
    }

    /// Runs one call on the three servers and compares; returns the
    /// module's reply.
    pub fn step(&mut self, fam: &F, call: &Call) -> Result<Resp, String> {
        let frozen = F::TTL == Ttl::Clock;
        let atomic = frozen || call.may_block;
        let t0 = Instant::now();
        let keys: Vec<String> = fam.bases().iter().flat_map(|b| fam.keys_of(b)).collect();
        let persist = frozen.then_some(keys.as_slice());
        let out: Vec<(Resp, Dump)> = self
            .sides
            .iter_mut()
            .map(|s| s.exec(call, atomic, persist))
            .collect();
        // The wall time of the three, rounded up, plus a millisecond for
        // each side's own rounding.
        let slack = t0.elapsed().as_millis() as i64 + 2;
        let m = &out[0].0;
        for (i, (r, _)) in out.iter().enumerate().skip(1) {
            let side = self.sides[i].name;
            if call.pinned {
                if r.raw != m.raw {
                    return Err(format!("reply differs: module {m}, {side} {r}"));
                }
            } else {
                fam.check_unpinned(call, m, r, slack)
                    .map_err(|e| format!("reply differs (unpinned), module vs {side}: {e}"))?;
            }
        }
        let dumps: Vec<Dump> = out.iter().map(|(_, d)| d.clone()).collect();
        if call.pinned {
            for i in 1..3 {
                compare_dumps(&dumps[0], &dumps[i], F::TTL, slack).map_err(|e| {
                    format!(
                        "data differs, module vs {} (replies: {m} / {}): {e}",
                        self.sides[i].name, out[i].0
                    )
                })?;
            }
        } else {
            // Same keys and types; then the module's data goes to the
            // twins, so that all three continue from one state.
            for i in 1..3 {
                let a: Vec<(&Vec<u8>, &str)> =
                    dumps[0].iter().map(|(k, s)| (k, s.ty.as_str())).collect();
                let b: Vec<(&Vec<u8>, &str)> =
                    dumps[i].iter().map(|(k, s)| (k, s.ty.as_str())).collect();
                if a != b {
                    return Err(format!(
                        "keys differ (unpinned), module vs {}: {a:?} / {b:?}",
                        self.sides[i].name
                    ));
                }
            }
            self.copy_module_data(&dumps, frozen)?;
        }
        Ok(m.clone())
    }

    /// Copies every key that differs from the module's server to the two
    /// others (DUMP/RESTORE with the same absolute expiry), and removes
    /// the keys the module does not have.
    /// With `persisted`, the dump made every key persistent after reading
    /// its expiry: the copies are persistent too.
    fn copy_module_data(&mut self, dumps: &[Dump], persisted: bool) -> Result<(), String> {
        let (first, rest) = self.sides.split_at_mut(1);
        let module = &mut first[0];
        for (i, side) in rest.iter_mut().enumerate() {
            let theirs = &dumps[i + 1];
            for (k, st) in &dumps[0] {
                if theirs.get(k) == Some(st) {
                    continue;
                }
                let payload = module.c.call(vec![b"DUMP".to_vec(), k.clone()]);
                let Some(p) = payload.bytes() else {
                    return Err(format!("DUMP {}: {payload}", String::from_utf8_lossy(k)));
                };
                let ttl = if st.expire > 0 && !persisted {
                    st.expire
                } else {
                    0
                };
                let mut cmd = vec![
                    b"RESTORE".to_vec(),
                    k.clone(),
                    ttl.to_string().into_bytes(),
                    p.to_vec(),
                    b"REPLACE".to_vec(),
                ];
                if ttl > 0 {
                    cmd.push(b"ABSTTL".to_vec());
                }
                let r = side.c.call(cmd);
                if r.is_error() {
                    return Err(format!("RESTORE: {r}"));
                }
            }
            for k in theirs.keys() {
                if !dumps[0].contains_key(k) {
                    side.c.call(vec![b"DEL".to_vec(), k.clone()]);
                }
            }
        }
        Ok(())
    }
}

fn compare_dumps(m: &Dump, t: &Dump, ttl: Ttl, slack: i64) -> Result<(), String> {
    let mut diffs = Vec::new();
    let names: std::collections::BTreeSet<&Vec<u8>> = m.keys().chain(t.keys()).collect();
    for k in names {
        let (a, b) = (m.get(k), t.get(k));
        let same = match (a, b) {
            (Some(a), Some(b)) => {
                let expire_ok = match ttl {
                    Ttl::Exact => a.expire == b.expire,
                    Ttl::Clock => {
                        (a.expire < 0 && a.expire == b.expire)
                            || (a.expire >= 0
                                && b.expire >= 0
                                && (a.expire - b.expire).abs() <= slack)
                    }
                };
                a.ty == b.ty && a.body == b.body && expire_ok
            }
            _ => false,
        };
        if !same {
            diffs.push(format!(
                "\n    module: {}\n    twin:   {}",
                show_key(k, a),
                show_key(k, b)
            ));
        }
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.concat())
    }
}

// ----------------------------------------------------------- drivers ----

/// The seed of a run: `DIFF_SEED` when set, else `default`.
pub fn seed_or(default: u64) -> u64 {
    std::env::var("DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn trace_on() -> bool {
    std::env::var("DIFF_TRACE").is_ok()
}

/// The last steps, for a failure message.
struct Trace(VecDeque<String>);

impl Trace {
    fn push(&mut self, s: String) {
        if trace_on() {
            eprintln!("{s}");
        }
        if self.0.len() == 40 {
            self.0.pop_front();
        }
        self.0.push_back(s);
    }

    fn text(&self) -> String {
        self.0.iter().map(|s| format!("  {s}\n")).collect()
    }
}

/// What a run did: calls compared (pinned and not), faults put in,
/// error replies seen.
#[derive(Default, Debug)]
pub struct Stats {
    pub calls: usize,
    pub unpinned: usize,
    pub faults: usize,
    pub errors: usize,
}

/// A seeded random stream of `calls` calls, with faults: now and then one
/// fault or two (on different keys of one base) go in, and the faulted
/// bases are cleared a few steps later, so that broken data does not take
/// over the stream.
pub fn random<F: Family>(seed: u64, calls: usize) -> Stats {
    let mut trio = Trio::<F>::start();
    let mut fam = F::new();
    let mut rng = StdRng::seed_from_u64(seed);
    let mut trace = Trace(VecDeque::new());
    let mut stats = Stats::default();
    let mut faulted: Vec<String> = Vec::new();
    let fail = |step: usize, msg: String, trace: &Trace| -> ! {
        panic!(
            "differential {} seed {seed}, step {step}: {msg}\nlast steps:\n{}rerun: DIFF_SEED={seed} DIFF_CALLS={calls} cargo test --release --test integration differential::{}_random_calls (DIFF_TRACE=1 prints every step)",
            F::NAME,
            trace.text(),
            F::NAME
        )
    };
    let mut step = 0;
    while stats.calls < calls {
        step += 1;
        if !faulted.is_empty() && rng.gen_bool(0.2) {
            let base = faulted.remove(rng.gen_range(0..faulted.len()));
            let mut del = vec!["DEL".to_string()];
            del.extend(fam.keys_of(&base));
            trace.push(format!("repair {del:?}"));
            if let Err(e) = trio.edit(&[del]) {
                fail(step, e, &trace);
            }
        }
        if rng.gen_bool(0.03) {
            let bases = fam.bases();
            let base = bases[rng.gen_range(0..bases.len())].clone();
            let targets = fam.targets(&base);
            let n = if targets.len() > 1 && rng.gen_bool(0.4) {
                2
            } else {
                1
            };
            let mut picked: Vec<usize> = Vec::new();
            while picked.len() < n {
                let t = rng.gen_range(0..targets.len());
                if !picked.contains(&t) {
                    picked.push(t);
                }
            }
            for t in picked {
                let faults = targets[t].faults();
                let f = &faults[rng.gen_range(0..faults.len())];
                trace.push(format!("fault: {}", f.name));
                if let Err(e) = trio.edit(&f.cmds) {
                    fail(step, e, &trace);
                }
                stats.faults += 1;
            }
            faulted.push(base);
        }
        let call = fam.step(&mut rng);
        let line = format!("{call}");
        match trio.step(&fam, &call) {
            Ok(reply) => {
                trace.push(format!("{line}  ->  {reply}"));
                stats.calls += 1;
                stats.unpinned += usize::from(!call.pinned);
                stats.errors += usize::from(reply.is_error());
                fam.observe(&call, &reply);
            }
            Err(e) => {
                trace.push(line);
                fail(step, e, &trace)
            }
        }
    }
    stats
}

/// Every single fault, and every pair of faults on two different keys,
/// of two fresh bases: for each, the setup calls, the fault(s), then every
/// probe call, all compared.
pub fn sweep<F: Family>() -> Stats {
    let mut trio = Trio::<F>::start();
    let fam = F::new();
    let bases: Vec<String> = fam.bases().into_iter().take(2).collect();
    let (setup, probes) = fam.sweep(&bases);
    // Each fault with the base it belongs to.
    let mut faults: Vec<(usize, Fault)> = Vec::new();
    for (i, b) in bases.iter().enumerate() {
        for t in fam.targets(b) {
            faults.extend(t.faults().into_iter().map(|f| (i, f)));
        }
    }
    let mut combos: Vec<Vec<&Fault>> = faults.iter().map(|(_, f)| vec![f]).collect();
    for (i, (ba, a)) in faults.iter().enumerate() {
        for (bb, b) in &faults[i + 1..] {
            if a.key != b.key && (ba == bb || fam.pairs_across_bases()) {
                combos.push(vec![a, b]);
            }
        }
    }
    let mut stats = Stats::default();
    let mut trace = Trace(VecDeque::new());
    for (n, combo) in combos.iter().enumerate() {
        trio.flushall();
        trace.0.clear();
        let names: Vec<&str> = combo.iter().map(|f| f.name.as_str()).collect();
        let fail = |msg: String, trace: &Trace| -> ! {
            panic!(
                "differential sweep {} case {n} ({names:?}): {msg}\nsteps:\n{}",
                F::NAME,
                trace.text()
            )
        };
        for call in &setup {
            let r = trio.step(&fam, call).unwrap_or_else(|e| fail(e, &trace));
            trace.push(format!("{call}  ->  {r}"));
        }
        for f in combo {
            trace.push(format!("fault: {}", f.name));
            trio.edit(&f.cmds).unwrap_or_else(|e| fail(e, &trace));
            stats.faults += 1;
        }
        for call in &probes {
            let r = trio.step(&fam, call).unwrap_or_else(|e| {
                trace.push(format!("{call}"));
                fail(e, &trace)
            });
            trace.push(format!("{call}  ->  {r}"));
            stats.calls += 1;
            stats.errors += usize::from(r.is_error());
        }
    }
    stats
}

/// Picks one of a list.
pub fn pick<'a, T>(rng: &mut StdRng, xs: &'a [T]) -> &'a T {
    &xs[rng.gen_range(0..xs.len())]
}

pub fn s<T: ToString>(v: T) -> String {
    v.to_string()
}
