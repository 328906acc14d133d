//! The module as a whole: loading, configs, command metadata, INFO,
//! access control.

use crate::common;

use common::*;

#[test]
fn loads_and_registers_commands_with_flags_and_key_positions() {
    let srv = Server::start();
    let mut c = srv.conn();
    let list: Vec<String> = redis::cmd("COMMAND")
        .arg("LIST")
        .arg("FILTERBY")
        .arg("MODULE")
        .arg("hotpath")
        .query(&mut c)
        .unwrap();
    assert!(list.iter().any(|n| n == "poll.vote"), "{list:?}");
    for name in &list {
        let info = run(&mut c, &["COMMAND", "INFO", name]);
        let write = info.contains("write");
        let readonly = info.contains("readonly");
        assert!(
            write ^ readonly,
            "{name} must be exactly one of write/readonly: {info}"
        );
        // Every write may be refused under maxmemory, but those that only
        // free memory (tests/oom.rs checks that set, and that they free).
        if write {
            assert_eq!(
                info.contains("denyoom"),
                !crate::oom::FREEING.contains(&name.as_str()),
                "{name}: {info}"
            );
        }
        let docs = run(&mut c, &["COMMAND", "DOCS", name]);
        assert!(docs.contains("summary"), "{name}: {docs}");
    }
    assert_eq!(
        run(
            &mut c,
            &["COMMAND", "GETKEYS", "POLL.VOTE", "poll:{1}", "u", "c"]
        ),
        "[poll:{1}]"
    );
}

#[test]
fn configs_are_set_at_load_and_at_run_time_with_range_checks() {
    let srv = Server::start_full(&[], &["like-recent", "5", "redpacket-max-count", "50"]);
    let mut c = srv.conn();
    assert_eq!(
        run(&mut c, &["CONFIG", "GET", "hotpath.like-recent"]),
        "[hotpath.like-recent, 5]"
    );
    assert_eq!(
        run(&mut c, &["CONFIG", "GET", "hotpath.redpacket-max-count"]),
        "[hotpath.redpacket-max-count, 50]"
    );
    assert_eq!(
        run(&mut c, &["CONFIG", "SET", "hotpath.like-recent", "7"]),
        "OK"
    );
    assert_eq!(
        run(&mut c, &["CONFIG", "GET", "hotpath.like-recent"]),
        "[hotpath.like-recent, 7]"
    );
    assert!(cmd(&mut c, &["CONFIG", "SET", "hotpath.like-recent", "-1"]).is_err());
    assert!(cmd(&mut c, &["CONFIG", "SET", "hotpath.like-max-id", "x"]).is_err());
    assert_eq!(
        run(&mut c, &["CONFIG", "GET", "hotpath.like-max-id"]),
        "[hotpath.like-max-id, 4294967295]"
    );
}

#[test]
fn info_has_a_hotpath_section() {
    let srv = Server::start();
    let mut c = srv.conn();
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    assert!(info.contains("# hotpath_stats"), "{info}");
    assert!(info.contains("poll_votes:0"), "{info}");
}

