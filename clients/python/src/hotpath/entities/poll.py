"""The POLL family's entity handle, :class:`Poll`, and its ``HotPath``
methods (hotpath.entities gathers them into ``HotPath``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Sequence, Union, cast, overload

from .. import replies as R
from .._base import Arg, Key, _Entity, _HotPathBase, _opt

if TYPE_CHECKING:
    from ..spread_poll import SpreadPoll


class Poll(_Entity):
    """One-vote polls (docs/poll.md)."""
    family = "POLL"

    def create(self, mode: Optional[str] = None, maxvotes: Optional[int] = None,
               candidates: Optional[Sequence[Arg]] = None, start: Optional[int] = None,
               end: Optional[int] = None, tz: Optional[int] = None,
               ttl: Optional[int] = None, now: Optional[int] = None) -> bool:
        """Creates the poll with its rules (POLL.CREATE): ``mode`` ONCE, DAILY or
        MULTI, ``maxvotes``, the ``candidates`` allowed, ``start``/``end``
        (unix ms), ``tz`` (DAILY's day), ``ttl`` seconds. True (OK)."""
        a: List[Arg] = []
        _opt(a, "MODE", mode)
        _opt(a, "MAXVOTES", maxvotes)
        if candidates is not None:
            a += ["CANDIDATES", len(candidates), *candidates]
        _opt(a, "START", start)
        _opt(a, "END", end)
        _opt(a, "TZ", tz)
        _opt(a, "TTL", ttl)
        _opt(a, "NOW", now)
        return self._call("CREATE", R.ok, *a)

    def vote(self, user: Arg, candidate: Arg, now: Optional[int] = None, idem: Optional[Arg] = None) -> bool:
        """True when the vote counted, False for a duplicate."""
        a: List[Arg] = [user, candidate]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("VOTE", R.boolean, *a)

    def revoke(self, user: Arg, candidate: Optional[Arg] = None, now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        """Takes back the user's votes (only for ``candidate`` when given): the
        number of votes taken back."""
        a: List[Arg] = [user] + ([candidate] if candidate is not None else [])
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("REVOKE", R.integer, *a)

    def top(self, count: Optional[int] = None, offset: Optional[int] = None) -> List[R.PollEntry]:
        """The candidates with the most votes, best first: ``count`` from
        ``offset``."""
        a: List[Arg] = [count] if count is not None else []
        _opt(a, "OFFSET", offset)
        return self._call("TOP", R.poll_top, *a)

    def rank(self, candidate: Arg) -> Optional[R.PollRank]:
        """The candidate's rank (0: first) and votes; None when it has none."""
        return self._call("RANK", R.poll_rank, candidate)

    def status(self, user: Arg, now: Optional[int] = None) -> List[str]:
        """The candidates the user voted for (today's, for a DAILY poll)."""
        a: List[Arg] = [user]
        _opt(a, "NOW", now)
        return self._call("STATUS", R.texts, *a)

    def info(self) -> Optional[R.PollInfo]:
        """The poll's rules and totals; a poll never created reads as MODE ONCE
        with nothing in it."""
        return self._call("INFO", R.poll_info)

    def sync(self) -> R.PollSync:
        """Freezes the vote changes since the last acknowledged write-back: the
        same snapshot again until :meth:`syncack` acknowledges its epoch."""
        return self._call("SYNC", R.poll_sync)

    def syncack(self, epoch: int) -> bool:
        """Acknowledges the snapshot of :meth:`sync`: True when ``epoch`` was the
        pending one, False for a stale or unknown epoch."""
        return self._call("SYNCACK", R.boolean, epoch)


class HotPathMethods(_HotPathBase):
    """``HotPath``'s methods of the POLL family."""

    @overload
    def poll(self, key: Key, spread: None = None) -> Poll: ...

    @overload
    def poll(self, key: Key, spread: int) -> "SpreadPoll": ...

    def poll(self, key: Key, spread: Optional[int] = None) -> Union[Poll, "SpreadPoll"]:
        """A poll; with ``spread=n``, the poll spread over ``n`` shards
        (docs/spread.md)."""
        if spread is not None:
            from ..spread_poll import SpreadPoll
            return cast(SpreadPoll, self._spread(SpreadPoll, key, spread))
        return Poll(self._runner, key)
