//! `IDEM token` on the spread form of every family write that takes one
//! (docs/reference: LIKE.TOGGLE, RANK.ADD/INCR/DECR, POLL.VOTE/REVOKE,
//! LUCKYBAG.JOIN, STOCK.RESERVE/RESTOCK with `SPREAD n`): a retry replays
//! the first reply, a reuse with other arguments is refused with the
//! family's error, neither writes anything (`DEBUG DIGEST`), and the token
//! lives in the shard key's `:idem` (the slot of the shard that took the
//! write, no other store). Through the module, and through the twins
//! (EVALSHA scripts and the Functions library), which must give the same
//! replies, the same data and the same records; a token stored by one
//! side replays through the other.

use crate::common::*;

use hotpath_client::routing;
use redis::Connection;

/// The shard count of every entity here.
const N: u32 = 3;
/// A NOW far ahead (2030-01-01), so that explicit instants stay valid.
const T0: i64 = 1_893_456_000_000;

fn shard_keys(base: &str) -> Vec<String> {
    routing::shard_keys(base.as_bytes(), N)
        .into_iter()
        .map(|k| String::from_utf8(k).unwrap())
        .collect()
}

/// The first id `<prefix><i>` that belongs to shard `shard`.
fn id_of_shard(prefix: &str, shard: u32) -> String {
    (0..1000)
        .map(|i| format!("{prefix}{i}"))
        .find(|id| routing::shard_of(id.as_bytes(), N) == shard)
        .unwrap()
}

/// One spread write with a token: the command, the shard key it goes to,
/// the arguments after the key of the first call and of a call that
/// reuses the token with other arguments (both end `SPREAD n IDEM tok`).
struct Write {
    cmd: &'static str,
    key: String,
    first: Vec<String>,
    other: Vec<String>,
}

