//! `IDEM token` on hotpath writes (src/idem_token/) on a real server: a
//! retry gets the first reply byte for byte (RESP2 and RESP3, the other
//! protocol too, errors too) and changes nothing; a token reused with other
//! arguments and a bad token are refused with nothing written; the TTL,
//! the cap and the sweep; replica and AOF hold the same tokens with the
//! same PEXPIRETIME; and the proof: randomized writes retried 0–3 times,
//! across a kill -9 (appendfsync always) and a replica promotion, end in
//! the state of a run without retries, every retry answered as the first.

use crate::common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::thread;
use std::time::Duration;

use common::*;

/// A NOW far ahead (2030-01-01), so that explicit instants stay valid.
const T0: i64 = 1_893_456_000_000;

/// A connection that sends commands as RESP and returns the reply's raw
/// bytes, as the server wrote them.
struct Raw {
    s: TcpStream,
    buf: Vec<u8>,
}

const END: &[u8] = b"$8\r\n__end__!\r\n";

impl Raw {
    fn open(port: u16, resp3: bool) -> Raw {
        let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut r = Raw { s, buf: Vec::new() };
        if resp3 {
            let hello = r.call(&["HELLO", "3"]);
            assert!(
                hello.starts_with(b"%"),
                "{}",
                String::from_utf8_lossy(&hello)
            );
        }
        r
    }

    /// Sends `args` and returns the bytes of its reply (an `ECHO` sent
    /// after it marks where the reply ends).
    fn call(&mut self, args: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        for cmd in [args, &["ECHO", "__end__!"][..]] {
            out.extend_from_slice(format!("*{}\r\n", cmd.len()).as_bytes());
            for a in cmd {
                out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
            }
        }
        self.s.write_all(&out).unwrap();
        self.buf.clear();
        let mut chunk = [0u8; 4096];
        while !self.buf.ends_with(END) {
            let n = self.s.read(&mut chunk).unwrap();
            assert!(n > 0, "connection closed");
            self.buf.extend_from_slice(&chunk[..n]);
        }
        self.buf[..self.buf.len() - END.len()].to_vec()
    }
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn with_idem<'a>(args: &[&'a str], token: &'a str) -> Vec<&'a str> {
    let mut v = args.to_vec();
    v.extend_from_slice(&["IDEM", token]);
    v
}

/// One write of each family with a token, on a fresh entity `<k>` after
/// its setup; every instant explicit so that two entities answer alike.
fn cases(k: &str, now: &str) -> Vec<(Vec<Vec<String>>, Vec<String>)> {
    let s = |v: &[&str]| v.iter().map(|x| x.replace("@", k)).collect::<Vec<String>>();
    let n = |v: &[&str]| {
        let mut a = s(v);
        a.extend(["NOW".to_string(), now.to_string()]);
        a
    };
    vec![
        (vec![], n(&["RATE.CHECK", "@", "2", "10000"])),
        (vec![], n(&["RATE.THROTTLE", "@", "5", "10", "60"])),
        (vec![], n(&["RATE.MULTI", "1", "@", "LIMITS", "5", "1000"])),
        (vec![], n(&["RANK.INCR", "@", "amy", "5"])),
        (vec![], n(&["RANK.ADD", "@", "bob", "7"])),
        (vec![], n(&["LIKE.TOGGLE", "@", "1001"])),
        (
            vec![s(&["POLL.CREATE", "@", "CANDIDATES", "2", "rust", "go"])],
            n(&["POLL.VOTE", "@", "u1", "rust"]),
        ),
        (
            vec![n(&["REDPACKET.SPLIT", "@", "1000", "3", "MODE", "EQUAL"])],
            n(&["REDPACKET.GRAB", "@", "u1"]),
        ),
        (
            vec![s(&["LUCKYBAG.CREATE", "@", "WINNERS", "1"])],
            s(&["LUCKYBAG.JOIN", "@", "u1"]),
        ),
        (
            vec![],
            n(&["DELAYQ.ADD", "@", "job-1", "payload", "DELAY", "1000"]),
        ),
        (vec![], n(&["LOCK.ACQUIRE", "@", "w1", "30000"])),
        (
            vec![n(&["STOCK.CREATE", "@", "10"])],
            n(&["STOCK.RESERVE", "@", "u1", "o1", "2"]),
        ),
        // Error replies are stored and replayed like any other.
        (vec![], n(&["RATE.CHECK", "@", "0", "10000"])),
        (vec![], n(&["REDPACKET.GRAB", "@", "u1"])),
    ]
}

