"""The LOCK family's entity handle, :class:`Lock`, and its ``HotPath``
methods (hotpath.entities gathers them into ``HotPath``)."""
from __future__ import annotations

from typing import List, Optional

from .. import replies as R
from .._base import Arg, Key, _Entity, _HotPathBase, _opt


class Lock(_Entity):
    """Locks and semaphores with fencing tokens (docs/reference/lock.md)."""
    family = "LOCK"

    def acquire(self, owner: Arg, ttl_ms: int, limit: Optional[int] = None,
                maxhold: Optional[int] = None, block: Optional[int] = None,
                now: Optional[int] = None, idem: Optional[Arg] = None) -> Optional[int]:
        """The fencing token, or None when busy (after ``block`` ms with it).
        Blocking calls need a socket timeout longer than ``block``."""
        a: List[Arg] = [owner, ttl_ms]
        _opt(a, "LIMIT", limit)
        _opt(a, "MAXHOLD", maxhold)
        _opt(a, "BLOCK", block)
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("ACQUIRE", R.token, *a)

    def release(self, owner: Arg, now: Optional[int] = None) -> bool:
        """True when ``owner`` held a live lease (one acquisition undone)."""
        a: List[Arg] = [owner]
        _opt(a, "NOW", now)
        return self._call("RELEASE", R.boolean, *a)

    def renew(self, owner: Arg, ttl_ms: int, now: Optional[int] = None) -> int:
        """The ms left in the renewed lease; 0 when ``owner`` holds none."""
        a: List[Arg] = [owner, ttl_ms]
        _opt(a, "NOW", now)
        return self._call("RENEW", R.integer, *a)

    def info(self, now: Optional[int] = None) -> List[R.LockHolder]:
        """The live holders, by token; empty when the lock is free."""
        a: List[Arg] = []
        _opt(a, "NOW", now)
        return self._call("INFO", R.lock_info, *a)

    def check(self, token: int, now: Optional[int] = None) -> bool:
        """True when ``token`` belongs to a live hold."""
        a: List[Arg] = [token]
        _opt(a, "NOW", now)
        return self._call("CHECK", R.boolean, *a)


class HotPathMethods(_HotPathBase):
    """``HotPath``'s methods of the LOCK family."""

    def lock(self, key: Key) -> Lock:
        """A lock or semaphore with fencing tokens."""
        return Lock(self._runner, key)
