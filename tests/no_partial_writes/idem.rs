//! IDEM's error cases for tests/no_partial_writes.rs: the writes
//! that make its live state (and hand-damaged keys), then one error case
//! (at least) per write command. build.rs lists this file; a family
//! without one fails `no_partial_writes::` and `families::`.

use super::{Family, T};

pub const FAMILY: Family = Family {
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
};
