//! LIKE in the differential test: likes, unlikes and toggles of up to
//! 2,000 users on one post (so its Set passes `like-promote-at` and the
//! promotion steps run: chunks created, members moved, chunks settled),
//! reads, COMMON of two posts, MIGRATE, malformed arguments, calls with a
//! missing key (LIKE.COMMON with one key: issue 16) and faults in every
//! key of a post. The twins take the module's configs first (the servers
//! run the defaults: `4294967295 512 0`). LIKE sets no expiry.
//!
//! A spread post (`spost:{s}`, two shards) runs alongside: LIKE.CREATE,
//! every per-shard command with `SPREAD n` (the right count, another one,
//! none), users of the other shard, single-slot calls on its base key,
//! and faults in its shards' keys, records included.

use rand::rngs::StdRng;
use rand::Rng;

use super::harness::{pick, s, Call, Family, Target, Ttl};

const T0: i64 = 4_102_444_800_000;
const KEYS: usize = 4;
/// The module's default configs, as the twins take them.
const CONFIGS: [&str; 3] = ["4294967295", "512", "0"];
/// The spread post's base key; it has two shards.
const SPREAD_BASE: &str = "spost:{s}";

fn shard(i: u32) -> String {
    String::from_utf8(hotpath_client::routing::shard_key(
        SPREAD_BASE.as_bytes(),
        2,
        i,
    ))
    .unwrap()
}

pub struct Like {
    now: i64,
}

fn key(k: usize) -> String {
    if k == 3 {
        return "post:{3}\u{1}\u{e9}".to_string();
    }
    format!("post:{{{k}}}")
}

fn call(cmd: &'static str, keys: &[&str], args: Vec<String>) -> Call {
    let mut c = Call::owned(cmd, keys[0], args);
    c.keys = keys.iter().map(|k| k.to_string()).collect();
    c.with_twin_prefix(&CONFIGS)
}

impl Family for Like {
    const NAME: &'static str = "like";
    const SEED: u64 = 16_005;
    const TTL: Ttl = Ttl::Exact;

    fn new() -> Like {
        Like { now: T0 }
    }

    fn bases(&self) -> Vec<String> {
        let mut v: Vec<String> = (0..KEYS).map(key).collect();
        v.extend([shard(0), shard(1)]);
        v
    }

    fn keys_of(&self, base: &str) -> Vec<String> {
        let mut v: Vec<String> = ["set", "chunks", "count", "meta", "recent"]
            .iter()
            .map(|x| format!("{base}:{x}"))
            .collect();
        v.extend((0..2).map(|r| format!("{base}:bits:{r}")));
        v
    }

    fn targets(&self, base: &str) -> Vec<Target> {
        let k = |x: &str| format!("{base}:{x}");
        let set = |x: &str, v: &str| vec![vec![s("SET"), k(x), s(v)]];
        vec![
            Target {
                key: k("set"),
                wrong_types: vec!["string", "hash"],
                garbage: vec![
                    vec![vec![s("SADD"), k("set"), s("x")]],
                    vec![vec![s("SADD"), k("set"), s("01")]],
                ],
            },
            Target {
                key: k("count"),
                wrong_types: vec!["list"],
                garbage: vec![
                    set("count", "x"),
                    set("count", "-1"),
                    set("count", "9007199254740993"),
                ],
            },
            Target {
                key: k("chunks"),
                wrong_types: vec!["set"],
                garbage: vec![set("chunks", "\u{1}")],
            },
            Target {
                key: k("bits:0"),
                wrong_types: vec!["list"],
                garbage: vec![
                    set("bits:0", "short"),
                    vec![
                        vec![s("SETRANGE"), k("bits:0"), s(7999), s("\u{0}")],
                        vec![s("SETBIT"), k("chunks"), s(0), s(1)],
                    ],
                ],
            },
            Target {
                key: k("meta"),
                wrong_types: vec!["string"],
                garbage: vec![
                    vec![vec![s("HSET"), k("meta"), s("state"), s("x")]],
                    // A shard's record edited or deleted by hand.
                    vec![vec![s("HSET"), k("meta"), s("spread"), s("x")]],
                    vec![vec![s("HSET"), k("meta"), s("shard"), s("5")]],
                    vec![vec![s("HDEL"), k("meta"), s("spread")]],
                ],
            },
        ]
    }

