"""A leaderboard spread over shards (docs/spread.md, docs/rank.md).

Member ``m`` lives in shard ``routing.shard_of(m, n)``, a complete board of
its own with the board's layout, so packed tie-broken scores stay exact per
shard and compare across shards. Writes go to the member's shard; the
global rank, top and around are one call: ``RANK.POSITION`` on every shard
at once (one pipeline per node), merged in the board's exact order (packed
score, then member byte-wise, both descending: ``ZREVRANGE`` on one board).
A shard that fails fails the whole call (:class:`hotpath.ShardError`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from . import replies as R
from .spread import ShardError, _raise_first, _Spread

Arg = Any

#: The most places one ``RANK.POSITION`` returns (``rank-range-max``'s
#: default); pass ``page_max`` for a server configured lower.
PAGE_MAX = 1000


@dataclass(frozen=True)
class RankPositionEntry:
    """An entry of ``RANK.POSITION``: the member, its points and its packed
    score (exact, comparable across the shards of one board). On a LAYOUT
    WIDE board the score is the points and ``name`` the stored name
    (``<16 digits>:<member>``, the time in its digits), which orders equal
    points; None on a packed board."""
    member: str
    points: int
    score: int
    name: Optional[str] = None

    @property
    def tie(self) -> str:
        """What orders equal scores: the stored name on a wide board, the
        member on a packed one (``AT score tie`` is this entry's position)."""
        return self.name if self.name is not None else self.member


@dataclass(frozen=True)
class RankPosition:
    """``RANK.POSITION`` of one shard: the members above the position, the
    entry at it (when the shard holds it), and the entries just above and
    just below it, best first."""
    above: int
    at: Optional[RankPositionEntry]
    above_list: List[RankPositionEntry]
    below_list: List[RankPositionEntry]


@dataclass(frozen=True)
class ShardRankWrite:
    """A write on one shard: the member's points now stored, and the shard."""
    points: int
    shard: int


def _entries(v: Any) -> List[RankPositionEntry]:
    a = R.array(v)
    if len(a) % 3:
        raise R.ReplyError(f"RANK.POSITION entries: {v!r}")
    out = []
    for i in range(0, len(a), 3):
        points = R.integer(a[i + 1])
        if isinstance(a[i + 2], (bytes, str)):
            # A wide board answers the stored name where a packed one
            # answers the packed score.
            out.append(RankPositionEntry(R.text(a[i]), points, points, R.text(a[i + 2])))
        else:
            out.append(RankPositionEntry(R.text(a[i]), points, R.integer(a[i + 2])))
    return out


def rank_position(v: Any) -> Optional[RankPosition]:
    """Parses a ``RANK.POSITION`` reply; None for a MEMBER not on the board."""
    if v is None:
        return None
    a = R.array(v, 4)
    at = None if a[1] is None else _entries(a[1])[0]
    return RankPosition(R.integer(a[0]), at, _entries(a[2]), _entries(a[3]))


def _order(e: RankPositionEntry) -> Tuple[int, bytes]:
    # Sorted with reverse=True: higher score, then the greater member
    # (stored name on a wide board).
    return (e.score, e.tie.encode("utf-8", "surrogateescape"))


class SpreadRank(_Spread):
    """A leaderboard spread over ``n`` shards: ``SpreadRank(hp.backend,
    "week:42", 16)``."""
    family = "RANK"

    def create(self, tiebreak: Optional[str] = None, unit: Optional[str] = None,
               digits: Optional[int] = None, epoch: Optional[int] = None,
               ttl: Optional[int] = None, now: Optional[int] = None,
               layout: Optional[str] = None) -> bool:
        """Creates every shard with the same layout, shard 0 first (``layout``
        ``"WIDE"`` for a LAYOUT WIDE board). Again with the same layout and
        count: True, nothing changes."""
        a: List[Arg] = []
        for name, v in (("LAYOUT", layout), ("TIEBREAK", tiebreak), ("UNIT", unit), ("DIGITS", digits),
                        ("EPOCH", epoch), ("TTL", ttl), ("NOW", now)):
            if v is not None:
                a += [name, v]
        try:
            R.ok(self._one("CREATE", 0, *a))
        except Exception as e:  # noqa: BLE001 (named by its shard)
            raise ShardError(self.shards.keys[0], e) from e
        rest = self._each([(i, "CREATE", a) for i in range(1, self.n)])
        for v in _raise_first(self.shards.keys[1:], rest):
            R.ok(v)
        return True

    def _write(self, sub: str, member: Arg, args: List[Arg], now: Optional[int]) -> ShardRankWrite:
        i = self.shards.shard_of(member)
        a = [member, *args] + (["NOW", now] if now is not None else [])
        return ShardRankWrite(R.integer(self._one(sub, i, *a)), i)

    def add(self, member: Arg, points: int, gt: bool = False, lt: bool = False,
            now: Optional[int] = None) -> ShardRankWrite:
        return self._write("ADD", member, [points] + (["GT"] if gt else []) + (["LT"] if lt else []),
                           now)

    def incr(self, member: Arg, delta: int, now: Optional[int] = None) -> ShardRankWrite:
        return self._write("INCR", member, [delta], now)

    def rem(self, *members: Arg) -> int:
        """Members removed: one RANK.REM per shard asked, all at once."""
        by: Dict[int, List[Arg]] = {}
        for m in members:
            by.setdefault(self.shards.shard_of(m), []).append(m)
        order = sorted(by)
        res = self._each([(i, "REM", by[i]) for i in order])
        return sum(R.integer(v) for v in _raise_first([self.shards.keys[i] for i in order], res))

    def shard_counts(self) -> List[int]:
        return [R.integer(v) for v in self._all("COUNT")]

    def count(self) -> int:
        """The board's members: the sum over the shards."""
        return sum(self.shard_counts())

    def position(self, shard: int, count: int, at: Optional[Tuple[int, Arg]] = None,
                 member: Optional[Arg] = None) -> Optional[RankPosition]:
        """``RANK.POSITION`` of one shard (the raw per-shard read)."""
        a: List[Arg] = [count]
        if at is not None:
            a += ["AT", at[0], at[1]]
        if member is not None:
            a += ["MEMBER", member]
        try:
            return rank_position(self._one("POSITION", shard, *a))
        except ShardError:
            raise
        except Exception as e:  # noqa: BLE001 (named by its shard)
            raise ShardError(self.shards.keys[shard], e) from e

    def _positions(self, member: Arg, count: int,
                   extra: Sequence[Tuple[int, str, Sequence[Arg]]] = ()
                   ) -> Optional[Tuple[RankPosition, List[RankPosition], List[Any]]]:
        """The member's position on its own shard, then on every other
        shard at once (with ``extra`` calls in the same round)."""
        own_i = self.shards.shard_of(member)
        own = self.position(own_i, count, member=member)
        if own is None:
            return None
        if own.at is None:
            raise R.ReplyError("RANK.POSITION MEMBER without its entry")
        others = [i for i in range(self.n) if i != own_i]
        calls: List[Tuple[int, str, Sequence[Arg]]] = [
            (i, "POSITION", [count, "AT", own.at.score, own.at.tie]) for i in others]
        calls += list(extra)
        res = _raise_first([self.shards.keys[i] for i, _, _ in calls], self._each(calls))
        pos = []
        for v in res[:len(others)]:
            p = rank_position(v)
            if p is None:
                raise R.ReplyError(f"RANK.POSITION AT: {v!r}")
            pos.append(p)
        return own, pos, res[len(others):]

    def get(self, member: Arg) -> Optional[R.RankEntry]:
        """Points, **global** 0-based rank and achievement time, as RANK.GET
        answers them on a single board; None for a member not on it. The
        rank is the sum over the shards of the members above it."""
        own_i = self.shards.shard_of(member)
        r = self._positions(member, 0, [(own_i, "GET", [member])])
        if r is None:
            return None
        own, others, (got,) = r
        e = R.rank_get(got)
        if e is None:  # removed between the two reads
            return None
        assert own.at is not None
        return R.RankEntry(own.at.points, own.above + sum(p.above for p in others), e.achieved_ms)

    def rank(self, member: Arg) -> Optional[int]:
        """The member's global 0-based rank; None when not on the board."""
        r = self._positions(member, 0)
        if r is None:
            return None
        own, others, _ = r
        return own.above + sum(p.above for p in others)

    def top(self, count: int = 10, offset: int = 0, page_max: int = PAGE_MAX) -> List[R.RankMember]:
        """The best ``count`` after ``offset``, ordered as RANK.TOP orders a
        single board (ties included). Within ``page_max`` (the server's
        rank-range-max) it is one round: a merge of every shard's best
        ``offset + count``; deeper, it walks the board page by page with
        :meth:`top_after`'s cursor (one round per ``page_max`` places)."""
        if count < 0 or offset < 0:
            raise ValueError("count and offset must be 0 or more")
        if offset + count <= page_max:
            merged = self._merged(None, offset + count)
            return [R.RankMember(e.member, e.points) for e in merged[offset:offset + count]]
        out: List[R.RankMember] = []
        for e in self._walk(None, page_max):
            if offset:
                offset -= 1
                continue
            if len(out) == count:
                break
            out.append(R.RankMember(e.member, e.points))
        return out

    def top_after(self, count: int, cursor: Optional[RankPositionEntry] = None
                  ) -> Tuple[List[RankPositionEntry], Optional[RankPositionEntry]]:
        """One page of the board in RANK.TOP's order: the best ``count``
        places (at most rank-range-max) after ``cursor`` (the last entry of
        the page before; None for the top), and the cursor of the next page
        (None when this page is the last). A cursor is a position, not an
        offset: a page stays exact while the board changes above it."""
        page = self._merged(cursor, count)[:count]
        nxt = page[-1] if len(page) == count and count > 0 else None
        return page, nxt

    def pages(self, page_max: int = PAGE_MAX) -> Iterator[RankPositionEntry]:
        """Every entry of the board, best first, read ``page_max`` places
        per round with :meth:`top_after`'s cursor."""
        return self._walk(None, page_max)

    def _walk(self, cursor: Optional[RankPositionEntry], page_max: int) -> Iterator[RankPositionEntry]:
        while True:
            page, cursor = self.top_after(page_max, cursor)
            yield from page
            if cursor is None:
                return

    def _merged(self, cursor: Optional[RankPositionEntry], depth: int) -> List[RankPositionEntry]:
        """Every shard's best ``depth`` below ``cursor`` (from the top when
        None), merged in the board's order: its first ``depth`` are the
        board's (no shard can hold more of them than it gave)."""
        a: List[Arg] = [depth]
        if cursor is not None:
            a += ["AT", cursor.score, cursor.tie]
        merged: List[RankPositionEntry] = []
        for v in self._all("POSITION", *a):
            p = rank_position(v)
            if p is None:
                raise R.ReplyError(f"RANK.POSITION: {v!r}")
            merged += p.below_list
        merged.sort(key=_order, reverse=True)
        return merged

    def around(self, member: Arg, n: int) -> Optional[List[R.RankPlace]]:
        """The member's global rank and the ``n`` places just above and
        below it, as RANK.AROUND answers on a single board; None when the
        member is not on the board."""
        r = self._positions(member, n)
        if r is None:
            return None
        own, others, _ = r
        assert own.at is not None
        rank = own.above + sum(p.above for p in others)
        above = sorted(own.above_list + [e for p in others for e in p.above_list],
                       key=_order, reverse=True)
        above = above[max(0, len(above) - n):] if n else []
        below = sorted(own.below_list + [e for p in others for e in p.below_list],
                       key=_order, reverse=True)[:n]
        start = rank - len(above)
        return [R.RankPlace(start + k, e.member, e.points)
                for k, e in enumerate(above + [own.at] + below)]


#: The public names (the rest is the package's own).
__all__ = [
    "SpreadRank", "RankPosition", "RankPositionEntry", "ShardRankWrite",
]
