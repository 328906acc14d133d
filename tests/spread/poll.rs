//! POLL spread over shards on one server: creation, routing by voter, the
//! exact merged reads of the client library against a single-slot poll
//! fed the same votes, the write-back merged over shards, bad input with
//! nothing written, replication and AOF replay.

use super::*;
use hotpath_client::{Poll, PollEntry, PollOptions, PollRank, SpreadPoll};

const NOW: i64 = 1_767_225_600_000;

/// A small deterministic generator.
struct Xs(u64);

impl Xs {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
}

fn raw_create(c: &mut Connection, keys: &[String], rules: &[&str]) {
    let n = keys.len().to_string();
    for k in keys {
        let mut a = vec!["POLL.CREATE", k.as_str()];
        a.extend_from_slice(rules);
        a.extend_from_slice(&["SPREAD", &n]);
        assert_eq!(run(c, &a), "OK", "{k}");
    }
}

#[test]
fn poll_shards_route_by_voter_and_keep_the_rules() {
    let s = Server::start();
    let mut c = s.conn();
    let poll = SpreadPoll::new("poll:nat", 4).at(NOW);
    let o = PollOptions {
        candidates: Some(vec!["a".into(), "b".into(), "c".into()]),
        ttl: Some(86400 * 400),
        ..PollOptions::default()
    };
    assert!(poll.create(&mut c, &o).unwrap());
    let keys = poll.shards().keys().to_vec();
    // Again with the same rules: harmless, nothing changes.
    let before = snapshot(&mut c);
    assert!(poll.create(&mut c, &o).unwrap());
    assert!(SpreadPoll::new("poll:nat", 4).create(&mut c, &o).unwrap());
    assert_eq!(snapshot(&mut c), before);
    // Each shard: the poll's rules, its record, the board's candidates,
    // and the same absolute expiry.
    let expire = int(&mut c, &["PEXPIRETIME", &format!("{}:meta", keys[0])]);
    assert_eq!(expire, NOW + 86400 * 400 * 1000);
    for (i, k) in keys.iter().enumerate() {
        let meta = format!("{k}:meta");
        assert_eq!(
            run(&mut c, &["HMGET", &meta, "spread", "shard", "closed"]),
            format!("[4, {i}, 1]")
        );
        assert_eq!(int(&mut c, &["PEXPIRETIME", &meta]), expire, "{k}");
        assert_eq!(
            int(&mut c, &["PEXPIRETIME", &format!("{k}:board")]),
            expire,
            "{k}"
        );
    }
    // A voter lives in shard shard_of(voter, 4); the others refuse it and
    // name the right key.
    let users: Vec<String> = (0..40)
        .map(|i| {
            if i % 3 == 0 {
                format!("u{i}")
            } else {
                i.to_string()
            }
        })
        .collect();
    for u in &users {
        let i = poll.shard_of(u) as usize;
        assert_eq!(i as u32, routing::shard_of(u.as_bytes(), 4));
        assert!(poll.vote(&mut c, u, "a").unwrap(), "{u}");
        assert!(!poll.vote(&mut c, u, "b").unwrap(), "{u}: ONCE");
        let other = &keys[(i + 1) % 4];
        assert_eq!(
            err(&mut c, &["POLL.VOTE", other, u, "a", "SPREAD", "4"]),
            format!(
                "ERR poll: wrong shard: user '{u}' belongs to '{}' (shard {i} of 4)",
                keys[i]
            )
        );
        assert_eq!(poll.status(&mut c, u).unwrap(), vec!["a".to_string()]);
    }
    // Votes expire with the poll: the ballots' keys take the same instant.
    for k in &keys {
        assert_eq!(
            int(&mut c, &["PEXPIRETIME", &format!("{k}:voted")]),
            expire,
            "{k}"
        );
    }
    // A raw call without SPREAD is routed by the shard's record too.
    let u = &users[1];
    let i = poll.shard_of(u) as usize;
    assert_eq!(
        err(&mut c, &["POLL.STATUS", &keys[(i + 1) % 4], u]),
        format!(
            "ERR poll: wrong shard: user '{u}' belongs to '{}' (shard {i} of 4)",
            keys[i]
        )
    );
    // A closed poll refuses other candidates on every shard.
    for (j, k) in keys.iter().enumerate() {
        let voter = (0..)
            .map(|v| format!("new{v}"))
            .find(|v| poll.shard_of(v) == j as u32)
            .unwrap();
        assert_eq!(
            err(&mut c, &["POLL.VOTE", k, &voter, "z", "SPREAD", "4"]),
            "ERR poll: unknown candidate"
        );
    }
    // INFO of a shard says which one it is and its expiry; the client sums.
    let info = run(&mut c, &["POLL.INFO", &keys[2], "SPREAD", "4"]);
    assert!(
        info.ends_with(&format!("spread, 4, shard, 2, expires, {expire}]")),
        "{info}"
    );
    let total = poll.info(&mut c).unwrap().unwrap();
    assert_eq!(
        (total.ballots, total.votes, total.shards, total.expires),
        (40, 40, 4, expire)
    );
    assert_eq!(total.per_shard.iter().map(|s| s.ballots).sum::<i64>(), 40);
    assert_eq!(
        poll.top(&mut c, 10, 0).unwrap(),
        vec![
            PollEntry {
                candidate: "a".into(),
                votes: 40
            },
            PollEntry {
                candidate: "c".into(),
                votes: 0
            },
            PollEntry {
                candidate: "b".into(),
                votes: 0
            },
        ]
    );
    assert_eq!(
        poll.rank(&mut c, "b").unwrap(),
        Some(PollRank { rank: 2, votes: 0 })
    );
    assert_eq!(poll.rank(&mut c, "zz").unwrap(), None);
    assert_eq!(
        poll.totals(&mut c, &["a", "b", "zz"]).unwrap(),
        vec![Some(40), Some(0), None]
    );
    assert_eq!(poll.revoke(&mut c, u, None).unwrap(), 1);
    assert_eq!(poll.totals(&mut c, &["a"]).unwrap(), vec![Some(39)]);
    // Creating again with other rules is refused, before anything is
    // written on any shard.
    let other = PollOptions {
        candidates: Some(vec!["a".into(), "b".into()]),
        ..PollOptions::default()
    };
    let before = snapshot(&mut c);
    let e = poll.create(&mut c, &other).unwrap_err();
    assert!(error_text(&e).contains("poll already exists"), "{e}");
    assert_eq!(snapshot(&mut c), before);
}

