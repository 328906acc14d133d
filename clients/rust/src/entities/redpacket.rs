//! The REDPACKET family's entity handle, [`RedPacket`], and its commands.

use super::*;

entity!(
    /// A red packet (docs/redpacket.md); amounts in cents.
    RedPacket
);

impl RedPacket {
    fn call(&self, name: &'static str) -> Call {
        Call::new(name, &self.key)
    }
}

methods!(RedPacket {
    /// `REDPACKET.SPLIT`: the number of shares.
    fn split(
        &self,
        total_cents: i64,
        count: i64,
        mode: Option<&str>,
        ttl: Option<i64>,
    ) -> i64 {
        self.call("REDPACKET.SPLIT")
            .arg(total_cents)
            .arg(count)
            .opt("MODE", mode)
            .opt("TTL", ttl)
            .opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref())
    } => int;

    /// `REDPACKET.GRAB`.
    fn grab(&self, user: &str) -> Grab {
        self.call("REDPACKET.GRAB").arg(user).opt("NOW", self.now)
            .opt("IDEM", self.idem.as_deref())
    } => r::grab;

    /// `REDPACKET.INFO`: `None` for an unknown packet.
    fn info(&self) -> Option<PacketInfo> {
        self.call("REDPACKET.INFO").opt("NOW", self.now)
    } => r::packet_info;

    /// `REDPACKET.GRABBED`: (user, cents) in the server's order.
    fn grabbed(&self) -> Vec<(String, i64)> {
        self.call("REDPACKET.GRABBED")
    } => r::grabbed;

    /// `REDPACKET.REFUND`: cents returned.
    fn refund(&self) -> i64 {
        self.call("REDPACKET.REFUND")
    } => int;
});
