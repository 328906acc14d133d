"""The RATE family's entity handle, :class:`Rate`, and its ``HotPath``
methods (hotpath.entities gathers them into ``HotPath``)."""
from __future__ import annotations

from typing import Iterable, List, Optional, Tuple

from .. import replies as R
from .._base import Arg, Cmd, Key, _Entity, _HotPathBase, _opt


class Rate(_Entity):
    """Rate limits (docs/rate.md); the limiter is the key itself."""
    family = "RATE"

    def check(self, limit: int, period_ms: int, algo: Optional[str] = None,
              burst: Optional[int] = None, cost: Optional[int] = None, peek: bool = False,
              now: Optional[int] = None, idem: Optional[Arg] = None) -> R.RateResult:
        """Checks and consumes one request (``cost`` units) against ``limit``
        per ``period_ms`` (``algo``: GCRA by default, FIXED, SLIDING, LOG or
        BUCKET; ``peek``: consume nothing). ``allowed`` is the first field."""
        a: List[Arg] = [limit, period_ms]
        _opt(a, "ALGO", algo)
        _opt(a, "BURST", burst)
        _opt(a, "COST", cost)
        if peek:
            a.append("PEEK")
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("CHECK", R.rate, *a)

    def throttle(self, max_burst: int, count: int, period_s: int,
                 quantity: Optional[int] = None, now: Optional[int] = None, idem: Optional[Arg] = None) -> R.Throttle:
        """redis-cell's CL.THROTTLE, reply for reply: ``limited`` is its first
        field (False when the request is allowed)."""
        a: List[Arg] = [max_burst, count, period_s]
        if quantity is not None:
            a.append(quantity)
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("THROTTLE", R.throttle, *a)

    def reset(self) -> bool:
        """Drops the limiter's state: True when there was some."""
        return self._call("RESET", R.boolean)


class HotPathMethods(_HotPathBase):
    """``HotPath``'s methods of the RATE family."""

    def rate(self, key: Key) -> Rate:
        """A rate limiter (the key is the limiter)."""
        return Rate(self._runner, key)

    def rate_multi(self, rules: Iterable[Tuple[Key, int, int]], cost: Optional[int] = None,
                   peek: bool = False, now: Optional[int] = None) -> R.RateResult:
        """Checks ``(key, limit, period_ms)`` rules together (RATE.MULTI):
        all are consumed or none. On a cluster, the keys share one slot."""
        rules = list(rules)
        keys = [k for k, _, _ in rules]
        a: List[Arg] = [len(keys), *keys, "LIMITS"]
        for _, limit, period in rules:
            a += [limit, period]
        _opt(a, "COST", cost)
        if peek:
            a.append("PEEK")
        _opt(a, "NOW", now)
        return self._run(Cmd("RATE.MULTI", a, keys, R.rate))
