//! POLL on a real redis-server with the module loaded, through the `redis`
//! crate: every command and option, every error, concurrency, replication,
//! AOF and RDB.

use crate::common;

use common::*;

const T0: i64 = 1_735_689_600_000; // 2025-01-01T00:00:00Z

fn s(n: i64) -> String {
    n.to_string()
}

#[test]
fn once_counts_one_vote_per_user() {
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(int(&mut c, &["POLL.VOTE", "p", "u1", "alice"]), 1);
    assert_eq!(int(&mut c, &["POLL.VOTE", "p", "u1", "bob"]), 0);
    assert_eq!(int(&mut c, &["POLL.VOTE", "p", "u1", "alice"]), 0);
    assert_eq!(int(&mut c, &["POLL.VOTE", "p", "u2", "bob"]), 1);
    assert_eq!(int(&mut c, &["POLL.VOTE", "p", "u3", "bob"]), 1);
    assert_eq!(run(&mut c, &["POLL.TOP", "p"]), "[bob, 2, alice, 1]");
    // The ballot box is the audit trail: candidate and time per user.
    let v = run(&mut c, &["HGET", "p:voted", "u1"]);
    assert!(v.starts_with("alice:"), "{v}");
    assert_eq!(run(&mut c, &["ZSCORE", "p:board", "bob"]), "2");
    assert_eq!(run(&mut c, &["POLL.STATUS", "p", "u1"]), "[alice]");
    assert_eq!(run(&mut c, &["POLL.STATUS", "p", "nobody"]), "[]");
    assert_eq!(
        run(&mut c, &["POLL.INFO", "p"]),
        "[mode, ONCE, maxvotes, 1, start, 0, end, 0, ballots, 3, votes, 3]"
    );
}

#[test]
fn audit_record_holds_the_vote_time() {
    let srv = Server::start();
    let mut c = srv.conn();
    int(&mut c, &["POLL.VOTE", "p", "u1", "a:b", "NOW", &s(T0 + 5)]);
    assert_eq!(
        run(&mut c, &["HGET", "p:voted", "u1"]),
        format!("a:b:{}", T0 + 5)
    );
    assert_eq!(run(&mut c, &["POLL.STATUS", "p", "u1"]), "[a:b]");
}

#[test]
fn daily_allows_one_vote_per_calendar_day_in_the_poll_timezone() {
    let srv = Server::start();
    let mut c = srv.conn();
    // UTC+8: the local day starts at 16:00 UTC.
    assert_eq!(
        run(&mut c, &["POLL.CREATE", "d", "MODE", "DAILY", "TZ", "480"]),
        "OK"
    );
    let t = T0 + 10 * 3_600_000; // 2025-01-01 10:00Z = 18:00 local (Jan 1)
    assert_eq!(int(&mut c, &["POLL.VOTE", "d", "u", "x", "NOW", &s(t)]), 1);
    assert_eq!(
        int(
            &mut c,
            &["POLL.VOTE", "d", "u", "y", "NOW", &s(t + 3_600_000)]
        ),
        0
    );
    // 16:30Z is 00:30 on Jan 2 local: a new day.
    assert_eq!(
        int(
            &mut c,
            &[
                "POLL.VOTE",
                "d",
                "u",
                "y",
                "NOW",
                &s(T0 + 16 * 3_600_000 + 1_800_000)
            ]
        ),
        1
    );
    assert_eq!(
        run(&mut c, &["HGET", "d:voted", "u:20250101"]),
        format!("x:{t}")
    );
    assert!(run(&mut c, &["HGET", "d:voted", "u:20250102"]).starts_with("y:"));
    assert_eq!(run(&mut c, &["POLL.STATUS", "d", "u", "NOW", &s(t)]), "[x]");
    assert_eq!(
        run(
            &mut c,
            &["POLL.STATUS", "d", "u", "NOW", &s(T0 + 20 * 3_600_000)]
        ),
        "[y]"
    );
    assert_eq!(
        run(
            &mut c,
            &["POLL.STATUS", "d", "u", "NOW", &s(T0 + 72 * 3_600_000)]
        ),
        "[]"
    );
    // REVOKE takes back only the ballot of the day given by NOW.
    assert_eq!(int(&mut c, &["POLL.REVOKE", "d", "u", "NOW", &s(t)]), 1);
    assert_eq!(run(&mut c, &["POLL.TOP", "d"]), "[y, 1, x, 0]");
    assert_eq!(int(&mut c, &["POLL.REVOKE", "d", "u", "NOW", &s(t)]), 0);
    assert_eq!(run(&mut c, &["HEXISTS", "d:voted", "u:20250102"]), "1");
}

