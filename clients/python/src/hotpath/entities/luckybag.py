"""The LUCKYBAG family's entity handle, :class:`LuckyBag`, and its ``HotPath``
methods (hotpath.entities gathers them into ``HotPath``)."""
from __future__ import annotations

from typing import List, Optional, Union, cast, overload

from .. import replies as R
from .._base import Arg, Key, _Entity, _HotPathBase, _opt
from ..spread import SpreadLuckyBag


class LuckyBag(_Entity):
    """Live-stream lucky bags (docs/luckybag.md)."""
    family = "LUCKYBAG"

    def create(self, winners: int, shards: Optional[int] = None, poolcap: Optional[int] = None,
               highscore: Optional[str] = None, restore: Optional[bool] = None,
               ttl: Optional[int] = None) -> bool:
        """Creates the bag with its rules: ``winners``, ``shards``, ``poolcap``,
        ``highscore``, ``restore`` (a user back in the room gets its score
        back), ``ttl`` seconds. True (OK)."""
        a: List[Arg] = ["WINNERS", winners]
        _opt(a, "SHARDS", shards)
        _opt(a, "POOLCAP", poolcap)
        _opt(a, "HIGHSCORE", highscore)
        if restore is not None:
            a += ["RESTORE", "YES" if restore else "NO"]
        _opt(a, "TTL", ttl)
        return self._call("CREATE", R.ok, *a)

    def join(self, user: Arg, task_pending: bool = False, idem: Optional[Arg] = None) -> R.Join:
        """Counts the user once and gives it its keyed score (a task pending:
        -1.5 until :meth:`task`): ``new``, ``pooled`` and the participants."""
        a: List[Arg] = [user] + (["TASK", "PENDING"] if task_pending else [])
        _opt(a, "IDEM", idem)
        return self._call("JOIN", R.join, *a)

    def task(self, user: Arg) -> bool:
        """Gives a user whose task was pending its keyed score: True when it
        was pending."""
        return self._call("TASK", R.boolean, user)

    def leave(self, user: Arg) -> bool:
        """The user left the room: its score goes to -1 (-1.5 with the task
        pending). True when it was set."""
        return self._call("LEAVE", R.boolean, user)

    def enter(self, user: Arg) -> bool:
        """The user is back in the room (RESTORE YES): True when it has its
        score back."""
        return self._call("ENTER", R.boolean, user)

    def draw(self) -> List[R.Winner]:
        """Draws the winners (the top WINNERS scores over every shard) and
        closes the bag; a second draw answers the same winners."""
        return self._call("DRAW", R.winners)

    def result(self, user: Arg) -> str:
        """PENDING, WON, LOST or ABSENT."""
        return self._call("RESULT", R.text, user)

    def info(self) -> Optional[R.BagInfo]:
        """The bag's state, participants, pooled users, winners and shards; None
        for an unknown bag."""
        return self._call("INFO", R.bag_info)


class HotPathMethods(_HotPathBase):
    """``HotPath``'s methods of the LUCKYBAG family."""

    @overload
    def luckybag(self, key: Key, spread: None = None) -> LuckyBag: ...

    @overload
    def luckybag(self, key: Key, spread: int) -> SpreadLuckyBag: ...

    def luckybag(self, key: Key, spread: Optional[int] = None) -> Union[LuckyBag, SpreadLuckyBag]:
        """A lucky bag; with ``spread=n``, the bag spread over ``n`` shards
        (docs/spread.md)."""
        if spread is not None:
            return cast(SpreadLuckyBag, self._spread(SpreadLuckyBag, key, spread))
        return LuckyBag(self._runner, key)
