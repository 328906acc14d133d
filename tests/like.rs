//! LIKE on a real server: every command and option, the promotion rule,
//! every error, WRONGTYPE on each derived key with nothing written,
//! concurrent togglers, replication, AOF and RDB.

mod common;

use std::collections::BTreeSet;

use common::*;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const MAX: &str = "4294967295";

fn server(promote_at: i64) -> Server {
    Server::start_full(&[], &["like-promote-at", &promote_at.to_string()])
}

fn info(c: &mut Connection, b: &str) -> (String, i64, i64) {
    let v: Vec<redis::Value> = redis::cmd("LIKE.INFO").arg(b).query(c).unwrap();
    let s = |v: &redis::Value| match v {
        redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        redis::Value::Int(i) => i.to_string(),
        other => format!("{other:?}"),
    };
    assert_eq!(
        (s(&v[0]), s(&v[2]), s(&v[4])),
        ("encoding".into(), "count".into(), "bytes".into())
    );
    (
        s(&v[1]),
        s(&v[3]).parse().unwrap(),
        s(&v[5]).parse().unwrap(),
    )
}

/// The count the structure itself holds: SCARD of the set or BITCOUNT of
/// the bitmap.
fn structural_count(c: &mut Connection, b: &str) -> i64 {
    int(c, &["SCARD", &format!("{b}:set")]) + int(c, &["BITCOUNT", &format!("{b}:bits")])
}

#[test]
fn toggle_add_rem_are_idempotent_and_count_exactly() {
    let s = server(512);
    let mut c = s.conn();
    assert_eq!(
        run(&mut c, &["LIKE.TOGGLE", "p", "7", "NOW", "1000"]),
        "[1, 1]"
    );
    assert_eq!(run(&mut c, &["LIKE.TOGGLE", "p", "7"]), "[0, 0]");
    assert_eq!(
        run(&mut c, &["LIKE.ADD", "p", "7", "NOW", "1001"]),
        "[1, 1]"
    );
    assert_eq!(
        run(&mut c, &["LIKE.ADD", "p", "7", "NOW", "1002"]),
        "[0, 1]"
    );
    assert_eq!(
        run(&mut c, &["LIKE.ADD", "p", "8", "now", "1003"]),
        "[1, 2]"
    );
    assert_eq!(run(&mut c, &["LIKE.REM", "p", "7"]), "[1, 1]");
    assert_eq!(run(&mut c, &["LIKE.REM", "p", "7"]), "[0, 1]");
    assert_eq!(run(&mut c, &["LIKE.REM", "nothing", "7"]), "[0, 0]");
    assert_eq!(int(&mut c, &["LIKE.COUNT", "p"]), 1);
    assert_eq!(int(&mut c, &["LIKE.COUNT", "nothing"]), 0);
    assert_eq!(run(&mut c, &["GET", "p:count"]), "1");
    assert_eq!(run(&mut c, &["SMEMBERS", "p:set"]), "[8]");
    assert_eq!(
        run(&mut c, &["LIKE.CHECK", "p", "8", "7", "0", "8"]),
        "[1, 0, 0, 1]"
    );
    assert_eq!(run(&mut c, &["LIKE.CHECK", "nothing", "8"]), "[0]");
    // The last unlike removes every key of the post.
    assert_eq!(run(&mut c, &["LIKE.TOGGLE", "p", "8"]), "[0, 0]");
    assert_eq!(run(&mut c, &["KEYS", "p*"]), "[]");
    assert_eq!(info(&mut c, "p"), ("none".into(), 0, 0));
    // Ids at the ends of the range.
    assert_eq!(run(&mut c, &["LIKE.ADD", "q", "0"]), "[1, 1]");
    assert_eq!(run(&mut c, &["LIKE.ADD", "q", MAX]), "[1, 2]");
    assert_eq!(
        run(&mut c, &["LIKE.CHECK", "q", "0", MAX, "1"]),
        "[1, 1, 0]"
    );
    let (enc, n, bytes) = info(&mut c, "q");
    assert_eq!((enc.as_str(), n), ("set", 2));
    assert!(bytes > 0);
}