#[test]
fn multi_allows_distinct_candidates_up_to_maxvotes() {
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(
        run(
            &mut c,
            &["POLL.CREATE", "m", "MODE", "MULTI", "MAXVOTES", "2"]
        ),
        "OK"
    );
    assert_eq!(int(&mut c, &["POLL.VOTE", "m", "u", "a"]), 1);
    assert_eq!(int(&mut c, &["POLL.VOTE", "m", "u", "a"]), 0);
    assert_eq!(int(&mut c, &["POLL.VOTE", "m", "u", "b"]), 1);
    assert_eq!(
        err(&mut c, &["POLL.VOTE", "m", "u", "c"]),
        "ERR poll: vote limit reached"
    );
    // A duplicate at the limit is still a plain refusal, not an error.
    assert_eq!(int(&mut c, &["POLL.VOTE", "m", "u", "b"]), 0);
    assert_eq!(run(&mut c, &["POLL.STATUS", "m", "u"]), "[a, b]");
    assert_eq!(run(&mut c, &["HGET", "m:uservotes", "u"]), r#"["a","b"]"#);
    assert_eq!(run(&mut c, &["HEXISTS", "m:voted", "u:a"]), "1");
    // Revoking one candidate frees a slot.
    assert_eq!(int(&mut c, &["POLL.REVOKE", "m", "u", "a"]), 1);
    assert_eq!(int(&mut c, &["POLL.VOTE", "m", "u", "c"]), 1);
    assert_eq!(run(&mut c, &["POLL.STATUS", "m", "u"]), "[b, c]");
    assert_eq!(int(&mut c, &["POLL.REVOKE", "m", "u"]), 2);
    assert_eq!(run(&mut c, &["POLL.STATUS", "m", "u"]), "[]");
    assert_eq!(run(&mut c, &["HEXISTS", "m:uservotes", "u"]), "0");
    assert_eq!(run(&mut c, &["HLEN", "m:voted"]), "0");
    assert_eq!(
        run(&mut c, &["POLL.INFO", "m"]),
        "[mode, MULTI, maxvotes, 2, start, 0, end, 0, ballots, 0, votes, 0]"
    );
    // Users may hold ':' (user:1); MULTI candidates may not, so that the
    // dedup member `user:candidate` stays unambiguous.
    assert_eq!(int(&mut c, &["POLL.VOTE", "m", "user:1", "b"]), 1);
    assert_eq!(
        err(&mut c, &["POLL.VOTE", "m", "user:1", "x:y"]),
        "ERR poll: candidate must not contain ':' in MODE MULTI"
    );
    assert_eq!(
        err(
            &mut c,
            &[
                "POLL.CREATE",
                "mc",
                "MODE",
                "MULTI",
                "CANDIDATES",
                "1",
                "a:b"
            ]
        ),
        "ERR poll: candidate must not contain ':' in MODE MULTI"
    );
    // MULTI's default MAXVOTES is 3.
    run(&mut c, &["POLL.CREATE", "m3", "MODE", "multi"]);
    for cand in ["a", "b", "c"] {
        assert_eq!(int(&mut c, &["POLL.VOTE", "m3", "u", cand]), 1);
    }
    assert_eq!(
        err(&mut c, &["POLL.VOTE", "m3", "u", "d"]),
        "ERR poll: vote limit reached"
    );
}

#[test]
fn candidates_restrict_the_board_and_start_at_zero() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(
        &mut c,
        &["POLL.CREATE", "p", "CANDIDATES", "3", "x", "y", "z"],
    );
    assert_eq!(run(&mut c, &["POLL.TOP", "p"]), "[z, 0, y, 0, x, 0]");
    assert_eq!(
        err(&mut c, &["POLL.VOTE", "p", "u", "w"]),
        "ERR poll: unknown candidate"
    );
    assert_eq!(run(&mut c, &["EXISTS", "p:voted"]), "0");
    assert_eq!(int(&mut c, &["POLL.VOTE", "p", "u", "y"]), 1);
    assert_eq!(run(&mut c, &["POLL.RANK", "p", "y"]), "[0, 1]");
    assert_eq!(run(&mut c, &["POLL.RANK", "p", "x"]), "[2, 0]");
    assert_eq!(run(&mut c, &["POLL.RANK", "p", "w"]), "nil");
    assert_eq!(run(&mut c, &["POLL.RANK", "nosuch", "w"]), "nil");
}

#[test]
fn window_is_enforced() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(
        &mut c,
        &["POLL.CREATE", "p", "START", &s(T0), "END", &s(T0 + 1000)],
    );
    assert_eq!(
        err(&mut c, &["POLL.VOTE", "p", "u", "a", "NOW", &s(T0 - 1)]),
        "ERR poll: not open"
    );
    assert_eq!(int(&mut c, &["POLL.VOTE", "p", "u", "a", "NOW", &s(T0)]), 1);
    assert_eq!(
        int(&mut c, &["POLL.VOTE", "p", "v", "a", "NOW", &s(T0 + 999)]),
        1
    );
    assert_eq!(
        err(&mut c, &["POLL.VOTE", "p", "w", "a", "NOW", &s(T0 + 1000)]),
        "ERR poll: not open"
    );
    // Without NOW, the server clock (now, far after END) decides.
    assert_eq!(
        err(&mut c, &["POLL.VOTE", "p", "w", "a"]),
        "ERR poll: not open"
    );
    assert_eq!(
        run(&mut c, &["POLL.INFO", "p"]),
        format!(
            "[mode, ONCE, maxvotes, 1, start, {T0}, end, {}, ballots, 2, votes, 2]",
            T0 + 1000
        )
    );
}

#[test]
fn ttl_is_put_on_every_key_of_the_poll() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["POLL.CREATE", "p", "MODE", "MULTI", "TTL", "100"]);
    int(&mut c, &["POLL.VOTE", "p", "u", "a"]);
    run(&mut c, &["POLL.SYNC", "p"]);
    int(&mut c, &["POLL.SYNCACK", "p", "1"]);
    run(&mut c, &["POLL.SYNC", "p"]);
    for k in [
        "p:meta",
        "p:voted",
        "p:board",
        "p:uservotes",
        "p:synced",
        "p:syncing",
    ] {
        let ttl = int(&mut c, &["TTL", k]);
        assert!((95..=100).contains(&ttl), "{k}: ttl {ttl}");
    }
    // The expiry is absolute: a key created later expires with the others.
    let at = int(&mut c, &["PEXPIRETIME", "p:meta"]);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "p:uservotes"]), at);
    // Without TTL nothing expires.
    int(&mut c, &["POLL.VOTE", "q", "u", "a"]);
    assert_eq!(int(&mut c, &["TTL", "q:voted"]), -1);
}

#[test]
fn top_pages_with_count_and_offset() {
    let srv = Server::start();
    let mut c = srv.conn();
    for (i, cand) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        for u in 0..=i {
            int(&mut c, &["POLL.VOTE", "p", &format!("{cand}{u}"), cand]);
        }
    }
    assert_eq!(run(&mut c, &["POLL.TOP", "p", "2"]), "[e, 5, d, 4]");
    assert_eq!(
        run(&mut c, &["POLL.TOP", "p", "2", "OFFSET", "2"]),
        "[c, 3, b, 2]"
    );
    assert_eq!(run(&mut c, &["POLL.TOP", "p", "OFFSET", "4"]), "[a, 1]");
    assert_eq!(run(&mut c, &["POLL.TOP", "p", "0"]), "[]");
    assert_eq!(run(&mut c, &["POLL.TOP", "p", "10", "OFFSET", "9"]), "[]");
    assert_eq!(run(&mut c, &["POLL.TOP", "nosuch"]), "[]");
    // Defaults to 10.
    for i in 0..15 {
        int(
            &mut c,
            &["POLL.VOTE", "q", &format!("u{i}"), &format!("c{i:02}")],
        );
    }
    assert_eq!(run(&mut c, &["POLL.TOP", "q"]).matches(", 1").count(), 10);
}

