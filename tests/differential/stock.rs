//! STOCK in the differential test: creations (limits, leases, TTLs),
//! reservations (repeated orders, the per-user limit, sold-out stocks),
//! confirmations, releases, restocks and removals, lapsed leases returned
//! by the next writes, reads, audits, malformed arguments, calls on the
//! server clock, and faults in the stock and its ledger keys. Every TTL
//! counts from a given `NOW` ([`Ttl::Exact`]); a creation on the server
//! clock is unpinned. One SKU is spread over 3 shards: its steps create
//! the shards, reserve (mostly on the buyer's shard), confirm, release,
//! open, apply and settle transfers (replayed, with the right units or
//! not), mark shards dry and read the pool.

use rand::rngs::StdRng;
use rand::Rng;

use super::harness::{pick, s, Call, Family, Target, Ttl};

const T0: i64 = 1_764_720_000_000;
const KEYS: usize = 5;
const MAX_INT: i64 = (1 << 53) - 1;
/// TTLs long enough that `NOW + TTL` (NOW near T0) is still ahead of the
/// server clock when the keys are compared.
const TTLS: [i64; 2] = [400_000_000, 3_153_600_000];
/// The spread SKU's base and shard count.
const SPREAD_BASE: &str = "stock:{s}";
const SPREAD_N: u32 = 3;

/// The key of shard `i` of the spread SKU.
fn shard_key(i: usize) -> String {
    String::from_utf8(hotpath_client::routing::shard_key(
        SPREAD_BASE.as_bytes(),
        SPREAD_N,
        i as u32,
    ))
    .unwrap()
}

pub struct Stock {
    now: i64,
}

fn key(k: usize) -> String {
    // One name with a control character and a non-ASCII letter: errors
    // that name the key show them the same way on both sides.
    if k == 4 {
        return "stock:{4}\u{1}\u{e9}".to_string();
    }
    format!("stock:{{{k}}}")
}

impl Family for Stock {
    const NAME: &'static str = "stock";
    const SEED: u64 = 26_001;
    const TTL: Ttl = Ttl::Exact;

    fn new() -> Stock {
        Stock { now: T0 }
    }

    fn bases(&self) -> Vec<String> {
        // The single-slot stocks first: the fault sweep takes the first two.
        let mut b: Vec<String> = (0..KEYS).map(key).collect();
        b.extend((0..SPREAD_N as usize).map(shard_key));
        b.push(SPREAD_BASE.to_string());
        b
    }

    fn keys_of(&self, base: &str) -> Vec<String> {
        let mut k = vec![
            base.to_string(),
            format!("{base}:orders"),
            format!("{base}:users"),
            format!("{base}:leases"),
        ];
        if base.starts_with('{') {
            for sfx in ["meta", "applied", "pool", "transfers", "open"] {
                k.push(format!("{base}:{sfx}"));
            }
        }
        k
    }

