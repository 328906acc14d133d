//! RANK spread over shards, on one server: the client's global rank, top
//! and around equal a single board fed the same writes (ties included, on
//! every tie-break), bad input is a clear error that writes nothing, and
//! every spread write replicates and replays exactly.

use super::common::*;
use super::{keys_of, snapshot};
use hotpath_client::{Rank, RankEntry, RankOptions, SpreadRank};

/// A small deterministic generator (xorshift), so that a failure repeats.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn opts(tiebreak: &str, unit: &str) -> RankOptions {
    RankOptions {
        tiebreak: Some(tiebreak.into()),
        unit: Some(unit.into()),
        // Ten digits of milliseconds hold 115 days from the epoch.
        epoch: (unit == "MS").then_some(1_699_000_000_000),
        ..RankOptions::default()
    }
}

/// Feeds the same random writes to a single board and a spread one, then
/// checks that every read of the spread board equals the single board's.
/// Few distinct points and instants make many ties, across shards and
/// within them (more than a shard's tie walk, with `members` large).
fn same_as_single(
    c: &mut Connection,
    tag: &str,
    o: &RankOptions,
    n: u32,
    members: u64,
    points: u64,
) {
    let single = Rank::new(format!("single:{{{tag}}}"));
    let spread = SpreadRank::new(&format!("spread:{tag}"), n);
    single.at(1_700_000_000_000).create(c, o).unwrap();
    spread.at(1_700_000_000_000).create(c, o).unwrap();
    // Again with the same layout and count: nothing changes.
    assert!(spread.create(c, o).unwrap());
    let name = |m: u64| {
        if m.is_multiple_of(3) {
            m.to_string()
        } else {
            format!("p{m}")
        }
    };
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ u64::from(n) ^ members);
    for step in 0..members * 4 {
        let m = name(rng.below(members));
        let t = 1_700_000_000_000 + (step / 50) as i64 * 1000 + rng.below(3) as i64 * 400;
        match rng.below(10) {
            0..=4 => {
                let p = rng.below(points) as i64;
                let a = single.at(t).add(c, &m, p, None).unwrap();
                let b = spread.at(t).add(c, &m, p, None).unwrap();
                assert_eq!(a, b.points, "ADD {m}");
                assert_eq!(b.shard, spread.shard_of(&m));
            }
            5..=8 => {
                let d = rng.below(3) as i64 - 1;
                let a = single.at(t).incr(c, &m, d).unwrap();
                assert_eq!(a, spread.at(t).incr(c, &m, d).unwrap().points, "INCR {m}");
            }
            _ => {
                let other = name(rng.below(members));
                let a = single.rem(c, &[&m, &other]).unwrap();
                assert_eq!(a, spread.rem(c, &[&m, &other]).unwrap(), "REM {m} {other}");
            }
        }
    }
    let total = single.count(c).unwrap();
    assert!(total > (members as i64) / 2, "{total}");
    assert_eq!(spread.count(c).unwrap(), total);
    assert_eq!(spread.shard_counts(c).unwrap().len(), n as usize);
    for (count, offset) in [(10, 0), (1000, 0), (7, 13), (25, total - 5), (5, total + 3)] {
        assert_eq!(
            spread.top(c, count, offset).unwrap(),
            single.top(c, Some(count), Some(offset)).unwrap(),
            "top {count} offset {offset}"
        );
    }
    for m in (0..members).map(name) {
        let want: Option<RankEntry> = single.get(c, &m).unwrap();
        assert_eq!(spread.get(c, &m).unwrap(), want, "get {m}");
        assert_eq!(
            spread.rank(c, &m).unwrap(),
            want.map(|e| e.rank),
            "rank {m}"
        );
    }
    for m in (0..members).step_by(7).map(name) {
        for k in [0, 1, 4] {
            assert_eq!(
                spread.around(c, &m, k).unwrap(),
                single.around(c, &m, k).unwrap(),
                "around {m} {k}"
            );
        }
    }
}

