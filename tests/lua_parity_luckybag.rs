//! LUCKYBAG module vs its Lua twins: random operation sequences run
//! through the module (base `m{…}`) and the scripts (base `l{…}`) must give
//! identical replies and identical data.
//!
//! Scores are a keyed function of the bag's seed and the user: after a
//! CREATE the test copies the module's seed (drawn from the OS) onto the
//! twin's bag, and from then on everything — every score, which the twin
//! computes with `redis.sha1hex`, eligibility, counts, RESULT states,
//! DRAW's winners and their order — must match exactly.

use crate::common;

use std::collections::HashMap;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::*;

const USERS: [&str; 16] = [
    "1",
    "2",
    "3",
    "4",
    "5",
    "6",
    "7",
    "12",
    "-3",
    "0",
    "alice",
    "bob",
    "007",
    "",
    "用户",
    "9223372036854775807",
];

/// The module's bag `m{tag}` and the twins' bag `l{tag}` on one server,
/// the family's twins loaded through the parity harness
/// ([`Twins::here`]: EVALSHA or FCALL, as [`twins_via`] says).
struct Sides {
    c: Connection,
    twins: Twins,
    tag: String,
    m: String,
    l: String,
}

impl Sides {
    fn new(s: &Server, tag: u32) -> Sides {
        let mut c = s.conn();
        let twins = Twins::here(&mut c, "luckybag");
        let tag = tag.to_string();
        let (m, l) = common::twins::mirror(&tag);
        Sides {
            c,
            twins,
            tag,
            m,
            l,
        }
    }

    /// Runs one command both ways; asserts identical replies (error lines
    /// name the key: the module's base is read as the twin's).
    fn both(&mut self, cmd: &'static str, args: &[&str]) -> String {
        let name = format!("LUCKYBAG.{}", cmd.to_uppercase());
        let ours = self
            .twins
            .assert_both(&mut self.c, cmd, &name, &[&self.tag], args);
        if cmd == "create" {
            let (m, l) = (self.m.clone(), self.l.clone());
            sync_seed(&mut self.c, &mut None, &m, &l);
        }
        ours
    }

    fn shards(&mut self) -> u64 {
        let m = self.m.clone();
        match cmd(&mut self.c, &["HGET", &format!("{m}:meta"), "shards"]) {
            Ok(Value::BulkString(b)) => String::from_utf8_lossy(&b).parse().unwrap_or(1),
            _ => 1,
        }
    }

    /// Asserts that on each side every key of the bag expires at the very
    /// instant `B:meta` does (both set it once, from that instant).
    fn assert_one_expiry(&mut self, what: &str) {
        for base in [self.m.clone(), self.l.clone()] {
            let at = int(&mut self.c, &["PEXPIRETIME", &format!("{base}:meta")]);
            if at < 0 {
                continue;
            }
            let ks: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{base}:*"))
                .query(&mut self.c)
                .unwrap();
            for k in ks {
                assert_eq!(
                    int(&mut self.c, &["PEXPIRETIME", &k]),
                    at,
                    "{k} after {what}"
                );
            }
        }
    }

    fn assert_same_data(&mut self, what: &str) {
        let (m, l) = (self.m.clone(), self.l.clone());
        let ours: Vec<String> = dump_keys(&mut self.c, &format!("{m}*"))
            .into_iter()
            .map(|k| k.replacen(&m, &l, 1))
            .collect();
        let twin = dump_keys(&mut self.c, &format!("{l}*"));
        assert_eq!(ours, twin, "data differs after {what}");
    }

    /// Runs a plain Redis command on both bases' key `suffix`.
    fn raw_both(&mut self, args: &[&str], suffix: &str) {
        for base in [self.m.clone(), self.l.clone()] {
            let k = format!("{base}{suffix}");
            let mut a: Vec<&str> = vec![args[0], &k];
            a.extend_from_slice(&args[1..]);
            run(&mut self.c, &a);
        }
    }
}

/// Copies the seed of the module's bag `m` (on `c`) onto the twin's bag
/// `l` (on `lc`, or on `c` too), when both exist: the module draws its
/// seed from the OS, the twin from the server's clock.
fn sync_seed(c: &mut Connection, lc: &mut Option<&mut Connection>, m: &str, l: &str) {
    let Ok(Value::BulkString(seed)) = cmd(c, &["HGET", &format!("{m}:meta"), "seed"]) else {
        return;
    };
    let seed = String::from_utf8(seed).unwrap();
    let lc: &mut Connection = match lc {
        Some(x) => x,
        None => c,
    };
    let lm = format!("{l}:meta");
    if int(lc, &["EXISTS", &lm]) == 1 {
        // The twin drew a seed of its own: 32 hex digits.
        let Ok(Value::BulkString(own)) = cmd(lc, &["HGET", &lm, "seed"]) else {
            panic!("the twin's bag {l} has no seed");
        };
        assert_eq!(own.len(), 32, "{own:?}");
        run(lc, &["HSET", &lm, "seed", &seed]);
    }
}

