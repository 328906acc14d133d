"""The entity handles' types on an asyncio client (``redis.asyncio``):
:class:`AsyncHotPath` is :class:`hotpath.HotPath` as it behaves there, each
handle method returning an awaitable of the sync method's reply type.

    hp = hotpath.aio.typed(hotpath.HotPath(redis.asyncio.Redis()))
    counted = await hp.poll("poll:{42}").vote("user:1", "alice")   # bool

At run time ``typed`` returns the same object (it checks the client is an
asyncio one); the classes here are typing protocols. Generated from
client.py by clients/python/tools/gen_aio.py: do not edit.
"""
from __future__ import annotations

from typing import (Any, Awaitable, Dict, Iterable, List, Optional, Protocol, Sequence, Tuple,
                    overload)

from . import replies as R
from .aspread import (AsyncSpreadLike, AsyncSpreadLuckyBag, AsyncSpreadPoll, AsyncSpreadRank,
                      AsyncSpreadStock)
from .client import Arg, AsyncPipeline, Backend, HotPath, Key


class AsyncDelayQueue(Protocol):
    """:class:`hotpath.DelayQueue` on an asyncio client."""
    key: Key

    def add(self, id: Arg, payload: Arg, delay: Optional[int]=None, at: Optional[int]=None, attempts: Optional[int]=None, replace: bool=False, now: Optional[int]=None, lost_max: Optional[int]=None, idem: Optional[Arg]=None) -> Awaitable[bool]:
        """True when added (or replaced), False when ``id`` exists. ``lost_max``: the most deliveries after a lost lease (LOSTMAX, server 2.1.0)."""
        ...

    def poll(self, lease_ms: int, count: Optional[int]=None, block: Optional[int]=None, now: Optional[int]=None) -> Awaitable[List[R.Job]]:
        """Up to ``count`` ready jobs, each leased for ``lease_ms``; empty when none (after ``block`` ms with it)."""
        ...

    def ack(self, id: Arg, receipt: int) -> Awaitable[bool]:
        """Removes the job delivered with ``receipt``: True, or False for a stale receipt (nothing changed)."""
        ...

    def nack(self, id: Arg, receipt: int, delay: Optional[int]=None, backoff: Optional[Tuple[int, int]]=None, now: Optional[int]=None, idem: Optional[Arg]=None) -> Awaitable[R.Nack]:
        """``backoff`` is ``(base_ms, max_ms)``."""
        ...

    def extend(self, id: Arg, receipt: int, lease_ms: int, now: Optional[int]=None) -> Awaitable[bool]:
        """Restarts the lease of the delivery with ``receipt`` for ``lease_ms`` (a consumer's heartbeat): False for a stale receipt."""
        ...

    def dead(self, count: Optional[int]=None) -> Awaitable[List[R.DeadLetter]]:
        """The oldest dead letters (``count``): id, payload, attempts, dead-at."""
        ...

    def redrive(self, count: Optional[int]=None, id: Optional[Arg]=None, now: Optional[int]=None) -> Awaitable[int]:
        """Dead letters put back in line: the oldest ``count``, or ``id``."""
        ...

    def info(self, now: Optional[int]=None) -> Awaitable[R.QueueInfo]:
        """The queue's jobs, ready, scheduled and dead counts."""
        ...

    def cancel(self, id: Arg, force: bool=False, now: Optional[int]=None) -> Awaitable[bool]:
        """True when the job was removed (waiting, ready or dead), False when there is none. A job under a running lease raises ``job is leased`` unless ``force`` (its holder's receipt then goes stale)."""
        ...

    def peek(self, count: Optional[int]=None, id: Optional[Arg]=None) -> Awaitable[List[R.ScheduledJob]]:
        """The first ``count`` jobs in line (default 10, at most 100), the earliest first, or the one ``id``; changes nothing."""
        ...

    def purge(self, max_len: Optional[int]=None, max_age_ms: Optional[int]=None, now: Optional[int]=None) -> Awaitable[int]:
        """Dead letters removed, the oldest first, beyond ``max_len`` or older than ``max_age_ms``: at most 100 per call (call again while it returns 100)."""
        ...


