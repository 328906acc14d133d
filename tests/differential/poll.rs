//! POLL in the differential test: ONCE, DAILY (with time zones, across
//! midnights) and MULTI polls, with and without candidate lists, windows
//! and TTLs; votes, revokes, reads, write-back SYNC/SYNCACK, malformed
//! arguments, calls with no key, and faults in every key of a poll.
//! Instants are given with NOW in 2100, so every expiry is exact.
//!
//! A spread poll (`spoll:{s}`, two shards) runs alongside: POLL.CREATE …
//! SPREAD n (again, with other rules), every command with `SPREAD n` (the
//! right count, another one, none; NOW before or after it), voters of the
//! other shard, single-slot calls on its base key, and faults in its
//! shards' keys, records included.

use rand::rngs::StdRng;
use rand::Rng;

use super::harness::{pick, s, Call, Family, Resp, Target, Ttl, V};

const T0: i64 = 4_102_444_800_000;
const KEYS: usize = 4;
/// The spread poll's base key; it has two shards.
const SPREAD_BASE: &str = "spoll:{s}";

fn shard(i: u32) -> String {
    String::from_utf8(hotpath_client::routing::shard_key(
        SPREAD_BASE.as_bytes(),
        2,
        i,
    ))
    .unwrap()
}

pub struct Poll {
    now: i64,
    /// The last epoch SYNC replied per base, for SYNCACK.
    epochs: Vec<String>,
}

fn key(k: usize) -> String {
    if k == 3 {
        return "poll:{3}\u{1}\u{e9}".to_string();
    }
    format!("poll:{{{k}}}")
}

impl Family for Poll {
    const NAME: &'static str = "poll";
    const SEED: u64 = 16_007;
    const TTL: Ttl = Ttl::Exact;

    fn new() -> Poll {
        Poll {
            now: T0,
            epochs: vec!["1".to_string(); KEYS],
        }
    }

    fn bases(&self) -> Vec<String> {
        let mut v: Vec<String> = (0..KEYS).map(key).collect();
        v.extend([shard(0), shard(1)]);
        v
    }

    fn keys_of(&self, base: &str) -> Vec<String> {
        ["meta", "board", "voted", "uservotes", "synced", "syncing"]
            .iter()
            .map(|x| format!("{base}:{x}"))
            .collect()
    }

    fn targets(&self, base: &str) -> Vec<Target> {
        let k = |x: &str| format!("{base}:{x}");
        let hset = |key: &str, f: &str, v: &str| vec![vec![s("HSET"), k(key), s(f), s(v)]];
        vec![
            Target {
                key: k("meta"),
                wrong_types: vec!["string", "zset"],
                garbage: vec![
                    hset("meta", "rules", "x"),
                    hset("meta", "rules", "ONCE 1 0 0 0 0"),
                    hset("meta", "rules", "MULTI 0 0 0 0 0 0"),
                    hset("meta", "epoch", "x"),
                    hset("meta", "pending", "-1"),
                    hset("meta", "epoch", "9007199254740993"),
                    // A shard's record edited or deleted by hand.
                    hset("meta", "spread", "x"),
                    hset("meta", "shard", "5"),
                    vec![vec![s("HDEL"), k("meta"), s("spread")]],
                ],
            },
            Target {
                key: k("board"),
                wrong_types: vec!["string", "hash"],
                garbage: vec![
                    vec![vec![s("ZADD"), k("board"), s("1.5"), s("a")]],
                    vec![vec![s("ZADD"), k("board"), s("inf"), s("a")]],
                    vec![vec![s("ZADD"), k("board"), s("9007199254740994"), s("b")]],
                ],
            },
            Target {
                key: k("voted"),
                wrong_types: vec!["string", "zset"],
                garbage: vec![hset("voted", "u1", "x"), hset("voted", "u1", "zz:5")],
            },
            Target {
                key: k("uservotes"),
                wrong_types: vec!["string"],
                garbage: vec![
                    hset("uservotes", "u1", "[x"),
                    hset("uservotes", "u1", "[\"a\",\"a\"]"),
                ],
            },
            Target {
                key: k("synced"),
                wrong_types: vec!["string"],
                garbage: vec![vec![vec![s("ZADD"), k("synced"), s("1.5"), s("a")]]],
            },
            Target {
                key: k("syncing"),
                wrong_types: vec!["string"],
                garbage: vec![vec![vec![s("ZADD"), k("syncing"), s("1.5"), s("a")]]],
            },
        ]
    }