fn create_args(rng: &mut StdRng) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    let pick = |rng: &mut StdRng, xs: &[&str]| xs[rng.gen_range(0..xs.len())].to_string();
    a.push(pick(
        rng,
        &["WINNERS", "winners", "WINNERS", "WINNERS", "SHARDS"],
    ));
    a.push(pick(rng, &["1", "2", "3", "5", "3", "0", "x", "100001"]));
    if rng.gen_bool(0.7) {
        a.push("SHARDS".into());
        a.push(pick(rng, &["1", "2", "4", "4", "3", "2048"]));
    }
    // Pooling must not depend on the (different) random scores.
    match rng.gen_range(0..4) {
        0 => {}
        1 => a.extend([
            "POOLCAP".into(),
            pick(rng, &["0", "3", "5"]),
            "HIGHSCORE".into(),
            pick(rng, &["0", "1", "1.0", "0.0", ".0"]),
        ]),
        2 => a.extend([
            "POOLCAP".into(),
            "1000".into(),
            "HIGHSCORE".into(),
            pick(rng, &["0.5", ".99", "1.5", "-1", "abc"]),
        ]),
        _ => a.extend(["POOLCAP".into(), pick(rng, &["-1", "x", "1000"])]),
    }
    if rng.gen_bool(0.4) {
        a.push("RESTORE".into());
        a.push(pick(rng, &["YES", "NO", "no", "maybe"]));
    }
    if rng.gen_bool(0.3) {
        a.push("TTL".into());
        a.push(pick(rng, &["100", "1000", "0", "x"]));
    }
    if rng.gen_bool(0.05) {
        a.push("EXTRA".into());
    }
    a
}

/// Runs a random sequence; returns how often each kind of step ran.
fn sequence(seed: u64, steps: usize) -> HashMap<String, usize> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let s = Server::start();
    let mut t = Sides::new(&s, seed as u32);
    let mut rng = StdRng::seed_from_u64(seed);
    let mut broken: Option<String> = None;
    for step in 0..steps {
        let user = USERS[rng.gen_range(0..USERS.len())];
        let roll = rng.gen_range(0..100);
        let what = match roll {
            0..=7 => {
                let a = create_args(&mut rng);
                let a: Vec<&str> = a.iter().map(String::as_str).collect();
                t.both("create", &a);
                format!("create {a:?}")
            }
            8..=39 => {
                let extra: &[&str] = match rng.gen_range(0..10) {
                    0..=5 => &[],
                    6 => &["TASK", "DONE"],
                    7 | 8 => &["task", "pending"],
                    _ => [
                        &["TASK"][..],
                        &["TASK", "later"],
                        &["FOO", "1"],
                        &["SCORE", "5"],
                    ][rng.gen_range(0..4)],
                };
                let mut a = vec![user];
                a.extend_from_slice(extra);
                t.both("join", &a);
                format!("join {a:?}")
            }
            40..=49 => {
                t.both("task", &[user]);
                format!("task {user}")
            }
            50..=61 => {
                t.both("leave", &[user]);
                format!("leave {user}")
            }
            62..=71 => {
                t.both("enter", &[user]);
                format!("enter {user}")
            }
            72..=77 => {
                t.both("result", &[user]);
                format!("result {user}")
            }
            78..=80 => {
                t.both("info", &[]);
                "info".into()
            }
            81..=84 => {
                // Force ties at the top, on both sides alike.
                for s in 0..t.shards() {
                    let k = format!(":cand:{s}");
                    t.raw_both(&["ZADD", "XX", "0.999999", user], &k);
                }
                format!("tie {user}")
            }
            85..=88 => {
                t.both("draw", &[]);
                t.both("draw", &[]);
                format!("draw at step {step}")
            }
            89 => {
                // Start a new round: drop both bags.
                for base in [t.m.clone(), t.l.clone()] {
                    let ks: Vec<String> = redis::cmd("KEYS")
                        .arg(format!("{base}*"))
                        .query(&mut t.c)
                        .unwrap();
                    for k in ks {
                        run(&mut t.c, &["DEL", &k]);
                    }
                }
                broken = None;
                "reset".into()
            }
            90..=92 => {
                // A derived key of the wrong type, on both sides.
                let suffix =
                    [":winners", ":count", ":cand:0", ":joined:1", ":meta"][rng.gen_range(0..5)];
                let mk = format!("{}{suffix}", t.m);
                if broken.is_none() && int(&mut t.c, &["EXISTS", &mk]) == 0 {
                    t.raw_both(&["SET", "x"], suffix);
                    broken = Some(suffix.to_string());
                }
                format!("break {suffix}")
            }
            93..=95 => {
                if let Some(suffix) = broken.take() {
                    t.raw_both(&["DEL"], &suffix);
                }
                "fix".into()
            }
            _ => {
                // Arity errors.
                let (c, a): (&'static str, &[&str]) = [
                    ("join", &[][..]),
                    ("task", &[]),
                    ("task", &["1", "2"]),
                    ("leave", &[]),
                    ("enter", &["1", "2"]),
                    ("draw", &["x"]),
                    ("result", &[]),
                    ("info", &["x"]),
                    ("create", &["WINNERS"]),
                ][rng.gen_range(0..9)];
                t.both(c, a);
                format!("arity {c} {a:?}")
            }
        };
        t.assert_same_data(&format!("step {step}: {what}"));
        if broken.is_none() {
            t.assert_one_expiry(&format!("step {step}: {what}"));
        }
        *seen
            .entry(what.split([' ', '[']).next().unwrap_or("").to_string())
            .or_default() += 1;
    }
    seen
}