fn strs(v: &[String]) -> Vec<&str> {
    v.iter().map(String::as_str).collect()
}

/// A retry answers the first call's bytes, in both protocols: a token
/// stored by a RESP2 call replays to a RESP3 client as that client would
/// have been answered, and the other way round; the retries change nothing.
#[test]
fn retries_replay_the_first_reply_byte_for_byte_in_resp2_and_resp3() {
    let srv = Server::start();
    let mut r2 = Raw::open(srv.port, false);
    let mut r3 = Raw::open(srv.port, true);
    let now = T0.to_string();
    for (i, ((setup_a, write_a), (setup_b, write_b))) in cases(&format!("a{{{}}}", 0), &now)
        .into_iter()
        .zip(cases("b{0}", &now))
        .enumerate()
    {
        let (a, b) = (format!("a{{{i}}}"), format!("b{{{i}}}"));
        let fix = |v: &[String], from: &str, to: &str| -> Vec<String> {
            v.iter().map(|x| x.replace(from, to)).collect()
        };
        let (setup_a, write_a) = (
            setup_a
                .iter()
                .map(|c| fix(c, "a{0}", &a))
                .collect::<Vec<_>>(),
            fix(&write_a, "a{0}", &a),
        );
        let (setup_b, write_b) = (
            setup_b
                .iter()
                .map(|c| fix(c, "b{0}", &b))
                .collect::<Vec<_>>(),
            fix(&write_b, "b{0}", &b),
        );
        for c in &setup_a {
            r2.call(&strs(c));
        }
        for c in &setup_b {
            r2.call(&strs(c));
        }
        let wa = with_idem(&strs(&write_a), "tok");
        let wb = with_idem(&strs(&write_b), "tok");
        // a: first call in RESP2; b: first call in RESP3.
        let first2 = r2.call(&wa);
        let first3 = r3.call(&wb);
        let digest = srv.digest();
        assert_eq!(r2.call(&wa), first2, "{wa:?}: RESP2 retry");
        assert_eq!(r3.call(&wb), first3, "{wb:?}: RESP3 retry");
        assert_eq!(r3.call(&wa), first3, "{wa:?}: RESP3 retry of a RESP2 call");
        assert_eq!(r2.call(&wb), first2, "{wb:?}: RESP2 retry of a RESP3 call");
        assert_eq!(srv.digest(), digest, "{wa:?}: a retry wrote");
    }
}

