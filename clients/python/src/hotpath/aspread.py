"""The spread handles on an asyncio client (``redis.asyncio.Redis`` or
``redis.asyncio.RedisCluster``): :class:`AsyncSpreadLike`,
:class:`AsyncSpreadLuckyBag`, :class:`AsyncSpreadPoll`,
:class:`AsyncSpreadRank` and :class:`AsyncSpreadStock`, what
``HotPath(redis.asyncio…).like(key, spread=n)`` (…) gives. Each is its sync
handle (``hotpath.SpreadLike``, …) with every method that sends commands a
coroutine: the same commands, the same merges, the same replies and errors.

    hp = hotpath.aio.typed(hotpath.HotPath(redis.asyncio.RedisCluster(…)))
    post = hp.like("post:{9}", spread=8)
    await post.create()
    await post.toggle(42)            # ShardLikeChange(changed=True, shard=2, count=1)
    await post.count()               # the sum over the shards

Generated from the sync handles by clients/python/tools/gen_aio.py: do not
edit.
"""

from __future__ import annotations

import copy
import os
import time
from redis.exceptions import RedisError, ResponseError
from typing import Any, AsyncIterator, Dict, List, Optional, Sequence, Tuple, TypeVar
from . import replies as R, routing
from .errors import typed
from .retry import DEFAULT as DEFAULT_RETRY, RetryPolicy
from .spread import Arg, NotDurableError, ShardError, Shards, WRITES, _draw_key, _raise_first
from .spread_poll import FIRST_PAGE, PAGE_MAX, SpreadPollInfo, SpreadPollSync, _budget, _key, _order
from .spread_rank import RankPosition, RankPositionEntry, ShardRankWrite, _order as _spread_rank_order, rank_position
from .spread_stock import SpreadStockInfo, StillRefilling, StockPool, _transfer_id


S = TypeVar('S', bound='_AsyncSpread')


class _AsyncSpread:
    """``_Spread`` on an asyncio client (generated)."""
    family = ''

    def __init__(self, backend: Any, base: routing.Bytes, n: int):
        self.backend = backend
        self.shards = Shards(base, n)
        self.retry: RetryPolicy = DEFAULT_RETRY
        self.durability: Optional[Tuple[int, int]] = None

    def with_retry(self: S, policy: RetryPolicy) -> S:
        """The same handle with another retry policy
        (``hotpath.retry.NEVER``: the cluster client's own retries only)."""
        h = copy.copy(self)
        h.retry = policy
        return h

    def durable(self: S, replicas: int=1, wait_ms: int=1000) -> S:
        """The same handle whose writes are durable: each write's pipeline
        to its shard's master ends in ``WAIT replicas wait_ms`` on the same
        connection; when fewer replicas acknowledge, the write raises
        :class:`NotDurableError` (it ran on the master). Reads do not wait.
        ``durable(0)`` is the plain handle again."""
        h = copy.copy(self)
        h.durability = (replicas, wait_ms) if replicas > 0 else None
        return h

    @property
    def base(self) -> bytes:
        return self.shards.base

    @property
    def n(self) -> int:
        return self.shards.n

    def _argv(self, i: int, args: Sequence[Arg]) -> List[Arg]:
        k = self.shards.keys[i]
        return [k, *args, 'SPREAD', self.n]

    async def _one(self, sub: str, i: int, *args: Arg) -> Any:
        """One command on shard ``i``, retried by the handle's policy; a
        durable handle's write waits for its replicas."""
        k = self.shards.keys[i]
        command = f'{self.family}.{sub}'
        argv = self._argv(i, args)
        if self.durability is None or sub not in WRITES:
            try:
                return await self.retry.arun(lambda: self.backend.acall(command, argv, [k]), command)
            except ResponseError as e:
                raise typed(e) from None
        replicas, wait_ms = self.durability
        res, acks = await self._durable([(command, argv, [k])], replicas, wait_ms)
        if isinstance(res[0], BaseException):
            raise res[0]
        if acks[0] < replicas:
            raise NotDurableError(k, res[0], acks[0], replicas)
        return res[0]

    async def _durable(self, calls: Sequence[Tuple[str, Sequence[Arg], Sequence[Any]]], replicas: int, wait_ms: int) -> Tuple[List[Any], List[int]]:
        """``backend.call_many_durable``, retried by the handle's policy:
        each round sends again only the calls that failed."""
        acks = [0] * len(calls)

        async def step(idx: Sequence[int]) -> List[Any]:
            res, ack = await self.backend.acall_many_durable([calls[i] for i in idx], replicas, wait_ms)
            for i, a in zip(idx, ack):
                acks[i] = a
            return list(res)
        out: List[Any] = await self.retry.arun_many(step, [c[0] for c in calls])
        return (out, acks)

    async def _each(self, calls: Sequence[Tuple[int, str, Sequence[Arg]]]) -> List[Any]:
        """Commands on shards, all at once (one pipeline per node); each
        reply or its exception, the failed ones retried by the handle's
        policy. A durable handle's writes wait for their replicas."""
        full = [(f'{self.family}.{sub}', self._argv(i, args), [self.shards.keys[i]]) for i, sub, args in calls]
        if self.durability is not None and any((sub in WRITES for _, sub, _ in calls)):
            replicas, wait_ms = self.durability
            res, acks = await self._durable(full, replicas, wait_ms)
            for j, (c, r) in enumerate(zip(full, res)):
                if not isinstance(r, BaseException) and acks[j] < replicas:
                    res[j] = NotDurableError(c[2][0], r, acks[j], replicas)
            return res
        return await self.retry.arun_many(lambda idx: self.backend.acall_many([full[i] for i in idx]), [c[0] for c in full])

    async def _all(self, sub: str, *args: Arg) -> List[Any]:
        """The same command on every shard; fails on any shard's error."""
        res = await self._each([(i, sub, args) for i in range(self.n)])
        return _raise_first(self.shards.keys, res)

    async def _create(self, *args: Arg) -> bool:
        """Creates every shard, after checking them all (``INFO … SPREAD
        n``): a shard in use stops the creation before anything is
        written. Shard 0 first, on its own (it also checks the base key),
        then the others at once. Running it again is harmless."""
        checks = await self._each([(i, 'INFO', ()) for i in range(self.n)])
        for k, r in zip(self.shards.keys, checks):
            if isinstance(r, BaseException) and (not str(r).endswith('does not exist')):
                raise ShardError(k, r)
        R.ok(await self._one('CREATE', 0, *args))
        rest = await self._each([(i, 'CREATE', args) for i in range(1, self.n)])
        for v in _raise_first(self.shards.keys[1:], rest):
            R.ok(v)
        return True

    def __repr__(self) -> str:
        return f'{type(self).__name__}({self.base!r}, {self.n})'


