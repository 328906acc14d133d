//! POLL in the differential test: ONCE, DAILY (with time zones, across
//! midnights) and MULTI polls, with and without candidate lists, windows
//! and TTLs; votes, revokes, reads, write-back SYNC/SYNCACK, malformed
//! arguments, calls with no key, and faults in every key of a poll.
//! Instants are given with NOW in 2100, so every expiry is exact.

use rand::rngs::StdRng;
use rand::Rng;

use crate::harness::{pick, s, Call, Family, Resp, Target, Ttl, V};

const T0: i64 = 4_102_444_800_000;
const KEYS: usize = 4;

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
    const TTL: Ttl = Ttl::Exact;

    fn new() -> Poll {
        Poll {
            now: T0,
            epochs: vec!["1".to_string(); KEYS],
        }
    }

    fn bases(&self) -> Vec<String> {
        (0..KEYS).map(key).collect()
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