    fn targets(&self, base: &str) -> Vec<Target> {
        let b = base.to_string();
        let (orders, users, leases) = (
            format!("{base}:orders"),
            format!("{base}:users"),
            format!("{base}:leases"),
        );
        let set = |v: &str| vec![vec![s("SET"), b.clone(), s(v)]];
        let hset = |k: &str, f: &str, v: &str| vec![vec![s("HSET"), s(k), s(f), s(v)]];
        let zadd = |score: &str, m: &str| vec![vec![s("ZADD"), leases.clone(), s(score), s(m)]];
        let far = (T0 + 10_000_000).to_string();
        let max = MAX_INT.to_string();
        let big = (MAX_INT + 1).to_string();
        vec![
            Target {
                key: b.clone(),
                wrong_types: vec!["list", "hash", "zset"],
                garbage: vec![
                    set("junk"),
                    set(""),
                    set("0:0:3:3:0:1000:0"),
                    set("0:0:"),
                    set("1:0:0:2:0:1000:0"),
                    set("01:0:0:1:0:1000:0"),
                    set("1:0:0:1:0:0:0"),
                    set("1:0:0:1:0:1000"),
                    set("1:0:0:1:0:1000:0:"),
                    set("-1:1:0:0:0:1000:0"),
                    set("0:1:0:1:0:1000:0"),
                    set("0:5:0:5:0:1000:0"),
                    set(&format!("{max}:0:0:{max}:0:1000:0")),
                    set(&format!("{big}:0:0:{big}:0:1000:0")),
                    set(&format!("{max}:{max}:0:{max}:0:1000:0")),
                    set("3:0:0:3:1:3153600000001:0"),
                ],
            },
            Target {
                key: orders.clone(),
                wrong_types: vec!["string", "zset"],
                garbage: vec![
                    hset(&orders, "o1", "junk"),
                    hset(&orders, "o1", &format!("R:1:{far}:0:")),
                    hset(&orders, "o1", &format!("Q:1:{far}:0:alice")),
                    hset(&orders, "o1", &format!("R:0:{far}:0:alice")),
                    hset(&orders, "o1", &format!("R:1:{far}:0:alice")),
                    hset(&orders, "o2", &format!("S:{max}:{far}:0:bob")),
                    hset(&orders, "o3", "E:1:5:0:carol"),
                    hset(&orders, "o4", &format!("R:2:{big}:0:alice")),
                    hset(&orders, "zz\u{1}", "junk"),
                ],
            },
            Target {
                key: users.clone(),
                wrong_types: vec!["string", "list"],
                garbage: vec![
                    hset(&users, "alice", "x"),
                    hset(&users, "alice", "0"),
                    hset(&users, "alice", "-1"),
                    hset(&users, "bob", "007"),
                    hset(&users, "bob", &big),
                    hset(&users, "carol", "9"),
                ],
            },
            Target {
                key: leases.clone(),
                wrong_types: vec!["string", "hash"],
                garbage: vec![
                    zadd("1.5", "o1"),
                    zadd("-inf", "o2"),
                    zadd("5", "o3"),
                    zadd(&far, "o1"),
                    zadd("inf", "o9"),
                    zadd("1", "nobody"),
                ],
            },
        ]
    }

