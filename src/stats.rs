//! Counters shown by `INFO hotpath`, one list per family.

use std::sync::atomic::{AtomicU64, Ordering};

/// A named counter, e.g. `poll_votes`.
pub struct Counter {
    pub name: &'static str,
    value: AtomicU64,
}

impl Counter {
    /// Returns a counter at zero.
    pub const fn new(name: &'static str) -> Counter {
        Counter {
            name,
            value: AtomicU64::new(0),
        }
    }

    /// Adds `n`.
    pub fn add(&self, n: u64) {
        self.value.fetch_add(n, Ordering::Relaxed);
    }

    /// Adds one.
    pub fn incr(&self) {
        self.add(1);
    }

    /// Raises the value to `v` if it is larger (a maximum, e.g. the
    /// longest step seen).
    pub fn record_max(&self, v: u64) {
        self.value.fetch_max(v, Ordering::Relaxed);
    }

    /// Returns the current value.
    pub fn get(&self) -> u64 {
        self.value.load(Ordering::Relaxed)
    }
}
