//! LOCK in the differential test: mutexes and semaphores, reentrance,
//! MAXHOLD, releases, renewals, reads, checks, BLOCK (inside MULTI the
//! module answers at once, as the twin always does), malformed arguments,
//! calls on the server clock, and faults in the lock key. LOCK sets no
//! expiry ([`Ttl::Exact`]).

use rand::rngs::StdRng;
use rand::Rng;

use super::harness::{pick, s, Call, Family, Target, Ttl};

const T0: i64 = 1_764_720_000_000;
const KEYS: usize = 6;
const MAX_INT: i64 = (1 << 53) - 1;

pub struct Lock {
    now: i64,
}

fn key(k: usize) -> String {
    // One name with a control character and a non-ASCII letter: errors
    // that name the key show them the same way on both sides.
    if k == 4 {
        return "lock:{4}\u{1}\u{e9}".to_string();
    }
    format!("lock:{{{k}}}")
}

impl Family for Lock {
    const NAME: &'static str = "lock";
    const SEED: u64 = 16_002;
    const TTL: Ttl = Ttl::Exact;

    fn new() -> Lock {
        Lock { now: T0 }
    }

    fn bases(&self) -> Vec<String> {
        (0..KEYS).map(key).collect()
    }

    fn keys_of(&self, base: &str) -> Vec<String> {
        vec![base.to_string()]
    }

    fn targets(&self, base: &str) -> Vec<Target> {
        let b = base.to_string();
        let set = |v: &str| vec![vec![s("SET"), b.clone(), s(v)]];
        let hash = |kv: &[&str]| {
            let mut h = vec![s("HSET"), b.clone()];
            h.extend(kv.iter().map(s));
            vec![vec![s("DEL"), b.clone()], h]
        };
        let far = (T0 + 10_000_000).to_string();
        let max = MAX_INT.to_string();
        let big = (MAX_INT + 1).to_string();
        vec![Target {
            key: b.clone(),
            wrong_types: vec!["list", "set", "zset"],
            garbage: vec![
                set("junk"),
                set("3:1:5:0:"),
                set("7:0:0:0:"),
                set("0:1:5:0:a"),
                set("-1:0:0:0:"),
                set("01:1:5:0:a"),
                set(&format!("{max}:0:0:0:")),
                set(&format!("{big}:0:0:0:")),
                set(&format!("5:{max}:{far}:0:alice")),
                set(&format!("5:1:{far}:{far}:alice")),
                hash(&["fence", "1", "limit", "0", "next", "0"]),
                hash(&["fence", "1", "limit", "101", "next", "0"]),
                hash(&["fence", "1", "limit", "3"]),
                hash(&["fence", "1", "limit", "3", "next", "0", "other", "1"]),
                hash(&["fence", &max, "limit", "2", "next", "0"]),
                hash(&["fence", "2", "limit", "2", "next", "5", "holder:bob", "x"]),
                hash(&[
                    "fence",
                    "2",
                    "limit",
                    "2",
                    "next",
                    &far,
                    "holder:alice",
                    &format!("2:{max}:{far}:0"),
                ]),
                vec![vec![s("HSET"), b.clone(), s("holder:zed"), s("1:1:5:0")]],
                hash(&[
                    "fence",
                    "2",
                    "limit",
                    "2",
                    "next",
                    &far,
                    "holder:line\r\nbreak",
                    &format!("2:{max}:{far}:0"),
                ]),
            ],
        }]
    }

