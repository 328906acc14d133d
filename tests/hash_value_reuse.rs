//! Hash values written from bytes go through one reused Redis string per
//! length (keys/hash.rs `with_value`), rewritten in place between writes:
//! safe only because `RedisModule_HashSet` copies the value and keeps no
//! reference to it. Many values of one length, written one after the
//! other into listpack and hashtable hashes and read back afterwards, must
//! each keep its own bytes, on a real server (Redis and Valkey).

use crate::common;

use common::*;
use redis::Value;

const T0: i64 = 1_764_720_000_000;

/// A payload of `len` bytes, different for every `(len, i)`.
fn payload(len: usize, i: usize) -> String {
    let tag = format!("{i}-");
    (0..len)
        .map(|k| {
            let b = tag.as_bytes()[k % tag.len()];
            (b'a' + (b + k as u8 + i as u8) % 26) as char
        })
        .collect()
}

fn peek_payload(c: &mut Connection, q: &str, id: &str) -> Vec<u8> {
    let v: Vec<Value> = redis::cmd("DELAYQ.PEEK")
        .arg(q)
        .arg("ID")
        .arg(id)
        .query(c)
        .unwrap();
    match &v[..] {
        [Value::BulkString(got), Value::BulkString(p), ..] if got == id.as_bytes() => p.clone(),
        other => panic!("{q} {id}: {other:?}"),
    }
}

#[test]
fn values_of_one_length_keep_their_own_bytes() {
    let s = Server::start();
    let mut c = s.conn();
    let at = (T0 + 60_000).to_string();
    let now = T0.to_string();
    // Records short enough for a listpack, over hash-max-listpack-value
    // (a hashtable), at and over the reused strings' longest length, and
    // one length written into both kinds of hash in turn.
    let lengths = [1usize, 7, 30, 90, 110, 127, 128, 200];
    let n = 12;
    for &len in &lengths {
        for i in 0..n {
            for q in [format!("q{len}"), "mixed".to_string()] {
                let id = format!("j{len}-{i}");
                let p = payload(len, i);
                let added = run(&mut c, &["DELAYQ.ADD", &q, &id, &p, "AT", &at, "NOW", &now]);
                assert_eq!(added, "1", "{q} {id}");
            }
        }
    }
    // Replaced in place: an existing field rewritten with a value of the
    // length just used for another.
    for i in 0..n {
        let p = payload(30, i + 100);
        let id = format!("j30-{i}");
        run(
            &mut c,
            &[
                "DELAYQ.ADD",
                "q30",
                &id,
                &p,
                "AT",
                &at,
                "REPLACE",
                "NOW",
                &now,
            ],
        );
    }
    for &len in &lengths {
        for i in 0..n {
            let id = format!("j{len}-{i}");
            let want = payload(len, if len == 30 { i + 100 } else { i });
            assert_eq!(
                peek_payload(&mut c, &format!("q{len}"), &id),
                want.as_bytes(),
                "q{len} {id}"
            );
            assert_eq!(
                peek_payload(&mut c, "mixed", &id),
                payload(len, i).as_bytes(),
                "mixed {id}"
            );
        }
    }
    let enc = |c: &mut Connection, k: &str| run(c, &["OBJECT", "ENCODING", k]);
    assert_eq!(enc(&mut c, "q7:jobs"), "listpack");
    assert_eq!(enc(&mut c, "q110:jobs"), "hashtable");
    assert_eq!(enc(&mut c, "mixed:jobs"), "hashtable");
}
