//! IDEM in the differential test: BEGIN with matching and other
//! fingerprints, leases that run out and TTLs, COMPLETE with live, stale
//! and made-up fences, ABORT, GET, malformed arguments, calls on the
//! server clock, and faults in the record. Expiries are computed from NOW
//! when it is given and from the clock otherwise ([`Ttl::Clock`]).

use rand::rngs::StdRng;
use rand::Rng;

use super::harness::{pick, s, Call, Family, Resp, Target, Ttl};

/// 2030-01-01: records expire a TTL after NOW, which stays ahead of the
/// server clock.
const T0: i64 = 1_893_456_000_000;
const KEYS: usize = 5;
const MAX_INT: i64 = (1 << 53) - 1;

pub struct Idem {
    now: i64,
    /// Fences seen in NEW replies, for COMPLETE and ABORT.
    fences: Vec<i64>,
}

fn key(k: usize) -> String {
    // One name with a control character and a non-ASCII letter: errors
    // that name the key show them the same way on both sides.
    if k == 4 {
        return "idem:{4}\u{1}\u{e9}".to_string();
    }
    format!("idem:{{{k}}}")
}

impl Family for Idem {
    const NAME: &'static str = "idem";
    const SEED: u64 = 16_009;
    const TTL: Ttl = Ttl::Clock;

    fn new() -> Idem {
        Idem {
            now: T0,
            fences: vec![1, T0],
        }
    }

    fn bases(&self) -> Vec<String> {
        (0..KEYS).map(key).collect()
    }

    fn keys_of(&self, base: &str) -> Vec<String> {
        vec![base.to_string()]
    }