/// The same token with other arguments is refused, and writes nothing; a
/// token too long or empty too; other entities keep their own tokens.
#[test]
fn a_reused_token_or_a_bad_token_is_refused_and_writes_nothing() {
    let srv = Server::start();
    let mut c = srv.conn();
    let now = T0.to_string();
    let first = run(
        &mut c,
        &["RATE.CHECK", "k", "5", "1000", "NOW", &now, "IDEM", "t1"],
    );
    assert!(first.starts_with("[1, 5, 4, "), "{first}");
    let digest = srv.digest();
    let long = "x".repeat(41);
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "RATE.CHECK",
                "k",
                "5",
                "1000",
                "COST",
                "2",
                "NOW",
                &now,
                "IDEM",
                "t1",
            ],
            "ERR rate: IDEM token reused with other arguments",
        ),
        (
            vec!["RATE.THROTTLE", "k", "5", "10", "60", "IDEM", "t1"],
            "ERR rate: IDEM token reused with other arguments",
        ),
        (
            vec!["RATE.CHECK", "k", "5", "1000", "IDEM", ""],
            "ERR rate: IDEM token must be 1 to 40 bytes",
        ),
        (
            vec!["RATE.CHECK", "k", "5", "1000", "IDEM", &long],
            "ERR rate: IDEM token must be 1 to 40 bytes",
        ),
        (
            vec!["RANK.INCR", "k", "m", "1", "IDEM", "t", "SPREAD", "2"],
            "ERR syntax error",
        ),
        (
            vec!["RATE.CHECK", "k", "5", "1000", "IDEM"],
            "ERR syntax error",
        ),
    ];
    for (args, want) in &cases {
        assert_eq!(&err(&mut c, args), want, "{args:?}");
        assert_eq!(srv.digest(), digest, "{args:?} wrote");
    }
    // A store that is not a Hash: WRONGTYPE, nothing else written.
    run(&mut c, &["SET", "w:idem", "x"]);
    let digest = srv.digest();
    assert!(err(&mut c, &["RATE.CHECK", "w", "5", "1000", "IDEM", "t"]).starts_with("WRONGTYPE"));
    assert_eq!(srv.digest(), digest);
    // A damaged token: a clear error, nothing written.
    run(&mut c, &["HSET", "d:idem", "t", "short"]);
    let digest = srv.digest();
    assert_eq!(
        err(&mut c, &["RATE.CHECK", "d", "5", "1000", "IDEM", "t"]),
        "ERR rate: corrupt data in 'd:idem'"
    );
    assert_eq!(srv.digest(), digest);
    // A positional argument named IDEM is not the option.
    run(
        &mut c,
        &["POLL.CREATE", "p", "CANDIDATES", "2", "IDEM", "go"],
    );
    assert_eq!(run(&mut c, &["POLL.VOTE", "p", "u1", "IDEM"]), "1");
    assert_eq!(int(&mut c, &["EXISTS", "p:idem"]), 0);
    // Tokens are per entity: the same token on another key is new.
    assert_eq!(
        run(
            &mut c,
            &["RATE.CHECK", "k2", "5", "1000", "NOW", &now, "IDEM", "t1"]
        ),
        first
    );
    let info = run(&mut c, &["INFO", "hotpath"]);
    assert!(info.contains("idem_tokens_mismatched:2"), "{info}");
}

/// Tokens live `idem-token-ttl` seconds (the store's PEXPIRETIME is its
/// latest token's expiry); expired tokens are swept by later writes; a
/// full store evicts the earliest to expire.
#[test]
fn tokens_expire_are_swept_and_capped() {
    let srv = Server::start_full(&[], &["idem-token-ttl", "1"]);
    let mut c = srv.conn();
    let before = now_ms();
    for i in 0..5 {
        let t = format!("t{i}");
        run(&mut c, &["RANK.INCR", "b", "m", "1", "IDEM", &t]);
    }
    // The store outlives its latest token by up to TTL/16 (62 ms here).
    let at = int(&mut c, &["PEXPIRETIME", "b:idem"]);
    assert!(
        at >= before + 1000 + 62 && at <= now_ms() + 1000 + 62,
        "{at}"
    );
    assert_eq!(int(&mut c, &["HLEN", "b:idem"]), 6);
    // A retry within the TTL replays; after it, the write runs again.
    assert_eq!(
        run(&mut c, &["RANK.INCR", "b", "m", "1", "IDEM", "t0"]),
        "1"
    );
    thread::sleep(Duration::from_millis(1100));
    assert_eq!(
        run(&mut c, &["RANK.GET", "b", "m"])
            .split(", ")
            .next()
            .unwrap()
            .trim_start_matches('['),
        "5"
    );
    // The store itself expired with its tokens.
    assert_eq!(int(&mut c, &["EXISTS", "b:idem"]), 0);
    run(&mut c, &["CONFIG", "SET", "hotpath.idem-token-ttl", "100"]);
    run(&mut c, &["RANK.INCR", "c", "m", "1", "IDEM", "old"]);
    // A token expired inside a live store is swept by the next write.
    run(&mut c, &["CONFIG", "SET", "hotpath.idem-token-ttl", "1"]);
    for i in 0..4 {
        run(
            &mut c,
            &["RANK.INCR", "c", "m", "1", "IDEM", &format!("s{i}")],
        );
    }
    assert_eq!(int(&mut c, &["HLEN", "c:idem"]), 6);
    thread::sleep(Duration::from_millis(1100));
    run(&mut c, &["RANK.INCR", "c", "m", "1", "IDEM", "new"]);
    let mut fields: Vec<String> = redis::cmd("HKEYS").arg("c:idem").query(&mut c).unwrap();
    fields.sort();
    assert_eq!(fields, ["", "new", "old"]);
    let info = run(&mut c, &["INFO", "hotpath"]);
    assert!(info.contains("idem_tokens_swept:4"), "{info}");
    // The cap: a new token over it evicts the earliest to expire.
    run(&mut c, &["CONFIG", "SET", "hotpath.idem-token-ttl", "100"]);
    run(&mut c, &["CONFIG", "SET", "hotpath.idem-token-cap", "4"]);
    for i in 0..10 {
        run(
            &mut c,
            &["RANK.INCR", "d", "m", "1", "IDEM", &format!("e{i}")],
        );
        assert!(int(&mut c, &["HLEN", "d:idem"]) <= 5);
    }
    let mut fields: Vec<String> = redis::cmd("HKEYS").arg("d:idem").query(&mut c).unwrap();
    fields.sort();
    assert_eq!(fields, ["", "e6", "e7", "e8", "e9"]);
    let info = run(&mut c, &["INFO", "hotpath"]);
    assert!(info.contains("idem_tokens_evicted:6"), "{info}");
}