    fn step(&mut self, rng: &mut StdRng) -> Call {
        self.now += match rng.gen_range(0..10) {
            0..=6 => rng.gen_range(0..1000),
            7..=8 => rng.gen_range(1000..100_000),
            _ => rng.gen_range(3_600_000..30_000_000),
        };
        if rng.gen_bool(0.2) {
            return self.spread_step(rng);
        }
        let k = rng.gen_range(0..KEYS);
        let b = key(k);
        let cand = s(*pick(rng, &["a", "b", "c", "d", "é", "x y"]));
        let user = s(*pick(rng, &["u1", "u2", "u3", "u4", "é"]));
        let pinned = !rng.gen_bool(0.02);
        let now = [s("NOW"), s(self.now)];
        let op = rng.gen_range(0..100);
        let mut call = if op < 8 {
            let mut rest = vec![];
            if rng.gen_bool(0.8) {
                rest.extend([
                    s("MODE"),
                    s(*pick(rng, &["ONCE", "DAILY", "MULTI", "daily"])),
                ]);
            }
            if rng.gen_bool(0.5) {
                rest.extend([s("MAXVOTES"), s(rng.gen_range(1..4))]);
            }
            if rng.gen_bool(0.5) {
                rest.extend([s("CANDIDATES"), s(3), s("a"), s("b"), s("c")]);
            }
            if rng.gen_bool(0.2) {
                rest.extend([s("START"), s(self.now + rng.gen_range(-1000..5000))]);
            }
            if rng.gen_bool(0.2) {
                rest.extend([s("END"), s(self.now + rng.gen_range(0..50_000))]);
            }
            if rng.gen_bool(0.3) {
                rest.extend([s("TZ"), s(*pick(rng, &[0, 480, -300, 840]))]);
            }
            if rng.gen_bool(0.3) {
                rest.extend([s("TTL"), s(*pick(rng, &[1, 3600, 86_400]))]);
            }
            if pinned {
                rest.extend(now);
            }
            Call::owned("POLL.CREATE", &b, rest)
        } else if op < 45 {
            let mut rest = vec![user, cand];
            if pinned {
                rest.extend(now);
            }
            Call::owned("POLL.VOTE", &b, rest)
        } else if op < 55 {
            let mut rest = vec![user];
            if rng.gen_bool(0.5) {
                rest.push(cand);
            }
            if pinned {
                rest.extend(now);
            }
            Call::owned("POLL.REVOKE", &b, rest)
        } else if op < 63 {
            let mut rest = vec![];
            if rng.gen_bool(0.6) {
                rest.push(s(rng.gen_range(1..5)));
                if rng.gen_bool(0.3) {
                    rest.extend([s("OFFSET"), s(rng.gen_range(0..3))]);
                }
            }
            Call::owned("POLL.TOP", &b, rest)
        } else if op < 68 {
            Call::owned("POLL.RANK", &b, vec![cand])
        } else if op < 75 {
            let mut rest = vec![user];
            if pinned {
                rest.extend(now);
            }
            Call::owned("POLL.STATUS", &b, rest)
        } else if op < 80 {
            Call::new("POLL.INFO", &b, &[])
        } else if op < 85 {
            Call::new("POLL.SYNC", &b, &[])
        } else if op < 89 {
            let epoch = self.epochs[k].clone();
            Call::owned("POLL.SYNCACK", &b, vec![epoch])
        } else {
            let bad: &[(&str, &[&str])] = &[
                ("POLL.CREATE", &["MODE", "SOMETIMES"]),
                ("POLL.CREATE", &["MAXVOTES", "0"]),
                ("POLL.CREATE", &["CANDIDATES", "2", "a"]),
                ("POLL.CREATE", &["TZ", "100000"]),
                ("POLL.CREATE", &["TTL", "-1000000000000000000"]),
                ("POLL.CREATE", &["START", "5", "END", "4"]),
                ("POLL.VOTE", &["u1"]),
                ("POLL.VOTE", &["", "a"]),
                ("POLL.VOTE", &["u1", ""]),
                ("POLL.VOTE", &["u1", "a", "NOW"]),
                ("POLL.VOTE", &["u1", "a", "NOW", "-1"]),
                ("POLL.REVOKE", &[]),
                ("POLL.TOP", &["0"]),
                ("POLL.TOP", &["1", "OFFSET", "-1"]),
                ("POLL.TOP", &["1000000"]),
                ("POLL.RANK", &[]),
                ("POLL.STATUS", &["u1", "NOW", "x"]),
                ("POLL.INFO", &["x"]),
                ("POLL.SYNC", &["x"]),
                ("POLL.SYNCACK", &["x"]),
                ("POLL.SYNCACK", &["-9223372036854775808"]),
            ];
            if rng.gen_bool(0.1) {
                let cmds = [
                    "POLL.CREATE",
                    "POLL.VOTE",
                    "POLL.TOP",
                    "POLL.INFO",
                    "POLL.SYNC",
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

    fn observe(&mut self, call: &Call, reply: &Resp) {
        if call.cmd != "POLL.SYNC" {
            return;
        }
        // SYNC replies [epoch, …]: SYNCACK acknowledges that epoch.
        if let V::Array(Some(items)) = &reply.v {
            if let Some(e) = items.first().and_then(|e| e.int()) {
                if let Some(k) = (0..KEYS).find(|&k| call.keys.first() == Some(&key(k))) {
                    self.epochs[k] = e.to_string();
                }
            }
        }
    }

    fn sweep(&self, bases: &[String]) -> (Vec<Call>, Vec<Call>) {
        let (a, b) = (&bases[0], &bases[1]);
        let t = |d: i64| (T0 + d).to_string();
        let setup = vec![
            Call::new(
                "POLL.CREATE",
                a,
                &[
                    "MODE",
                    "MULTI",
                    "MAXVOTES",
                    "2",
                    "TTL",
                    "3600",
                    "NOW",
                    &t(0),
                ],
            ),
            Call::new("POLL.VOTE", a, &["u1", "a", "NOW", &t(1)]),
            Call::new(
                "POLL.CREATE",
                b,
                &["MODE", "DAILY", "CANDIDATES", "2", "a", "b", "NOW", &t(0)],
            ),
            Call::new("POLL.VOTE", b, &["u1", "a", "NOW", &t(1)]),
        ];
        let mut probes = Vec::new();
        for k in [a, b] {
            probes.extend([
                Call::new("POLL.INFO", k, &[]),
                Call::new("POLL.STATUS", k, &["u1", "NOW", &t(5)]),
                Call::new("POLL.TOP", k, &[]),
                Call::new("POLL.RANK", k, &["a"]),
                Call::new("POLL.VOTE", k, &["u2", "b", "NOW", &t(10)]),
                Call::new("POLL.REVOKE", k, &["u1", "a", "NOW", &t(20)]),
                Call::new("POLL.SYNC", k, &[]),
                Call::new("POLL.SYNCACK", k, &["1"]),
                Call::new("POLL.CREATE", k, &["NOW", &t(30)]),
            ]);
        }
        (setup, probes)
    }
}

impl Poll {
    /// A call on the spread poll: its shards with SPREAD n, or its base.
    fn spread_step(&mut self, rng: &mut StdRng) -> Call {
        let i = rng.gen_range(0..2u32);
        let k = shard(i);
        let n = *pick(rng, &[2u32, 2, 2, 2, 2, 2, 3, 1]);
        let mut sp = vec![s("SPREAD"), s(n)];
        if rng.gen_bool(0.1) {
            sp.clear();
        }
        // Mostly a voter of this shard.
        let user = |rng: &mut StdRng| -> String {
            let u: u64 = rng.gen_range(0..40);
            if rng.gen_bool(0.85) {
                s(u - u % 2 + u64::from(i))
            } else {
                s(u)
            }
        };
        let cand = s(*pick(rng, &["a", "b", "c", "d"]));
        let now = vec![s("NOW"), s(self.now)];
        // NOW before or after SPREAD n.
        let tail = |rng: &mut StdRng, sp: &[String]| -> Vec<String> {
            if rng.gen_bool(0.5) {
                [now.clone(), sp.to_vec()].concat()
            } else {
                [sp.to_vec(), now.clone()].concat()
            }
        };
        let op = rng.gen_range(0..100);
        let rest: Vec<String> = if op < 8 {
            let mut r = if rng.gen_bool(0.8) {
                vec![
                    s("MODE"),
                    s("MULTI"),
                    s("MAXVOTES"),
                    s(2),
                    s("TTL"),
                    s(86_400),
                ]
            } else {
                vec![s("MODE"), s("ONCE")]
            };
            r.extend(tail(rng, &sp));
            return Call::owned("POLL.CREATE", &k, r);
        } else if op < 50 {
            let r = [vec![user(rng), cand], tail(rng, &sp)].concat();
            return Call::owned("POLL.VOTE", &k, r);
        } else if op < 58 {
            let mut r = vec![user(rng)];
            if rng.gen_bool(0.5) {
                r.push(cand);
            }
            return Call::owned("POLL.REVOKE", &k, [r, tail(rng, &sp)].concat());
        } else if op < 64 {
            return Call::owned(
                "POLL.STATUS",
                &k,
                [vec![user(rng)], tail(rng, &sp)].concat(),
            );
        } else if op < 70 {
            let mut r = vec![];
            if rng.gen_bool(0.5) {
                r.push(s(rng.gen_range(1..5)));
            }
            r
        } else if op < 75 {
            vec![cand]
        } else if op < 87 {
            // INFO and SYNC take nothing but SPREAD n.
            vec![]
        } else if op < 92 {
            vec![s(rng.gen_range(1..4))]
        } else {
            // Single-slot calls on the spread poll's base key.
            let cmd = *pick(
                rng,
                &[
                    "POLL.VOTE",
                    "POLL.TOP",
                    "POLL.INFO",
                    "POLL.STATUS",
                    "POLL.CREATE",
                ],
            );
            let rest = match cmd {
                "POLL.VOTE" => vec![user(rng), cand, s("NOW"), s(self.now)],
                "POLL.STATUS" => vec![user(rng), s("NOW"), s(self.now)],
                "POLL.CREATE" => vec![s("NOW"), s(self.now)],
                _ => vec![],
            };
            return Call::owned(cmd, SPREAD_BASE, rest);
        };
        let cmd = match op {
            64..=69 => "POLL.TOP",
            70..=74 => "POLL.RANK",
            75..=81 => "POLL.INFO",
            82..=86 => "POLL.SYNC",
            _ => "POLL.SYNCACK",
        };
        Call::owned(cmd, &k, [rest, sp].concat())
    }
}
