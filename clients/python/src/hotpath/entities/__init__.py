"""Every family's entity handles, one file per family (``poll.py``:
:class:`Poll`, and ``HotPathMethods``, the ``HotPath`` methods that give
it), gathered: ``__all__`` lists the entity handles, and :class:`Families`
has every family's ``HotPath`` methods (``hotpath.HotPath`` derives from it).
A new family adds its file here and runs clients/python/tools/gen_aio.py,
which wrote this file from the files of this folder: do not edit.
"""
from .delayq import DelayQueue, HotPathMethods as _DelayqMethods
from .idem import Idem, HotPathMethods as _IdemMethods
from .like import Like, HotPathMethods as _LikeMethods
from .lock import Lock, HotPathMethods as _LockMethods
from .luckybag import LuckyBag, HotPathMethods as _LuckybagMethods
from .poll import Poll, HotPathMethods as _PollMethods
from .rank import Rank, HotPathMethods as _RankMethods
from .rate import Rate, HotPathMethods as _RateMethods
from .redpacket import RedPacket, HotPathMethods as _RedpacketMethods
from .stock import Stock, HotPathMethods as _StockMethods


class Families(
    _DelayqMethods,
    _IdemMethods,
    _LikeMethods,
    _LockMethods,
    _LuckybagMethods,
    _PollMethods,
    _RankMethods,
    _RateMethods,
    _RedpacketMethods,
    _StockMethods,
):
    """``HotPath``'s methods of every family (each family file's
    ``HotPathMethods``)."""


__all__ = ["DelayQueue", "Idem", "Like", "Lock", "LuckyBag", "Poll", "Rank", "Rate", "RedPacket",
           "Stock"]