#[test]
fn sync_freezes_deltas_until_acknowledged() {
    let srv = Server::start();
    let mut c = srv.conn();
    for (u, cand) in [("1", "a"), ("2", "a"), ("3", "b")] {
        int(&mut c, &["POLL.VOTE", "p", u, cand]);
    }
    assert_eq!(run(&mut c, &["POLL.SYNC", "p"]), "[1, a, 2, b, 1]");
    int(&mut c, &["POLL.VOTE", "p", "4", "b"]);
    // A retried SYNC (the writer crashed) returns the same frozen deltas.
    assert_eq!(run(&mut c, &["POLL.SYNC", "p"]), "[1, a, 2, b, 1]");
    assert_eq!(int(&mut c, &["POLL.SYNCACK", "p", "7"]), 0);
    assert_eq!(int(&mut c, &["POLL.SYNCACK", "p", "1"]), 1);
    assert_eq!(int(&mut c, &["POLL.SYNCACK", "p", "1"]), 0);
    // The vote cast between SYNC and SYNCACK is not lost.
    assert_eq!(run(&mut c, &["POLL.SYNC", "p"]), "[2, b, 1]");
    int(&mut c, &["POLL.REVOKE", "p", "1"]);
    assert_eq!(int(&mut c, &["POLL.SYNCACK", "p", "2"]), 1);
    assert_eq!(run(&mut c, &["POLL.SYNC", "p"]), "[3, a, -1]");
    int(&mut c, &["POLL.SYNCACK", "p", "3"]);
    // Nothing changed: a new epoch with no deltas.
    assert_eq!(run(&mut c, &["POLL.SYNC", "p"]), "[4]");
    assert_eq!(
        run(&mut c, &["ZRANGE", "p:synced", "0", "-1", "WITHSCORES"]),
        "[a, 1, b, 2]"
    );
}

