"""Spread entities (docs/spread.md): one hot entity split into shards that
live on every master of a cluster.

A spread handle routes each write to the shard of its id, and answers
every read that spans shards in one call: the per-shard commands go out at
once (one pipeline per node, through ``Backend.call_many``) and the replies
are merged. A shard that cannot be reached, or that answers an error,
fails the whole call with :class:`ShardError`: a merged answer is never
partial.

Every per-shard command is retried under topology change (a slot being
moved, a failover) by the handle's :class:`hotpath.retry.RetryPolicy`
(``with_retry``); ``durable(replicas, wait_ms)`` gives a handle whose
writes each wait for replicas (``WAIT`` on the connection that carried
them), and raise :class:`NotDurableError` when too few acknowledged.
"""
from __future__ import annotations

import copy
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, TypeVar

from redis.exceptions import RedisError, ResponseError

from . import replies as R
from . import routing
from .errors import typed
from .retry import DEFAULT as DEFAULT_RETRY
from .retry import RetryPolicy

Arg = Any


class ShardError(RedisError):
    """A shard of a spread entity failed: ``key`` is its shard key,
    ``cause`` what it answered (or the connection error)."""

    def __init__(self, key: bytes, cause: BaseException):
        self.key = key
        self.cause = cause
        super().__init__(f"shard {key.decode('utf-8', 'replace')!r}: {cause}")


class Shards:
    """The shard keys of a spread entity and the routing of ids."""

    def __init__(self, base: routing.Bytes, n: int):
        if not routing.valid_shards(n):
            raise ValueError(f"a spread entity has 1 to {routing.MAX_SHARDS} shards, not {n!r}")
        self.base = routing._b(base)
        if not self.base:
            raise ValueError("a spread entity's base key must not be empty")
        self.n = n
        self.keys: List[bytes] = routing.shard_keys(self.base, n)

    def shard_of(self, id: routing.Bytes) -> int:
        return routing.shard_of(id, self.n)

    def key_of(self, id: routing.Bytes) -> bytes:
        return self.keys[self.shard_of(id)]

    def __repr__(self) -> str:
        return f"Shards({self.base!r}, {self.n})"


class NotDurableError(ShardError):
    """A write ran on its shard's master but fewer than ``replicas``
    replicas acknowledged it within the wait: a failover may still lose
    it. ``reply`` is what the master answered, ``acked`` the replicas that
    have it. Writing it again is safe for every write but ``LIKE.TOGGLE``,
    ``RANK.INCR`` and ``RANK.DECR``."""

    def __init__(self, key: bytes, reply: Any, acked: int, replicas: int):
        self.reply = reply
        self.acked = acked
        self.replicas = replicas
        super().__init__(key, RedisError(
            f"the write reached {acked} of {replicas} replicas (it ran on the master)"))


#: The per-shard commands that write (a durable handle waits after them).
WRITES = frozenset({"CREATE", "TOGGLE", "ADD", "REM", "JOIN", "TASK", "LEAVE", "ENTER", "VOTE",
                    "REVOKE", "INCR", "DECR", "SYNCACK",
                    # STOCK's spread form (hotpath.spread_stock)
                    "RESERVE", "CONFIRM", "RELEASE", "TRANSFER", "APPLY", "SETTLE"})

S = TypeVar("S", bound="_Spread")


def _raise_first(keys: Sequence[bytes], results: Sequence[Any]) -> List[Any]:
    for k, r in zip(keys, results):
        if isinstance(r, ShardError):
            raise r
        if isinstance(r, BaseException):
            raise ShardError(k, typed(r))
    return list(results)


