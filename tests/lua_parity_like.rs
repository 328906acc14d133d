//! The Lua twins in `lua-compat/like/` against the module: random operation
//! sequences (promotions, growth, errors and WRONGTYPE included) through the
//! module on `m{…}` posts and through the scripts on `l{…}` posts must give
//! identical replies and identical data.

mod common;

use std::collections::HashMap;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const MAX_ID: &str = "2000";
const PROMOTE_AT: &str = "8";
const RECENT: &str = "3";

struct Twins {
    shas: HashMap<&'static str, String>,
    /// like-max-id, like-promote-at, like-recent: the module's configs,
    /// passed to the twins as their first three ARGV.
    cfg: [String; 3],
}

impl Twins {
    fn load(c: &mut Connection) -> Twins {
        let mut shas = HashMap::new();
        for name in [
            "toggle", "add", "rem", "check", "count", "recent", "common", "info",
        ] {
            shas.insert(name, load_twin(c, &format!("like/{name}.lua")));
        }
        Twins {
            shas,
            cfg: [MAX_ID.into(), PROMOTE_AT.into(), RECENT.into()],
        }
    }

    /// Sets the module's configs and the twins' arguments alike.
    fn configure(&mut self, c: &mut Connection, max_id: &str, promote_at: &str, recent: &str) {
        run(c, &["CONFIG", "SET", "hotpath.like-max-id", max_id]);
        run(c, &["CONFIG", "SET", "hotpath.like-promote-at", promote_at]);
        run(c, &["CONFIG", "SET", "hotpath.like-recent", recent]);
        self.cfg = [max_id.into(), promote_at.into(), recent.into()];
    }

    /// Runs `LIKE.<cmd> keys… args…` through the module on `m{…}` and
    /// through the twin on `l{…}`; returns both replies shown.
    fn both(
        &self,
        c: &mut Connection,
        cmd: &'static str,
        keys: &[String],
        args: &[String],
    ) -> (String, String) {
        let mut m: Vec<String> = vec![format!("LIKE.{}", cmd.to_uppercase())];
        m.extend(keys.iter().map(|k| format!("m{k}")));
        m.extend(args.iter().cloned());
        let mrefs: Vec<&str> = m.iter().map(|s| s.as_str()).collect();
        let mine = show(&common::cmd(c, &mrefs));
        let mut l: Vec<String> = keys.iter().map(|k| format!("l{k}")).collect();
        l.extend(self.cfg.iter().cloned());
        l.extend(args.iter().cloned());
        let lrefs: Vec<&str> = l.iter().map(|s| s.as_str()).collect();
        let theirs = show(&call_twin(c, &self.shas[cmd], keys.len(), &lrefs));
        (mine, theirs)
    }
}

fn server() -> Server {
    Server::start_full(
        &[],
        &[
            "like-max-id",
            MAX_ID,
            "like-promote-at",
            PROMOTE_AT,
            "like-recent",
            RECENT,
        ],
    )
}

fn assert_same_data(c: &mut Connection, step: usize) {
    let m: Vec<String> = dump_keys(c, "m{*")
        .into_iter()
        .map(|l| l.replacen("m{", "l{", 1))
        .collect();
    let l = dump_keys(c, "l{*");
    assert_eq!(m, l, "data differs after step {step}");
}

fn user(rng: &mut StdRng, max: u64) -> String {
    match rng.gen_range(0..41) {
        40 => String::new(),
        0 => "abc".into(),
        1 => "-3".into(),
        2 => (max + 1).to_string(),
        3 => "007".into(),
        // Mostly ids of the first range (64,000 ids) so posts fill up and
        // promote; some up to the max so other ranges are used.
        4..=7 => rng.gen_range(0..=max).to_string(),
        _ => rng.gen_range(0..=max.min(1_500)).to_string(),
    }
}

