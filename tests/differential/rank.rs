//! RANK in the differential test: boards of every layout (TIEBREAK,
//! UNIT, DIGITS, EPOCH), adds (GT/LT), increments, reads, removals,
//! IMPORT of a board of plain ZADD scores (in slices), malformed
//! arguments, calls with no key, and faults in the board and its meta.
//! Instants are given with NOW in 2100; a TTL counts from the server
//! clock (NOW or not), so CREATE with TTL is unpinned (its expiry copied).
//! RANK.MERGE (its keys after a numkeys argument) is left to
//! tests/lua_parity_rank.rs.
//!
//! A spread board (`sboard:{s}`, two shards) runs alongside: RANK.CREATE
//! with `SPREAD n`, every per-shard command with `SPREAD n` (the right
//! count, another one, none), members of the other shard, RANK.POSITION
//! (MEMBER and AT forms, tie blocks: mostly TIEBREAK NONE, so equal points
//! are equal scores), single-slot calls and IMPORT on its base key, and
//! faults in its shards' keys, records included.

use rand::rngs::StdRng;
use rand::Rng;

use super::harness::{pick, s, Call, Family, Target, Ttl};

const T0: i64 = 4_102_444_800_000;
const KEYS: usize = 4;
/// The spread board's base key; it has two shards.
const SPREAD_BASE: &str = "sboard:{s}";

fn shard(i: u32) -> String {
    String::from_utf8(hotpath_client::routing::shard_key(
        SPREAD_BASE.as_bytes(),
        2,
        i,
    ))
    .unwrap()
}

pub struct Rank {
    now: i64,
}

fn key(k: usize) -> String {
    if k == 3 {
        return "board:{3}\u{1}\u{e9}".to_string();
    }
    format!("board:{{{k}}}")
}

impl Family for Rank {
    const NAME: &'static str = "rank";
    const SEED: u64 = 16_008;
    const TTL: Ttl = Ttl::Exact;

    fn new() -> Rank {
        Rank { now: T0 }
    }

    fn bases(&self) -> Vec<String> {
        let mut v: Vec<String> = (0..KEYS).map(key).collect();
        v.extend([shard(0), shard(1)]);
        v
    }

    fn keys_of(&self, base: &str) -> Vec<String> {
        vec![
            base.to_string(),
            format!("{base}:meta"),
            format!("{base}:import"),
        ]
    }

    fn targets(&self, base: &str) -> Vec<Target> {
        let meta = format!("{base}:meta");
        let hset = |v: &str| vec![vec![s("HSET"), meta.clone(), s("layout"), s(v)]];
        vec![
            Target {
                key: base.to_string(),
                wrong_types: vec!["string", "hash"],
                garbage: vec![
                    vec![vec![s("ZADD"), s(base), s("1.5"), s("m1")]],
                    vec![vec![s("ZADD"), s(base), s("-5"), s("m1")]],
                    vec![vec![s("ZADD"), s(base), s("inf"), s("m2")]],
                    vec![vec![s("ZADD"), s(base), s("9007199254740994"), s("m2")]],
                ],
            },
            Target {
                key: meta.clone(),
                wrong_types: vec!["string", "zset"],
                garbage: vec![
                    hset("x"),
                    hset("EARLIER S 99 0"),
                    hset("LATER MS 6 -1"),
                    hset("EARLIER S 10 0 IMPORT x"),
                    // A shard's record edited or deleted by hand.
                    vec![vec![s("HSET"), meta.clone(), s("spread"), s("x")]],
                    vec![vec![s("HSET"), meta.clone(), s("shard"), s("5")]],
                    vec![vec![s("HDEL"), meta.clone(), s("spread")]],
                ],
            },
        ]
    }

