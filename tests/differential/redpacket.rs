//! REDPACKET in the differential test: EQUAL splits (pinned: the same
//! shares on every side), RANDOM splits (unpinned: the module's draws are
//! copied to the twins, and the shares are checked by invariants), totals
//! up to 2^53 − 1 (RANDOM past 2^31 included, issue 16), grabs, reads,
//! refunds, malformed arguments (20-character negative integers, issue
//! 16), calls with no key, and faults in the packet's three keys. Every
//! instant is given with NOW in 2100, so every expiry is exact.

use rand::rngs::StdRng;
use rand::Rng;

use super::harness::{near, pick, s, Call, Family, Resp, Target, Ttl};

/// 2100-01-01: expiries computed from NOW lie ahead of the servers'
/// clocks, so no key expires during the run.
const T0: i64 = 4_102_444_800_000;
const KEYS: usize = 4;

pub struct Redpacket {
    now: i64,
}

fn key(k: usize) -> String {
    if k == 3 {
        return "rp:{3}\u{1}\u{e9}".to_string();
    }
    format!("rp:{{{k}}}")
}

impl Family for Redpacket {
    const NAME: &'static str = "redpacket";
    const SEED: u64 = 16_004;
    const TTL: Ttl = Ttl::Exact;

    fn new() -> Redpacket {
        Redpacket { now: T0 }
    }

    fn bases(&self) -> Vec<String> {
        (0..KEYS).map(key).collect()
    }

    fn keys_of(&self, base: &str) -> Vec<String> {
        ["meta", "pool", "grabbed"]
            .iter()
            .map(|x| format!("{base}:{x}"))
            .collect()
    }

    fn targets(&self, base: &str) -> Vec<Target> {
        let meta = format!("{base}:meta");
        let pool = format!("{base}:pool");
        let grabbed = format!("{base}:grabbed");
        let hset = |k: &str, f: &str, v: &str| vec![vec![s("HSET"), s(k), s(f), s(v)]];
        vec![
            Target {
                key: meta.clone(),
                wrong_types: vec!["string", "list", "zset"],
                garbage: vec![
                    hset(&meta, "state", "x"),
                    hset(&meta, "total", "abc"),
                    hset(&meta, "left_cents", "-1"),
                    hset(&meta, "count", "0"),
                    hset(&meta, "expires", "1.5"),
                    hset(&meta, "left_cents", "9007199254740993"),
                ],
            },
            Target {
                key: pool.clone(),
                wrong_types: vec!["string", "hash"],
                garbage: vec![
                    vec![vec![s("LPUSH"), pool.clone(), s("x")]],
                    vec![vec![s("LPUSH"), pool.clone(), s("0")]],
                    vec![vec![s("LPUSH"), pool.clone(), s("-5")]],
                    vec![vec![s("LPUSH"), pool.clone(), s("9007199254740993")]],
                ],
            },
            Target {
                key: grabbed.clone(),
                wrong_types: vec!["string", "list"],
                garbage: vec![
                    hset(&grabbed, "u1", "x"),
                    hset(&grabbed, "u1", "9007199254740993"),
                ],
            },
        ]
    }

