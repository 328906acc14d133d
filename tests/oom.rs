//! Memory pressure: with a tiny `maxmemory` and `noeviction`, every module
//! write command is refused with Redis's OOM error and nothing changes.

use crate::common;

use common::*;

#[test]
fn every_write_command_is_refused_when_out_of_memory() {
    let srv = Server::start_with(&["--maxmemory-policy", "noeviction"]);
    let mut c = srv.conn();
    run(&mut c, &["POLL.VOTE", "{p}", "u", "a"]);
    let before = srv.digest();
    let names: Vec<String> = redis::cmd("COMMAND")
        .arg("LIST")
        .arg("FILTERBY")
        .arg("MODULE")
        .arg("hotpath")
        .query(&mut c)
        .unwrap();
    run(&mut c, &["CONFIG", "SET", "maxmemory", "1"]);
    let mut writes = 0;
    for name in &names {
        let info = run(&mut c, &["COMMAND", "INFO", name]);
        if !info.contains("write") {
            continue;
        }
        writes += 1;
        let arity = match redis::cmd("COMMAND")
            .arg("INFO")
            .arg(name)
            .query::<Vec<Vec<redis::Value>>>(&mut c)
            .unwrap()[0][1]
        {
            redis::Value::Int(a) => a.unsigned_abs() as usize,
            _ => 2,
        };
        let mut args: Vec<String> = vec![name.clone(), "{p}".into()];
        while args.len() < arity {
            args.push("1".into());
        }
        let argv: Vec<&str> = args.iter().map(|s| s.as_str()).collect();
        let e = err(&mut c, &argv);
        assert!(e.starts_with("OOM"), "{name}: {e}");
    }
    assert!(
        writes >= 4,
        "expected the module's write commands, found {writes}"
    );
    run(&mut c, &["CONFIG", "SET", "maxmemory", "0"]);
    assert_eq!(srv.digest(), before, "an OOM-refused command changed data");
}
