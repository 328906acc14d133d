//! `IDEM token` through the Lua twins (lua-compat/src/idem_token.lua),
//! against the module, both ways (EVALSHA scripts and the Functions
//! library): on RATE.CHECK, RATE.MULTI, RANK.INCR, STOCK.RESERVE,
//! REDPACKET.SPLIT, REDPACKET.GRAB, DELAYQ.ADD and LIKE.TOGGLE, the same
//! reply on the first call, the same replay, the same mismatch error, the
//! same stored record (digest and reply bytes; the expiry is each side's
//! clock), and a token stored by the module replays through the twin and
//! the reverse, with nothing written by the replay.

use crate::common::*;

use redis::Connection;

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// One write with a token: its setup (module commands on the key, `K`
/// standing for it), the arguments of the first call and of a call that
/// reuses the token with other arguments.
struct Case {
    cmd: &'static str,
    key: &'static str,
    /// Extra keys (RATE.MULTI) after the first.
    more: &'static [&'static str],
    setup: Vec<Vec<String>>,
    first: Vec<String>,
    other: Vec<String>,
}

fn v(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

fn cases(t: i64) -> Vec<Case> {
    let now = t.to_string();
    let n = now.as_str();
    vec![
        Case {
            cmd: "RATE.CHECK",
            key: "rc",
            more: &[],
            setup: vec![],
            first: v(&["5", "10000", "NOW", n]),
            other: v(&["6", "10000", "NOW", n]),
        },
        Case {
            cmd: "RATE.MULTI",
            key: "rm",
            more: &["rm2"],
            setup: vec![],
            first: v(&["LIMITS", "5", "10000", "20", "10000", "NOW", n]),
            other: v(&["LIMITS", "5", "10000", "20", "10000", "COST", "2", "NOW", n]),
        },
        Case {
            cmd: "RANK.INCR",
            key: "ri",
            more: &[],
            setup: vec![v(&["RANK.CREATE", "K", "NOW", n])],
            first: v(&["alice", "7", "NOW", n]),
            other: v(&["alice", "8", "NOW", n]),
        },
        Case {
            cmd: "STOCK.RESERVE",
            key: "sr",
            more: &[],
            setup: vec![v(&["STOCK.CREATE", "K", "10", "NOW", n])],
            first: v(&["u1", "o1", "2", "NOW", n]),
            other: v(&["u1", "o1", "3", "NOW", n]),
        },
        Case {
            cmd: "REDPACKET.SPLIT",
            key: "rs",
            more: &[],
            setup: vec![],
            first: v(&["1000", "4", "MODE", "EQUAL", "NOW", n]),
            other: v(&["1000", "5", "MODE", "EQUAL", "NOW", n]),
        },
        Case {
            cmd: "REDPACKET.GRAB",
            key: "rg",
            more: &[],
            setup: vec![v(&[
                "REDPACKET.SPLIT",
                "K",
                "1000",
                "10",
                "MODE",
                "EQUAL",
                "NOW",
                n,
            ])],
            first: v(&["u1", "NOW", n]),
            other: v(&["u2", "NOW", n]),
        },
        Case {
            cmd: "DELAYQ.ADD",
            key: "da",
            more: &[],
            setup: vec![],
            first: v(&["j1", "payload", "DELAY", "60000", "NOW", n]),
            other: v(&["j1", "other", "DELAY", "60000", "NOW", n]),
        },
    ]
}

/// `args` with `IDEM token` last.
fn with(args: &[String], token: &str) -> Vec<String> {
    let mut a = args.to_vec();
    a.push("IDEM".into());
    a.push(token.into());
    a
}

/// Runs `cmd` through the module on the given keys.
fn module(c: &mut Connection, cmd: &str, keys: &[String], rest: &[String]) -> String {
    let mut a: Vec<&str> = vec![cmd];
    let n = keys.len().to_string();
    if cmd == "RATE.MULTI" {
        a.push(&n);
    }
    a.extend(keys.iter().map(String::as_str));
    a.extend(rest.iter().map(String::as_str));
    run(c, &a)
}

/// Runs `cmd`'s twin on the given keys.
fn twin(c: &mut Connection, tw: &Twins, cmd: &str, keys: &[String], rest: &[String]) -> String {
    let mut a: Vec<&str> = keys.iter().map(String::as_str).collect();
    a.extend(rest.iter().map(String::as_str));
    show(&tw.call_keys(c, cmd, keys.len(), &a))
}

/// The stored record of `token` in `store` without its expiry (the first
/// 6 bytes): digest (5 bytes) and reply.
fn record(c: &mut Connection, store: &str, token: &str) -> Vec<u8> {
    let v: Vec<u8> = redis::cmd("HGET").arg(store).arg(token).query(c).unwrap();
    assert!(v.len() > 11, "{store} {token}: {v:?}");
    v[6..].to_vec()
}

/// The data of both sides but the token stores (binary: read apart), as
/// `dump_keys` shows it, the module's keys named as the twin's.
fn data(c: &mut Connection) -> (Vec<String>, Vec<String>) {
    let mut side = |p: &str| -> Vec<String> {
        let mut keys: Vec<String> = redis::cmd("KEYS").arg(p).query(c).unwrap();
        keys.retain(|k| !k.ends_with(":idem"));
        keys.sort();
        keys.iter()
            .flat_map(|k| dump_keys(c, k))
            .map(|l| format!("l{}", &l[1..]))
            .collect()
    };
    (side("m{*"), side("l{*"))
}

/// Runs `cmd` through the module on `mk` and through its twin on `lk`;
/// asserts the same reply (the module's keys read as the twin's).
fn both(
    c: &mut Connection,
    tw: &Twins,
    what: &str,
    cmd: &str,
    (mk, lk): (&[String], &[String]),
    rest: &[String],
) -> String {
    let m = module(c, cmd, mk, rest).replace("m{", "l{");
    let l = twin(c, tw, cmd, lk, rest);
    assert_eq!(m, l, "{what}: {cmd} {rest:?}");
    m
}

fn check(c: &mut Connection, tw: &Twins, case: &Case) {
    let cmd = case.cmd;
    let keys: Vec<&str> = std::iter::once(case.key)
        .chain(case.more.iter().copied())
        .collect();
    let (mk, lk): (Vec<String>, Vec<String>) = keys
        .iter()
        .map(|k| (format!("m{{{k}}}"), format!("l{{{k}}}")))
        .unzip();
    for k in mk.iter().chain(&lk) {
        for s in &case.setup {
            let s: Vec<&str> = s
                .iter()
                .map(|a| if a == "K" { k.as_str() } else { a.as_str() })
                .collect();
            let r = run(c, &s);
            assert!(!r.starts_with("ERR"), "setup {s:?}: {r}");
        }
    }
    let first = with(&case.first, "t1");
    let a = both(c, tw, "first", cmd, (&mk, &lk), &first);
    assert!(!a.starts_with("ERR"), "{cmd}: {a}");
    let b = both(c, tw, "replay", cmd, (&mk, &lk), &first);
    assert_eq!(a, b, "{cmd}: the replay answers the first reply");
    let other = with(&case.other, "t1");
    let e = both(c, tw, "mismatch", cmd, (&mk, &lk), &other);
    assert!(
        e.contains("IDEM token reused with other arguments"),
        "{cmd}: {e}"
    );
    // The records are the module's, byte for byte (the expiry aside;
    // RATE.MULTI digests its other keys, named apart here: its records
    // meet in the test across below).
    let ms = format!("{}:idem", mk[0]);
    let ls = format!("{}:idem", lk[0]);
    if case.more.is_empty() {
        assert_eq!(record(c, &ms, "t1"), record(c, &ls, "t1"), "{cmd}: records");
    }
    let (m, l) = data(c);
    assert_eq!(m, l, "{cmd}: data after first, replay, mismatch");

    // Across: stored by the module, retried through the twin; and the
    // reverse. The retry writes nothing.
    let second = with(&case.first, "t2");
    let m1 = module(c, cmd, &mk, &second);
    let before = data(c);
    let m2 = twin(c, tw, cmd, &mk, &second);
    assert_eq!(m1, m2, "{cmd}: the module's token replayed by the twin");
    assert_eq!(before, data(c), "{cmd}: the twin's replay wrote nothing");
    let l1 = twin(c, tw, cmd, &lk, &second);
    let before = data(c);
    let l2 = module(c, cmd, &lk, &second);
    assert_eq!(l1, l2, "{cmd}: the twin's token replayed by the module");
    assert_eq!(before, data(c), "{cmd}: the module's replay wrote nothing");
    // One record, read by both: byte for byte (the expiry aside).
    if case.more.is_empty() {
        let mr = record(c, &ms, "t2");
        assert_eq!(mr, record(c, &ls, "t2"), "{cmd}: the same record");
    }
    assert_eq!(m1.replace("m{", "l{"), l1, "{cmd}: the second calls agree");
    // Both twins' and module's mismatch refusals on the other side's record.
    let other2 = with(&case.other, "t2");
    let e1 = twin(c, tw, cmd, &mk, &other2);
    let e2 = module(c, cmd, &lk, &other2);
    assert_eq!(e1, e2, "{cmd}: mismatch across");
    assert!(e1.contains("IDEM token reused"), "{cmd}: {e1}");
    let (m, l) = data(c);
    assert_eq!(m, l, "{cmd}: data at the end");
}

#[test]
fn twins_take_idem_tokens_like_the_module() {
    let s = Server::start();
    let mut c = s.conn();
    for via in [Via::Script, Via::Function] {
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        let t = now_ms();
        for case in cases(t) {
            let family = case.cmd.split('.').next().unwrap().to_ascii_lowercase();
            let tw = Twins::of(&mut c, via, &family);
            check(&mut c, &tw, &case);
        }
    }
}

/// The option's edge rules, the same through the twin: a positional
/// argument named IDEM is not the option, IDEM before a final NOW is, a
/// bad token is refused without a record, an expired record is absent.
#[test]
fn twins_strip_and_refuse_like_the_module() {
    let s = Server::start();
    let mut c = s.conn();
    for via in [Via::Script, Via::Function] {
        let _: () = redis::cmd("FLUSHALL").query(&mut c).unwrap();
        let t = now_ms().to_string();
        let rate = Twins::of(&mut c, via, "rate");
        let poll = Twins::of(&mut c, via, "poll");
        let like = {
            let mut l = Twins::of(&mut c, via, "like");
            l.set_argv(&["2000", "8", "3"]);
            l
        };
        // IDEM before a final NOW.
        let a = rate.assert_both(
            &mut c,
            "before NOW",
            "RATE.CHECK",
            &["k"],
            &["3", "10000", "IDEM", "x", "NOW", &t],
        );
        let b = rate.assert_both(
            &mut c,
            "before NOW, replay",
            "RATE.CHECK",
            &["k"],
            &["3", "10000", "IDEM", "x", "NOW", &t],
        );
        assert_eq!(a, b);
        // Token too long, empty: refused, nothing stored.
        let long = "x".repeat(41);
        for tok in [long.as_str(), ""] {
            let e = rate.assert_both(
                &mut c,
                "bad token",
                "RATE.CHECK",
                &["k2"],
                &["3", "10000", "IDEM", tok],
            );
            assert!(e.contains("IDEM token must be 1 to 40 bytes"), "{e}");
        }
        let n: i64 = redis::cmd("EXISTS")
            .arg("m{k2}:idem")
            .arg("l{k2}:idem")
            .query(&mut c)
            .unwrap();
        assert_eq!(n, 0);
        // POLL.VOTE p IDEM u: a vote for the candidate IDEM.
        for k in ["m{p}", "l{p}"] {
            run(
                &mut c,
                &["POLL.CREATE", k, "CANDIDATES", "2", "IDEM", "x", "NOW", &t],
            );
        }
        let v = poll.assert_both(
            &mut c,
            "positional IDEM",
            "POLL.VOTE",
            &["p"],
            &["u1", "IDEM"],
        );
        assert_eq!(v, "1");
        let v = poll.assert_both(
            &mut c,
            "vote with a token",
            "POLL.VOTE",
            &["p"],
            &["u2", "IDEM", "IDEM", "IDEM"],
        );
        assert_eq!(v, "1");
        let v = poll.assert_both(
            &mut c,
            "vote replay",
            "POLL.VOTE",
            &["p"],
            &["u2", "IDEM", "IDEM", "IDEM"],
        );
        assert_eq!(v, "1");
        // LIKE's twins take the configs first: not part of the digest.
        let a = like.assert_both(
            &mut c,
            "like",
            "LIKE.TOGGLE",
            &["post"],
            &["7", "IDEM", "l1"],
        );
        let b = like.assert_both(
            &mut c,
            "like",
            "LIKE.TOGGLE",
            &["post"],
            &["7", "IDEM", "l1"],
        );
        assert_eq!(a, b);
        assert_eq!(
            record(&mut c, "m{post}:idem", "l1"),
            record(&mut c, "l{post}:idem", "l1")
        );
        // A record expired (by hand) is absent: the call runs again.
        for k in ["m{post}:idem", "l{post}:idem"] {
            let mut rec: Vec<u8> = redis::cmd("HGET").arg(k).arg("l1").query(&mut c).unwrap();
            rec[..6].copy_from_slice(&1i64.to_le_bytes()[..6]);
            let _: () = redis::cmd("HSET")
                .arg(k)
                .arg("l1")
                .arg(rec)
                .query(&mut c)
                .unwrap();
        }
        let c2 = like.assert_both(
            &mut c,
            "like",
            "LIKE.TOGGLE",
            &["post"],
            &["7", "IDEM", "l1"],
        );
        assert_ne!(a, c2, "an expired token runs the command again");
        // A damaged record: the same corrupt-data error.
        for k in ["m{post}:idem", "l{post}:idem"] {
            let _: () = redis::cmd("HSET")
                .arg(k)
                .arg("l1")
                .arg("short")
                .query(&mut c)
                .unwrap();
        }
        let e = like.assert_both(
            &mut c,
            "like",
            "LIKE.TOGGLE",
            &["post"],
            &["7", "IDEM", "l1"],
        );
        assert!(e.contains("corrupt data in 'l{post}:idem'"), "{e}");
        // Records whose tree is cut or unknown, behind a live header: the
        // same corrupt-data error (the twins read a tag and its varint's
        // first byte at once).
        let mut head = (now_ms() + 3_600_000).to_le_bytes()[..6].to_vec();
        head.extend_from_slice(b"12345");
        for (i, tail) in [
            &b"b\x85"[..],
            b"b\x85\x01ab",
            b"b\x05ab",
            b"r\x02b\x01ai\x02",
            b"a\x01",
            b"i",
            b"x\x00",
            b"b\x01ai\x02",
        ]
        .iter()
        .enumerate()
        {
            let tok = format!("bad{i}");
            let mut rec = head.clone();
            rec.extend_from_slice(tail);
            for k in ["m{post}:idem", "l{post}:idem"] {
                let _: () = redis::cmd("HSET")
                    .arg(k)
                    .arg(&tok)
                    .arg(&rec)
                    .query(&mut c)
                    .unwrap();
            }
            let e = like.assert_both(
                &mut c,
                "like, bad tree",
                "LIKE.TOGGLE",
                &["post"],
                &["7", "IDEM", &tok],
            );
            assert!(
                e.contains("corrupt data in 'l{post}:idem'"),
                "{tail:?}: {e}"
            );
        }
        // A store that is not a Hash: WRONGTYPE, nothing written.
        for k in ["m{w}:idem", "l{w}:idem"] {
            let _: () = redis::cmd("SET").arg(k).arg("x").query(&mut c).unwrap();
        }
        let e = rate.assert_both(
            &mut c,
            "store not a hash",
            "RATE.CHECK",
            &["w"],
            &["3", "10000", "IDEM", "t"],
        );
        assert!(e.contains("WRONGTYPE Operation"), "{e}");
        let n: i64 = redis::cmd("EXISTS")
            .arg("m{w}")
            .arg("l{w}")
            .query(&mut c)
            .unwrap();
        assert_eq!(n, 0);
    }
}
