//! LUCKYBAG in the differential test: bags with one to three shards, pool
//! caps and high scores, joins (a drawn score: unpinned, copied from the
//! module; TASK PENDING: pinned), tasks, leaves and re-entries, draws,
//! results, reads, malformed arguments, calls with no key, and faults in
//! every key of a bag, one or two at a time (issue 16's error order:
//! every type check before any value check, on both sides). LUCKYBAG
//! takes no NOW: a TTL counts from the server clock, so CREATE with TTL
//! is unpinned (its expiry copied); every other expiry is the bag's own
//! instant, exact.

use rand::rngs::StdRng;
use rand::Rng;

use crate::harness::{pick, s, Call, Family, Target, Ttl};

const KEYS: usize = 4;

pub struct Luckybag;

fn key(k: usize) -> String {
    if k == 3 {
        return "lb:{3}\u{1}\u{e9}".to_string();
    }
    format!("lb:{{{k}}}")
}

impl Family for Luckybag {
    const NAME: &'static str = "luckybag";
    const TTL: Ttl = Ttl::Exact;

    fn new() -> Luckybag {
        Luckybag
    }

    fn bases(&self) -> Vec<String> {
        (0..KEYS).map(key).collect()
    }

    fn keys_of(&self, base: &str) -> Vec<String> {
        let mut v: Vec<String> = ["meta", "stored", "count", "winners"]
            .iter()
            .map(|x| format!("{base}:{x}"))
            .collect();
        v.extend((0..3).map(|i| format!("{base}:cand:{i}")));
        v
    }

    fn targets(&self, base: &str) -> Vec<Target> {
        let k = |x: &str| format!("{base}:{x}");
        let hset = |f: &str, v: &str| vec![vec![s("HSET"), k("meta"), s(f), s(v)]];
        vec![
            Target {
                key: k("meta"),
                wrong_types: vec!["string", "zset"],
                garbage: vec![
                    hset("shards", "x"),
                    hset("shards", "0"),
                    hset("winners", "0"),
                    hset("poolcap", "x"),
                    hset("highscore", "2"),
                    hset("state", "x"),
                    hset("latepooled", "-1"),
                    hset("restore", "maybe"),
                ],
            },
            Target {
                key: k("cand:0"),
                wrong_types: vec!["string", "hash"],
                garbage: vec![vec![vec![s("ZADD"), k("cand:0"), s("5"), s("u9")]]],
            },
            Target {
                key: k("count"),
                wrong_types: vec!["list"],
                garbage: vec![
                    vec![vec![s("SET"), k("count"), s("x")]],
                    vec![vec![s("SET"), k("count"), s("-1")]],
                    vec![vec![s("SET"), k("count"), s("9223372036854775807")]],
                ],
            },
            Target {
                key: k("stored"),
                wrong_types: vec!["string"],
                garbage: vec![vec![vec![s("HSET"), k("stored"), s("u1"), s("x")]]],
            },
            Target {
                key: k("winners"),
                wrong_types: vec!["string"],
                garbage: vec![vec![vec![s("ZADD"), k("winners"), s("1"), s("u1")]]],
            },
        ]
    }

