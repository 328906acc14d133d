//! Every error leaves the data as it was ("validate everything, then
//! write"; issue 26). One test over a list of families: on a server that
//! holds live state of the family (and keys damaged by hand), each error
//! case of each write command must reply an error that the command's
//! reference page lists, and `DEBUG DIGEST` (every key, value and expiry)
//! must not move.
//!
//! The command layer builds a plan from what it read and writes only once
//! the plan is made, so applying cannot fail half way; this proves the
//! other half: no error comes after the first write. Every write command of
//! a family in the list needs at least one case (the test says which one
//! has none). Every family with a write command has its cases, in a file
//! of its own, `tests/no_partial_writes/<family>.rs` (build.rs lists the
//! files; they run in name order on one server, so a family's key names
//! are its own: no other family's file names the same key).

use crate::common;

use std::collections::BTreeMap;

use common::*;

/// A family: the writes that make its live state, then its error cases.
struct Family {
    name: &'static str,
    setup: &'static [&'static [&'static str]],
    errors: &'static [&'static [&'static str]],
}

const T: &str = "1900000000000";

// Every tests/no_partial_writes/<family>.rs file holds one family's
// `FAMILY`: build.rs writes its module and the list `FAMILIES` of them (a
// new family needs no line here).
include!(concat!(env!("OUT_DIR"), "/no_partial_writes_families.rs"));

/// Reads the `Errors` lines of every command of `docs/reference/<family>.md`
/// and of the family's commands in `docs/reference/spread.md` (a spread
/// bag's draw steps): command (lower case) -> the error texts listed,
/// `<…>` standing for any value. A command whose entry has a `SPREAD n`
/// argument also lists the errors of the SPREAD option that spread.md
/// gives for every family before its first entry.
fn reference_errors(family: &str) -> BTreeMap<String, Vec<String>> {
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut spread_option: Vec<String> = Vec::new();
    let mut with_spread: Vec<String> = Vec::new();
    for page in [family, "spread"] {
        let path = format!("{}/docs/reference/{page}.md", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let mut command = String::new();
        for line in text.lines() {
            let ours = command.starts_with(&format!("{family}."));
            if let Some(h) = line.strip_prefix("## ") {
                command = h.trim().to_ascii_lowercase();
            } else if line.starts_with("- `SPREAD n`") && ours {
                with_spread.push(command.clone());
            } else if let Some(rest) = line.strip_prefix("- `") {
                let e = &rest[..rest.find('`').unwrap_or(rest.len())];
                if !(e.starts_with("ERR ") || e.starts_with("WRONGTYPE ")) {
                    continue;
                }
                if ours {
                    out.entry(command.clone()).or_default().push(e.to_string());
                } else if page == "spread" && command.is_empty() {
                    spread_option.push(e.replace("<family>", family));
                }
            }
        }
    }
    for c in with_spread {
        out.entry(c)
            .or_default()
            .extend(spread_option.iter().cloned());
    }
    out
}

/// Returns true when `error` is the reference line `pattern`, each `<…>`
/// of the pattern standing for any text.
fn matches(pattern: &str, error: &str) -> bool {
    let mut pieces: Vec<&str> = Vec::new();
    let mut rest = pattern;
    while let Some(open) = rest.find('<') {
        let Some(close) = rest[open..].find('>') else {
            break;
        };
        pieces.push(&rest[..open]);
        rest = &rest[open + close + 1..];
    }
    pieces.push(rest);
    let (first, last) = (pieces[0], pieces[pieces.len() - 1]);
    if pieces.len() == 1 {
        return error == pattern;
    }
    if !error.starts_with(first) || !error.ends_with(last) {
        return false;
    }
    let mut at = first.len();
    let end = error.len() - last.len();
    for p in &pieces[1..pieces.len() - 1] {
        match error[at..end].find(p) {
            Some(i) => at += i + p.len(),
            None => return false,
        }
    }
    at <= end
}

#[test]
fn matches_reads_placeholders_as_any_text() {
    assert!(matches("ERR x", "ERR x"));
    assert!(!matches("ERR x", "ERR xy"));
    assert!(matches(
        "ERR lock: corrupt data in '<key>' field '<field>'",
        "ERR lock: corrupt data in 's{c}' field 'holder:b'"
    ));
    assert!(!matches(
        "ERR lock: corrupt data in '<key>' field '<field>'",
        "ERR lock: corrupt data in 's{c}'"
    ));
    assert!(matches(
        "ERR wrong number of arguments for 'lock.acquire' command",
        "ERR wrong number of arguments for 'lock.acquire' command"
    ));
}

/// Returns a case's arguments, `<1MiB+1>` standing for a payload one
/// byte over DELAYQ's limit (too long to write out).
fn expand(case: &[&str]) -> Vec<String> {
    case.iter()
        .map(|a| match *a {
            "<1MiB+1>" => "x".repeat((1 << 20) + 1),
            a => a.to_string(),
        })
        .collect()
}

/// Returns the names (lower case) of the module's write commands.
fn write_commands(c: &mut Connection) -> Vec<String> {
    let names: Vec<String> = redis::cmd("COMMAND")
        .arg("LIST")
        .arg("FILTERBY")
        .arg("MODULE")
        .arg("hotpath")
        .query(c)
        .unwrap();
    let mut out = Vec::new();
    for n in names {
        let info: Vec<Value> = redis::cmd("COMMAND").arg("INFO").arg(&n).query(c).unwrap();
        let Some(Value::Array(fields)) = info.first() else {
            continue;
        };
        let write = matches!(fields.get(2), Some(Value::Array(flags)) if flags.iter().any(|f| {
            matches!(f, Value::SimpleString(s) if s == "write")
                || matches!(f, Value::BulkString(b) if b == b"write")
        }));
        if write {
            out.push(n.to_ascii_lowercase());
        }
    }
    out.sort();
    out
}

#[test]
fn every_error_of_a_write_command_leaves_the_data_unchanged() {
    let srv = Server::start();
    let mut c = srv.conn();
    let writes = write_commands(&mut c);
    for family in FAMILIES {
        let reference = reference_errors(family.name);
        for step in family.setup {
            let r = cmd(&mut c, step);
            assert!(r.is_ok(), "{}: setup {step:?}: {}", family.name, show(&r));
        }
        let before = srv.digest();
        for case in family.errors {
            let name = case[0].to_ascii_lowercase();
            let args = expand(case);
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let r = cmd(&mut c, &args);
            let Err(e) = &r else {
                panic!("{case:?} should fail, replied {}", show(&r));
            };
            let e = error_text(e);
            let listed = reference.get(&name).map(Vec::as_slice).unwrap_or(&[]);
            assert!(
                listed.iter().any(|p| matches(p, &e)),
                "{case:?}: '{e}' is not an error docs/reference/{}.md lists for {name}",
                family.name
            );
            assert_eq!(srv.digest(), before, "{case:?} ('{e}') changed the data");
        }
        // Every write command of the family has a case.
        let prefix = format!("{}.", family.name);
        for w in writes.iter().filter(|w| w.starts_with(&prefix)) {
            assert!(
                family.errors.iter().any(|e| e[0].eq_ignore_ascii_case(w)),
                "{w} has no error case here"
            );
        }
    }
    // Every family with a write command is in the list: a new family
    // brings its error cases.
    for w in &writes {
        let family = w.split('.').next().unwrap_or_default();
        assert!(
            FAMILIES.iter().any(|f| f.name == family),
            "{w}: the family '{family}' has no error cases here"
        );
    }
}
