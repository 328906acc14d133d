//! The IDEM family's entity handle, [`Idem`], and its commands.

use super::*;

entity!(
    /// An application idempotency key: a fenced in-progress lease, the
    /// stored result replayed (docs/reference/idem.md).
    Idem
);

impl Idem {
    fn call(&self, name: &'static str) -> Call {
        Call::new(name, &self.key)
    }
}

methods!(Idem {
    /// `IDEM.BEGIN`: `New` with a fence, `Running` with the ms left, `Done`
    /// with the stored result, or `Mismatch`. `ttl` is the record's TTL in
    /// seconds (default: the server's `idem-ttl`).
    fn begin(&self, fingerprint: &[u8], lease_ms: i64, ttl: Option<i64>) -> IdemBegin {
        self.call("IDEM.BEGIN")
            .arg(fingerprint)
            .arg(lease_ms)
            .opt("TTL", ttl)
            .opt("NOW", self.now)
    } => r::idem_begin;

    /// `IDEM.COMPLETE`: true when the result was stored, false when this
    /// fence's equal result was stored already. A stale fence is the
    /// server's error.
    fn complete(&self, fence: i64, result: &[u8]) -> bool {
        self.call("IDEM.COMPLETE")
            .arg(fence)
            .arg(result)
            .opt("NOW", self.now)
    } => one;

    /// `IDEM.ABORT`: true when the record begun with `fence` was given up.
    fn abort(&self, fence: i64) -> bool {
        self.call("IDEM.ABORT").arg(fence)
    } => one;

    /// `IDEM.GET`: the record, or `None`.
    fn get(&self) -> Option<IdemRecord> {
        self.call("IDEM.GET").opt("NOW", self.now)
    } => r::idem_record;
});
