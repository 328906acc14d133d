"""hotpath: a Python client for the hotpath Redis module, over redis-py.

>>> import redis, hotpath
>>> hp = hotpath.HotPath(redis.Redis())
>>> hp.poll("poll:{42}").vote("user:1", "alice")
True

The same handles serve every kind of redis-py client (``HotPath``):
``redis.Redis`` and ``redis.RedisCluster`` (a method returns the parsed
reply), ``redis.asyncio`` (``await hp.poll(k).vote(u, c)``) and pipelines
(``HotPath(r.pipeline())`` queues, ``execute()`` returns parsed replies;
``hp.pipeline()`` also raises typed errors). ``hotpath.aio.typed(hp)``
gives an asyncio HotPath its types (each method an awaitable).

Replies are dataclasses (``hotpath.replies``), errors are classes per
family and kind (``hotpath.errors``); the routing spec of spread entities
is ``hotpath.routing`` (docs/spread.md). ``__all__`` lists what is public.
"""
from . import aio, errors, replies, retry, routing, spread
from .client import Arg, AsyncPipeline, Backend, Cmd, HotPath, Key, ModuleBackend, Pipeline
from .entities import *  # noqa: F401,F403  (every family's entity handle: entities.__all__)
from .entities import __all__ as _entities
from .errors import HotPathError
from .fallback import FallbackBackend, FunctionsBackend
from .replies import *  # noqa: F401,F403  (the reply types: replies.__all__)
from .replies import __all__ as _replies
from .retry import RetryPolicy
from .spread import NotDurableError, ShardError, Shards, SpreadLike, SpreadLuckyBag
from .spread_poll import SpreadPoll, SpreadPollInfo, SpreadPollSync
from .spread_rank import RankPosition, RankPositionEntry, ShardRankWrite, SpreadRank
from .spread_stock import SpreadStock, SpreadStockInfo, StillRefilling, StockPool

__version__ = "2.0.0"
__all__ = [
    # the entry point and what it gives
    "HotPath", "Pipeline", "AsyncPipeline",
    # every family's entity handle (hotpath.entities, a file per family)
    *_entities,
    # spread entities (sync clients)
    "SpreadPoll", "SpreadRank", "SpreadLike", "SpreadLuckyBag", "Shards", "ShardError",
    "NotDurableError", "SpreadPollInfo", "SpreadPollSync", "RankPosition", "RankPositionEntry",
    "ShardRankWrite", "SpreadStock", "SpreadStockInfo", "StockPool", "StillRefilling",
    "RetryPolicy",
    # backends (the module, the Functions library) and their seam
    "Backend", "ModuleBackend", "FunctionsBackend", "FallbackBackend", "Cmd", "Key", "Arg",
    "HotPathError",
    # modules
    "aio", "errors", "replies", "retry", "routing", "spread",
    *_replies,
]
