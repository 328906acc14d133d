//! Module configuration (`--loadmodule libhotpath.so <name> <value>`,
//! `CONFIG SET hotpath.<name> <value>`), one static per setting.

use std::sync::atomic::{AtomicI64, Ordering};

/// `like-max-id`: the largest user id LIKE accepts.
pub static LIKE_MAX_ID: AtomicI64 = AtomicI64::new(4_294_967_295);
/// `like-promote-at`: set size above which LIKE considers a bitmap.
pub static LIKE_PROMOTE_AT: AtomicI64 = AtomicI64::new(LIKE_PROMOTE_AT_DEFAULT);
/// The default of `like-promote-at`, chosen from the measured crossover.
pub const LIKE_PROMOTE_AT_DEFAULT: i64 = 512;
/// `like-recent`: how many recent likers LIKE keeps (0: none).
pub static LIKE_RECENT: AtomicI64 = AtomicI64::new(10);
/// `redpacket-max-count`: the most shares one packet may have.
pub static REDPACKET_MAX_COUNT: AtomicI64 = AtomicI64::new(10_000);

/// Reads a setting.
pub fn get(v: &AtomicI64) -> i64 {
    v.load(Ordering::Relaxed)
}
/// `poll-range-max`: the largest count one POLL.TOP may ask for, so that
/// no single read walks or sends a whole board (page with OFFSET).
pub static POLL_RANGE_MAX: AtomicI64 = AtomicI64::new(RANGE_MAX_DEFAULT);
/// `rank-range-max`: the largest count of RANK.TOP and the largest n of
/// RANK.AROUND.
pub static RANK_RANGE_MAX: AtomicI64 = AtomicI64::new(RANGE_MAX_DEFAULT);
/// The default of `poll-range-max` and `rank-range-max`.
pub const RANGE_MAX_DEFAULT: i64 = 1000;