class _Spread:
    family = ""

    def __init__(self, backend: Any, base: routing.Bytes, n: int):
        self.backend = backend
        self.shards = Shards(base, n)
        #: How per-shard commands are retried (``hotpath.retry``).
        self.retry: RetryPolicy = DEFAULT_RETRY
        #: ``(replicas, wait_ms)`` for a durable handle, else None.
        self.durability: Optional[Tuple[int, int]] = None

    def with_retry(self: S, policy: RetryPolicy) -> S:
        """The same handle with another retry policy
        (``hotpath.retry.NEVER``: the cluster client's own retries only)."""
        h = copy.copy(self)
        h.retry = policy
        return h

    def durable(self: S, replicas: int = 1, wait_ms: int = 1000) -> S:
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
        return [k, *args, "SPREAD", self.n]

    def _one(self, sub: str, i: int, *args: Arg) -> Any:
        """One command on shard ``i``, retried by the handle's policy; a
        durable handle's write waits for its replicas."""
        k = self.shards.keys[i]
        command = f"{self.family}.{sub}"
        argv = self._argv(i, args)
        if self.durability is None or sub not in WRITES:
            try:
                return self.retry.run(lambda: self.backend.call(command, argv, [k]), command)
            except ResponseError as e:
                raise typed(e) from None
        replicas, wait_ms = self.durability
        res, acks = self._durable([(command, argv, [k])], replicas, wait_ms)
        if isinstance(res[0], BaseException):
            raise res[0]
        if acks[0] < replicas:
            raise NotDurableError(k, res[0], acks[0], replicas)
        return res[0]

    def _durable(self, calls: Sequence[Tuple[str, Sequence[Arg], Sequence[Any]]],
                 replicas: int, wait_ms: int) -> Tuple[List[Any], List[int]]:
        """``backend.call_many_durable``, retried by the handle's policy:
        each round sends again only the calls that failed."""
        acks = [0] * len(calls)

        def step(idx: Sequence[int]) -> List[Any]:
            res, ack = self.backend.call_many_durable([calls[i] for i in idx], replicas, wait_ms)
            for i, a in zip(idx, ack):
                acks[i] = a
            return list(res)

        out: List[Any] = self.retry.run_many(step, [c[0] for c in calls])
        return out, acks

    def _each(self, calls: Sequence[Tuple[int, str, Sequence[Arg]]]) -> List[Any]:
        """Commands on shards, all at once (one pipeline per node); each
        reply or its exception, the failed ones retried by the handle's
        policy. A durable handle's writes wait for their replicas."""
        full = [(f"{self.family}.{sub}", self._argv(i, args), [self.shards.keys[i]])
                for i, sub, args in calls]
        if self.durability is not None and any(sub in WRITES for _, sub, _ in calls):
            replicas, wait_ms = self.durability
            res, acks = self._durable(full, replicas, wait_ms)
            for j, (c, r) in enumerate(zip(full, res)):
                if not isinstance(r, BaseException) and acks[j] < replicas:
                    res[j] = NotDurableError(c[2][0], r, acks[j], replicas)
            return res
        return self.retry.run_many(
            lambda idx: self.backend.call_many([full[i] for i in idx]), [c[0] for c in full])

    def _all(self, sub: str, *args: Arg) -> List[Any]:
        """The same command on every shard; fails on any shard's error."""
        res = self._each([(i, sub, args) for i in range(self.n)])
        return _raise_first(self.shards.keys, res)

    def _create(self, *args: Arg) -> bool:
        """Creates every shard, after checking them all (``INFO … SPREAD
        n``): a shard in use stops the creation before anything is
        written. Shard 0 first, on its own (it also checks the base key),
        then the others at once. Running it again is harmless."""
        checks = self._each([(i, "INFO", ()) for i in range(self.n)])
        for k, r in zip(self.shards.keys, checks):
            if isinstance(r, BaseException) and not str(r).endswith("does not exist"):
                raise ShardError(k, r)
        R.ok(self._one("CREATE", 0, *args))
        rest = self._each([(i, "CREATE", args) for i in range(1, self.n)])
        for v in _raise_first(self.shards.keys[1:], rest):
            R.ok(v)
        return True

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.base!r}, {self.n})"


class SpreadLike(_Spread):
    """A post spread over ``n`` shards (docs/spread.md, docs/like.md). User
    ids are integers; user ``u`` lives in shard ``u % n``, stored as
    ``u // n``."""
    family = "LIKE"

    def shard_of(self, user: int) -> int:
        return routing.like_slot_of(int(user), self.n)[0]

    def create(self) -> bool:
        """``LIKE.CREATE K_i SPREAD n`` on every shard."""
        return self._create()

    def _write(self, sub: str, user: int, now: Optional[int]) -> R.ShardLikeChange:
        i = self.shard_of(user)
        a: List[Arg] = [user] + (["NOW", now] if now is not None else [])
        c, n = R.array(self._one(sub, i, *a), 2)
        return R.ShardLikeChange(bool(R.integer(c)), i, R.integer(n))

    def toggle(self, user: int, now: Optional[int] = None) -> R.ShardLikeChange:
        """``changed``: whether the user likes the post after the call."""
        return self._write("TOGGLE", user, now)

    def add(self, user: int, now: Optional[int] = None) -> R.ShardLikeChange:
        return self._write("ADD", user, now)

    def rem(self, user: int) -> R.ShardLikeChange:
        return self._write("REM", user, None)

    def check(self, *users: int) -> List[bool]:
        """One flag per user, in order: one LIKE.CHECK per shard asked."""
        by_shard: Dict[int, List[int]] = {}
        for pos, u in enumerate(users):
            by_shard.setdefault(self.shard_of(u), []).append(pos)
        order = sorted(by_shard)
        res = self._each([(i, "CHECK", [users[p] for p in by_shard[i]]) for i in order])
        res = _raise_first([self.shards.keys[i] for i in order], res)
        out = [False] * len(users)
        for i, v in zip(order, res):
            flags = R.flags(v)
            if len(flags) != len(by_shard[i]):
                raise R.ReplyError(f"LIKE.CHECK of shard {i}: {v!r}")
            for p, f in zip(by_shard[i], flags):
                out[p] = f
        return out

    def likes(self, user: int) -> bool:
        return R.flags(self._one("CHECK", self.shard_of(user), user))[0]

    def shard_counts(self) -> List[int]:
        return [R.integer(v) for v in self._all("COUNT")]

    def count(self) -> int:
        """The exact like count: the sum over the shards."""
        return sum(self.shard_counts())

    def recent(self, n: Optional[int] = None) -> List[R.Liker]:
        """The latest ``n`` recorded likers over all shards, newest first
        (ties: larger user id first); every recorded liker without ``n``."""
        likers: List[R.Liker] = []
        for v in self._all("RECENT", *([n] if n is not None else [])):
            likers += R.like_recent(v)
        likers.sort(key=lambda l: (l.at_ms, l.user), reverse=True)
        return likers if n is None else likers[:n]

    def info(self) -> R.SpreadLikeInfo:
        shards = [R.like_info(v) for v in self._all("INFO")]
        return R.SpreadLikeInfo(self.n, sum(s.count for s in shards),
                                sum(s.bytes for s in shards), shards)