fn v(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// The entities (every shard created) and the writes, in order.
fn plan() -> (Vec<Vec<String>>, Vec<Write>) {
    let t = T0.to_string();
    let n = N.to_string();
    let tail = |a: &[&str], tok: &str| {
        let mut a = v(a);
        a.extend(v(&["SPREAD", &n, "IDEM", tok]));
        a
    };
    let mut setup = Vec::new();
    let (like, rank, poll, bag, stock) = (
        shard_keys("sp:like"),
        shard_keys("sp:rank"),
        shard_keys("sp:poll"),
        shard_keys("sp:bag"),
        shard_keys("sp:stock"),
    );
    for i in 0..N as usize {
        setup.push(v(&["LIKE.CREATE", &like[i], "SPREAD", &n]));
        setup.push(v(&["RANK.CREATE", &rank[i], "NOW", &t, "SPREAD", &n]));
        setup.push(v(&[
            "POLL.CREATE",
            &poll[i],
            "MODE",
            "MULTI",
            "MAXVOTES",
            "3",
            "CANDIDATES",
            "2",
            "a",
            "b",
            "NOW",
            &t,
            "SPREAD",
            &n,
        ]));
        setup.push(v(&[
            "LUCKYBAG.CREATE",
            &bag[i],
            "WINNERS",
            "2",
            "SEED",
            "00112233445566778899aabbccddeeff",
            "NOW",
            &t,
            "SPREAD",
            &n,
        ]));
        setup.push(v(&[
            "STOCK.CREATE",
            &stock[i],
            "10",
            "NOW",
            &t,
            "SPREAD",
            &n,
        ]));
    }
    // Users of shard 1 and 2 (a LIKE user id is an integer: id mod n).
    let (m1, m2) = (id_of_shard("m", 1), id_of_shard("m", 2));
    let (u1, u2) = (id_of_shard("u", 1), id_of_shard("u", 2));
    let s1 = |keys: &[String]| keys[1].clone();
    let s2 = |keys: &[String]| keys[2].clone();
    let writes = vec![
        Write {
            cmd: "LIKE.TOGGLE",
            key: s1(&like),
            first: tail(&["4", "NOW", &t], "lk"),
            // User 8 belongs to shard 2: the token is checked first.
            other: tail(&["8", "NOW", &t], "lk"),
        },
        Write {
            cmd: "LIKE.TOGGLE",
            key: s2(&like),
            first: tail(&["5", "NOW", &t], "lk"),
            other: tail(&["5"], "lk"),
        },
        Write {
            cmd: "RANK.ADD",
            key: s1(&rank),
            first: tail(&[&m1, "10", "NOW", &t], "ra"),
            other: tail(&[&m1, "11", "NOW", &t], "ra"),
        },
        Write {
            cmd: "RANK.INCR",
            key: s1(&rank),
            first: tail(&[&m1, "5", "NOW", &t], "ri"),
            other: tail(&[&m1, "6", "NOW", &t], "ri"),
        },
        Write {
            cmd: "RANK.DECR",
            key: s2(&rank),
            first: tail(&[&m2, "3", "NOW", &t], "rd"),
            other: tail(&[&m2, "4", "NOW", &t], "rd"),
        },
        Write {
            cmd: "POLL.VOTE",
            key: s1(&poll),
            first: tail(&[&u1, "a", "NOW", &t], "pv"),
            other: tail(&[&u1, "b", "NOW", &t], "pv"),
        },
        Write {
            cmd: "POLL.REVOKE",
            key: s1(&poll),
            first: tail(&[&u1, "a", "NOW", &t], "pr"),
            other: tail(&[&u1, "NOW", &t], "pr"),
        },
        Write {
            cmd: "LUCKYBAG.JOIN",
            key: s2(&bag),
            first: tail(&[&u2], "lj"),
            other: tail(&[&u2, "TASK", "PENDING"], "lj"),
        },
        Write {
            cmd: "STOCK.RESERVE",
            key: s1(&stock),
            first: tail(&[&u1, "o1", "2", "NOW", &t], "sv"),
            other: tail(&[&u1, "o1", "3", "NOW", &t], "sv"),
        },
        // A shard takes only RESTOCK 0 (it returns lapsed leases).
        Write {
            cmd: "STOCK.RESTOCK",
            key: s1(&stock),
            first: tail(&["0", "NOW", &t], "sr"),
            other: tail(&["0"], "sr"),
        },
    ];
    (setup, writes)
}

fn family(cmd: &str) -> String {
    cmd.split('.').next().unwrap().to_ascii_lowercase()
}

/// How a write runs: through the module, or through its family's twin.
enum Side<'a> {
    Module,
    Twins(&'a [(String, Twins)]),
}

fn exec(c: &mut Connection, side: &Side, cmd: &str, key: &str, rest: &[String]) -> String {
    match side {
        Side::Module => {
            let mut a = vec![cmd, key];
            a.extend(rest.iter().map(String::as_str));
            run(c, &a)
        }
        Side::Twins(tw) => {
            let f = family(cmd);
            let t = &tw.iter().find(|(g, _)| *g == f).unwrap().1;
            let mut a = vec![key];
            a.extend(rest.iter().map(String::as_str));
            show(&t.call_keys(c, cmd, 1, &a))
        }
    }
}

fn digest(c: &mut Connection) -> String {
    redis::cmd("DEBUG").arg("DIGEST").query(c).unwrap()
}

/// Every key but the token stores, as `dump_keys` shows it.
fn data(c: &mut Connection) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    keys.retain(|k| !k.ends_with(":idem"));
    keys.sort();
    keys.iter().flat_map(|k| dump_keys(c, k)).collect()
}

/// The record of `token` in `store` without its expiry (each side's clock).
fn record(c: &mut Connection, store: &str, token: &str) -> Vec<u8> {
    let v: Vec<u8> = redis::cmd("HGET").arg(store).arg(token).query(c).unwrap();
    assert!(v.len() > 11, "{store} {token}: {v:?}");
    v[6..].to_vec()
}

/// What one side did: the first replies, the data, the stored records.
#[derive(Debug, PartialEq)]
struct Outcome {
    replies: Vec<String>,
    data: Vec<String>,
    records: Vec<Vec<u8>>,
}