class AsyncSpreadLike(_AsyncSpread):
    """:class:`hotpath.SpreadLike` on an asyncio client (generated): each method that sends commands is a coroutine.

    A post spread over ``n`` shards (docs/spread.md, docs/like.md). User
    ids are integers; user ``u`` lives in shard ``u % n``, stored as
    ``u // n``."""
    family = 'LIKE'

    def shard_of(self, user: int) -> int:
        return routing.like_slot_of(int(user), self.n)[0]

    async def create(self) -> bool:
        """``LIKE.CREATE K_i SPREAD n`` on every shard."""
        return await self._create()

    async def _write(self, sub: str, user: int, now: Optional[int]) -> R.ShardLikeChange:
        i = self.shard_of(user)
        a: List[Arg] = [user] + (['NOW', now] if now is not None else [])
        c, n = R.array(await self._one(sub, i, *a), 2)
        return R.ShardLikeChange(bool(R.integer(c)), i, R.integer(n))

    async def toggle(self, user: int, now: Optional[int]=None) -> R.ShardLikeChange:
        """``changed``: whether the user likes the post after the call."""
        return await self._write('TOGGLE', user, now)

    async def add(self, user: int, now: Optional[int]=None) -> R.ShardLikeChange:
        return await self._write('ADD', user, now)

    async def rem(self, user: int) -> R.ShardLikeChange:
        return await self._write('REM', user, None)

    async def check(self, *users: int) -> List[bool]:
        """One flag per user, in order: one LIKE.CHECK per shard asked."""
        by_shard: Dict[int, List[int]] = {}
        for pos, u in enumerate(users):
            by_shard.setdefault(self.shard_of(u), []).append(pos)
        order = sorted(by_shard)
        res = await self._each([(i, 'CHECK', [users[p] for p in by_shard[i]]) for i in order])
        res = _raise_first([self.shards.keys[i] for i in order], res)
        out = [False] * len(users)
        for i, v in zip(order, res):
            flags = R.flags(v)
            if len(flags) != len(by_shard[i]):
                raise R.ReplyError(f'LIKE.CHECK of shard {i}: {v!r}')
            for p, f in zip(by_shard[i], flags):
                out[p] = f
        return out

    async def likes(self, user: int) -> bool:
        return R.flags(await self._one('CHECK', self.shard_of(user), user))[0]

    async def shard_counts(self) -> List[int]:
        return [R.integer(v) for v in await self._all('COUNT')]

    async def count(self) -> int:
        """The exact like count: the sum over the shards."""
        return sum(await self.shard_counts())

    async def recent(self, n: Optional[int]=None) -> List[R.Liker]:
        """The latest ``n`` recorded likers over all shards, newest first
        (ties: larger user id first); every recorded liker without ``n``."""
        likers: List[R.Liker] = []
        for v in await self._all('RECENT', *([n] if n is not None else [])):
            likers += R.like_recent(v)
        likers.sort(key=lambda l: (l.at_ms, l.user), reverse=True)
        return likers if n is None else likers[:n]

    async def info(self) -> R.SpreadLikeInfo:
        shards = [R.like_info(v) for v in await self._all('INFO')]
        return R.SpreadLikeInfo(self.n, sum((s.count for s in shards)), sum((s.bytes for s in shards)), shards)


