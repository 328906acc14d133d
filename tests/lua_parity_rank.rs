//! The RANK Lua twins against the module: random operation sequences on
//! boards `m{i}` (module) and `l{i}` (scripts) must give identical replies
//! and identical data.

mod common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::*;

const T0: i64 = 1_700_000_000_000;
const SCRIPTS: [&str; 10] = [
    "create", "add", "incr", "get", "top", "around", "rem", "count", "merge", "import",
];

/// The module's reply with its key names (`'m{…`) spelt as the twin's
/// (`'l{…`), so that errors naming a key compare equal.
fn as_twin(reply: String) -> String {
    reply.replace("'m{", "'l{")
}

struct Twins {
    shas: Vec<(String, String)>,
}

impl Twins {
    fn load(c: &mut Connection) -> Twins {
        let shas = SCRIPTS
            .iter()
            .map(|s| (s.to_string(), load_twin(c, &format!("rank/{s}.lua"))))
            .collect();
        Twins { shas }
    }

    fn sha(&self, name: &str) -> &str {
        &self.shas.iter().find(|(n, _)| n == name).unwrap().1
    }

    /// Runs `RANK.<name> m{board} args…` and its twin on `l{board}`;
    /// returns both replies.
    fn both(
        &self,
        c: &mut Connection,
        name: &str,
        board: usize,
        args: &[String],
    ) -> (String, String) {
        let mb = format!("m{{{board}}}");
        let lb = format!("l{{{board}}}");
        let cmd_name = format!("RANK.{}", name.to_uppercase());
        let mut m: Vec<&str> = vec![&cmd_name, &mb];
        m.extend(args.iter().map(|s| s.as_str()));
        let mut l: Vec<&str> = vec![&lb];
        l.extend(args.iter().map(|s| s.as_str()));
        (
            as_twin(run(c, &m)),
            show(&call_twin(c, self.sha(name), 1, &l)),
        )
    }

    fn merge(
        &self,
        c: &mut Connection,
        dest: usize,
        srcs: &[usize],
        opts: &[String],
    ) -> (String, String) {
        let key = |p: &str, i: usize| format!("{p}{{{i}}}");
        let n = srcs.len().to_string();
        let (md, ld) = (key("m", dest), key("l", dest));
        let ms: Vec<String> = srcs.iter().map(|&i| key("m", i)).collect();
        let ls: Vec<String> = srcs.iter().map(|&i| key("l", i)).collect();
        let mut m: Vec<&str> = vec!["RANK.MERGE", &md, &n];
        m.extend(ms.iter().map(|s| s.as_str()));
        m.extend(opts.iter().map(|s| s.as_str()));
        let mut l: Vec<&str> = vec![&ld];
        l.extend(ls.iter().map(|s| s.as_str()));
        l.push(&n);
        l.extend(opts.iter().map(|s| s.as_str()));
        (
            as_twin(run(c, &m)),
            show(&call_twin(c, self.sha("merge"), 1 + srcs.len(), &l)),
        )
    }
}

fn pick<'a>(rng: &mut StdRng, xs: &[&'a str]) -> &'a str {
    xs[rng.gen_range(0..xs.len())]
}

fn points(rng: &mut StdRng) -> String {
    match rng.gen_range(0..20) {
        0 => pick(
            rng,
            &[
                "900718",
                "-900718",
                "900719",
                "-900719",
                "899",
                "900",
                "-9007199254740991",
            ],
        )
        .into(),
        1 => pick(
            rng,
            &[
                "9007199254740992",
                "9007199254740993",
                "-18014398509481983",
                "9223372036854775807",
            ],
        )
        .into(),
        2 => pick(rng, &["x", "1.5", "01", "-0", "", "9223372036854775808"]).into(),
        _ => rng.gen_range(-20..40).to_string(),
    }
}

fn now_opt(rng: &mut StdRng, clock: &mut i64) -> Vec<String> {
    *clock += rng.gen_range(0..3_000);
    let v = match rng.gen_range(0..30) {
        0 => "-1".to_string(),
        1 => "0".to_string(),
        2 => (T0 + 10_000_000_000_000).to_string(),
        3 => "abc".to_string(),
        _ => clock.to_string(),
    };
    vec!["NOW".into(), v]
}

fn create_args(rng: &mut StdRng, clock: i64) -> Vec<String> {
    let mut a: Vec<String> = Vec::new();
    for _ in 0..rng.gen_range(0..4) {
        match rng.gen_range(0..8) {
            0 => a.extend([
                "TIEBREAK".into(),
                pick(rng, &["EARLIER", "later", "NONE", "bogus"]).into(),
            ]),
            1 => a.extend(["UNIT".into(), pick(rng, &["MS", "s", "h"]).into()]),
            2 => a.extend([
                "DIGITS".into(),
                pick(rng, &["13", "10", "9", "15", "16", "0", "x"]).into(),
            ]),
            3 => a.extend([
                "EPOCH".into(),
                pick(rng, &["0", "1690000000000", "1699999000000", "-1"]).into(),
            ]),
            4 => a.extend(["TTL".into(), pick(rng, &["100", "0"]).into()]),
            5 => a.push(pick(rng, &["TIEBREAK", "BOGUS"]).into()),
            _ => {}
        }
    }
    a.extend(["NOW".into(), clock.to_string()]);
    a
}

