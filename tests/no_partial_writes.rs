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
//! has none). POLL, REDPACKET, LOCK and RATE are in the list; the other
//! families join it as their commands move onto plans.

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

const FAMILIES: &[Family] = &[
    Family {
        name: "poll",
        setup: &[
            &[
                "POLL.CREATE",
                "p{1}",
                "CANDIDATES",
                "2",
                "a",
                "b",
                "TTL",
                "3600",
            ],
            &["POLL.VOTE", "p{1}", "u", "a"],
            &[
                "POLL.CREATE",
                "p{m}",
                "MODE",
                "MULTI",
                "MAXVOTES",
                "1",
                "CANDIDATES",
                "2",
                "a",
                "b",
            ],
            &["POLL.VOTE", "p{m}", "u", "a"],
            &[
                "POLL.CREATE",
                "p{w}",
                "START",
                "2000000000000",
                "END",
                "2000000001000",
            ],
            &["SET", "p{t}:board", "x"],
            &["SET", "p{s}:meta", "x"],
            &["HSET", "p{c}:meta", "rules", "junk"],
            &["ZADD", "p{o}:board", "9007199254740992", "a"],
        ],
        errors: &[
            &["POLL.CREATE", "p{1}"],
            &["POLL.CREATE", "p{2}", "MAXVOTES", "2"],
            &[
                "POLL.CREATE",
                "p{2}",
                "MODE",
                "MULTI",
                "CANDIDATES",
                "1",
                "a:b",
            ],
            &["POLL.CREATE", "p{2}", "CANDIDATES", "2", "a", ""],
            &["POLL.CREATE", "p{2}", "START", "5", "END", "5"],
            &["POLL.CREATE", "p{2}", "MODE", "SOMETIMES"],
            &["POLL.CREATE", "p{2}", "CANDIDATES", "3", "a", "b"],
            &["POLL.CREATE", "p{2}", "TTL", "0"],
            &["POLL.CREATE", "p{t}"],
            &["POLL.CREATE", "p{1}", "SPREAD", "0"],
            &["POLL.VOTE", "p{1}", "u2", "zz"],
            &["POLL.VOTE", "p{1}", "", "a"],
            &["POLL.VOTE", "p{1}", "u2", ""],
            &["POLL.VOTE", "p{1}", "u2", "a", "NOW", "x"],
            &["POLL.VOTE", "p{1}", "u2", "a", "LATER", "5"],
            &["POLL.VOTE", "p{m}", "u", "b"],
            &["POLL.VOTE", "p{m}", "u2", "a:b"],
            &["POLL.VOTE", "p{w}", "u", "a"],
            &["POLL.VOTE", "p{t}", "u", "a"],
            &["POLL.VOTE", "p{c}", "u", "a"],
            &["POLL.VOTE", "p{o}", "u", "a"],
            &["POLL.VOTE", "p{1}"],
            &["POLL.REVOKE", "p{1}", ""],
            &["POLL.REVOKE", "p{1}", "u", "NOW", "x"],
            &["POLL.REVOKE", "p{c}", "u"],
            &["POLL.REVOKE", "p{t}", "u"],
            &["POLL.SYNC", "p{t}"],
            &["POLL.SYNC"],
            &["POLL.SYNCACK", "p{s}", "1"],
            &["POLL.SYNCACK", "p{1}", "x"],
            &["POLL.SYNC", "p{c}"],
            &["POLL.SYNCACK", "p{1}"],
        ],
    },
    Family {
        name: "redpacket",
        setup: &[
            &[
                "REDPACKET.SPLIT",
                "r{1}",
                "100",
                "3",
                "MODE",
                "EQUAL",
                "TTL",
                "3600",
            ],
            &["REDPACKET.GRAB", "r{1}", "u0"],
            &["REDPACKET.SPLIT", "r{p}", "100", "3", "MODE", "EQUAL"],
            &["LSET", "r{p}:pool", "0", "x"],
            &["REDPACKET.SPLIT", "r{l}", "100", "3", "MODE", "EQUAL"],
            &["HSET", "r{l}:meta", "left_cents", "5"],
            &["REDPACKET.SPLIT", "r{g}", "100", "3", "MODE", "EQUAL"],
            &["HSET", "r{g}:grabbed", "u0", "-5"],
            &["REDPACKET.SPLIT", "r{m}", "100", "3", "MODE", "EQUAL"],
            &["HSET", "r{m}:meta", "total", "x"],
            &["SET", "r{t}:pool", "x"],
        ],
        errors: &[
            &["REDPACKET.SPLIT", "r{1}", "100", "3"],
            &["REDPACKET.SPLIT", "r{2}", "1", "2"],
            &["REDPACKET.SPLIT", "r{2}", "100", "0"],
            &["REDPACKET.SPLIT", "r{2}", "100", "2", "TTL", "0"],
            &["REDPACKET.SPLIT", "r{2}", "100", "2", "MODE", "BOTH"],
            &["REDPACKET.SPLIT", "r{2}", "x", "2"],
            &["REDPACKET.SPLIT", "r{t}", "100", "2"],
            &["REDPACKET.SPLIT", "r{2}", "100"],
            &["REDPACKET.GRAB", "r{1}", ""],
            &["REDPACKET.GRAB", "r{1}", "u1", "NOW"],
            &["REDPACKET.GRAB", "r{1}", "u1", "NOW", "-1"],
            &["REDPACKET.GRAB", "r{p}", "u1"],
            &["REDPACKET.GRAB", "r{l}", "u1"],
            &["REDPACKET.GRAB", "r{g}", "u0"],
            &["REDPACKET.GRAB", "r{t}", "u1"],
            &["REDPACKET.REFUND", "r{m}"],
            &["REDPACKET.REFUND", "r{t}"],
            &["REDPACKET.REFUND"],
        ],
    },
    Family {
        name: "lock",
        setup: &[
            &["LOCK.ACQUIRE", "k{1}", "a", "60000", "NOW", T],
            &["LOCK.ACQUIRE", "s{1}", "a", "60000", "LIMIT", "3", "NOW", T],
            &["SET", "k{c}", "junk"],
            &[
                "HSET",
                "s{c}",
                "fence",
                "3",
                "limit",
                "2",
                "next",
                "0",
                "holder:b",
                "1:1:nope:0",
            ],
            &["SET", "k{o}", "9007199254740991:0:0:0:"],
            &["RPUSH", "k{t}", "x"],
        ],
        errors: &[
            &["LOCK.ACQUIRE", "k{1}", "b", "1000", "LIMIT", "2", "NOW", T],
            &["LOCK.ACQUIRE", "s{1}", "b", "1000", "LIMIT", "4", "NOW", T],
            &["LOCK.ACQUIRE", "s{1}", "b", "1000", "LIMIT", "1", "NOW", T],
            &["LOCK.ACQUIRE", "k{1}", "", "10"],
            &["LOCK.ACQUIRE", "k{1}", "a", "0"],
            &["LOCK.ACQUIRE", "k{1}", "a", "10", "FAIR"],
            &[
                "LOCK.ACQUIRE",
                "k{1}",
                "a",
                "10",
                "LIMIT",
                "1",
                "LIMIT",
                "1",
            ],
            &["LOCK.ACQUIRE", "k{c}", "a", "10", "NOW", T],
            &["LOCK.ACQUIRE", "s{c}", "a", "10", "NOW", T],
            &["LOCK.ACQUIRE", "k{o}", "a", "10", "NOW", T],
            &["LOCK.ACQUIRE", "k{t}", "a", "10", "NOW", T],
            &["LOCK.ACQUIRE", "k{1}"],
            &["LOCK.RELEASE", "k{1}", ""],
            &["LOCK.RELEASE", "k{1}", "a", "NOW", "-1"],
            &["LOCK.RELEASE", "k{c}", "a"],
            &["LOCK.RELEASE", "k{t}", "a"],
            &["LOCK.RENEW", "k{1}", "a", "x"],
            &["LOCK.RENEW", "k{1}", "", "5"],
            &["LOCK.RENEW", "k{1}", "a", "10", "NOW", T, "NOW", T],
            &["LOCK.RENEW", "k{c}", "a", "10"],
            &["LOCK.RENEW", "s{c}", "b", "10", "NOW", T],
            &["LOCK.RENEW", "k{t}", "a", "10"],
        ],
    },
    Family {
        name: "rate",
        setup: &[
            &["RATE.CHECK", "q{1}", "10", "60000", "NOW", T],
            &[
                "RATE.CHECK",
                "q{f}",
                "10",
                "60000",
                "ALGO",
                "FIXED",
                "NOW",
                T,
            ],
            &["RATE.CHECK", "q{l}", "10", "60000", "ALGO", "LOG", "NOW", T],
            &[
                "RATE.CHECK",
                "q{b}",
                "10",
                "60000",
                "ALGO",
                "BUCKET",
                "NOW",
                T,
            ],
            &["RATE.THROTTLE", "q{t}", "5", "10", "60", "NOW", T],
            &["SET", "q{c}", "g:junk"],
            &["HSET", "q{h}", "algo", "bucket", "tokens", "x"],
            &["RPUSH", "q{w}", "x"],
        ],
        errors: &[
            &[
                "RATE.CHECK",
                "q{1}",
                "10",
                "60000",
                "ALGO",
                "FIXED",
                "NOW",
                T,
            ],
            &["RATE.CHECK", "q{f}", "10", "60000", "NOW", T],
            &["RATE.CHECK", "q{l}", "10", "60000", "NOW", T],
            &[
                "RATE.CHECK",
                "q{1}",
                "10",
                "60000",
                "ALGO",
                "FIXED",
                "BURST",
                "3",
            ],
            &["RATE.CHECK", "q{l}", "100001", "60000", "ALGO", "LOG"],
            &[
                "RATE.CHECK",
                "q{l}",
                "10",
                "60000",
                "ALGO",
                "LOG",
                "COST",
                "101",
            ],
            &["RATE.CHECK", "q{1}", "1", "4500000000000", "BURST", "2"],
            &["RATE.CHECK", "q{1}", "0", "60000"],
            &["RATE.CHECK", "q{1}", "10", "60000", "ALGO", "SOMETIMES"],
            &["RATE.CHECK", "q{1}", "10", "60000", "NOW"],
            &["RATE.CHECK", "q{c}", "10", "60000", "NOW", T],
            &[
                "RATE.CHECK",
                "q{h}",
                "10",
                "60000",
                "ALGO",
                "BUCKET",
                "NOW",
                T,
            ],
            &["RATE.CHECK", "q{w}", "10", "60000"],
            &["RATE.CHECK", "q{1}", "10"],
            &[
                "RATE.MULTI",
                "2",
                "q{1}",
                "q{f}",
                "LIMITS",
                "10",
                "60000",
                "10",
                "60000",
                "NOW",
                T,
            ],
            &[
                "RATE.MULTI",
                "2",
                "q{1}",
                "q{w}",
                "LIMITS",
                "10",
                "60000",
                "10",
                "60000",
            ],
            &[
                "RATE.MULTI",
                "2",
                "q{1}",
                "q{c}",
                "LIMITS",
                "10",
                "60000",
                "10",
                "60000",
                "NOW",
                T,
            ],
            &["RATE.MULTI", "2", "q{1}", "q{2}", "LIMITS", "10", "60000"],
            &["RATE.MULTI", "5", "q{1}", "LIMITS", "10", "60000"],
            &["RATE.MULTI", "1", "q{1}", "LIMITS", "10", "x"],
            &["RATE.THROTTLE", "q{f}", "5", "10", "60", "NOW", T],
            &["RATE.THROTTLE", "q{t}", "5", "10", "x"],
            &["RATE.THROTTLE", "q{c}", "5", "10", "60", "NOW", T],
            &["RATE.THROTTLE", "q{w}", "5", "10", "60"],
            &["RATE.THROTTLE", "q{t}", "5", "10", "60", "1", "2"],
            &["RATE.RESET", "q{w}"],
            &["RATE.RESET"],
        ],
    },
    Family {
        name: "idem",
        setup: &[
            &["IDEM.BEGIN", "i{1}", "fp", "30000", "NOW", T],
            &["IDEM.COMPLETE", "i{1}", T, "res", "NOW", T],
            &["IDEM.BEGIN", "i{r}", "fp", "30000", "NOW", T],
            &["HSET", "i{c}", "state", "junk", "fp", "fp", "fence", "x"],
            &["SET", "i{s}", "x"],
        ],
        errors: &[
            &["IDEM.BEGIN", "i{2}", "", "1000"],
            &["IDEM.BEGIN", "i{2}", "fp", "x"],
            &["IDEM.BEGIN", "i{2}", "fp", "1000", "BOGUS"],
            &["IDEM.BEGIN", "i{2}", "fp", "1000", "TTL"],
            &["IDEM.BEGIN", "i{c}", "fp", "1000", "NOW", T],
            &["IDEM.BEGIN", "i{s}", "fp", "1000", "NOW", T],
            &["IDEM.BEGIN", "i{2}"],
            &["IDEM.COMPLETE", "i{9}", "1", "r", "NOW", T],
            &["IDEM.COMPLETE", "i{1}", T, "other", "NOW", T],
            &["IDEM.COMPLETE", "i{1}", "5", "r", "NOW", T],
            &["IDEM.COMPLETE", "i{r}", "x", "r"],
            &["IDEM.COMPLETE", "i{c}", "1", "r", "NOW", T],
            &["IDEM.ABORT", "i{r}", "x"],
            &["IDEM.ABORT", "i{c}", "1"],
            &["IDEM.ABORT", "i{s}", "1"],
            &["IDEM.ABORT", "i{r}"],
        ],
    },
    Family {
        name: "stock",
        setup: &[
            &[
                "STOCK.CREATE",
                "sk{1}",
                "5",
                "LIMIT",
                "2",
                "LEASE",
                "60000",
                "NOW",
                T,
            ],
            &["STOCK.RESERVE", "sk{1}", "u", "o1", "1", "NOW", T],
            &["STOCK.CONFIRM", "sk{1}", "o1", "NOW", T],
            &["STOCK.RESERVE", "sk{1}", "v", "o2", "1", "NOW", T],
            &["SET", "sk{c}", "junk"],
            // A spread stock of 3 shards: shard 0 holds the pool; an open
            // refill t1 applied on shard 2, an open handback t2.
            &["STOCK.CREATE", "{44Z}sku:7", "10", "SPREAD", "3"],
            &["STOCK.CREATE", "{6CK}sku:7", "10", "SPREAD", "3"],
            &[
                "STOCK.TRANSFER",
                "{44Z}sku:7",
                "t1",
                "2",
                "4",
                "SPREAD",
                "3",
            ],
            &["STOCK.APPLY", "{6CK}sku:7", "t1", "4", "SPREAD", "3"],
            &[
                "STOCK.TRANSFER",
                "{44Z}sku:7",
                "t2",
                "2",
                "-1",
                "SPREAD",
                "3",
            ],
            // Another, whose pool was damaged by hand.
            &["STOCK.CREATE", "{44U}sku:8", "10", "SPREAD", "3"],
            &["SET", "{44U}sku:8:pool", "junk"],
        ],
        errors: &[
            &["STOCK.CREATE", "sk{1}", "5"],
            &["STOCK.CREATE", "sk{2}", "x"],
            &["STOCK.CREATE", "sk{2}", "5", "BOGUS", "1"],
            &["STOCK.CREATE", "sk{2}"],
            &["STOCK.RESERVE", "sk{1}", "", "o9", "1", "NOW", T],
            &["STOCK.RESERVE", "sk{1}", "u", "", "1", "NOW", T],
            &["STOCK.RESERVE", "sk{9}", "u", "o9", "1", "NOW", T],
            &["STOCK.RESERVE", "sk{1}", "w", "o2", "1", "NOW", T],
            &["STOCK.RESERVE", "sk{1}", "u", "o9", "0", "NOW", T],
            &["STOCK.RESERVE", "sk{c}", "u", "o9", "1", "NOW", T],
            &["STOCK.CONFIRM", "sk{1}", "o9", "NOW", T],
            &["STOCK.CONFIRM", "sk{9}", "o1", "NOW", T],
            &["STOCK.CONFIRM", "sk{1}", "o2", "NOW", "1900000070000"],
            &["STOCK.CONFIRM", "sk{1}", "", "NOW", T],
            &["STOCK.CONFIRM", "sk{1}", "o2", "NOW", T, "NOW", T],
            &["STOCK.RELEASE", "sk{1}", "o1"],
            &["STOCK.RELEASE", "sk{9}", "o1"],
            &["STOCK.RELEASE", "sk{1}", ""],
            &["STOCK.RESTOCK", "sk{1}", "-100", "NOW", T],
            &["STOCK.RESTOCK", "sk{1}", "x"],
            &["STOCK.RESTOCK", "sk{9}", "1", "NOW", T],
            &["STOCK.RESTOCK", "sk{c}", "1", "NOW", T],
            &["STOCK.RESTOCK", "{6CK}sku:7", "1", "SPREAD", "3"],
            &["STOCK.CREATE", "{44Z}sku:7", "10", "SPREAD", "3"],
            &[
                "STOCK.TRANSFER",
                "{44Z}sku:7",
                "t1",
                "1",
                "4",
                "SPREAD",
                "3",
            ],
            &[
                "STOCK.TRANSFER",
                "{44Z}sku:7",
                "t1",
                "2",
                "5",
                "SPREAD",
                "3",
            ],
            &["STOCK.TRANSFER", "{44Z}sku:7", "", "1", "4", "SPREAD", "3"],
            &[
                "STOCK.TRANSFER",
                "{44Z}sku:7",
                "t9",
                "1",
                "0",
                "SPREAD",
                "3",
            ],
            &[
                "STOCK.TRANSFER",
                "{44Z}sku:7",
                "t9",
                "3",
                "1",
                "SPREAD",
                "3",
            ],
            &[
                "STOCK.TRANSFER",
                "{44Z}sku:7",
                "t9",
                "1",
                "x",
                "SPREAD",
                "3",
            ],
            &[
                "STOCK.TRANSFER",
                "{6CK}sku:7",
                "t9",
                "1",
                "1",
                "SPREAD",
                "3",
            ],
            &[
                "STOCK.TRANSFER",
                "{44Z}sku:7",
                "t9",
                "1",
                "1",
                "SPREAD",
                "3",
                "X",
            ],
            &["STOCK.TRANSFER", "{44Z}sku:7", "t9", "1", "1", "COUNT", "3"],
            &[
                "STOCK.TRANSFER",
                "{44U}sku:8",
                "t9",
                "1",
                "1",
                "SPREAD",
                "3",
            ],
            &["STOCK.APPLY", "{6CK}sku:7", "t1", "5", "SPREAD", "3"],
            &["STOCK.APPLY", "{6CK}sku:7", "t1", "-4", "SPREAD", "3"],
            &["STOCK.APPLY", "{6CK}sku:7", "", "4", "SPREAD", "3"],
            &["STOCK.APPLY", "{6CK}sku:7", "t1", "4"],
            &["STOCK.APPLY", "{6CK}sku:7", "t1", "4", "NOW", "3"],
            &["STOCK.SETTLE", "{44Z}sku:7", "t1", "3", "SPREAD", "3"],
            &["STOCK.SETTLE", "{44Z}sku:7", "t9", "4", "SPREAD", "3"],
            &["STOCK.SETTLE", "{44Z}sku:7", "t2", "-2", "SPREAD", "3"],
            &["STOCK.SETTLE", "{44Z}sku:7", "t2", "1", "SPREAD", "3"],
            &["STOCK.SETTLE", "{6CK}sku:7", "t1", "4", "SPREAD", "3"],
            &["STOCK.SETTLE", "{44U}sku:8", "t1", "4", "SPREAD", "3"],
        ],
    },
];

