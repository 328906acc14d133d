"""The LIKE family's entity handle, :class:`Like`, and its ``HotPath``
methods (hotpath.entities gathers them into ``HotPath``)."""
from __future__ import annotations

from typing import List, Optional, Union, cast, overload

from .. import replies as R
from .._base import Arg, Cmd, Key, _Entity, _HotPathBase, _opt
from ..spread import SpreadLike


class Like(_Entity):
    """Likes with Set→Bitmap promotion (docs/like.md). User ids are integers."""
    family = "LIKE"

    def toggle(self, user: int, now: Optional[int] = None, idem: Optional[Arg] = None) -> R.LikeToggle:
        """Likes the post for the user, or takes the like back: ``liked`` (the
        state after the call) and the post's count."""
        a: List[Arg] = [user]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("TOGGLE", R.like_toggle, *a)

    def add(self, user: int, now: Optional[int] = None) -> R.LikeChange:
        """Records that the user likes the post (idempotent): ``changed`` and
        the post's count."""
        a: List[Arg] = [user]
        _opt(a, "NOW", now)
        return self._call("ADD", R.like_change, *a)

    def rem(self, user: int) -> R.LikeChange:
        """Takes the user's like back (idempotent): ``changed`` and the post's
        count."""
        return self._call("REM", R.like_change, user)

    def check(self, *users: int) -> List[bool]:
        """One flag per user, in order."""
        return self._call("CHECK", R.flags, *users)

    def count(self) -> int:
        """The number of users who like the post."""
        return self._call("COUNT", R.integer)

    def recent(self, n: Optional[int] = None) -> List[R.Liker]:
        """The latest likers with their unix ms, newest first (recorded only with
        the ``like-recent`` config)."""
        return self._call("RECENT", R.like_recent, *([n] if n is not None else []))

    def info(self) -> R.LikeInfo:
        """The post's encoding, like count and modelled bytes."""
        return self._call("INFO", R.like_info)


class HotPathMethods(_HotPathBase):
    """``HotPath``'s methods of the LIKE family."""

    @overload
    def like(self, key: Key, spread: None = None) -> Like: ...

    @overload
    def like(self, key: Key, spread: int) -> SpreadLike: ...

    def like(self, key: Key, spread: Optional[int] = None) -> Union[Like, SpreadLike]:
        """A post; with ``spread=n``, the post spread over ``n`` shards
        (docs/spread.md)."""
        if spread is not None:
            return cast(SpreadLike, self._spread(SpreadLike, key, spread))
        return Like(self._runner, key)

    def like_common(self, a: Key, b: Key) -> List[int]:
        """LIKE.COMMON: users who like both (one slot on a cluster)."""
        return self._run(Cmd("LIKE.COMMON", [a, b], [a, b], R.ints))