    fn step(&mut self, rng: &mut StdRng) -> Call {
        self.now += rng.gen_range(0..2000);
        let b = key(rng.gen_range(0..KEYS));
        let pinned = !rng.gen_bool(0.03);
        let now = [s("NOW"), s(self.now)];
        let user = s(*pick(rng, &["u1", "u2", "u3", "u4", "é", "x\ty"]));
        let op = rng.gen_range(0..100);
        let mut call = if op < 20 {
            let count: i64 = *pick(rng, &[1, 2, 3, 7, 50]);
            let total: i64 = match rng.gen_range(0..6) {
                0 => count,
                1 => count + rng.gen_range(0..100),
                2 => rng.gen_range(count..100_000),
                3 => *pick(rng, &[2_147_483_647, 2_147_483_649, 4_294_967_296]),
                4 => *pick(rng, &[(1 << 53) - 1, (1 << 53) - 2, 1 << 52]),
                _ => rng.gen_range(count..1 << 40),
            };
            let mut rest = vec![s(total), s(count)];
            let equal = rng.gen_bool(0.5);
            if equal {
                rest.extend([s("MODE"), s(*pick(rng, &["EQUAL", "equal"]))]);
            } else if rng.gen_bool(0.5) {
                rest.extend([s("MODE"), s("RANDOM")]);
            }
            if rng.gen_bool(0.5) {
                rest.extend([s("TTL"), s(*pick(rng, &[1, 60, 86_400]))]);
            }
            if pinned {
                rest.extend(now);
            }
            let c = Call::owned("REDPACKET.SPLIT", &b, rest);
            if equal {
                c
            } else {
                // The draws are the module's own: checked by invariants,
                // then copied.
                return c.unpinned();
            }
        } else if op < 60 {
            let mut rest = vec![user];
            if pinned {
                rest.extend(now);
            }
            Call::owned("REDPACKET.GRAB", &b, rest)
        } else if op < 72 {
            let rest = if pinned { now.to_vec() } else { vec![] };
            Call::owned("REDPACKET.INFO", &b, rest)
        } else if op < 80 {
            Call::new("REDPACKET.GRABBED", &b, &[])
        } else if op < 85 {
            Call::new("REDPACKET.REFUND", &b, &[])
        } else {
            let bad: &[(&str, &[&str])] = &[
                ("REDPACKET.SPLIT", &["100"]),
                ("REDPACKET.SPLIT", &["100", "0", "NOW", "5"]),
                ("REDPACKET.SPLIT", &["100", "10001", "NOW", "5"]),
                ("REDPACKET.SPLIT", &["5", "10", "NOW", "5"]),
                (
                    "REDPACKET.SPLIT",
                    &["100", "-1000000000000000000", "MODE", "EQUAL", "NOW", "5"],
                ),
                (
                    "REDPACKET.SPLIT",
                    &["-9223372036854775808", "2", "NOW", "5"],
                ),
                ("REDPACKET.SPLIT", &["9007199254740992", "2", "NOW", "5"]),
                ("REDPACKET.SPLIT", &["100", "2", "MODE", "HALF"]),
                ("REDPACKET.SPLIT", &["100", "2", "TTL", "0"]),
                ("REDPACKET.SPLIT", &["100", "2", "TTL"]),
                ("REDPACKET.SPLIT", &["1.5", "2"]),
                ("REDPACKET.SPLIT", &["100", "2", "NOW", "-1"]),
                ("REDPACKET.GRAB", &[]),
                ("REDPACKET.GRAB", &[""]),
                ("REDPACKET.GRAB", &["u1", "NOW"]),
                ("REDPACKET.GRAB", &["u1", "LATER", "5"]),
                ("REDPACKET.INFO", &["NOW", "x"]),
                ("REDPACKET.GRABBED", &["x"]),
                ("REDPACKET.REFUND", &["x"]),
            ];
            if rng.gen_bool(0.1) {
                let cmds = [
                    "REDPACKET.SPLIT",
                    "REDPACKET.GRAB",
                    "REDPACKET.INFO",
                    "REDPACKET.GRABBED",
                    "REDPACKET.REFUND",
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

    fn check_unpinned(&self, call: &Call, m: &Resp, t: &Resp, slack: i64) -> Result<(), String> {
        if call.cmd == "REDPACKET.SPLIT" && !m.is_error() {
            // Both reply the count of shares; the shares themselves (sum,
            // a cent at least) are checked by
            // `redpacket_random_splits_keep_their_invariants`.
            return near(m, t, 0);
        }
        near(m, t, slack)
    }

    fn sweep(&self, bases: &[String]) -> (Vec<Call>, Vec<Call>) {
        let (a, b) = (&bases[0], &bases[1]);
        let t = |d: i64| (T0 + d).to_string();
        let setup = vec![
            Call::new(
                "REDPACKET.SPLIT",
                a,
                &["1000", "4", "MODE", "EQUAL", "TTL", "600", "NOW", &t(0)],
            ),
            Call::new("REDPACKET.GRAB", a, &["u1", "NOW", &t(1)]),
            Call::new(
                "REDPACKET.SPLIT",
                b,
                &["9007199254740991", "3", "MODE", "EQUAL", "NOW", &t(0)],
            ),
        ];
        let mut probes = Vec::new();
        for k in [a, b] {
            probes.extend([
                Call::new("REDPACKET.INFO", k, &["NOW", &t(10)]),
                Call::new("REDPACKET.GRAB", k, &["u2", "NOW", &t(10)]),
                Call::new("REDPACKET.GRAB", k, &["u1", "NOW", &t(11)]),
                Call::new("REDPACKET.GRABBED", k, &[]),
                Call::new("REDPACKET.REFUND", k, &[]),
                Call::new(
                    "REDPACKET.SPLIT",
                    k,
                    &["100", "2", "MODE", "EQUAL", "NOW", &t(20)],
                ),
                Call::new("REDPACKET.INFO", k, &["NOW", &t(30)]),
            ]);
        }
        (setup, probes)
    }
}
