//! Derived key names kept between commands (keys/mod.rs `Key::derived_hot`):
//! hot writes of many entities interleaved, with base names built to land
//! in the same pair of slots (same length, same last eight bytes), must
//! each write their own entity's keys, on a real server.

use crate::common;

use std::collections::BTreeSet;

use common::*;

/// Bases that share their length and last eight bytes: the name cache
/// hashes only those, so each group of three competes for one pair of
/// slots and evicts on every call.
fn bases(prefix: &str, n: usize) -> Vec<String> {
    (0..n)
        .flat_map(|i| ["a", "b", "c"].map(|p| format!("{p}{{{prefix}{i}}}-00000001")))
        .collect()
}

#[test]
fn interleaved_entities_write_their_own_keys() {
    let s = Server::start();
    let mut c = s.conn();
    let (packets, bags, polls, boards) = (
        bases("p", 40),
        bases("g", 40),
        bases("v", 40),
        bases("r", 40),
    );
    for b in &packets {
        run(&mut c, &["REDPACKET.SPLIT", b, "100000", "20"]);
    }
    for b in &bags {
        run(
            &mut c,
            &["LUCKYBAG.CREATE", b, "WINNERS", "3", "SHARDS", "4"],
        );
    }
    for b in &polls {
        run(&mut c, &["POLL.CREATE", b]);
    }
    let rounds = 6;
    let mut pipe = redis::pipe();
    for r in 0..rounds {
        let user = format!("u{r}");
        for i in 0..packets.len() {
            pipe.cmd("REDPACKET.GRAB").arg(&packets[i]).arg(&user);
            pipe.cmd("LUCKYBAG.JOIN").arg(&bags[i]).arg(&user);
            pipe.cmd("POLL.VOTE")
                .arg(&polls[i])
                .arg(&user)
                .arg(format!("c{}", r % 2));
            pipe.cmd("RANK.INCR").arg(&boards[i]).arg(&user).arg(i + 1);
        }
    }
    let _: Vec<redis::Value> = pipe.query(&mut c).unwrap();

    let users: BTreeSet<String> = (0..rounds).map(|r| format!("u{r}")).collect();
    for (i, b) in packets.iter().enumerate() {
        let got: BTreeSet<String> = redis::cmd("HKEYS")
            .arg(format!("{b}:grabbed"))
            .query(&mut c)
            .unwrap();
        assert_eq!(got, users, "packet {b}");
        assert_eq!(
            int(&mut c, &["LLEN", &format!("{b}:pool")]),
            20 - rounds as i64,
            "packet {b}"
        );
        let bag = &bags[i];
        let count: i64 = redis::cmd("GET")
            .arg(format!("{bag}:count"))
            .query(&mut c)
            .unwrap();
        assert_eq!(count, rounds as i64, "bag {bag}");
        let mut joined = BTreeSet::new();
        for shard in 0..4 {
            let m: Vec<String> = redis::cmd("ZRANGE")
                .arg(format!("{bag}:cand:{shard}"))
                .arg(0)
                .arg(-1)
                .query(&mut c)
                .unwrap();
            joined.extend(m);
        }
        assert_eq!(joined, users, "bag {bag}");
        let poll = &polls[i];
        let board: Vec<(String, i64)> = redis::cmd("ZRANGE")
            .arg(format!("{poll}:board"))
            .arg(0)
            .arg(-1)
            .arg("WITHSCORES")
            .query(&mut c)
            .unwrap();
        assert_eq!(
            board,
            vec![("c0".to_string(), 3), ("c1".to_string(), 3)],
            "poll {poll}"
        );
        let voters: BTreeSet<String> = redis::cmd("HKEYS")
            .arg(format!("{poll}:voted"))
            .query(&mut c)
            .unwrap();
        assert_eq!(voters, users, "poll {poll}");
        let rank = &boards[i];
        for u in &users {
            let got: Vec<i64> = redis::cmd("RANK.GET")
                .arg(rank)
                .arg(u)
                .query(&mut c)
                .unwrap();
            assert_eq!(got[0], i as i64 + 1, "board {rank} member {u}");
        }
    }
    // No key outside the entities' own names was written.
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
    keys.retain(|k| {
        !packets
            .iter()
            .chain(&bags)
            .chain(&polls)
            .chain(&boards)
            .any(|b| k == b || k.starts_with(&format!("{b}:")))
    });
    assert!(keys.is_empty(), "stray keys: {keys:?}");
}
