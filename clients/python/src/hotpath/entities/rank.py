"""The RANK family's entity handle, :class:`Rank`, and its ``HotPath``
methods (hotpath.entities gathers them into ``HotPath``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Optional, Sequence, Union, cast, overload

from .. import replies as R
from .._base import Arg, Cmd, Key, _Entity, _HotPathBase, _opt

if TYPE_CHECKING:
    from ..spread_rank import SpreadRank


class Rank(_Entity):
    """Tie-broken leaderboards (docs/rank.md)."""
    family = "RANK"

    def create(self, tiebreak: Optional[str] = None, unit: Optional[str] = None,
               digits: Optional[int] = None, epoch: Optional[int] = None,
               ttl: Optional[int] = None, now: Optional[int] = None,
               layout: Optional[str] = None) -> bool:
        """layout: "PACKED" (default) or "WIDE" (points up to +/-(2^53 - 1)
        with a millisecond tie-break, docs/rank.md)."""
        a: List[Arg] = []
        _opt(a, "LAYOUT", layout)
        _opt(a, "TIEBREAK", tiebreak)
        _opt(a, "UNIT", unit)
        _opt(a, "DIGITS", digits)
        _opt(a, "EPOCH", epoch)
        _opt(a, "TTL", ttl)
        _opt(a, "NOW", now)
        return self._call("CREATE", R.ok, *a)

    def add(self, member: Arg, points: int, gt: bool = False, lt: bool = False,
            now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        """The member's points now stored."""
        a: List[Arg] = [member, points] + (["GT"] if gt else []) + (["LT"] if lt else [])
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("ADD", R.integer, *a)

    def incr(self, member: Arg, delta: int, now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        """Adds ``delta`` to the member's points (its achievement time becomes
        now): the points now stored."""
        a: List[Arg] = [member, delta]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("INCR", R.integer, *a)

    def decr(self, member: Arg, delta: int, now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        """Subtracts ``delta`` from the member's points (its achievement time
        becomes now): the points now stored."""
        a: List[Arg] = [member, delta]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("DECR", R.integer, *a)

    def get(self, member: Arg) -> Optional[R.RankEntry]:
        """The member's points, rank (0: first) and achievement time; None for
        a member not on the board."""
        return self._call("GET", R.rank_get, member)

    def top(self, count: Optional[int] = None, offset: Optional[int] = None) -> List[R.RankMember]:
        """The best members with their points, best first: ``count`` from
        ``offset``."""
        a: List[Arg] = [count] if count is not None else []
        _opt(a, "OFFSET", offset)
        return self._call("TOP", R.rank_top, *a)

    def around(self, member: Arg, n: int) -> Optional[List[R.RankPlace]]:
        """The places from ``n`` above to ``n`` below the member, with ranks and
        points; None for a member not on the board."""
        return self._call("AROUND", R.rank_around, member, n)

    def rem(self, *members: Arg) -> int:
        """Removes members: the number that were on the board."""
        return self._call("REM", R.integer, *members)

    def count(self) -> int:
        """The number of members on the board."""
        return self._call("COUNT", R.integer)


class HotPathMethods(_HotPathBase):
    """``HotPath``'s methods of the RANK family."""

    @overload
    def rank(self, key: Key, spread: None = None) -> Rank: ...

    @overload
    def rank(self, key: Key, spread: int) -> "SpreadRank": ...

    def rank(self, key: Key, spread: Optional[int] = None) -> Union[Rank, "SpreadRank"]:
        """A leaderboard; with ``spread=n``, the board spread over ``n``
        shards (docs/spread.md)."""
        if spread is not None:
            from ..spread_rank import SpreadRank
            return cast(SpreadRank, self._spread(SpreadRank, key, spread))
        return Rank(self._runner, key)

    def rank_merge(self, dest: Key, sources: Sequence[Key], aggregate: Optional[str] = None,
                   ttl: Optional[int] = None, now: Optional[int] = None) -> int:
        """RANK.MERGE: members in ``dest`` (all keys in one slot on a cluster)."""
        a: List[Arg] = [dest, len(sources), *sources]
        _opt(a, "AGGREGATE", aggregate)
        _opt(a, "TTL", ttl)
        _opt(a, "NOW", now)
        return self._run(Cmd("RANK.MERGE", a, [dest, *sources], R.integer))