class AsyncIdem(Protocol):
    """:class:`hotpath.Idem` on an asyncio client."""
    key: Key

    def begin(self, fingerprint: Arg, lease_ms: int, ttl: Optional[int]=None, now: Optional[int]=None) -> Awaitable[R.IdemBegin]:
        """NEW with a fence, RUNNING with the ms left, DONE with the stored result, or MISMATCH (another fingerprint under this key)."""
        ...

    def complete(self, fence: int, result: Arg, now: Optional[int]=None) -> Awaitable[bool]:
        """True when the result was stored, False when this fence's equal result is stored already (a retried COMPLETE). A stale fence raises the server's error."""
        ...

    def abort(self, fence: int) -> Awaitable[bool]:
        """True when the record begun with ``fence`` was given up."""
        ...

    def get(self, now: Optional[int]=None) -> Awaitable[Optional[R.IdemRecord]]:
        """The record, or None."""
        ...


class AsyncLike(Protocol):
    """:class:`hotpath.Like` on an asyncio client."""
    key: Key

    def toggle(self, user: int, now: Optional[int]=None, idem: Optional[Arg]=None) -> Awaitable[R.LikeToggle]:
        """Likes the post for the user, or takes the like back: ``liked`` (the state after the call) and the post's count."""
        ...

    def add(self, user: int, now: Optional[int]=None) -> Awaitable[R.LikeChange]:
        """Records that the user likes the post (idempotent): ``changed`` and the post's count."""
        ...

    def rem(self, user: int) -> Awaitable[R.LikeChange]:
        """Takes the user's like back (idempotent): ``changed`` and the post's count."""
        ...

    def check(self, *users: int) -> Awaitable[List[bool]]:
        """One flag per user, in order."""
        ...

    def count(self) -> Awaitable[int]:
        """The number of users who like the post."""
        ...

    def recent(self, n: Optional[int]=None) -> Awaitable[List[R.Liker]]:
        """The latest likers with their unix ms, newest first (recorded only with the ``like-recent`` config)."""
        ...

    def info(self) -> Awaitable[R.LikeInfo]:
        """The post's encoding, like count and modelled bytes."""
        ...


class AsyncLock(Protocol):
    """:class:`hotpath.Lock` on an asyncio client."""
    key: Key

    def acquire(self, owner: Arg, ttl_ms: int, limit: Optional[int]=None, maxhold: Optional[int]=None, block: Optional[int]=None, now: Optional[int]=None, idem: Optional[Arg]=None) -> Awaitable[Optional[int]]:
        """The fencing token, or None when busy (after ``block`` ms with it). Blocking calls need a socket timeout longer than ``block``."""
        ...

    def release(self, owner: Arg, now: Optional[int]=None) -> Awaitable[bool]:
        """True when ``owner`` held a live lease (one acquisition undone)."""
        ...

    def renew(self, owner: Arg, ttl_ms: int, now: Optional[int]=None) -> Awaitable[int]:
        """The ms left in the renewed lease; 0 when ``owner`` holds none."""
        ...

    def info(self, now: Optional[int]=None) -> Awaitable[List[R.LockHolder]]:
        """The live holders, by token; empty when the lock is free."""
        ...

    def check(self, token: int, now: Optional[int]=None) -> Awaitable[bool]:
        """True when ``token`` belongs to a live hold."""
        ...


class AsyncLuckyBag(Protocol):
    """:class:`hotpath.LuckyBag` on an asyncio client."""
    key: Key

    def create(self, winners: int, shards: Optional[int]=None, poolcap: Optional[int]=None, highscore: Optional[str]=None, restore: Optional[bool]=None, ttl: Optional[int]=None) -> Awaitable[bool]:
        """Creates the bag with its rules: ``winners``, ``shards``, ``poolcap``, ``highscore``, ``restore`` (a user back in the room gets its score back), ``ttl`` seconds. True (OK)."""
        ...

    def join(self, user: Arg, task_pending: bool=False, idem: Optional[Arg]=None) -> Awaitable[R.Join]:
        """Counts the user once and gives it its keyed score (a task pending: -1.5 until :meth:`task`): ``new``, ``pooled`` and the participants."""
        ...

    def task(self, user: Arg) -> Awaitable[bool]:
        """Gives a user whose task was pending its keyed score: True when it was pending."""
        ...

    def leave(self, user: Arg) -> Awaitable[bool]:
        """The user left the room: its score goes to -1 (-1.5 with the task pending). True when it was set."""
        ...

    def enter(self, user: Arg) -> Awaitable[bool]:
        """The user is back in the room (RESTORE YES): True when it has its score back."""
        ...

    def draw(self) -> Awaitable[List[R.Winner]]:
        """Draws the winners (the top WINNERS scores over every shard) and closes the bag; a second draw answers the same winners."""
        ...

    def result(self, user: Arg) -> Awaitable[str]:
        """PENDING, WON, LOST or ABSENT."""
        ...

    def info(self) -> Awaitable[Optional[R.BagInfo]]:
        """The bag's state, participants, pooled users, winners and shards; None for an unknown bag."""
        ...