    fn step(&mut self, rng: &mut StdRng) -> Call {
        self.now += rng.gen_range(0..50);
        if rng.gen_bool(0.2) {
            return self.spread_step(rng);
        }
        let k = if rng.gen_bool(0.6) {
            0
        } else {
            rng.gen_range(1..KEYS)
        };
        let b = key(k);
        // Post 0 collects up to 2,000 likers in three ranges' worth of ids
        // (promotion); the others a handful.
        let user = |rng: &mut StdRng| -> String {
            if k == 0 {
                let id = rng.gen_range(0..2000) * 3 + 64_000 * rng.gen_range(0..2);
                s(id)
            } else {
                s(*pick(rng, &[0u64, 1, 7, 63_999, 64_000, 4_294_967_295]))
            }
        };
        let pinned = !rng.gen_bool(0.02);
        let now = [s("NOW"), s(self.now)];
        let op = rng.gen_range(0..100);
        let mut c = if op < 55 {
            let cmd = *pick(rng, &["LIKE.ADD", "LIKE.ADD", "LIKE.TOGGLE", "LIKE.REM"]);
            let mut rest = vec![user(rng)];
            if cmd != "LIKE.REM" && pinned {
                rest.extend(now);
            }
            let c = call(cmd, &[&b], rest);
            if cmd != "LIKE.REM" && !pinned {
                c.unpinned()
            } else {
                c
            }
        } else if op < 65 {
            let n = rng.gen_range(1..5);
            call("LIKE.CHECK", &[&b], (0..n).map(|_| user(rng)).collect())
        } else if op < 72 {
            call("LIKE.COUNT", &[&b], vec![])
        } else if op < 76 {
            let rest = if rng.gen_bool(0.5) {
                vec![s(rng.gen_range(1..5))]
            } else {
                vec![]
            };
            call("LIKE.RECENT", &[&b], rest)
        } else if op < 82 {
            let other = key(rng.gen_range(0..KEYS));
            call("LIKE.COMMON", &[&b, &other], vec![])
        } else if op < 88 {
            call("LIKE.INFO", &[&b], vec![])
        } else if op < 92 {
            let n = rng.gen_range(1..4);
            call("LIKE.MIGRATE", &[&b], (0..n).map(|_| user(rng)).collect())
        } else {
            let bad: &[(&str, &[&str])] = &[
                ("LIKE.ADD", &[]),
                ("LIKE.ADD", &[""]),
                ("LIKE.ADD", &["-1"]),
                ("LIKE.ADD", &["01"]),
                ("LIKE.ADD", &["4294967296"]),
                ("LIKE.ADD", &["1", "NOW"]),
                ("LIKE.ADD", &["1", "NOW", "-1"]),
                ("LIKE.ADD", &["1", "LATER", "5"]),
                ("LIKE.TOGGLE", &["x"]),
                ("LIKE.REM", &["1", "NOW", "5"]),
                ("LIKE.CHECK", &[]),
                ("LIKE.CHECK", &["1", ""]),
                ("LIKE.RECENT", &["0"]),
                ("LIKE.RECENT", &["-1000000000000000000"]),
                ("LIKE.RECENT", &["1", "2"]),
                ("LIKE.COUNT", &["x"]),
                ("LIKE.INFO", &["x"]),
                ("LIKE.MIGRATE", &[]),
                ("LIKE.MIGRATE", &["1", "x"]),
                ("LIKE.MIGRATE", &[""]),
            ];
            if rng.gen_bool(0.1) {
                // LIKE.COMMON with one key (issue 16) or none.
                if rng.gen_bool(0.5) {
                    return call("LIKE.COMMON", &[&b], vec![]);
                }
                let cmds = [
                    "LIKE.ADD",
                    "LIKE.CHECK",
                    "LIKE.COMMON",
                    "LIKE.INFO",
                    "LIKE.MIGRATE",
                ];
                return Call::no_key(cmds[rng.gen_range(0..cmds.len())]).with_twin_prefix(&CONFIGS);
            }
            let (cmd, args) = *pick(rng, bad);
            call(cmd, &[&b], args.iter().map(|a| s(*a)).collect())
        };
        if !pinned && !c.args.is_empty() && c.cmd == "LIKE.CHECK" {
            c = c.unpinned();
        }
        c
    }