#[test]
fn create_refuses_an_existing_poll_and_bad_rules() {
    let srv = Server::start();
    let mut c = srv.conn();
    assert_eq!(run(&mut c, &["POLL.CREATE", "p"]), "OK");
    assert_eq!(
        err(&mut c, &["POLL.CREATE", "p"]),
        "ERR poll: poll already exists"
    );
    int(&mut c, &["POLL.VOTE", "used", "u", "a"]);
    assert_eq!(
        err(&mut c, &["POLL.CREATE", "used", "MODE", "MULTI"]),
        "ERR poll: poll already exists"
    );
    let cases: &[(&[&str], &str)] = &[
        (&["POLL.CREATE", "n", "MODE"], "ERR syntax error"),
        (
            &["POLL.CREATE", "n", "MODE", "SOMETIMES"],
            "ERR syntax error",
        ),
        (&["POLL.CREATE", "n", "COLOR", "red"], "ERR syntax error"),
        (
            &["POLL.CREATE", "n", "MAXVOTES", "2"],
            "ERR poll: MAXVOTES needs MODE MULTI",
        ),
        (
            &["POLL.CREATE", "n", "MODE", "MULTI", "MAXVOTES", "0"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["POLL.CREATE", "n", "MODE", "MULTI", "MAXVOTES", "x"],
            "ERR value is not an integer or out of range",
        ),
        (
            &[
                "POLL.CREATE",
                "n",
                "MODE",
                "MULTI",
                "MAXVOTES",
                "99999999999999999999",
            ],
            "ERR value is not an integer or out of range",
        ),
        (
            &["POLL.CREATE", "n", "CANDIDATES", "3", "a", "b"],
            "ERR syntax error",
        ),
        (
            &["POLL.CREATE", "n", "CANDIDATES", "0"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["POLL.CREATE", "n", "CANDIDATES", "1", ""],
            "ERR poll: candidate must not be empty",
        ),
        (
            &["POLL.CREATE", "n", "START", "-1"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["POLL.CREATE", "n", "START", "10", "END", "10"],
            "ERR poll: START must be before END",
        ),
        (
            &["POLL.CREATE", "n", "TZ", "1441"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["POLL.CREATE", "n", "TTL", "0"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["POLL.CREATE", "n", "TTL", "1.5"],
            "ERR value is not an integer or out of range",
        ),
        (&["POLL.CREATE", "n", "END"], "ERR syntax error"),
        (
            &["POLL.CREATE"],
            "ERR wrong number of arguments for 'poll.create' command",
        ),
    ];
    for (args, want) in cases {
        assert_eq!(&err(&mut c, args), want, "{args:?}");
    }
    assert_eq!(int(&mut c, &["EXISTS", "n:meta", "n:board", "n:voted"]), 0);
}

#[test]
fn bad_input_is_refused_with_nothing_written() {
    let srv = Server::start();
    let mut c = srv.conn();
    let cases: &[(&[&str], &str)] = &[
        (
            &["POLL.VOTE", "p", "u"],
            "ERR wrong number of arguments for 'poll.vote' command",
        ),
        (&["POLL.VOTE", "p", "u", "a", "NOW"], "ERR syntax error"),
        (
            &["POLL.VOTE", "p", "u", "a", "LATER", "5"],
            "ERR syntax error",
        ),
        (
            &["POLL.VOTE", "p", "u", "a", "NOW", "x"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["POLL.VOTE", "p", "u", "a", "NOW", "-5"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["POLL.VOTE", "p", "u", "a", "NOW", "5", "extra"],
            "ERR syntax error",
        ),
        (
            &["POLL.VOTE", "p", "", "a"],
            "ERR poll: user must not be empty",
        ),
        (
            &["POLL.VOTE", "p", "u", ""],
            "ERR poll: candidate must not be empty",
        ),
        (
            &["POLL.REVOKE", "p"],
            "ERR wrong number of arguments for 'poll.revoke' command",
        ),
        (
            &["POLL.REVOKE", "p", "u", "c", "WHEN", "1"],
            "ERR syntax error",
        ),
        (
            &["POLL.TOP", "p", "-1"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["POLL.TOP", "p", "x"],
            "ERR value is not an integer or out of range",
        ),
        (&["POLL.TOP", "p", "1", "OFFSET"], "ERR syntax error"),
        (&["POLL.TOP", "p", "1", "2"], "ERR syntax error"),
        (
            &["POLL.RANK", "p"],
            "ERR wrong number of arguments for 'poll.rank' command",
        ),
        (
            &["POLL.RANK", "p", "a", "b"],
            "ERR wrong number of arguments for 'poll.rank' command",
        ),
        (
            &["POLL.INFO", "p", "x"],
            "ERR wrong number of arguments for 'poll.info' command",
        ),
        (
            &["POLL.SYNCACK", "p", "x"],
            "ERR value is not an integer or out of range",
        ),
        (
            &["POLL.STATUS", "p"],
            "ERR wrong number of arguments for 'poll.status' command",
        ),
    ];
    for (args, want) in cases {
        assert_eq!(&err(&mut c, args), want, "{args:?}");
    }
    assert_eq!(int(&mut c, &["DBSIZE"]), 0);
}

#[test]
fn derived_keys_of_the_wrong_type_are_refused_with_nothing_written() {
    let srv = Server::start();
    let mut c = srv.conn();
    const WT: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
    for suffix in ["voted", "board", "meta"] {
        let b = format!("w{suffix}");
        run(&mut c, &["SET", &format!("{b}:{suffix}"), "x"]);
        assert_eq!(err(&mut c, &["POLL.VOTE", &b, "u", "a"]), WT, "{suffix}");
        assert_eq!(err(&mut c, &["POLL.INFO", &b]), WT, "{suffix}");
        assert_eq!(err(&mut c, &["POLL.CREATE", &b]), WT, "{suffix}");
    }
    run(&mut c, &["POLL.CREATE", "mu", "MODE", "MULTI"]);
    run(&mut c, &["SET", "mu:uservotes", "x"]);
    assert_eq!(err(&mut c, &["POLL.VOTE", "mu", "u", "a"]), WT);
    assert_eq!(err(&mut c, &["POLL.STATUS", "mu", "u"]), WT);
    run(&mut c, &["SET", "ws:synced", "x"]);
    assert_eq!(err(&mut c, &["POLL.SYNC", "ws"]), WT);
    run(&mut c, &["SET", "wb:board", "x"]);
    assert_eq!(err(&mut c, &["POLL.TOP", "wb"]), WT);
    assert_eq!(err(&mut c, &["POLL.RANK", "wb", "a"]), WT);
    // Only the planted strings and the MULTI poll's meta exist.
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
    keys.sort();
    assert_eq!(
        keys,
        [
            "mu:meta",
            "mu:uservotes",
            "wb:board",
            "wboard:board",
            "wmeta:meta",
            "ws:synced",
            "wvoted:voted"
        ]
    );
}

#[test]
fn many_clients_voting_at_once_never_double_count() {
    let srv = Server::start();
    let users = 300;
    let threads: Vec<_> = (0..8)
        .map(|t| {
            let mut c = srv.conn();
            std::thread::spawn(move || {
                let mut counted = 0;
                for u in 0..users {
                    let cand = format!("c{}", (u + t) % 5);
                    counted += int(&mut c, &["POLL.VOTE", "{p}", &format!("u{u}"), &cand]);
                }
                counted
            })
        })
        .collect();
    let counted: i64 = threads.into_iter().map(|t| t.join().unwrap()).sum();
    let mut c = srv.conn();
    assert_eq!(counted, users as i64, "each user counted exactly once");
    assert_eq!(int(&mut c, &["HLEN", "{p}:voted"]), users as i64);
    let info = run(&mut c, &["POLL.INFO", "{p}"]);
    assert!(
        info.ends_with(&format!("ballots, {users}, votes, {users}]")),
        "{info}"
    );
}

#[test]
fn concurrent_multi_voters_respect_maxvotes() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(
        &mut c,
        &["POLL.CREATE", "m", "MODE", "MULTI", "MAXVOTES", "2"],
    );
    let threads: Vec<_> = (0..6)
        .map(|t| {
            let mut c = srv.conn();
            std::thread::spawn(move || {
                for u in 0..100 {
                    let _ = cmd(
                        &mut c,
                        &["POLL.VOTE", "m", &format!("u{u}"), &format!("c{t}")],
                    );
                }
            })
        })
        .collect();
    threads.into_iter().for_each(|t| t.join().unwrap());
    assert_eq!(int(&mut c, &["HLEN", "m:voted"]), 200);
    let info = run(&mut c, &["POLL.INFO", "m"]);
    assert!(info.ends_with("ballots, 200, votes, 200]"), "{info}");
}

/// Every POLL write command, clock-dependent ones without NOW included.
fn poll_workload(c: &mut Connection) {
    run(
        c,
        &[
            "POLL.CREATE",
            "r1",
            "MODE",
            "MULTI",
            "MAXVOTES",
            "2",
            "CANDIDATES",
            "3",
            "a",
            "b",
            "c",
            "TTL",
            "1000",
        ],
    );
    run(c, &["POLL.CREATE", "r2", "MODE", "DAILY", "TZ", "-300"]);
    run(
        c,
        &[
            "POLL.CREATE",
            "r3",
            "START",
            &s(T0),
            "END",
            "253402300799999",
        ],
    );
    for u in 0..30 {
        let u = format!("u{u}");
        run(c, &["POLL.VOTE", "r1", &u, ["a", "b", "c"][u.len() % 3]]);
        run(c, &["POLL.VOTE", "r1", &u, "b"]);
        run(c, &["POLL.VOTE", "r2", &u, "x"]);
        run(c, &["POLL.VOTE", "r2", &u, "y", "NOW", &s(T0)]);
        run(c, &["POLL.VOTE", "r3", &u, "z"]);
        run(c, &["POLL.VOTE", "r4", &u, "free"]);
    }
    run(c, &["POLL.SYNC", "r1"]);
    run(c, &["POLL.REVOKE", "r1", "u1", "b"]);
    run(c, &["POLL.REVOKE", "r2", "u2"]);
    run(c, &["POLL.REVOKE", "r3", "u3"]);
    run(c, &["POLL.SYNCACK", "r1", "1"]);
    run(c, &["POLL.SYNC", "r1"]);
}

#[test]
fn replica_equals_master() {
    let pair = Pair::start();
    let mut c = pair.master.conn();
    poll_workload(&mut c);
    pair.assert_equal();
    let mut r = pair.replica.conn();
    assert_eq!(
        run(&mut r, &["POLL.TOP", "r1"]),
        run(&mut c, &["POLL.TOP", "r1"])
    );
    assert_eq!(
        run(&mut r, &["HGETALL", "r2:voted"]),
        run(&mut c, &["HGETALL", "r2:voted"])
    );
    assert_eq!(
        run(&mut r, &["PEXPIRETIME", "r1:voted"]),
        run(&mut c, &["PEXPIRETIME", "r1:voted"])
    );
}

#[test]
fn aof_restart_and_rdb_reload_equal_before() {
    let mut srv = start_aof();
    let mut c = srv.conn();
    poll_workload(&mut c);
    let audit = run(&mut c, &["HGETALL", "r2:voted"]);
    assert_aof_restart_equal(&mut srv);
    let mut c = srv.conn();
    assert_eq!(run(&mut c, &["HGETALL", "r2:voted"]), audit);
    assert_rdb_reload_equal(&srv);
}

#[test]
fn writes_raise_keyspace_events_and_count_in_info() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEd"]);
    let mut sub = srv.conn();
    let _: () = redis::cmd("PSUBSCRIBE")
        .arg("__keyevent@0__:hotpath.poll.*")
        .query(&mut sub)
        .unwrap();
    int(&mut c, &["POLL.VOTE", "p", "u", "a"]);
    int(&mut c, &["POLL.VOTE", "p", "u", "a"]);
    let msg: Vec<redis::Value> = match sub.recv_response().unwrap() {
        redis::Value::Array(v) | redis::Value::Push { data: v, .. } => v,
        other => panic!("{other:?}"),
    };
    let text: Vec<String> = msg.iter().map(|v| show(&Ok(v.clone()))).collect();
    assert_eq!(text[2], "__keyevent@0__:hotpath.poll.vote");
    assert_eq!(text[3], "p");
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    assert!(info.contains("poll_votes:1"), "{info}");
    assert!(info.contains("poll_duplicates:1"), "{info}");
}

/// Every key with its absolute expiry (`PEXPIRETIME`, -1 for none), sorted.
fn expiries(c: &mut Connection) -> Vec<(String, i64)> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let at = int(c, &["PEXPIRETIME", &k]);
            (k, at)
        })
        .collect()
}

const CORRUPT_META: &str = "ERR poll: corrupt data in 'p:meta' field";

#[test]
fn corrupt_rules_are_refused_naming_key_and_field_with_nothing_written() {
    let srv = Server::start();
    let mut c = srv.conn();
    for bad in [
        "garbage",
        "ONCE 1 0 0 0 0",
        "once 1 0 0 0 0 0",
        "ONCE 2 0 0 0 0 0",
        "MULTI 0 0 0 0 0 0",
        "ONCE 1 -1 0 0 0 0",
        "ONCE 1 0 0 9999 0 0",
        "ONCE 1 0 0 0 7 0",
        "ONCE 1 0 0 0 0 x",
        "",
    ] {
        run(&mut c, &["FLUSHALL"]);
        run(&mut c, &["HSET", "p:meta", "rules", bad]);
        run(&mut c, &["ZADD", "p:board", "1", "a"]);
        run(&mut c, &["HSET", "p:voted", "u0", "a:5"]);
        let before = dump_keys(&mut c, "*");
        let want = format!("{CORRUPT_META} 'rules'");
        for args in [
            &["POLL.VOTE", "p", "u", "a"][..],
            &["POLL.REVOKE", "p", "u0"],
            &["POLL.STATUS", "p", "u0"],
            &["POLL.INFO", "p"],
            &["POLL.SYNC", "p"],
        ] {
            assert_eq!(err(&mut c, args), want, "{bad:?} {args:?}");
        }
        assert_eq!(dump_keys(&mut c, "*"), before, "{bad:?}");
    }
    // A B:meta holding only the write-back state (SYNC on a poll that was
    // never created) still reads as the default rules.
    run(&mut c, &["FLUSHALL"]);
    run(&mut c, &["HSET", "p:meta", "epoch", "3", "pending", "0"]);
    assert_eq!(int(&mut c, &["POLL.VOTE", "p", "u", "a"]), 1);
}

#[test]
fn every_type_check_comes_before_any_value_check() {
    let srv = Server::start();
    let mut c = srv.conn();
    const WT: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
    run(
        &mut c,
        &["HSET", "p:meta", "rules", "garbage", "pending", "x"],
    );
    run(&mut c, &["SET", "p:board", "x"]);
    assert_eq!(err(&mut c, &["POLL.VOTE", "p", "u", "a"]), WT);
    assert_eq!(err(&mut c, &["POLL.INFO", "p"]), WT);
    assert_eq!(err(&mut c, &["POLL.SYNC", "p"]), WT);
    assert_eq!(err(&mut c, &["POLL.REVOKE", "p", "u"]), WT);
    run(&mut c, &["DEL", "p:board"]);
    run(&mut c, &["SET", "p:voted", "x"]);
    assert_eq!(err(&mut c, &["POLL.STATUS", "p", "u"]), WT);
    run(&mut c, &["DEL", "p:voted"]);
    run(&mut c, &["SET", "p:synced", "x"]);
    assert_eq!(err(&mut c, &["POLL.SYNCACK", "p", "1"]), WT);
    // With the types right, the value is what is refused.
    run(&mut c, &["DEL", "p:synced"]);
    assert_eq!(
        err(&mut c, &["POLL.SYNCACK", "p", "1"]),
        format!("{CORRUPT_META} 'pending'")
    );
}

#[test]
fn corrupt_vote_lists_and_audit_records_are_refused() {
    let srv = Server::start();
    let mut c = srv.conn();
    run(
        &mut c,
        &["POLL.CREATE", "m", "MODE", "MULTI", "MAXVOTES", "2"],
    );
    int(&mut c, &["POLL.VOTE", "m", "u", "a"]);
    for bad in ["not json", "{}", "[1]", r#"["a",null]"#, r#""a""#, ""] {
        run(&mut c, &["HSET", "m:uservotes", "u", bad]);
        let before = dump_keys(&mut c, "*");
        let want = "ERR poll: corrupt data in 'm:uservotes' field 'u'";
        // Read as empty, the list would let a MULTI voter past MAXVOTES.
        assert_eq!(err(&mut c, &["POLL.VOTE", "m", "u", "b"]), want, "{bad:?}");
        assert_eq!(err(&mut c, &["POLL.VOTE", "m", "u", "c"]), want, "{bad:?}");
        assert_eq!(err(&mut c, &["POLL.STATUS", "m", "u"]), want, "{bad:?}");
        assert_eq!(err(&mut c, &["POLL.REVOKE", "m", "u"]), want, "{bad:?}");
        assert_eq!(dump_keys(&mut c, "*"), before, "{bad:?}");
    }
    // Other users are not affected.
    assert_eq!(int(&mut c, &["POLL.VOTE", "m", "v", "a"]), 1);
    // An audit record that is not `<candidate>:<unix-ms>`.
    int(&mut c, &["POLL.VOTE", "o", "u", "a"]);
    for bad in ["nocolon", "a:", "a:x", ":5", "a:-1"] {
        run(&mut c, &["HSET", "o:voted", "u", bad]);
        let want = "ERR poll: corrupt data in 'o:voted' field 'u'";
        assert_eq!(err(&mut c, &["POLL.STATUS", "o", "u"]), want, "{bad:?}");
        assert_eq!(err(&mut c, &["POLL.REVOKE", "o", "u"]), want, "{bad:?}");
    }
    assert_eq!(run(&mut c, &["ZSCORE", "o:board", "a"]), "1");
}

#[test]
fn write_back_state_that_would_wrap_or_is_garbage_is_refused() {
    let srv = Server::start();
    let mut c = srv.conn();
    int(&mut c, &["POLL.VOTE", "p", "u", "a"]);
    run(&mut c, &["HSET", "p:meta", "epoch", "9223372036854775807"]);
    let before = dump_keys(&mut c, "*");
    assert_eq!(
        err(&mut c, &["POLL.SYNC", "p"]),
        "ERR poll: integer overflow in 'p:meta' field 'epoch'"
    );
    assert_eq!(dump_keys(&mut c, "*"), before);
    // The largest epoch that can still advance does.
    run(&mut c, &["HSET", "p:meta", "epoch", "9223372036854775806"]);
    assert_eq!(
        run(&mut c, &["POLL.SYNC", "p"]),
        "[9223372036854775807, a, 1]"
    );
    for (field, bad) in [("epoch", "x"), ("pending", "-3"), ("pending", "1.5")] {
        run(&mut c, &["DEL", "p:meta"]);
        run(&mut c, &["HSET", "p:meta", field, bad]);
        let want = format!("{CORRUPT_META} '{field}'");
        assert_eq!(err(&mut c, &["POLL.SYNC", "p"]), want);
        if field == "pending" {
            assert_eq!(err(&mut c, &["POLL.SYNCACK", "p", "1"]), want);
        }
    }
}

#[test]
fn board_counts_that_are_not_whole_votes_are_refused() {
    let srv = Server::start();
    let mut c = srv.conn();
    int(&mut c, &["POLL.VOTE", "p", "u", "a"]);
    run(&mut c, &["ZADD", "p:board", "2.5", "x", "1e300", "y"]);
    let want = |m: &str| format!("ERR poll: corrupt data in 'p:board' field '{m}'");
    assert_eq!(err(&mut c, &["POLL.TOP", "p"]), want("y"));
    assert_eq!(err(&mut c, &["POLL.RANK", "p", "x"]), want("x"));
    let e = err(&mut c, &["POLL.SYNC", "p"]);
    assert!(e == want("x") || e == want("y"), "{e}");
    // A failed freeze leaves no partial snapshot and no pending epoch.
    assert_eq!(int(&mut c, &["EXISTS", "p:syncing"]), 0);
    assert_eq!(run(&mut c, &["HGET", "p:meta", "pending"]), "nil");
    // INFO reads no score: it still answers.
    assert_eq!(
        run(&mut c, &["POLL.INFO", "p"]),
        "[mode, ONCE, maxvotes, 1, start, 0, end, 0, ballots, 1, votes, 1]"
    );
}

#[test]
fn empty_users_and_candidates_are_refused_everywhere() {
    let srv = Server::start();
    let mut c = srv.conn();
    let user = "ERR poll: user must not be empty";
    assert_eq!(err(&mut c, &["POLL.VOTE", "p", "", "a"]), user);
    assert_eq!(err(&mut c, &["POLL.REVOKE", "p", ""]), user);
    assert_eq!(err(&mut c, &["POLL.STATUS", "p", ""]), user);
    assert_eq!(
        err(&mut c, &["POLL.RANK", "p", ""]),
        "ERR poll: candidate must not be empty"
    );
    assert_eq!(int(&mut c, &["DBSIZE"]), 0);
}

#[test]
fn info_counts_votes_in_constant_time_and_top_is_bounded() {
    let srv = Server::start();
    let mut c = srv.conn();
    for (u, cand) in [("1", "a"), ("2", "a"), ("3", "b")] {
        int(&mut c, &["POLL.VOTE", "p", u, cand]);
    }
    int(&mut c, &["POLL.REVOKE", "p", "1"]);
    // votes = ballots: every counted vote is one ballot and one point.
    assert_eq!(
        run(&mut c, &["POLL.INFO", "p"]),
        "[mode, ONCE, maxvotes, 1, start, 0, end, 0, ballots, 2, votes, 2]"
    );
    assert_eq!(
        run(&mut c, &["ZRANGE", "p:board", "0", "-1", "WITHSCORES"]),
        "[a, 1, b, 1]"
    );
    assert_eq!(
        err(&mut c, &["POLL.TOP", "p", "1001"]),
        "ERR poll: count must be at most 1000 (poll-range-max)"
    );
    run(&mut c, &["CONFIG", "SET", "hotpath.poll-range-max", "5000"]);
    assert_eq!(run(&mut c, &["POLL.TOP", "p", "1001"]), "[b, 1, a, 1]");
    // Far offsets are found by rank, not walked.
    let mut pipe = redis::pipe();
    for i in 0..3000 {
        pipe.cmd("ZADD")
            .arg("q:board")
            .arg(i)
            .arg(format!("c{i:05}"))
            .ignore();
    }
    let _: () = pipe.query(&mut c).unwrap();
    assert_eq!(
        run(&mut c, &["POLL.TOP", "q", "2", "OFFSET", "2500"]),
        "[c00499, 499, c00498, 498]"
    );
    assert_eq!(run(&mut c, &["POLL.TOP", "q", "2", "OFFSET", "9999"]), "[]");
}

/// Every POLL key that can carry the poll's expiry, created at different
/// times: they must all expire at the one instant in B:meta.
fn expiring_poll(c: &mut Connection) {
    run(c, &["POLL.CREATE", "e", "MODE", "MULTI", "TTL", "5000"]);
    for u in 0..20 {
        let u = format!("u{u}");
        run(c, &["POLL.VOTE", "e", &u, "a"]);
        run(c, &["POLL.VOTE", "e", &u, ["b", "c"][u.len() % 2]]);
    }
    run(c, &["POLL.SYNC", "e"]);
    run(c, &["POLL.SYNCACK", "e", "1"]);
    run(c, &["POLL.VOTE", "e", "late", "a"]);
    run(c, &["POLL.SYNC", "e"]);
    run(c, &["POLL.REVOKE", "e", "u3"]);
}

#[test]
fn every_key_expires_at_one_instant_on_master_replica_aof_and_rdb() {
    let pair = Pair::start();
    let mut m = pair.master.conn();
    expiring_poll(&mut m);
    let at = int(&mut m, &["PEXPIRETIME", "e:meta"]);
    assert!(at > 0);
    let on_master = expiries(&mut m);
    assert_eq!(on_master.len(), 6, "{on_master:?}");
    for (k, t) in &on_master {
        assert_eq!(*t, at, "{k}");
    }
    pair.assert_equal();
    let mut r = pair.replica.conn();
    assert_eq!(expiries(&mut r), on_master);

    let mut aof = start_aof();
    let mut a = aof.conn();
    expiring_poll(&mut a);
    let before = expiries(&mut a);
    assert_aof_restart_equal(&mut aof);
    let mut a = aof.conn();
    assert_eq!(expiries(&mut a), before);
    assert_rdb_reload_equal(&aof);
    let mut a = aof.conn();
    assert_eq!(expiries(&mut a), before);
}

#[test]
fn a_large_sync_runs_in_slices_and_replicates_exactly() {
    let pair = Pair::start();
    let mut c = pair.master.conn();
    run(&mut c, &["POLL.CREATE", "big", "TTL", "9000"]);
    // 200,000 candidates: far more than one slice.
    for start in (0..200_000).step_by(1000) {
        let mut q = redis::cmd("ZADD");
        q.arg("big:board");
        for i in start..start + 1000 {
            q.arg(i % 97 + 1).arg(format!("c{i}"));
        }
        let _: () = q.query(&mut c).unwrap();
    }
    int(&mut c, &["POLL.VOTE", "big", "u", "c7"]);
    let sync: Vec<redis::Value> = redis::cmd("POLL.SYNC").arg("big").query(&mut c).unwrap();
    assert_eq!(sync.len(), 1 + 2 * 200_000);
    // In the board's order (ZREVRANGE): most votes first, names
    // descending.
    let order: Vec<String> = redis::cmd("ZREVRANGE")
        .arg("big:board")
        .arg(0)
        .arg(-1)
        .query(&mut c)
        .unwrap();
    let replied: Vec<String> = sync[1..]
        .iter()
        .step_by(2)
        .map(|v| show(&Ok(v.clone())))
        .collect();
    assert_eq!(replied, order);
    assert_eq!(show(&Ok(sync[2].clone())), "97");
    // The copy is exact and carries the poll's expiry.
    let board: Vec<(String, i64)> = redis::cmd("ZRANGE")
        .arg("big:board")
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(&mut c)
        .unwrap();
    let frozen: Vec<(String, i64)> = redis::cmd("ZRANGE")
        .arg("big:syncing")
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(&mut c)
        .unwrap();
    assert_eq!(board, frozen);
    assert_eq!(
        int(&mut c, &["PEXPIRETIME", "big:syncing"]),
        int(&mut c, &["PEXPIRETIME", "big:meta"])
    );
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut c)
        .unwrap();
    assert!(info.contains("cmdstat_poll.sync"), "{info}");
    // Votes during the retry do not change the frozen deltas.
    int(&mut c, &["POLL.VOTE", "big", "v", "c8"]);
    let again: Vec<redis::Value> = redis::cmd("POLL.SYNC").arg("big").query(&mut c).unwrap();
    assert_eq!(again, sync);
    assert_eq!(int(&mut c, &["POLL.SYNCACK", "big", "1"]), 1);
    assert_eq!(run(&mut c, &["POLL.SYNC", "big"]), "[2, c8, 1]");
    pair.assert_equal();
    let mut r = pair.replica.conn();
    assert_eq!(expiries(&mut r), expiries(&mut c));
}

#[test]
fn sync_inside_multi_runs_at_once() {
    let srv = Server::start();
    let mut c = srv.conn();
    for start in (0..20_000).step_by(1000) {
        let mut q = redis::cmd("ZADD");
        q.arg("m:board");
        for i in start..start + 1000 {
            q.arg(1).arg(format!("c{i}"));
        }
        let _: () = q.query(&mut c).unwrap();
    }
    let (sync,): (Vec<redis::Value>,) = redis::pipe()
        .atomic()
        .cmd("POLL.SYNC")
        .arg("m")
        .query(&mut c)
        .unwrap();
    assert_eq!(sync.len(), 1 + 2 * 20_000);
    assert_eq!(int(&mut c, &["ZCARD", "m:syncing"]), 20_000);
}

#[test]
fn a_client_that_leaves_or_a_flush_during_a_sync_harms_nothing() {
    let srv = Server::start();
    let mut c = srv.conn();
    let fill = |c: &mut Connection| {
        for start in (0..300_000).step_by(1000) {
            let mut q = redis::cmd("ZADD");
            q.arg("p:board");
            for i in start..start + 1000 {
                q.arg(i % 50 + 1).arg(format!("c{i}"));
            }
            let _: () = q.query(c).unwrap();
        }
    };
    fill(&mut c);
    // The client sends SYNC and goes away: the job finishes without it.
    {
        let mut gone = std::net::TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
        use std::io::Write;
        gone.write_all(b"*2\r\n$9\r\nPOLL.SYNC\r\n$1\r\np\r\n")
            .unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while run(&mut c, &["HGET", "p:meta", "pending"]) != "1" {
        assert!(
            std::time::Instant::now() < deadline,
            "the freeze never finished"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    assert_eq!(int(&mut c, &["ZCARD", "p:syncing"]), 300_000);
    // A FLUSHALL while a freeze runs: the job meets missing keys and ends.
    assert_eq!(int(&mut c, &["POLL.SYNCACK", "p", "1"]), 1);
    run(&mut c, &["ZINCRBY", "p:board", "1", "c7"]);
    let mut other = srv.conn();
    let t = std::thread::spawn(move || show(&cmd(&mut other, &["POLL.SYNC", "p"])));
    std::thread::sleep(std::time::Duration::from_millis(5));
    run(&mut c, &["FLUSHALL"]);
    let reply = t.join().unwrap();
    assert!(
        reply.starts_with('[') || reply.starts_with("ERR<"),
        "{reply}"
    );
    assert_eq!(run(&mut c, &["PING"]), "PONG");
    // The server works on as before.
    int(&mut c, &["POLL.VOTE", "p", "u", "a"]);
    assert_eq!(run(&mut c, &["POLL.SYNC", "p"]), "[1, a, 1]");
}

#[test]
fn a_vote_past_2_53_is_refused_as_an_overflow_with_nothing_written() {
    let srv = Server::start();
    let mut c = srv.conn();
    for mode in ["ONCE", "DAILY", "MULTI"] {
        let b = format!("{{o{mode}}}");
        run(&mut c, &["POLL.CREATE", &b, "MODE", mode]);
        let board = format!("{b}:board");
        run(
            &mut c,
            &["ZADD", &board, "9007199254740991", "top", "5", "low"],
        );
        let before = srv.digest();
        assert_eq!(
            run(&mut c, &["POLL.VOTE", &b, "u", "top"]),
            format!("ERR<ERR poll: integer overflow in '{board}' field 'top'>"),
            "{mode}"
        );
        assert_eq!(srv.digest(), before, "{mode}: nothing written");
        // Reads still work, and other candidates take votes.
        assert_eq!(
            run(&mut c, &["POLL.RANK", &b, "top"]),
            "[0, 9007199254740991]",
            "{mode}"
        );
        assert_eq!(run(&mut c, &["POLL.VOTE", &b, "u", "low"]), "1", "{mode}");
        assert_eq!(
            run(&mut c, &["POLL.TOP", &b, "2"]),
            "[top, 9007199254740991, low, 6]",
            "{mode}"
        );
    }
}

#[test]
fn a_freeze_cut_short_by_a_crash_leaves_a_snapshot_that_expires() {
    let mut srv = start_aof();
    let mut c = srv.conn();
    for start in (0..300_000).step_by(1000) {
        let mut q = redis::cmd("ZADD");
        q.arg("p:board");
        for i in start..start + 1000 {
            q.arg(i % 50 + 1).arg(format!("c{i}"));
        }
        let _: () = q.query(&mut c).unwrap();
    }
    {
        use std::io::Write;
        let mut gone = std::net::TcpStream::connect(("127.0.0.1", srv.port)).unwrap();
        gone.write_all(b"*2\r\n$9\r\nPOLL.SYNC\r\n$1\r\np\r\n")
            .unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let at = loop {
        let at = int(&mut c, &["PEXPIRETIME", "p:syncing"]);
        if at > 0 {
            break at;
        }
        assert!(
            std::time::Instant::now() < deadline
                && run(&mut c, &["HGET", "p:meta", "pending"]) != "1",
            "the snapshot was never seen with an expiry while written ({at})"
        );
    };
    let now = now_ms();
    assert!(
        at > now && at <= now + 3_600_000 + 1000,
        "work in progress expires within the hour: {at} at {now}"
    );
    srv.stop();
    srv.restart(&[]);
    let mut c = srv.conn();
    if run(&mut c, &["HGET", "p:meta", "pending"]) != "1" {
        // Cut short: the partial copy still expires.
        let left = int(&mut c, &["PEXPIRETIME", "p:syncing"]);
        assert!(left == -2 || left >= at, "{left}");
    }
    // A freeze that completes keeps its snapshot, without an expiry (the
    // poll has none), until SYNCACK.
    run(&mut c, &["DEL", "p:syncing", "p:meta"]);
    let r = run(&mut c, &["POLL.SYNC", "p"]);
    assert!(r.starts_with("[1, "), "{}", &r[..40.min(r.len())]);
    assert_eq!(int(&mut c, &["ZCARD", "p:syncing"]), 300_000);
    assert_eq!(int(&mut c, &["PEXPIRETIME", "p:syncing"]), -1);
}
