//! `IDEM token`, what tests/idem_token.rs left out: the Rust client's
//! static `Rate::multi_idem` (module and Functions-library backends), and
//! STOCK.RESTOCK and REDPACKET.SPLIT: a retry replays, a reuse with other
//! arguments is refused, and neither writes anything.

use crate::common;

use common::*;
use hotpath_client::*;

/// A NOW far ahead (2030-01-01), so that explicit instants stay valid.
const T0: i64 = 1_893_456_000_000;

fn rate_multi_idem_on(c: &mut redis::Connection, tag: &str, module: bool) {
    let (a, b) = (format!("{{{tag}}}a"), format!("{{{tag}}}b"));
    let rules = [(a.as_str(), 2, 60_000), (b.as_str(), 5, 60_000)];
    let o = RateOptions::default();
    let first = Rate::multi_idem(c, &rules, &o, Some(T0), "t1").unwrap();
    assert!(first.allowed);
    assert_eq!(first.remaining, 1);
    for _ in 0..3 {
        let again = Rate::multi_idem(c, &rules, &o, Some(T0), "t1").unwrap();
        assert_eq!(again, first, "{tag}: replayed, nothing consumed");
    }
    // A new token consumes; the pipeline form (the module's command)
    // sends the token too.
    let second = Rate::multi_idem(c, &rules, &o, Some(T0), "t2").unwrap();
    assert_eq!(second.remaining, 0);
    if module {
        let cmd = Rate::multi_idem_cmd(&rules, &o, Some(T0), "t2");
        let v: redis::Value = cmd.query(c).unwrap();
        let text = format!("{v:?}");
        assert!(text.contains("int(0)") || text.contains("Int(0)"), "{text}");
    }
    // Same token, other arguments: refused.
    let cost = RateOptions {
        cost: Some(2),
        ..RateOptions::default()
    };
    let e = Rate::multi_idem(c, &rules, &cost, Some(T0), "t1").unwrap_err();
    assert!(
        e.to_string()
            .contains("IDEM token reused with other arguments"),
        "{e}"
    );
    // Without a token it consumes as before: the third call is refused.
    assert!(!Rate::multi(c, &rules, &o, Some(T0)).unwrap().allowed);
}

#[test]
fn rust_rate_multi_takes_a_token_on_the_module_and_the_twins() {
    let s = Server::start();
    rate_multi_idem_on(&mut s.conn(), "m", true);
    let bare = Server::start_bare(&[]);
    let mut c = bare.conn();
    load_library(&mut c);
    rate_multi_idem_on(&mut c, "l", false);
}

/// The data of every key but the token stores.
fn data(c: &mut redis::Connection) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(c).unwrap();
    keys.retain(|k| !k.ends_with(":idem"));
    keys.sort();
    keys.iter().flat_map(|k| dump_keys(c, k)).collect()
}

#[test]
fn restock_and_split_replay_refuse_and_write_nothing() {
    let s = Server::start();
    let mut c = s.conn();
    let t = T0.to_string();
    run(&mut c, &["STOCK.CREATE", "st", "10", "NOW", &t]);
    let cases: [(&[&str], &[&str]); 2] = [
        (
            &["STOCK.RESTOCK", "st", "5", "NOW", &t, "IDEM", "r1"],
            &["STOCK.RESTOCK", "st", "6", "NOW", &t, "IDEM", "r1"],
        ),
        (
            &[
                "REDPACKET.SPLIT",
                "rp",
                "1000",
                "4",
                "NOW",
                &t,
                "IDEM",
                "s1",
            ],
            &[
                "REDPACKET.SPLIT",
                "rp",
                "1000",
                "5",
                "NOW",
                &t,
                "IDEM",
                "s1",
            ],
        ),
    ];
    for (first, other) in cases {
        let a = run(&mut c, first);
        assert!(!a.starts_with("ERR"), "{first:?}: {a}");
        let before = data(&mut c);
        assert_eq!(run(&mut c, first), a, "{first:?}: replayed");
        assert_eq!(data(&mut c), before, "{first:?}: the replay wrote nothing");
        let e = run(&mut c, other);
        assert!(e.contains("IDEM token reused with other arguments"), "{e}");
        assert_eq!(data(&mut c), before, "{other:?}: the refusal wrote nothing");
    }
}