/// Writes with tokens, without NOW (the master's clock must reach the
/// replica and the AOF), retried.
/// The record's bytes are as src/idem_token/wire.rs documents them (the
/// Lua twins and any other reader follow that layout): 6 bytes of expiry
/// (unix ms, little-endian), 5 bytes of digest, the reply tree; the field
/// `` holds the next sweep instant and the store's expiry (two i64 LE),
/// the latter equal to the store's PEXPIRETIME.
#[test]
fn the_record_is_laid_out_as_documented() {
    let srv = Server::start();
    let mut c = srv.conn();
    let ttl = 86_400_000;
    let before = now_ms();
    assert_eq!(
        run(&mut c, &["RANK.INCR", "b{1}", "m", "1", "IDEM", "t"]),
        "1"
    );
    let after = now_ms();
    let rec: Vec<u8> = redis::cmd("HGET")
        .arg("b{1}:idem")
        .arg("t")
        .query(&mut c)
        .unwrap();
    // The reply tree: the integer 1 (tag `i`, zigzag varint 2).
    assert_eq!(rec.len(), 11 + 2, "{rec:?}");
    assert_eq!(&rec[11..], b"i\x02");
    let mut e = [0u8; 8];
    e[..6].copy_from_slice(&rec[..6]);
    let expiry = i64::from_le_bytes(e);
    assert!(expiry >= before + ttl && expiry <= after + ttl, "{expiry}");
    // SHA-1 of `RANK.INCR` `m` `1` (length-prefixed), first 5 bytes (the
    // value the unit test pins, checked against Python's hashlib).
    assert_eq!(&rec[6..11], &[90, 63, 91, 138, 46]);
    let meta: Vec<u8> = redis::cmd("HGET")
        .arg("b{1}:idem")
        .arg("")
        .query(&mut c)
        .unwrap();
    assert_eq!(meta.len(), 16, "{meta:?}");
    let next = i64::from_le_bytes(meta[..8].try_into().unwrap());
    let at = i64::from_le_bytes(meta[8..].try_into().unwrap());
    assert_eq!(next, expiry);
    assert_eq!(at, expiry + ttl / 16);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "b{1}:idem"]), at);
    // A second token: the store's expiry holds (within TTL/16), so
    // neither the field nor PEXPIRETIME moves.
    run(&mut c, &["RANK.INCR", "b{1}", "m", "1", "IDEM", "u"]);
    let meta2: Vec<u8> = redis::cmd("HGET")
        .arg("b{1}:idem")
        .arg("")
        .query(&mut c)
        .unwrap();
    assert_eq!(meta2, meta);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "b{1}:idem"]), at);
    assert_eq!(int(&mut c, &["HLEN", "b{1}:idem"]), 3);
    // Its own digest: other arguments after the key.
    assert_eq!(
        run(&mut c, &["RANK.INCR", "b{1}", "m", "1", "IDEM", "t"]),
        "1"
    );
}

