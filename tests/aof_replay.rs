//! Each family's AOF replayed on a *fresh* server (issue 27): for every
//! family of `hotpath::FAMILIES`, its write workload (every write command
//! at least once, the clock- and randomness-reading ones without `NOW`:
//! the workloads of tests/replication.rs) runs on a server with
//! `appendonly yes`; then a new server, whose directory holds nothing but
//! a copy of that AOF, replays it, and must hold the very same data:
//! `DEBUG DIGEST` (every key and value; of an expiry it sees only that
//! there is one) and `PEXPIRETIME` of every key (a CREATE replicated
//! without its NOW fails here on the expiries alone). Unlike a restart of the same server, the replay runs later, on a
//! server that never saw the commands, so a command that replicated itself
//! without the clock value or the random draw it used, or a key whose
//! expiry was re-computed from a remaining time, shows here.

use std::path::Path;

use crate::common;
use crate::replication;

use common::*;

/// Returns `(key, PEXPIRETIME)` of every key, sorted.
fn expiries(c: &mut Connection) -> Vec<(String, i64)> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    keys.sort();
    keys.into_iter()
        .map(|k| {
            let at: i64 = redis::cmd("PEXPIRETIME").arg(&k).query(c).unwrap();
            (k, at)
        })
        .collect()
}

/// Copies the AOF directory `from` (manifest, base and increment files)
/// into `to`.
fn copy_aof(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, to.join(p.file_name().unwrap())).unwrap();
    }
}

#[test]
fn every_familys_aof_replays_on_a_fresh_server_to_the_same_data() {
    let cases = replication::cases();
    for family in hotpath::FAMILIES {
        let prefix = format!("{}.", family.name);
        // Every write command of the family has a workload.
        let writes: Vec<&str> = family
            .commands
            .iter()
            .filter(|c| c.flags.split_whitespace().any(|f| f == "write"))
            .map(|c| c.name)
            .collect();
        for w in &writes {
            assert!(
                cases.iter().any(|(n, _)| n.eq_ignore_ascii_case(w)),
                "{w}: no workload (tests/replication.rs cases)"
            );
        }
        let workload: Vec<_> = cases
            .iter()
            .filter(|(n, _)| n.starts_with(&prefix))
            .collect();
        assert!(
            !workload.is_empty(),
            "family {}: no write workload",
            family.name
        );

        let mut src = start_aof();
        let mut c = src.conn();
        for (name, lines) in &workload {
            replication::apply(&mut c, name, lines);
        }
        let digest = src.digest();
        assert_ne!(
            digest, "0000000000000000000000000000000000000000",
            "{}: the workload left no data",
            family.name
        );
        let want = expiries(&mut c);
        // appendfsync always: every write is in the AOF once replied.
        src.stop();

        // A fresh server: started empty without persistence, stopped,
        // given nothing but the AOF, started again with the AOF on.
        let mut fresh = Server::start();
        fresh.stop();
        copy_aof(
            &src.dir.join("appendonlydir"),
            &fresh.dir.join("appendonlydir"),
        );
        fresh.restart(&["--appendonly", "yes"]);
        let mut f = fresh.conn();
        assert_eq!(
            fresh.digest(),
            digest,
            "{}: the AOF replayed on a fresh server differs\n{}",
            family.name,
            fresh.log()
        );
        assert_eq!(expiries(&mut f), want, "{}: expiries differ", family.name);
    }
}