fn random_sequences_match_the_lua_twins_once() {
    let mut seen: HashMap<String, usize> = HashMap::new();
    for seed in 1..=6 {
        for (k, n) in sequence(seed, 250) {
            *seen.entry(k).or_default() += n;
        }
    }
    for kind in [
        "create", "join", "task", "leave", "enter", "draw", "result", "info",
    ] {
        assert!(
            seen.get(kind).copied().unwrap_or(0) >= 10,
            "{kind} too rare: {seen:?}"
        );
    }
}

/// Hand-edited data: module and twins refuse the same corrupt values with
/// the same error, and write nothing.
fn twins_refuse_corrupt_data_alike_once() {
    let s = Server::start();
    let mut t = Sides::new(&s, 7);
    let edits: Vec<(Vec<&str>, &str, Vec<&str>)> = vec![
        (vec!["HSET", "shards", "12"], ":meta", vec!["join", "9"]),
        (vec!["HSET", "shards", "x"], ":meta", vec!["task", "3"]),
        (vec!["HDEL", "shards"], ":meta", vec!["leave", "5"]),
        (vec!["HSET", "shards", "3"], ":meta", vec!["draw"]),
        (vec!["HSET", "shards", "3"], ":meta", vec!["info"]),
        (vec!["HSET", "state", "half"], ":meta", vec!["result", "5"]),
        (vec!["HSET", "state", "half"], ":meta", vec!["enter", "6"]),
        (vec!["HSET", "poolcap", "-1"], ":meta", vec!["join", "9"]),
        (vec!["HSET", "highscore", "2"], ":meta", vec!["join", "9"]),
        (
            vec!["HSET", "restore", "maybe"],
            ":meta",
            vec!["enter", "6"],
        ),
        (vec!["HSET", "winners", "0"], ":meta", vec!["draw"]),
        (vec!["HSET", "winners", "1001"], ":meta", vec!["info"]),
        (vec!["HSET", "latepooled", "x"], ":meta", vec!["info"]),
        (vec!["HSET", "latepooled", "-2"], ":meta", vec!["join", "9"]),
        (
            vec!["HSET", "latepooled", "9223372036854775807"],
            ":meta",
            vec!["join", "9"],
        ),
        (vec!["SET", "x"], ":count", vec!["join", "9"]),
        (vec!["SET", "-3"], ":count", vec!["info"]),
        (
            vec!["SET", "9223372036854775807"],
            ":count",
            vec!["join", "9"],
        ),
        (vec!["HSET", "seed", "short"], ":meta", vec!["enter", "6"]),
        (vec!["HSET", "seed", "short"], ":meta", vec!["join", "9"]),
        (vec!["HDEL", "seed"], ":meta", vec!["task", "3"]),
        (vec!["HDEL", "seed"], ":meta", vec!["leave", "5"]),
    ];
    for (edit, suffix, command) in edits {
        t.fresh_bag();
        t.raw_both(&edit, suffix);
        t.assert_same_data("edit");
        let reply = t.both(command[0], &command[1..]);
        assert!(
            reply.starts_with("ERR<ERR luckybag: "),
            "{edit:?} {command:?}: {reply}"
        );
        t.assert_same_data(&format!("{edit:?} then {command:?}"));
    }
    // A repeated join past the cap stops once it finds the user, before
    // HIGHSCORE and `latepooled` (which only a first join reads): both
    // sides answer it and write nothing; a first join is refused alike.
    t.fresh_bag();
    t.raw_both(&["HSET", "highscore", "2", "latepooled", "x"], ":meta");
    t.assert_same_data("edit");
    assert_eq!(t.both("join", &["5"]), "[0, 1, 3]");
    assert!(t
        .both("join", &["9"])
        .starts_with("ERR<ERR luckybag: corrupt"));
    t.assert_same_data("repeated join past the cap");
}