class AsyncPoll(Protocol):
    """:class:`hotpath.Poll` on an asyncio client."""
    key: Key

    def create(self, mode: Optional[str]=None, maxvotes: Optional[int]=None, candidates: Optional[Sequence[Arg]]=None, start: Optional[int]=None, end: Optional[int]=None, tz: Optional[int]=None, ttl: Optional[int]=None, now: Optional[int]=None) -> Awaitable[bool]:
        """Creates the poll with its rules (POLL.CREATE): ``mode`` ONCE, DAILY or MULTI, ``maxvotes``, the ``candidates`` allowed, ``start``/``end`` (unix ms), ``tz`` (DAILY's day), ``ttl`` seconds. True (OK)."""
        ...

    def vote(self, user: Arg, candidate: Arg, now: Optional[int]=None, idem: Optional[Arg]=None) -> Awaitable[bool]:
        """True when the vote counted, False for a duplicate."""
        ...

    def revoke(self, user: Arg, candidate: Optional[Arg]=None, now: Optional[int]=None, idem: Optional[Arg]=None) -> Awaitable[int]:
        """Takes back the user's votes (only for ``candidate`` when given): the number of votes taken back."""
        ...

    def top(self, count: Optional[int]=None, offset: Optional[int]=None) -> Awaitable[List[R.PollEntry]]:
        """The candidates with the most votes, best first: ``count`` from ``offset``."""
        ...

    def rank(self, candidate: Arg) -> Awaitable[Optional[R.PollRank]]:
        """The candidate's rank (0: first) and votes; None when it has none."""
        ...

    def status(self, user: Arg, now: Optional[int]=None) -> Awaitable[List[str]]:
        """The candidates the user voted for (today's, for a DAILY poll)."""
        ...

    def info(self) -> Awaitable[Optional[R.PollInfo]]:
        """The poll's rules and totals; a poll never created reads as MODE ONCE with nothing in it."""
        ...

    def sync(self) -> Awaitable[R.PollSync]:
        """Freezes the vote changes since the last acknowledged write-back: the same snapshot again until :meth:`syncack` acknowledges its epoch."""
        ...

    def syncack(self, epoch: int) -> Awaitable[bool]:
        """Acknowledges the snapshot of :meth:`sync`: True when ``epoch`` was the pending one, False for a stale or unknown epoch."""
        ...


class AsyncRank(Protocol):
    """:class:`hotpath.Rank` on an asyncio client."""
    key: Key

    def create(self, tiebreak: Optional[str]=None, unit: Optional[str]=None, digits: Optional[int]=None, epoch: Optional[int]=None, ttl: Optional[int]=None, now: Optional[int]=None, layout: Optional[str]=None) -> Awaitable[bool]:
        """layout: "PACKED" (default) or "WIDE" (points up to +/-(2^53 - 1) with a millisecond tie-break, docs/rank.md)."""
        ...

    def add(self, member: Arg, points: int, gt: bool=False, lt: bool=False, now: Optional[int]=None, idem: Optional[Arg]=None) -> Awaitable[int]:
        """The member's points now stored."""
        ...

    def incr(self, member: Arg, delta: int, now: Optional[int]=None, idem: Optional[Arg]=None) -> Awaitable[int]:
        """Adds ``delta`` to the member's points (its achievement time becomes now): the points now stored."""
        ...

    def decr(self, member: Arg, delta: int, now: Optional[int]=None, idem: Optional[Arg]=None) -> Awaitable[int]:
        """Subtracts ``delta`` from the member's points (its achievement time becomes now): the points now stored."""
        ...

    def get(self, member: Arg) -> Awaitable[Optional[R.RankEntry]]:
        """The member's points, rank (0: first) and achievement time; None for a member not on the board."""
        ...

    def top(self, count: Optional[int]=None, offset: Optional[int]=None) -> Awaitable[List[R.RankMember]]:
        """The best members with their points, best first: ``count`` from ``offset``."""
        ...

    def around(self, member: Arg, n: int) -> Awaitable[Optional[List[R.RankPlace]]]:
        """The places from ``n`` above to ``n`` below the member, with ranks and points; None for a member not on the board."""
        ...

    def rem(self, *members: Arg) -> Awaitable[int]:
        """Removes members: the number that were on the board."""
        ...

    def count(self) -> Awaitable[int]:
        """The number of members on the board."""
        ...