    fn step(&mut self, rng: &mut StdRng) -> Call {
        let b = key(rng.gen_range(0..KEYS));
        let user = s(*pick(
            rng,
            &["u1", "u2", "u3", "u4", "u5", "u6", "é", "x\ty"],
        ));
        let op = rng.gen_range(0..100);
        if op < 10 {
            let mut rest = vec![s("WINNERS"), s(rng.gen_range(1..4))];
            if rng.gen_bool(0.6) {
                rest.extend([s("SHARDS"), s(rng.gen_range(1..4))]);
            }
            if rng.gen_bool(0.5) {
                rest.extend([s("POOLCAP"), s(rng.gen_range(0..5))]);
            }
            if rng.gen_bool(0.3) {
                rest.extend([s("HIGHSCORE"), s(*pick(rng, &["0.5", "0.9", "1"]))]);
            }
            if rng.gen_bool(0.4) {
                rest.extend([s("RESTORE"), s(*pick(rng, &["YES", "no"]))]);
            }
            let c = Call::owned("LUCKYBAG.CREATE", &b, rest);
            if rng.gen_bool(0.2) {
                let mut c = c;
                c.args.extend([b"TTL".to_vec(), b"600".to_vec()]);
                return c.unpinned();
            }
            c
        } else if op < 40 {
            let pending = rng.gen_bool(0.3);
            let mut rest = vec![user];
            if pending {
                rest.extend([s("TASK"), s("PENDING")]);
            } else if rng.gen_bool(0.3) {
                rest.extend([s("TASK"), s("DONE")]);
            }
            let c = Call::owned("LUCKYBAG.JOIN", &b, rest);
            if pending {
                c
            } else {
                c.unpinned()
            }
        } else if op < 50 {
            Call::owned("LUCKYBAG.TASK", &b, vec![user]).unpinned()
        } else if op < 58 {
            Call::owned("LUCKYBAG.LEAVE", &b, vec![user])
        } else if op < 66 {
            Call::owned("LUCKYBAG.ENTER", &b, vec![user])
        } else if op < 72 {
            Call::new("LUCKYBAG.DRAW", &b, &[])
        } else if op < 80 {
            Call::owned("LUCKYBAG.RESULT", &b, vec![user])
        } else if op < 88 {
            Call::new("LUCKYBAG.INFO", &b, &[])
        } else {
            let bad: &[(&str, &[&str])] = &[
                ("LUCKYBAG.CREATE", &[]),
                ("LUCKYBAG.CREATE", &["WINNERS"]),
                ("LUCKYBAG.CREATE", &["WINNERS", "0"]),
                ("LUCKYBAG.CREATE", &["WINNERS", "1001"]),
                ("LUCKYBAG.CREATE", &["WINNERS", "1", "SHARDS", "0"]),
                ("LUCKYBAG.CREATE", &["WINNERS", "1", "HIGHSCORE", "x"]),
                ("LUCKYBAG.CREATE", &["WINNERS", "1", "RESTORE", "maybe"]),
                ("LUCKYBAG.CREATE", &["WINNERS", "1", "TTL", "0"]),
                ("LUCKYBAG.CREATE", &["WINNERS", "-1000000000000000000"]),
                ("LUCKYBAG.CREATE", &["SHARDS", "2"]),
                ("LUCKYBAG.JOIN", &[]),
                ("LUCKYBAG.JOIN", &["", "TASK", "PENDING"]),
                ("LUCKYBAG.JOIN", &["u1", "TASK", "LATER"]),
                ("LUCKYBAG.JOIN", &["u1", "SCORE", "5"]),
                ("LUCKYBAG.TASK", &[""]),
                ("LUCKYBAG.LEAVE", &[]),
                ("LUCKYBAG.ENTER", &["u1", "x"]),
                ("LUCKYBAG.DRAW", &["x"]),
                ("LUCKYBAG.RESULT", &[]),
                ("LUCKYBAG.INFO", &["x"]),
            ];
            if rng.gen_bool(0.1) {
                let cmds = [
                    "LUCKYBAG.CREATE",
                    "LUCKYBAG.JOIN",
                    "LUCKYBAG.DRAW",
                    "LUCKYBAG.INFO",
                ];
                return Call::no_key(cmds[rng.gen_range(0..cmds.len())]);
            }
            let (cmd, args) = *pick(rng, bad);
            Call::new(cmd, &b, args)
        }
    }

    fn sweep(&self, bases: &[String]) -> (Vec<Call>, Vec<Call>) {
        let (a, b) = (&bases[0], &bases[1]);
        let setup = vec![
            Call::new(
                "LUCKYBAG.CREATE",
                a,
                &["WINNERS", "1", "SHARDS", "1", "POOLCAP", "1"],
            ),
            Call::new("LUCKYBAG.JOIN", a, &["u1", "TASK", "PENDING"]),
            Call::new(
                "LUCKYBAG.CREATE",
                b,
                &["WINNERS", "2", "SHARDS", "2", "RESTORE", "YES"],
            ),
            Call::new("LUCKYBAG.JOIN", b, &["u2", "TASK", "PENDING"]),
        ];
        let mut probes = Vec::new();
        for k in [a, b] {
            probes.extend([
                Call::new("LUCKYBAG.INFO", k, &[]),
                Call::new("LUCKYBAG.JOIN", k, &["u7", "TASK", "PENDING"]),
                Call::new("LUCKYBAG.JOIN", k, &["u1", "TASK", "PENDING"]),
                Call::new("LUCKYBAG.LEAVE", k, &["u2"]),
                Call::new("LUCKYBAG.ENTER", k, &["u2"]),
                Call::new("LUCKYBAG.RESULT", k, &["u1"]),
                Call::new("LUCKYBAG.DRAW", k, &[]),
                Call::new("LUCKYBAG.RESULT", k, &["u1"]),
                Call::new("LUCKYBAG.CREATE", k, &["WINNERS", "1"]),
            ]);
        }
        (setup, probes)
    }
}
