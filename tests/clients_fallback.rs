//! The Python client on a server without the module (issue 14): its
//! default backend falls back to the Functions library
//! lua-compat/generated/hotpath.lua, and every family's calls of the client's own
//! test suite (clients/python/tests/test_client.py, `Families`) give the
//! replies they give against the module, over RESP3 and RESP2
//! (clients/python/tests/test_fallback.py).

use crate::common;

use std::path::PathBuf;
use std::process::Command;

use common::Server;

#[test]
fn python_client_falls_back_to_the_functions_library() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let s = Server::start_bare(&[]);
    let url = format!("redis://127.0.0.1:{}/", s.port);
    let out = Command::new(common::python_bin())
        .env("PYTHONPATH", root.join("clients/python/src"))
        .env("HOTPATH_VECTORS", root.join("docs/spread-vectors.json"))
        .env(
            "HOTPATH_LIBRARY",
            root.join("lua-compat/generated/hotpath.lua"),
        )
        .env("HOTPATH_FUNCTIONS_URL", &url)
        .args(["-m", "unittest", "discover", "-p", "test_fallback.py", "-s"])
        .arg(root.join("clients/python/tests"))
        .arg("-v")
        .output()
        .expect("python3");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "python tests failed:\n{err}");
    assert!(!err.contains("HOTPATH_FUNCTIONS_URL not set"), "{err}");
    assert!(err.contains("OnTheFunctionsLibrary"), "{err}");
    eprintln!("{}", err.lines().last().unwrap_or(""));
}

