//! The RANK Lua twins against the module: random operation sequences on
//! boards `m{i}` (module) and `l{i}` (scripts) must give identical replies
//! and identical data. The twins are loaded and run through the one parity
//! harness (tests/common/twins.rs), as EVALSHA scripts and as FCALL
//! functions.

use crate::common;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::*;

const T0: i64 = 1_700_000_000_000;
/// RANK's twins (tests/common/twins.rs) with the two calls this file
/// makes: a command on one board `m{b}` / `l{b}`, and MERGE, whose
/// `numkeys` comes after its first key.
struct RankTwins(Twins);

impl RankTwins {
    /// Loads every RANK twin the way this test thread runs twins.
    fn load(c: &mut Connection) -> RankTwins {
        RankTwins(Twins::here(c, "rank"))
    }

    /// Runs `RANK.<name> m{board} args…` and its twin on `l{board}`;
    /// returns both replies (errors naming the key read alike).
    fn both(
        &self,
        c: &mut Connection,
        name: &str,
        board: usize,
        args: &[String],
    ) -> (String, String) {
        let rest: Vec<&str> = args.iter().map(String::as_str).collect();
        self.0.both(
            c,
            &format!("RANK.{}", name.to_uppercase()),
            &[&board.to_string()],
            &rest,
        )
    }

    fn merge(
        &self,
        c: &mut Connection,
        dest: usize,
        srcs: &[usize],
        opts: &[String],
    ) -> (String, String) {
        let n = srcs.len().to_string();
        let (md, ld) = common::twins::mirror(&dest.to_string());
        let (ms, ls): (Vec<String>, Vec<String>) = srcs
            .iter()
            .map(|i| common::twins::mirror(&i.to_string()))
            .unzip();
        let mut m: Vec<&str> = vec!["RANK.MERGE", &md, &n];
        m.extend(ms.iter().map(|s| s.as_str()));
        m.extend(opts.iter().map(|s| s.as_str()));
        let mut l: Vec<&str> = vec![&ld];
        l.extend(ls.iter().map(|s| s.as_str()));
        l.push(&n);
        l.extend(opts.iter().map(|s| s.as_str()));
        (
            run(c, &m).replace("'m{", "'l{"),
            show(&self.0.call_keys(c, "RANK.MERGE", 1 + srcs.len(), &l)),
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
            5 => a.push(pick(rng, &["TIEBREAK", "BOGUS", "LAYOUT"]).into()),
            6 => a.extend([
                "LAYOUT".into(),
                pick(rng, &["WIDE", "wide", "PACKED", "x"]).into(),
            ]),
            _ => {}
        }
    }
    a.extend(["NOW".into(), clock.to_string()]);
    // LAYOUT WIDE alone (or with a tie-break) half the time, so that wide
    // boards are common.
    if rng.gen_bool(0.5) {
        a = vec!["LAYOUT".into(), "WIDE".into()];
        if rng.gen_bool(0.3) {
            a.extend(["TIEBREAK".into(), pick(rng, &["LATER", "EARLIER"]).into()]);
        }
        a.extend(["NOW".into(), clock.to_string()]);
    }
    a
}

fn renamed(dump: Vec<String>) -> Vec<String> {
    dump.into_iter().map(|l| l.replacen('l', "m", 1)).collect()
}