class AsyncSpreadLuckyBag(_AsyncSpread):
    """:class:`hotpath.SpreadLuckyBag` on an asyncio client (generated): each method that sends commands is a coroutine.

    A lucky bag spread over ``n`` shards (docs/spread.md,
    docs/luckybag.md): a user joins shard ``routing.shard_of(user, n)``;
    :meth:`draw` runs across the shards and gives the exact global top
    WINNERS, safe to run again."""
    family = 'LUCKYBAG'

    async def create(self, winners: int, shards: Optional[int]=None, poolcap: Optional[int]=None, highscore: Optional[str]=None, restore: Optional[bool]=None, ttl: Optional[int]=None) -> bool:
        """Creates every shard. ``poolcap`` is the bag's: each shard keeps
        its share of it. Each shard has one internal pool unless
        ``shards`` says otherwise."""
        a: List[Arg] = ['WINNERS', winners]
        for name, v in (('SHARDS', shards), ('POOLCAP', poolcap), ('HIGHSCORE', highscore), ('TTL', ttl)):
            if v is not None:
                a += [name, v]
        if restore is not None:
            a += ['RESTORE', 'YES' if restore else 'NO']
        return await self._create(*a)

    async def _user(self, sub: str, user: Arg, *args: Arg) -> Any:
        return await self._one(sub, self.shards.shard_of(user), user, *args)

    async def join(self, user: Arg, task_pending: bool=False) -> R.ShardJoin:
        j = R.join(await self._user('JOIN', user, *(['TASK', 'PENDING'] if task_pending else [])))
        return R.ShardJoin(j.new, j.pooled, self.shards.shard_of(user), j.participants)

    async def task(self, user: Arg) -> bool:
        return bool(R.integer(await self._user('TASK', user)))

    async def leave(self, user: Arg) -> bool:
        return bool(R.integer(await self._user('LEAVE', user)))

    async def enter(self, user: Arg) -> bool:
        return bool(R.integer(await self._user('ENTER', user)))

    async def result(self, user: Arg) -> str:
        """PENDING, WON, LOST or ABSENT, read on the node that owns the
        user's shard (PENDING until that shard has its winners)."""
        return R.text(await self._user('RESULT', user))

    async def info(self) -> R.SpreadBagInfo:
        raw = await self._all('INFO')
        per: List[R.BagInfo] = []
        for k, v in zip(self.shards.keys, raw):
            info = R.bag_info(v)
            if info is None:
                raise ShardError(k, R.ReplyError('no such bag'))
            per.append(info)
        draw = R.text(R.fields(raw[0]).get('draw', 'none'))
        return R.SpreadBagInfo('open' if draw == 'none' else draw, sum((i.participants for i in per)), sum((i.pooled for i in per)), per[0].winners, self.n, per)

    async def participants(self) -> int:
        return (await self.info()).participants

    async def draw(self, token: Optional[str]=None, lease_ms: int=30000, replicas: int=1, wait_ms: int=5000, now: Optional[int]=None) -> List[R.Winner]:
        """Draws the bag across its shards (docs/spread.md): takes the
        draw's lease on shard 0, freezes every shard and reads its best
        candidates (deeper only where a shard could still hold a winner),
        waits until ``replicas`` replicas have each freeze, merges the
        exact global top WINNERS, commits them on shard 0, then gives each
        shard its own winners. Every step is idempotent: a draw interrupted
        anywhere and run again (with the same ``token``, or any token once
        the lease ran out) gives the same winners. ``replicas=0`` on a
        server without replicas."""
        token = token or os.urandom(16).hex()
        k0 = self.shards.keys[0]
        a: List[Arg] = [token, 'LEASE', lease_ms] + (['NOW', now] if now is not None else [])
        try:
            begin = R.array(await self._one('DRAWBEGIN', 0, *a))
        except RedisError as e:
            raise ShardError(k0, e) from e
        state, w = (R.text(begin[0]), R.integer(begin[1]))
        if state == 'drawn':
            winners = R.winners(begin[2:])
            await self._publish(winners, w)
            return winners
        n = self.n
        depth = [min(w, -(-2 * w // n) + 16)] * n
        lists: List[List[R.Winner]] = [[] for _ in range(n)]
        calls = [(f'{self.family}.FREEZE', self._argv(i, [depth[i]]), [self.shards.keys[i]]) for i in range(n)]
        if replicas > 0:
            res, acks = await self._durable(calls, replicas, wait_ms)
        else:
            res = await self.retry.arun_many(lambda idx: self.backend.acall_many([calls[i] for i in idx]), [c[0] for c in calls])
            acks = [replicas] * n
        for i, v in enumerate(_raise_first(self.shards.keys, res)):
            lists[i] = R.winners(v)
        for k, ack in zip(self.shards.keys, acks):
            if ack < replicas:
                raise ShardError(k, RedisError(f'its freeze reached {ack} of {replicas} replicas; run the draw again'))
        while True:
            merged = sorted((c for l in lists for c in l), key=_draw_key, reverse=True)[:w]
            top = set(((c.user, c.score_text) for c in merged))
            ask = [i for i in range(n) if depth[i] < w and len(lists[i]) == depth[i] and ((lists[i][-1].user, lists[i][-1].score_text) in top)]
            if not ask:
                break
            for i in ask:
                depth[i] = min(w, depth[i] * 2)
            res = await self._each([(i, 'FREEZE', [depth[i]]) for i in ask])
            for i, v in zip(ask, _raise_first([self.shards.keys[i] for i in ask], res)):
                lists[i] = R.winners(v)
        await self._publish(merged, w, verify=True)
        pairs: List[Arg] = []
        for c in merged:
            pairs += [c.user, c.score_text]
        commit = [(f'{self.family}.COMMIT', self._argv(0, [token, *pairs]), [k0])]
        if replicas > 0:
            res, acks = await self._durable(commit, replicas, wait_ms)
        else:
            res = await self.retry.arun_many(lambda idx: self.backend.acall_many(commit), [commit[0][0]])
            acks = [0]
        R.ok(_raise_first([k0], res)[0])
        if replicas > 0 and acks[0] < replicas:
            raise ShardError(k0, RedisError(f'the commit reached {acks[0]} of {replicas} replicas; run the draw again'))
        await self._publish(merged, w)
        return merged

    async def _publish(self, winners: Sequence[R.Winner], w: int, verify: bool=False) -> None:
        """Gives each shard its own winners, with the global list's last
        winner when the list is full (``LAST``), so that each shard checks
        that nothing it holds outside the list ranks before it."""
        by: Dict[int, List[Arg]] = {i: [] for i in range(self.n)}
        for c in winners:
            by[self.shards.shard_of(c.user)] += [c.user, c.score_text]
        tail: List[Arg] = []
        if winners and len(winners) >= w:
            tail = ['LAST', winners[-1].user, winners[-1].score_text]
        if verify:
            tail.append('VERIFY')
        res = await self._each([(i, 'PUBLISH', by[i] + tail) for i in range(self.n)])
        _raise_first(self.shards.keys, res)


async def aspread_count(backend: Any, family: str, base: routing.Bytes) -> Optional[int]:
    """The shard count of a spread entity, read from its shard 0 (whose key
    does not depend on the count); ``None`` when ``base`` is not spread."""
    k0 = routing.shard_key(base, 1, 0)
    v = await backend.acall(f'{family}.INFO', [k0], [k0])
    if not isinstance(v, (list, tuple, dict)) or (not isinstance(v, dict) and len(v) % 2):
        return None
    f = R.fields(v)
    return R.integer(f['spread']) if 'spread' in f else None


class _AsyncMerge:
    """``_Merge`` on an asyncio client (generated).

    What the rounds have learnt of the shards' boards."""

    def __init__(self, n: int):
        self.depth = [0] * n
        self.done = [False] * n
        self.last = [0] * n
        self.known: Dict[str, List[Optional[int]]] = {}

    def all_done(self) -> bool:
        return all(self.done)

    def bound(self) -> int:
        """The most an unread candidate can have in total."""
        return sum((max(l, 0) for l, d in zip(self.last, self.done) if not d))

    def value(self, c: str, i: int) -> Optional[int]:
        v = self.known.get(c)
        if v is not None and v[i] is not None:
            return v[i]
        return 0 if self.done[i] else None

    def bounds(self, c: str) -> Tuple[int, int, bool]:
        lo = hi = 0
        exact = True
        for i in range(len(self.done)):
            v = self.value(c, i)
            if v is None:
                hi += max(self.last[i], 0)
                exact = False
            else:
                lo += v
                hi += v
        return (lo, hi, exact)

    async def read(self, poll: 'AsyncSpreadPoll', step: int) -> None:
        asks: List[Tuple[int, int, int]] = []
        for i, d in enumerate(self.done):
            off = 0
            while not d and off < step:
                count = min(poll.page_max, step - off)
                asks.append((i, self.depth[i] + off, count))
                off += count
        for (i, _, count), page in zip(asks, await poll._pages(asks)):
            if self.done[i]:
                continue
            self.depth[i] += len(page)
            if len(page) < count:
                self.done[i] = True
            if page:
                self.last[i] = page[-1].votes
            for e in page:
                self.known.setdefault(e.candidate, [None] * len(self.done))[i] = e.votes

    def unknowns(self, cands: Sequence[str]) -> int:
        return sum((1 for c in cands for i in range(len(self.done)) if self.value(c, i) is None))

    async def resolve(self, poll: 'AsyncSpreadPoll', cands: Sequence[str]) -> None:
        asks = [(c, i) for c in cands for i in range(len(self.done)) if self.value(c, i) is None]
        if not asks:
            return
        for (c, i), v in zip(asks, await poll._votes(asks)):
            self.known.setdefault(c, [None] * len(self.done))[i] = v or 0


class AsyncSpreadPoll(_AsyncSpread):
    """:class:`hotpath.SpreadPoll` on an asyncio client (generated): each method that sends commands is a coroutine.

    A poll spread over ``n`` shards: ``HotPath(r).spread_poll(key, n)`` or
    ``SpreadPoll(backend, key, n)``."""
    family = 'POLL'

    def __init__(self, backend: Any, base: Any, n: int, page_max: int=PAGE_MAX):
        super().__init__(backend, base, n)
        self.page_max = max(1, page_max)

    async def create(self, mode: Optional[str]=None, maxvotes: Optional[int]=None, candidates: Optional[Sequence[Arg]]=None, start: Optional[int]=None, end: Optional[int]=None, tz: Optional[int]=None, ttl: Optional[int]=None, now: Optional[int]=None) -> bool:
        """Creates every shard with the poll's rules, after checking them
        all: a shard in use stops the creation before anything is written.
        Shard 0 first, then the others at once; again with the same rules is
        harmless. With a TTL, every shard expires at one instant: ``now``,
        this machine's clock, or (when some shards exist already, a creation
        run again) the one that gives their expiry."""
        checks = await self._each([(i, 'INFO', ()) for i in range(self.n)])
        for k, r in zip(self.shards.keys, checks):
            if isinstance(r, BaseException):
                if not str(r).endswith('does not exist'):
                    raise ShardError(k, r)
                continue
            expires = R.fields(r).get('expires')
            if ttl is not None and expires is not None and (R.integer(expires) > 0):
                now = R.integer(expires) - ttl * 1000
        if ttl is not None and now is None:
            now = int(time.time() * 1000)
        a: List[Arg] = []
        for name, v in (('MODE', mode), ('MAXVOTES', maxvotes)):
            if v is not None:
                a += [name, v]
        if candidates is not None:
            a += ['CANDIDATES', len(candidates), *candidates]
        for name, v in (('START', start), ('END', end), ('TZ', tz), ('TTL', ttl), ('NOW', now)):
            if v is not None:
                a += [name, v]
        try:
            R.ok(await self._one('CREATE', 0, *a))
        except ShardError:
            raise
        except Exception as e:
            raise ShardError(self.shards.keys[0], e) from e
        rest = await self._each([(i, 'CREATE', a) for i in range(1, self.n)])
        for v in _raise_first(self.shards.keys[1:], rest):
            R.ok(v)
        return True

    async def _user(self, sub: str, user: Arg, *args: Arg) -> Any:
        return await self._one(sub, self.shards.shard_of(user), user, *args)

    async def vote(self, user: Arg, candidate: Arg, now: Optional[int]=None) -> bool:
        """On the voter's shard: True when counted, False for a duplicate."""
        return bool(R.integer(await self._user('VOTE', user, candidate, *(['NOW', now] if now is not None else []))))

    async def revoke(self, user: Arg, candidate: Optional[Arg]=None, now: Optional[int]=None) -> int:
        a: List[Arg] = ([candidate] if candidate is not None else []) + (['NOW', now] if now is not None else [])
        return R.integer(await self._user('REVOKE', user, *a))

    async def status(self, user: Arg, now: Optional[int]=None) -> List[str]:
        return R.texts(await self._user('STATUS', user, *(['NOW', now] if now is not None else [])))

    async def _pages(self, asks: Sequence[Tuple[int, int, int]]) -> List[List[R.PollEntry]]:
        res = await self._each([(i, 'TOP', [count, 'OFFSET', off]) for i, off, count in asks])
        res = _raise_first([self.shards.keys[i] for i, _, _ in asks], res)
        return [R.poll_top(v) for v in res]

    async def _votes(self, asks: Sequence[Tuple[str, int]]) -> List[Optional[int]]:
        res = await self._each([(i, 'RANK', [c]) for c, i in asks])
        res = _raise_first([self.shards.keys[i] for _, i in asks], res)
        out: List[Optional[int]] = []
        for v in res:
            r = R.poll_rank(v)
            out.append(None if r is None else r.votes)
        return out

    async def totals(self, *candidates: str) -> List[Optional[int]]:
        """Each candidate's exact total (the sum over the shards; None for a
        candidate on no shard's board), in order."""
        asks = [(c, i) for c in candidates for i in range(self.n)]
        votes = await self._votes(asks)
        out: List[Optional[int]] = []
        for j in range(len(candidates)):
            per = votes[j * self.n:(j + 1) * self.n]
            out.append(None if all((v is None for v in per)) else sum((v or 0 for v in per)))
        return out

    async def top(self, count: int=10, offset: int=0) -> List[R.PollEntry]:
        """The exact top ``count`` from place ``offset`` of the merged board
        (most votes first; ties: name descending, as POLL.TOP orders one
        board). The cost grows with ``offset + count``."""
        k = offset + count
        if k <= 0:
            return []
        m = _AsyncMerge(self.n)
        step = max(k, FIRST_PAGE)
        while True:
            await m.read(self, step)
            lowers = sorted((m.bounds(c)[0] for c in m.known), reverse=True)
            floor = lowers[k - 1] if len(lowers) >= k else None
            need = [c for c in m.known if not m.bounds(c)[2] and (floor is None or m.bounds(c)[1] >= floor)]
            resolved = m.unknowns(need) <= _budget(self.n, k)
            if resolved:
                await m.resolve(self, need)
            exact = [(c, b[0]) for c in m.known for b in [m.bounds(c)] if b[2]]
            exact.sort(key=_order, reverse=True)
            if m.all_done() or (resolved and len(exact) >= k and (exact[k - 1][1] > m.bound())):
                return [R.PollEntry(c, v) for c, v in exact[offset:k]]
            step *= 2

    async def rank(self, candidate: str) -> Optional[R.PollRank]:
        """A candidate's exact rank on the merged board (0-based) and total;
        None for a candidate on no shard's board. The cost grows with the
        rank."""
        own = await self._votes([(candidate, i) for i in range(self.n)])
        if all((v is None for v in own)):
            return None
        total = sum((v or 0 for v in own))
        m = _AsyncMerge(self.n)
        m.known[candidate] = [v or 0 for v in own]
        step = FIRST_PAGE
        me = _order((candidate, total))
        while True:
            await m.read(self, step)
            step *= 2
            if not m.all_done() and m.bound() >= total:
                continue
            above = 0
            unsure: List[str] = []
            for c in m.known:
                if c == candidate:
                    continue
                lo, hi, exact = m.bounds(c)
                if exact:
                    above += _order((c, lo)) > me
                elif lo > total:
                    above += 1
                elif hi >= total:
                    unsure.append(c)
            if m.all_done() or m.unknowns(unsure) <= _budget(self.n, 0):
                break
        await m.resolve(self, unsure)
        for c in unsure:
            above += _order((c, m.bounds(c)[0])) > me
        return R.PollRank(above, total)

    async def info(self) -> Optional[SpreadPollInfo]:
        """POLL.INFO of every shard and the sums; None when never created."""
        raw = await self._all('INFO')
        per = [R.poll_info(v) for v in raw]
        if any((p is None for p in per)):
            return None
        first = per[0]
        assert first is not None
        expires = R.fields(raw[0]).get('expires')
        return SpreadPollInfo(first.mode, first.maxvotes, first.start, first.end, sum((p.ballots for p in per if p)), sum((p.votes for p in per if p)), self.n, 0 if expires is None else R.integer(expires), [p for p in per if p])

    async def sync(self) -> SpreadPollSync:
        """POLL.SYNC on every shard (after checking every shard, so that a
        missing one fails the call before any shard freezes), merged."""
        await self._all('INFO')
        per = [R.poll_sync(v) for v in await self._all('SYNC')]
        total: Dict[str, int] = {}
        for s in per:
            for d in s.deltas:
                total[d.candidate] = total.get(d.candidate, 0) + d.votes
        deltas = [R.PollEntry(c, v) for c, v in total.items() if v != 0]
        deltas.sort(key=lambda e: (abs(e.votes), _key(e.candidate)), reverse=True)
        return SpreadPollSync([s.epoch for s in per], per, deltas)

    async def syncack(self, sync: SpreadPollSync) -> List[bool]:
        """POLL.SYNCACK of each shard's epoch: per shard, True when it was
        that shard's pending snapshot."""
        res = await self._each([(i, 'SYNCACK', [e]) for i, e in enumerate(sync.epochs)])
        return [bool(R.integer(v)) for v in _raise_first(self.shards.keys, res)]


class AsyncSpreadRank(_AsyncSpread):
    """:class:`hotpath.SpreadRank` on an asyncio client (generated): each method that sends commands is a coroutine.

    A leaderboard spread over ``n`` shards: ``SpreadRank(hp.backend,
    "week:42", 16)``."""
    family = 'RANK'

    async def create(self, tiebreak: Optional[str]=None, unit: Optional[str]=None, digits: Optional[int]=None, epoch: Optional[int]=None, ttl: Optional[int]=None, now: Optional[int]=None, layout: Optional[str]=None) -> bool:
        """Creates every shard with the same layout, shard 0 first (``layout``
        ``"WIDE"`` for a LAYOUT WIDE board). Again with the same layout and
        count: True, nothing changes."""
        a: List[Arg] = []
        for name, v in (('LAYOUT', layout), ('TIEBREAK', tiebreak), ('UNIT', unit), ('DIGITS', digits), ('EPOCH', epoch), ('TTL', ttl), ('NOW', now)):
            if v is not None:
                a += [name, v]
        try:
            R.ok(await self._one('CREATE', 0, *a))
        except Exception as e:
            raise ShardError(self.shards.keys[0], e) from e
        rest = await self._each([(i, 'CREATE', a) for i in range(1, self.n)])
        for v in _raise_first(self.shards.keys[1:], rest):
            R.ok(v)
        return True

    async def _write(self, sub: str, member: Arg, args: List[Arg], now: Optional[int]) -> ShardRankWrite:
        i = self.shards.shard_of(member)
        a = [member, *args] + (['NOW', now] if now is not None else [])
        return ShardRankWrite(R.integer(await self._one(sub, i, *a)), i)

    async def add(self, member: Arg, points: int, gt: bool=False, lt: bool=False, now: Optional[int]=None) -> ShardRankWrite:
        return await self._write('ADD', member, [points] + (['GT'] if gt else []) + (['LT'] if lt else []), now)

    async def incr(self, member: Arg, delta: int, now: Optional[int]=None) -> ShardRankWrite:
        return await self._write('INCR', member, [delta], now)

    async def rem(self, *members: Arg) -> int:
        """Members removed: one RANK.REM per shard asked, all at once."""
        by: Dict[int, List[Arg]] = {}
        for m in members:
            by.setdefault(self.shards.shard_of(m), []).append(m)
        order = sorted(by)
        res = await self._each([(i, 'REM', by[i]) for i in order])
        return sum((R.integer(v) for v in _raise_first([self.shards.keys[i] for i in order], res)))

    async def shard_counts(self) -> List[int]:
        return [R.integer(v) for v in await self._all('COUNT')]

    async def count(self) -> int:
        """The board's members: the sum over the shards."""
        return sum(await self.shard_counts())

    async def position(self, shard: int, count: int, at: Optional[Tuple[int, Arg]]=None, member: Optional[Arg]=None) -> Optional[RankPosition]:
        """``RANK.POSITION`` of one shard (the raw per-shard read)."""
        a: List[Arg] = [count]
        if at is not None:
            a += ['AT', at[0], at[1]]
        if member is not None:
            a += ['MEMBER', member]
        try:
            return rank_position(await self._one('POSITION', shard, *a))
        except ShardError:
            raise
        except Exception as e:
            raise ShardError(self.shards.keys[shard], e) from e

    async def _positions(self, member: Arg, count: int, extra: Sequence[Tuple[int, str, Sequence[Arg]]]=()) -> Optional[Tuple[RankPosition, List[RankPosition], List[Any]]]:
        """The member's position on its own shard, then on every other
        shard at once (with ``extra`` calls in the same round)."""
        own_i = self.shards.shard_of(member)
        own = await self.position(own_i, count, member=member)
        if own is None:
            return None
        if own.at is None:
            raise R.ReplyError('RANK.POSITION MEMBER without its entry')
        others = [i for i in range(self.n) if i != own_i]
        calls: List[Tuple[int, str, Sequence[Arg]]] = [(i, 'POSITION', [count, 'AT', own.at.score, own.at.tie]) for i in others]
        calls += list(extra)
        res = _raise_first([self.shards.keys[i] for i, _, _ in calls], await self._each(calls))
        pos = []
        for v in res[:len(others)]:
            p = rank_position(v)
            if p is None:
                raise R.ReplyError(f'RANK.POSITION AT: {v!r}')
            pos.append(p)
        return (own, pos, res[len(others):])

    async def get(self, member: Arg) -> Optional[R.RankEntry]:
        """Points, **global** 0-based rank and achievement time, as RANK.GET
        answers them on a single board; None for a member not on it. The
        rank is the sum over the shards of the members above it."""
        own_i = self.shards.shard_of(member)
        r = await self._positions(member, 0, [(own_i, 'GET', [member])])
        if r is None:
            return None
        own, others, (got,) = r
        e = R.rank_get(got)
        if e is None:
            return None
        assert own.at is not None
        return R.RankEntry(own.at.points, own.above + sum((p.above for p in others)), e.achieved_ms)

    async def rank(self, member: Arg) -> Optional[int]:
        """The member's global 0-based rank; None when not on the board."""
        r = await self._positions(member, 0)
        if r is None:
            return None
        own, others, _ = r
        return own.above + sum((p.above for p in others))

    async def top(self, count: int=10, offset: int=0, page_max: int=PAGE_MAX) -> List[R.RankMember]:
        """The best ``count`` after ``offset``, ordered as RANK.TOP orders a
        single board (ties included). Within ``page_max`` (the server's
        rank-range-max) it is one round: a merge of every shard's best
        ``offset + count``; deeper, it walks the board page by page with
        :meth:`top_after`'s cursor (one round per ``page_max`` places)."""
        if count < 0 or offset < 0:
            raise ValueError('count and offset must be 0 or more')
        if offset + count <= page_max:
            merged = await self._merged(None, offset + count)
            return [R.RankMember(e.member, e.points) for e in merged[offset:offset + count]]
        out: List[R.RankMember] = []
        async for e in self._walk(None, page_max):
            if offset:
                offset -= 1
                continue
            if len(out) == count:
                break
            out.append(R.RankMember(e.member, e.points))
        return out

    async def top_after(self, count: int, cursor: Optional[RankPositionEntry]=None) -> Tuple[List[RankPositionEntry], Optional[RankPositionEntry]]:
        """One page of the board in RANK.TOP's order: the best ``count``
        places (at most rank-range-max) after ``cursor`` (the last entry of
        the page before; None for the top), and the cursor of the next page
        (None when this page is the last). A cursor is a position, not an
        offset: a page stays exact while the board changes above it."""
        page = (await self._merged(cursor, count))[:count]
        nxt = page[-1] if len(page) == count and count > 0 else None
        return (page, nxt)

    def pages(self, page_max: int=PAGE_MAX) -> AsyncIterator[RankPositionEntry]:
        """Every entry of the board, best first, read ``page_max`` places
        per round with :meth:`top_after`'s cursor."""
        return self._walk(None, page_max)

    async def _walk(self, cursor: Optional[RankPositionEntry], page_max: int) -> AsyncIterator[RankPositionEntry]:
        while True:
            page, cursor = await self.top_after(page_max, cursor)
            for _item in page:
                yield _item
            if cursor is None:
                return

    async def _merged(self, cursor: Optional[RankPositionEntry], depth: int) -> List[RankPositionEntry]:
        """Every shard's best ``depth`` below ``cursor`` (from the top when
        None), merged in the board's order: its first ``depth`` are the
        board's (no shard can hold more of them than it gave)."""
        a: List[Arg] = [depth]
        if cursor is not None:
            a += ['AT', cursor.score, cursor.tie]
        merged: List[RankPositionEntry] = []
        for v in await self._all('POSITION', *a):
            p = rank_position(v)
            if p is None:
                raise R.ReplyError(f'RANK.POSITION: {v!r}')
            merged += p.below_list
        merged.sort(key=_spread_rank_order, reverse=True)
        return merged

    async def around(self, member: Arg, n: int) -> Optional[List[R.RankPlace]]:
        """The member's global rank and the ``n`` places just above and
        below it, as RANK.AROUND answers on a single board; None when the
        member is not on the board."""
        r = await self._positions(member, n)
        if r is None:
            return None
        own, others, _ = r
        assert own.at is not None
        rank = own.above + sum((p.above for p in others))
        above = sorted(own.above_list + [e for p in others for e in p.above_list], key=_spread_rank_order, reverse=True)
        above = above[max(0, len(above) - n):] if n else []
        below = sorted(own.below_list + [e for p in others for e in p.below_list], key=_spread_rank_order, reverse=True)[:n]
        start = rank - len(above)
        return [R.RankPlace(start + k, e.member, e.points) for k, e in enumerate(above + [own.at] + below)]


class AsyncSpreadStock(_AsyncSpread):
    """:class:`hotpath.SpreadStock` on an asyncio client (generated): each method that sends commands is a coroutine."""
    family = 'STOCK'

    def __init__(self, backend: Any, base: Any, n: int, chunk: Optional[int]=None, rounds: int=3):
        super().__init__(backend, base, n)
        self.chunk = chunk
        self.rounds = rounds

    def shard_of(self, user: Arg) -> int:
        return self.shards.shard_of(user)

    async def create(self, total: int, limit: Optional[int]=None, lease_ms: Optional[int]=None, ttl: Optional[int]=None, now: Optional[int]=None) -> bool:
        """Creates every shard; shard 0, with the pool of ``total``, first."""
        a: List[Arg] = [total]
        for name, v in (('LIMIT', limit), ('LEASE', lease_ms), ('TTL', ttl), ('NOW', now)):
            if v is not None:
                a += [name, v]
        return await self._create(*a)

    async def reserve(self, user: Arg, order: Arg, quantity: int=1, now: Optional[int]=None) -> R.Reservation:
        """``STOCK.RESERVE`` on the user's shard, refilling it as needed:
        OK, LIMIT or SOLDOUT (the whole SKU: the shard was marked dry).
        Raises :class:`StillRefilling` when the shard still lacked units
        after the handle's rounds."""
        i = self.shard_of(user)
        a: List[Arg] = [user, order, quantity]
        if now is not None:
            a += ['NOW', now]
        for rnd in range(self.rounds + 1):
            v = R.array(await self._one('RESERVE', i, *a), 3)
            status = R.text(v[0])
            if status != 'REFILL':
                return R.reservation(v)
            if rnd < self.rounds:
                await self.refill(i, quantity)
        raise StillRefilling('hotpath: shard still refilling, try again')

    async def confirm(self, user: Arg, order: Arg, now: Optional[int]=None) -> bool:
        a: List[Arg] = [order]
        if now is not None:
            a += ['NOW', now]
        return bool(R.integer(await self._one('CONFIRM', self.shard_of(user), *a)))

    async def release(self, user: Arg, order: Arg) -> bool:
        return bool(R.integer(await self._one('RELEASE', self.shard_of(user), order)))

    async def pool(self) -> StockPool:
        f = R.fields(await self._one('POOL', 0))
        p = R.array(f['pending'])
        pending = [(R.text(p[j]), R.integer(p[j + 1]), R.integer(p[j + 2])) for j in range(0, len(p), 3)]
        return StockPool(R.integer(f['total']), R.integer(f['free']), R.integer(f['transit']), R.integer(f['open']), pending)

    async def info(self) -> SpreadStockInfo:
        shards = [R.stock_info(v) for v in await self._all('INFO')]
        return SpreadStockInfo(await self.pool(), [s for s in shards if s is not None])

    async def transfer(self, id: str, shard: int, delta: int) -> Tuple[str, int, int, int]:
        """Opens a transfer on the pool: (status, units, free, open)."""
        v = R.array(await self._one('TRANSFER', 0, id, shard, delta), 4)
        return (R.text(v[0]), R.integer(v[1]), R.integer(v[2]), R.integer(v[3]))

    async def finish(self, id: str, shard: int, delta: int) -> int:
        """Applies a transfer on its shard and settles it on the pool; the
        signed units applied."""
        applied = R.integer(R.array(await self._one('APPLY', shard, id, delta), 2)[0])
        await self._one('SETTLE', 0, id, applied)
        return applied

    async def recover(self) -> int:
        """Finishes every open transfer the pool lists; how many."""
        pending = (await self.pool()).pending
        for id, shard, delta in pending:
            await self.finish(id, shard, delta)
        return len(pending)

    async def _chunk(self) -> int:
        if self.chunk is None:
            self.chunk = max(1, (await self.pool()).total // (16 * self.n))
        return self.chunk

    async def refill(self, i: int, quantity: int) -> None:
        """The refill dance for shard ``i`` (docs/stock.md)."""
        want = max(quantity, await self._chunk())
        tid = _transfer_id(i)
        status, units, _, open_ = await self.transfer(tid, i, want)
        if status == 'OPEN' and units > 0:
            await self.finish(tid, i, units)
            return
        if open_ > 0:
            await self.recover()
            return
        got = 0
        for j, v in enumerate(await self._all('INFO')):
            if j == i or got >= want:
                continue
            s = R.stock_info(v)
            if s is None or s.available <= 0:
                continue
            take = min(s.available, want - got)
            hid = _transfer_id(j)
            await self.transfer(hid, j, -take)
            got -= await self.finish(hid, j, -take)
        if got > 0:
            tid = _transfer_id(i)
            status, units, _, _ = await self.transfer(tid, i, want)
            if status == 'OPEN' and units > 0:
                await self.finish(tid, i, units)
            return
        await self._one('APPLY', i, _transfer_id(i), 0)

    async def audit(self) -> List[str]:
        """The cross-shard law from the ledgers; the problems found."""
        info = await self.info()
        in_transit = 0
        for id, shard, delta in info.pool.pending:
            key = self.shards.keys[shard] + b':applied'
            applied = await self.backend.acall('HGET', [key, id], [key])
            if delta > 0 and applied is None:
                in_transit += delta
            elif delta < 0 and applied is not None:
                in_transit -= int(applied)
        held = sum((s.total for s in info.shards))
        problems = []
        if info.pool.free + in_transit + held != info.pool.total:
            problems.append(f'law: free {info.pool.free} + in-transit {in_transit} + shards {held} != total {info.pool.total}')
        return problems


__all__ = ["AsyncSpreadLike", "AsyncSpreadLuckyBag", "AsyncSpreadPoll", "AsyncSpreadRank", "AsyncSpreadStock"]
