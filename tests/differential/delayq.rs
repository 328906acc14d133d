//! DELAYQ in the differential test: adds (delays, due times, attempts,
//! REPLACE), polls (BLOCK inside MULTI answers at once, as the twin
//! always does), acks, nacks with delay and backoff, lease heartbeats,
//! dead letters, re-drives, cancels, peeks, purges, reads, malformed
//! arguments, calls on the server clock, and faults in the four keys of a queue (`B:jobs`,
//! `B:due`, `B:dead`, `B:seq`), one or two at a time. DELAYQ sets no
//! expiry ([`Ttl::Exact`]).

use rand::rngs::StdRng;
use rand::Rng;

use super::harness::{pick, s, Call, Family, Resp, Target, Ttl};

const T0: i64 = 1_764_720_000_000;
const QUEUES: usize = 3;

pub struct Delayq {
    now: i64,
    /// Deliveries seen: (queue, id, receipt).
    seen: Vec<(String, Vec<u8>, i64)>,
}

fn key(k: usize) -> String {
    // One name with a control character and a non-ASCII letter: errors
    // that name the key show them the same way on both sides.
    if k == 2 {
        return "q:{2}\u{1}\u{e9}".to_string();
    }
    format!("q:{{{k}}}")
}

impl Family for Delayq {
    const NAME: &'static str = "delayq";
    const SEED: u64 = 16_003;
    const TTL: Ttl = Ttl::Exact;

    fn new() -> Delayq {
        Delayq {
            now: T0,
            seen: Vec::new(),
        }
    }

    fn bases(&self) -> Vec<String> {
        (0..QUEUES).map(key).collect()
    }

    fn keys_of(&self, base: &str) -> Vec<String> {
        ["jobs", "due", "dead", "seq"]
            .iter()
            .map(|x| format!("{base}:{x}"))
            .collect()
    }

    fn targets(&self, base: &str) -> Vec<Target> {
        let k = |x: &str| format!("{base}:{x}");
        let cmd = |parts: &[&str]| parts.iter().map(s).collect::<Vec<String>>();
        let (jobs, due, dead, seq) = (k("jobs"), k("due"), k("dead"), k("seq"));
        vec![
            Target {
                key: jobs.clone(),
                wrong_types: vec!["string", "list", "zset"],
                garbage: vec![
                    vec![cmd(&["HSET", &jobs, "j1", "junk"])],
                    vec![cmd(&["HSET", &jobs, "j2", "1:0:0:0:p"])],
                    vec![cmd(&["HSET", &jobs, "j3", "1:4:3:0:p"])],
                    vec![cmd(&["HSET", &jobs, "j0", "9007199254:0:5:0:p"])],
                    vec![cmd(&["HSET", &jobs, "j1", "1:0:5:1:p"])],
                    vec![cmd(&["HSET", &jobs, "j2", "01:1:5:1:p"])],
                    vec![
                        cmd(&["HSET", &jobs, "j\u{1}", "x"]),
                        cmd(&["ZADD", &due, "0", "j\u{1}"]),
                    ],
                ],
            },
            Target {
                key: due.clone(),
                wrong_types: vec!["string", "hash", "set"],
                garbage: vec![
                    vec![cmd(&["ZADD", &due, "5", "ghost"])],
                    vec![cmd(&["ZADD", &due, "1e300", "j0"])],
                    vec![cmd(&["ZADD", &due, "-inf", "j1"])],
                    vec![cmd(&["ZADD", &due, "1.5", "j2"])],
                ],
            },
            Target {
                key: dead.clone(),
                wrong_types: vec!["string", "hash"],
                garbage: vec![
                    vec![cmd(&["ZADD", &dead, "5", "ghost"])],
                    vec![
                        cmd(&["HSET", &jobs, "j3", "1:2:2:0:p"]),
                        cmd(&["ZADD", &dead, "1e300", "j3"]),
                    ],
                    vec![
                        cmd(&["HSET", &jobs, "j3", "1:2:2:0:p"]),
                        cmd(&["ZADD", &dead, "-1.5", "j3"]),
                    ],
                    vec![
                        cmd(&["HSET", &jobs, "j3", "1:2:2:0:p"]),
                        cmd(&["ZADD", &dead, "inf", "j3"]),
                    ],
                ],
            },
            Target {
                key: seq.clone(),
                wrong_types: vec!["hash", "list"],
                garbage: vec![
                    vec![cmd(&["SET", &seq, "x"])],
                    vec![cmd(&["SET", &seq, "9007199253"])],
                    vec![cmd(&["SET", &seq, "9007199252"])],
                    vec![cmd(&["SET", &seq, "-1"])],
                    vec![cmd(&["SET", &seq, "01"])],
                ],
            },
        ]
    }