    fn step(&mut self, rng: &mut StdRng) -> Call {
        self.now += match rng.gen_range(0..10) {
            0..=4 => 0,
            5..=8 => rng.gen_range(1..400),
            _ => rng.gen_range(1000..5000),
        };
        if rng.gen_bool(0.25) {
            return self.spread_step(rng);
        }
        let b = key(rng.gen_range(0..KEYS));
        let user = s(*pick(
            rng,
            &["alice", "bob", "carol", "d:e", "é", "x\ty", "line\r\nbreak"],
        ));
        let order = format!("o{}", rng.gen_range(0..14));
        let pinned = !rng.gen_bool(0.02);
        let now = [s("NOW"), s(self.now)];
        let op = rng.gen_range(0..100);
        let mut call = if op < 10 {
            let mut rest = vec![s(rng.gen_range(0..12))];
            if rng.gen_bool(0.6) {
                rest.extend([s("LIMIT"), s(rng.gen_range(0..4))]);
            }
            if rng.gen_bool(0.8) {
                rest.extend([s("Lease"), s(*pick(rng, &[1, 50, 300, 1000, 3000]))]);
            }
            if rng.gen_bool(0.2) {
                rest.extend([s("TTL"), s(*pick(rng, &TTLS))]);
            }
            if pinned {
                rest.extend(now);
            }
            Call::owned("STOCK.CREATE", &b, rest)
        } else if op < 45 {
            let qty = *pick(rng, &[1, 1, 1, 2, 3]);
            let mut rest = vec![user, order, s(qty)];
            if pinned {
                rest.extend(now);
            }
            Call::owned("STOCK.RESERVE", &b, rest)
        } else if op < 60 {
            let mut rest = vec![order];
            if pinned {
                rest.extend([s("now"), s(self.now)]);
            }
            Call::owned("STOCK.CONFIRM", &b, rest)
        } else if op < 70 {
            Call::owned("STOCK.RELEASE", &b, vec![order])
        } else if op < 77 {
            let mut rest = vec![s(rng.gen_range(-4..6))];
            if pinned {
                rest.extend(now);
            }
            Call::owned("STOCK.RESTOCK", &b, rest)
        } else if op < 82 {
            Call::owned("STOCK.INFO", &b, vec![])
        } else if op < 88 {
            let mut rest = vec![s("0")];
            if rng.gen_bool(0.5) {
                rest.extend([s("COUNT"), s(rng.gen_range(1..20))]);
            }
            Call::owned("STOCK.AUDIT", &b, rest)
        } else {
            let bad: &[(&str, &[&str])] = &[
                ("STOCK.CREATE", &["x"]),
                ("STOCK.CREATE", &["-1"]),
                ("STOCK.CREATE", &["9007199254740992"]),
                ("STOCK.CREATE", &["5", "LIMIT"]),
                ("STOCK.CREATE", &["5", "LIMIT", "-1"]),
                ("STOCK.CREATE", &["5", "LEASE", "0"]),
                ("STOCK.CREATE", &["5", "LEASE", "3153600000001"]),
                ("STOCK.CREATE", &["5", "TTL", "0"]),
                ("STOCK.CREATE", &["5", "TTL", "3153600001"]),
                ("STOCK.CREATE", &["5", "NOW", "253402300800000"]),
                ("STOCK.CREATE", &["05"]),
                ("STOCK.CREATE", &["-9223372036854775809"]),
                ("STOCK.RESERVE", &["a", "o"]),
                ("STOCK.RESERVE", &["a", "o", "0"]),
                ("STOCK.RESERVE", &["a", "o", "1.5"]),
                ("STOCK.RESERVE", &["a", "o", "9007199254740992"]),
                ("STOCK.RESERVE", &["", "o", "1"]),
                ("STOCK.RESERVE", &["a", "", "1"]),
                ("STOCK.RESERVE", &["", "", "x"]),
                ("STOCK.RESERVE", &["a", "o", "1", "NOW"]),
                ("STOCK.RESERVE", &["a", "o", "1", "NOW", "-1"]),
                ("STOCK.RESERVE", &["a", "o", "1", "LATER", "5"]),
                ("STOCK.CONFIRM", &[""]),
                ("STOCK.CONFIRM", &[]),
                ("STOCK.CONFIRM", &["o1", "NOW"]),
                ("STOCK.CONFIRM", &["o1", "NOW", "x"]),
                ("STOCK.RELEASE", &[""]),
                ("STOCK.RELEASE", &[]),
                ("STOCK.RELEASE", &["o1", "o2"]),
                ("STOCK.RESTOCK", &["x"]),
                ("STOCK.RESTOCK", &["-9007199254740992"]),
                ("STOCK.RESTOCK", &["9007199254740991"]),
                ("STOCK.RESTOCK", &["-100"]),
                ("STOCK.RESTOCK", &["1", "NOW", "1", "X"]),
                ("STOCK.INFO", &["x"]),
                ("STOCK.AUDIT", &[]),
                ("STOCK.AUDIT", &["-1"]),
                ("STOCK.AUDIT", &["x"]),
                ("STOCK.AUDIT", &["18446744073709551616"]),
                ("STOCK.AUDIT", &["0018446744073709551615"]),
                ("STOCK.AUDIT", &["0", "COUNT", "0"]),
                ("STOCK.AUDIT", &["0", "COUNT", "1001"]),
                ("STOCK.AUDIT", &["0", "COUNT"]),
                ("STOCK.AUDIT", &["0", "LIMIT", "5"]),
            ];
            if rng.gen_bool(0.05) {
                let cmds = [
                    "STOCK.CREATE",
                    "STOCK.RESERVE",
                    "STOCK.CONFIRM",
                    "STOCK.RELEASE",
                    "STOCK.RESTOCK",
                    "STOCK.INFO",
                    "STOCK.AUDIT",
                ];
                return Call::no_key(cmds[rng.gen_range(0..cmds.len())]);
            }
            let (cmd, args) = *pick(rng, bad);
            Call::new(cmd, &b, args)
        };
        if !pinned {
            call = call.unpinned();
        }
        call
    }