fn workload(c: &mut Raw) {
    for i in 0..30 {
        let (k, t) = (format!("e{{{}}}", i % 5), format!("t{i}"));
        let w: Vec<Vec<String>> = vec![
            vec!["RATE.CHECK".into(), k.clone(), "3".into(), "60000".into()],
            vec!["RANK.INCR".into(), k.clone() + "r", "m".into(), "2".into()],
            vec!["LIKE.TOGGLE".into(), k.clone() + "l", (i % 3).to_string()],
            vec![
                "LOCK.ACQUIRE".into(),
                k.clone() + "k",
                "w".into(),
                "60000".into(),
            ],
        ];
        for cmd in &w {
            let a = with_idem(&strs(cmd), &t);
            let first = c.call(&a);
            assert_eq!(c.call(&a), first);
        }
    }
}

fn expiry_times(c: &mut redis::Connection) -> Vec<(String, i64)> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let t = int(c, &["PEXPIRETIME", &k]);
            (k, t)
        })
        .collect()
}

/// The effect and its token reach the replica and the AOF together: the
/// replica and an AOF replay end byte-identical (DEBUG DIGEST) with the
/// same PEXPIRETIME on every key, token stores included, and a retry on
/// the replica's data (after the restart) still replays.
#[test]
fn replica_and_aof_hold_the_same_tokens_and_expiries() {
    let pair = Pair::start();
    let mut aof = start_aof();
    let mut m = Raw::open(pair.master.port, false);
    let mut a = Raw::open(aof.port, false);
    workload(&mut m);
    workload(&mut a);
    pair.assert_equal();
    let (mut mc, mut rc) = (pair.master.conn(), pair.replica.conn());
    let times = expiry_times(&mut mc);
    assert!(
        times.iter().any(|(k, t)| k.ends_with(":idem") && *t > 0),
        "{times:?}"
    );
    assert_eq!(times, expiry_times(&mut rc));
    let first = a.call(&["RANK.INCR", "x{1}", "m", "5", "IDEM", "z"]);
    let mut ac = aof.conn();
    let before = expiry_times(&mut ac);
    assert_aof_restart_equal(&mut aof);
    let mut ac = aof.conn();
    assert_eq!(before, expiry_times(&mut ac));
    let mut a = Raw::open(aof.port, false);
    assert_eq!(a.call(&["RANK.INCR", "x{1}", "m", "5", "IDEM", "z"]), first);
    assert_rdb_reload_equal(&aof);
}

// -------------------------------------------------------------- proof --

/// A small deterministic generator (xorshift), so that a failing run can
/// be replayed from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// The `i`-th random write (without its token): every instant explicit,
/// so that the run without retries answers the same.
fn random_write(rng: &mut Rng, i: u64, entities: u64) -> Vec<String> {
    let now = (T0 + i as i64 * 7).to_string();
    let e = rng.below(entities);
    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<String>>();
    let mut w = match rng.below(6) {
        // Periods of a day: RATE keys expire by the server clock when the
        // limiter is full again (at least period/limit after a write), and
        // must outlive the run, its retries and the two state reads (a
        // 1,000,000-write run with 20 s found keys expiring in between).
        0 => s(&["RATE.CHECK", &format!("r{{{e}}}"), "50", "86400000"]),
        1 => s(&["RATE.THROTTLE", &format!("t{{{e}}}"), "20", "100", "86400"]),
        2 => s(&[
            "RANK.INCR",
            &format!("b{{{e}}}"),
            &format!("m{}", rng.below(8)),
            &(rng.below(100) as i64 - 20).to_string(),
        ]),
        3 => s(&[
            "RANK.ADD",
            &format!("b{{{e}}}"),
            &format!("m{}", rng.below(8)),
            &rng.below(1000).to_string(),
        ]),
        4 => s(&[
            "LIKE.TOGGLE",
            &format!("p{{{e}}}"),
            &rng.below(20).to_string(),
        ]),
        _ => s(&[
            "RATE.MULTI",
            "2",
            &format!("q{{{e}}}"),
            &format!("q{{{e}}}2"),
            "LIMITS",
            "30",
            "86400000",
            "100",
            "864000000",
        ]),
    };
    w.extend(["NOW".to_string(), now]);
    w
}

