"""The IDEM family's entity handle, :class:`Idem`, and its ``HotPath``
methods (hotpath.entities gathers them into ``HotPath``)."""
from __future__ import annotations

from typing import List, Optional

from .. import replies as R
from .._base import Arg, Key, _Entity, _HotPathBase, _opt


class Idem(_Entity):
    """An application idempotency key: a fenced in-progress lease, the
    stored result replayed (docs/reference/idem.md)."""
    family = "IDEM"

    def begin(self, fingerprint: Arg, lease_ms: int, ttl: Optional[int] = None,
              now: Optional[int] = None) -> R.IdemBegin:
        """NEW with a fence, RUNNING with the ms left, DONE with the stored
        result, or MISMATCH (another fingerprint under this key)."""
        a: List[Arg] = [fingerprint, lease_ms]
        _opt(a, "TTL", ttl)
        _opt(a, "NOW", now)
        return self._call("BEGIN", R.idem_begin, *a)

    def complete(self, fence: int, result: Arg, now: Optional[int] = None) -> bool:
        """True when the result was stored, False when this fence's equal
        result is stored already (a retried COMPLETE). A stale fence raises
        the server's error."""
        a: List[Arg] = [fence, result]
        _opt(a, "NOW", now)
        return self._call("COMPLETE", R.boolean, *a)

    def abort(self, fence: int) -> bool:
        """True when the record begun with ``fence`` was given up."""
        return self._call("ABORT", R.boolean, fence)

    def get(self, now: Optional[int] = None) -> Optional[R.IdemRecord]:
        """The record, or None."""
        a: List[Arg] = []
        _opt(a, "NOW", now)
        return self._call("GET", R.idem_record, *a)


class HotPathMethods(_HotPathBase):
    """``HotPath``'s methods of the IDEM family."""

    def idem(self, key: Key) -> Idem:
        """An idempotency key."""
        return Idem(self._runner, key)
