"""The STOCK family's entity handle, :class:`Stock`, and its ``HotPath``
methods (hotpath.entities gathers them into ``HotPath``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Awaitable, List, Optional, Union, cast, overload

from .. import replies as R
from .._base import Arg, AsyncRunner, Key, SyncRunner, _Entity, _HotPathBase, _opt

if TYPE_CHECKING:
    from ..spread_stock import SpreadStock


class Stock(_Entity):
    """Flash-sale stock that never oversells (docs/stock.md)."""
    family = "STOCK"

    def create(self, total: int, limit: Optional[int] = None, lease_ms: Optional[int] = None,
               ttl: Optional[int] = None, now: Optional[int] = None) -> bool:
        """``total`` units; ``limit`` per user (reserved and sold together),
        ``lease_ms`` a reservation's lease, ``ttl`` seconds from ``now``."""
        a: List[Arg] = [total]
        _opt(a, "LIMIT", limit)
        _opt(a, "LEASE", lease_ms)
        _opt(a, "TTL", ttl)
        _opt(a, "NOW", now)
        return self._call("CREATE", R.ok, *a)

    def reserve(self, user: Arg, order: Arg, quantity: int = 1,
                now: Optional[int] = None, idem: Optional[Arg] = None) -> R.Reservation:
        """Reserves ``quantity`` units for ``order`` under a lease: OK,
        SOLDOUT or LIMIT; the same order gets the same reply again."""
        a: List[Arg] = [user, order, quantity]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("RESERVE", R.reservation, *a)

    def confirm(self, order: Arg, now: Optional[int] = None) -> bool:
        """True when the reservation became a sale, False when the order was
        already confirmed (after its lease: the server's error)."""
        a: List[Arg] = [order]
        _opt(a, "NOW", now)
        return self._call("CONFIRM", R.boolean, *a)

    def release(self, order: Arg) -> bool:
        """True when the order's units went back, False when there was
        nothing to give back."""
        return self._call("RELEASE", R.boolean, order)

    def restock(self, delta: int, now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        """Adds ``delta`` units (removes available ones when negative);
        the units available after."""
        a: List[Arg] = [delta]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("RESTOCK", R.integer, *a)

    def info(self) -> Optional[R.StockInfo]:
        """The counts; None for an unknown stock."""
        return self._call("INFO", R.stock_info)

    def audit(self, cursor: Arg = 0, count: Optional[int] = None) -> R.StockAudit:
        """One audit step from ``cursor``."""
        a: List[Arg] = [cursor]
        _opt(a, "COUNT", count)
        return self._call("AUDIT", R.stock_audit, *a)

    def audit_all(self, count: Optional[int] = None) -> List[str]:
        """Every audit step, from cursor 0 until the walk is over: the
        problems found (the ledger's sums are checked when one step reads
        the whole ledger). On an asyncio client, a coroutine; not in a
        pipeline (each step needs the cursor of the one before)."""
        if isinstance(self._runner, AsyncRunner):
            return cast(List[str], self._audit_all_async(count))
        if not isinstance(self._runner, SyncRunner):
            raise TypeError("audit_all needs a client, not a pipeline: queue audit() steps")
        problems: List[str] = []
        cursor = "0"
        while True:
            step = self.audit(cursor, count)
            problems += step.problems
            cursor = step.cursor
            if cursor == "0":
                return problems

    async def _audit_all_async(self, count: Optional[int]) -> List[str]:
        problems: List[str] = []
        cursor = "0"
        while True:
            step = await cast(Awaitable[R.StockAudit], self.audit(cursor, count))
            problems += step.problems
            cursor = step.cursor
            if cursor == "0":
                return problems


class HotPathMethods(_HotPathBase):
    """``HotPath``'s methods of the STOCK family."""

    @overload
    def stock(self, key: Key, spread: None = None) -> Stock: ...

    @overload
    def stock(self, key: Key, spread: int) -> SpreadStock: ...

    def stock(self, key: Key, spread: Optional[int] = None) -> Union[Stock, SpreadStock]:
        """Flash-sale stock; with ``spread=n``, the SKU spread over ``n``
        shards (docs/stock.md, "Spread form")."""
        if spread is not None:
            from ..spread_stock import SpreadStock
            return cast(SpreadStock, self._spread(SpreadStock, key, spread))
        return Stock(self._runner, key)