/// The families whose write commands are not in [`FAMILIES`] yet (their
/// commands move onto plans in their own branches). A family in neither
/// list fails the test: a new family brings its error cases.
const NOT_YET: &[&str] = &["like", "luckybag", "rank", "delayq"];

/// Reads the `Errors` lines of every command of `docs/reference/<family>.md`:
/// command (lower case) -> the error texts listed, `<…>` standing for any
/// value.
fn reference_errors(family: &str) -> BTreeMap<String, Vec<String>> {
    let path = format!("{}/docs/reference/{family}.md", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut out: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut command = String::new();
    for line in text.lines() {
        if let Some(h) = line.strip_prefix("## ") {
            command = h.trim().to_ascii_lowercase();
        } else if let Some(rest) = line.strip_prefix("- `") {
            let e = &rest[..rest.find('`').unwrap_or(rest.len())];
            if e.starts_with("ERR ") || e.starts_with("WRONGTYPE ") {
                out.entry(command.clone()).or_default().push(e.to_string());
            }
        }
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
            let r = cmd(&mut c, case);
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
    // Every family with a write command is in the list (or waits in
    // NOT_YET).
    for w in &writes {
        let family = w.split('.').next().unwrap_or_default();
        assert!(
            FAMILIES.iter().any(|f| f.name == family) || NOT_YET.contains(&family),
            "{w}: the family '{family}' has no error cases here"
        );
    }
}