def _r(text: str) -> float:
    """A score as the server prints it (17 significant digits: exact)."""
    try:
        r = float(text)
    except ValueError:
        raise R.ReplyError(f"not a score: {text!r}") from None
    if not 0.0 <= r <= 1.0:
        raise R.ReplyError(f"not a score from 0 to 1: {text!r}")
    return r


def _draw_key(w: R.Winner) -> Tuple[float, bytes]:
    # The single-slot DRAW's order: higher score, then the byte-wise
    # greater user, first.
    return (_r(w.score_text), w.user.encode("utf-8", "surrogateescape"))


class SpreadLuckyBag(_Spread):
    """A lucky bag spread over ``n`` shards (docs/spread.md,
    docs/luckybag.md): a user joins shard ``routing.shard_of(user, n)``;
    :meth:`draw` runs across the shards and gives the exact global top
    WINNERS, safe to run again."""
    family = "LUCKYBAG"

    def create(self, winners: int, shards: Optional[int] = None, poolcap: Optional[int] = None,
               highscore: Optional[str] = None, restore: Optional[bool] = None,
               ttl: Optional[int] = None) -> bool:
        """Creates every shard. ``poolcap`` is the bag's: each shard keeps
        its share of it. Each shard has one internal pool unless
        ``shards`` says otherwise."""
        a: List[Arg] = ["WINNERS", winners]
        for name, v in (("SHARDS", shards), ("POOLCAP", poolcap), ("HIGHSCORE", highscore),
                        ("TTL", ttl)):
            if v is not None:
                a += [name, v]
        if restore is not None:
            a += ["RESTORE", "YES" if restore else "NO"]
        return self._create(*a)

    def _user(self, sub: str, user: Arg, *args: Arg) -> Any:
        return self._one(sub, self.shards.shard_of(user), user, *args)

    def join(self, user: Arg, task_pending: bool = False) -> R.ShardJoin:
        j = R.join(self._user("JOIN", user, *(["TASK", "PENDING"] if task_pending else [])))
        return R.ShardJoin(j.new, j.pooled, self.shards.shard_of(user), j.participants)

    def task(self, user: Arg) -> bool:
        return bool(R.integer(self._user("TASK", user)))

    def leave(self, user: Arg) -> bool:
        return bool(R.integer(self._user("LEAVE", user)))

    def enter(self, user: Arg) -> bool:
        return bool(R.integer(self._user("ENTER", user)))

    def result(self, user: Arg) -> str:
        """PENDING, WON, LOST or ABSENT, read on the node that owns the
        user's shard (PENDING until that shard has its winners)."""
        return R.text(self._user("RESULT", user))

    def info(self) -> R.SpreadBagInfo:
        raw = self._all("INFO")
        per: List[R.BagInfo] = []
        for k, v in zip(self.shards.keys, raw):
            info = R.bag_info(v)
            if info is None:
                raise ShardError(k, R.ReplyError("no such bag"))
            per.append(info)
        draw = R.text(R.fields(raw[0]).get("draw", "none"))
        return R.SpreadBagInfo("open" if draw == "none" else draw,
                               sum(i.participants for i in per), sum(i.pooled for i in per),
                               per[0].winners, self.n, per)

    def participants(self) -> int:
        return self.info().participants

    def draw(self, token: Optional[str] = None, lease_ms: int = 30_000, replicas: int = 1,
             wait_ms: int = 5_000, now: Optional[int] = None) -> List[R.Winner]:
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
        a: List[Arg] = [token, "LEASE", lease_ms] + (["NOW", now] if now is not None else [])
        try:
            begin = R.array(self._one("DRAWBEGIN", 0, *a))
        except RedisError as e:
            raise ShardError(k0, e) from e
        state, w = R.text(begin[0]), R.integer(begin[1])
        if state == "drawn":
            winners = R.winners(begin[2:])
            self._publish(winners, w)
            return winners
        n = self.n
        depth = [min(w, -(-2 * w // n) + 16)] * n
        lists: List[List[R.Winner]] = [[] for _ in range(n)]
        # The first round freezes every shard; with ``replicas``, each
        # node's part ends in WAIT on the same connection (FREEZE always
        # replicates, so the WAIT also covers a freeze made by an earlier,
        # interrupted run of the draw).
        calls = [(f"{self.family}.FREEZE", self._argv(i, [depth[i]]), [self.shards.keys[i]])
                 for i in range(n)]
        if replicas > 0:
            res, acks = self._durable(calls, replicas, wait_ms)
        else:
            res = self.retry.run_many(lambda idx: self.backend.call_many([calls[i] for i in idx]),
                                      [c[0] for c in calls])
            acks = [replicas] * n
        for i, v in enumerate(_raise_first(self.shards.keys, res)):
            lists[i] = R.winners(v)
        for k, ack in zip(self.shards.keys, acks):
            if ack < replicas:
                raise ShardError(k, RedisError(
                    f"its freeze reached {ack} of {replicas} replicas; run the draw again"))
        while True:
            merged = sorted((c for l in lists for c in l), key=_draw_key, reverse=True)[:w]
            top = set((c.user, c.score_text) for c in merged)
            # A shard may hold more winners only if it sent as many as asked
            # and its last one is still among the best: whatever it did not
            # send ranks below that one.
            ask = [i for i in range(n)
                   if depth[i] < w and len(lists[i]) == depth[i]
                   and (lists[i][-1].user, lists[i][-1].score_text) in top]
            if not ask:
                break
            for i in ask:
                depth[i] = min(w, depth[i] * 2)
            res = self._each([(i, "FREEZE", [depth[i]]) for i in ask])
            for i, v in zip(ask, _raise_first([self.shards.keys[i] for i in ask], res)):
                lists[i] = R.winners(v)
        # Every shard checks its part against its own pool before anything
        # is final (PUBLISH … VERIFY writes nothing): a wrong merge is
        # refused here, while the draw can still be run again.
        self._publish(merged, w, verify=True)
        pairs: List[Arg] = []
        for c in merged:
            pairs += [c.user, c.score_text]
        commit = [(f"{self.family}.COMMIT", self._argv(0, [token, *pairs]), [k0])]
        if replicas > 0:
            res, acks = self._durable(commit, replicas, wait_ms)
        else:
            res = self.retry.run_many(lambda idx: self.backend.call_many(commit),
                                      [commit[0][0]])
            acks = [0]
        R.ok(_raise_first([k0], res)[0])
        if replicas > 0 and acks[0] < replicas:
            raise ShardError(k0, RedisError(
                f"the commit reached {acks[0]} of {replicas} replicas; run the draw again"))
        self._publish(merged, w)
        return merged

    def _publish(self, winners: Sequence[R.Winner], w: int, verify: bool = False) -> None:
        """Gives each shard its own winners, with the global list's last
        winner when the list is full (``LAST``), so that each shard checks
        that nothing it holds outside the list ranks before it."""
        by: Dict[int, List[Arg]] = {i: [] for i in range(self.n)}
        for c in winners:
            by[self.shards.shard_of(c.user)] += [c.user, c.score_text]
        tail: List[Arg] = []
        if winners and len(winners) >= w:
            tail = ["LAST", winners[-1].user, winners[-1].score_text]
        if verify:
            tail.append("VERIFY")
        res = self._each([(i, "PUBLISH", by[i] + tail) for i in range(self.n)])
        _raise_first(self.shards.keys, res)


def spread_count(backend: Any, family: str, base: routing.Bytes) -> Optional[int]:
    """The shard count of a spread entity, read from its shard 0 (whose key
    does not depend on the count); ``None`` when ``base`` is not spread."""
    k0 = routing.shard_key(base, 1, 0)
    v = backend.call(f"{family}.INFO", [k0], [k0])
    # A RESP2 array or a RESP3 map (dict).
    if not isinstance(v, (list, tuple, dict)) or (not isinstance(v, dict) and len(v) % 2):
        return None
    f = R.fields(v)
    return R.integer(f["spread"]) if "spread" in f else None


#: The public names (the rest is the package's own).
__all__ = [
    "ShardError", "NotDurableError", "Shards", "SpreadLike", "SpreadLuckyBag", "spread_count",
    "WRITES",
]