/// One random stream of votes and revocations, applied to a spread poll
/// and to a single-slot poll; every reply and every merged read equal.
fn equal_run(mode: &str, n: u32, cands: u64, voters: u64, steps: usize, page_max: u64) {
    let s = Server::start();
    let mut c = s.conn();
    let base = format!("poll:eq{mode}{n}");
    let single_key = format!("poll:{{single{mode}{n}}}");
    let poll = SpreadPoll::new(&base, n).at(NOW).with_page_max(page_max);
    let single = Poll::new(&single_key).at(NOW);
    let o = PollOptions {
        mode: Some(mode.into()),
        maxvotes: (mode == "MULTI").then_some(3),
        ..PollOptions::default()
    };
    assert!(poll.create(&mut c, &o).unwrap());
    assert!(single.create(&mut c, &o).unwrap());
    let mut rng = Xs(0x9e37_79b9_7f4a_7c15 ^ n as u64);
    for step in 0..steps {
        let r = rng.next();
        let user = format!("v{}", r % voters);
        // Skewed candidates: a few popular, a long tail.
        let x = (rng.next() % 1_000_000) as f64 / 1_000_000.0;
        let cand = format!("c{}", ((cands as f64).powf(x) as u64).saturating_sub(1));
        if r.is_multiple_of(11) {
            let only = r.is_multiple_of(2).then_some(cand.as_str());
            assert_eq!(
                poll.revoke(&mut c, &user, only).unwrap(),
                single.revoke(&mut c, &user, only).unwrap(),
                "step {step}"
            );
        } else {
            let a = poll.vote(&mut c, &user, &cand);
            let b = single.vote(&mut c, &user, &cand);
            assert_eq!(
                a.map_err(|e| error_text(&e)),
                b.map_err(|e| error_text(&e)),
                "step {step}"
            );
        }
    }
    let board = single.top(&mut c, Some(1000), None).unwrap();
    for (count, offset) in [(10, 0), (1, 0), (25, 5), (1000, 0), (3, 40), (0, 0)] {
        let want: Vec<PollEntry> = board
            .iter()
            .skip(offset as usize)
            .take(count as usize)
            .cloned()
            .collect();
        assert_eq!(
            poll.top(&mut c, count, offset).unwrap(),
            want,
            "top {count} offset {offset}"
        );
    }
    for e in board.iter().step_by(3) {
        assert_eq!(
            poll.rank(&mut c, &e.candidate).unwrap(),
            single.rank(&mut c, &e.candidate).unwrap(),
            "{}",
            e.candidate
        );
    }
    let names: Vec<&str> = board.iter().map(|e| e.candidate.as_str()).collect();
    let totals = poll.totals(&mut c, &names).unwrap();
    assert_eq!(
        totals,
        board.iter().map(|e| Some(e.votes)).collect::<Vec<_>>()
    );
    let (a, b) = (
        poll.info(&mut c).unwrap().unwrap(),
        single.info(&mut c).unwrap().unwrap(),
    );
    assert_eq!(
        (a.mode.as_str(), a.maxvotes, a.ballots, a.votes),
        (b.mode.as_str(), b.maxvotes, b.ballots, b.votes)
    );
    for v in 0..voters {
        let u = format!("v{v}");
        assert_eq!(
            poll.status(&mut c, &u).unwrap(),
            single.status(&mut c, &u).unwrap(),
            "{u}"
        );
    }
    // The write-back: the shards' deltas merged are the single poll's.
    let sorted = |mut v: Vec<PollEntry>| {
        v.sort_by(|a, b| a.candidate.cmp(&b.candidate));
        v
    };
    for round in 0..2 {
        let ss = single.sync(&mut c).unwrap();
        let sp = poll.sync(&mut c).unwrap();
        assert_eq!(sp.epochs, vec![round + 1; n as usize]);
        assert_eq!(
            sorted(sp.deltas.clone()),
            sorted(ss.deltas.clone()),
            "round {round}"
        );
        // Until acknowledged, the same deltas again.
        assert_eq!(poll.sync(&mut c).unwrap(), sp);
        assert!(single.syncack(&mut c, ss.epoch).unwrap());
        assert_eq!(poll.syncack(&mut c, &sp).unwrap(), vec![true; n as usize]);
        assert_eq!(poll.syncack(&mut c, &sp).unwrap(), vec![false; n as usize]);
        for v in 0..voters / 2 {
            let u = format!("v{v}");
            single.revoke(&mut c, &u, None).unwrap();
            poll.revoke(&mut c, &u, None).unwrap();
        }
    }
}