    fn step(&mut self, rng: &mut StdRng) -> Call {
        self.now += match rng.gen_range(0..10) {
            0..=4 => 0,
            5..=8 => rng.gen_range(1..300),
            _ => rng.gen_range(500..3000),
        };
        let q = key(rng.gen_range(0..QUEUES));
        // Ids with odd bytes now and then: they appear in error lines.
        let id = match rng.gen_range(0..40) {
            0 => s("j\u{1}"),
            1 => s("j \u{e9}\r\n"),
            n => format!("j{}", n % 8),
        };
        let pinned = !rng.gen_bool(0.02);
        let now = |rest: &mut Vec<String>, n: i64| {
            if pinned {
                rest.extend([s("NOW"), s(n)]);
            }
        };
        let op = rng.gen_range(0..112);
        let mut call = if op >= 108 {
            let mut rest = Vec::new();
            if rng.gen_bool(0.6) {
                rest.extend([s("MAXLEN"), s(rng.gen_range(0..4))]);
            }
            if rest.is_empty() || rng.gen_bool(0.4) {
                rest.extend([s("MAXAGE"), s(rng.gen_range(0..4000))]);
            }
            now(&mut rest, self.now);
            Call::owned("DELAYQ.PURGE", &q, rest)
        } else if op >= 104 {
            let rest = match rng.gen_range(0..3) {
                0 => vec![s("COUNT"), s(rng.gen_range(1..5))],
                1 => vec![s("ID"), id],
                _ => vec![],
            };
            Call::owned("DELAYQ.PEEK", &q, rest)
        } else if op >= 100 {
            let mut rest = vec![id];
            if rng.gen_bool(0.3) {
                rest.push(s("force"));
            }
            now(&mut rest, self.now);
            Call::owned("DELAYQ.CANCEL", &q, rest)
        } else if op < 25 {
            let payload = *pick(
                rng,
                &[
                    "p",
                    "",
                    "a:b:c",
                    "{\"x\":1}",
                    "\u{e9}\u{0}z",
                    "line\r\nbreak",
                ],
            );
            let mut rest = vec![id, s(payload)];
            match rng.gen_range(0..4) {
                0 => rest.extend([s("DELAY"), s(rng.gen_range(0..2000))]),
                1 => rest.extend([s("AT"), s(self.now + rng.gen_range(-500..1500))]),
                _ => {}
            }
            if rng.gen_bool(0.4) {
                rest.extend([s("ATTEMPTS"), s(rng.gen_range(1..4))]);
            }
            if rng.gen_bool(0.2) {
                rest.push(s("replace"));
            }
            now(&mut rest, self.now);
            Call::owned("DELAYQ.ADD", &q, rest)
        } else if op < 48 {
            let mut rest = vec![s(*pick(rng, &[100, 500, 1000, 3000]))];
            if rng.gen_bool(0.5) {
                rest.extend([s("COUNT"), s(rng.gen_range(1..5))]);
            }
            let block = rng.gen_bool(0.1);
            if block {
                rest.extend([s("BLOCK"), s(*pick(rng, &[0, 10, 5000]))]);
            }
            now(&mut rest, self.now);
            let c = Call::owned("DELAYQ.POLL", &q, rest);
            if block {
                c.blocking()
            } else {
                c
            }
        } else if op < 78 && !self.seen.is_empty() {
            let (q, jid, receipt) = self.seen[rng.gen_range(0..self.seen.len())].clone();
            let jid = String::from_utf8_lossy(&jid).into_owned();
            let receipt = if rng.gen_bool(0.9) {
                receipt
            } else {
                receipt + 1
            };
            let mut rest = vec![jid, s(receipt)];
            let cmd = match rng.gen_range(0..4) {
                0 | 1 => "DELAYQ.ACK",
                2 => {
                    match rng.gen_range(0..3) {
                        0 => rest.extend([s("DELAY"), s(rng.gen_range(0..1500))]),
                        1 => rest.extend([
                            s("BACKOFF"),
                            s(rng.gen_range(1..400)),
                            s(rng.gen_range(1..3000)),
                        ]),
                        _ => {}
                    }
                    now(&mut rest, self.now);
                    "DELAYQ.NACK"
                }
                _ => {
                    rest.push(s(rng.gen_range(1..2000)));
                    now(&mut rest, self.now);
                    "DELAYQ.EXTEND"
                }
            };
            Call::owned(cmd, &q, rest)
        } else if op < 84 {
            let rest = if rng.gen_bool(0.5) {
                vec![s("COUNT"), s(rng.gen_range(1..4))]
            } else {
                vec![]
            };
            Call::owned("DELAYQ.DEAD", &q, rest)
        } else if op < 89 {
            let mut rest = match rng.gen_range(0..3) {
                0 => vec![s("COUNT"), s(rng.gen_range(1..3))],
                1 => vec![s("ID"), id],
                _ => vec![],
            };
            now(&mut rest, self.now);
            Call::owned("DELAYQ.REDRIVE", &q, rest)
        } else if op < 92 {
            let mut rest = vec![];
            now(&mut rest, self.now);
            Call::owned("DELAYQ.INFO", &q, rest)
        } else {
            let bad: &[(&str, &[&str])] = &[
                ("DELAYQ.ADD", &["a"]),
                ("DELAYQ.ADD", &["", "p"]),
                ("DELAYQ.ADD", &["a", "p", "DELAY", "-1"]),
                ("DELAYQ.ADD", &["a", "p", "DELAY", "1", "AT", "2"]),
                ("DELAYQ.ADD", &["a", "p", "AT", "2", "DELAY", "1"]),
                ("DELAYQ.ADD", &["a", "p", "ATTEMPTS", "0"]),
                ("DELAYQ.ADD", &["a", "p", "ATTEMPTS", "1000000"]),
                ("DELAYQ.ADD", &["a", "p", "AT"]),
                ("DELAYQ.ADD", &["a", "p", "SOON"]),
                ("DELAYQ.ADD", &["a", "p", "DELAY", "-9223372036854775808"]),
                ("DELAYQ.ADD", &["", "p", "DELAY", "x"]),
                ("DELAYQ.POLL", &["0"]),
                ("DELAYQ.POLL", &[]),
                ("DELAYQ.POLL", &["10", "COUNT", "101"]),
                ("DELAYQ.POLL", &["10", "BLOCK"]),
                ("DELAYQ.POLL", &["10", "NOW", "x"]),
                ("DELAYQ.POLL", &["10", "COUNT", "-1000000000000000000"]),
                ("DELAYQ.ACK", &["a", "x"]),
                ("DELAYQ.ACK", &["", "1"]),
                ("DELAYQ.ACK", &["a"]),
                ("DELAYQ.ACK", &["a", "1", "2"]),
                ("DELAYQ.ACK", &["a", "9223372036854775808"]),
                ("DELAYQ.NACK", &["a", "1", "BACKOFF", "5"]),
                ("DELAYQ.NACK", &["a", "1", "BACKOFF", "5", "0"]),
                (
                    "DELAYQ.NACK",
                    &["a", "1", "BACKOFF", "5", "9", "DELAY", "1"],
                ),
                ("DELAYQ.NACK", &["a", "01"]),
                ("DELAYQ.EXTEND", &["a", "1"]),
                ("DELAYQ.EXTEND", &["a", "1", "0"]),
                ("DELAYQ.EXTEND", &["a", "1", "5", "NOW"]),
                ("DELAYQ.DEAD", &["COUNT"]),
                ("DELAYQ.DEAD", &["COUNT", "0"]),
                ("DELAYQ.DEAD", &["COUNT", "1", "COUNT", "2"]),
                ("DELAYQ.REDRIVE", &["ID", ""]),
                ("DELAYQ.REDRIVE", &["ID", "a", "COUNT", "2"]),
                ("DELAYQ.REDRIVE", &["COUNT", "2", "ID", "a"]),
                ("DELAYQ.REDRIVE", &["COUNT"]),
                ("DELAYQ.INFO", &["NOW", "-1"]),
                ("DELAYQ.INFO", &["NOW", "1", "x"]),
                ("DELAYQ.CANCEL", &[]),
                ("DELAYQ.CANCEL", &[""]),
                ("DELAYQ.CANCEL", &["a", "FORCE", "FORCE"]),
                ("DELAYQ.CANCEL", &["a", "NOW", "x"]),
                ("DELAYQ.PEEK", &["COUNT", "0"]),
                ("DELAYQ.PEEK", &["COUNT", "1", "ID", "a"]),
                ("DELAYQ.PEEK", &["ID", ""]),
                ("DELAYQ.PURGE", &[]),
                ("DELAYQ.PURGE", &["MAXLEN", "-1"]),
                ("DELAYQ.PURGE", &["MAXAGE", "1", "MAXAGE", "2"]),
            ];
            if rng.gen_bool(0.05) {
                let cmds = [
                    "DELAYQ.ADD",
                    "DELAYQ.POLL",
                    "DELAYQ.ACK",
                    "DELAYQ.NACK",
                    "DELAYQ.EXTEND",
                    "DELAYQ.DEAD",
                    "DELAYQ.REDRIVE",
                    "DELAYQ.INFO",
                    "DELAYQ.CANCEL",
                    "DELAYQ.PEEK",
                    "DELAYQ.PURGE",
                ];
                let cmd = cmds[rng.gen_range(0..cmds.len())];
                return Call::no_key(cmd);
            }
            let (cmd, args) = *pick(rng, bad);
            Call::new(cmd, &q, args)
        };
        if !pinned {
            call = call.unpinned();
        }
        call
    }

