//! RATE in the differential test: every algorithm, RATE.MULTI,
//! RATE.THROTTLE and RATE.RESET, at small values and at the largest ones
//! (where the twins need their exact multiply-divide), states of the
//! millisecond version, malformed arguments, calls without a time option
//! (the server clock), and faults in the limiter keys. Expiry instants
//! count from the server clock ([`Ttl::Clock`]).

use rand::rngs::StdRng;
use rand::Rng;

use super::harness::{pick, s, Call, Family, Target, Ttl};

const T0: i64 = 1_764_720_000_000;
const ALGOS: [&str; 5] = ["GCRA", "FIXED", "SLIDING", "LOG", "BUCKET"];
const KEYS: usize = 6;

pub struct Rate {
    /// The clock of the stream, in µs.
    now: i64,
}

fn key(k: usize) -> String {
    // One name with a control character and a non-ASCII letter: errors
    // that name the key show them the same way on both sides.
    if k == 3 {
        return "rate:{3}\t\u{e9}".to_string();
    }
    format!("rate:{{{k}}}")
}

impl Rate {
    /// `NOW` (whole ms, half of the time when possible) or `NOWUS`.
    fn time_opt(&self, rng: &mut StdRng) -> [String; 2] {
        if self.now % 1000 == 0 && rng.gen_bool(0.5) {
            [s("NOW"), s(self.now / 1000)]
        } else {
            [s("NOWUS"), s(self.now)]
        }
    }

    fn limit_period(rng: &mut StdRng, huge: bool) -> (i64, i64) {
        if huge {
            (
                rng.gen_range(1..=1_000_000_000_000i64),
                rng.gen_range(60_000..=1_000_000_000_000i64),
            )
        } else {
            let periods = [1000, 60_000, 60_007, 90_001, 180_000, 600_011];
            (rng.gen_range(1..9), *pick(rng, &periods))
        }
    }

    fn check(&self, rng: &mut StdRng, k: usize, huge: bool, pinned: bool) -> Call {
        // Each key mostly keeps one algorithm; sometimes another is tried.
        let algo = if rng.gen_bool(0.9) {
            ALGOS[k % 5]
        } else {
            *pick(rng, &ALGOS)
        };
        let (limit, period) = Rate::limit_period(rng, huge);
        let mut rest = vec![s(limit), s(period)];
        if algo != "GCRA" || rng.gen_bool(0.5) {
            let spelled = if rng.gen_bool(0.5) {
                algo.to_lowercase()
            } else {
                algo.to_string()
            };
            rest.extend([s("ALGO"), spelled]);
        }
        let burst_ok = algo == "GCRA" || algo == "BUCKET";
        if (burst_ok && rng.gen_bool(0.5)) || rng.gen_bool(0.02) {
            let b = if huge {
                rng.gen_range(1..=1_000_000_000_000i64)
            } else {
                rng.gen_range(1..9)
            };
            rest.extend([s("BURST"), s(b)]);
        }
        if rng.gen_bool(0.5) {
            let cost = if rng.gen_bool(0.1) {
                9
            } else if huge && rng.gen_bool(0.5) && algo != "LOG" {
                rng.gen_range(0..1_000_000_000_000i64)
            } else {
                rng.gen_range(0..4)
            };
            rest.extend([s("COST"), s(cost)]);
        }
        if rng.gen_bool(0.15) {
            rest.push(s("PEEK"));
        }
        if pinned {
            rest.extend(self.time_opt(rng));
        }
        let c = Call::owned("RATE.CHECK", &key(k), rest);
        if pinned {
            c
        } else {
            c.unpinned()
        }
    }
}

impl Family for Rate {
    const NAME: &'static str = "rate";
    const SEED: u64 = 16_001;
    const TTL: Ttl = Ttl::Clock;