    fn sweep(&self, bases: &[String]) -> (Vec<Call>, Vec<Call>) {
        self.sweep_single(bases)
    }
}

impl Like {
    /// A call on the spread post: its shards with SPREAD n, or its base.
    fn spread_step(&mut self, rng: &mut StdRng) -> Call {
        let i = rng.gen_range(0..2u32);
        let k = shard(i);
        let n = *pick(rng, &[2u32, 2, 2, 2, 2, 2, 3, 1]);
        let mut sp = vec![s("SPREAD"), s(n)];
        if rng.gen_bool(0.1) {
            sp.clear();
        }
        // Mostly a user of this shard.
        let user = |rng: &mut StdRng| -> String {
            let u: u64 = rng.gen_range(0..300);
            if rng.gen_bool(0.85) {
                s(u - u % 2 + u64::from(i))
            } else {
                s(u)
            }
        };
        let now = [s("NOW"), s(self.now)];
        let op = rng.gen_range(0..100);
        let mut rest: Vec<String>;
        let cmd = if op < 10 {
            rest = vec![];
            "LIKE.CREATE"
        } else if op < 60 {
            let cmd = *pick(rng, &["LIKE.ADD", "LIKE.ADD", "LIKE.TOGGLE", "LIKE.REM"]);
            rest = vec![user(rng)];
            if cmd != "LIKE.REM" {
                rest.extend(now);
            }
            cmd
        } else if op < 70 {
            rest = (0..rng.gen_range(1..4)).map(|_| user(rng)).collect();
            "LIKE.CHECK"
        } else if op < 76 {
            rest = vec![];
            "LIKE.COUNT"
        } else if op < 80 {
            rest = vec![s(3)];
            "LIKE.RECENT"
        } else if op < 88 {
            rest = vec![];
            "LIKE.INFO"
        } else if op < 92 {
            let other = shard(1 - i);
            return call("LIKE.COMMON", &[&k, &other], vec![]);
        } else {
            // Single-slot calls on the spread post's base key.
            let cmd = *pick(
                rng,
                &[
                    "LIKE.ADD",
                    "LIKE.COUNT",
                    "LIKE.CHECK",
                    "LIKE.INFO",
                    "LIKE.RECENT",
                ],
            );
            let rest = match cmd {
                "LIKE.ADD" => vec![user(rng), s("NOW"), s(self.now)],
                "LIKE.CHECK" => vec![user(rng)],
                _ => vec![],
            };
            return call(cmd, &[SPREAD_BASE], rest);
        };
        rest.extend(sp);
        call(cmd, &[&k], rest)
    }

    fn sweep_single(&self, bases: &[String]) -> (Vec<Call>, Vec<Call>) {
        let (a, b) = (&bases[0], &bases[1]);
        let t = (T0).to_string();
        let mut setup = Vec::new();
        for (k, users) in [(a, &["1", "2", "64001"][..]), (b, &["2", "3"][..])] {
            for u in users {
                setup.push(call("LIKE.ADD", &[k], vec![s(u), s("NOW"), t.clone()]));
            }
        }
        let mut probes = Vec::new();
        for k in [a, b] {
            probes.extend([
                call("LIKE.COUNT", &[k], vec![]),
                call("LIKE.CHECK", &[k], vec![s("1"), s("2"), s("64001")]),
                call("LIKE.INFO", &[k], vec![]),
                call("LIKE.RECENT", &[k], vec![]),
                call("LIKE.ADD", &[k], vec![s("5"), s("NOW"), t.clone()]),
                call("LIKE.TOGGLE", &[k], vec![s("2"), s("NOW"), t.clone()]),
                call("LIKE.REM", &[k], vec![s("1")]),
                call("LIKE.MIGRATE", &[k], vec![s("3"), s("64001")]),
            ]);
        }
        probes.push(call("LIKE.COMMON", &[a, b], vec![]));
        (setup, probes)
    }
}