impl Sides {
    /// Deletes both bags and makes them again: 4 shards, POOLCAP 3,
    /// HIGHSCORE 0; user 5 pooled, 6 out of the room, 3 pending.
    fn fresh_bag(&mut self) {
        let t = self;
        for base in [t.m.clone(), t.l.clone()] {
            let ks: Vec<String> = redis::cmd("KEYS")
                .arg(format!("{base}*"))
                .query(&mut t.c)
                .unwrap();
            for k in ks {
                run(&mut t.c, &["DEL", &k]);
            }
        }
        t.both(
            "create",
            &[
                "WINNERS",
                "2",
                "SHARDS",
                "4",
                "POOLCAP",
                "3",
                "HIGHSCORE",
                "0",
            ],
        );
        t.both("join", &["5"]);
        t.both("join", &["6"]);
        t.both("join", &["3", "TASK", "PENDING"]);
        t.both("leave", &["6"]);
    }
}

fn draw_matches_the_twin_on_identical_pools_once() {
    let s = Server::start();
    let mut t = Sides::new(&s, 99);
    t.both("create", &["WINNERS", "40", "SHARDS", "16"]);
    let mut rng = StdRng::seed_from_u64(5);
    for u in 0..500 {
        let u = if u % 3 == 0 {
            format!("user:{u}")
        } else {
            u.to_string()
        };
        t.both("join", &[&u]);
        // Few distinct scores: many ties across and within shards.
        let sc = format!("0.99999{}", rng.gen_range(0..4));
        t.raw_both(
            &["ZADD", "XX", &sc, &u],
            &format!(":cand:{}", shard_of_test(&u)),
        );
        if rng.gen_bool(0.1) {
            t.both("leave", &[&u]);
        }
    }
    t.assert_same_data("filling");
    let first = t.both("draw", &[]);
    assert!(first.starts_with("[user:"), "{first}");
    assert_eq!(t.both("draw", &[]), first);
    t.assert_same_data("draw");
}

fn shard_of_test(user: &str) -> u64 {
    match user.parse::<u64>() {
        Ok(v) => v & 15,
        Err(_) => {
            let mut h: u32 = 2_166_136_261;
            for &b in user.as_bytes() {
                h ^= u32::from(b);
                h = h.wrapping_mul(16_777_619);
            }
            u64::from(h) & 15
        }
    }
}

/// [`random_sequences_match_the_lua_twins_once`] through the EVALSHA scripts, then through the
/// Functions library (FCALL).
#[test]
fn random_sequences_match_the_lua_twins() {
    for via in [Via::Script, Via::Function] {
        twins_via(via, random_sequences_match_the_lua_twins_once);
    }
}

/// [`twins_refuse_corrupt_data_alike_once`] through the EVALSHA scripts, then through the
/// Functions library (FCALL).
#[test]
fn twins_refuse_corrupt_data_alike() {
    for via in [Via::Script, Via::Function] {
        twins_via(via, twins_refuse_corrupt_data_alike_once);
    }
}

/// [`draw_matches_the_twin_on_identical_pools_once`] through the EVALSHA scripts, then through the
/// Functions library (FCALL).
#[test]
fn draw_matches_the_twin_on_identical_pools() {
    for via in [Via::Script, Via::Function] {
        twins_via(via, draw_matches_the_twin_on_identical_pools_once);
    }
}

// ---- spread bags (docs/spread.md) ----
//
// Shard keys start with their own `{tag}`: the module writes in database
// 0 and the twins in database 1 of one server, under the same key names.
// After every command that draws a score the module's scores are copied
// onto the twin's pools (as above); the draw's lease times come from NOW.

use hotpath_client::routing;

struct SpreadSides {
    m: Connection,
    l: Connection,
    twins: Twins,
    seen: Vec<String>,
}

impl SpreadSides {
    fn new(s: &Server) -> SpreadSides {
        let m = s.conn();
        let mut l = s.conn();
        run(&mut l, &["SELECT", "1"]);
        let twins = Twins::here(&mut l, "luckybag");
        SpreadSides {
            m,
            l,
            twins,
            seen: Vec::new(),
        }
    }