    fn new() -> Rate {
        Rate { now: T0 * 1000 }
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
        let zset = |kv: &[&str]| {
            let mut z = vec![s("ZADD"), b.clone()];
            z.extend(kv.iter().map(s));
            vec![vec![s("DEL"), b.clone()], z]
        };
        let t0 = T0.to_string();
        vec![Target {
            key: b.clone(),
            wrong_types: vec!["list", "set"],
            garbage: vec![
                set("hello"),
                set("gcra:1:5:3"),
                set("gcra:1:2"),
                set("gcra:-1:0:1000"),
                set("gcra:9000000000001:0:1000"),
                set("fixed:1:1000000000001"),
                set("fixed:01:1"),
                set("sliding:x:1:2"),
                set("bucket:1:2:99999999999999999"),
                set("bucket:1:2:3:4"),
                set("gcra:1:2:3:"),
                hash(&["algo", "other"]),
                hash(&["algo", "bucket", "tokens", "x"]),
                hash(&["algo", "sliding", "window", "5", "count", "1"]),
                hash(&["count", "1"]),
                zset(&["1.5", "0000000000000001-0"]),
                zset(&["+inf", "0000000000000001-0"]),
                zset(&["-5", "x"]),
                zset(&["5", "abc", "7", "0000000000000007-0"]),
                zset(&["1e300", "0000000000000001-0"]),
                // States the millisecond version wrote: valid, and read.
                set(&format!("gcra:{}:2:5", T0 + 30_000)),
                set(&format!("gcra:{}:1:3", T0 + 5_000)),
                hash(&["algo", "sliding", "window", &t0, "count", "4", "prev", "7"]),
                hash(&["algo", "bucket", "tokens", "2", "carry", "400", "ts", &t0]),
                zset(&[
                    &t0,
                    &format!("{T0}-0"),
                    &(T0 + 10).to_string(),
                    &format!("{}-1", T0 + 10),
                ]),
            ],
        }]
    }

    fn step(&mut self, rng: &mut StdRng) -> Call {
        self.now += match rng.gen_range(0..10) {
            0..=2 => 0,
            3 => 1000 * rng.gen_range(1..5000),
            4..=7 => rng.gen_range(1..5_000_000),
            _ => rng.gen_range(10_000_000..200_000_000),
        };
        let huge = rng.gen_bool(0.2);
        let k = rng.gen_range(0..KEYS);
        // RATE.MULTI and RATE.THROTTLE are GCRA: mostly on the keys whose
        // home is GCRA (0 and 5), sometimes on the others.
        let gcra = |rng: &mut StdRng| {
            if rng.gen_bool(0.8) {
                *pick(rng, &[0, 5])
            } else {
                rng.gen_range(0..KEYS)
            }
        };
        let op = rng.gen_range(0..100);
        let call = if op < 62 {
            self.check(rng, k, huge, true)
        } else if op < 64 {
            // The server clock: small values, so that the replies of the
            // three servers, a few ms apart, stay within the slack.
            self.check(rng, k, false, false)
        } else if op < 74 {
            let n = rng.gen_range(1..4);
            let keys: Vec<String> = (0..n).map(|_| key(gcra(rng))).collect();
            let mut rest = vec![s("LIMITS")];
            for _ in 0..n {
                let (l, p) = Rate::limit_period(rng, huge);
                rest.extend([s(l), s(p)]);
            }
            if rng.gen_bool(0.4) {
                rest.extend([s("COST"), s(rng.gen_range(0..4))]);
            }
            if rng.gen_bool(0.15) {
                rest.push(s("peek"));
            }
            rest.extend(self.time_opt(rng));
            Call {
                cmd: "RATE.MULTI",
                keys,
                args: rest.into_iter().map(String::into_bytes).collect(),
                numkeys_arg: true,
                pinned: true,
                may_block: false,
                twin_prefix: vec![],
            }
        } else if op < 84 {
            let mut rest = if huge {
                vec![
                    s(rng.gen_range(0..1_000_000_000i64)),
                    s(rng.gen_range(1..=1_000_000_000_000i64)),
                    s(rng.gen_range(60..1_000_000_000i64)),
                ]
            } else {
                vec![
                    s(rng.gen_range(0..5)),
                    s(rng.gen_range(1..9)),
                    s(rng.gen_range(60..200)),
                ]
            };
            if rng.gen_bool(0.5) {
                rest.push(s(rng.gen_range(0..4)));
            }
            rest.extend(self.time_opt(rng));
            Call::owned("RATE.THROTTLE", &key(gcra(rng)), rest)
        } else if op < 88 {
            Call::new("RATE.RESET", &key(k), &[])
        } else {
            let bad: &[(&str, &[&str])] = &[
                ("RATE.CHECK", &["0", "1000"]),
                ("RATE.CHECK", &["x", "1000"]),
                ("RATE.CHECK", &["5"]),
                ("RATE.CHECK", &["-5", "1000"]),
                ("RATE.CHECK", &["5", "1000", "ALGO"]),
                ("RATE.CHECK", &["5", "1000", "ALGO", "nope"]),
                ("RATE.CHECK", &["5", "1000", "COST", "-1"]),
                ("RATE.CHECK", &["5", "1000", "COST"]),
                ("RATE.CHECK", &["5", "1000", "NOW", "1.5"]),
                ("RATE.CHECK", &["5", "1000", "NOW", "4500000000001"]),
                ("RATE.CHECK", &["5", "1000", "NOWUS", "4500000000000001"]),
                ("RATE.CHECK", &["5", "1000", "NOWUS"]),
                ("RATE.CHECK", &["5", "1000", "ALGO", "FIXED", "BURST", "2"]),
                ("RATE.CHECK", &["100001", "1000", "ALGO", "LOG"]),
                ("RATE.CHECK", &["5", "1000", "ALGO", "LOG", "COST", "101"]),
                ("RATE.CHECK", &["1", "1000000000000", "BURST", "5"]),
                ("RATE.CHECK", &["5", "1000", "EXTRA"]),
                ("RATE.CHECK", &["5", "01000"]),
                ("RATE.CHECK", &["9223372036854775808", "1000"]),
                ("RATE.CHECK", &["-9223372036854775808", "1000"]),
                ("RATE.CHECK", &["5", "1000", "NOW", "-1000000000000000000"]),
                ("RATE.THROTTLE", &["1", "2"]),
                ("RATE.THROTTLE", &["-1", "2", "60"]),
                ("RATE.THROTTLE", &["1", "0", "60"]),
                ("RATE.THROTTLE", &["1", "2", "60", "1", "2"]),
                ("RATE.THROTTLE", &["1", "2", "60", "NOW"]),
                ("RATE.THROTTLE", &["1", "2", "60", "1", "NOWUS", "x"]),
                ("RATE.THROTTLE", &["999999999999", "1", "1000000000"]),
                ("RATE.RESET", &["extra"]),
            ];
            if rng.gen_bool(0.05) {
                let cmds = ["RATE.CHECK", "RATE.MULTI", "RATE.THROTTLE", "RATE.RESET"];
                let cmd = cmds[rng.gen_range(0..cmds.len())];
                return Call::no_key(cmd);
            }
            let (cmd, args) = *pick(rng, bad);
            Call::new(cmd, &key(k), args)
        };
        call
    }