#[test]
fn recent_keeps_the_latest_likers_newest_first() {
    let s = server(512);
    let mut c = s.conn();
    run(&mut c, &["CONFIG", "SET", "hotpath.like-recent", "3"]);
    for (u, t) in [("1", "100"), ("2", "200"), ("3", "300"), ("4", "400")] {
        run(&mut c, &["LIKE.ADD", "p", u, "NOW", t]);
    }
    assert_eq!(
        run(&mut c, &["LIKE.RECENT", "p"]),
        "[4, 400, 3, 300, 2, 200]"
    );
    assert_eq!(run(&mut c, &["LIKE.RECENT", "p", "2"]), "[4, 400, 3, 300]");
    assert_eq!(run(&mut c, &["LIKE.RECENT", "p", "0"]), "[]");
    assert_eq!(
        run(&mut c, &["LIKE.RECENT", "p", "100"]),
        "[4, 400, 3, 300, 2, 200]"
    );
    assert_eq!(int(&mut c, &["ZCARD", "p:recent"]), 3);
    // An unlike takes the user out of the recent likers.
    run(&mut c, &["LIKE.REM", "p", "3"]);
    assert_eq!(run(&mut c, &["LIKE.RECENT", "p"]), "[4, 400, 2, 200]");
    // A repeated like changes nothing, a new like after an unlike is new.
    run(&mut c, &["LIKE.ADD", "p", "4", "NOW", "900"]);
    run(&mut c, &["LIKE.TOGGLE", "p", "3", "NOW", "500"]);
    assert_eq!(
        run(&mut c, &["LIKE.RECENT", "p"]),
        "[3, 500, 4, 400, 2, 200]"
    );
    // Without NOW the server clock is used.
    let before = chrono_ms();
    run(&mut c, &["LIKE.ADD", "p", "9"]);
    let v: Vec<i64> = redis::cmd("LIKE.RECENT")
        .arg("p")
        .arg(1)
        .query(&mut c)
        .unwrap();
    assert_eq!(v[0], 9);
    assert!(v[1] >= before - 5 && v[1] <= chrono_ms() + 5, "{v:?}");
    // like-recent 0 turns recording off.
    run(&mut c, &["CONFIG", "SET", "hotpath.like-recent", "0"]);
    run(&mut c, &["LIKE.ADD", "r", "1", "NOW", "1"]);
    assert_eq!(int(&mut c, &["EXISTS", "r:recent"]), 0);
    assert_eq!(run(&mut c, &["LIKE.RECENT", "r"]), "[]");
}

fn chrono_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn promotion_happens_exactly_past_the_threshold_when_smaller() {
    let s = server(16);
    let mut c = s.conn();
    for u in 0..16 {
        run(&mut c, &["LIKE.ADD", "p", &u.to_string()]);
    }
    // LIKE.INFO bytes is the memory model promotion compares.
    assert_eq!(info(&mut c, "p"), ("set".to_string(), 16, 64 + 8 + 16 * 2));
    assert_eq!(int(&mut c, &["EXISTS", "p:bits"]), 0);
    let before = run(&mut c, &["INFO", "hotpath"]);
    assert!(before.contains("hotpath_like_promoted:0"), "{before}");
    // The 17th like crosses like-promote-at: ids 0..16 fit in a 3-byte
    // bitmap (67 bytes in the memory model against 106 for the intset).
    assert_eq!(run(&mut c, &["LIKE.ADD", "p", "16"]), "[1, 17]");
    assert_eq!(info(&mut c, "p"), ("bitmap".to_string(), 17, 64 + 3));
    assert_eq!(int(&mut c, &["EXISTS", "p:set"]), 0, "never both forms");
    assert_eq!(
        run(&mut c, &["GET", "p:bits"]),
        String::from_utf8_lossy(&[0xff, 0xff, 0x80])
    );
    assert_eq!(int(&mut c, &["BITCOUNT", "p:bits"]), 17);
    assert!(run(&mut c, &["INFO", "hotpath"]).contains("hotpath_like_promoted:1"));
    // Unlike and check after promotion; bitmaps never demote.
    assert_eq!(run(&mut c, &["LIKE.TOGGLE", "p", "3"]), "[0, 16]");
    assert_eq!(run(&mut c, &["LIKE.REM", "p", "16"]), "[1, 15]");
    assert_eq!(run(&mut c, &["LIKE.REM", "p", "8000"]), "[0, 15]");
    assert_eq!(
        run(&mut c, &["LIKE.CHECK", "p", "0", "3", "16", "7", "999999"]),
        "[1, 0, 0, 1, 0]"
    );
    for u in 0..16 {
        run(&mut c, &["LIKE.REM", "p", &u.to_string()]);
    }
    assert_eq!(info(&mut c, "p").0, "bitmap");
    assert_eq!(int(&mut c, &["LIKE.COUNT", "p"]), 0);
    assert_eq!(run(&mut c, &["GET", "p:count"]), "0");
    // A like beyond the bitmap's end grows it (with 1/64 slack).
    assert_eq!(run(&mut c, &["LIKE.TOGGLE", "p", "8000"]), "[1, 1]");
    assert_eq!(int(&mut c, &["STRLEN", "p:bits"]), 1001 + 1001 / 64);
    assert_eq!(int(&mut c, &["GETBIT", "p:bits", "8000"]), 1);
    assert_eq!(structural_count(&mut c, "p"), 1);
}