    fn step(&mut self, rng: &mut StdRng) -> Call {
        self.now += match rng.gen_range(0..10) {
            0..=4 => 0,
            5..=8 => rng.gen_range(1..400),
            _ => rng.gen_range(1000..5000),
        };
        // Keys 0-2 are mutexes, 3-5 semaphores (sometimes the wrong kind
        // is asked for).
        let k = rng.gen_range(0..KEYS);
        let b = key(k);
        let owner = s(*pick(
            rng,
            &["alice", "bob", "carol", "d:e", "é", "x\ty", "line\r\nbreak"],
        ));
        let ttl = s(*pick(rng, &[1, 50, 300, 1000, 3000]));
        let pinned = !rng.gen_bool(0.02);
        let now = [s("NOW"), s(self.now)];
        let op = rng.gen_range(0..100);
        let mut call = if op < 40 {
            let mut rest = vec![owner, ttl];
            if k >= 3 || rng.gen_bool(0.05) {
                let limit = if rng.gen_bool(0.9) {
                    2 + (k % 3)
                } else {
                    rng.gen_range(1..5)
                };
                if rng.gen_bool(0.8) {
                    rest.extend([s("LIMIT"), s(limit)]);
                }
            } else if rng.gen_bool(0.1) {
                rest.extend([s("limit"), s(1)]);
            }
            if rng.gen_bool(0.2) {
                rest.extend([s("MAXHOLD"), s(rng.gen_range(1..2000))]);
            }
            let block = rng.gen_bool(0.1);
            if block {
                rest.extend([s("BLOCK"), s(*pick(rng, &[0, 10, 5000]))]);
            }
            if pinned {
                rest.extend(now);
            }
            let c = Call::owned("LOCK.ACQUIRE", &b, rest);
            if block {
                c.blocking()
            } else {
                c
            }
        } else if op < 60 {
            let mut rest = vec![owner];
            if pinned {
                rest.extend(now);
            }
            Call::owned("LOCK.RELEASE", &b, rest)
        } else if op < 72 {
            let mut rest = vec![owner, ttl];
            if pinned {
                rest.extend(now);
            }
            Call::owned("LOCK.RENEW", &b, rest)
        } else if op < 82 {
            let rest = if pinned { now.to_vec() } else { vec![] };
            Call::owned("LOCK.INFO", &b, rest)
        } else if op < 90 {
            let t = rng.gen_range(-1..12);
            let mut rest = vec![s(t)];
            if pinned {
                rest.extend([s("now"), s(self.now)]);
            }
            Call::owned("LOCK.CHECK", &b, rest)
        } else {
            let bad: &[(&str, &[&str])] = &[
                ("LOCK.ACQUIRE", &["a"]),
                ("LOCK.ACQUIRE", &["", "10"]),
                ("LOCK.ACQUIRE", &["a", "0"]),
                ("LOCK.ACQUIRE", &["a", "-5"]),
                ("LOCK.ACQUIRE", &["a", "10", "LIMIT"]),
                ("LOCK.ACQUIRE", &["a", "10", "LIMIT", "101"]),
                ("LOCK.ACQUIRE", &["a", "10", "LIMIT", "0"]),
                ("LOCK.ACQUIRE", &["a", "10", "MAXHOLD", "x"]),
                ("LOCK.ACQUIRE", &["a", "10", "BLOCK", "-1"]),
                ("LOCK.ACQUIRE", &["a", "10", "NOW", "253402300800000"]),
                ("LOCK.ACQUIRE", &["a", "10", "FAIR"]),
                ("LOCK.ACQUIRE", &["a", "010"]),
                ("LOCK.ACQUIRE", &["a", "3153600000001"]),
                ("LOCK.ACQUIRE", &["a", "-9223372036854775808"]),
                (
                    "LOCK.ACQUIRE",
                    &["a", "10", "LIMIT", "-1000000000000000000"],
                ),
                ("LOCK.ACQUIRE", &["", "x", "LIMIT", "0"]),
                ("LOCK.RELEASE", &[""]),
                ("LOCK.RELEASE", &[]),
                ("LOCK.RELEASE", &["a", "NOW"]),
                ("LOCK.RELEASE", &["a", "NOW", "-1"]),
                ("LOCK.RELEASE", &["a", "NOW", "1", "NOW", "2"]),
                ("LOCK.RENEW", &["a", "1.5"]),
                ("LOCK.RENEW", &["", "5"]),
                ("LOCK.RENEW", &["a"]),
                ("LOCK.CHECK", &["x"]),
                ("LOCK.CHECK", &[]),
                ("LOCK.CHECK", &["9223372036854775808"]),
                ("LOCK.CHECK", &["-9223372036854775808", "NOW", "5"]),
                ("LOCK.CHECK", &["9007199254740993"]),
                ("LOCK.INFO", &["NOW"]),
                ("LOCK.INFO", &["LATER", "5"]),
            ];
            if rng.gen_bool(0.05) {
                let cmds = [
                    "LOCK.ACQUIRE",
                    "LOCK.RELEASE",
                    "LOCK.RENEW",
                    "LOCK.INFO",
                    "LOCK.CHECK",
                ];
                let cmd = cmds[rng.gen_range(0..cmds.len())];
                return Call::no_key(cmd);
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
            Call::new("LOCK.ACQUIRE", a, &["alice", "5000", "NOW", &t(0)]),
            Call::new(
                "LOCK.ACQUIRE",
                b,
                &["alice", "5000", "LIMIT", "3", "NOW", &t(0)],
            ),
        ];
        let mut probes = Vec::new();
        for k in [a, b] {
            probes.extend([
                Call::new("LOCK.INFO", k, &["NOW", &t(10)]),
                Call::new("LOCK.CHECK", k, &["1", "NOW", &t(10)]),
                Call::new("LOCK.ACQUIRE", k, &["alice", "1000", "NOW", &t(20)]),
                Call::new(
                    "LOCK.ACQUIRE",
                    k,
                    &["bob", "1000", "LIMIT", "3", "NOW", &t(20)],
                ),
                Call::new("LOCK.RENEW", k, &["alice", "1000", "NOW", &t(30)]),
                Call::new("LOCK.RELEASE", k, &["alice", "NOW", &t(40)]),
                Call::new("LOCK.ACQUIRE", k, &["carol", "1000", "NOW", &t(9000)]),
            ]);
        }
        (setup, probes)
    }
}