    fn observe(&mut self, call: &Call, reply: &Resp) {
        if call.cmd != "DELAYQ.POLL" {
            return;
        }
        for job in reply.items().chunks(4) {
            if let (Some(id), Some(r)) = (job[0].bytes(), job.get(3).and_then(Resp::int)) {
                self.seen.push((call.keys[0].clone(), id.to_vec(), r));
            }
        }
        if self.seen.len() > 40 {
            self.seen.drain(..20);
        }
    }

    fn sweep(&self, bases: &[String]) -> (Vec<Call>, Vec<Call>) {
        let t = |d: i64| (T0 + d).to_string();
        let mut setup = Vec::new();
        let mut probes = Vec::new();
        for q in bases {
            // Generations 1, 2, 3: the first poll's receipts are
            // 1000001, 2000001, 3000001; j2 has one attempt and dies on
            // its nack.
            setup.extend([
                Call::new("DELAYQ.ADD", q, &["j0", "p0", "NOW", &t(0)]),
                Call::new("DELAYQ.ADD", q, &["j1", "p1", "DELAY", "10", "NOW", &t(0)]),
                Call::new(
                    "DELAYQ.ADD",
                    q,
                    &["j2", "p2", "ATTEMPTS", "1", "NOW", &t(0)],
                ),
                Call::new("DELAYQ.POLL", q, &["1000", "COUNT", "3", "NOW", &t(20)]),
                Call::new("DELAYQ.NACK", q, &["j2", "3000001", "NOW", &t(30)]),
                Call::new(
                    "DELAYQ.ADD",
                    q,
                    &["j3", "p3", "DELAY", "5000", "NOW", &t(30)],
                ),
            ]);
            probes.extend([
                Call::new("DELAYQ.INFO", q, &["NOW", &t(40)]),
                Call::new("DELAYQ.DEAD", q, &[]),
                Call::new("DELAYQ.ADD", q, &["j0", "again", "REPLACE", "NOW", &t(40)]),
                Call::new("DELAYQ.EXTEND", q, &["j0", "1000001", "500", "NOW", &t(40)]),
                Call::new("DELAYQ.ACK", q, &["j0", "1000001"]),
                Call::new(
                    "DELAYQ.NACK",
                    q,
                    &["j1", "2000001", "BACKOFF", "10", "100", "NOW", &t(50)],
                ),
                Call::new("DELAYQ.ADD", q, &["j4", "p4", "NOW", &t(50)]),
                Call::new("DELAYQ.ADD", q, &["j1", "again", "REPLACE", "NOW", &t(50)]),
                Call::new("DELAYQ.POLL", q, &["1000", "COUNT", "5", "NOW", &t(9000)]),
                Call::new("DELAYQ.REDRIVE", q, &["NOW", &t(9100)]),
                Call::new("DELAYQ.REDRIVE", q, &["ID", "j3", "NOW", &t(9100)]),
                Call::new("DELAYQ.POLL", q, &["1000", "COUNT", "5", "NOW", &t(9200)]),
                Call::new("DELAYQ.PEEK", q, &[]),
                Call::new("DELAYQ.PEEK", q, &["ID", "j1"]),
                Call::new("DELAYQ.CANCEL", q, &["j4", "NOW", &t(9300)]),
                Call::new("DELAYQ.CANCEL", q, &["j1", "FORCE", "NOW", &t(9300)]),
                Call::new("DELAYQ.PURGE", q, &["MAXLEN", "0", "NOW", &t(9300)]),
            ]);
        }
        (setup, probes)
    }
}
