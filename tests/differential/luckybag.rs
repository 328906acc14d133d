//! LUCKYBAG in the differential test: bags with one to three shards, pool
//! caps and high scores, joins and tasks (keyed scores: every CREATE gives
//! a SEED, so module and twin give every user the same score, pinned),
//! leaves and re-entries, draws,
//! results, reads, malformed arguments, calls with no key, and faults in
//! every key of a bag, one or two at a time (issue 16's error order:
//! every type check before any value check, on both sides). LUCKYBAG
//! takes no NOW: a TTL counts from the server clock, so CREATE with TTL
//! is unpinned (its expiry copied); every other expiry is the bag's own
//! instant, exact.
//!
//! A spread bag (`sbag:{s}`, two shards, three prizes) runs alongside:
//! CREATE … SPREAD n, JOIN/TASK/LEAVE/ENTER/RESULT/INFO with `SPREAD n`
//! (the right count, another one, none; users of the other shard), calls
//! on its base key, and its draw: DRAWBEGIN with NOW (two tokens racing),
//! FREEZE, COMMIT of the merge of the frozen lists (seen in the replies),
//! PUBLISH with LAST (VERIFY, forged lists), with faults in its shards'
//! keys, records included.

use rand::rngs::StdRng;
use rand::Rng;

use super::harness::{pick, s, Call, Family, Resp, Target, Ttl};

const KEYS: usize = 4;

pub struct Luckybag {
    /// The NOW of the spread bag's draw steps.
    now: i64,
    /// The last FREEZE reply of each shard of the spread bag: (user,
    /// score, the score's text).
    frozen: [Vec<(String, f64, String)>; 2],
}

/// The spread bag's base key; it has two shards and three prizes.
const SPREAD_BASE: &str = "sbag:{s}";
const SPREAD_WINNERS: usize = 3;

fn shard(i: u32) -> String {
    String::from_utf8(hotpath_client::routing::shard_key(
        SPREAD_BASE.as_bytes(),
        2,
        i,
    ))
    .unwrap()
}

fn shard_of(user: &str) -> u32 {
    hotpath_client::routing::shard_of(user.as_bytes(), 2)
}

/// The seeds of the bags: CREATE draws one from the OS otherwise, and the
/// twin from the clock (module and twin must give the same scores).
const SEEDS: [&str; 2] = ["differential-seed-0", "differential-seed-1"];

fn key(k: usize) -> String {
    if k == 3 {
        return "lb:{3}\u{1}\u{e9}".to_string();
    }
    format!("lb:{{{k}}}")
}

impl Family for Luckybag {
    const NAME: &'static str = "luckybag";
    const SEED: u64 = 16_006;
    const TTL: Ttl = Ttl::Exact;

    fn new() -> Luckybag {
        Luckybag {
            now: 4_102_444_800_000,
            frozen: [Vec::new(), Vec::new()],
        }
    }

    fn bases(&self) -> Vec<String> {
        let mut v: Vec<String> = (0..KEYS).map(key).collect();
        v.extend([shard(0), shard(1)]);
        v
    }

    fn observe(&mut self, call: &Call, reply: &Resp) {
        if call.cmd != "LUCKYBAG.FREEZE" || reply.is_error() {
            return;
        }
        let Some(i) = (0..2).find(|&i| call.keys[0] == shard(i)) else {
            return;
        };
        let items = reply.items();
        self.frozen[i as usize] = items
            .chunks(2)
            .filter_map(|p| {
                let u = String::from_utf8_lossy(p[0].bytes()?).into_owned();
                let t = String::from_utf8_lossy(p.get(1)?.bytes()?).into_owned();
                Some((u, t.parse::<f64>().ok()?, t))
            })
            .collect();
    }

    fn keys_of(&self, base: &str) -> Vec<String> {
        let mut v: Vec<String> = ["meta", "count", "winners"]
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
                    hset("seed", "short"),
                    vec![vec![s("HDEL"), k("meta"), s("seed")]],
                    // A shard's record edited or deleted by hand, and its
                    // draw's fields.
                    hset("spread", "x"),
                    hset("shard", "7"),
                    vec![vec![s("HDEL"), k("meta"), s("spread")]],
                    hset("draw", "x"),
                    hset("drawlease", "x"),
                    hset("state", "frozen"),
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
                key: k("winners"),
                wrong_types: vec!["string"],
                garbage: vec![vec![vec![s("ZADD"), k("winners"), s("1"), s("u1")]]],
            },
        ]
    }

    fn step(&mut self, rng: &mut StdRng) -> Call {
        if rng.gen_bool(0.25) {
            return self.spread_step(rng);
        }
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
            rest.extend([s("SEED"), s(*pick(rng, &SEEDS))]);
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
            Call::owned("LUCKYBAG.JOIN", &b, rest)
        } else if op < 50 {
            Call::owned("LUCKYBAG.TASK", &b, vec![user])
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
        self.sweep_single(bases)
    }
}

impl Luckybag {
    /// The merge of the frozen lists: the top WINNERS, in the draw's order.
    fn merged(&self) -> Vec<(String, f64, String)> {
        let mut all: Vec<(String, f64, String)> = self.frozen.iter().flatten().cloned().collect();
        all.sort_by(|a, b| {
            b.1.total_cmp(&a.1)
                .then_with(|| b.0.as_bytes().cmp(a.0.as_bytes()))
        });
        all.truncate(SPREAD_WINNERS);
        all
    }