#[test]
fn poll_spread_results_equal_a_single_slot_poll() {
    // Skewed votes over many candidates, read in small pages: several
    // rounds of the exact merge.
    equal_run("ONCE", 5, 400, 3000, 3500, 7);
    equal_run("MULTI", 3, 60, 500, 2500, 1000);
    // One shard.
    equal_run("ONCE", 1, 30, 200, 400, 1000);
}

#[test]
fn poll_spread_bad_input_is_a_clear_error_and_writes_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    let keys = keys_of("poll:9", 4);
    raw_create(&mut c, &keys, &["NOW", "1000"]);
    let u1 = (0..)
        .map(|i| format!("u{i}"))
        .find(|u| routing::shard_of(u.as_bytes(), 4) == 1)
        .unwrap();
    run(&mut c, &["POLL.VOTE", &keys[1], &u1, "x", "SPREAD", "4"]);
    let before = snapshot(&mut c);
    let k0 = keys[0].as_str();
    let spread_base = format!(
        "ERR poll: 'poll:9' is spread over 4 shards: call its shard keys ('{k0}' is shard 0) or use a client library"
    );
    let disagree = |i: usize, m: u32| {
        format!(
            "ERR poll: shard counts disagree: '{}' is shard {i} of 4, the call says {m}",
            keys[i]
        )
    };
    let cases: Vec<(Vec<&str>, String)> = vec![
        // The base key of a spread poll, to every single-slot command.
        (vec!["POLL.CREATE", "poll:9"], spread_base.clone()),
        (vec!["POLL.VOTE", "poll:9", "u", "x"], spread_base.clone()),
        (vec!["POLL.REVOKE", "poll:9", "u"], spread_base.clone()),
        (vec!["POLL.TOP", "poll:9"], spread_base.clone()),
        (vec!["POLL.RANK", "poll:9", "x"], spread_base.clone()),
        (vec!["POLL.STATUS", "poll:9", "u"], spread_base.clone()),
        (vec!["POLL.INFO", "poll:9"], spread_base.clone()),
        (vec!["POLL.SYNC", "poll:9"], spread_base.clone()),
        (vec!["POLL.SYNCACK", "poll:9", "1"], spread_base.clone()),
        // Counts that disagree.
        (
            vec!["POLL.VOTE", &keys[1], &u1, "x", "SPREAD", "8"],
            disagree(1, 8),
        ),
        (vec!["POLL.CREATE", &keys[2], "SPREAD", "8"], disagree(2, 8)),
        (vec!["POLL.TOP", &keys[2], "SPREAD", "3"], disagree(2, 3)),
        (vec!["POLL.INFO", &keys[2], "SPREAD", "3"], disagree(2, 3)),
        (vec!["POLL.SYNC", &keys[2], "SPREAD", "3"], disagree(2, 3)),
        (
            vec!["POLL.VOTE", "poll:{x}", "u", "x", "SPREAD", "3"],
            "ERR poll: 'poll:{x}' is not a shard key of 3 shards (see docs/spread.md)".into(),
        ),
        (
            vec!["POLL.CREATE", "poll:9", "SPREAD", "4"],
            "ERR poll: 'poll:9' is not a shard key of 4 shards (see docs/spread.md)".into(),
        ),
        // The wrong shard.
        (
            vec!["POLL.VOTE", &keys[2], &u1, "x", "SPREAD", "4"],
            format!(
                "ERR poll: wrong shard: user '{u1}' belongs to '{}' (shard 1 of 4)",
                keys[1]
            ),
        ),
        (
            vec!["POLL.REVOKE", &keys[2], &u1, "SPREAD", "4"],
            format!(
                "ERR poll: wrong shard: user '{u1}' belongs to '{}' (shard 1 of 4)",
                keys[1]
            ),
        ),
        // Other rules on an existing shard.
        (
            vec!["POLL.CREATE", &keys[1], "MODE", "DAILY", "SPREAD", "4"],
            "ERR poll: poll already exists".into(),
        ),
        // Option values and arity.
        (
            vec!["POLL.VOTE", &keys[1], &u1, "x", "SPREAD", "0"],
            "ERR poll: SPREAD must be from 1 to 1024".into(),
        ),
        (
            vec!["POLL.INFO", &keys[1], "SPREAD", "1025"],
            "ERR poll: SPREAD must be from 1 to 1024".into(),
        ),
        (
            vec!["POLL.VOTE", &keys[1], &u1, "x", "SPREAD", "x"],
            "ERR value is not an integer or out of range".into(),
        ),
        (
            vec!["POLL.VOTE", &keys[1], &u1, "x", "SPREAD"],
            "ERR syntax error".into(),
        ),
        (
            vec!["POLL.CREATE", &keys[1], "SPREAD"],
            "ERR syntax error".into(),
        ),
        (
            vec!["POLL.INFO", &keys[1], "SPREAD"],
            "ERR wrong number of arguments for 'poll.info' command".into(),
        ),
        (
            vec!["POLL.RANK", &keys[1], "x", "y"],
            "ERR wrong number of arguments for 'poll.rank' command".into(),
        ),
        (
            vec!["POLL.SYNCACK", &keys[1], "1", "SPREAD", "4", "x"],
            "ERR wrong number of arguments for 'poll.syncack' command".into(),
        ),
    ];
    for (args, want) in &cases {
        assert_eq!(&err(&mut c, args), want, "{args:?}");
        assert_eq!(snapshot(&mut c), before, "{args:?} wrote something");
    }
    // A missing shard (never created, or deleted whole).
    run(&mut c, &["DEL", &format!("{}:meta", keys[3])]);
    let u3 = (0..)
        .map(|i| format!("u{i}"))
        .find(|u| routing::shard_of(u.as_bytes(), 4) == 3)
        .unwrap();
    let before = snapshot(&mut c);
    for args in [
        vec!["POLL.VOTE", &keys[3], &u3, "x", "SPREAD", "4"],
        vec!["POLL.REVOKE", &keys[3], &u3, "SPREAD", "4"],
        vec!["POLL.STATUS", &keys[3], &u3, "SPREAD", "4"],
        vec!["POLL.TOP", &keys[3], "SPREAD", "4"],
        vec!["POLL.RANK", &keys[3], "x", "SPREAD", "4"],
        vec!["POLL.INFO", &keys[3], "SPREAD", "4"],
        vec!["POLL.SYNC", &keys[3], "SPREAD", "4"],
        vec!["POLL.SYNCACK", &keys[3], "1", "SPREAD", "4"],
    ] {
        assert_eq!(
            err(&mut c, &args),
            format!("ERR poll: shard '{}' (3 of 4) does not exist", keys[3]),
            "{args:?}"
        );
        assert_eq!(snapshot(&mut c), before);
    }
    // The client's merged reads fail naming the missing shard.
    let poll = SpreadPoll::new("poll:9", 4);
    for e in [
        poll.top(&mut c, 10, 0).map(|_| ()).unwrap_err(),
        poll.info(&mut c).map(|_| ()).unwrap_err(),
        poll.rank(&mut c, "x").map(|_| ()).unwrap_err(),
        poll.sync(&mut c).map(|_| ()).unwrap_err(),
    ] {
        assert!(error_text(&e).contains(&keys[3]), "{e}");
    }
    assert_eq!(snapshot(&mut c), before);
    // A hand-deleted shard meta, the shard's votes still there.
    run(&mut c, &["DEL", &format!("{}:meta", keys[1])]);
    let before = snapshot(&mut c);
    let corrupt = format!(
        "ERR poll: corrupt data in '{}:meta' field 'spread'",
        keys[1]
    );
    for args in [
        vec!["POLL.VOTE", &keys[1], "u9", "x", "SPREAD", "4"],
        vec!["POLL.TOP", &keys[1], "SPREAD", "4"],
        vec!["POLL.INFO", &keys[1], "SPREAD", "4"],
        vec!["POLL.SYNC", &keys[1], "SPREAD", "4"],
    ] {
        assert_eq!(err(&mut c, &args), corrupt, "{args:?}");
        assert_eq!(snapshot(&mut c), before);
    }
    assert_eq!(
        err(&mut c, &["POLL.CREATE", &keys[1], "SPREAD", "4"]),
        "ERR poll: poll already exists"
    );
    assert_eq!(snapshot(&mut c), before);
    // Corrupt records.
    let m2 = format!("{}:meta", keys[2]);
    for (field, value, bad) in [
        ("spread", "x", "spread"),
        ("spread", "0", "spread"),
        ("shard", "9", "shard"),
        ("shard", "1", "shard"),
    ] {
        run(&mut c, &["HSET", &m2, "spread", "4", "shard", "2"]);
        run(&mut c, &["HSET", &m2, field, value]);
        let before = snapshot(&mut c);
        assert_eq!(
            err(&mut c, &["POLL.INFO", &keys[2], "SPREAD", "4"]),
            format!("ERR poll: corrupt data in '{m2}' field '{bad}'"),
            "{field}={value}"
        );
        assert_eq!(snapshot(&mut c), before);
    }
    // A single-slot poll under the base blocks shard 0's creation.
    run(&mut c, &["POLL.VOTE", "poll:{7}", "u", "x"]);
    let k = keys_of("poll:{7}", 2);
    let before = snapshot(&mut c);
    assert_eq!(
        err(&mut c, &["POLL.CREATE", &k[0], "SPREAD", "2"]),
        "ERR poll: 'poll:{7}' is a single-slot poll already"
    );
    assert_eq!(snapshot(&mut c), before);
}