/// Creates the entities (through the module), runs every write with its
/// token on `side`, and checks the replay, the refusal and the store.
fn scenario(c: &mut Connection, side: &Side, what: &str) -> Outcome {
    let _: () = redis::cmd("FLUSHALL").query(c).unwrap();
    let (setup, writes) = plan();
    for s in &setup {
        let a: Vec<&str> = s.iter().map(String::as_str).collect();
        let r = run(c, &a);
        assert_eq!(r, "OK", "{s:?}");
    }
    let mut out = Outcome {
        replies: vec![],
        data: vec![],
        records: vec![],
    };
    let mut stores: Vec<String> = vec![];
    for w in &writes {
        let tok = w.first.last().unwrap();
        let first = exec(c, side, w.cmd, &w.key, &w.first);
        assert!(
            !first.starts_with("ERR"),
            "{what} {} {:?}: {first}",
            w.cmd,
            w.first
        );
        let d = digest(c);
        let again = exec(c, side, w.cmd, &w.key, &w.first);
        assert_eq!(again, first, "{what} {} {:?}: replayed", w.cmd, w.first);
        assert_eq!(digest(c), d, "{what} {}: the replay wrote nothing", w.cmd);
        let e = exec(c, side, w.cmd, &w.key, &w.other);
        let fam = family(w.cmd);
        assert!(
            e.contains(&format!(
                "ERR {fam}: IDEM token reused with other arguments"
            )),
            "{what} {} {:?}: {e}",
            w.cmd,
            w.other
        );
        assert_eq!(digest(c), d, "{what} {}: the refusal wrote nothing", w.cmd);
        // The token is in the shard key's store, in the shard's slot.
        let store = format!("{}:idem", w.key);
        let n: i64 = redis::cmd("HEXISTS").arg(&store).arg(tok).query(c).unwrap();
        assert_eq!(n, 1, "{what} {}: the token is in {store}", w.cmd);
        assert_eq!(
            routing::key_slot(store.as_bytes()),
            routing::key_slot(w.key.as_bytes()),
            "{store}"
        );
        out.replies.push(first);
        out.records.push(record(c, &store, tok));
        stores.push(store);
    }
    // No other store: not the base key's, not another shard's.
    stores.sort();
    stores.dedup();
    let mut found: Vec<String> = redis::cmd("KEYS").arg("*:idem").query(c).unwrap();
    found.sort();
    assert_eq!(found, stores, "{what}: the token stores");
    // The two LIKE writes carry the same token `lk` on shards 1 and 2:
    // each ran and is its own shard's record.
    out.data = data(c);
    out
}

/// Replays every write of the plan on `side` (after the other side
/// stored them): the stored replies, nothing written.
fn replay_across(c: &mut Connection, side: &Side, expect: &[String], what: &str) {
    let (_, writes) = plan();
    let d = digest(c);
    for (w, e) in writes.iter().zip(expect) {
        let r = exec(c, side, w.cmd, &w.key, &w.first);
        assert_eq!(&r, e, "{what} {} {:?}", w.cmd, w.first);
    }
    assert_eq!(digest(c), d, "{what}: the replays wrote nothing");
}

fn config(c: &mut Connection, name: &str) -> String {
    let v: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg(format!("hotpath.{name}"))
        .query(c)
        .unwrap();
    v[1].clone()
}

#[test]
fn spread_writes_with_a_token_replay_refuse_and_keep_it_with_the_shard() {
    let s = Server::start();
    let mut c = s.conn();
    let module = scenario(&mut c, &Side::Module, "module");
    assert_eq!(module.replies.len(), plan().1.len());
    let like_argv = [
        config(&mut c, "like-max-id"),
        config(&mut c, "like-promote-at"),
        config(&mut c, "like-recent"),
    ];
    for via in [Via::Script, Via::Function] {
        let twins: Vec<(String, Twins)> = ["like", "rank", "poll", "luckybag", "stock"]
            .iter()
            .map(|f| {
                let mut t = Twins::of(&mut c, via, f);
                if *f == "like" {
                    let a: Vec<&str> = like_argv.iter().map(String::as_str).collect();
                    t.set_argv(&a);
                }
                (f.to_string(), t)
            })
            .collect();
        let side = Side::Twins(&twins);
        let what = format!("{via:?}");
        // The module's tokens replay through the twins.
        let _ = scenario(&mut c, &Side::Module, "module again");
        replay_across(&mut c, &side, &module.replies, &format!("{what} across"));
        // The twins alone: the module's replies, data and records.
        let lua = scenario(&mut c, &side, &what);
        assert_eq!(lua, module, "{what}: the twins against the module");
        // And the twins' tokens replay through the module.
        replay_across(
            &mut c,
            &Side::Module,
            &module.replies,
            &format!("{what} back"),
        );
    }
}