    fn sweep(&self, bases: &[String]) -> (Vec<Call>, Vec<Call>) {
        let t = |d: i64| (T0 + d).to_string();
        let mut setup = Vec::new();
        for k in bases {
            setup.extend([
                Call::new(
                    "STOCK.CREATE",
                    k,
                    &["10", "LIMIT", "3", "LEASE", "1000", "NOW", &t(0)],
                ),
                Call::new("STOCK.RESERVE", k, &["alice", "o1", "2", "NOW", &t(0)]),
                Call::new("STOCK.RESERVE", k, &["bob", "o2", "1", "NOW", &t(0)]),
                Call::new("STOCK.CONFIRM", k, &["o2", "NOW", &t(10)]),
                Call::new("STOCK.RESERVE", k, &["carol", "o3", "1", "NOW", &t(20)]),
            ]);
        }
        let mut probes = Vec::new();
        for k in bases {
            probes.extend([
                Call::new("STOCK.INFO", k, &[]),
                Call::new("STOCK.AUDIT", k, &["0"]),
                Call::new("STOCK.RESERVE", k, &["alice", "o1", "2", "NOW", &t(30)]),
                Call::new("STOCK.RESERVE", k, &["alice", "o5", "1", "NOW", &t(40)]),
                Call::new("STOCK.CONFIRM", k, &["o1", "NOW", &t(50)]),
                Call::new("STOCK.RELEASE", k, &["o3"]),
                Call::new("STOCK.RESTOCK", k, &["-1", "NOW", &t(60)]),
                // Past every lease: lapsed leases go back.
                Call::new("STOCK.RESERVE", k, &["bob", "o6", "1", "NOW", &t(5000)]),
                Call::new("STOCK.CONFIRM", k, &["o5", "NOW", &t(5000)]),
                Call::new("STOCK.RESTOCK", k, &["2", "NOW", &t(5000)]),
                Call::new("STOCK.AUDIT", k, &["0", "COUNT", "5"]),
                Call::new("STOCK.CREATE", k, &["1", "NOW", &t(6000)]),
            ]);
        }
        (setup, probes)
    }
}

impl Stock {
    /// A step on the spread SKU (docs/stock.md, "Spread form").
    fn spread_step(&mut self, rng: &mut StdRng) -> Call {
        let i = rng.gen_range(0..SPREAD_N as usize);
        let k = shard_key(i);
        let k0 = shard_key(0);
        let n = s(SPREAD_N);
        let now = s(self.now);
        // Mostly the right count; sometimes none, another, or the base key.
        let sp: Vec<String> = match rng.gen_range(0..25) {
            0 => vec![],
            1 => vec![s("SPREAD"), s(4)],
            _ => vec![s("SPREAD"), n.clone()],
        };
        let k = if rng.gen_bool(0.03) {
            SPREAD_BASE.to_string()
        } else {
            k
        };
        let order = format!("o{}", rng.gen_range(0..10));
        let id = format!("t{}", rng.gen_range(0..10));
        let with = |mut v: Vec<String>| {
            v.extend(sp.iter().cloned());
            v
        };
        match rng.gen_range(0..100) {
            0..=9 => {
                let lease = *pick(rng, &[300, 1000, 5000]);
                let args = vec![s(12), s("LIMIT"), s(3), s("LEASE"), s(lease), s("NOW"), now];
                Call::owned("STOCK.CREATE", &k, with(args))
            }
            10..=40 => {
                // Integer users route by value: mostly the shard's own.
                let mut u = rng.gen_range(0..30u32);
                if rng.gen_bool(0.85) {
                    u = u - u % SPREAD_N + i as u32;
                }
                let qty = *pick(rng, &[1, 1, 2, 3]);
                let args = vec![s(u), order, s(qty), s("NOW"), now];
                Call::owned("STOCK.RESERVE", &k, with(args))
            }
            41..=50 => Call::owned("STOCK.CONFIRM", &k, with(vec![order, s("NOW"), now])),
            51..=57 => Call::owned("STOCK.RELEASE", &k, with(vec![order])),
            58..=69 => {
                let sh = rng.gen_range(0..SPREAD_N);
                let d: i64 = *pick(rng, &[1, 2, 3, 5, 8, -1, -2, -4]);
                let key = if rng.gen_bool(0.95) { k0 } else { k };
                Call::owned("STOCK.TRANSFER", &key, with(vec![id, s(sh), s(d)]))
            }
            70..=81 => {
                let d: i64 = *pick(rng, &[0, 1, 2, 3, 5, 8, -1, -2, -4]);
                Call::owned("STOCK.APPLY", &k, with(vec![id, s(d)]))
            }
            82..=90 => {
                let a: i64 = *pick(rng, &[0, 1, 2, 3, 5, 8, -1, -2, -4]);
                Call::owned("STOCK.SETTLE", &k0, with(vec![id, s(a)]))
            }
            91..=93 => Call::owned("STOCK.POOL", &k0, with(vec![])),
            94..=95 => Call::owned("STOCK.INFO", &k, with(vec![])),
            96..=97 => Call::owned("STOCK.AUDIT", &k, with(vec![s("0")])),
            _ => Call::owned("STOCK.RESTOCK", &k, with(vec![s(0), s("NOW"), now])),
        }
    }
}