/// Every key but the token stores with its DUMP (the value, not the
/// expiry: RATE counts a key's expiry from the server clock).
fn state(port: u16) -> Vec<(String, Vec<u8>)> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
    let mut c = client.get_connection().unwrap();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
    keys.retain(|k| !k.ends_with(":idem"));
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let d: Vec<u8> = redis::cmd("DUMP").arg(&k).query(&mut c).unwrap();
            (k, d)
        })
        .collect()
}

/// What a proof run saw.
#[derive(Default)]
struct Tally {
    writes: u64,
    retries: u64,
    same: u64,
}

/// Sends writes `from..to` with their tokens, each retried 0–3 times (the
/// retries of the last writes of a phase are kept for after the fault):
/// every retry must answer the first reply. `first` keeps each write's
/// first reply; `reference` gets each write once.
#[allow(clippy::too_many_arguments)]
fn phase(
    c: &mut Raw,
    reference: &mut Raw,
    seed: u64,
    from: u64,
    to: u64,
    first: &mut Vec<Vec<u8>>,
    writes: &mut Vec<Vec<String>>,
    t: &mut Tally,
    to_all: u64,
) {
    let mut rng = Rng(seed ^ from.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
    for i in from..to {
        // Enough entities that no store goes over `idem-token-cap` (1,000):
        // a token evicted for the cap is not replayed, by design.
        let w = random_write(&mut rng, i, (to_all / 1500).max(16));
        let token = format!("tok-{i}");
        let a = with_idem(&strs(&w), &token);
        let reply = c.call(&a);
        let want = reference.call(&a);
        assert_eq!(
            text(&reply),
            text(&want),
            "write {i} {a:?}: differs from the run without retries"
        );
        t.writes += 1;
        for _ in 0..rng.below(4) {
            t.retries += 1;
            let again = c.call(&a);
            assert_eq!(again, reply, "write {i} {a:?}: retry answered otherwise");
            t.same += 1;
        }
        first.push(reply);
        writes.push(w);
    }
}

/// Retries every write of `from..to` once more on `c` (after a fault).
fn retry_all(
    c: &mut Raw,
    from: u64,
    to: u64,
    first: &[Vec<u8>],
    writes: &[Vec<String>],
    t: &mut Tally,
) {
    for i in from..to {
        let token = format!("tok-{i}");
        let a = with_idem(&strs(&writes[i as usize]), &token);
        let again = c.call(&a);
        t.retries += 1;
        assert_eq!(
            again, first[i as usize],
            "write {i} {a:?}: retry after the fault answered otherwise"
        );
        t.same += 1;
    }
}

/// The proof of issue 23: `n` randomized writes across RATE, RANK and
/// LIKE, each retried 0–3 times; a third of them, then every retry of
/// them, before and after a kill -9 of an AOF server (appendfsync always);
/// a third before a replica promotion (after WAIT), retried on the promoted
/// replica; the last third on it. 0 double effects (the final state is the
/// state of a run without retries), every retry answered the first reply.
fn proof(n: u64, seed: u64) -> Tally {
    let mut t = Tally::default();
    let reference = Server::start();
    let mut rf = Raw::open(reference.port, false);
    let (mut first, mut writes) = (Vec::new(), Vec::new());
    let third = n / 3;

    // kill -9 under appendfsync always.
    let mut s = start_aof();
    let mut c = Raw::open(s.port, false);
    phase(
        &mut c,
        &mut rf,
        seed,
        0,
        third,
        &mut first,
        &mut writes,
        &mut t,
        n,
    );
    drop(c);
    s.stop(); // SIGKILL
    s.restart(&[]);
    let mut c = Raw::open(s.port, false);
    retry_all(&mut c, 0, third, &first, &writes, &mut t);
    assert_eq!(state(s.port), state(reference.port), "after kill -9");

    // A replica promoted after WAIT: the master's data and tokens move to
    // a new pair (a DEBUG RELOAD-free copy: the replica syncs them).
    let pair = Pair::start();
    let mut pm = pair.master.conn();
    let _: () = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(s.port)
        .query(&mut pm)
        .unwrap();
    let mut c = Raw::open(pair.master.port, false);
    // The pair's master copies the AOF server, then leads again.
    loop {
        let info = run(&mut pm, &["INFO", "replication"]);
        if info.contains("master_link_status:up") {
            break;
        }
        thread::sleep(Duration::from_millis(20));
    }
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut pm)
        .unwrap();
    drop(s);
    phase(
        &mut c,
        &mut rf,
        seed,
        third,
        2 * third,
        &mut first,
        &mut writes,
        &mut t,
        n,
    );
    // WAIT on the connection that wrote: WAIT waits for the offset of
    // its own client's last write. Sent on another connection (`pm`, whose
    // last write is the REPLICAOF above) it returned as soon as the
    // replica was online, maybe still before the writes queued for it
    // during its resync (the pair's master resyncs it after its own sync
    // and promotion): a Valkey run once found write 551 of 1,500, the
    // first after the resync's snapshot, missing on the promoted replica.
    // The module replicates each write and its token in one MULTI/EXEC.
    let acked = c.call(&["WAIT", "1", "10000"]);
    assert_eq!(text(&acked), text(b":1\r\n"), "WAIT");
    let Pair {
        mut master,
        replica,
    } = pair;
    master.stop(); // SIGKILL
    let mut rc = replica.conn();
    let _: () = redis::cmd("REPLICAOF")
        .arg("NO")
        .arg("ONE")
        .query(&mut rc)
        .unwrap();
    let mut c = Raw::open(replica.port, false);
    retry_all(&mut c, 0, 2 * third, &first, &writes, &mut t);
    phase(
        &mut c,
        &mut rf,
        seed,
        2 * third,
        n,
        &mut first,
        &mut writes,
        &mut t,
        n,
    );
    assert_eq!(
        state(replica.port),
        state(reference.port),
        "after the promotion"
    );
    assert_eq!(t.same, t.retries);
    t
}