/// The Rust client's default backend on a server with only the library
/// gives every parsed result it gives on a server with the module: the
/// same calls of every family (multi-key commands included) on both.
#[test]
fn rust_client_falls_back_to_the_functions_library() {
    use hotpath_client::*;
    const NOW: i64 = 4_102_444_800_000;

    fn calls<C: FanOut>(con: &mut C, spread: Backend) -> Vec<String> {
        let mut out = Vec::new();
        let mut note = |what: &str, v: String| out.push(format!("{what}: {v}"));
        let p = Poll::new("poll:{t}").at(NOW);
        let po = PollOptions {
            mode: Some("MULTI".into()),
            maxvotes: Some(2),
            ..Default::default()
        };
        note("poll.create", format!("{:?}", p.create(con, &po)));
        note("poll.vote", format!("{:?}", p.vote(con, "u1", "a")));
        note("poll.vote", format!("{:?}", p.vote(con, "u1", "b")));
        note("poll.vote", format!("{:?}", p.vote(con, "u1", "c")));
        note("poll.top", format!("{:?}", p.top(con, Some(5), None)));
        note("poll.info", format!("{:?}", p.info(con)));
        note("poll.sync", format!("{:?}", p.sync(con)));
        let b = Rank::new("board:{t}").at(NOW);
        note(
            "rank.create",
            format!("{:?}", b.create(con, &RankOptions::default())),
        );
        note("rank.add", format!("{:?}", b.add(con, "m1", 5, None)));
        note(
            "rank.incr",
            format!("{:?}", b.at(NOW + 1000).incr(con, "m2", 5)),
        );
        note("rank.get", format!("{:?}", b.get(con, "m2")));
        note("rank.top", format!("{:?}", b.top(con, None, None)));
        let season = Rank::new("season:{t}").at(NOW);
        note(
            "rank.merge",
            format!(
                "{:?}",
                season.merge_from(con, &["board:{t}"], Some("MAX"), None)
            ),
        );
        note("rank.top", format!("{:?}", season.top(con, None, None)));
        let post = Like::new("post:{t}").at(NOW);
        note("like.add", format!("{:?}", post.add(con, 7)));
        note("like.toggle", format!("{:?}", post.toggle(con, 8)));
        note("like.check", format!("{:?}", post.check(con, &[7, 8, 9])));
        note("like.info", format!("{:?}", post.info(con)));
        let other = Like::new("post2:{t}");
        note("like.add", format!("{:?}", other.add(con, 7)));
        note(
            "like.common",
            format!("{:?}", post.common(con, "post2:{t}")),
        );
        let rp = RedPacket::new("rp:{t}").at(NOW);
        note(
            "rp.split",
            format!("{:?}", rp.split(con, 1000, 3, Some("EQUAL"), Some(3600))),
        );
        note("rp.grab", format!("{:?}", rp.grab(con, "alice")));
        note("rp.grabbed", format!("{:?}", rp.grabbed(con)));
        note("rp.info", format!("{:?}", rp.info(con)));
        let bag = LuckyBag::new("bag:{t}");
        note(
            "bag.create",
            format!("{:?}", bag.create(con, 1, &BagOptions::default())),
        );
        note("bag.join", format!("{:?}", bag.join(con, "u1", true)));
        note("bag.info", format!("{:?}", bag.info(con)));
        note("bag.result", format!("{:?}", bag.result(con, "u1")));
        let lim = Rate::new("api:{t}").at(NOW);
        note(
            "rate.check",
            format!("{:?}", lim.check(con, 2, 1000, &RateOptions::default())),
        );
        note(
            "rate.throttle",
            format!(
                "{:?}",
                Rate::new("cell:{t}").at(NOW).throttle(con, 5, 10, 60, None)
            ),
        );
        note(
            "rate.multi",
            format!(
                "{:?}",
                Rate::multi(
                    con,
                    &[("m1:{t}", 2, 1000), ("m2:{t}", 5, 1000)],
                    &RateOptions::default(),
                    Some(NOW)
                )
            ),
        );
        let lock = Lock::new("lock:{t}").at(NOW);
        note(
            "lock.acquire",
            format!(
                "{:?}",
                lock.acquire(con, "w1", 1000, &LockOptions::default())
            ),
        );
        note("lock.info", format!("{:?}", lock.info(con)));
        note("lock.release", format!("{:?}", lock.release(con, "w1")));
        let q = DelayQueue::new("q:{t}").at(NOW);
        note(
            "delayq.add",
            format!("{:?}", q.add(con, "j1", b"payload", &JobOptions::default())),
        );
        note(
            "delayq.poll",
            format!("{:?}", q.poll(con, 1000, None, None)),
        );
        note("delayq.info", format!("{:?}", q.info(con)));
        // The spread forms, on the backend given (the module's commands
        // or the library's functions: a fan-out does not fall back).
        let sp = SpreadLike::new("spost:{t}", 3).at(NOW).with_backend(spread);
        note("slike.create", format!("{:?}", sp.create(con)));
        note("slike.add", format!("{:?}", sp.add(con, 7)));
        note("slike.toggle", format!("{:?}", sp.toggle(con, 8)));
        note("slike.check", format!("{:?}", sp.check(con, &[7, 8, 9])));
        note("slike.count", format!("{:?}", sp.count(con)));
        note("slike.recent", format!("{:?}", sp.recent(con, Some(5))));
        note("slike.info", format!("{:?}", sp.info(con)));
        let spo = SpreadPoll::new("spoll:{t}", 3).at(NOW).with_backend(spread);
        note("spoll.create", format!("{:?}", spo.create(con, &po)));
        note("spoll.create", format!("{:?}", spo.create(con, &po)));
        for (u, c) in [
            ("1", "a"),
            ("2", "b"),
            ("3", "a"),
            ("alice", "c"),
            ("1", "b"),
        ] {
            note("spoll.vote", format!("{:?}", spo.vote(con, u, c)));
        }
        note("spoll.vote", format!("{:?}", spo.vote(con, "1", "a")));
        note("spoll.revoke", format!("{:?}", spo.revoke(con, "2", None)));
        note("spoll.status", format!("{:?}", spo.status(con, "1")));
        note("spoll.top", format!("{:?}", spo.top(con, 10, 0)));
        note("spoll.rank", format!("{:?}", spo.rank(con, "a")));
        note(
            "spoll.totals",
            format!("{:?}", spo.totals(con, &["a", "z"])),
        );
        note("spoll.info", format!("{:?}", spo.info(con)));
        let ssync = spo.sync(con);
        note("spoll.sync", format!("{ssync:?}"));
        if let Ok(s) = &ssync {
            note("spoll.syncack", format!("{:?}", spo.syncack(con, s)));
        }
        let sb = SpreadLuckyBag::new("sbag:{t}", 3).with_backend(spread);
        note(
            "sbag.create",
            format!("{:?}", sb.create(con, 10, &BagOptions::default())),
        );
        for u in ["1", "2", "3", "4", "alice", "bob"] {
            note("sbag.join", format!("{:?}", sb.join(con, u, false)));
        }
        note("sbag.participants", format!("{:?}", sb.participants(con)));
        // Every participant wins (10 prizes): the same on both servers
        // whatever the random scores.
        let o = DrawOptions {
            replicas: 0,
            ..DrawOptions::default()
        };
        let won = sb.draw(con, &o).map(|w| w.len());
        note("sbag.draw", format!("{won:?}"));
        note("sbag.result", format!("{:?}", sb.result(con, "alice")));
        note("sbag.state", format!("{:?}", sb.info(con).map(|i| i.state)));
        let sr = SpreadRank::new("sboard:{t}", 3)
            .at(NOW)
            .with_backend(spread);
        note(
            "srank.create",
            format!("{:?}", sr.create(con, &RankOptions::default())),
        );
        // Ties (7 points twice, at the same time) are ordered by member
        // across the shards, through RANK.POSITION.
        for (m, pts) in [("1", 5), ("2", 7), ("alice", 7), ("bob", 3), ("carol", 9)] {
            note("srank.add", format!("{:?}", sr.add(con, m, pts, None)));
        }
        note(
            "srank.add",
            format!("{:?}", sr.add(con, "carol", 4, Some(Keep::Greater))),
        );
        note("srank.incr", format!("{:?}", sr.incr(con, "bob", 4)));
        note("srank.count", format!("{:?}", sr.count(con)));
        note("srank.shards", format!("{:?}", sr.shard_counts(con)));
        note("srank.get", format!("{:?}", sr.get(con, "alice")));
        note("srank.rank", format!("{:?}", sr.rank(con, "bob")));
        note("srank.top", format!("{:?}", sr.top(con, 3, 1)));
        note("srank.around", format!("{:?}", sr.around(con, "alice", 1)));
        note("srank.rem", format!("{:?}", sr.rem(con, &["1", "zed"])));
        note("srank.top", format!("{:?}", sr.top(con, 10, 0)));
        // An error: the same text from both.
        note(
            "poll.vote",
            format!("{:?}", p.vote(con, "", "a").map_err(|e| e.to_string())),
        );
        out
    }

    let module = Server::start();
    let mut m = module.conn();
    let want = calls(&mut m, Backend::Module);
    // Every call succeeded on the module but two errors on purpose (a
    // third vote past MAXVOTES, an empty user).
    let errors: Vec<&String> = want.iter().filter(|s| s.contains("Err(")).collect();
    assert_eq!(errors.len(), 2, "{want:#?}");
    let plain = Server::start_bare(&[]);
    let mut f = plain.conn();
    common::load_library(&mut f);
    assert_eq!(
        detect(&mut f, LikeConfigs::default()).unwrap(),
        Backend::Functions(LikeConfigs::default())
    );
    assert_eq!(
        detect(&mut m, LikeConfigs::default()).unwrap(),
        Backend::Module
    );
    let got = calls(&mut f, Backend::Functions(LikeConfigs::default()));
    for (w, g) in want.iter().zip(&got) {
        assert_eq!(w, g);
    }
    assert_eq!(want.len(), got.len());
    // The calls really ran on each server.
    let n: i64 = redis::cmd("DBSIZE").query(&mut f).unwrap();
    assert!(n > 10, "{n}");
}
