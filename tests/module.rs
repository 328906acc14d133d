//! The module as a whole: loading, configs, command metadata, INFO,
//! access control.

mod common;

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
        if write {
            assert!(info.contains("denyoom"), "{name}: {info}");
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
fn acl_can_deny_commands_by_name_and_by_category_where_supported() {
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
    // Where the server has module ACL categories (Redis 7.2+, Valkey),
    // -@write blocks POLL.VOTE and the hotpath category exists.
    if cmd(&mut c, &["ACL", "CAT", "hotpath"]).is_ok() {
        run(
            &mut c,
            &[
                "ACL", "SETUSER", "ro", "on", "nopass", "~*", "+@all", "-@write",
            ],
        );
        let mut r = srv.conn();
        run(&mut r, &["AUTH", "ro", "x"]);
        let e = err(&mut r, &["POLL.VOTE", "p", "u", "a"]);
        assert!(e.starts_with("NOPERM"), "{e}");
        assert_eq!(run(&mut r, &["POLL.TOP", "p"]), "[]");
        let cat = run(&mut c, &["ACL", "CAT", "hotpath"]);
        assert!(cat.contains("poll.vote"), "{cat}");
        // Every module command is in @hotpath and in exactly one of
        // @read / @write, matching its flags.
        let names: Vec<String> = redis::cmd("COMMAND")
            .arg("LIST")
            .arg("FILTERBY")
            .arg("MODULE")
            .arg("hotpath")
            .query(&mut c)
            .unwrap();
        for name in &names {
            let info = run(&mut c, &["COMMAND", "INFO", name]);
            assert!(info.contains("@hotpath"), "{name}: {info}");
            let (r, w) = (info.contains("@read"), info.contains("@write"));
            assert!(r ^ w, "{name}: {info}");
            assert_eq!(
                w,
                info.contains(", write,") || info.contains("[write,"),
                "{name}: {info}"
            );
        }
    }
}
