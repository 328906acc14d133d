//! Module configuration (`--loadmodule libhotpath.so <name> <value>`,
//! `CONFIG SET hotpath.<name> <value>`), one static per setting.

use std::sync::atomic::{AtomicI64, Ordering};

/// `like-max-id`: the largest user id LIKE accepts.
pub static LIKE_MAX_ID: AtomicI64 = AtomicI64::new(4_294_967_295);
/// `like-promote-at`: set size above which LIKE considers a bitmap.
pub static LIKE_PROMOTE_AT: AtomicI64 = AtomicI64::new(LIKE_PROMOTE_AT_DEFAULT);
/// The default of `like-promote-at`, chosen from the measured crossover.
pub const LIKE_PROMOTE_AT_DEFAULT: i64 = 512;
/// `like-recent`: how many recent likers LIKE keeps (0, the default: LIKE
/// keeps none, and a like pays nothing for the feature).
pub static LIKE_RECENT: AtomicI64 = AtomicI64::new(0);
/// `like-common-max`: the most likers (of the smaller post) one
/// LIKE.COMMON reads, which bounds the time it blocks the server.
pub static LIKE_COMMON_MAX: AtomicI64 = AtomicI64::new(LIKE_COMMON_MAX_DEFAULT);
/// The default of `like-common-max`: about 12M instructions (a few ms) at
/// ~2,500 per liker read (docs/like.md).
pub const LIKE_COMMON_MAX_DEFAULT: i64 = 5_000;
/// `redpacket-max-count`: the most shares one packet may have.
pub static REDPACKET_MAX_COUNT: AtomicI64 = AtomicI64::new(10_000);

/// Reads a setting.
pub fn get(v: &AtomicI64) -> i64 {
    v.load(Ordering::Relaxed)
}