    fn both(&mut self, cmd: &'static str, key: &str, args: &[String]) -> String {
        let mut margs: Vec<String> = vec![format!("LUCKYBAG.{}", cmd.to_uppercase()), key.into()];
        margs.extend(args.iter().cloned());
        let mrefs: Vec<&str> = margs.iter().map(String::as_str).collect();
        let ours = run(&mut self.m, &mrefs);
        let mut largs: Vec<String> = vec![key.into()];
        largs.extend(args.iter().cloned());
        let name = format!("LUCKYBAG.{cmd}");
        let theirs = show(&self.twins.call_keys(&mut self.l, &name, 1, &largs));
        assert_eq!(ours, theirs, "{cmd} {key} {args:?}");
        if cmd == "create" {
            sync_seed(&mut self.m, &mut Some(&mut self.l), key, key);
        }
        self.seen.push(ours.clone());
        ours
    }

    fn raw_both(&mut self, args: &[&str]) {
        run(&mut self.m, args);
        run(&mut self.l, args);
    }

    fn assert_same_data(&mut self, what: &str) {
        let mut sides = Vec::new();
        for c in [&mut self.m, &mut self.l] {
            let mut d = dump_keys(c, "*");
            let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
            keys.sort();
            for k in keys {
                let at = int(c, &["PEXPIRETIME", &k]);
                d.push(format!("{k} expires {at}"));
            }
            sides.push(d);
        }
        assert_eq!(sides[0], sides[1], "data differs after {what}");
    }
}

fn bag_shard_keys(base: &str, n: u32) -> Vec<String> {
    routing::shard_keys(base.as_bytes(), n)
        .into_iter()
        .map(|k| String::from_utf8(k).unwrap())
        .collect()
}

/// `[u1, s1, u2, s2]` shown by `show` → pairs.
fn pairs_of(reply: &str) -> Vec<(String, String)> {
    let inner = reply.trim_start_matches('[').trim_end_matches(']');
    if inner.is_empty() {
        return vec![];
    }
    let v: Vec<&str> = inner.split(", ").collect();
    v.chunks(2)
        .map(|c| (c[0].to_string(), c[1].to_string()))
        .collect()
}

