//! LOCK's error cases for tests/no_partial_writes.rs: the writes
//! that make its live state (and hand-damaged keys), then one error case
//! (at least) per write command. build.rs lists this file; a family
//! without one fails `no_partial_writes::` and `families::`.

use super::{Family, T};

pub const FAMILY: Family = Family {
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
};
