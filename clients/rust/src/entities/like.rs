//! The LIKE family's entity handle, [`Like`], and its commands.

use super::*;

entity!(
    /// A post's likes (docs/like.md); user ids are integers.
    Like
);

impl Like {
    fn call(&self, name: &'static str) -> Call {
        Call::new(name, &self.key)
    }
}

methods!(Like {
    /// `LIKE.TOGGLE`.
    fn toggle(&self, user: u64) -> LikeToggle {
        self.call("LIKE.TOGGLE").arg(user).opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref())
    } => LikeToggle::from_redis_value;

    /// `LIKE.ADD`.
    fn add(&self, user: u64) -> LikeChange {
        self.call("LIKE.ADD").arg(user).opt("NOW", self.now)
    } => LikeChange::from_redis_value;

    /// `LIKE.REM`.
    fn rem(&self, user: u64) -> LikeChange {
        self.call("LIKE.REM").arg(user)
    } => LikeChange::from_redis_value;

    /// `LIKE.CHECK`: one flag per user, in order.
    fn check(&self, users: &[u64]) -> Vec<bool> {
        self.call("LIKE.CHECK").arg(users)
    } => |v| Ok(ints(v)?.into_iter().map(|f| f == 1).collect());

    /// `LIKE.COUNT`.
    fn count(&self) -> i64 {
        self.call("LIKE.COUNT")
    } => int;

    /// `LIKE.RECENT`, newest first.
    fn recent(&self, n: Option<i64>) -> Vec<Liker> {
        self.call("LIKE.RECENT").arg(n)
    } => r::likers;

    /// `LIKE.COMMON` with `other` (one slot on a cluster), ascending.
    fn common(&self, other: &str) -> Vec<u64> {
        self.call("LIKE.COMMON").key(other)
    } => |v| Ok(ints(v)?.into_iter().map(|u| u as u64).collect());

    /// `LIKE.INFO`.
    fn info(&self) -> LikeInfo {
        self.call("LIKE.INFO")
    } => r::like_info;
});
