"""Flash-sale stock spread over shards (docs/stock.md, "Spread form").

A buyer's RESERVE, CONFIRM and RELEASE go to the shard of the user
(``routing.shard_of(user, n)``). A shard that answers ``REFILL`` is
refilled from the pool on shard 0 by a transfer: ``STOCK.TRANSFER`` on the
pool, ``STOCK.APPLY`` on the shard, ``STOCK.SETTLE`` on the pool, each
step idempotent on the transfer id. When the pool is dry, open transfers
are finished and the other shards' available units handed back first;
only when none is left anywhere is the shard marked dry, after which it
answers ``SOLDOUT``.
"""
from __future__ import annotations

import itertools
import os
import time
from dataclasses import dataclass
from typing import Any, List, Optional, Tuple

from redis.exceptions import ResponseError

from . import replies as R
from .spread import _Spread

Arg = Any

_seq = itertools.count()


def _transfer_id(shard: int) -> str:
    """An id no other client picks: the process, the clock, a counter."""
    return f"{shard}:{os.getpid()}:{time.time_ns():x}:{next(_seq)}"


class StillRefilling(ResponseError):
    """The shard still lacked units after the handle's rounds (other
    buyers took the refills first): try again."""


@dataclass(frozen=True)
class StockPool:
    """``STOCK.POOL``: the SKU's units, the pool's free units, the units
    of open refills, the open transfers and up to 100 of them as
    ``(transfer, shard, delta)``, the delta the shard's APPLY takes."""
    total: int
    free: int
    transit: int
    open: int
    pending: List[Tuple[str, int, int]]


@dataclass(frozen=True)
class SpreadStockInfo:
    pool: StockPool
    shards: List[R.StockInfo]

    @property
    def available(self) -> int:
        return sum(s.available for s in self.shards)

    @property
    def reserved(self) -> int:
        return sum(s.reserved for s in self.shards)

    @property
    def sold(self) -> int:
        return sum(s.sold for s in self.shards)


class SpreadStock(_Spread):
    family = "STOCK"

    def __init__(self, backend: Any, base: Any, n: int, chunk: Optional[int] = None,
                 rounds: int = 3):
        super().__init__(backend, base, n)
        self.chunk = chunk
        self.rounds = rounds

    def shard_of(self, user: Arg) -> int:
        return self.shards.shard_of(user)

    def create(self, total: int, limit: Optional[int] = None, lease_ms: Optional[int] = None,
               ttl: Optional[int] = None, now: Optional[int] = None) -> bool:
        """Creates every shard; shard 0, with the pool of ``total``, first."""
        a: List[Arg] = [total]
        for name, v in (("LIMIT", limit), ("LEASE", lease_ms), ("TTL", ttl), ("NOW", now)):
            if v is not None:
                a += [name, v]
        return self._create(*a)

    def reserve(self, user: Arg, order: Arg, quantity: int = 1,
                now: Optional[int] = None) -> R.Reservation:
        """``STOCK.RESERVE`` on the user's shard, refilling it as needed:
        OK, LIMIT or SOLDOUT (the whole SKU: the shard was marked dry).
        Raises :class:`StillRefilling` when the shard still lacked units
        after the handle's rounds."""
        i = self.shard_of(user)
        a: List[Arg] = [user, order, quantity]
        if now is not None:
            a += ["NOW", now]
        for rnd in range(self.rounds + 1):
            v = R.array(self._one("RESERVE", i, *a), 3)
            status = R.text(v[0])
            if status != "REFILL":
                return R.reservation(v)
            if rnd < self.rounds:
                self.refill(i, quantity)
        raise StillRefilling("hotpath: shard still refilling, try again")

    def confirm(self, user: Arg, order: Arg, now: Optional[int] = None) -> bool:
        a: List[Arg] = [order]
        if now is not None:
            a += ["NOW", now]
        return bool(R.integer(self._one("CONFIRM", self.shard_of(user), *a)))

    def release(self, user: Arg, order: Arg) -> bool:
        return bool(R.integer(self._one("RELEASE", self.shard_of(user), order)))

    def pool(self) -> StockPool:
        f = R.fields(self._one("POOL", 0))
        p = R.array(f["pending"])
        pending = [(R.text(p[j]), R.integer(p[j + 1]), R.integer(p[j + 2]))
                   for j in range(0, len(p), 3)]
        return StockPool(R.integer(f["total"]), R.integer(f["free"]), R.integer(f["transit"]),
                         R.integer(f["open"]), pending)

    def info(self) -> SpreadStockInfo:
        shards = [R.stock_info(v) for v in self._all("INFO")]
        return SpreadStockInfo(self.pool(), [s for s in shards if s is not None])

    def transfer(self, id: str, shard: int, delta: int) -> Tuple[str, int, int, int]:
        """Opens a transfer on the pool: (status, units, free, open)."""
        v = R.array(self._one("TRANSFER", 0, id, shard, delta), 4)
        return R.text(v[0]), R.integer(v[1]), R.integer(v[2]), R.integer(v[3])

    def finish(self, id: str, shard: int, delta: int) -> int:
        """Applies a transfer on its shard and settles it on the pool; the
        signed units applied."""
        applied = R.integer(R.array(self._one("APPLY", shard, id, delta), 2)[0])
        self._one("SETTLE", 0, id, applied)
        return applied

    def recover(self) -> int:
        """Finishes every open transfer the pool lists; how many."""
        pending = self.pool().pending
        for id, shard, delta in pending:
            self.finish(id, shard, delta)
        return len(pending)

    def _chunk(self) -> int:
        if self.chunk is None:
            self.chunk = max(1, self.pool().total // (16 * self.n))
        return self.chunk

    def refill(self, i: int, quantity: int) -> None:
        """The refill dance for shard ``i`` (docs/stock.md)."""
        want = max(quantity, self._chunk())
        tid = _transfer_id(i)
        status, units, _, open_ = self.transfer(tid, i, want)
        if status == "OPEN" and units > 0:
            self.finish(tid, i, units)
            return
        if open_ > 0:
            self.recover()
            return
        got = 0
        for j, v in enumerate(self._all("INFO")):
            if j == i or got >= want:
                continue
            s = R.stock_info(v)
            if s is None or s.available <= 0:
                continue
            take = min(s.available, want - got)
            hid = _transfer_id(j)
            self.transfer(hid, j, -take)
            got -= self.finish(hid, j, -take)
        if got > 0:
            # Back to the pool's refill at once: handed-back units do not
            # wait in the pool, where a shard marked dry meanwhile by
            # another client's sweep would never ask for them.
            tid = _transfer_id(i)
            status, units, _, _ = self.transfer(tid, i, want)
            if status == "OPEN" and units > 0:
                self.finish(tid, i, units)
            return
        self._one("APPLY", i, _transfer_id(i), 0)

    def audit(self) -> List[str]:
        """The cross-shard law from the ledgers; the problems found."""
        info = self.info()
        in_transit = 0
        for id, shard, delta in info.pool.pending:
            key = self.shards.keys[shard] + b":applied"
            applied = self.backend.call("HGET", [key, id], [key])
            if delta > 0 and applied is None:
                in_transit += delta
            elif delta < 0 and applied is not None:
                in_transit -= int(applied)
        held = sum(s.total for s in info.shards)
        problems = []
        if info.pool.free + in_transit + held != info.pool.total:
            problems.append(f"law: free {info.pool.free} + in-transit {in_transit} + shards "
                            f"{held} != total {info.pool.total}")
        return problems


__all__ = ["SpreadStock", "SpreadStockInfo", "StockPool", "StillRefilling"]