fn twins_match_the_module_on_random_sequences_once() {
    let s = server();
    let mut c = s.conn();
    let mut t = Twins::load(&mut c);
    // LIKE_PARITY_SEEDS=200 runs a longer campaign.
    let seeds: u64 = std::env::var("LIKE_PARITY_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    let configs = [
        ("2000", "8", "3"),
        ("4294967295", "1", "10"),
        ("200000", "64", "0"),
        ("2000", "16", "1"),
    ];
    let mut promoted_seen = false;
    for seed in 0..seeds {
        run(&mut c, &["FLUSHALL"]);
        let (max, promote_at, recent) = configs[(seed % 4) as usize];
        t.configure(&mut c, max, promote_at, recent);
        let mut rng = StdRng::seed_from_u64(42 + seed);
        promoted_seen |= random_run(&mut c, &t, &mut rng, 1000, max.parse().unwrap());
    }
    assert!(
        promoted_seen,
        "no post was promoted: the sequence does not test promotion"
    );
}

/// Runs `steps` random operations (malformed ones and WRONGTYPE included)
/// through both; returns true if some post was seen promoted.
fn random_run(c: &mut Connection, t: &Twins, rng: &mut StdRng, steps: usize, max: u64) -> bool {
    let mut now = 1_700_000_000_000i64;
    let mut promoted_seen = false;
    // Post {0} starts with about 600 likers, so that it is promoted (checked at
    // a multiple of 32 past 512) and migrated while the random run goes on.
    for _ in 0..900 {
        let u = rng.gen_range(0..=max.min(1_500)).to_string();
        let (m, l) = t.both(c, "add", &["{0}".into()], &[u, "NOW".into(), "1".into()]);
        assert_eq!(m, l, "filling {{0}}");
    }
    for step in 0..steps {
        let post = format!("{{{}}}", rng.gen_range(0..4));
        now += rng.gen_range(0..3);
        let ts = now.to_string();
        let u = user(rng, max);
        let (cmd, keys, args): (&'static str, Vec<String>, Vec<String>) =
            match rng.gen_range(0..100) {
                0..=29 => ("toggle", vec![post], vec![u, "NOW".into(), ts]),
                30..=49 => ("add", vec![post], vec![u, "now".into(), ts]),
                50..=64 => ("rem", vec![post], vec![u]),
                65..=72 => {
                    let n = rng.gen_range(1..6);
                    (
                        "check",
                        vec![post],
                        (0..n).map(|_| user(rng, max)).collect(),
                    )
                }
                73..=76 => ("count", vec![post], vec![]),
                77..=80 => {
                    let args = match rng.gen_range(0..4) {
                        0 => vec![],
                        1 => vec![rng.gen_range(0..6u32).to_string()],
                        2 => vec!["-1".into()],
                        _ => vec!["2".into(), "x".into()],
                    };
                    ("recent", vec![post], args)
                }
                81..=86 => {
                    let other = format!("{{{}}}", rng.gen_range(0..4));
                    ("common", vec![post, other], vec![])
                }
                87..=90 => ("info", vec![post], vec![]),
                // Malformed calls: bad options, missing values, extra arguments.
                91 => ("toggle", vec![post], vec![u, "NOW".into()]),
                92 => ("add", vec![post], vec![u, "NOW".into(), "-5".into()]),
                93 => ("add", vec![post], vec![u, "SOON".into(), ts]),
                94 => ("rem", vec![post], vec![u, "NOW".into(), ts]),
                95 => ("count", vec![post], vec!["x".into()]),
                96 => ("check", vec![post], vec![]),
                97 => ("toggle", vec![post], vec![]),
                98 => (
                    "add",
                    vec![post],
                    vec![u, "NOW".into(), "9007199254740992".into()],
                ),
                _ => ("common", vec![post], vec![]),
            };
        if cmd == "common" && keys.len() == 1 {
            // Arity errors come from Redis for the module; the twin reports
            // the same text itself.
            let (m, l) = t.both(
                c,
                "common",
                &[keys[0].clone(), keys[0].clone()],
                &["extra".into()],
            );
            assert_eq!(m, l, "step {step}: common with an extra argument");
            continue;
        }
        let (m, l) = t.both(c, cmd, &keys, &args);
        assert_eq!(m, l, "step {step}: {cmd} {keys:?} {args:?}");
        if cmd == "info" && (m.contains("bitmap") || m.contains("mixed")) {
            promoted_seen = true;
        }
        if step % 50 == 0 {
            assert_same_data(c, step);
        }
        // Now and then a derived key holds a wrong type on both sides.
        if step % 400 == 399 {
            let suffix =
                ["set", "bits:0", "count", "recent", "chunks", "meta"][rng.gen_range(0..6)];
            for side in ["m", "l"] {
                let key = format!("{side}{post}:{suffix}", post = keys[0]);
                run(c, &["RENAME", &key, &format!("{key}.saved")]);
                run(c, &["HSET", &key, "f", "v"]);
            }
            for (cmd, args) in [
                ("toggle", vec!["1".to_string(), "NOW".into(), "5".into()]),
                ("rem", vec!["1".into()]),
                ("count", vec![]),
                ("info", vec![]),
                ("check", vec!["1".into()]),
                ("recent", vec![]),
            ] {
                let (m, l) = t.both(c, cmd, &keys[..1], &args);
                assert_eq!(m, l, "WRONGTYPE {suffix}: {cmd}");
            }
            assert_same_data(c, step);
            for side in ["m", "l"] {
                let key = format!("{side}{post}:{suffix}", post = keys[0]);
                run(c, &["DEL", &key]);
                run(c, &["RENAME", &format!("{key}.saved"), &key]);
            }
        }
    }
    assert_same_data(c, steps);
    promoted_seen
}

fn twins_match_through_a_large_promotion_and_common_of_bitmaps_once() {
    let s = server();
    let mut c = s.conn();
    let mut t = Twins::load(&mut c);
    t.configure(&mut c, "4294967295", "512", "0");
    // Two posts, dense in the first range and in range 50, with a sparse
    // tail: both are promoted and migrated in steps, the tail stays a Set.
    let mut rng = StdRng::seed_from_u64(8);
    for post in ["{a}", "{b}"] {
        for i in 0..3000u64 {
            let u = match i % 10 {
                0 => rng.gen_range(0..4_294_967_295u64),
                1..=5 => rng.gen_range(0..64_000u64),
                _ => 50 * 64_000 + rng.gen_range(0..64_000u64),
            };
            let cmd = if i % 7 == 0 { "toggle" } else { "add" };
            let (m, l) = t.both(&mut c, cmd, &[post.into()], &[u.to_string()]);
            assert_eq!(m, l, "{post} step {i}");
            if i % 500 == 0 {
                assert_same_data(&mut c, i as usize);
            }
        }
    }
    for (cmd, keys) in [
        ("info", vec!["{a}"]),
        ("info", vec!["{b}"]),
        ("common", vec!["{a}", "{b}"]),
        ("count", vec!["{a}"]),
    ] {
        let keys: Vec<String> = keys.into_iter().map(String::from).collect();
        let (m, l) = t.both(&mut c, cmd, &keys, &[]);
        assert_eq!(m, l, "{cmd}");
        if cmd == "info" {
            assert!(m.contains("mixed"), "{m}");
            assert!(m.contains("promotion, none"), "{m}");
        }
    }
    let all: Vec<String> = (0..200)
        .map(|i| (50 * 64_000 + i * 7).to_string())
        .collect();
    let (m, l) = t.both(&mut c, "check", &["{a}".into()], &all);
    assert_eq!(m, l);
    assert_same_data(&mut c, 0);
}

/// [`twins_match_the_module_on_random_sequences_once`] through the EVALSHA scripts, then through the
/// Functions library (FCALL).
#[test]
fn twins_match_the_module_on_random_sequences() {
    for via in [Via::Script, Via::Function] {
        twins_via(via, twins_match_the_module_on_random_sequences_once);
    }
}

/// [`twins_match_through_a_large_promotion_and_common_of_bitmaps_once`] through the EVALSHA scripts, then through the
/// Functions library (FCALL).
#[test]
fn twins_match_through_a_large_promotion_and_common_of_bitmaps() {
    for via in [Via::Script, Via::Function] {
        twins_via(
            via,
            twins_match_through_a_large_promotion_and_common_of_bitmaps_once,
        );
    }
}