class AsyncRate(Protocol):
    """:class:`hotpath.Rate` on an asyncio client."""
    key: Key

    def check(self, limit: int, period_ms: int, algo: Optional[str]=None, burst: Optional[int]=None, cost: Optional[int]=None, peek: bool=False, now: Optional[int]=None, idem: Optional[Arg]=None) -> Awaitable[R.RateResult]:
        """Checks and consumes one request (``cost`` units) against ``limit`` per ``period_ms`` (``algo``: GCRA by default, FIXED, SLIDING, LOG or BUCKET; ``peek``: consume nothing). ``allowed`` is the first field."""
        ...

    def throttle(self, max_burst: int, count: int, period_s: int, quantity: Optional[int]=None, now: Optional[int]=None, idem: Optional[Arg]=None) -> Awaitable[R.Throttle]:
        """redis-cell's CL.THROTTLE, reply for reply: ``limited`` is its first field (False when the request is allowed)."""
        ...

    def reset(self) -> Awaitable[bool]:
        """Drops the limiter's state: True when there was some."""
        ...


class AsyncRedPacket(Protocol):
    """:class:`hotpath.RedPacket` on an asyncio client."""
    key: Key

    def split(self, total_cents: int, count: int, mode: Optional[str]=None, ttl: Optional[int]=None, now: Optional[int]=None, idem: Optional[Arg]=None) -> Awaitable[int]:
        """Splits ``total_cents`` once into ``count`` shares (``mode`` RANDOM, the double-mean method and the default, or EQUAL) and opens the packet: ``count``."""
        ...

    def grab(self, user: Arg, now: Optional[int]=None, idem: Optional[Arg]=None) -> Awaitable[R.Grab]:
        """Grabs one share for the user (at most one per user): its status (OK, ALREADY, EMPTY, CLOSED or NOSUCH) and the cents won."""
        ...

    def info(self, now: Optional[int]=None) -> Awaitable[Optional[R.PacketInfo]]:
        """The packet's total, count, what is left, state and expiry; None for an unknown packet."""
        ...

    def grabbed(self) -> Awaitable[Dict[str, int]]:
        """Every user who grabbed a share, with the cents won."""
        ...

    def refund(self) -> Awaitable[int]:
        """Closes the packet: the cents left to the sender."""
        ...


class AsyncStock(Protocol):
    """:class:`hotpath.Stock` on an asyncio client."""
    key: Key

    def create(self, total: int, limit: Optional[int]=None, lease_ms: Optional[int]=None, ttl: Optional[int]=None, now: Optional[int]=None) -> Awaitable[bool]:
        """``total`` units; ``limit`` per user (reserved and sold together), ``lease_ms`` a reservation's lease, ``ttl`` seconds from ``now``."""
        ...

    def reserve(self, user: Arg, order: Arg, quantity: int=1, now: Optional[int]=None, idem: Optional[Arg]=None) -> Awaitable[R.Reservation]:
        """Reserves ``quantity`` units for ``order`` under a lease: OK, SOLDOUT or LIMIT; the same order gets the same reply again."""
        ...

    def confirm(self, order: Arg, now: Optional[int]=None) -> Awaitable[bool]:
        """True when the reservation became a sale, False when the order was already confirmed (after its lease: the server's error)."""
        ...

    def release(self, order: Arg) -> Awaitable[bool]:
        """True when the order's units went back, False when there was nothing to give back."""
        ...

    def restock(self, delta: int, now: Optional[int]=None, idem: Optional[Arg]=None) -> Awaitable[int]:
        """Adds ``delta`` units (removes available ones when negative); the units available after."""
        ...

    def info(self) -> Awaitable[Optional[R.StockInfo]]:
        """The counts; None for an unknown stock."""
        ...

    def audit(self, cursor: Arg=0, count: Optional[int]=None) -> Awaitable[R.StockAudit]:
        """One audit step from ``cursor``."""
        ...

    def audit_all(self, count: Optional[int]=None) -> Awaitable[List[str]]:
        """Every audit step, from cursor 0 until the walk is over: the problems found (the ledger's sums are checked when one step reads the whole ledger). On an asyncio client, a coroutine; not in a pipeline (each step needs the cursor of the one before)."""
        ...