#[test]
fn a_set_that_would_not_shrink_is_not_promoted() {
    // Nine ids up to 300: the model puts the intset at 64 + 8 + 9 x 2 = 90
    // bytes and the 38-byte bitmap at 64 + 38 = 102: no promotion, since it
    // would not save memory (docs/like.md, "memory model").
    let s = server(8);
    let mut c = s.conn();
    for u in (0..8).chain([300]) {
        run(&mut c, &["LIKE.ADD", "p", &u.to_string()]);
    }
    assert_eq!(info(&mut c, "p").0, "set");
    // Between powers of two nothing is looked at; at 16 members the set is
    // 104 bytes and the same bitmap wins.
    for u in 8..14 {
        run(&mut c, &["LIKE.ADD", "p", &u.to_string()]);
    }
    assert_eq!(int(&mut c, &["SCARD", "p:set"]), 15);
    assert_eq!(run(&mut c, &["LIKE.ADD", "p", "14"]), "[1, 16]");
    assert_eq!(info(&mut c, "p").0, "bitmap");
    assert_eq!(int(&mut c, &["STRLEN", "p:bits"]), 38);
    assert_eq!(int(&mut c, &["BITCOUNT", "p:bits"]), 16);
}

#[test]
fn sparse_ids_stay_sets_and_a_set_that_fills_is_promoted_at_a_doubling() {
    let s = server(8);
    let mut c = s.conn();
    // Ids spread over 4 billion: a bitmap would take 512 MB.
    let mut rng = StdRng::seed_from_u64(1);
    for _ in 0..600 {
        let u: u64 = rng.gen_range(0..=4_294_967_295);
        run(&mut c, &["LIKE.ADD", "sparse", &u.to_string()]);
    }
    assert_eq!(info(&mut c, "sparse").0, "set");
    assert_eq!(
        structural_count(&mut c, "sparse"),
        int(&mut c, &["LIKE.COUNT", "sparse"])
    );
    // One id at 100000 makes the first checks fail (bitmap 12.5 KB against
    // an intset of a few hundred bytes); at 1024 likes the hashtable set
    // outweighs it and the doubling check promotes it.
    run(&mut c, &["LIKE.ADD", "fills", "100000"]);
    for u in 0..1022 {
        run(&mut c, &["LIKE.ADD", "fills", &u.to_string()]);
    }
    assert_eq!(int(&mut c, &["LIKE.COUNT", "fills"]), 1023);
    assert_eq!(info(&mut c, "fills").0, "set");
    assert_eq!(run(&mut c, &["LIKE.ADD", "fills", "5000"]), "[1, 1024]");
    let (enc, n, bytes) = info(&mut c, "fills");
    assert_eq!((enc.as_str(), n), ("bitmap", 1024));
    assert!(bytes < 20_000, "{bytes}");
    assert_eq!(int(&mut c, &["BITCOUNT", "fills:bits"]), 1024);
    assert_eq!(
        run(
            &mut c,
            &["LIKE.CHECK", "fills", "100000", "5000", "1021", "1022"]
        ),
        "[1, 1, 1, 0]"
    );
}

#[test]
fn promotion_keeps_the_set_ttl() {
    let s = server(16);
    let mut c = s.conn();
    for u in 0..16 {
        run(&mut c, &["LIKE.ADD", "p", &u.to_string()]);
    }
    run(&mut c, &["PEXPIRE", "p:set", "100000"]);
    run(&mut c, &["LIKE.ADD", "p", "16"]);
    assert_eq!(info(&mut c, "p").0, "bitmap");
    let ttl = int(&mut c, &["PTTL", "p:bits"]);
    assert!(ttl > 90_000 && ttl <= 100_000, "{ttl}");
}

