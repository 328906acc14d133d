//! REDPACKET's error cases for tests/no_partial_writes.rs: the writes
//! that make its live state (and hand-damaged keys), then one error case
//! (at least) per write command. build.rs lists this file; a family
//! without one fails `no_partial_writes::` and `families::`.

use super::Family;

pub const FAMILY: Family = Family {
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
};