    fn step(&mut self, rng: &mut StdRng) -> Call {
        self.now += rng.gen_range(0..3000);
        if rng.gen_bool(0.2) {
            return self.spread_step(rng);
        }
        let b = key(rng.gen_range(0..KEYS));
        let member = s(*pick(rng, &["m1", "m2", "m3", "m4", "m5", "é"]));
        let pinned = !rng.gen_bool(0.02);
        let now = [s("NOW"), s(self.now)];
        let op = rng.gen_range(0..100);
        let mut call = if op < 8 {
            let mut rest = vec![];
            if rng.gen_bool(0.6) {
                rest.extend([s("TIEBREAK"), s(*pick(rng, &["EARLIER", "LATER", "NONE"]))]);
            }
            if rng.gen_bool(0.5) {
                rest.extend([s("UNIT"), s(*pick(rng, &["MS", "S"]))]);
            }
            if rng.gen_bool(0.5) {
                rest.extend([s("DIGITS"), s(*pick(rng, &[1, 6, 10, 15]))]);
            }
            if rng.gen_bool(0.3) {
                rest.extend([s("EPOCH"), s(T0 - rng.gen_range(0..1_000_000))]);
            }
            let ttl = rng.gen_bool(0.3);
            if ttl {
                rest.extend([s("TTL"), s(*pick(rng, &[1, 3600]))]);
            }
            if pinned {
                rest.extend(now);
            }
            let c = Call::owned("RANK.CREATE", &b, rest);
            if ttl {
                // TTL counts from the server clock, NOW or not: the
                // module's expiry is copied.
                return c.unpinned();
            }
            c
        } else if op < 40 {
            let mut rest = vec![
                member,
                s(*pick(rng, &[0i64, 1, 5, 99, 100_000, 999_999_999])),
            ];
            if rng.gen_bool(0.2) {
                rest.push(s(*pick(rng, &["GT", "LT"])));
            }
            if pinned {
                rest.extend(now);
            }
            Call::owned("RANK.ADD", &b, rest)
        } else if op < 55 {
            let mut rest = vec![member, s(*pick(rng, &[-3i64, -1, 1, 2, 50, 1_000_000]))];
            if pinned {
                rest.extend(now);
            }
            Call::owned("RANK.INCR", &b, rest)
        } else if op < 62 {
            Call::owned("RANK.GET", &b, vec![member])
        } else if op < 69 {
            let mut rest = vec![];
            if rng.gen_bool(0.6) {
                rest.push(s(rng.gen_range(1..5)));
                if rng.gen_bool(0.3) {
                    rest.extend([s("OFFSET"), s(rng.gen_range(0..3))]);
                }
            }
            Call::owned("RANK.TOP", &b, rest)
        } else if op < 74 {
            Call::owned("RANK.AROUND", &b, vec![member, s(rng.gen_range(0..3))])
        } else if op < 79 {
            Call::owned("RANK.REM", &b, vec![member])
        } else if op < 83 {
            Call::new("RANK.COUNT", &b, &[])
        } else if op < 88 {
            // A board of plain scores to import, or the next slice.
            let mut rest = vec![s("COUNT"), s(rng.gen_range(1..3))];
            if pinned {
                rest.extend(now);
            }
            Call::owned("RANK.IMPORT", &b, rest)
        } else {
            let bad: &[(&str, &[&str])] = &[
                ("RANK.CREATE", &["TIEBREAK", "MIDDLE"]),
                ("RANK.CREATE", &["DIGITS", "-1"]),
                ("RANK.CREATE", &["DIGITS", "16"]),
                ("RANK.CREATE", &["UNIT", "H"]),
                ("RANK.CREATE", &["TTL", "-1000000000000000000"]),
                ("RANK.ADD", &["m1"]),
                ("RANK.ADD", &["m1", "-1", "NOW", "4102444800000"]),
                ("RANK.ADD", &["m1", "1.5"]),
                ("RANK.ADD", &["m1", "9007199254740992"]),
                ("RANK.ADD", &["", "5"]),
                ("RANK.ADD", &["m1", "5", "GT", "LT"]),
                ("RANK.INCR", &["m1", "x"]),
                ("RANK.INCR", &["m1", "-9223372036854775808"]),
                ("RANK.GET", &[]),
                ("RANK.TOP", &["0"]),
                ("RANK.TOP", &["1000000"]),
                ("RANK.AROUND", &["m1", "-1"]),
                ("RANK.REM", &[]),
                ("RANK.COUNT", &["x"]),
                ("RANK.IMPORT", &["COUNT", "0"]),
            ];
            if rng.gen_bool(0.1) {
                let cmds = [
                    "RANK.CREATE",
                    "RANK.ADD",
                    "RANK.TOP",
                    "RANK.COUNT",
                    "RANK.IMPORT",
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
        let (a, b) = (&bases[0], &bases[1]);
        let t = |d: i64| (T0 + d).to_string();
        let setup = vec![
            Call::new(
                "RANK.CREATE",
                a,
                &[
                    "TIEBREAK",
                    "EARLIER",
                    "UNIT",
                    "S",
                    "DIGITS",
                    "10",
                    "TTL",
                    "3600",
                    "NOW",
                    &t(0),
                ],
            )
            .unpinned(),
            Call::new("RANK.ADD", a, &["m1", "5", "NOW", &t(1000)]),
            Call::new("RANK.ADD", a, &["m2", "5", "NOW", &t(2000)]),
        ];
        let mut probes = Vec::new();
        for k in [a, b] {
            probes.extend([
                Call::new("RANK.COUNT", k, &[]),
                Call::new("RANK.GET", k, &["m1"]),
                Call::new("RANK.TOP", k, &[]),
                Call::new("RANK.AROUND", k, &["m2", "1"]),
                Call::new("RANK.ADD", k, &["m3", "7", "NOW", &t(3000)]),
                Call::new("RANK.INCR", k, &["m1", "2", "NOW", &t(4000)]),
                Call::new("RANK.REM", k, &["m2"]),
                Call::new("RANK.IMPORT", k, &["COUNT", "1", "NOW", &t(5000)]),
                Call::new("RANK.CREATE", k, &["NOW", &t(6000)]),
            ]);
        }
        (setup, probes)
    }
}

impl Rank {
    /// A call on the spread board: its shards with SPREAD n, or its base.
    fn spread_step(&mut self, rng: &mut StdRng) -> Call {
        let i = rng.gen_range(0..2u32);
        let k = shard(i);
        let n = *pick(rng, &[2u32, 2, 2, 2, 2, 2, 3, 1]);
        let mut sp = vec![s("SPREAD"), s(n)];
        if rng.gen_bool(0.1) {
            sp.clear();
        }
        // Mostly a member of this shard (numbers route by id mod 2, names
        // by FNV-1a).
        let member = |rng: &mut StdRng| -> String {
            let mine = rng.gen_bool(0.85);
            loop {
                let m = if rng.gen_bool(0.5) {
                    s(rng.gen_range(0..40))
                } else {
                    format!("m{}", rng.gen_range(0..40))
                };
                if !mine || hotpath_client::routing::shard_of(m.as_bytes(), 2) == i {
                    return m;
                }
            }
        };
        let points = |rng: &mut StdRng| s(*pick(rng, &[-1i64, 0, 1, 5, 5, 7, 99]));
        let now = [s("NOW"), s(self.now)];
        let op = rng.gen_range(0..100);
        let mut rest: Vec<String>;
        // CREATE often: faults and their repairs delete shards.
        let cmd = if op < 15 {
            rest = vec![];
            if rng.gen_bool(0.8) {
                rest.extend([s("TIEBREAK"), s("NONE")]);
            }
            rest.extend(now);
            "RANK.CREATE"
        } else if op < 35 {
            rest = vec![member(rng), points(rng)];
            if rng.gen_bool(0.2) {
                rest.push(s(*pick(rng, &["GT", "LT"])));
            }
            rest.extend(now);
            "RANK.ADD"
        } else if op < 45 {
            rest = vec![member(rng), points(rng)];
            rest.extend(now);
            "RANK.INCR"
        } else if op < 52 {
            rest = vec![member(rng)];
            "RANK.GET"
        } else if op < 57 {
            rest = (0..rng.gen_range(1..3)).map(|_| member(rng)).collect();
            "RANK.REM"
        } else if op < 61 {
            rest = vec![];
            "RANK.COUNT"
        } else if op < 66 {
            // TOP and AROUND take no SPREAD: a shard is read as a board.
            if rng.gen_bool(0.5) {
                return Call::owned("RANK.TOP", &k, vec![s(rng.gen_range(1..5))]);
            }
            return Call::owned("RANK.AROUND", &k, vec![member(rng), s(rng.gen_range(0..3))]);
        } else if op < 88 {
            rest = vec![s(rng.gen_range(0..4))];
            match rng.gen_range(0..3) {
                0 => {}
                1 => rest.extend([s("MEMBER"), member(rng)]),
                _ => rest.extend([s("AT"), points(rng), member(rng)]),
            }
            "RANK.POSITION"
        } else {
            // Single-slot calls on the spread board's base key, and IMPORT
            // of a shard.
            // A single-slot board made under the base (the member "solo")
            // blocks shard 0 until its removal takes it away again.
            let (cmd, rest) = match rng.gen_range(0..8) {
                0 => ("RANK.ADD", vec![s("solo"), s(1), s("NOW"), s(self.now)]),
                1 | 2 => ("RANK.REM", vec![s("solo")]),
                3 => ("RANK.GET", vec![member(rng)]),
                4 => ("RANK.COUNT", vec![]),
                5 => ("RANK.POSITION", vec![s(2)]),
                6 => ("RANK.IMPORT", vec![s("COUNT"), s(1)]),
                _ => return Call::owned("RANK.IMPORT", &k, vec![s("COUNT"), s(1)]),
            };
            return Call::owned(cmd, SPREAD_BASE, rest);
        };
        rest.extend(sp);
        Call::owned(cmd, &k, rest)
    }
}