#[test]
fn rank_spread_results_equal_a_single_board() {
    let s = Server::start();
    let mut c = s.conn();
    // Earlier first (seconds: many ties in a second), later first (ms),
    // and no tie-break (every equal score is a tie, decided by member):
    // over 32 members of one shard share a score, past the tie walk.
    same_as_single(&mut c, "e", &opts("EARLIER", "S"), 5, 150, 6);
    same_as_single(&mut c, "l", &opts("LATER", "MS"), 3, 90, 4);
    same_as_single(&mut c, "n", &opts("NONE", "S"), 4, 400, 2);
    // One shard is a board of its own.
    same_as_single(&mut c, "one", &RankOptions::default(), 1, 40, 5);
    // LAYOUT WIDE: positions are (points, stored name), the time in the
    // name; ties to the millisecond across and within shards.
    for (tag, tiebreak, n) in [("w", "EARLIER", 4), ("wl", "LATER", 3)] {
        let o = RankOptions {
            layout: Some("WIDE".into()),
            tiebreak: Some(tiebreak.into()),
            ..RankOptions::default()
        };
        same_as_single(&mut c, tag, &o, n, 120, 4);
    }
}

#[test]
fn rank_spread_position_reads_one_shard() {
    let s = Server::start();
    let mut c = s.conn();
    let keys = keys_of("board:p", 2);
    for k in &keys {
        assert_eq!(
            run(
                &mut c,
                &["RANK.CREATE", k, "TIEBREAK", "NONE", "SPREAD", "2"]
            ),
            "OK"
        );
    }
    // Members 0, 2, 4 live in shard 0; ties are decided by the member.
    for (m, p) in [("0", "5"), ("2", "5"), ("4", "9")] {
        run(&mut c, &["RANK.ADD", &keys[0], m, p, "SPREAD", "2"]);
    }
    assert_eq!(
        run(&mut c, &["RANK.POSITION", &keys[0], "5", "SPREAD", "2"]),
        "[0, nil, [], [4, 9, 9, 2, 5, 5, 0, 5, 5]]"
    );
    assert_eq!(
        run(
            &mut c,
            &["RANK.POSITION", &keys[0], "1", "MEMBER", "2", "SPREAD", "2"]
        ),
        "[1, [2, 5, 5], [4, 9, 9], [0, 5, 5]]"
    );
    // A member of shard 1 at 5 points ranks between "2" and "0".
    assert_eq!(
        run(
            &mut c,
            &[
                "RANK.POSITION",
                &keys[0],
                "1",
                "AT",
                "5",
                "1",
                "SPREAD",
                "2"
            ]
        ),
        "[2, nil, [2, 5, 5], [0, 5, 5]]"
    );
    assert_eq!(
        run(&mut c, &["RANK.POSITION", &keys[0], "1", "MEMBER", "6"]),
        "nil"
    );
    // A tie block larger than the walk (32) is searched by halving: the
    // place of every position in it is the count of greater members.
    let spread = SpreadRank::new("board:p", 2);
    let mut tied: Vec<String> = (0..200)
        .map(|i| format!("t{i:03}"))
        .filter(|m| spread.shard_of(m) == 0)
        .collect();
    assert!(tied.len() > 64, "{}", tied.len());
    for m in &tied {
        run(&mut c, &["RANK.ADD", &keys[0], m, "7", "SPREAD", "2"]);
    }
    tied.sort();
    for probe in [
        "t", "t000", "t0505", "t100", "t1995", "u", &tied[17], &tied[60],
    ] {
        let greater = tied.iter().filter(|m| m.as_str() > probe).count();
        let got = spread
            .position(&mut c, 0, 1, Some((7, probe)))
            .unwrap()
            .unwrap();
        // "4" (9 points) ranks above every tie.
        assert_eq!(got.above, 1 + greater as i64, "{probe}");
        assert_eq!(got.at.is_some(), tied.iter().any(|m| m == probe), "{probe}");
    }
    assert_eq!(
        err(
            &mut c,
            &["RANK.POSITION", &keys[0], "1", "MEMBER", "1", "SPREAD", "2"]
        ),
        format!(
            "ERR rank: wrong shard: member '1' belongs to '{}' (shard 1 of 2)",
            keys[1]
        )
    );
    assert_eq!(
        err(&mut c, &["RANK.POSITION", &keys[0], "1", "AT", "x", "1"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut c, &["RANK.POSITION", &keys[0], "1001"]),
        "ERR rank: count must be at most 1000 (rank-range-max)"
    );
    assert_eq!(
        err(
            &mut c,
            &[
                "RANK.POSITION",
                &keys[0],
                "1",
                "MEMBER",
                "2",
                "AT",
                "5",
                "1"
            ]
        ),
        "ERR syntax error"
    );
}

#[test]
fn rank_spread_bad_input_is_a_clear_error_and_writes_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    let keys = keys_of("board:9", 4);
    for k in &keys {
        assert_eq!(
            run(
                &mut c,
                &["RANK.CREATE", k, "TIEBREAK", "LATER", "SPREAD", "4"]
            ),
            "OK"
        );
    }
    let m1 = "1"; // shard 1
    run(&mut c, &["RANK.ADD", &keys[1], m1, "10", "SPREAD", "4"]);
    // A single-slot board next to it, for MERGE.
    run(&mut c, &["RANK.ADD", "other:{x}", "a", "1"]);
    let before = snapshot(&mut c);
    let k0 = keys[0].as_str();
    let base = format!(
        "ERR rank: 'board:9' is spread over 4 shards: call its shard keys ('{k0}' is shard 0) or use a client library"
    );
    let disagree = |i: usize, m: u32| {
        format!(
            "ERR rank: shard counts disagree: '{}' is shard {i} of 4, the call says {m}",
            keys[i]
        )
    };
    let cases: Vec<(Vec<&str>, String)> = vec![
        // The spread board used by single-slot commands.
        (vec!["RANK.ADD", "board:9", "1", "5"], base.clone()),
        (vec!["RANK.INCR", "board:9", "1", "5"], base.clone()),
        (vec!["RANK.GET", "board:9", "1"], base.clone()),
        (vec!["RANK.TOP", "board:9"], base.clone()),
        (vec!["RANK.AROUND", "board:9", "1", "2"], base.clone()),
        (vec!["RANK.REM", "board:9", "1"], base.clone()),
        (vec!["RANK.COUNT", "board:9"], base.clone()),
        (vec!["RANK.POSITION", "board:9", "3"], base.clone()),
        (vec!["RANK.CREATE", "board:9"], base.clone()),
        (vec!["RANK.IMPORT", "board:9"], base.clone()),
        (vec!["RANK.MERGE", "board:9", "1", "board:9"], base.clone()),
        (
            vec!["RANK.MERGE", &keys[1], "1", &keys[1]],
            format!(
                "ERR rank: RANK.MERGE does not take a shard of a spread board ('{}'): see docs/rank.md",
                keys[1]
            ),
        ),
        (
            vec!["RANK.IMPORT", &keys[1]],
            format!(
                "ERR rank: RANK.IMPORT does not take a shard of a spread board ('{}'): see docs/rank.md",
                keys[1]
            ),
        ),
        // Counts that disagree.
        (vec!["RANK.ADD", &keys[1], m1, "5", "SPREAD", "8"], disagree(1, 8)),
        (vec!["RANK.INCR", &keys[1], m1, "5", "SPREAD", "2"], disagree(1, 2)),
        (vec!["RANK.GET", &keys[1], m1, "SPREAD", "3"], disagree(1, 3)),
        (vec!["RANK.COUNT", &keys[2], "SPREAD", "5"], disagree(2, 5)),
        (vec!["RANK.CREATE", &keys[2], "TIEBREAK", "LATER", "SPREAD", "8"], disagree(2, 8)),
        (
            vec!["RANK.CREATE", "board:9", "SPREAD", "4"],
            "ERR rank: 'board:9' is not a shard key of 4 shards (see docs/spread.md)".into(),
        ),
        // Another layout for an existing shard.
        (
            vec!["RANK.CREATE", &keys[2], "SPREAD", "4"],
            "ERR rank: board already exists".into(),
        ),
        // The wrong shard, for every command that names a member.
        (
            vec!["RANK.ADD", &keys[0], m1, "5", "SPREAD", "4"],
            format!("ERR rank: wrong shard: member '1' belongs to '{}' (shard 1 of 4)", keys[1]),
        ),
        (
            vec!["RANK.INCR", &keys[2], "alice", "5"],
            format!(
                "ERR rank: wrong shard: member 'alice' belongs to '{}' (shard 3 of 4)",
                keys[3]
            ),
        ),
        (
            vec!["RANK.GET", &keys[0], m1, "SPREAD", "4"],
            format!("ERR rank: wrong shard: member '1' belongs to '{}' (shard 1 of 4)", keys[1]),
        ),
        (
            vec!["RANK.REM", &keys[1], m1, "2", "SPREAD", "4"],
            format!("ERR rank: wrong shard: member '2' belongs to '{}' (shard 2 of 4)", keys[2]),
        ),
        // Option values.
        (
            vec!["RANK.ADD", &keys[1], m1, "5", "SPREAD", "0"],
            "ERR rank: SPREAD must be from 1 to 1024".into(),
        ),
        (
            vec!["RANK.GET", &keys[1], m1, "SPREAD"],
            "ERR wrong number of arguments for 'rank.get' command".into(),
        ),
        (
            vec!["RANK.COUNT", &keys[1], "SPREAD", "x"],
            "ERR value is not an integer or out of range".into(),
        ),
    ];
    for (args, want) in &cases {
        assert_eq!(&err(&mut c, args), want, "{args:?}");
    }
    assert_eq!(snapshot(&mut c), before);

    // A missing shard, and a hand-deleted shard meta: the client names the
    // shard; nothing is written.
    let spread = SpreadRank::new("board:9", 4);
    run(&mut c, &["DEL", &format!("{}:meta", keys[3])]);
    let before = snapshot(&mut c);
    let missing = format!("ERR rank: shard '{}' (3 of 4) does not exist", keys[3]);
    assert_eq!(
        err(&mut c, &["RANK.INCR", &keys[3], "3", "1", "SPREAD", "4"]),
        missing
    );
    let e = spread.count(&mut c).unwrap_err().to_string();
    assert!(e.contains(&missing[4..]), "{e}");
    let e = spread.top(&mut c, 5, 0).unwrap_err().to_string();
    assert!(e.contains(&keys[3]), "{e}");
    assert!(spread.incr(&mut c, "3", 1).is_err());
    assert_eq!(snapshot(&mut c), before);
    run(&mut c, &["DEL", &format!("{}:meta", keys[1])]);
    let before = snapshot(&mut c);
    let corrupt = format!(
        "ERR rank: corrupt data in '{}:meta' field 'spread'",
        keys[1]
    );
    assert_eq!(
        err(&mut c, &["RANK.ADD", &keys[1], m1, "5", "SPREAD", "4"]),
        corrupt
    );
    assert_eq!(
        err(&mut c, &["RANK.GET", &keys[1], m1, "SPREAD", "4"]),
        corrupt
    );
    let e = spread.get(&mut c, m1).unwrap_err().to_string();
    assert!(e.contains(&corrupt[4..]), "{e}");
    // Creating the shard again is refused: it holds data.
    assert_eq!(
        err(
            &mut c,
            &["RANK.CREATE", &keys[1], "TIEBREAK", "LATER", "SPREAD", "4"]
        ),
        "ERR rank: board already exists"
    );
    assert_eq!(snapshot(&mut c), before);

    // Shard 0 would shadow a single-slot board of the base key.
    run(&mut c, &["RANK.ADD", "board:{7}", "a", "1"]);
    let k = keys_of("board:{7}", 2);
    let before = snapshot(&mut c);
    assert_eq!(
        err(&mut c, &["RANK.CREATE", &k[0], "SPREAD", "2"]),
        "ERR rank: 'board:{7}' is a single-slot board already"
    );
    assert_eq!(snapshot(&mut c), before);
}