fn spread_twins_match_the_module_once(seed: u64) {
    let s = Server::start();
    let mut t = SpreadSides::new(&s);
    let mut rng = StdRng::seed_from_u64(seed);
    let (base, n, w) = ("bag:{live}", 3u32, 5usize);
    let keys = bag_shard_keys(base, n);
    let sp = |n: u32| vec!["SPREAD".to_string(), n.to_string()];
    let poolcap = if seed.is_multiple_of(2) {
        "9223372036854775807"
    } else {
        "1000"
    };
    let rules = |extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["WINNERS", "5", "POOLCAP", poolcap, "HIGHSCORE", "0"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    // A single-slot bag under the base blocks shard 0; then the shards.
    t.both("create", base, &rules(&[]));
    let mut a = rules(&[]);
    a.extend(sp(n));
    t.both("create", &keys[0], &a);
    t.raw_both(&["DEL", &format!("{base}:meta")]);
    for k in &keys {
        t.both("create", k, &a);
        t.both("create", k, &a);
    }
    for (k, args) in [
        (keys[1].clone(), rules(&["SPREAD", "4"])),
        (keys[1].clone(), rules(&["RESTORE", "NO", "SPREAD", "3"])),
        (keys[1].clone(), rules(&[])),
        (keys[1].clone(), rules(&["SPREAD", "0"])),
        ("bag:other".into(), rules(&["SPREAD", "3"])),
        (
            bag_shard_keys("bag:x", 2)[1].clone(),
            rules(&["SHARDS", "4", "SPREAD", "2"]),
        ),
    ] {
        t.both("create", &k, &args);
    }
    t.assert_same_data("creation");
    // A lease that ends past 2^53: added exactly on the decimal text.
    let big = bag_shard_keys("bag:{big}", 1)[0].clone();
    t.both("create", &big, &rules(&["SPREAD", "1"]));
    let nows = ["4611686018427387903", "4611686018427387902"];
    for (tok, now) in ["t", "u"].iter().zip(nows) {
        let a: Vec<String> = [tok, "NOW", now, "SPREAD", "1"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        t.both("drawbegin", &big, &a);
    }
    t.assert_same_data("a lease past 2^53");

    // Integer ids (id mod n, digit by digit), names (FNV-1a) and the odd
    // ones: 64-bit bounds, negatives, leading zeros, non-ASCII bytes.
    let mut users: Vec<String> = (0..240)
        .map(|i| {
            if i % 4 == 3 {
                format!("user-{i}")
            } else {
                i.to_string()
            }
        })
        .collect();
    users.extend(
        USERS
            .iter()
            .filter(|u| !u.is_empty())
            .map(|u| u.to_string()),
    );
    let odd = [
        "-9223372036854775808",
        "9223372036854775808",
        "18446744073709551617",
        "-1",
    ];
    users.extend(odd.map(String::from));
    for step in 0..500 {
        let u = users[rng.gen_range(0..users.len())].clone();
        let own = routing::shard_of(u.as_bytes(), n) as usize;
        let key = match rng.gen_range(0..25) {
            0 => base.to_string(),
            1 => keys[(own + 1) % n as usize].clone(),
            2 => bag_shard_keys(base, 4)[1].clone(),
            _ => keys[own].clone(),
        };
        let spread = match rng.gen_range(0..12) {
            0 => vec![],
            1 => sp(2),
            _ => sp(n),
        };
        let (cmd, mut args): (&'static str, Vec<String>) = match rng.gen_range(0..100) {
            0..=49 => ("join", vec![u.clone()]),
            50..=54 => ("join", vec![u.clone(), "TASK".into(), "PENDING".into()]),
            55..=64 => ("task", vec![u.clone()]),
            65..=74 => ("leave", vec![u.clone()]),
            75..=84 => ("enter", vec![u.clone()]),
            85..=92 => ("result", vec![u.clone()]),
            93..=97 => ("info", vec![]),
            _ => ("draw", vec![]),
        };
        if cmd != "draw" {
            args.extend(spread);
        }
        t.both(cmd, &key, &args);
        if step % 100 == 99 {
            t.assert_same_data(&format!("step {step}"));
        }
    }
    t.assert_same_data("the joins");
    // The base key of the spread bag, used by single-slot commands.
    for (cmd, args) in [
        ("join", vec!["1".to_string()]),
        ("result", vec!["1".into()]),
        ("info", vec![]),
        ("draw", vec![]),
        ("task", vec!["1".into()]),
    ] {
        t.both(cmd, base, &args);
    }

    // Bad draw steps: no SPREAD, not shard 0, no draw yet, a bad token.
    for (cmd, k, args) in [
        ("drawbegin", &keys[0], vec!["t".to_string()]),
        (
            "drawbegin",
            &keys[1],
            vec!["t".into(), "SPREAD".into(), "3".into()],
        ),
        (
            "drawbegin",
            &keys[0],
            vec!["".into(), "SPREAD".into(), "3".into()],
        ),
        (
            "drawbegin",
            &keys[0],
            vec![
                "t".into(),
                "LEASE".into(),
                "0".into(),
                "SPREAD".into(),
                "3".into(),
            ],
        ),
        (
            "drawbegin",
            &keys[0],
            vec![
                "t".into(),
                "NOW".into(),
                "4611686018427387904".into(),
                "SPREAD".into(),
                "3".into(),
            ],
        ),
        (
            "commit",
            &keys[0],
            vec!["t".into(), "SPREAD".into(), "3".into()],
        ),
        (
            "commit",
            &keys[1],
            vec!["t".into(), "SPREAD".into(), "3".into()],
        ),
        ("publish", &keys[1], vec!["SPREAD".into(), "3".into()]),
        (
            "freeze",
            &keys[1],
            vec!["0".into(), "SPREAD".into(), "3".into()],
        ),
        ("freeze", &keys[1], vec!["2".into(), "SPREAD".into()]),
        ("freeze", &keys[1], vec!["2".into()]),
    ] {
        t.both(cmd, k, &args);
    }
    // NOW stops at 253402300799999, as in the other families.
    let now_past = |now: &str| -> Vec<String> {
        ["t", "NOW", now, "SPREAD", "3"]
            .iter()
            .map(|s| s.to_string())
            .collect()
    };
    assert_eq!(
        t.both("drawbegin", &keys[0], &now_past("253402300800000")),
        "ERR<ERR value is not an integer or out of range>"
    );
    t.assert_same_data("bad draw steps");
    let begin = |tok: &str, now: &str| -> Vec<String> {
        ["LEASE", "100", "NOW", now, "SPREAD", "3"]
            .iter()
            .map(|s| s.to_string())
            .fold(vec![tok.to_string()], |mut v, x| {
                v.push(x);
                v
            })
    };
    t.both("drawbegin", &keys[0], &begin("A", "1000"));
    t.both("drawbegin", &keys[0], &begin("B", "1099"));
    t.both("drawbegin", &keys[0], &begin("B", "1100"));
    // Freeze every shard (one of them twice, the second time deeper).
    let mut all: Vec<(String, String)> = Vec::new();
    for k in &keys {
        t.both("freeze", k, &["2".into(), "SPREAD".into(), "3".into()]);
        let r = t.both("freeze", k, &[w.to_string(), "SPREAD".into(), "3".into()]);
        all.extend(pairs_of(&r));
    }
    // Frozen shards are closed.
    let u0 = users
        .iter()
        .find(|u| routing::shard_of(u.as_bytes(), n) == 0)
        .unwrap()
        .clone();
    t.both("join", &keys[0], &[u0.clone(), "SPREAD".into(), "3".into()]);
    all.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| b.0.as_bytes().cmp(a.0.as_bytes()))
    });
    all.truncate(w);
    let part = |list: &[(String, String)], i: usize| -> Vec<String> {
        list.iter()
            .filter(|(u, _)| routing::shard_of(u.as_bytes(), n) as usize == i)
            .flat_map(|(u, s)| [u.clone(), s.clone()])
            .collect()
    };
    let last: Vec<String> = match all.last() {
        Some((u, s)) if all.len() == w => vec!["LAST".into(), u.clone(), s.clone()],
        _ => vec![],
    };
    // VERIFY of the true list, and of forged ones (the best left out; a
    // list without LAST; LAST out of order; a bad score).
    for (i, key) in keys.iter().enumerate() {
        let mut a = part(&all, i);
        a.extend(last.clone());
        a.push("VERIFY".into());
        a.extend(sp(n));
        t.both("publish", key, &a);
        let mut forged = part(&all[1..], i);
        forged.extend(last.clone());
        forged.extend(sp(n));
        t.both("publish", key, &forged);
        let mut short = part(&all, i);
        short.extend(sp(n));
        t.both("publish", key, &short);
        let mut bad = part(&all, i);
        bad.extend(["LAST".into(), "zzz".into(), "1.000000".into()]);
        bad.extend(sp(n));
        t.both("publish", key, &bad);
        t.both(
            "publish",
            key,
            &[
                "LAST".into(),
                "x".into(),
                "high".into(),
                "SPREAD".into(),
                "3".into(),
            ],
        );
    }
    t.assert_same_data("VERIFY");
    // Commit: the wrong token, bad lists, then the list (twice).
    let mut commit: Vec<String> = vec!["B".into()];
    commit.extend(all.iter().flat_map(|(u, s)| [u.clone(), s.clone()]));
    commit.extend(sp(n));
    let mut other = commit.clone();
    other[0] = "A".into();
    t.both("commit", &keys[0], &other);
    let mut reversed: Vec<String> = vec!["B".into()];
    reversed.extend(all.iter().rev().flat_map(|(u, s)| [u.clone(), s.clone()]));
    reversed.extend(sp(n));
    t.both("commit", &keys[0], &reversed);
    t.both("commit", &keys[0], &commit);
    t.both("commit", &keys[0], &commit);
    let mut fewer = commit.clone();
    fewer.drain(1..3);
    t.both("commit", &keys[0], &fewer);
    t.both("drawbegin", &keys[0], &begin("C", "5000"));
    t.assert_same_data("COMMIT");
    for (i, key) in keys.iter().enumerate() {
        let mut a = part(&all, i);
        a.extend(last.clone());
        a.extend(sp(n));
        t.both("publish", key, &a);
        t.both("publish", key, &a);
        t.both("info", key, &sp(n));
    }
    let winners: Vec<String> = all.iter().map(|(u, _)| u.clone()).collect();
    for u in users.iter().step_by(7).chain(&winners) {
        let k = &keys[routing::shard_of(u.as_bytes(), n) as usize];
        t.both("result", k, &[u.clone(), "SPREAD".into(), "3".into()]);
    }
    t.assert_same_data("PUBLISH");
    // A hand-deleted shard record: every step on that shard is an error.
    let meta = format!("{}:meta", keys[2]);
    t.raw_both(&["RENAME", &meta, "saved"]);
    for (cmd, args) in [
        ("info", sp(n)),
        ("freeze", vec!["2".into(), "SPREAD".into(), "3".into()]),
        ("publish", sp(n)),
        ("join", vec!["2".into(), "SPREAD".into(), "3".into()]),
        ("result", vec!["2".into(), "SPREAD".into(), "3".into()]),
    ] {
        t.both(cmd, &keys[2], &args);
    }
    t.raw_both(&["RENAME", "saved", &meta]);
    // A missing shard: a shard key of another count.
    let k4 = bag_shard_keys(base, 4)[1].clone();
    t.both("info", &k4, &sp(4));
    t.both("freeze", &k4, &["2".into(), "SPREAD".into(), "4".into()]);
    t.assert_same_data("the end");
    for want in [
        "wrong shard",
        "shard counts disagree",
        "does not exist",
        "corrupt data in",
        "is spread over",
        "is not a shard key",
        "not the true top",
        "draw in progress",
        "bag is closed",
        "WON",
        "LOST",
        "[drawn, 5,",
        "is a single-slot bag already",
    ] {
        assert!(
            t.seen.iter().any(|r| r.contains(want)),
            "no reply with {want:?}"
        );
    }
}

