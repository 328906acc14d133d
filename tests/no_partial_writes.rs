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
//! has none). Every family is in the list.

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
        name: "like",
        setup: &[
            &["CONFIG", "SET", "hotpath.like-recent", "3"],
            &["LIKE.ADD", "l{1}", "5", "NOW", T],
            &["LIKE.TOGGLE", "l{1}", "64005", "NOW", T],
            // A post with a chunk for range 0, as a promotion leaves it.
            &["SADD", "l{p}:set", "5", "64005"],
            &["SETBIT", "l{p}:chunks", "0", "1"],
            &["SETRANGE", "l{p}:bits:0", "7999", "\0"],
            &["SET", "l{p}:count", "2"],
            // Range 0's chunk is fine, range 1's is not 8,000 bytes long:
            // 5 could move, 64005 cannot.
            &["SADD", "l{b}:set", "5", "64005"],
            &["SETBIT", "l{b}:chunks", "0", "1"],
            &["SETBIT", "l{b}:chunks", "1", "1"],
            &["SETRANGE", "l{b}:bits:0", "7999", "\0"],
            &["SET", "l{b}:bits:1", "short"],
            &["SET", "l{b}:count", "2"],
            // Hand-damaged posts: a count that is no integer, one at the
            // largest count, one at 0 with a liker, a chunked post without
            // its count, a Set that is a String, a recent list that is a
            // List.
            &["SADD", "l{c}:set", "5"],
            &["SET", "l{c}:count", "x"],
            &["SADD", "l{o}:set", "5"],
            &["SET", "l{o}:count", "9007199254740991"],
            &["SADD", "l{z}:set", "5"],
            &["SET", "l{z}:count", "0"],
            &["SETBIT", "l{m}:chunks", "0", "1"],
            &["SETRANGE", "l{m}:bits:0", "7999", "\0"],
            &["SET", "l{w}:set", "x"],
            &["SADD", "l{r}:set", "5"],
            &["SET", "l{r}:count", "1"],
            &["RPUSH", "l{r}:recent", "x"],
            // A post spread over two shards, and a single-slot post on the
            // shard 0 key of another.
            &["LIKE.CREATE", "{0VD}post:9", "SPREAD", "2"],
            &["LIKE.CREATE", "{00H}post:9", "SPREAD", "2"],
            &["LIKE.ADD", "{0VD}post:9", "0", "NOW", T, "SPREAD", "2"],
            &["LIKE.ADD", "{0VJ}post:7", "4", "NOW", T],
            &["LIKE.ADD", "post:6", "4", "NOW", T],
            // A shard whose record was edited by hand.
            &["LIKE.CREATE", "{0VE}post:8", "SPREAD", "2"],
            &["LIKE.ADD", "{0VE}post:8", "2", "NOW", T, "SPREAD", "2"],
            &["HSET", "{0VE}post:8:meta", "spread", "x"],
        ],
        errors: &[
            &["LIKE.TOGGLE", "l{1}"],
            &["LIKE.TOGGLE", "l{1}", ""],
            &["LIKE.TOGGLE", "l{1}", "abc"],
            &["LIKE.TOGGLE", "l{1}", "-1"],
            &["LIKE.TOGGLE", "l{1}", "4294967296"],
            &["LIKE.TOGGLE", "l{1}", "6", "NOW"],
            &["LIKE.TOGGLE", "l{1}", "6", "NOW", "x"],
            &["LIKE.TOGGLE", "l{1}", "6", "SOON", "1"],
            &["LIKE.TOGGLE", "l{c}", "5", "NOW", T],
            &["LIKE.TOGGLE", "l{c}", "6", "NOW", T],
            &["LIKE.TOGGLE", "l{z}", "5", "NOW", T],
            &["LIKE.TOGGLE", "l{o}", "6", "NOW", T],
            &["LIKE.TOGGLE", "l{b}", "64006", "NOW", T],
            &["LIKE.TOGGLE", "l{m}", "6", "NOW", T],
            &["LIKE.TOGGLE", "l{w}", "6", "NOW", T],
            &["LIKE.TOGGLE", "l{r}", "6", "NOW", T],
            &["LIKE.ADD", "l{1}", "6", "NOW", "-5"],
            &["LIKE.ADD", "{00F}post:7", "1", "NOW", T, "SPREAD", "2"],
            &["LIKE.ADD", "{0VE}post:8", "0", "NOW", T, "SPREAD", "2"],
            &["LIKE.ADD", "l{1}", ""],
            &["LIKE.ADD", "l{c}", "6", "NOW", T],
            &["LIKE.ADD", "l{o}", "6", "NOW", T],
            &["LIKE.ADD", "l{b}", "64006", "NOW", T],
            &["LIKE.ADD", "l{m}", "6", "NOW", T],
            &["LIKE.ADD", "l{w}", "6", "NOW", T],
            &["LIKE.ADD", "l{r}", "6", "NOW", T],
            &["LIKE.ADD", "{0VD}post:9", "1", "NOW", T, "SPREAD", "2"],
            &["LIKE.ADD", "{0VD}post:9", "2", "NOW", T, "SPREAD", "3"],
            &["LIKE.ADD", "{0VD}post:9", "2", "NOW", T, "SPREAD", "0"],
            &["LIKE.ADD", "post:9", "2", "NOW", T],
            &["LIKE.ADD", "l{1}", "6", "NOW", T, "SPREAD", "2"],
            &["LIKE.ADD", "l{1}"],
            &["LIKE.REM", "l{1}", ""],
            &["LIKE.REM", "l{1}", "x"],
            &["LIKE.REM", "l{1}", "5", "NOW", T],
            &["LIKE.REM", "l{c}", "5"],
            &["LIKE.REM", "l{z}", "5"],
            &["LIKE.REM", "l{b}", "64005"],
            &["LIKE.REM", "l{m}", "6"],
            &["LIKE.REM", "l{w}", "5"],
            &["LIKE.REM", "{00H}post:9", "0", "SPREAD", "2"],
            &["LIKE.REM", "l{1}"],
            &["LIKE.MIGRATE", "l{p}", "5", ""],
            &["LIKE.MIGRATE", "l{p}", "5", "x"],
            &["LIKE.MIGRATE", "l{p}", "5", "4294967296"],
            &["LIKE.MIGRATE", "l{b}", "5", "64005"],
            &["LIKE.MIGRATE", "l{w}", "5"],
            &["LIKE.MIGRATE", "l{p}"],
            &["LIKE.CREATE", "{0VD}post:9"],
            &["LIKE.CREATE", "{0VD}post:9", "SPREAD", "0"],
            &["LIKE.CREATE", "{0VD}post:9", "SPREAD", "x"],
            &["LIKE.CREATE", "{0VD}post:9", "SPREAD", "3"],
            &["LIKE.CREATE", "{0VD}post:9", "FOO", "1"],
            &["LIKE.CREATE", "l{1}", "SPREAD", "2"],
            &["LIKE.CREATE", "{0VJ}post:7", "SPREAD", "2"],
            &["LIKE.CREATE", "post:7", "SPREAD", "2"],
            &["LIKE.CREATE", "{0VK}post:6", "SPREAD", "2"],
            &["LIKE.CREATE", "{0VE}post:8", "SPREAD", "2"],
            &["LIKE.CREATE"],
        ],
    },
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
    Family {
        name: "luckybag",
        setup: &[
            &[
                "LUCKYBAG.CREATE",
                "b{1}",
                "WINNERS",
                "2",
                "SHARDS",
                "4",
                "POOLCAP",
                "3",
                "HIGHSCORE",
                "0.5",
                "TTL",
                "3600",
                "SEED",
                "0123456789abcdef",
            ],
            &["LUCKYBAG.JOIN", "b{1}", "u1"],
            &["LUCKYBAG.JOIN", "b{1}", "u2"],
            &["LUCKYBAG.JOIN", "b{1}", "u3", "TASK", "PENDING"],
            &["LUCKYBAG.JOIN", "b{1}", "u4"],
            &["LUCKYBAG.JOIN", "b{1}", "u5"],
            &["LUCKYBAG.JOIN", "b{1}", "u6"],
            &["LUCKYBAG.LEAVE", "b{1}", "u2"],
            &["LUCKYBAG.CREATE", "b{d}", "WINNERS", "1"],
            &["LUCKYBAG.JOIN", "b{d}", "u1"],
            &["LUCKYBAG.DRAW", "b{d}"],
            &["LUCKYBAG.CREATE", "b{s}", "WINNERS", "1"],
            &["HDEL", "b{s}:meta", "seed"],
            &["LUCKYBAG.CREATE", "b{c}", "WINNERS", "1", "RESTORE", "YES"],
            &["LUCKYBAG.JOIN", "b{c}", "u1"],
            &["LUCKYBAG.LEAVE", "b{c}", "u1"],
            &[
                "HSET",
                "b{c}:meta",
                "poolcap",
                "-1",
                "restore",
                "maybe",
                "winners",
                "0",
                "seed",
                "short",
            ],
            &["LUCKYBAG.CREATE", "b{x}", "WINNERS", "1"],
            &["HSET", "b{x}:meta", "state", "half"],
            &["LUCKYBAG.CREATE", "b{k}", "WINNERS", "1"],
            &["SET", "b{k}:count", "x"],
            &["LUCKYBAG.CREATE", "b{o}", "WINNERS", "1"],
            &["SET", "b{o}:count", "9007199254740991"],
            &[
                "LUCKYBAG.CREATE",
                "b{l}",
                "WINNERS",
                "1",
                "POOLCAP",
                "0",
                "HIGHSCORE",
                "0",
            ],
            &["HSET", "b{l}:meta", "latepooled", "9007199254740991"],
            &[
                "LUCKYBAG.CREATE",
                "b{h}",
                "WINNERS",
                "1",
                "POOLCAP",
                "0",
                "HIGHSCORE",
                "0",
            ],
            &["HSET", "b{h}:meta", "highscore", "2"],
            &["LUCKYBAG.CREATE", "b{w}", "WINNERS", "1", "SHARDS", "1"],
            &["SET", "b{w}:cand:0", "x"],
            &["SET", "b{m}:meta", "x"],
            &[
                "LUCKYBAG.CREATE",
                "{66M}bag:{live9}",
                "WINNERS",
                "2",
                "SPREAD",
                "2",
            ],
            &[
                "LUCKYBAG.CREATE",
                "{6PA}bag:{live9}",
                "WINNERS",
                "2",
                "SPREAD",
                "2",
            ],
            &["LUCKYBAG.JOIN", "{66M}bag:{live9}", "u2", "SPREAD", "2"],
            &["LUCKYBAG.JOIN", "{6PA}bag:{live9}", "u1", "SPREAD", "2"],
            &[
                "LUCKYBAG.DRAWBEGIN",
                "{66M}bag:{live9}",
                "t1",
                "NOW",
                T,
                "SPREAD",
                "2",
            ],
        ],
        errors: &[
            &["LUCKYBAG.CREATE", "b{1}", "WINNERS", "2"],
            &["LUCKYBAG.CREATE", "b{2}"],
            &["LUCKYBAG.CREATE", "b{2}", "WINNERS", "x"],
            &["LUCKYBAG.CREATE", "b{2}", "WINNERS", "0"],
            &["LUCKYBAG.CREATE", "b{2}", "WINNERS", "1001"],
            &["LUCKYBAG.CREATE", "b{2}", "WINNERS", "1", "SHARDS", "3"],
            &["LUCKYBAG.CREATE", "b{2}", "WINNERS", "1", "HIGHSCORE", "x"],
            &[
                "LUCKYBAG.CREATE",
                "b{2}",
                "WINNERS",
                "1",
                "HIGHSCORE",
                "1.5",
            ],
            &["LUCKYBAG.CREATE", "b{2}", "WINNERS", "1", "TTL", "0"],
            &["LUCKYBAG.CREATE", "b{2}", "WINNERS", "1", "SEED", "short"],
            &[
                "LUCKYBAG.CREATE",
                "b{2}",
                "WINNERS",
                "1",
                "RESTORE",
                "MAYBE",
            ],
            &["LUCKYBAG.CREATE", "b{m}", "WINNERS", "1"],
            &["LUCKYBAG.CREATE", "b{w}", "WINNERS", "1"],
            &[
                "LUCKYBAG.CREATE",
                "b{1}",
                "WINNERS",
                "2",
                "SHARDS",
                "4",
                "POOLCAP",
                "3",
                "HIGHSCORE",
                "0.5",
                "TTL",
                "3600",
                "SEED",
                "0123456789abcdeX",
            ],
            &["LUCKYBAG.JOIN", "b{1}"],
            &["LUCKYBAG.JOIN", "b{1}", "u9", "TASK", "LATER"],
            &["LUCKYBAG.JOIN", "b{1}", "u9", "COLOR", "red"],
            &["LUCKYBAG.JOIN", "b{1}", ""],
            &["LUCKYBAG.JOIN", "b{2}", "u9"],
            &["LUCKYBAG.JOIN", "b{d}", "u9"],
            &["LUCKYBAG.JOIN", "b{d}", "u1"],
            &["LUCKYBAG.JOIN", "b{m}", "u9"],
            &["LUCKYBAG.JOIN", "b{w}", "u9"],
            &["LUCKYBAG.JOIN", "b{s}", "u9"],
            &["LUCKYBAG.JOIN", "b{c}", "u9"],
            &["LUCKYBAG.JOIN", "b{x}", "u9"],
            &["LUCKYBAG.JOIN", "b{k}", "u9"],
            &["LUCKYBAG.JOIN", "b{o}", "u9"],
            &["LUCKYBAG.JOIN", "b{l}", "u9"],
            &["LUCKYBAG.JOIN", "b{h}", "u9"],
            &["LUCKYBAG.JOIN", "b{1}", "u9", "SPREAD", "0"],
            &["LUCKYBAG.JOIN", "b{1}", "u9", "SPREAD", "2"],
            &["LUCKYBAG.JOIN", "{66M}bag:{live9}", "u1", "SPREAD", "2"],
            &["LUCKYBAG.JOIN", "{66M}bag:{live9}", "u2", "SPREAD", "3"],
            &["LUCKYBAG.TASK", "{66M}bag:{live9}", "u1", "SPREAD", "2"],
            &["LUCKYBAG.TASK", "b{1}"],
            &["LUCKYBAG.TASK", "b{1}", ""],
            &["LUCKYBAG.TASK", "b{2}", "u3"],
            &["LUCKYBAG.TASK", "b{d}", "u1"],
            &["LUCKYBAG.TASK", "b{m}", "u1"],
            &["LUCKYBAG.TASK", "b{w}", "u1"],
            &["LUCKYBAG.TASK", "b{s}", "u1"],
            &["LUCKYBAG.TASK", "b{c}", "u1"],
            &["LUCKYBAG.TASK", "b{x}", "u1"],
            &["LUCKYBAG.LEAVE", "b{1}"],
            &["LUCKYBAG.LEAVE", "b{1}", ""],
            &["LUCKYBAG.LEAVE", "b{2}", "u1"],
            &["LUCKYBAG.LEAVE", "b{d}", "u1"],
            &["LUCKYBAG.LEAVE", "b{m}", "u1"],
            &["LUCKYBAG.LEAVE", "b{w}", "u1"],
            &["LUCKYBAG.LEAVE", "b{s}", "u1"],
            &["LUCKYBAG.LEAVE", "b{c}", "u1"],
            &["LUCKYBAG.ENTER", "b{1}"],
            &["LUCKYBAG.ENTER", "b{1}", ""],
            &["LUCKYBAG.ENTER", "b{2}", "u2"],
            &["LUCKYBAG.ENTER", "b{d}", "u1"],
            &["LUCKYBAG.ENTER", "b{m}", "u1"],
            &["LUCKYBAG.ENTER", "b{w}", "u1"],
            &["LUCKYBAG.ENTER", "b{s}", "u1"],
            &["LUCKYBAG.ENTER", "b{c}", "u1"],
            &["LUCKYBAG.DRAW"],
            &["LUCKYBAG.DRAW", "b{2}"],
            &["LUCKYBAG.DRAW", "b{m}"],
            &["LUCKYBAG.DRAW", "b{w}"],
            &["LUCKYBAG.DRAW", "b{c}"],
            &["LUCKYBAG.DRAW", "b{x}"],
            &["LUCKYBAG.DRAWBEGIN", "b{1}"],
            &["LUCKYBAG.DRAWBEGIN", "b{1}", "t1", "NOW", T],
            &[
                "LUCKYBAG.DRAWBEGIN",
                "{66M}bag:{live9}",
                "t2",
                "NOW",
                T,
                "SPREAD",
                "2",
            ],
            &[
                "LUCKYBAG.DRAWBEGIN",
                "{6PA}bag:{live9}",
                "t1",
                "NOW",
                T,
                "SPREAD",
                "2",
            ],
            &[
                "LUCKYBAG.DRAWBEGIN",
                "{66M}bag:{live9}",
                "",
                "NOW",
                T,
                "SPREAD",
                "2",
            ],
            &[
                "LUCKYBAG.DRAWBEGIN",
                "{66M}bag:{live9}",
                "t1",
                "LEASE",
                "x",
                "NOW",
                T,
                "SPREAD",
                "2",
            ],
            &[
                "LUCKYBAG.DRAWBEGIN",
                "{66M}bag:{live9}",
                "t1",
                "LATER",
                "5",
                "SPREAD",
                "2",
            ],
            &["LUCKYBAG.FREEZE", "b{1}"],
            &["LUCKYBAG.FREEZE", "b{1}", "1"],
            &["LUCKYBAG.FREEZE", "{66M}bag:{live9}", "x", "SPREAD", "2"],
            &["LUCKYBAG.COMMIT", "b{1}", "t1"],
            &[
                "LUCKYBAG.COMMIT",
                "{66M}bag:{live9}",
                "t1",
                "u1",
                "SPREAD",
                "2",
            ],
            &["LUCKYBAG.COMMIT", "{66M}bag:{live9}", "t2", "SPREAD", "2"],
            &[
                "LUCKYBAG.COMMIT",
                "{66M}bag:{live9}",
                "t1",
                "u1",
                "2",
                "SPREAD",
                "2",
            ],
            &[
                "LUCKYBAG.COMMIT",
                "{66M}bag:{live9}",
                "t1",
                "u1",
                "0.5",
                "u2",
                "0.75",
                "SPREAD",
                "2",
            ],
            &[
                "LUCKYBAG.COMMIT",
                "{66M}bag:{live9}",
                "t1",
                "u1",
                "0.5",
                "u2",
                "0.25",
                "u3",
                "0.125",
                "SPREAD",
                "2",
            ],
            &[
                "LUCKYBAG.COMMIT",
                "{66M}bag:{live9}",
                "t1",
                "",
                "0.5",
                "SPREAD",
                "2",
            ],
            &["LUCKYBAG.COMMIT", "{6PA}bag:{live9}", "t1", "SPREAD", "2"],
            &["LUCKYBAG.PUBLISH", "b{1}"],
            &["LUCKYBAG.PUBLISH", "b{1}", "u1", "0.5"],
            &["LUCKYBAG.PUBLISH", "{6PA}bag:{live9}", "SPREAD", "2"],
            &["LUCKYBAG.PUBLISH", "{6PA}bag:{live9}", "u1", "SPREAD", "2"],
            &[
                "LUCKYBAG.PUBLISH",
                "{6PA}bag:{live9}",
                "u1",
                "2",
                "SPREAD",
                "2",
            ],
        ],
    },
    Family {
        name: "delayq",
        setup: &[
            // dq{1}: a job leased (receipt 1000001), a dead letter, a
            // job waiting with a lost-lease cap.
            &["DELAYQ.ADD", "dq{1}", "a", "pa", "NOW", T],
            &["DELAYQ.POLL", "dq{1}", "60000", "NOW", T],
            &["DELAYQ.ADD", "dq{1}", "d", "pd", "ATTEMPTS", "1", "NOW", T],
            &["DELAYQ.POLL", "dq{1}", "60000", "NOW", T],
            &["DELAYQ.NACK", "dq{1}", "d", "2000001", "NOW", T],
            &[
                "DELAYQ.ADD",
                "dq{1}",
                "w",
                "pw",
                "DELAY",
                "100000",
                "LOSTMAX",
                "1",
                "NOW",
                T,
            ],
            // Damaged by hand: a wrong type, a junk record listed in line,
            // an id in line without a record, a fractional due score of a
            // leased job, a fractional dead-at, a dead letter without a
            // record, a junk seq, a spent seq, a seq of another type, a
            // lost count past its cap on a leased job.
            &["SET", "dq{t}:jobs", "x"],
            &["HSET", "dq{c}:jobs", "x", "junk"],
            &["ZADD", "dq{c}:due", T, "x"],
            &["ZADD", "dq{o}:due", T, "x"],
            &["HSET", "dq{f}:jobs", "x", "1:1:5:1:p"],
            &["ZADD", "dq{f}:due", "1.5", "x"],
            &["HSET", "dq{e}:jobs", "x", "1:1:1:0:p"],
            &["ZADD", "dq{e}:dead", "1.5", "x"],
            &["ZADD", "dq{p}:dead", "5", "x"],
            &["HSET", "dq{g}:jobs", "x", "junk"],
            &["ZADD", "dq{g}:dead", "5", "x"],
            &["SET", "dq{s}:seq", "x"],
            &["HSET", "dq{s}:jobs", "z", "1:1:1:0:p"],
            &["ZADD", "dq{s}:dead", "5", "z"],
            &["SET", "dq{v}:seq", "9007199253"],
            &["HSET", "dq{v}:jobs", "z", "1:1:1:0:p"],
            &["ZADD", "dq{v}:dead", "5", "z"],
            &["HSET", "dq{u}:seq", "a", "b"],
            &["HSET", "dq{u}:jobs", "z", "1:1:1:0:p"],
            &["ZADD", "dq{u}:dead", "5", "z"],
            &["HSET", "dq{l}:jobs", "x", "1:1:3:1/2/1:p"],
            &["ZADD", "dq{l}:due", T, "x"],
        ],
        errors: &[
            &["DELAYQ.ADD", "dq{1}", "n"],
            &["DELAYQ.ADD", "dq{1}", "", "p"],
            &["DELAYQ.ADD", "dq{1}", "n", "p", "DELAY", "-1"],
            &["DELAYQ.ADD", "dq{1}", "n", "p", "AT", "253402300800000"],
            &["DELAYQ.ADD", "dq{1}", "n", "p", "ATTEMPTS", "0"],
            &["DELAYQ.ADD", "dq{1}", "n", "p", "LOSTMAX", "-1"],
            &["DELAYQ.ADD", "dq{1}", "n", "p", "NOW", "x"],
            &["DELAYQ.ADD", "dq{1}", "n", "p", "DELAY", "1", "AT", "2"],
            &["DELAYQ.ADD", "dq{1}", "n", "p", "LOSTMAX"],
            &["DELAYQ.ADD", "dq{1}", "n", "<1MiB+1>"],
            &["DELAYQ.ADD", "dq{t}", "n", "p"],
            &["DELAYQ.ADD", "dq{u}", "n", "p"],
            &["DELAYQ.ADD", "dq{c}", "x", "p", "REPLACE"],
            &["DELAYQ.ADD", "dq{l}", "x", "p", "REPLACE"],
            &["DELAYQ.ADD", "dq{1}", "a", "p", "REPLACE", "NOW", T],
            &["DELAYQ.ADD", "dq{s}", "n", "p", "NOW", T],
            &["DELAYQ.ADD", "dq{v}", "n", "p", "NOW", T],
            &["DELAYQ.ADD", "dq{f}", "x", "p", "REPLACE", "NOW", T],
            &["DELAYQ.POLL", "dq{1}"],
            &["DELAYQ.POLL", "dq{1}", "0"],
            &["DELAYQ.POLL", "dq{1}", "10", "COUNT", "101"],
            &["DELAYQ.POLL", "dq{1}", "10", "SOON", "1"],
            &["DELAYQ.POLL", "dq{t}", "10", "NOW", T],
            &["DELAYQ.POLL", "dq{c}", "10", "NOW", T],
            &["DELAYQ.POLL", "dq{o}", "10", "NOW", T],
            &["DELAYQ.POLL", "dq{l}", "10", "NOW", T],
            &["DELAYQ.POLL", "dq{f}", "10", "NOW", T],
            &["DELAYQ.ACK", "dq{1}", "a"],
            &["DELAYQ.ACK", "dq{1}", "", "1000001"],
            &["DELAYQ.ACK", "dq{1}", "a", "x"],
            &["DELAYQ.ACK", "dq{t}", "a", "1000001"],
            &["DELAYQ.ACK", "dq{c}", "x", "1"],
            &["DELAYQ.NACK", "dq{1}", "a"],
            &["DELAYQ.NACK", "dq{1}", "", "1000001"],
            &["DELAYQ.NACK", "dq{1}", "a", "1000001", "DELAY", "-1"],
            &[
                "DELAYQ.NACK",
                "dq{1}",
                "a",
                "1000001",
                "DELAY",
                "1",
                "DELAY",
                "2",
            ],
            &["DELAYQ.NACK", "dq{t}", "a", "1000001"],
            &["DELAYQ.NACK", "dq{c}", "x", "1"],
            &["DELAYQ.EXTEND", "dq{1}", "a", "1000001"],
            &["DELAYQ.EXTEND", "dq{1}", "", "1000001", "10"],
            &["DELAYQ.EXTEND", "dq{1}", "a", "1000001", "0"],
            &["DELAYQ.EXTEND", "dq{1}", "a", "1000001", "10", "SOON"],
            &["DELAYQ.EXTEND", "dq{t}", "a", "1000001", "10"],
            &["DELAYQ.EXTEND", "dq{c}", "x", "1", "10"],
            &["DELAYQ.REDRIVE"],
            &["DELAYQ.REDRIVE", "dq{1}", "ID", ""],
            &["DELAYQ.REDRIVE", "dq{1}", "COUNT", "0"],
            &["DELAYQ.REDRIVE", "dq{1}", "COUNT", "1", "ID", "d"],
            &["DELAYQ.REDRIVE", "dq{t}"],
            &["DELAYQ.REDRIVE", "dq{u}"],
            &["DELAYQ.REDRIVE", "dq{g}", "NOW", T],
            &["DELAYQ.REDRIVE", "dq{p}", "NOW", T],
            &["DELAYQ.REDRIVE", "dq{s}", "NOW", T],
            &["DELAYQ.REDRIVE", "dq{v}", "NOW", T],
            &["DELAYQ.CANCEL", "dq{1}"],
            &["DELAYQ.CANCEL", "dq{1}", ""],
            &["DELAYQ.CANCEL", "dq{1}", "w", "NOW", "x"],
            &["DELAYQ.CANCEL", "dq{1}", "w", "FORCE", "FORCE"],
            &["DELAYQ.CANCEL", "dq{t}", "w"],
            &["DELAYQ.CANCEL", "dq{c}", "x"],
            &["DELAYQ.CANCEL", "dq{f}", "x", "NOW", T],
            &["DELAYQ.CANCEL", "dq{1}", "a", "NOW", T],
            &["DELAYQ.PURGE"],
            &["DELAYQ.PURGE", "dq{1}", "MAXLEN", "-1"],
            &["DELAYQ.PURGE", "dq{1}", "NOW", T],
            &["DELAYQ.PURGE", "dq{1}", "MAXLEN", "0", "MAXLEN", "0"],
            &["DELAYQ.PURGE", "dq{t}", "MAXLEN", "0"],
            &["DELAYQ.PURGE", "dq{p}", "MAXLEN", "0"],
            &["DELAYQ.PURGE", "dq{e}", "MAXLEN", "0"],
        ],
    },
    Family {
        name: "rank",
        setup: &[
            // Live boards of both layouts.
            &["RANK.CREATE", "rk{1}", "TTL", "3600", "NOW", T],
            &["RANK.ADD", "rk{1}", "a", "10", "NOW", T],
            &[
                "RANK.CREATE",
                "rk{w}",
                "LAYOUT",
                "WIDE",
                "TTL",
                "3600",
                "NOW",
                T,
            ],
            &["RANK.ADD", "rk{w}", "a", "5000000000000", "NOW", T],
            &["RANK.ADD", "rk{w}", "b", "9007199254740991", "NOW", T],
            &[
                "RANK.CREATE",
                "rk{ms}",
                "UNIT",
                "MS",
                "DIGITS",
                "13",
                "EPOCH",
                "1900000001000",
                "NOW",
                "1900000001000",
            ],
            // A board being imported, plain boards to import.
            &["ZADD", "rk{i}", "1", "a", "2", "b"],
            &["RANK.IMPORT", "rk{i}", "COUNT", "1", "NOW", T],
            &["ZADD", "rk{p}", "1", "a", "1.5", "b"],
            &["ZADD", "rk{q}", "9000000", "a"],
            &["HSET", "rk{q}:time", "z", "1"],
            &["ZADD", "rk{wq}", "1", "a"],
            &["SET", "rk{wq}:time", "x"],
            // Damaged by hand: wrong types, a layout, a score, a wide
            // board's index entry and stored name, its index's type.
            &["SET", "rk{t}", "x"],
            &["SET", "rk{tm}:meta", "x"],
            &["HSET", "rk{c}:meta", "layout", "junk"],
            &["ZADD", "rk{o}", "1.5", "a"],
            &["RANK.CREATE", "rk{x}", "LAYOUT", "WIDE", "NOW", T],
            &["HSET", "rk{x}:time", "a", "x"],
            &["ZADD", "rk{x}", "1", "plain"],
            &["RANK.CREATE", "rk{wt}", "LAYOUT", "WIDE", "NOW", T],
            &["SET", "rk{wt}:time", "x"],
        ],
        errors: &[
            &["RANK.CREATE", "rk{1}"],
            &["RANK.CREATE", "rk{2}", "LAYOUT", "WIDE", "UNIT", "MS"],
            &["RANK.CREATE", "rk{2}", "DIGITS", "16"],
            &["RANK.CREATE", "rk{2}", "TIEBREAK", "SOMETIMES"],
            &[
                "RANK.CREATE",
                "rk{2}",
                "UNIT",
                "MS",
                "DIGITS",
                "12",
                "NOW",
                T,
            ],
            &["RANK.CREATE", "rk{2}", "SPREAD", "0"],
            &["RANK.CREATE", "rk{t}"],
            &["RANK.CREATE", "rk{tm}"],
            &["RANK.CREATE"],
            &["RANK.ADD", "rk{1}", "a", "2000000", "NOW", T],
            &["RANK.ADD", "rk{1}", "", "1"],
            &["RANK.ADD", "rk{1}", "a", "x"],
            &["RANK.ADD", "rk{1}", "a", "1", "GT", "LT"],
            &["RANK.ADD", "rk{1}", "a", "1", "NOW", "-1"],
            &["RANK.ADD", "rk{1}", "a", "1", "NOW", "10000000000000"],
            &["RANK.ADD", "rk{c}", "a", "1", "NOW", T],
            &["RANK.ADD", "rk{o}", "a", "1", "NOW", T],
            &["RANK.ADD", "rk{t}", "a", "1"],
            &["RANK.ADD", "rk{tm}", "a", "1"],
            &["RANK.ADD", "rk{i}", "a", "1"],
            &["RANK.ADD", "rk{w}", "a", "9007199254740992", "NOW", T],
            &["RANK.ADD", "rk{x}", "a", "1", "NOW", T],
            &["RANK.ADD", "rk{wt}", "a", "1", "NOW", T],
            &["RANK.INCR", "rk{1}", "a", "900718", "NOW", T],
            &["RANK.INCR", "rk{w}", "b", "1", "NOW", T],
            &["RANK.INCR", "rk{x}", "a", "1", "NOW", T],
            &["RANK.INCR", "rk{o}", "a", "1", "NOW", T],
            &["RANK.INCR", "rk{1}", "a"],
            &["RANK.DECR", "rk{1}", "a", "-9223372036854775808", "NOW", T],
            &["RANK.DECR", "rk{w}", "a", "-9007199254740991", "NOW", T],
            &["RANK.DECR", "rk{c}", "a", "1", "NOW", T],
            &["RANK.DECR", "rk{x}", "a", "1", "NOW", T],
            &["RANK.REM", "rk{1}", "a", ""],
            &["RANK.REM", "rk{x}", "plain", "a"],
            &["RANK.REM", "rk{c}", "a"],
            &["RANK.REM", "rk{t}", "a"],
            &["RANK.REM", "rk{i}", "a"],
            &["RANK.REM", "rk{wt}", "a"],
            &["RANK.MERGE", "rk{1}", "1", "rk{o}"],
            &["RANK.MERGE", "rk{1}", "1", "rk{w}"],
            &["RANK.MERGE", "rk{w}", "2", "rk{w}", "rk{w}"],
            &["RANK.MERGE", "rk{ms}", "1", "rk{1}"],
            &["RANK.MERGE", "rk{wt}", "1", "rk{1}"],
            &["RANK.MERGE", "rk{2}", "1", "rk{x}"],
            &["RANK.MERGE", "rk{2}", "1", "rk{i}"],
            &["RANK.MERGE", "rk{i}", "1", "rk{1}"],
            &["RANK.MERGE", "rk{2}", "1", "rk{c}"],
            &["RANK.MERGE", "rk{2}", "1", "rk{t}"],
            &["RANK.MERGE", "rk{2}", "1", "rk{tm}"],
            &["RANK.MERGE", "rk{2}", "3", "rk{1}"],
            &["RANK.MERGE", "rk{2}", "1", "rk{1}", "AGGREGATE", "MIN"],
            &["RANK.MERGE", "rk{2}", "1", "rk{1}", "TTL", "0"],
            &["RANK.MERGE", "rk{2}", "0", "rk{1}"],
            &["RANK.IMPORT", "rk{1}"],
            &["RANK.IMPORT", "rk{i}", "TIEBREAK", "LATER"],
            &["RANK.IMPORT", "rk{i}", "LAYOUT", "WIDE"],
            &["RANK.IMPORT", "rk{p}", "NOW", T],
            &["RANK.IMPORT", "rk{p}", "LAYOUT", "WIDE", "NOW", T],
            &["RANK.IMPORT", "rk{q}", "NOW", T],
            &["RANK.IMPORT", "rk{q}", "LAYOUT", "WIDE", "NOW", T],
            &["RANK.IMPORT", "rk{p}", "LAYOUT", "WIDE", "UNIT", "MS"],
            &["RANK.IMPORT", "rk{q}", "COUNT", "1001"],
            &["RANK.IMPORT", "rk{q}", "TTL", "5"],
            &[
                "RANK.IMPORT",
                "rk{p}",
                "UNIT",
                "MS",
                "DIGITS",
                "12",
                "NOW",
                T,
            ],
            &["RANK.IMPORT", "rk{c}"],
            &["RANK.IMPORT", "rk{t}"],
            &["RANK.IMPORT", "rk{wq}", "LAYOUT", "WIDE"],
        ],
    },
];

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