#[test]
fn acl_can_deny_commands_by_name_and_by_category_per_server_version() {
    let srv = Server::start();
    let mut c = srv.conn();
    // Works on every server: deny module writes by name.
    run(
        &mut c,
        &[
            "ACL",
            "SETUSER",
            "viewer",
            "on",
            "nopass",
            "~*",
            "+@all",
            "-poll.vote",
            "-poll.create",
        ],
    );
    let mut v = srv.conn();
    run(&mut v, &["AUTH", "viewer", "x"]);
    let e = err(&mut v, &["POLL.VOTE", "p", "u", "a"]);
    assert!(e.starts_with("NOPERM"), "{e}");
    assert_eq!(run(&mut v, &["POLL.TOP", "p"]), "[]");
    // The ACL categories of module commands depend on the server's module
    // API: Redis 7.0 has none (module commands are in no category), Redis
    // 7.2 can put them in the server's own categories but not add one,
    // Redis 7.4+ and Valkey 8+ can add `hotpath` too (docs/operations.md,
    // access control).
    let server = server_version(&mut c);
    let categories = server.is_valkey() || server.redis_at_least(7, 2);
    let hotpath_category = server.is_valkey() || server.redis_at_least(7, 4);
    run(
        &mut c,
        &[
            "ACL", "SETUSER", "ro", "on", "nopass", "~*", "+@all", "-@write",
        ],
    );
    let mut r = srv.conn();
    run(&mut r, &["AUTH", "ro", "x"]);
    assert_eq!(run(&mut r, &["POLL.TOP", "p"]), "[]");
    if !categories {
        // Redis 7.0: -@write does not cover POLL.VOTE (hence the by-name
        // recipe): the command runs (and finds no poll).
        if let Err(e) = cmd(&mut r, &["POLL.VOTE", "p", "u", "a"]) {
            let e = error_text(&e);
            assert!(!e.starts_with("NOPERM"), "{server:?}: {e}");
        }
        assert!(cmd(&mut c, &["ACL", "CAT", "hotpath"]).is_err());
        return;
    }
    let e = err(&mut r, &["POLL.VOTE", "p", "u", "a"]);
    assert!(e.starts_with("NOPERM"), "{server:?}: {e}");
    assert_eq!(
        cmd(&mut c, &["ACL", "CAT", "hotpath"]).is_ok(),
        hotpath_category,
        "{server:?}"
    );
    if hotpath_category {
        // `ACL CAT hotpath` lists module commands on Redis 8 (7.9.x
        // milestones) and Valkey 9; Redis 7.4 and Valkey 8.0 skip every
        // module command there (the COMMAND INFO check below covers them).
        let cat = run(&mut c, &["ACL", "CAT", "hotpath"]);
        if server.redis_at_least(7, 9) || server.valkey_at_least(9, 0) {
            assert!(cat.contains("poll.vote"), "{server:?}: {cat}");
        }
        // +@hotpath -@write: hotpath reads only.
        run(
            &mut c,
            &[
                "ACL",
                "SETUSER",
                "hr",
                "on",
                "nopass",
                "~*",
                "+@hotpath",
                "-@write",
            ],
        );
        let mut h = srv.conn();
        run(&mut h, &["AUTH", "hr", "x"]);
        assert_eq!(run(&mut h, &["POLL.TOP", "p"]), "[]");
        assert!(err(&mut h, &["POLL.VOTE", "p", "u", "a"]).starts_with("NOPERM"));
        assert!(err(&mut h, &["GET", "p"]).starts_with("NOPERM"));
    }
    // Every module command is in @hotpath (where it exists) and in exactly
    // one of @read / @write, matching its flags.
    let names: Vec<String> = redis::cmd("COMMAND")
        .arg("LIST")
        .arg("FILTERBY")
        .arg("MODULE")
        .arg("hotpath")
        .query(&mut c)
        .unwrap();
    for name in &names {
        let info = run(&mut c, &["COMMAND", "INFO", name]);
        assert_eq!(
            info.contains("@hotpath"),
            hotpath_category,
            "{name}: {info}"
        );
        let (r, w) = (info.contains("@read"), info.contains("@write"));
        assert!(r ^ w, "{name}: {info}");
        assert_eq!(
            w,
            info.contains(", write,") || info.contains("[write,"),
            "{name}: {info}"
        );
    }
}

/// Runs `WATCH keys`, then `cmd` on the same connection, then an empty
/// `MULTI`/`EXEC`; returns true when the transaction ran, i.e. when `cmd`
/// did not signal any watched key as modified.
fn exec_survives(c: &mut Connection, keys: &[&str], cmd: &[&str]) -> bool {
    let mut w = redis::cmd("WATCH");
    for k in keys {
        w.arg(*k);
    }
    w.query::<()>(c).unwrap();
    let _ = common::cmd(c, cmd);
    redis::cmd("MULTI").query::<()>(c).unwrap();
    redis::cmd("PING").query::<()>(c).unwrap();
    let v: Value = redis::cmd("EXEC").query(c).unwrap();
    !matches!(v, Value::Nil)
}

