"""hotpath: a Python client for the hotpath Redis module.

>>> import redis, hotpath
>>> hp = hotpath.HotPath(redis.Redis())
>>> hp.poll("poll:{42}").vote("user:1", "alice")
True

Replies are dataclasses (``hotpath.replies``); the routing spec of spread
entities is ``hotpath.routing`` (docs/spread.md).
"""
from . import errors, replies, routing, spread
from .client import (Backend, DelayQueue, HotPath, Idem, Like, Lock, LuckyBag, ModuleBackend,
                     Poll, Rank, Rate, RedPacket, Stock)
from .spread import ShardError, Shards, SpreadLike, SpreadLuckyBag
from .spread_rank import RankPosition, RankPositionEntry, ShardRankWrite, SpreadRank
from .spread_poll import SpreadPoll, SpreadPollInfo, SpreadPollSync
from .fallback import FallbackBackend, FunctionsBackend
from .replies import *  # noqa: F401,F403  (the reply dataclasses)

__version__ = "2.0.0"
__all__ = ["errors", "HotPath", "Backend", "ModuleBackend", "FunctionsBackend", "FallbackBackend",
           "Poll", "Rank", "Like", "RedPacket", "LuckyBag", "Rate", "Lock", "DelayQueue", "Idem",
           "Stock", "replies", "routing", "spread", "Shards", "ShardError", "SpreadLike",
           "SpreadLuckyBag"]
