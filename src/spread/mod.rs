//! Spread entities: one hot post, lucky bag, poll or board split into
//! shards that live in slots spaced evenly around the cluster's slot ring,
//! so that every master takes a share of its writes (issue 11).
//!
//! [`route`] is the routing spec (cluster slot, slot tags, shard keys, the
//! shard of an id): the crate `hotpath-route` (route/), pure and shared
//! with the Rust client;
//! `docs/spread.md` states it for other languages, with test vectors in
//! `docs/spread-vectors.json`. [`shard`] is the module's side of a shard:
//! the `SPREAD n` option, each shard's record, the routing check.
//! [`scope`] is the one scope every family's commands go through: the
//! `SPREAD n` readers and the shard (or the error) of a call.

pub use hotpath_route as route;
pub mod scope;
pub mod shard;

#[cfg(test)]
mod tests;
