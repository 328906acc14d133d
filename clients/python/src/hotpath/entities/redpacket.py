"""The REDPACKET family's entity handle, :class:`RedPacket`, and its ``HotPath``
methods (hotpath.entities gathers them into ``HotPath``)."""
from __future__ import annotations

from typing import Dict, List, Optional

from .. import replies as R
from .._base import Arg, Key, _Entity, _HotPathBase, _opt


class RedPacket(_Entity):
    """Red packets (docs/redpacket.md). Amounts are integer cents."""
    family = "REDPACKET"

    def split(self, total_cents: int, count: int, mode: Optional[str] = None,
              ttl: Optional[int] = None, now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        """Splits ``total_cents`` once into ``count`` shares (``mode`` RANDOM,
        the double-mean method and the default, or EQUAL) and opens the
        packet: ``count``."""
        a: List[Arg] = [total_cents, count]
        _opt(a, "MODE", mode)
        _opt(a, "TTL", ttl)
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("SPLIT", R.integer, *a)

    def grab(self, user: Arg, now: Optional[int] = None, idem: Optional[Arg] = None) -> R.Grab:
        """Grabs one share for the user (at most one per user): its status
        (OK, ALREADY, EMPTY, CLOSED or NOSUCH) and the cents won."""
        a: List[Arg] = [user]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("GRAB", R.grab, *a)

    def info(self, now: Optional[int] = None) -> Optional[R.PacketInfo]:
        """The packet's total, count, what is left, state and expiry; None for
        an unknown packet."""
        a: List[Arg] = []
        _opt(a, "NOW", now)
        return self._call("INFO", R.packet_info, *a)

    def grabbed(self) -> Dict[str, int]:
        """Every user who grabbed a share, with the cents won."""
        return self._call("GRABBED", R.grabbed)

    def refund(self) -> int:
        """Closes the packet: the cents left to the sender."""
        return self._call("REFUND", R.integer)


class HotPathMethods(_HotPathBase):
    """``HotPath``'s methods of the REDPACKET family."""

    def redpacket(self, key: Key) -> RedPacket:
        """A red packet."""
        return RedPacket(self._runner, key)