    fn targets(&self, base: &str) -> Vec<Target> {
        let b = base.to_string();
        let hash = |kv: &[&str]| {
            let mut h = vec![s("HSET"), b.clone()];
            h.extend(kv.iter().map(s));
            vec![vec![s("DEL"), b.clone()], h]
        };
        let far = (T0 + 10_000_000).to_string();
        let max = MAX_INT.to_string();
        let big = (MAX_INT + 1).to_string();
        let rec = |state: &str, fence: &str, lease: &str, ttl: &str| {
            hash(&[
                "state", state, "fp", "fa", "fence", fence, "lease", lease, "ttl", ttl,
            ])
        };
        vec![Target {
            key: b.clone(),
            wrong_types: vec!["string", "list", "set", "zset"],
            garbage: vec![
                hash(&["state", "weird"]),
                hash(&["state", "running"]),
                hash(&["state", "running", "fp", ""]),
                rec("running", "-1", "0", "10"),
                rec("running", "01", "0", "10"),
                rec("running", &big, "0", "10"),
                rec("running", "5", "x", "10"),
                rec("running", "5", &far, "0"),
                rec("running", "5", &far, "3153600001"),
                rec("aborted", &max, "0", "10"),
                rec("running", &max, "0", "10"),
                rec("done", "5", "0", "10"),
                hash(&[
                    "state", "running", "fp", "fa", "fence", "5", "lease", &far, "ttl", "10",
                    "result", "x",
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
        let b = key(rng.gen_range(0..KEYS));
        let fp = s(*pick(rng, &["fa", "fb", "f:c", "é", "line\r\nbreak"]));
        let fence = if rng.gen_bool(0.85) {
            *pick(rng, &self.fences)
        } else {
            rng.gen_range(-2..3)
        };
        let pinned = !rng.gen_bool(0.02);
        let now = [s("NOW"), s(self.now)];
        let op = rng.gen_range(0..100);
        let mut call = if op < 35 {
            let mut rest = vec![fp, s(*pick(rng, &[1, 50, 300, 1000, 3000]))];
            if rng.gen_bool(0.3) {
                rest.extend([s("TTL"), s(rng.gen_range(1..200))]);
            }
            if pinned {
                rest.extend(now);
            }
            Call::owned("IDEM.BEGIN", &b, rest)
        } else if op < 60 {
            let result = s(*pick(rng, &["ok", "", "r:2", "a\r\nb", "é"]));
            let mut rest = vec![s(fence), result];
            if pinned {
                rest.extend(now);
            }
            Call::owned("IDEM.COMPLETE", &b, rest)
        } else if op < 72 {
            Call::owned("IDEM.ABORT", &b, vec![s(fence)])
        } else if op < 84 {
            let rest = if pinned { now.to_vec() } else { vec![] };
            Call::owned("IDEM.GET", &b, rest)
        } else {
            let bad: &[(&str, &[&str])] = &[
                ("IDEM.BEGIN", &["f"]),
                ("IDEM.BEGIN", &[]),
                ("IDEM.BEGIN", &["", "10"]),
                ("IDEM.BEGIN", &["", "x"]),
                ("IDEM.BEGIN", &["f", "0"]),
                ("IDEM.BEGIN", &["f", "010"]),
                ("IDEM.BEGIN", &["f", "3153600000001"]),
                ("IDEM.BEGIN", &["f", "-9223372036854775808"]),
                ("IDEM.BEGIN", &["f", "10", "TTL"]),
                ("IDEM.BEGIN", &["f", "10", "TTL", "0"]),
                ("IDEM.BEGIN", &["f", "10", "TTL", "3153600001"]),
                ("IDEM.BEGIN", &["f", "10", "ttl", "5", "TTL", "5"]),
                ("IDEM.BEGIN", &["f", "10", "NOW", "253402300800000"]),
                ("IDEM.BEGIN", &["f", "10", "NOW", "1", "NOW", "1"]),
                ("IDEM.BEGIN", &["f", "10", "LEASE", "5"]),
                ("IDEM.COMPLETE", &["1"]),
                ("IDEM.COMPLETE", &[]),
                ("IDEM.COMPLETE", &["x", "r"]),
                ("IDEM.COMPLETE", &["1", "r", "NOW"]),
                ("IDEM.COMPLETE", &["1", "r", "NOW", "5", "NOW", "5"]),
                ("IDEM.COMPLETE", &["9223372036854775808", "r"]),
                ("IDEM.COMPLETE", &["9007199254740993", "r", "NOW", "5"]),
                ("IDEM.ABORT", &[]),
                ("IDEM.ABORT", &["1", "2"]),
                ("IDEM.ABORT", &["1.5"]),
                ("IDEM.GET", &["NOW"]),
                ("IDEM.GET", &["LATER", "5"]),
                ("IDEM.GET", &["NOW", "-1"]),
            ];
            if rng.gen_bool(0.05) {
                let cmds = ["IDEM.BEGIN", "IDEM.COMPLETE", "IDEM.ABORT", "IDEM.GET"];
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
        if call.cmd != "IDEM.BEGIN" || !call.pinned {
            return;
        }
        let items = reply.items();
        if items.len() == 2 && items[0].bytes() == Some(b"NEW".as_slice()) {
            if let Some(f) = items[1].int() {
                self.fences.push(f);
            }
        }
    }

    fn sweep(&self, bases: &[String]) -> (Vec<Call>, Vec<Call>) {
        let (a, b) = (&bases[0], &bases[1]);
        let t = |d: i64| (T0 + d).to_string();
        let setup = vec![
            Call::new("IDEM.BEGIN", a, &["fa", "5000", "NOW", &t(0)]),
            Call::new("IDEM.BEGIN", b, &["fa", "5000", "TTL", "100", "NOW", &t(0)]),
            Call::new("IDEM.COMPLETE", b, &[&t(0), "r", "NOW", &t(5)]),
        ];
        let mut probes = Vec::new();
        for k in [a, b] {
            probes.extend([
                Call::new("IDEM.GET", k, &["NOW", &t(10)]),
                Call::new("IDEM.BEGIN", k, &["fa", "1000", "NOW", &t(20)]),
                Call::new("IDEM.BEGIN", k, &["fb", "1000", "NOW", &t(20)]),
                Call::new("IDEM.COMPLETE", k, &[&t(0), "r", "NOW", &t(30)]),
                Call::new("IDEM.COMPLETE", k, &["5", "r", "NOW", &t(30)]),
                Call::new("IDEM.ABORT", k, &[&t(0)]),
                Call::new("IDEM.ABORT", k, &["5"]),
                Call::new("IDEM.BEGIN", k, &["fa", "1000", "NOW", &t(9000)]),
            ]);
        }
        (setup, probes)
    }
}