#[test]
fn counts_always_equal_scard_or_bitcount() {
    let s = server(16);
    let mut c = s.conn();
    let mut rng = StdRng::seed_from_u64(2);
    let mut model: Vec<BTreeSet<u64>> = vec![BTreeSet::new(); 3];
    for step in 0..1500 {
        let p = rng.gen_range(0..3);
        let b = format!("p{p}");
        let u: u64 = rng.gen_range(0..200);
        let us = u.to_string();
        let reply = match rng.gen_range(0..3) {
            0 => {
                let liked = model[p].insert(u) || {
                    model[p].remove(&u);
                    false
                };
                (run(&mut c, &["LIKE.TOGGLE", &b, &us]), liked as i64)
            }
            1 => {
                let changed = model[p].insert(u);
                (run(&mut c, &["LIKE.ADD", &b, &us]), changed as i64)
            }
            _ => {
                let changed = model[p].remove(&u);
                (run(&mut c, &["LIKE.REM", &b, &us]), changed as i64)
            }
        };
        assert_eq!(
            reply.0,
            format!("[{}, {}]", reply.1, model[p].len()),
            "step {step}"
        );
        assert_eq!(
            structural_count(&mut c, &b),
            model[p].len() as i64,
            "step {step}"
        );
        assert_eq!(int(&mut c, &["LIKE.COUNT", &b]), model[p].len() as i64);
    }
    // At least one post went through a promotion.
    assert!((0..3).any(|p| info(&mut c, &format!("p{p}")).0 == "bitmap"));
    for (p, m) in model.iter().enumerate() {
        let all: Vec<String> = (0..200).map(|u| u.to_string()).collect();
        let mut args = vec!["LIKE.CHECK".to_string(), format!("p{p}")];
        args.extend(all);
        let refs: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let want: Vec<String> = (0..200)
            .map(|u| (m.contains(&u) as i64).to_string())
            .collect();
        assert_eq!(run(&mut c, &refs), format!("[{}]", want.join(", ")));
    }
}

#[test]
fn a_missing_count_is_counted_from_the_structure() {
    let s = server(16);
    let mut c = s.conn();
    for u in [1, 2, 3] {
        run(&mut c, &["LIKE.ADD", "p", &u.to_string()]);
    }
    run(&mut c, &["DEL", "p:count"]);
    assert_eq!(int(&mut c, &["LIKE.COUNT", "p"]), 3);
    assert_eq!(int(&mut c, &["EXISTS", "p:count"]), 0, "reads do not write");
    assert_eq!(run(&mut c, &["LIKE.ADD", "p", "4"]), "[1, 4]");
    assert_eq!(run(&mut c, &["GET", "p:count"]), "4");
    for u in 5..18 {
        run(&mut c, &["LIKE.ADD", "p", &u.to_string()]);
    }
    assert_eq!(info(&mut c, "p").0, "bitmap");
    run(&mut c, &["SET", "p:count", "garbage"]);
    assert_eq!(int(&mut c, &["LIKE.COUNT", "p"]), 17);
    assert_eq!(run(&mut c, &["LIKE.REM", "p", "1"]), "[1, 16]");
}

#[test]
fn common_works_across_every_mix_of_forms() {
    let s = server(8);
    let mut c = s.conn();
    // a, b: sets; x, y: bitmaps.
    for u in [1, 5, 9, 200, 3000] {
        run(&mut c, &["LIKE.ADD", "a", &u.to_string()]);
    }
    for u in [5, 9, 3000, 4000] {
        run(&mut c, &["LIKE.ADD", "b", &u.to_string()]);
    }
    for u in (0..40).step_by(2) {
        run(&mut c, &["LIKE.ADD", "x", &u.to_string()]);
    }
    for u in (0..60).step_by(3) {
        run(&mut c, &["LIKE.ADD", "y", &u.to_string()]);
    }
    assert_eq!(info(&mut c, "a").0, "set");
    assert_eq!(info(&mut c, "x").0, "bitmap");
    assert_eq!(info(&mut c, "y").0, "bitmap");
    run(&mut c, &["LIKE.ADD", "b", "9"]);
    run(&mut c, &["LIKE.ADD", "b", "12"]);
    assert_eq!(run(&mut c, &["LIKE.COMMON", "a", "b"]), "[5, 9, 3000]");
    assert_eq!(
        run(&mut c, &["LIKE.COMMON", "x", "y"]),
        "[0, 6, 12, 18, 24, 30, 36]"
    );
    assert_eq!(run(&mut c, &["LIKE.COMMON", "b", "y"]), "[9, 12]");
    assert_eq!(run(&mut c, &["LIKE.COMMON", "y", "b"]), "[9, 12]");
    assert_eq!(run(&mut c, &["LIKE.COMMON", "a", "x"]), "[]");
    assert_eq!(run(&mut c, &["LIKE.COMMON", "a", "none"]), "[]");
    assert_eq!(
        run(&mut c, &["LIKE.COMMON", "x", "x"]),
        run(&mut c, &["LIKE.COMMON", "x", "x"])
    );
    assert_eq!(
        run(&mut c, &["LIKE.COMMON", "a", "a"]),
        "[1, 5, 9, 200, 3000]"
    );
}