#[test]
fn watch_is_broken_by_writes_only_not_by_refusals() {
    let srv = Server::start();
    let mut c = srv.conn();
    // POLL: a refused duplicate vote leaves the ballot box and the board
    // alone; a real vote touches them.
    let poll = ["p:voted", "p:board", "p:meta"];
    assert!(!exec_survives(
        &mut c,
        &poll,
        &["POLL.VOTE", "p", "u1", "a"]
    ));
    assert!(exec_survives(&mut c, &poll, &["POLL.VOTE", "p", "u1", "b"]));
    assert!(!exec_survives(
        &mut c,
        &poll,
        &["POLL.VOTE", "p", "u2", "b"]
    ));
    // LIKE: a repeated like changes nothing.
    let like = ["l:set", "l:count", "l:recent", "l:bits"];
    assert!(!exec_survives(&mut c, &like, &["LIKE.ADD", "l", "5"]));
    assert!(exec_survives(&mut c, &like, &["LIKE.ADD", "l", "5"]));
    assert!(exec_survives(&mut c, &like, &["LIKE.REM", "l", "6"]));
    assert!(!exec_survives(&mut c, &like, &["LIKE.TOGGLE", "l", "5"]));
    // RATE: a denied request consumes nothing and writes nothing.
    let rate = ["r"];
    assert!(!exec_survives(
        &mut c,
        &rate,
        &["RATE.CHECK", "r", "1", "60000"]
    ));
    assert!(exec_survives(
        &mut c,
        &rate,
        &["RATE.CHECK", "r", "1", "60000"]
    ));
    assert!(exec_survives(
        &mut c,
        &rate,
        &["RATE.CHECK", "r", "1", "60000", "PEEK"]
    ));
    // RANK: GT that keeps the better score writes nothing.
    let rank = ["k", "k:meta"];
    assert!(!exec_survives(
        &mut c,
        &rank,
        &["RANK.ADD", "k", "m", "10", "GT"]
    ));
    assert!(exec_survives(
        &mut c,
        &rank,
        &["RANK.ADD", "k", "m", "5", "GT"]
    ));
    assert!(!exec_survives(
        &mut c,
        &rank,
        &["RANK.ADD", "k", "m", "11", "GT"]
    ));
    // REDPACKET: a second grab by the same user is ALREADY, not a write.
    run(&mut c, &["REDPACKET.SPLIT", "h", "100", "3"]);
    let packet = ["h:pool", "h:grabbed", "h:meta"];
    assert!(!exec_survives(
        &mut c,
        &packet,
        &["REDPACKET.GRAB", "h", "u1"]
    ));
    assert!(exec_survives(
        &mut c,
        &packet,
        &["REDPACKET.GRAB", "h", "u1"]
    ));
    // LOCK: a busy acquisition and a release by a non-owner write nothing.
    assert!(!exec_survives(
        &mut c,
        &["lk"],
        &["LOCK.ACQUIRE", "lk", "a", "60000"]
    ));
    assert!(exec_survives(
        &mut c,
        &["lk"],
        &["LOCK.ACQUIRE", "lk", "b", "60000"]
    ));
    assert!(exec_survives(&mut c, &["lk"], &["LOCK.RELEASE", "lk", "b"]));
    // DELAYQ: a repeated add, an empty poll and a stale ack write nothing.
    let queue = ["dq:jobs", "dq:due", "dq:dead", "dq:seq"];
    assert!(!exec_survives(
        &mut c,
        &queue,
        &["DELAYQ.ADD", "dq", "j", "p", "DELAY", "60000"]
    ));
    assert!(exec_survives(
        &mut c,
        &queue,
        &["DELAYQ.ADD", "dq", "j", "p"]
    ));
    assert!(exec_survives(
        &mut c,
        &queue,
        &["DELAYQ.POLL", "dq", "1000"]
    ));
    assert!(exec_survives(
        &mut c,
        &queue,
        &["DELAYQ.ACK", "dq", "j", "9"]
    ));
}