#[test]
fn rank_spread_replicates_and_replays_exactly() {
    let pair = Pair::start();
    let mut m = pair.master.conn();
    let board = SpreadRank::new("board:{rep}", 3);
    board
        .create(
            &mut m,
            &RankOptions {
                ttl: Some(100_000),
                ..RankOptions::default()
            },
        )
        .unwrap();
    for i in 0..800u64 {
        let member = format!("u{}", i % 120);
        board.incr(&mut m, &member, (i % 7) as i64 - 2).unwrap();
        if i % 11 == 0 {
            board.add(&mut m, &member, (i % 50) as i64, None).unwrap();
        }
        if i % 97 == 0 {
            board.rem(&mut m, &[&member]).unwrap();
        }
    }
    pair.assert_equal();
    // Every key of a shard expires at its record's instant.
    let k = &board.shards().keys()[1];
    assert_eq!(
        int(&mut m, &["PEXPIRETIME", k]),
        int(&mut m, &["PEXPIRETIME", &format!("{k}:meta")])
    );

    let mut s = start_aof();
    let mut c = s.conn();
    let board = SpreadRank::new("board:{aof}", 2);
    board.create(&mut c, &RankOptions::default()).unwrap();
    // Every write is fsynced: a few hundred are enough.
    for i in 0..300u64 {
        board.incr(&mut c, &format!("u{}", i % 90), 1).unwrap();
    }
    drop(c);
    assert_aof_restart_equal(&mut s);
}
