"""A poll spread over shards (docs/spread.md, docs/poll.md).

Each voter's ballots live in shard ``routing.shard_of(user, n)``, so a
voter's dedup is one shard's; every shard keeps the poll's rules, its own
board and its own exact counts, and a candidate's total is the sum of its
counts over the shards.

Reads that span shards are one call, and exact: :meth:`SpreadPoll.top` and
:meth:`SpreadPoll.rank` run a threshold algorithm over the shards' boards
(docs/spread.md, "POLL: an exact top over shards"). Each round reads a page
of every shard's board (one pipeline per node), resolves with ``POLL.RANK``
the candidates that could still matter on the shards that did not list
them, and stops as soon as no unread candidate can rank above the answer.
A shard that fails fails the call (:class:`hotpath.ShardError`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import replies as R
from .spread import ShardError, _raise_first, _Spread

Arg = Any

#: The most candidates one ``POLL.TOP`` returns (``poll-range-max``'s
#: default); pass ``page_max`` for a server configured lower.
PAGE_MAX = 1000
#: The first page read from each shard for a top ``k`` is ``max(k, this)``:
#: a board that fits in it is read whole in one round, with no POLL.RANK.
FIRST_PAGE = 100


@dataclass(frozen=True)
class SpreadPollInfo:
    """``POLL.INFO`` over a spread poll: the rules (every shard has the
    same), the sums of ballots and votes, the absolute expiry (unix ms, 0
    for none) and each shard's own."""
    mode: str
    maxvotes: int
    start: int
    end: int
    ballots: int
    votes: int
    shards: int
    expires: int
    per_shard: List[R.PollInfo]


@dataclass(frozen=True)
class SpreadPollSync:
    """``POLL.SYNC`` over a spread poll: each shard's epoch and deltas, and
    their merge (a candidate's delta is the sum of its shards' deltas; zero
    sums left out; largest changes first). Apply ``deltas`` and record
    ``epochs`` in one database transaction, then :meth:`SpreadPoll.syncack`."""
    epochs: List[int]
    per_shard: List[R.PollSync]
    deltas: List[R.PollEntry]


def _key(c: str) -> bytes:
    return c.encode("utf-8", "surrogateescape")


def _order(entry: Tuple[str, int]) -> Tuple[int, bytes]:
    """Sort key, reversed: most votes first, then name descending."""
    return (entry[1], _key(entry[0]))


class _Merge:
    """What the rounds have learnt of the shards' boards."""

    def __init__(self, n: int):
        self.depth = [0] * n
        self.done = [False] * n
        # The count of the last entry read from each shard: an unread
        # entry has at most this count there.
        self.last = [0] * n
        self.known: Dict[str, List[Optional[int]]] = {}

    def all_done(self) -> bool:
        return all(self.done)

    def bound(self) -> int:
        """The most an unread candidate can have in total."""
        return sum(max(l, 0) for l, d in zip(self.last, self.done) if not d)

    def value(self, c: str, i: int) -> Optional[int]:
        v = self.known.get(c)
        if v is not None and v[i] is not None:
            return v[i]
        return 0 if self.done[i] else None

    def bounds(self, c: str) -> Tuple[int, int, bool]:
        lo = hi = 0
        exact = True
        for i in range(len(self.done)):
            v = self.value(c, i)
            if v is None:
                hi += max(self.last[i], 0)
                exact = False
            else:
                lo += v
                hi += v
        return lo, hi, exact

    def read(self, poll: "SpreadPoll", step: int) -> None:
        asks: List[Tuple[int, int, int]] = []
        for i, d in enumerate(self.done):
            off = 0
            while not d and off < step:
                count = min(poll.page_max, step - off)
                asks.append((i, self.depth[i] + off, count))
                off += count
        for (i, _, count), page in zip(asks, poll._pages(asks)):
            if self.done[i]:
                continue
            self.depth[i] += len(page)
            if len(page) < count:
                self.done[i] = True
            if page:
                self.last[i] = page[-1].votes
            for e in page:
                self.known.setdefault(e.candidate, [None] * len(self.done))[i] = e.votes

    def unknowns(self, cands: Sequence[str]) -> int:
        return sum(1 for c in cands for i in range(len(self.done)) if self.value(c, i) is None)

    def resolve(self, poll: "SpreadPoll", cands: Sequence[str]) -> None:
        asks = [(c, i) for c in cands for i in range(len(self.done)) if self.value(c, i) is None]
        if not asks:
            return
        for (c, i), v in zip(asks, poll._votes(asks)):
            self.known.setdefault(c, [None] * len(self.done))[i] = v or 0