fn renamed(dump: Vec<String>) -> Vec<String> {
    dump.into_iter().map(|l| l.replacen('l', "m", 1)).collect()
}

fn lua_twins_match_the_module_once() {
    let s = Server::start();
    let mut c = s.conn();
    let twins = Twins::load(&mut c);
    // A key of another type, to hit WRONGTYPE on the board and its meta.
    for p in ["m", "l"] {
        run(&mut c, &["SET", &format!("{p}{{5}}:meta"), "x"]);
        run(&mut c, &["SET", &format!("{p}{{6}}"), "x"]);
    }
    let members = ["a", "b", "c", "d", "e", "f", "g", "h"];
    let mut ops = 0;
    // (imports that packed a board, corrupt scores reported, empty users
    // refused): each kind must occur, or the random run tests nothing new.
    let mut seen = [0usize; 3];
    for seed in 0..6u64 {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut clock = T0 + rng.gen_range(0..1_000_000);
        for step in 0..500 {
            // Boards 5 and 6 hold wrong types; hit them now and then.
            let board = |rng: &mut StdRng| {
                if rng.gen_range(0..10) == 0 {
                    rng.gen_range(5..7)
                } else {
                    rng.gen_range(0..5)
                }
            };
            let b = board(&mut rng);
            let mut m = pick(&mut rng, &members).to_string();
            if rng.gen_range(0..60) == 0 {
                m.clear();
            }
            let (op, (got, want)) = match rng.gen_range(0..18) {
                0 => {
                    if rng.gen_bool(0.5) {
                        // Start the board over, so that CREATE gets its chance.
                        for p in ["m", "l"] {
                            let (k, meta) = (format!("{p}{{{b}}}"), format!("{p}{{{b}}}:meta"));
                            run(&mut c, &["DEL", &k, &meta]);
                        }
                    }
                    let a = create_args(&mut rng, clock);
                    ("create", twins.both(&mut c, "create", b, &a))
                }
                1..=4 => {
                    let mut a = vec![m, points(&mut rng)];
                    match rng.gen_range(0..6) {
                        0 => a.push("GT".into()),
                        1 => a.push("lt".into()),
                        2 => a.extend(["GT".into(), "LT".into()]),
                        _ => {}
                    }
                    a.extend(now_opt(&mut rng, &mut clock));
                    if rng.gen_range(0..40) == 0 {
                        a.truncate(1);
                    }
                    ("add", twins.both(&mut c, "add", b, &a))
                }
                5..=6 => {
                    let mut a = vec![m, points(&mut rng)];
                    a.extend(now_opt(&mut rng, &mut clock));
                    if rng.gen_range(0..30) == 0 {
                        a.push("GT".into());
                    }
                    ("incr", twins.both(&mut c, "incr", b, &a))
                }
                7 => ("get", twins.both(&mut c, "get", b, &[m])),
                8 => {
                    let mut a = Vec::new();
                    if rng.gen_bool(0.6) {
                        a.push(
                            pick(
                                &mut rng,
                                &[
                                    "0",
                                    "1",
                                    "3",
                                    "10",
                                    "100",
                                    "-1",
                                    "x",
                                    "1000",
                                    "1001",
                                    "9223372036854775807",
                                ],
                            )
                            .into(),
                        );
                    }
                    if rng.gen_bool(0.5) {
                        a.extend([
                            "OFFSET".into(),
                            pick(&mut rng, &["0", "1", "2", "5", "50", "-1"]).into(),
                        ]);
                    }
                    ("top", twins.both(&mut c, "top", b, &a))
                }
                9 => {
                    let n = pick(
                        &mut rng,
                        &[
                            "0",
                            "1",
                            "2",
                            "5",
                            "-1",
                            "1000",
                            "1001",
                            "9223372036854775807",
                        ],
                    )
                    .to_string();
                    ("around", twins.both(&mut c, "around", b, &[m, n]))
                }
                10 => {
                    let a = vec![m, pick(&mut rng, &members).into()];
                    ("rem", twins.both(&mut c, "rem", b, &a))
                }
                11 => ("count", twins.both(&mut c, "count", b, &[])),
                12 => {
                    // A layout written by hand, valid or not, read alike
                    // (mostly valid, so that boards stay usable).
                    let valid = [
                        "LATER MS 13 0",
                        "NONE S 0 0",
                        "EARLIER S 8 1690000000000",
                        "EARLIER S 10 0",
                    ];
                    let invalid = [
                        "EARLIER S 10",
                        "x S 10 0",
                        "LATER S 016 0",
                        "",
                        "EARLIER S 10 0 IMPORT x",
                        "EARLIER S 10 0 IMPORT 1700000000000",
                    ];
                    let v = if rng.gen_range(0..4) == 0 {
                        pick(&mut rng, &invalid)
                    } else {
                        pick(&mut rng, &valid)
                    };
                    for p in ["m", "l"] {
                        let _ = cmd(&mut c, &["HSET", &format!("{p}{{{b}}}:meta"), "layout", v]);
                    }
                    ("get", twins.both(&mut c, "get", b, &[m]))
                }
                15 => {
                    // A score written by hand: a fraction, or beyond 2^53.
                    let v = pick(&mut rng, &["1.5", "-0.25", "1e300", "inf", "42"]);
                    for p in ["m", "l"] {
                        let _ = cmd(&mut c, &["ZADD", &format!("{p}{{{b}}}"), v, &m]);
                    }
                    let n = pick(&mut rng, &["top", "get", "around"]);
                    let a = match n {
                        "top" => vec![],
                        "get" => vec![m],
                        _ => vec![m, "1".into()],
                    };
                    (n, twins.both(&mut c, n, b, &a))
                }
                16 => {
                    // A board of plain scores (the seed design), imported.
                    if rng.gen_bool(0.3) {
                        for p in ["m", "l"] {
                            let (k, meta, imp) = (
                                format!("{p}{{{b}}}"),
                                format!("{p}{{{b}}}:meta"),
                                format!("{p}{{{b}}}:import"),
                            );
                            run(&mut c, &["DEL", &k, &meta, &imp]);
                            for (i, mm) in members.iter().enumerate() {
                                let score = ((i as i64) * 7 - 20).to_string();
                                run(&mut c, &["ZADD", &k, &score, mm]);
                            }
                        }
                    }
                    let mut a: Vec<String> = Vec::new();
                    if rng.gen_bool(0.6) {
                        a.extend([
                            "COUNT".into(),
                            pick(&mut rng, &["1", "3", "100", "0", "1001"]).into(),
                        ]);
                    }
                    if rng.gen_range(0..4) == 0 {
                        a.extend(["TIEBREAK".into(), pick(&mut rng, &["LATER", "NONE"]).into()]);
                    }
                    a.extend(now_opt(&mut rng, &mut clock));
                    ("import", twins.both(&mut c, "import", b, &a))
                }
                17 => {
                    let a = vec![m, pick(&mut rng, &members).into()];
                    ("rem", twins.both(&mut c, "rem", b, &a))
                }
                _ => {
                    let dest = board(&mut rng);
                    let srcs: Vec<usize> =
                        (0..rng.gen_range(1..4)).map(|_| board(&mut rng)).collect();
                    let mut opts: Vec<String> = Vec::new();
                    if rng.gen_bool(0.5) {
                        opts.extend([
                            "AGGREGATE".into(),
                            pick(&mut rng, &["SUM", "max", "MIN"]).into(),
                        ]);
                    }
                    if rng.gen_range(0..5) == 0 {
                        opts.extend(["TTL".into(), pick(&mut rng, &["100", "0"]).into()]);
                    }
                    opts.extend(now_opt(&mut rng, &mut clock));
                    ("merge", twins.merge(&mut c, dest, &srcs, &opts))
                }
            };
            assert_eq!(got, want, "seed {seed} step {step}: {op} on board {b}");
            ops += 1;
            if op == "import" && got.parse::<i64>().is_ok() {
                seen[0] += 1;
            }
            if got.contains("corrupt data in 'l{") && !got.contains(":meta") {
                seen[1] += 1;
            }
            if got.contains("user must not be empty") {
                seen[2] += 1;
            }
            if step % 50 == 49 {
                let (mdump, ldump) = (dump_keys(&mut c, "m{*"), dump_keys(&mut c, "l{*"));
                assert_eq!(mdump, renamed(ldump), "seed {seed} step {step}");
            }
        }
        let (mdump, ldump) = (dump_keys(&mut c, "m{*"), dump_keys(&mut c, "l{*"));
        assert!(mdump.len() > 3, "{mdump:?}");
        assert_eq!(mdump, renamed(ldump), "seed {seed}");
        run(&mut c, &["FLUSHALL"]);
        for p in ["m", "l"] {
            run(&mut c, &["SET", &format!("{p}{{5}}:meta"), "x"]);
            run(&mut c, &["SET", &format!("{p}{{6}}"), "x"]);
        }
    }
    assert_eq!(ops, 3000);
    assert!(seen.iter().all(|&n| n >= 5), "{seen:?}");
}

/// [`lua_twins_match_the_module_once`] through the EVALSHA scripts, then through the
/// Functions library (FCALL).
#[test]
fn lua_twins_match_the_module() {
    for via in [Via::Script, Via::Function] {
        twins_via(via, lua_twins_match_the_module_once);
    }
}