    fn pairs_across_bases(&self) -> bool {
        true
    }

    fn sweep(&self, bases: &[String]) -> (Vec<Call>, Vec<Call>) {
        let (a, b) = (&bases[0], &bases[1]);
        let now = (T0 + 1000).to_string();
        let setup = vec![
            Call::new("RATE.CHECK", a, &["5", "60000", "NOW", &now]),
            Call::new("RATE.CHECK", b, &["5", "60000", "NOW", &now]),
        ];
        let later = (T0 + 2000).to_string();
        let mut probes: Vec<Call> = ALGOS
            .iter()
            .map(|al| Call::new("RATE.CHECK", a, &["5", "60000", "ALGO", al, "NOW", &later]))
            .collect();
        probes.push(Call::new(
            "RATE.CHECK",
            b,
            &["5", "60000", "ALGO", "SLIDING", "NOW", &later],
        ));
        probes.push(Call::new(
            "RATE.THROTTLE",
            a,
            &["4", "5", "60", "NOW", &later],
        ));
        probes.push(Call {
            cmd: "RATE.MULTI",
            keys: vec![a.clone(), b.clone()],
            args: ["LIMITS", "5", "60000", "9", "1000", "NOW", &later]
                .iter()
                .map(|x| x.as_bytes().to_vec())
                .collect(),
            numkeys_arg: true,
            pinned: true,
            may_block: false,
            twin_prefix: vec![],
        });
        probes.push(Call::new("RATE.RESET", b, &[]));
        probes.push(Call::new("RATE.RESET", a, &[]));
        (setup, probes)
    }
}