def _budget(n: int, k: int) -> int:
    """The most single counts a round resolves; with more candidates in
    doubt (flat boards, near-ties), reading deeper pages is cheaper."""
    return n * min(max(k, 16), 1000)


class SpreadPoll(_Spread):
    """A poll spread over ``n`` shards: ``HotPath(r).spread_poll(key, n)`` or
    ``SpreadPoll(backend, key, n)``."""
    family = "POLL"

    def __init__(self, backend: Any, base: Any, n: int, page_max: int = PAGE_MAX):
        super().__init__(backend, base, n)
        self.page_max = max(1, page_max)

    def create(self, mode: Optional[str] = None, maxvotes: Optional[int] = None,
               candidates: Optional[Sequence[Arg]] = None, start: Optional[int] = None,
               end: Optional[int] = None, tz: Optional[int] = None, ttl: Optional[int] = None,
               now: Optional[int] = None) -> bool:
        """Creates every shard with the poll's rules, after checking them
        all: a shard in use stops the creation before anything is written.
        Shard 0 first, then the others at once; again with the same rules is
        harmless. With a TTL, every shard expires at one instant: ``now``,
        this machine's clock, or (when some shards exist already, a creation
        run again) the one that gives their expiry."""
        checks = self._each([(i, "INFO", ()) for i in range(self.n)])
        for k, r in zip(self.shards.keys, checks):
            if isinstance(r, BaseException):
                if not str(r).endswith("does not exist"):
                    raise ShardError(k, r)
                continue
            expires = R.fields(r).get("expires")
            if ttl is not None and expires is not None and R.integer(expires) > 0:
                now = R.integer(expires) - ttl * 1000
        if ttl is not None and now is None:
            now = int(time.time() * 1000)
        a: List[Arg] = []
        for name, v in (("MODE", mode), ("MAXVOTES", maxvotes)):
            if v is not None:
                a += [name, v]
        if candidates is not None:
            a += ["CANDIDATES", len(candidates), *candidates]
        for name, v in (("START", start), ("END", end), ("TZ", tz), ("TTL", ttl), ("NOW", now)):
            if v is not None:
                a += [name, v]
        try:
            R.ok(self._one("CREATE", 0, *a))
        except ShardError:
            raise
        except Exception as e:  # noqa: BLE001 (named by its shard)
            raise ShardError(self.shards.keys[0], e) from e
        rest = self._each([(i, "CREATE", a) for i in range(1, self.n)])
        for v in _raise_first(self.shards.keys[1:], rest):
            R.ok(v)
        return True

    def _user(self, sub: str, user: Arg, *args: Arg) -> Any:
        return self._one(sub, self.shards.shard_of(user), user, *args)

    def vote(self, user: Arg, candidate: Arg, now: Optional[int] = None) -> bool:
        """On the voter's shard: True when counted, False for a duplicate."""
        return bool(R.integer(self._user("VOTE", user, candidate,
                                         *(["NOW", now] if now is not None else []))))

    def revoke(self, user: Arg, candidate: Optional[Arg] = None, now: Optional[int] = None) -> int:
        a: List[Arg] = ([candidate] if candidate is not None else []) + (
            ["NOW", now] if now is not None else [])
        return R.integer(self._user("REVOKE", user, *a))

    def status(self, user: Arg, now: Optional[int] = None) -> List[str]:
        return R.texts(self._user("STATUS", user, *(["NOW", now] if now is not None else [])))

    # ---- reads over every shard ----

    def _pages(self, asks: Sequence[Tuple[int, int, int]]) -> List[List[R.PollEntry]]:
        res = self._each([(i, "TOP", [count, "OFFSET", off]) for i, off, count in asks])
        res = _raise_first([self.shards.keys[i] for i, _, _ in asks], res)
        return [R.poll_top(v) for v in res]

    def _votes(self, asks: Sequence[Tuple[str, int]]) -> List[Optional[int]]:
        res = self._each([(i, "RANK", [c]) for c, i in asks])
        res = _raise_first([self.shards.keys[i] for _, i in asks], res)
        out: List[Optional[int]] = []
        for v in res:
            r = R.poll_rank(v)
            out.append(None if r is None else r.votes)
        return out

    def totals(self, *candidates: str) -> List[Optional[int]]:
        """Each candidate's exact total (the sum over the shards; None for a
        candidate on no shard's board), in order."""
        asks = [(c, i) for c in candidates for i in range(self.n)]
        votes = self._votes(asks)
        out: List[Optional[int]] = []
        for j in range(len(candidates)):
            per = votes[j * self.n:(j + 1) * self.n]
            out.append(None if all(v is None for v in per) else sum(v or 0 for v in per))
        return out

    def top(self, count: int = 10, offset: int = 0) -> List[R.PollEntry]:
        """The exact top ``count`` from place ``offset`` of the merged board
        (most votes first; ties: name descending, as POLL.TOP orders one
        board). The cost grows with ``offset + count``."""
        k = offset + count
        if k <= 0:
            return []
        m = _Merge(self.n)
        step = max(k, FIRST_PAGE)
        while True:
            m.read(self, step)
            lowers = sorted((m.bounds(c)[0] for c in m.known), reverse=True)
            floor = lowers[k - 1] if len(lowers) >= k else None
            need = [c for c in m.known
                    if not m.bounds(c)[2] and (floor is None or m.bounds(c)[1] >= floor)]
            # Until every candidate that could reach the top is exact, the
            # top is not known.
            resolved = m.unknowns(need) <= _budget(self.n, k)
            if resolved:
                m.resolve(self, need)
            exact = [(c, b[0]) for c in m.known for b in [m.bounds(c)] if b[2]]
            exact.sort(key=_order, reverse=True)
            if m.all_done() or (resolved and len(exact) >= k and exact[k - 1][1] > m.bound()):
                return [R.PollEntry(c, v) for c, v in exact[offset:k]]
            step *= 2

    def rank(self, candidate: str) -> Optional[R.PollRank]:
        """A candidate's exact rank on the merged board (0-based) and total;
        None for a candidate on no shard's board. The cost grows with the
        rank."""
        own = self._votes([(candidate, i) for i in range(self.n)])
        if all(v is None for v in own):
            return None
        total = sum(v or 0 for v in own)
        m = _Merge(self.n)
        m.known[candidate] = [v or 0 for v in own]
        step = FIRST_PAGE
        me = _order((candidate, total))
        while True:
            m.read(self, step)
            step *= 2
            # An unread candidate has at most the bound: below the total,
            # it ranks below; equal, it might still come first by name.
            if not m.all_done() and m.bound() >= total:
                continue
            above = 0
            unsure: List[str] = []
            for c in m.known:
                if c == candidate:
                    continue
                lo, hi, exact = m.bounds(c)
                if exact:
                    above += _order((c, lo)) > me
                elif lo > total:
                    above += 1
                elif hi >= total:
                    unsure.append(c)
            # Many candidates in doubt: deeper pages settle them for less.
            if m.all_done() or m.unknowns(unsure) <= _budget(self.n, 0):
                break
        m.resolve(self, unsure)
        for c in unsure:
            above += _order((c, m.bounds(c)[0])) > me
        return R.PollRank(above, total)

    def info(self) -> Optional[SpreadPollInfo]:
        """POLL.INFO of every shard and the sums; None when never created."""
        raw = self._all("INFO")
        per = [R.poll_info(v) for v in raw]
        if any(p is None for p in per):
            return None
        first = per[0]
        assert first is not None
        expires = R.fields(raw[0]).get("expires")
        return SpreadPollInfo(first.mode, first.maxvotes, first.start, first.end,
                              sum(p.ballots for p in per if p), sum(p.votes for p in per if p),
                              self.n, 0 if expires is None else R.integer(expires),
                              [p for p in per if p])

    def sync(self) -> SpreadPollSync:
        """POLL.SYNC on every shard (after checking every shard, so that a
        missing one fails the call before any shard freezes), merged."""
        self._all("INFO")
        per = [R.poll_sync(v) for v in self._all("SYNC")]
        total: Dict[str, int] = {}
        for s in per:
            for d in s.deltas:
                total[d.candidate] = total.get(d.candidate, 0) + d.votes
        deltas = [R.PollEntry(c, v) for c, v in total.items() if v != 0]
        deltas.sort(key=lambda e: (abs(e.votes), _key(e.candidate)), reverse=True)
        return SpreadPollSync([s.epoch for s in per], per, deltas)

    def syncack(self, sync: SpreadPollSync) -> List[bool]:
        """POLL.SYNCACK of each shard's epoch: per shard, True when it was
        that shard's pending snapshot."""
        res = self._each([(i, "SYNCACK", [e]) for i, e in enumerate(sync.epochs)])
        return [bool(R.integer(v)) for v in _raise_first(self.shards.keys, res)]


#: The public names (the rest is the package's own).
__all__ = [
    "SpreadPoll", "SpreadPollInfo", "SpreadPollSync", "PAGE_MAX", "FIRST_PAGE",
]
