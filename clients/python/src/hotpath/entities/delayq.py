"""The DELAYQ family's entity handle, :class:`DelayQueue`, and its ``HotPath``
methods (hotpath.entities gathers them into ``HotPath``)."""
from __future__ import annotations

from typing import List, Optional, Tuple

from .. import replies as R
from .._base import Arg, Key, _Entity, _HotPathBase, _opt


class DelayQueue(_Entity):
    """A delay queue with leases and dead letters (docs/reference/delayq.md)."""
    family = "DELAYQ"

    def add(self, id: Arg, payload: Arg, delay: Optional[int] = None, at: Optional[int] = None,
            attempts: Optional[int] = None, replace: bool = False,
            now: Optional[int] = None, lost_max: Optional[int] = None, idem: Optional[Arg] = None) -> bool:
        """True when added (or replaced), False when ``id`` exists.
        ``lost_max``: the most deliveries after a lost lease (LOSTMAX, server
        2.1.0)."""
        a: List[Arg] = [id, payload]
        _opt(a, "DELAY", delay)
        _opt(a, "AT", at)
        _opt(a, "ATTEMPTS", attempts)
        _opt(a, "LOSTMAX", lost_max)
        if replace:
            a.append("REPLACE")
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("ADD", R.boolean, *a)

    def poll(self, lease_ms: int, count: Optional[int] = None, block: Optional[int] = None,
             now: Optional[int] = None) -> List[R.Job]:
        """Up to ``count`` ready jobs, each leased for ``lease_ms``; empty when
        none (after ``block`` ms with it)."""
        a: List[Arg] = [lease_ms]
        _opt(a, "COUNT", count)
        _opt(a, "BLOCK", block)
        _opt(a, "NOW", now)
        return self._call("POLL", R.jobs, *a)

    def ack(self, id: Arg, receipt: int) -> bool:
        """Removes the job delivered with ``receipt``: True, or False for a
        stale receipt (nothing changed)."""
        return self._call("ACK", R.boolean, id, receipt)

    def nack(self, id: Arg, receipt: int, delay: Optional[int] = None,
             backoff: Optional[Tuple[int, int]] = None, now: Optional[int] = None, idem: Optional[Arg] = None) -> R.Nack:
        """``backoff`` is ``(base_ms, max_ms)``."""
        a: List[Arg] = [id, receipt]
        _opt(a, "DELAY", delay)
        if backoff is not None:
            a += ["BACKOFF", backoff[0], backoff[1]]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("NACK", R.nack, *a)

    def extend(self, id: Arg, receipt: int, lease_ms: int, now: Optional[int] = None) -> bool:
        """Restarts the lease of the delivery with ``receipt`` for
        ``lease_ms`` (a consumer's heartbeat): False for a stale receipt."""
        a: List[Arg] = [id, receipt, lease_ms]
        _opt(a, "NOW", now)
        return self._call("EXTEND", R.boolean, *a)

    def dead(self, count: Optional[int] = None) -> List[R.DeadLetter]:
        """The oldest dead letters (``count``): id, payload, attempts, dead-at."""
        a: List[Arg] = []
        _opt(a, "COUNT", count)
        return self._call("DEAD", R.dead_letters, *a)

    def redrive(self, count: Optional[int] = None, id: Optional[Arg] = None,
                now: Optional[int] = None) -> int:
        """Dead letters put back in line: the oldest ``count``, or ``id``."""
        a: List[Arg] = []
        _opt(a, "COUNT", count)
        _opt(a, "ID", id)
        _opt(a, "NOW", now)
        return self._call("REDRIVE", R.integer, *a)

    def info(self, now: Optional[int] = None) -> R.QueueInfo:
        """The queue's jobs, ready, scheduled and dead counts."""
        a: List[Arg] = []
        _opt(a, "NOW", now)
        return self._call("INFO", R.queue_info, *a)

    def cancel(self, id: Arg, force: bool = False, now: Optional[int] = None) -> bool:
        """True when the job was removed (waiting, ready or dead), False when
        there is none. A job under a running lease raises ``job is leased``
        unless ``force`` (its holder's receipt then goes stale)."""
        a: List[Arg] = [id]
        if force:
            a.append("FORCE")
        _opt(a, "NOW", now)
        return self._call("CANCEL", R.boolean, *a)

    def peek(self, count: Optional[int] = None,
             id: Optional[Arg] = None) -> List[R.ScheduledJob]:
        """The first ``count`` jobs in line (default 10, at most 100), the
        earliest first, or the one ``id``; changes nothing."""
        a: List[Arg] = []
        _opt(a, "COUNT", count)
        _opt(a, "ID", id)
        return self._call("PEEK", R.scheduled_jobs, *a)

    def purge(self, max_len: Optional[int] = None, max_age_ms: Optional[int] = None,
              now: Optional[int] = None) -> int:
        """Dead letters removed, the oldest first, beyond ``max_len`` or older
        than ``max_age_ms``: at most 100 per call (call again while it
        returns 100)."""
        a: List[Arg] = []
        _opt(a, "MAXLEN", max_len)
        _opt(a, "MAXAGE", max_age_ms)
        _opt(a, "NOW", now)
        return self._call("PURGE", R.integer, *a)


class HotPathMethods(_HotPathBase):
    """``HotPath``'s methods of the DELAYQ family."""

    def delayq(self, key: Key) -> DelayQueue:
        """A delay queue."""
        return DelayQueue(self._runner, key)
