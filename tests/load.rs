//! Loading the module: load arguments checked like CONFIG SET (a bad one
//! stops the load with a log line naming it and its range), the version in
//! MODULE LIST, INFO and the load log line, and long commands in LATENCY
//! LATEST.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;

/// The module version the build must show: Cargo.toml's version as
/// major*10000 + minor*100 + patch.
fn expected_version() -> i64 {
    let p: Vec<i64> = env!("CARGO_PKG_VERSION")
        .split(['.', '-'])
        .take(3)
        .map(|x| x.parse().unwrap())
        .collect();
    p[0] * 10000 + p[1] * 100 + p[2]
}

/// Starts the server with `--loadmodule <module> <args>`, which must
/// refuse to start; returns its log.
fn refused_start(args: &[&str]) -> String {
    let dir = Server::new_dir();
    let log = dir.join("server.log");
    let mut child = Command::new(server_bin())
        .arg("--port")
        .arg(free_port().to_string())
        .arg("--bind")
        .arg("127.0.0.1")
        .arg("--dir")
        .arg(&dir)
        .arg("--save")
        .arg("")
        .arg("--logfile")
        .arg(&log)
        .arg("--loadmodule")
        .arg(module_path())
        .args(args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "{args:?}: the server kept running: {}",
                std::fs::read_to_string(&log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!status.success(), "{args:?}: exit {status}: {text}");
    text
}

/// (load arguments, the log line they must produce).
const BAD: &[(&[&str], &str)] = &[
    (
        &["like-recent", "2000"],
        "load argument 'like-recent 2000' is out of range; expected like-recent (an integer from 0 to 1000)",
    ),
    (
        &["like-recent", "5", "redpacket-max-count", "0"],
        "load argument 'redpacket-max-count 0' is out of range; expected redpacket-max-count (an integer from 1 to 100000)",
    ),
    (
        &["like-recent", "ten"],
        "load argument 'like-recent ten' is not an integer; expected like-recent (an integer from 0 to 1000)",
    ),
    (
        &["like-recent"],
        "load argument 'like-recent' has no value; expected like-recent (an integer from 0 to 1000)",
    ),
    (
        &["like-recnet", "5"],
        "unknown load argument 'like-recnet'; the settings are like-max-id (an integer from 0 to 4294967295), like-promote-at (an integer from 1 to 100000000), like-recent (an integer from 0 to 1000), redpacket-max-count (an integer from 1 to 100000), like-common-max (an integer from 1 to 100000000)",
    ),
    (
        &["like-recent", "5", "like-recent", "6"],
        "load argument 'like-recent' is given more than once",
    ),
];

#[test]
fn a_bad_load_argument_stops_the_server_with_a_log_line_naming_it() {
    for (args, line) in BAD {
        let log = refused_start(args);
        assert!(log.contains(line), "{args:?}: no line {line:?} in:\n{log}");
    }
}

#[test]
fn module_load_refuses_bad_arguments_and_loads_good_ones() {
    let srv = Server::start_bare(&["--enable-module-command", "yes"]);
    let mut c = srv.conn();
    let path = module_path().display().to_string();
    for (args, line) in BAD {
        let mut load = vec!["MODULE", "LOAD", path.as_str()];
        load.extend_from_slice(args);
        let e = err(&mut c, &load);
        assert!(e.starts_with("ERR"), "{args:?}: {e}");
        assert!(srv.log().contains(line), "{args:?}: no line {line:?}");
        // (Valkey lists its built-in `lua` engine as a module.)
        let list = run(&mut c, &["MODULE", "LIST"]);
        assert!(!list.contains("hotpath"), "{args:?}: {list}");
    }
    assert_eq!(
        run(&mut c, &["MODULE", "LOAD", &path, "LIKE-RECENT", "1000"]),
        "OK"
    );
    assert_eq!(
        run(&mut c, &["CONFIG", "GET", "hotpath.like-recent"]),
        "[hotpath.like-recent, 1000]"
    );
    assert_eq!(run(&mut c, &["LIKE.ADD", "l", "7"]), "[1, 1]");
}

#[test]
fn module_list_info_and_the_load_log_line_show_the_version() {
    let srv = Server::start_full(&[], &["like-recent", "5"]);
    let mut c = srv.conn();
    let want = expected_version();
    assert_eq!(want, 20000, "Cargo.toml says {}", env!("CARGO_PKG_VERSION"));
    let list = run(&mut c, &["MODULE", "LIST"]);
    assert!(
        list.contains(&format!("[name, hotpath, ver, {want}, ")),
        "{list}"
    );
    let info: String = redis::cmd("INFO").arg("hotpath").query(&mut c).unwrap();
    assert!(info.contains("# hotpath_module\r\n"), "{info}");
    assert!(
        info.contains(&format!("hotpath_version:{want}\r\n")),
        "{info}"
    );
    assert!(
        info.contains(&format!(
            "hotpath_release:{}\r\n",
            env!("CARGO_PKG_VERSION")
        )),
        "{info}"
    );
    // The load line is at notice level ('*' in the log) and has the
    // effective configs.
    let line = format!(
        "* <hotpath> release {}, module version {want}; configs: like-max-id=4294967295 like-promote-at=512 like-recent=5 redpacket-max-count=10000 like-common-max=5000",
        env!("CARGO_PKG_VERSION")
    );
    assert!(srv.log().contains(&line), "no {line:?} in:\n{}", srv.log());
}

#[test]
fn the_config_file_wins_over_a_load_argument() {
    // CONFIG REWRITE writes `hotpath.<name> <value>` lines; a restart
    // must keep them even though the loadmodule line has its own value.
    let srv = Server::start_full(&["--hotpath.like-recent", "7"], &["like-recent", "5"]);
    let mut c = srv.conn();
    assert_eq!(
        run(&mut c, &["CONFIG", "GET", "hotpath.like-recent"]),
        "[hotpath.like-recent, 7]"
    );
    assert!(srv.log().contains(" like-recent=7 "), "{}", srv.log());
}

/// Returns the event names in LATENCY LATEST.
fn latency_events(c: &mut Connection) -> Vec<String> {
    match cmd(c, &["LATENCY", "LATEST"]).unwrap() {
        Value::Array(rows) => rows
            .iter()
            .filter_map(|r| match r {
                Value::Array(f) => match f.first() {
                    Some(Value::BulkString(b)) => Some(String::from_utf8_lossy(b).into_owned()),
                    Some(Value::SimpleString(s)) => Some(s.clone()),
                    _ => None,
                },
                _ => None,
            })
            .collect(),
        other => panic!("LATENCY LATEST: {other:?}"),
    }
}

#[test]
fn long_commands_show_in_latency_latest_only_while_the_monitor_is_on() {
    // A packet of the largest count (100,000 shares) takes milliseconds.
    let srv = Server::start_full(&[], &["redpacket-max-count", "100000"]);
    let mut c = srv.conn();
    let split = |c: &mut Connection, key: &str| {
        assert_eq!(
            int(c, &["REDPACKET.SPLIT", key, "10000000", "100000"]),
            100000
        );
    };
    // Monitor off (threshold 0): the module reports nothing.
    split(&mut c, "a{1}");
    assert!(
        !latency_events(&mut c).contains(&"redpacket.split".to_string()),
        "{:?}",
        latency_events(&mut c)
    );
    // CONFIG SET turns it on; the module follows the change.
    run(&mut c, &["CONFIG", "SET", "latency-monitor-threshold", "1"]);
    split(&mut c, "b{1}");
    let events = latency_events(&mut c);
    assert!(
        events.contains(&"redpacket.split".to_string()),
        "{events:?}"
    );
    let hist = run(&mut c, &["LATENCY", "HISTORY", "redpacket.split"]);
    assert_ne!(hist, "[]");
    // And off again.
    run(&mut c, &["CONFIG", "SET", "latency-monitor-threshold", "0"]);
    run(&mut c, &["LATENCY", "RESET"]);
    split(&mut c, "c{1}");
    assert!(!latency_events(&mut c).contains(&"redpacket.split".to_string()));
}

#[test]
fn a_threshold_set_at_startup_is_followed_from_the_first_command() {
    let srv = Server::start_full(
        &["--latency-monitor-threshold", "1"],
        &["redpacket-max-count", "100000"],
    );
    let mut c = srv.conn();
    assert_eq!(
        int(&mut c, &["REDPACKET.SPLIT", "a{1}", "10000000", "100000"]),
        100000
    );
    let events = latency_events(&mut c);
    assert!(
        events.contains(&"redpacket.split".to_string()),
        "{events:?}"
    );
}

/// A sliced job (POLL.SYNC, RANK.MERGE) reports its slices to the latency
/// monitor only while the monitor is on: the server's own check lets every
/// sample through at threshold 0 (issue 25).
#[test]
fn sliced_jobs_add_no_latency_samples_while_the_monitor_is_off() {
    let srv = Server::start();
    let mut c = srv.conn();
    for u in 0..50 {
        run(
            &mut c,
            &[
                "POLL.VOTE",
                "p{1}",
                &format!("u{u}"),
                &format!("c{}", u % 7),
            ],
        );
    }
    assert_eq!(
        run(&mut c, &["CONFIG", "GET", "latency-monitor-threshold"]),
        "[latency-monitor-threshold, 0]"
    );
    run(&mut c, &["POLL.SYNC", "p{1}"]);
    run(&mut c, &["RANK.ADD", "r{1}", "a", "5"]);
    run(&mut c, &["RANK.MERGE", "m{1}", "1", "r{1}"]);
    assert_eq!(latency_events(&mut c), Vec::<String>::new());
}

/// `make install` puts the module at `$(DESTDIR)$(PREFIX)/lib/redis/modules/
/// hotpath.so` (docs/operations.md), and a server loads it from there. The
/// build step is skipped (`-o build`): the test runs inside `cargo test`,
/// which holds the build directory, and the module under test is already
/// built.
#[test]
fn make_install_puts_a_loadable_module_under_the_prefix() {
    let dest = std::env::temp_dir().join(format!("hotpath-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dest);
    let out = Command::new("make")
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "-s",
            "-o",
            "build",
            "-o",
            "deps",
            "install",
            "PREFIX=/opt/hp",
        ])
        .arg(format!("SO={}", module_path().display()))
        .arg(format!("DESTDIR={}", dest.display()))
        .output()
        .expect("make");
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let so = dest.join("opt/hp/lib/redis/modules/hotpath.so");
    assert!(
        String::from_utf8_lossy(&out.stdout)
            .contains("loadmodule /opt/hp/lib/redis/modules/hotpath.so"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let srv = Server::start_bare(&["--enable-module-command", "yes"]);
    let mut c = srv.conn();
    assert_eq!(
        run(&mut c, &["MODULE", "LOAD", &so.display().to_string()]),
        "OK"
    );
    let list = run(&mut c, &["MODULE", "LIST"]);
    assert!(
        list.contains(&format!("[name, hotpath, ver, {}, ", expected_version())),
        "{list}"
    );
    std::fs::remove_dir_all(&dest).unwrap();
}