fn lua_twins_match_the_module_once() {
    let s = Server::start();
    let mut c = s.conn();
    let twins = RankTwins::load(&mut c);
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
    let mut seen_wide = 0;
    // Wide boards merged into, imported and read by RANK.POSITION.
    let mut seen_wide_new = [0usize; 3];
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
            // The board a MERGE wrote (`b` for the other commands).
            let mut written = b;
            let (op, (got, want)) = match rng.gen_range(0..20) {
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
                    let n = if rng.gen_bool(0.4) { "decr" } else { "incr" };
                    (n, twins.both(&mut c, n, b, &a))
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
                        "EARLIER WIDE",
                        "LATER WIDE",
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
                        "NONE WIDE",
                        "EARLIER WIDE IMPORT 1700000000000",
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
                    // A score written by hand: a fraction, or beyond 2^53;
                    // on a wide board also a member without its time
                    // prefix, and an index entry that is not a time or
                    // points at nothing.
                    let v = pick(&mut rng, &["1.5", "-0.25", "1e300", "inf", "42"]);
                    let t = pick(
                        &mut rng,
                        &["x", "-1", "9007199254740992", "1700000000000", "5"],
                    );
                    let index = rng.gen_range(0..3) == 0;
                    for p in ["m", "l"] {
                        let _ = cmd(&mut c, &["ZADD", &format!("{p}{{{b}}}"), v, &m]);
                        if index {
                            let _ = cmd(&mut c, &["HSET", &format!("{p}{{{b}}}:time"), &m, t]);
                        }
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
                    if rng.gen_bool(0.5) {
                        a.extend([
                            "LAYOUT".into(),
                            pick(&mut rng, &["WIDE", "wide", "PACKED", "x"]).into(),
                        ]);
                        if rng.gen_range(0..6) == 0 {
                            a.extend(["UNIT".into(), "MS".into()]);
                        }
                    }
                    a.extend(now_opt(&mut rng, &mut clock));
                    ("import", twins.both(&mut c, "import", b, &a))
                }
                17 => {
                    let a = vec![m, pick(&mut rng, &members).into()];
                    ("rem", twins.both(&mut c, "rem", b, &a))
                }
                13 | 14 => {
                    // RANK.POSITION: the top, a member, or a position (a
                    // packed score and member, or on a wide board points
                    // and a stored name).
                    let count = pick(&mut rng, &["0", "1", "2", "5", "1001", "x"]).to_string();
                    let mut a = vec![count];
                    match rng.gen_range(0..3) {
                        0 => a.extend(["MEMBER".into(), m]),
                        1 => {
                            let score = rng.gen_range(-20..40) * 10_000_000_000i64
                                + rng.gen_range(0..2) * 9_999_999_999;
                            let points = rng.gen_range(-20..40).to_string();
                            let name = format!(
                                "{:016}:{m}",
                                9_999_999_999_999_999 - clock + rng.gen_range(0..9_000)
                            );
                            if rng.gen_bool(0.5) {
                                a.extend(["AT".into(), points, name]);
                            } else {
                                a.extend(["AT".into(), score.to_string(), m]);
                            }
                        }
                        _ => {}
                    }
                    ("position", twins.both(&mut c, "position", b, &a))
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
                    written = dest;
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
            if matches!(op, "add" | "incr" | "decr")
                && got.parse::<i64>().is_ok()
                && run(&mut c, &["HGET", &format!("l{{{b}}}:meta"), "layout"]).ends_with("WIDE")
            {
                seen_wide += 1;
            }
            if matches!(op, "merge" | "import" | "position")
                && !got.starts_with("ERR")
                && got != "nil"
            {
                let layout = run(&mut c, &["HGET", &format!("l{{{written}}}:meta"), "layout"]);
                if layout.contains("WIDE") {
                    let k = ["merge", "import", "position"]
                        .iter()
                        .position(|o| *o == op)
                        .unwrap();
                    seen_wide_new[k] += 1;
                }
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
    assert!(seen_wide >= 50, "wide boards written: {seen_wide}");
    assert!(
        seen_wide_new.iter().all(|&n| n >= 3),
        "wide boards merged, imported, positioned: {seen_wide_new:?}"
    );
}

/// [`lua_twins_match_the_module_once`] through the EVALSHA scripts, then through the
/// Functions library (FCALL).
#[test]
fn lua_twins_match_the_module() {
    for via in [Via::Script, Via::Function] {
        twins_via(via, lua_twins_match_the_module_once);
    }
}

// ---- spread boards (docs/spread.md) ----

use hotpath_client::routing;

/// The module in database 0 and the twins in database 1 of one server,
/// under the same keys (a shard key's tag is part of the contract).
struct SpreadSides {
    m: Connection,
    l: Connection,
    twins: Twins,
    /// Every reply seen, for the coverage checks at the end.
    seen: Vec<String>,
}

impl SpreadSides {
    fn new(s: &Server) -> SpreadSides {
        let m = s.conn();
        let mut l = s.conn();
        run(&mut l, &["SELECT", "1"]);
        let twins = Twins::here(&mut l, "rank");
        SpreadSides {
            m,
            l,
            twins,
            seen: Vec::new(),
        }
    }

    /// `RANK.<cmd> key args…` through the module and the twin: both replies
    /// must be the same.
    fn both(&mut self, cmd: &'static str, key: &str, args: &[String]) -> String {
        let mut margs: Vec<String> = vec![format!("RANK.{}", cmd.to_uppercase()), key.to_string()];
        margs.extend(args.iter().cloned());
        let mrefs: Vec<&str> = margs.iter().map(String::as_str).collect();
        let ours = run(&mut self.m, &mrefs);
        let mut largs: Vec<String> = vec![key.to_string()];
        largs.extend(args.iter().cloned());
        let theirs = show(
            &self
                .twins
                .call_keys(&mut self.l, &format!("RANK.{cmd}"), 1, &largs),
        );
        assert_eq!(ours, theirs, "{cmd} {key} {args:?}");
        if std::env::var("SHOW_REPLIES").is_ok() {
            eprintln!("{cmd} {key} {args:?} -> {ours}");
        }
        self.seen.push(ours.clone());
        ours
    }

    /// `RANK.MERGE dest numkeys src… opts…` on both sides.
    fn merge(&mut self, dest: &str, srcs: &[&str], opts: &[&str]) -> String {
        let n = srcs.len().to_string();
        let mut m: Vec<&str> = vec!["RANK.MERGE", dest, &n];
        m.extend(srcs);
        m.extend(opts);
        let ours = run(&mut self.m, &m);
        let mut l: Vec<&str> = vec![dest];
        l.extend(srcs);
        l.push(&n);
        l.extend(opts);
        let theirs = show(
            &self
                .twins
                .call_keys(&mut self.l, "RANK.MERGE", 1 + srcs.len(), &l),
        );
        assert_eq!(ours, theirs, "merge {dest} {srcs:?} {opts:?}");
        self.seen.push(ours.clone());
        ours
    }

    fn raw_both(&mut self, args: &[&str]) {
        run(&mut self.m, args);
        run(&mut self.l, args);
    }

    /// Every key, value and absolute expiry the same on both sides.
    fn assert_same_data(&mut self, what: &str) {
        let mut sides = Vec::new();
        for c in [&mut self.m, &mut self.l] {
            let mut d = dump_keys(c, "*");
            let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
            keys.sort();
            for k in keys {
                let at = int(c, &["PEXPIRETIME", &k]);
                d.push(format!("{k} expires {at}"));
            }
            sides.push(d);
        }
        assert_eq!(sides[0], sides[1], "data differs after {what}");
    }
}

fn shard_keys(base: &str, n: u32) -> Vec<String> {
    routing::shard_keys(base.as_bytes(), n)
        .into_iter()
        .map(|k| String::from_utf8(k).unwrap())
        .collect()
}

fn sp(n: u32) -> Vec<String> {
    vec!["SPREAD".to_string(), n.to_string()]
}

fn strs(xs: &[&str]) -> Vec<String> {
    xs.iter().map(|s| s.to_string()).collect()
}

/// A member of shard i of n: a number (routed by id mod n) or a name
/// (routed by FNV-1a), drawn until one lands on the shard.
fn member_of(rng: &mut StdRng, n: u32, i: u32) -> String {
    loop {
        let m = if rng.gen_bool(0.5) {
            rng.gen_range(0..200u32).to_string()
        } else {
            format!("p{}", rng.gen_range(0..200u32))
        };
        if routing::shard_of(m.as_bytes(), n) == i {
            return m;
        }
    }
}

fn spread_twins_match_the_module_once(seed: u64) {
    let s = Server::start();
    let mut t = SpreadSides::new(&s);
    let mut rng = StdRng::seed_from_u64(seed);
    // board:9: time tie-breaks in ms; board:{7}: no tie-break, so that
    // equal points are equal scores and RANK.POSITION meets tie blocks.
    let boards: [(&str, u32, Vec<String>); 2] = [
        ("board:9", 3, strs(&["UNIT", "MS", "DIGITS", "13"])),
        ("board:{7}", 4, strs(&["TIEBREAK", "NONE"])),
    ];
    let k9 = shard_keys("board:9", 3);
    let k7 = shard_keys("board:{7}", 4);
    // A single-slot board under a base with a hash tag shadows shard 0.
    t.both("add", "board:{7}", &strs(&["a", "5", "NOW", "1"]));
    let mut a = boards[1].2.clone();
    a.extend(sp(4));
    t.both("create", &k7[0], &a);
    t.both("rem", "board:{7}", &strs(&["a"]));
    for (base, n, layout) in &boards {
        for k in shard_keys(base, *n) {
            let mut a = layout.clone();
            // No TTL: the module sets it from its clock, the twin from
            // the server's a moment later (PEXPIRETIME would differ by a
            // millisecond; the single-slot test covers TTL).
            a.extend(strs(&["NOW", "1000"]));
            a.extend(sp(*n));
            t.both("create", &k, &a);
            // Again with the same layout and count: OK, nothing changes.
            t.both("create", &k, &a);
        }
    }
    // Creation errors: another layout, another count, no shard key, bad
    // counts, the base key of a spread board.
    for (k, args) in [
        (k9[0].as_str(), sp(3)),
        (k9[0].as_str(), strs(&["SPREAD"])),
        (k9[0].as_str(), sp(0)),
        (k9[0].as_str(), sp(1025)),
        (k9[0].as_str(), strs(&["SPREAD", "x"])),
        (k9[0].as_str(), sp(5)),
        (k9[1].as_str(), sp(4)),
        (k9[1].as_str(), sp(3)),
        ("board:9", sp(3)),
        ("board:9", vec![]),
        ("{0VD}", sp(1)),
    ] {
        t.both("create", k, &args);
    }
    t.assert_same_data("creation");
    // Tie blocks on shard 1 of board:{7}: 40 members at 100 points (past
    // the 32 that the module walks), 20 at 50 points.
    let mut tied: Vec<String> = Vec::new();
    while tied.len() < 60 {
        let m = member_of(&mut rng, 4, 1);
        if !tied.contains(&m) {
            tied.push(m);
        }
    }
    for (j, m) in tied.iter().enumerate() {
        let mut a = vec![m.clone(), if j < 40 { "100" } else { "50" }.to_string()];
        a.extend(sp(4));
        t.both("add", &k7[1], &a);
    }
    let mut probes = tied.clone();
    probes.extend(strs(&["", "0", "zzzz", "p", "p99", "~", "\u{1}"]));
    for points in ["100", "50", "75", "101", "-3"] {
        for m in &probes {
            for count in ["0", "2", "5"] {
                let mut a = strs(&[count, "AT", points, m]);
                a.extend(sp(4));
                t.both("position", &k7[1], &a);
            }
        }
    }
    for m in &probes {
        let mut a = strs(&["3", "MEMBER", m]);
        a.extend(sp(4));
        t.both("position", &k7[1], &a);
        t.both("position", &k7[1], &a[..3]);
    }
    let mut clock = 1_700_000_000_000i64;
    for step in 0..600 {
        let b = rng.gen_range(0..2);
        let (base, n, _) = &boards[b];
        let n = *n;
        let keys = shard_keys(base, n);
        let i = rng.gen_range(0..n);
        let mut member = if rng.gen_range(0..6) == 0 {
            member_of(&mut rng, n, (i + 1) % n)
        } else {
            member_of(&mut rng, n, i)
        };
        if rng.gen_range(0..60) == 0 {
            member.clear();
        }
        let key: String = match rng.gen_range(0..30) {
            0 => base.to_string(),
            1 => shard_keys(base, n + 1)[1].clone(),
            2 => "board:other".into(),
            _ => keys[i as usize].clone(),
        };
        let spread: Vec<String> = match rng.gen_range(0..12) {
            0 => vec![],
            1 => sp(n + 1),
            2 => sp(0),
            _ => sp(n),
        };
        clock += rng.gen_range(0..3);
        let now = clock.to_string();
        let points = rng.gen_range(-5..40i64).to_string();
        let (cmd, mut args): (&'static str, Vec<String>) = match rng.gen_range(0..100) {
            0..=29 => ("add", vec![member, points, "NOW".into(), now]),
            30..=39 => ("add", vec![member, points, "GT".into(), "NOW".into(), now]),
            40..=54 => ("incr", vec![member, points, "NOW".into(), now]),
            55..=64 => ("get", vec![member]),
            65..=69 => ("rem", {
                let mut v = vec![member];
                if rng.gen_bool(0.5) {
                    v.push(member_of(&mut rng, n, i));
                }
                v
            }),
            70..=74 => ("count", vec![]),
            75..=79 => {
                // TOP and AROUND have no SPREAD: a shard key is read as is.
                let a = if rng.gen_bool(0.5) {
                    ("top", vec![rng.gen_range(0..5u32).to_string()])
                } else {
                    ("around", vec![member, rng.gen_range(0..3u32).to_string()])
                };
                t.both(a.0, &key, &a.1);
                continue;
            }
            _ => {
                let count = rng.gen_range(0..4u32).to_string();
                let args = match rng.gen_range(0..3) {
                    0 => vec![count],
                    1 => vec![count, "MEMBER".into(), member],
                    _ => {
                        // A score seen on some shard of the board (the
                        // module side), or one no member has.
                        let other = &keys[rng.gen_range(0..n as usize)];
                        let top: Vec<String> = redis::cmd("ZREVRANGE")
                            .arg(other)
                            .arg(0)
                            .arg(3)
                            .arg("WITHSCORES")
                            .query(&mut t.m)
                            .unwrap();
                        let score = if top.len() >= 2 && rng.gen_bool(0.8) {
                            top[1 + 2 * rng.gen_range(0..top.len() / 2)].clone()
                        } else {
                            rng.gen_range(-100..100i64).to_string()
                        };
                        vec![count, "AT".into(), score, member]
                    }
                };
                ("position", args)
            }
        };
        args.extend(spread);
        t.both(cmd, &key, &args);
        if step % 100 == 0 {
            t.assert_same_data(&format!("step {step}"));
        }
        // A hand-deleted or edited shard record, on both sides: every call
        // on that shard is an error, and writes nothing.
        if step % 211 == 210 {
            let k = keys[i as usize].clone();
            let meta = format!("{k}:meta");
            let saved = format!("{meta}.saved");
            t.raw_both(&["RENAME", &meta, &saved]);
            let m = member_of(&mut rng, n, i);
            for bad in [
                None,
                Some(("spread", "x")),
                Some(("shard", "9")),
                Some(("spread", "2")),
                Some(("layout", "EARLIER S 10 0")),
            ] {
                if let Some((f, v)) = bad {
                    t.raw_both(&["HSET", &meta, f, v]);
                }
                for (cmd, a) in [
                    (
                        "add",
                        vec![m.clone(), "1".into(), "NOW".into(), clock.to_string()],
                    ),
                    (
                        "incr",
                        vec![m.clone(), "1".into(), "NOW".into(), clock.to_string()],
                    ),
                    ("get", vec![m.clone()]),
                    ("rem", vec![m.clone()]),
                    ("count", vec![]),
                    ("position", vec!["1".into(), "MEMBER".into(), m.clone()]),
                    ("top", vec![]),
                ] {
                    let mut with = a.clone();
                    if cmd != "top" {
                        with.extend(sp(n));
                        t.both(cmd, &k, &with);
                    }
                    t.both(cmd, &k, &a);
                }
                t.raw_both(&["DEL", &meta]);
            }
            t.raw_both(&["RENAME", &saved, &meta]);
            t.assert_same_data(&format!("step {step}, a deleted record"));
        }
    }
    // The base key of a spread board, used by single-slot commands.
    for (cmd, args) in [
        ("add", strs(&["1", "5", "NOW", "5"])),
        ("incr", strs(&["1", "5", "NOW", "5"])),
        ("get", strs(&["1"])),
        ("rem", strs(&["1"])),
        ("count", vec![]),
        ("top", vec![]),
        ("around", strs(&["1", "1"])),
        ("position", strs(&["1"])),
        ("import", vec![]),
    ] {
        t.both(cmd, "board:9", &args);
    }
    // A shard that was never created.
    let k5 = shard_keys("board:9", 5);
    for (cmd, args) in [
        ("count", vec![]),
        ("add", strs(&["2", "1", "NOW", "5"])),
        ("position", strs(&["1"])),
    ] {
        let mut a = args.clone();
        a.extend(sp(5));
        t.both(cmd, &k5[2], &a);
    }
    // Arity: GET and COUNT take SPREAD n and nothing else.
    for (cmd, args) in [
        ("get", strs(&["1", "SPREAD"])),
        ("get", strs(&["1", "x", "3"])),
        ("count", strs(&["SPREAD"])),
        ("count", strs(&["x", "3"])),
        ("count", strs(&["SPREAD", "3", "x"])),
        ("rem", strs(&["SPREAD", "3"])),
        ("position", strs(&["1", "AT", "5"])),
        ("position", strs(&["1", "AT", "x", "m"])),
        ("position", strs(&["1", "MEMBER", "a", "AT", "5", "b"])),
        ("position", strs(&["1001"])),
        ("position", strs(&["-1"])),
    ] {
        t.both(cmd, &k9[0], &args);
    }
    // MERGE and IMPORT refuse spread boards: a shard as source or
    // destination, the base key.
    t.both("add", "solo{9}", &strs(&["a", "5", "NOW", "1"]));
    t.both("import", &k9[1], &strs(&["COUNT", "5"]));
    t.merge(&k9[0], &["solo{9}"], &[]);
    t.merge("solo{9}", &[&k9[0]], &[]);
    t.merge("solo{9}", &["board:9"], &[]);
    t.merge("out{9}", &["solo{9}"], &["NOW", "5"]);
    // Shard 0 whose record was deleted, its board still there (issue 24
    // item 7): the base key and the shard key without SPREAD n are refused
    // as that corrupt shard on both sides (RANK.TOP read points as 0).
    let k8 = shard_keys("board:{8}", 2);
    for k in &k8 {
        t.both("create", k, &strs(&["TIEBREAK", "NONE", "SPREAD", "2"]));
    }
    let m0 = (0..50)
        .map(|u| u.to_string())
        .find(|m| routing::shard_of(m.as_bytes(), 2) == 0);
    let m0 = m0.unwrap();
    let mut a = strs(&[&m0, "50", "NOW", "5"]);
    a.extend(sp(2));
    t.both("add", &k8[0], &a);
    t.raw_both(&["DEL", &format!("{}:meta", k8[0])]);
    let corrupt = format!(
        "ERR<ERR rank: corrupt data in '{}:meta' field 'spread'>",
        k8[0]
    );
    for (cmd, key, args) in [
        ("top", k8[0].as_str(), vec![]),
        ("around", k8[0].as_str(), strs(&[&m0, "1"])),
        ("get", k8[0].as_str(), strs(&[&m0])),
        ("add", k8[0].as_str(), strs(&[&m0, "1", "NOW", "5"])),
        ("top", "board:{8}", vec![]),
        ("around", "board:{8}", strs(&[&m0, "1"])),
        ("add", "board:{8}", strs(&["x", "1", "NOW", "5"])),
        ("count", "board:{8}", vec![]),
        ("create", "board:{8}", vec![]),
    ] {
        assert_eq!(t.both(cmd, key, &args), corrupt, "{cmd} {key}");
    }
    t.assert_same_data("shard 0 without its record");
    // Every shard's count and top, with SPREAD n.
    for (base, n, _) in &boards {
        for k in shard_keys(base, *n) {
            t.both("count", &k, &sp(*n));
            t.both("top", &k, &strs(&["50"]));
        }
    }
    t.assert_same_data("the end");
    // The run met every case it is meant to test.
    for want in [
        "wrong shard",
        "shard counts disagree",
        "does not exist",
        "corrupt data in",
        "is spread over",
        "is not a shard key",
        "does not take a shard",
        "is a single-slot board already",
        "SPREAD must be from",
        "board already exists",
        "wrong number of arguments",
    ] {
        assert!(
            t.seen.iter().any(|r| r.contains(want)),
            "no reply with {want:?}"
        );
    }
}

/// The spread forms of RANK (RANK.CREATE … SPREAD n, `SPREAD n`, shard
/// records, RANK.POSITION with its tie blocks, the base key of a spread
/// board, MERGE and IMPORT refusing one) through the twins and the module:
/// the seeds alternate EVALSHA and FCALL.
#[test]
fn spread_twins_match_the_module() {
    for seed in 0..2u64 {
        let via = if seed % 2 == 0 {
            Via::Script
        } else {
            Via::Function
        };
        twins_via(via, || spread_twins_match_the_module_once(200 + seed));
    }
}