/// The short proof, in `make test`: a few thousand writes.
#[test]
fn proof_short_randomized_retries_across_kill_and_promotion() {
    let t = proof(1500, 0x1de3_5eed_u64.wrapping_add(now_ms() as u64 % 1000));
    assert!(
        t.retries > t.writes,
        "{} retries of {} writes",
        t.retries,
        t.writes
    );
}

/// The long proof (`make idem-proof`): 1,000,000 writes by default
/// (`HOTPATH_IDEM_PROOF_N`).
#[test]
#[ignore]
fn proof_long_randomized_retries_across_kill_and_promotion() {
    let n: u64 = std::env::var("HOTPATH_IDEM_PROOF_N")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let started = std::time::Instant::now();
    let t = proof(n, 0x5eed);
    eprintln!(
        "idem proof: {} writes, {} retries, {} answered as the first, 0 double effects, {:?}",
        t.writes,
        t.retries,
        t.same,
        started.elapsed()
    );
}

/// The clients send the token: the Rust builder option `with_idem` and the
/// Python `idem=` keyword; a resent write replays, a new token writes.
#[test]
fn clients_send_the_token() {
    let srv = Server::start();
    let mut c = srv.conn();
    let board = hotpath_client::Rank::new("cl{1}");
    let once = board.with_idem("t1");
    assert_eq!(once.incr(&mut c, "m", 5).unwrap(), 5);
    assert_eq!(once.incr(&mut c, "m", 5).unwrap(), 5, "replayed");
    assert_eq!(board.with_idem("t2").incr(&mut c, "m", 5).unwrap(), 10);
    let script = format!(
        "import redis, hotpath\n\
         hp = hotpath.HotPath(redis.Redis(port={}))\n\
         b = hp.rank('py{{1}}')\n\
         assert b.incr('m', 5, idem='t1') == 5\n\
         assert b.incr('m', 5, idem='t1') == 5\n\
         assert b.incr('m', 5, idem='t2') == 10\n\
         r = hp.rate('py{{2}}')\n\
         first = r.check(5, 1000, idem='t1')\n\
         assert r.check(5, 1000, idem='t1') == first\n\
         print('ok')\n",
        srv.port
    );
    let root = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(python_bin())
        .env("PYTHONPATH", root.join("clients/python/src"))
        .args(["-c", &script])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}
