//! The randomized differential test of the Lua twins (issue 16): the same
//! seeded random calls go to the module on one server and to the twins on
//! two plain servers (the EVALSHA scripts on one, the Functions library on
//! the other); every reply must be the same bytes, RESP type included, and
//! every key the same afterwards (type, content, expiry). Faults go into
//! the families' keys, one or two at a time, in the random streams, and
//! every single fault and every pair of faults is tried by the sweep.
//! tests/differential/harness.rs describes the machinery.
//!
//! `make test` runs a few thousand calls per family with fixed seeds
//! (`DIFF_SEED` overrides them, `DIFF_TRACE=1` prints every step);
//! `make differential` runs the long campaign with a fresh seed, which it
//! prints first.

use crate::common;

#[path = "differential/harness.rs"]
mod harness;

// Every other tests/differential/<family>.rs file is a family: build.rs
// writes its module, its two tests (`<family>_random_calls`,
// `<family>_every_fault_and_pair`) and its line in `CAMPAIGN` (a new family
// needs no line here; tests/families.rs checks that every family has them).
include!(concat!(env!("OUT_DIR"), "/differential_families.rs"));

use harness::{random, seed_or, sweep, Family, Stats};

/// Calls per family in `make test`.
const CALLS: usize = 3000;

fn report<F: Family>(what: &str, seed: Option<u64>, st: &Stats) {
    eprintln!(
        "differential {} {what}{}: {} calls ({} unpinned, {} error replies), {} faults",
        F::NAME,
        seed.map(|s| format!(" seed {s}")).unwrap_or_default(),
        st.calls,
        st.unpinned,
        st.errors,
        st.faults
    );
}

/// The family's random stream, from its `SEED` unless `DIFF_SEED` is set.
fn stream<F: Family>() {
    let seed = seed_or(F::SEED);
    let calls = std::env::var("DIFF_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(CALLS);
    let st = random::<F>(seed, calls);
    report::<F>("random", Some(seed), &st);
    assert!(st.faults > 0 && st.unpinned > 0 && st.errors > 0, "{st:?}");
}

fn faults<F: Family>() {
    let st = sweep::<F>();
    report::<F>("fault sweep", None, &st);
    assert!(st.faults > 0, "{st:?}");
}

/// RANDOM splits, which the stream copies from the module, hold their
/// invariants on every side: `count` shares of at least a cent summing to
/// the total, also past 2^31 cents (where Lua's math.random(m, n) fails:
/// issue 16) and up to 2^53 − 1.
#[test]
fn redpacket_random_splits_keep_their_invariants() {
    let trio = harness::Trio::<redpacket::Redpacket>::start();
    let totals: [i64; 6] = [
        2_147_483_647,
        2_147_483_649,
        4_294_967_296,
        (1 << 52) + 1,
        (1 << 53) - 2,
        (1 << 53) - 1,
    ];
    for (i, total) in totals.into_iter().enumerate() {
        for count in [2i64, 3, 7, 1000] {
            let base = format!("rs:{{{i}-{count}}}");
            let shares = trio.on_every_side(|c| {
                let r = c.call(harness::argv(&[
                    "REDPACKET.SPLIT",
                    &base,
                    &total.to_string(),
                    &count.to_string(),
                    "NOW",
                    "4102444800000",
                ]));
                assert_eq!(r.int(), Some(count), "{r}");
                let pool = c.call(harness::argv(&[
                    "LRANGE",
                    &format!("{base}:pool"),
                    "0",
                    "-1",
                ]));
                pool.items()
                    .iter()
                    .map(|x| {
                        std::str::from_utf8(x.bytes().unwrap())
                            .unwrap()
                            .parse::<i64>()
                            .unwrap()
                    })
                    .collect::<Vec<i64>>()
            });
            for (side, v) in shares {
                assert_eq!(v.len() as i64, count, "{side} {total} {count}");
                assert!(v.iter().all(|&x| x >= 1), "{side} {total} {count}: {v:?}");
                assert_eq!(
                    v.iter().map(|&x| x as i128).sum::<i128>(),
                    total as i128,
                    "{side} {total} {count}"
                );
            }
        }
    }
}

/// The module's errors carry key names as UTF-8, as Redis's and the
/// twins' do (the redis-module crate's reply narrowed each character to a
/// byte: `é` went out as 0xE9; found by the differential test).
#[test]
fn module_errors_are_utf8() {
    let srv = common::Server::start();
    let mut c = harness::Conn::open(srv.port);
    c.call(harness::argv(&["SET", "lock:\u{e9}\u{20ac}", "junk"]));
    let r = c.call(harness::argv(&["LOCK.INFO", "lock:\u{e9}\u{20ac}"]));
    assert_eq!(
        r.raw,
        "-ERR lock: corrupt data in 'lock:\u{e9}\u{20ac}'\r\n".as_bytes(),
        "{r}"
    );
    c.call(harness::argv(&["HSET", "q:jobs", "a\r\nb\u{e9}", "junk"]));
    c.call(harness::argv(&["ZADD", "q:due", "0", "a\r\nb\u{e9}"]));
    let r = c.call(harness::argv(&["DELAYQ.POLL", "q", "10", "NOW", "5"]));
    assert_eq!(
        r.raw,
        "-ERR delayq: corrupt data in 'q:jobs' field 'a??b\u{e9}'\r\n".as_bytes(),
        "{r}"
    );
}

/// One family's long run, from `seed`.
fn campaign_one<F: Family>(seed: u64, calls: usize) {
    let st = random::<F>(seed, calls);
    report::<F>("campaign", Some(seed), &st);
}

/// The long campaign (`make differential`): `DIFF_CALLS` calls per family
/// (default 200,000), from a fresh seed unless `DIFF_SEED` is set.
#[test]
#[ignore]
fn campaign() {
    let seed = std::env::var("DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                % 1_000_000_000
        });
    let calls: usize = std::env::var("DIFF_CALLS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(200_000);
    eprintln!("differential campaign: seed {seed}, {calls} calls per family (rerun: DIFF_SEED={seed} make differential)");
    for (i, run) in CAMPAIGN.iter().enumerate() {
        run(seed.wrapping_add(i as u64), calls);
    }
}