/// The spread forms of LUCKYBAG (CREATE … SPREAD n, `SPREAD n` on the
/// per-shard commands, the draw steps, the true-top check) through the
/// twins and the module: the seeds alternate EVALSHA and FCALL.
#[test]
fn spread_twins_match_the_module() {
    for seed in 0..2u64 {
        let via = if seed % 2 == 0 {
            Via::Script
        } else {
            Via::Function
        };
        twins_via(via, || spread_twins_match_the_module_once(200 + seed));
    }
}

/// The twins of a spread bag's draw on a master with a replica: joins
/// (random scores), the lease from the server clock (no NOW), freezes,
/// commit and publish all replicate as their effects; the replica ends
/// with the same data (DEBUG DIGEST) and the same lease instant.
#[test]
fn spread_twins_replicate_exactly() {
    // Pair::start() but for the master's 5 s wait before a diskless sync.
    let master = Server::start_with(&["--repl-diskless-sync-delay", "0"]);
    let replica = Server::start();
    let mut rc = replica.conn();
    run(
        &mut rc,
        &["REPLICAOF", "127.0.0.1", &master.port.to_string()],
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while !run(&mut rc, &["INFO", "replication"]).contains("master_link_status:up") {
        assert!(
            std::time::Instant::now() < deadline,
            "the replica never synced"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let pair = Pair { master, replica };
    let mut c = pair.master.conn();
    let twins = Twins::of(&mut c, Via::Function, "luckybag");
    let n = 2u32;
    let keys = bag_shard_keys("rbag:{r}", n);
    let f = |c: &mut Connection, cmd: &str, key: &str, args: &[&str]| -> String {
        let mut a: Vec<&str> = vec![key];
        a.extend_from_slice(args);
        show(&twins.call(c, &format!("LUCKYBAG.{cmd}"), &a))
    };
    for k in &keys {
        assert_eq!(
            f(
                &mut c,
                "create",
                k,
                &["WINNERS", "3", "TTL", "600", "SPREAD", "2"]
            ),
            "OK"
        );
    }
    for u in 0..30 {
        let u = u.to_string();
        let k = &keys[routing::shard_of(u.as_bytes(), n) as usize];
        f(&mut c, "join", k, &[&u, "SPREAD", "2"]);
    }
    // The lease from the clock, through the EVALSHA script too.
    let sha = load_script(&mut c, "luckybag/drawbegin.lua");
    let begin = show(&evalsha(&mut c, &sha, 1, &[&keys[0], "T", "SPREAD", "2"]));
    assert_eq!(begin, "[drawing, 3]");
    let mut all: Vec<(String, String)> = Vec::new();
    for k in &keys {
        all.extend(pairs_of(&f(&mut c, "freeze", k, &["3", "SPREAD", "2"])));
    }
    all.sort_by(|a, b| {
        b.1.cmp(&a.1)
            .then_with(|| b.0.as_bytes().cmp(a.0.as_bytes()))
    });
    all.truncate(3);
    let mut commit: Vec<String> = vec!["T".into()];
    commit.extend(all.iter().flat_map(|(u, s)| [u.clone(), s.clone()]));
    commit.extend(["SPREAD".into(), "2".into()]);
    let commit: Vec<&str> = commit.iter().map(String::as_str).collect();
    let lease: String = redis::cmd("HGET")
        .arg(format!("{}:meta", keys[0]))
        .arg("drawlease")
        .query(&mut c)
        .unwrap();
    assert_eq!(f(&mut c, "commit", &keys[0], &commit), "OK");
    for (i, k) in keys.iter().enumerate() {
        let mut a: Vec<String> = all
            .iter()
            .filter(|(u, _)| routing::shard_of(u.as_bytes(), n) as usize == i)
            .flat_map(|(u, s)| [u.clone(), s.clone()])
            .collect();
        let (lu, ls) = all.last().unwrap();
        a.extend([
            "LAST".into(),
            lu.clone(),
            ls.clone(),
            "SPREAD".into(),
            "2".into(),
        ]);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        assert!(!f(&mut c, "publish", k, &a).starts_with("ERR"));
    }
    let (m, r) = pair.sync_digests();
    assert_eq!(m, r, "the replica has the master's data");
    for k in &keys {
        for suffix in ["meta", "count", "cand:0", "winners"] {
            let key = format!("{k}:{suffix}");
            assert_eq!(
                int(&mut c, &["PEXPIRETIME", &key]),
                int(&mut rc, &["PEXPIRETIME", &key]),
                "{key}"
            );
        }
    }
    // The lease was written as an absolute instant (now + 30 s by default).
    let lease: i64 = lease.parse().unwrap();
    assert!(lease > 1_700_000_000_000, "{lease}");
}