    /// A call on the spread bag: its shards with SPREAD n, its draw steps,
    /// or its base key.
    fn spread_step(&mut self, rng: &mut StdRng) -> Call {
        self.now += rng.gen_range(0..400);
        let i = rng.gen_range(0..2u32);
        let k = shard(i);
        let n = *pick(rng, &[2u32, 2, 2, 2, 2, 2, 3]);
        let mut sp = vec![s("SPREAD"), s(n)];
        if rng.gen_bool(0.08) {
            sp.clear();
        }
        let user = |rng: &mut StdRng| -> String {
            let u = s(rng.gen_range(0..40));
            if rng.gen_bool(0.85) && shard_of(&u) != i {
                // The next id is the other shard's.
                return s(u.parse::<u32>().unwrap() + 1);
            }
            u
        };
        let op = rng.gen_range(0..100);
        let (cmd, mut rest, pinned): (&'static str, Vec<String>, bool) = if op < 6 {
            let mut r = vec![s("WINNERS"), s(SPREAD_WINNERS)];
            if rng.gen_bool(0.5) {
                r.extend([
                    s("POOLCAP"),
                    s(*pick(rng, &["9223372036854775807", "7", "1000"])),
                ]);
            }
            r.extend([s("SEED"), s(SEEDS[i as usize])]);
            ("LUCKYBAG.CREATE", r, true)
        } else if op < 40 {
            ("LUCKYBAG.JOIN", vec![user(rng)], true)
        } else if op < 45 {
            ("LUCKYBAG.TASK", vec![user(rng)], true)
        } else if op < 50 {
            ("LUCKYBAG.LEAVE", vec![user(rng)], true)
        } else if op < 55 {
            ("LUCKYBAG.ENTER", vec![user(rng)], true)
        } else if op < 62 {
            ("LUCKYBAG.RESULT", vec![user(rng)], true)
        } else if op < 67 {
            ("LUCKYBAG.INFO", vec![], true)
        } else if op < 71 {
            let tok = s(*pick(rng, &["A", "A", "B"]));
            let r = vec![tok, s("LEASE"), s(1000), s("NOW"), s(self.now)];
            return Call::owned("LUCKYBAG.DRAWBEGIN", &shard(0), [r, sp].concat());
        } else if op < 77 {
            let depth = s(*pick(rng, &[1, 3, 3, 5]));
            return Call::owned("LUCKYBAG.FREEZE", &k, [vec![depth], sp].concat());
        } else if op < 82 {
            let tok = s(*pick(rng, &["A", "A", "B"]));
            let mut r = vec![tok];
            for (u, _, t) in self.merged() {
                r.extend([u, t]);
            }
            return Call::owned("LUCKYBAG.COMMIT", &shard(0), [r, sp].concat());
        } else if op < 92 {
            let merged = self.merged();
            let mut list: Vec<(String, f64, String)> = merged
                .iter()
                .filter(|(u, _, _)| shard_of(u) == i)
                .cloned()
                .collect();
            if rng.gen_bool(0.15) && !list.is_empty() {
                // A forged part: the shard's best left out.
                list.remove(0);
            }
            let mut r: Vec<String> = list.into_iter().flat_map(|(u, _, t)| [u, t]).collect();
            if merged.len() == SPREAD_WINNERS && rng.gen_bool(0.9) {
                let (u, _, t) = merged.last().unwrap().clone();
                r.extend([s("LAST"), u, t]);
            }
            if rng.gen_bool(0.3) {
                r.push(s("VERIFY"));
            }
            return Call::owned("LUCKYBAG.PUBLISH", &k, [r, sp].concat());
        } else if op < 95 {
            return Call::new("LUCKYBAG.DRAW", &k, &[]);
        } else {
            // Single-slot calls on the spread bag's base key.
            let cmd = *pick(
                rng,
                &[
                    "LUCKYBAG.JOIN",
                    "LUCKYBAG.INFO",
                    "LUCKYBAG.DRAW",
                    "LUCKYBAG.RESULT",
                ],
            );
            let r = match cmd {
                "LUCKYBAG.JOIN" | "LUCKYBAG.RESULT" => vec![user(rng)],
                _ => vec![],
            };
            return Call::owned(cmd, SPREAD_BASE, r);
        };
        rest.extend(sp);
        let c = Call::owned(cmd, &k, rest);
        if pinned {
            c
        } else {
            c.unpinned()
        }
    }

    fn sweep_single(&self, bases: &[String]) -> (Vec<Call>, Vec<Call>) {
        let (a, b) = (&bases[0], &bases[1]);
        let setup = vec![
            Call::new(
                "LUCKYBAG.CREATE",
                a,
                &[
                    "WINNERS", "1", "SHARDS", "1", "POOLCAP", "1", "SEED", SEEDS[0],
                ],
            ),
            Call::new("LUCKYBAG.JOIN", a, &["u1", "TASK", "PENDING"]),
            Call::new(
                "LUCKYBAG.CREATE",
                b,
                &[
                    "WINNERS", "2", "SHARDS", "2", "RESTORE", "YES", "SEED", SEEDS[1],
                ],
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
                Call::new("LUCKYBAG.CREATE", k, &["WINNERS", "1", "SEED", SEEDS[0]]),
            ]);
        }
        (setup, probes)
    }
}
