"""Checked by mypy --strict (scripts/test.sh), never run: the reply types
a user of the client sees, sync and asyncio. Each ``type: ignore`` marks a
misuse that mypy must report (``--strict`` reports an ignore that is not
needed), so the types cannot silently become ``Any``."""
from typing import List, Optional

import redis
import redis.asyncio

import hotpath
from hotpath import aio


def sync_use(r: redis.Redis) -> None:
    hp = hotpath.HotPath(r)
    counted: bool = hp.poll("p").vote("u", "c")
    toggled: hotpath.LikeToggle = hp.like("post").toggle(1)
    spread: hotpath.ShardLikeChange = hp.like("post", spread=4).toggle(1)
    wrong: hotpath.ShardLikeChange = hp.like("post").toggle(1)  # type: ignore[assignment]
    with hp.pipeline() as p:
        p.rank("b").incr("alice", 5)
        p.nosuch()  # type: ignore[attr-defined]
        replies: List[object] = p.execute()
    print(counted, toggled, spread, wrong, replies)


async def async_use(r: redis.asyncio.Redis) -> None:
    hp = aio.typed(hotpath.HotPath(r))
    counted: bool = await hp.poll("p").vote("u", "c")
    top: List[hotpath.PollEntry] = await hp.poll("p").top(3)
    info: Optional[hotpath.PollInfo] = await hp.poll("p").info()
    merged: int = await hp.rank_merge("d", ["a", "b"])
    not_awaited: bool = hp.poll("p").vote("u", "c")  # type: ignore[assignment]
    spoll: aio.AsyncSpreadPoll = hp.poll("p", spread=4)
    stop: List[hotpath.PollEntry] = await spoll.top(3)
    change: hotpath.ShardLikeChange = await hp.like("post", spread=4).toggle(1)
    shards: Optional[int] = await hp.spread_count("LIKE", "post")
    not_awaited_count: int = hp.rank("b", spread=4).count()  # type: ignore[assignment]
    entries: List[hotpath.RankPositionEntry] = [e async for e in hp.rank("b", spread=4).pages()]
    wrong_form: hotpath.SpreadLike = hp.like("post", spread=4)  # type: ignore[assignment]
    async with hp.pipeline() as p:
        p.rank("b").incr("alice", 5)
        replies: List[object] = await p.execute()
    print(counted, top, info, merged, not_awaited, replies, stop, change, shards,
          not_awaited_count, entries, wrong_form)