#[test]
fn poll_spread_replicates_and_replays_exactly() {
    let pair = Pair::start();
    let mut m = pair.master.conn();
    // The master's clock: each VOTE replicates the NOW it used.
    let poll = SpreadPoll::new("poll:{rep}", 3);
    let o = PollOptions {
        mode: Some("DAILY".into()),
        ttl: Some(86400),
        ..PollOptions::default()
    };
    assert!(poll.create(&mut m, &o).unwrap());
    for v in 0..600u64 {
        let u = format!("v{v}");
        poll.vote(&mut m, &u, &format!("c{}", v % 7)).unwrap();
        if v % 9 == 0 {
            poll.revoke(&mut m, &u, None).unwrap();
        }
    }
    let sync = poll.sync(&mut m).unwrap();
    poll.syncack(&mut m, &sync).unwrap();
    poll.vote(&mut m, "late", "c1").unwrap();
    poll.sync(&mut m).unwrap();
    pair.assert_equal();
    // Every key expires at the same instant on the replica.
    let mut r = pair.replica.conn();
    let want = int(
        &mut m,
        &["PEXPIRETIME", &format!("{}:meta", poll.shards().keys()[0])],
    );
    assert!(want > 0);
    for k in poll.shards().keys() {
        for suffix in ["meta", "voted", "board", "synced", "syncing"] {
            let key = format!("{k}:{suffix}");
            if int(&mut m, &["EXISTS", &key]) == 1 {
                assert_eq!(int(&mut m, &["PEXPIRETIME", &key]), want, "{key}");
                assert_eq!(
                    int(&mut r, &["PEXPIRETIME", &key]),
                    want,
                    "{key} on the replica"
                );
            }
        }
    }

    let mut s = start_aof();
    let mut c = s.conn();
    let poll = SpreadPoll::new("poll:{aof}", 2);
    assert!(poll.create(&mut c, &PollOptions::default()).unwrap());
    for v in 0..400u64 {
        poll.vote(&mut c, &format!("v{v}"), &format!("c{}", v % 5))
            .unwrap();
    }
    drop(c);
    assert_aof_restart_equal(&mut s);
}