class AsyncHotPath(Protocol):
    """:class:`hotpath.HotPath` over a ``redis.asyncio`` client (spread
    handles: ``hotpath.aspread``)."""
    client: Any
    backend: Backend

    def pipeline(self, transaction: bool=True) -> AsyncPipeline:
        """A pipeline of hotpath commands on this client (a MULTI/EXEC transaction unless ``transaction=False``; on a cluster, a transaction's keys share one slot)::"""
        ...

    def spread_count(self, family: str, key: Key) -> Awaitable[Optional[int]]:
        """The shard count of the spread entity ``key`` of ``family`` (``"LIKE"``, …), read from its shard 0; None when it is not spread."""
        ...

    def delayq(self, key: Key) -> AsyncDelayQueue:
        """A delay queue."""
        ...

    def idem(self, key: Key) -> AsyncIdem:
        """An idempotency key."""
        ...

    @overload
    def like(self, key: Key, spread: None = None) -> AsyncLike: ...

    @overload
    def like(self, key: Key, spread: int) -> AsyncSpreadLike: ...

    def like(self, key: Key, spread: Optional[int] = None) -> AsyncLike | AsyncSpreadLike:
        """A post; with ``spread=n``, its asyncio spread handle."""
        ...

    def like_common(self, a: Key, b: Key) -> Awaitable[List[int]]:
        """LIKE.COMMON: users who like both (one slot on a cluster)."""
        ...

    def lock(self, key: Key) -> AsyncLock:
        """A lock or semaphore with fencing tokens."""
        ...

    @overload
    def luckybag(self, key: Key, spread: None = None) -> AsyncLuckyBag: ...

    @overload
    def luckybag(self, key: Key, spread: int) -> AsyncSpreadLuckyBag: ...

    def luckybag(self, key: Key, spread: Optional[int] = None) -> AsyncLuckyBag | AsyncSpreadLuckyBag:
        """A lucky bag; with ``spread=n``, its asyncio spread handle."""
        ...

    @overload
    def poll(self, key: Key, spread: None = None) -> AsyncPoll: ...

    @overload
    def poll(self, key: Key, spread: int) -> AsyncSpreadPoll: ...

    def poll(self, key: Key, spread: Optional[int] = None) -> AsyncPoll | AsyncSpreadPoll:
        """A poll; with ``spread=n``, its asyncio spread handle."""
        ...

    @overload
    def rank(self, key: Key, spread: None = None) -> AsyncRank: ...

    @overload
    def rank(self, key: Key, spread: int) -> AsyncSpreadRank: ...

    def rank(self, key: Key, spread: Optional[int] = None) -> AsyncRank | AsyncSpreadRank:
        """A leaderboard; with ``spread=n``, its asyncio spread handle."""
        ...

    def rank_merge(self, dest: Key, sources: Sequence[Key], aggregate: Optional[str]=None, ttl: Optional[int]=None, now: Optional[int]=None) -> Awaitable[int]:
        """RANK.MERGE: members in ``dest`` (all keys in one slot on a cluster)."""
        ...

    def rate(self, key: Key) -> AsyncRate:
        """A rate limiter (the key is the limiter)."""
        ...

    def rate_multi(self, rules: Iterable[Tuple[Key, int, int]], cost: Optional[int]=None, peek: bool=False, now: Optional[int]=None) -> Awaitable[R.RateResult]:
        """Checks ``(key, limit, period_ms)`` rules together (RATE.MULTI): all are consumed or none. On a cluster, the keys share one slot."""
        ...

    def redpacket(self, key: Key) -> AsyncRedPacket:
        """A red packet."""
        ...

    @overload
    def stock(self, key: Key, spread: None = None) -> AsyncStock: ...

    @overload
    def stock(self, key: Key, spread: int) -> AsyncSpreadStock: ...

    def stock(self, key: Key, spread: Optional[int] = None) -> AsyncStock | AsyncSpreadStock:
        """Flash-sale stock; with ``spread=n``, its asyncio spread handle."""
        ...


def typed(hp: HotPath) -> AsyncHotPath:
    """``hp`` (a :class:`hotpath.HotPath` over a ``redis.asyncio`` client)
    typed as :class:`AsyncHotPath`."""
    if hp.mode != "async":
        raise TypeError(f"hotpath.aio.typed needs a HotPath over an asyncio client, not {hp.mode}")
    return hp  # type: ignore[return-value]


__all__ = ["AsyncHotPath", "typed", "AsyncSpreadLike", "AsyncSpreadLuckyBag", "AsyncSpreadPoll",
           "AsyncSpreadRank", "AsyncSpreadStock", "AsyncDelayQueue", "AsyncIdem", "AsyncLike", "AsyncLock", "AsyncLuckyBag", "AsyncPoll", "AsyncRank", "AsyncRate", "AsyncRedPacket", "AsyncStock"]