#[test]
fn bad_input_is_refused_with_redis_errors_and_nothing_written() {
    let s = server(512);
    let mut c = s.conn();
    let bad_id = format!("ERR like: user id must be an integer from 0 to {MAX}");
    for cmd in ["LIKE.TOGGLE", "LIKE.ADD", "LIKE.REM", "LIKE.CHECK"] {
        for id in [
            "-1",
            "4294967296",
            "abc",
            "1.5",
            "01",
            "",
            " 1",
            "+1",
            "99999999999999999999999",
        ] {
            assert_eq!(err(&mut c, &[cmd, "p", id]), bad_id, "{cmd} {id:?}");
        }
        assert_eq!(
            err(&mut c, &[cmd, "p"]),
            format!(
                "ERR wrong number of arguments for '{}' command",
                cmd.to_lowercase()
            )
        );
    }
    assert_eq!(err(&mut c, &["LIKE.CHECK", "p", "1", "2", "x"]), bad_id);
    for cmd in ["LIKE.TOGGLE", "LIKE.ADD"] {
        assert_eq!(err(&mut c, &[cmd, "p", "1", "NOW"]), "ERR syntax error");
        assert_eq!(
            err(&mut c, &[cmd, "p", "1", "LATER", "5"]),
            "ERR syntax error"
        );
        assert_eq!(
            err(&mut c, &[cmd, "p", "1", "NOW", "5", "x"]),
            "ERR syntax error"
        );
        for now in ["x", "-1", "1.5", "9007199254740992"] {
            assert_eq!(
                err(&mut c, &[cmd, "p", "1", "NOW", now]),
                "ERR value is not an integer or out of range"
            );
        }
        assert_eq!(
            err(&mut c, &[cmd]),
            format!(
                "ERR wrong number of arguments for '{}' command",
                cmd.to_lowercase()
            )
        );
    }
    assert_eq!(
        err(&mut c, &["LIKE.REM", "p", "1", "NOW", "5"]),
        "ERR wrong number of arguments for 'like.rem' command"
    );
    assert_eq!(
        err(&mut c, &["LIKE.COUNT", "p", "x"]),
        "ERR wrong number of arguments for 'like.count' command"
    );
    assert_eq!(
        err(&mut c, &["LIKE.INFO"]),
        "ERR wrong number of arguments for 'like.info' command"
    );
    assert_eq!(
        err(&mut c, &["LIKE.COMMON", "a"]),
        "ERR wrong number of arguments for 'like.common' command"
    );
    assert_eq!(
        err(&mut c, &["LIKE.RECENT"]),
        "ERR wrong number of arguments for 'like.recent' command"
    );
    assert_eq!(
        err(&mut c, &["LIKE.RECENT", "p", "-1"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut c, &["LIKE.RECENT", "p", "x"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut c, &["LIKE.RECENT", "p", "1", "2"]),
        "ERR syntax error"
    );
    assert_eq!(run(&mut c, &["DBSIZE"]), "0", "nothing was written");
    // like-max-id narrows the range at run time.
    run(&mut c, &["CONFIG", "SET", "hotpath.like-max-id", "1000"]);
    assert_eq!(
        err(&mut c, &["LIKE.ADD", "p", "1001"]),
        "ERR like: user id must be an integer from 0 to 1000"
    );
    assert_eq!(run(&mut c, &["LIKE.ADD", "p", "1000"]), "[1, 1]");
}

#[test]
fn wrongtype_on_any_derived_key_writes_nothing() {
    let s = server(2);
    let mut c = s.conn();
    let writes: [&[&str]; 6] = [
        &["LIKE.TOGGLE", "p", "1"],
        &["LIKE.ADD", "p", "1", "NOW", "5"],
        &["LIKE.ADD", "p", "900"],
        &["LIKE.REM", "p", "2"],
        &["LIKE.TOGGLE", "p", "3"],
        &["LIKE.ADD", "p", "4"],
    ];
    // Each derived key in turn holds a wrong type, over a post in set form
    // and one in bitmap form.
    for promoted in [false, true] {
        for (suffix, wrong) in [
            ("set", "hash"),
            ("bits", "list"),
            ("count", "list"),
            ("recent", "string"),
        ] {
            run(&mut c, &["FLUSHALL"]);
            for u in ["2", "3"] {
                run(&mut c, &["LIKE.ADD", "p", u, "NOW", "1"]);
            }
            if promoted {
                for u in 5..20 {
                    run(&mut c, &["LIKE.ADD", "p", &u.to_string(), "NOW", "1"]);
                }
                assert_eq!(info(&mut c, "p").0, "bitmap");
            }
            let key = format!("p:{suffix}");
            run(&mut c, &["DEL", &key]);
            match wrong {
                "hash" => run(&mut c, &["HSET", &key, "f", "v"]),
                "list" => run(&mut c, &["RPUSH", &key, "v"]),
                _ => run(&mut c, &["SET", &key, "v"]),
            };
            let before = dump_keys(&mut c, "*");
            for w in writes {
                let e = err(&mut c, w);
                assert!(
                    e.starts_with("WRONGTYPE"),
                    "{w:?} with {key} as {wrong}: {e}"
                );
            }
            assert_eq!(
                dump_keys(&mut c, "*"),
                before,
                "{key} as {wrong}: something was written"
            );
            let reads: Vec<&[&str]> = match suffix {
                "set" | "bits" => vec![
                    &["LIKE.CHECK", "p", "1"],
                    &["LIKE.COUNT", "p"],
                    &["LIKE.INFO", "p"],
                    &["LIKE.COMMON", "p", "q"],
                ],
                "count" => vec![&["LIKE.COUNT", "p"], &["LIKE.INFO", "p"]],
                _ => vec![&["LIKE.RECENT", "p"]],
            };
            for r in reads {
                assert!(err(&mut c, r).starts_with("WRONGTYPE"), "{r:?} with {key}");
            }
        }
    }
}

#[test]
fn concurrent_togglers_end_with_an_exact_count() {
    let s = server(64);
    let threads = 6;
    let per = 400;
    let mut handles = Vec::new();
    for t in 0..threads {
        let port = s.port;
        handles.push(std::thread::spawn(move || {
            let client = redis::Client::open(format!("redis://127.0.0.1:{port}/")).unwrap();
            let mut c = client.get_connection().unwrap();
            let mut rng = StdRng::seed_from_u64(t);
            let mut toggles = vec![0u32; 1000];
            for _ in 0..per {
                // Users overlap between threads, so they race on the same ids.
                let u = rng.gen_range(0..1000);
                toggles[u] += 1;
                let _: Vec<i64> = redis::cmd("LIKE.TOGGLE")
                    .arg("hot")
                    .arg(u)
                    .query(&mut c)
                    .unwrap();
            }
            toggles
        }));
    }
    let mut total = vec![0u32; 1000];
    for h in handles {
        for (i, n) in h.join().unwrap().into_iter().enumerate() {
            total[i] += n;
        }
    }
    let mut c = s.conn();
    let liked: Vec<usize> = (0..1000).filter(|&u| total[u] % 2 == 1).collect();
    assert_eq!(int(&mut c, &["LIKE.COUNT", "hot"]), liked.len() as i64);
    assert_eq!(structural_count(&mut c, "hot"), liked.len() as i64);
    assert_eq!(info(&mut c, "hot").0, "bitmap", "promoted under load");
    for (u, n) in total.iter().enumerate() {
        let want = (n % 2) as i64;
        assert_eq!(
            run(&mut c, &["LIKE.CHECK", "hot", &u.to_string()]),
            format!("[{want}]"),
            "user {u}"
        );
    }
}

/// Runs every write command of the family, including promotions (with a
/// TTL carried over), bitmap growth, recent trimming and the last unlike.
fn workload(c: &mut Connection) {
    run(c, &["CONFIG", "SET", "hotpath.like-promote-at", "8"]);
    run(c, &["CONFIG", "SET", "hotpath.like-recent", "3"]);
    let mut rng = StdRng::seed_from_u64(9);
    for i in 0..400 {
        let p = format!("post{{{}}}", rng.gen_range(0..4));
        let u = rng.gen_range(0..300u32).to_string();
        let now = (1_000_000 + i).to_string();
        match rng.gen_range(0..4) {
            0 => run(c, &["LIKE.TOGGLE", &p, &u, "NOW", &now]),
            1 => run(c, &["LIKE.TOGGLE", &p, &u]),
            2 => run(c, &["LIKE.ADD", &p, &u]),
            _ => run(c, &["LIKE.REM", &p, &u]),
        };
    }
    for u in 0..5 {
        run(c, &["LIKE.ADD", "ttl{1}", &u.to_string()]);
    }
    run(c, &["EXPIRE", "ttl{1}:set", "1000"]);
    for u in 5..12 {
        run(c, &["LIKE.ADD", "ttl{1}", &u.to_string(), "NOW", "7"]);
    }
    run(c, &["LIKE.ADD", "ttl{1}", "90000"]);
    run(c, &["LIKE.TOGGLE", "gone{1}", "1"]);
    run(c, &["LIKE.TOGGLE", "gone{1}", "2"]);
    run(c, &["LIKE.REM", "gone{1}", "1"]);
    run(c, &["LIKE.TOGGLE", "gone{1}", "2"]);
    assert_eq!(info(c, "ttl{1}").0, "bitmap");
    assert!(int(c, &["PTTL", "ttl{1}:bits"]) > 0);
}

#[test]
fn replica_ends_identical_for_every_write_command() {
    let pair = Pair::start();
    let mut c = pair.master.conn();
    workload(&mut c);
    pair.assert_equal();
    let mut r = pair.replica.conn();
    assert_eq!(dump_keys(&mut c, "*"), dump_keys(&mut r, "*"));
    assert!(int(&mut r, &["PTTL", "ttl{1}:bits"]) > 0);
}

#[test]
fn aof_replay_ends_identical() {
    let mut s = start_aof();
    let mut c = s.conn();
    workload(&mut c);
    let before = dump_keys(&mut c, "*");
    let digest = s.digest();
    s.restart(&[]);
    // The server answers while it is still replaying the AOF (a digest
    // taken then is partial): wait for the replay to finish.
    let mut c = s.conn();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while run(&mut c, &["INFO", "persistence"]).contains("loading:1") {
        assert!(
            std::time::Instant::now() < deadline,
            "AOF replay never finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(s.digest(), digest, "AOF replay differs");
    assert_eq!(dump_keys(&mut c, "*"), before);
}

#[test]
fn rdb_reload_ends_identical() {
    let s = Server::start();
    let mut c = s.conn();
    workload(&mut c);
    assert_rdb_reload_equal(&s);
}

#[test]
fn writes_raise_keyspace_events_and_count_in_info() {
    let s = server(16);
    let mut c = s.conn();
    run(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Kd"]);
    let mut sub = s.conn();
    let mut ps = sub.as_pubsub();
    ps.subscribe("__keyspace@0__:p").unwrap();
    ps.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    for u in 0..17 {
        run(&mut c, &["LIKE.ADD", "p", &u.to_string()]);
    }
    run(&mut c, &["LIKE.ADD", "p", "1"]); // no change: no event
    run(&mut c, &["LIKE.TOGGLE", "p", "1"]);
    let mut events = Vec::new();
    while events.len() < 18 {
        let m = ps.get_message().unwrap();
        events.push(m.get_payload::<String>().unwrap());
    }
    // One event per write that changed the likes, named after the command
    // (the promotion at the 17th like raises no event of its own).
    let added = events.iter().filter(|e| *e == "hotpath.like.add").count();
    assert_eq!(added, 17, "{events:?}");
    assert_eq!(events[17], "hotpath.like.toggle", "{events:?}");
    let info = run(&mut c, &["INFO", "hotpath"]);
    for field in [
        "hotpath_like_likes:17",
        "hotpath_like_unlikes:1",
        "hotpath_like_promoted:1",
    ] {
        assert!(info.contains(field), "{field} missing in {info}");
    }
    run(&mut c, &["LIKE.CHECK", "p", "1", "2", "3"]);
    assert!(run(&mut c, &["INFO", "hotpath"]).contains("hotpath_like_checks:3"));
}
