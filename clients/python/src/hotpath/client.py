"""Entity handles over redis-py: ``HotPath(r).poll("poll:{42}").vote(…)``.

``r`` is a ``redis.Redis`` or a ``redis.RedisCluster``: every command
names its base key first, so redis-py routes it to the right node by itself
(the module declares its keys to ``COMMAND``).

The seam for other backends: every command goes through
``Backend.call(command, argv, keys)``. ``ModuleBackend`` sends the module's
command; a backend for servers without the module (a Redis Functions
library) implements the same method, and the handles do not change.
Spread entities (``hotpath.spread``) have their own handles, which send
each write to its shard key (see ``hotpath.routing``) and fan reads out
over the shards through ``Backend.call_many``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable, List, Optional, Sequence, Tuple, Union

from redis.exceptions import ResponseError

from . import replies as R
from .errors import typed
from .spread import SpreadLike, SpreadLuckyBag, spread_count

if TYPE_CHECKING:
    from .retry import RetryPolicy
    from .spread_poll import SpreadPoll
    from .spread_rank import SpreadRank

Key = Union[str, bytes]
Arg = Union[str, bytes, int, float]


Call = Tuple[str, Sequence[Arg], Sequence[Key]]


class Backend:
    """Runs one hotpath command. ``argv`` is the module command's arguments
    after its name; ``keys`` are the Redis keys among them (what a Lua or
    Functions backend passes as KEYS)."""

    def call(self, command: str, argv: Sequence[Arg], keys: Sequence[Key]) -> Any:
        raise NotImplementedError

    def call_many(self, calls: Sequence[Call]) -> List[Any]:
        """Runs several commands (the per-shard parts of a spread call) and
        returns each reply, or the exception it raised, in order. This
        default runs them one after the other; a backend that can pipeline
        overrides it."""
        out: List[Any] = []
        for command, argv, keys in calls:
            try:
                out.append(self.call(command, argv, keys))
            except Exception as e:  # noqa: BLE001 (each shard's own outcome)
                out.append(e)
        return out

    def call_many_durable(self, calls: Sequence[Call],
                          replicas: int, timeout_ms: int) -> Tuple[List[Any], List[int]]:
        """The durable write: :meth:`call_many`, then ``WAIT replicas
        timeout_ms`` on the node of each call's first key, on the
        connection that sent its writes (``WAIT`` counts the writes of its
        own connection). Returns the replies and, per call, the replicas
        that acknowledged its node's writes (0 for a call that failed).
        This default serves a single server."""
        out = self.call_many(calls)
        acked = int(self.call("WAIT", [replicas, timeout_ms], []))
        return out, [acked] * len(calls)

    def call_durable(self, command: str, argv: Sequence[Arg], keys: Sequence[Key],
                     replicas: int, timeout_ms: int) -> Tuple[Any, int]:
        """One durable write (:meth:`call_many_durable`): its reply (or the
        exception it raised) and the replicas that acknowledged it."""
        out, acks = self.call_many_durable([(command, argv, keys)], replicas, timeout_ms)
        return out[0], acks[0]


def pipeline_many(client: Any, wires: Sequence[Sequence[Arg]]) -> List[Any]:
    """Sends commands (each a full argument list) in one pipeline: on a
    ``RedisCluster``, redis-py groups it per node, writes every node's part
    before reading any reply, and follows redirections; each reply or error
    comes back in order."""
    if not wires:
        return []
    pipe = client.pipeline(transaction=False)
    for wire in wires:
        pipe.execute_command(*wire)
    return list(pipe.execute(raise_on_error=False))


def _refresh_topology(client: Any, errors: Sequence[Any]) -> None:
    """Re-reads a cluster's slot map after a redirection or a node failure
    seen outside redis-py's own retry path (the durable pipelines go
    straight to a node)."""
    nodes = getattr(client, "nodes_manager", None)
    if nodes is None:
        return
    from .retry import classify
    if any(isinstance(e, BaseException) and classify(e) is not None for e in errors):
        try:
            nodes.initialize()
        except Exception:  # noqa: BLE001 (the next attempt reports it)
            pass


def pipeline_durable(client: Any, wires: Sequence[Sequence[Arg]], keys: Sequence[Key],
                     replicas: int, timeout_ms: int) -> Tuple[List[Any], List[int]]:
    """The durable write over ``client``: one plain pipeline per node (the
    node of each command's first key, ``keys[i]``), ending in ``WAIT
    replicas timeout_ms``, so that the ``WAIT`` runs on the very
    connection of the node's writes. Returns each reply (or error) and the
    replicas that acknowledged its node's writes (0 where it failed). A
    redirection (a slot moved meanwhile) comes back as that call's error,
    and the cluster's slot map is read again for the next attempt."""
    groups: dict = {}
    nodes: dict = {}
    get_node = getattr(client, "get_node_from_key", None)
    out: List[Any] = [None] * len(wires)
    acks: List[int] = [0] * len(wires)
    for i, key in enumerate(keys):
        if get_node is None:
            name = None
        else:
            try:
                node = get_node(key)
            except Exception as e:  # noqa: BLE001 (no owner known: this call's error)
                out[i] = e
                continue
            name = node.name
            nodes[name] = node
        groups.setdefault(name, []).append(i)
    for name, idx in groups.items():
        node_client = client if name is None else client.get_redis_connection(nodes[name])
        pipe = node_client.pipeline(transaction=False)
        for i in idx:
            pipe.execute_command(*wires[i])
        pipe.execute_command("WAIT", replicas, timeout_ms)
        try:
            res = pipe.execute(raise_on_error=False)
        except Exception as e:  # noqa: BLE001 (the node failed: each call fails)
            res = [e] * (len(idx) + 1)
        ack = res[-1]
        for j, i in enumerate(idx):
            out[i] = res[j]
            ok = isinstance(ack, int) and not isinstance(res[j], BaseException)
            acks[i] = ack if ok else 0
    _refresh_topology(client, out)
    return out, acks


class ModuleBackend(Backend):
    """Sends the module's own commands."""

    def __init__(self, client: Any):
        self.client = client

    def wire(self, command: str, argv: Sequence[Arg], keys: Sequence[Key]) -> List[Arg]:
        """The command as sent: the module's own."""
        return [command, *argv]

    def call(self, command: str, argv: Sequence[Arg], keys: Sequence[Key]) -> Any:
        return self.client.execute_command(command, *argv)

    def call_many(self, calls: Sequence[Call]) -> List[Any]:
        """One pipeline (:func:`pipeline_many`)."""
        return pipeline_many(self.client, [self.wire(*c) for c in calls])

    def call_many_durable(self, calls: Sequence[Call],
                          replicas: int, timeout_ms: int) -> Tuple[List[Any], List[int]]:
        """One plain pipeline per node ending in ``WAIT``
        (:func:`pipeline_durable`)."""
        return pipeline_durable(self.client, [self.wire(*c) for c in calls],
                                [c[2][0] for c in calls], replicas, timeout_ms)


def _opt(argv: List[Arg], name: str, value: Optional[Arg]) -> None:
    if value is not None:
        argv += [name, value]


class _Entity:
    family = ""

    def __init__(self, backend: Backend, key: Key):
        self.backend = backend
        self.key = key

    def _call(self, sub: str, *args: Arg) -> Any:
        try:
            return self.backend.call(f"{self.family}.{sub}", [self.key, *args], [self.key])
        except ResponseError as e:
            raise typed(e) from None

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.key!r})"


class Poll(_Entity):
    """One-vote polls (docs/poll.md)."""
    family = "POLL"

    def create(self, mode: Optional[str] = None, maxvotes: Optional[int] = None,
               candidates: Optional[Sequence[Arg]] = None, start: Optional[int] = None,
               end: Optional[int] = None, tz: Optional[int] = None,
               ttl: Optional[int] = None, now: Optional[int] = None) -> bool:
        a: List[Arg] = []
        _opt(a, "MODE", mode)
        _opt(a, "MAXVOTES", maxvotes)
        if candidates is not None:
            a += ["CANDIDATES", len(candidates), *candidates]
        _opt(a, "START", start)
        _opt(a, "END", end)
        _opt(a, "TZ", tz)
        _opt(a, "TTL", ttl)
        _opt(a, "NOW", now)
        return R.ok(self._call("CREATE", *a))

    def vote(self, user: Arg, candidate: Arg, now: Optional[int] = None, idem: Optional[Arg] = None) -> bool:
        """True when the vote counted, False for a duplicate."""
        a: List[Arg] = [user, candidate]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return bool(R.integer(self._call("VOTE", *a)))

    def revoke(self, user: Arg, candidate: Optional[Arg] = None, now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        a: List[Arg] = [user] + ([candidate] if candidate is not None else [])
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return R.integer(self._call("REVOKE", *a))

    def top(self, count: Optional[int] = None, offset: Optional[int] = None) -> List[R.PollEntry]:
        a: List[Arg] = [count] if count is not None else []
        _opt(a, "OFFSET", offset)
        return R.poll_top(self._call("TOP", *a))

    def rank(self, candidate: Arg) -> Optional[R.PollRank]:
        return R.poll_rank(self._call("RANK", candidate))

    def status(self, user: Arg, now: Optional[int] = None) -> List[str]:
        a: List[Arg] = [user]
        _opt(a, "NOW", now)
        return R.texts(self._call("STATUS", *a))

    def info(self) -> Optional[R.PollInfo]:
        return R.poll_info(self._call("INFO"))

    def sync(self) -> R.PollSync:
        return R.poll_sync(self._call("SYNC"))

    def syncack(self, epoch: int) -> bool:
        return bool(R.integer(self._call("SYNCACK", epoch)))


class Rank(_Entity):
    """Tie-broken leaderboards (docs/rank.md)."""
    family = "RANK"

    def create(self, tiebreak: Optional[str] = None, unit: Optional[str] = None,
               digits: Optional[int] = None, epoch: Optional[int] = None,
               ttl: Optional[int] = None, now: Optional[int] = None,
               layout: Optional[str] = None) -> bool:
        """layout: "PACKED" (default) or "WIDE" (points up to +/-(2^53 - 1)
        with a millisecond tie-break, docs/rank.md)."""
        a: List[Arg] = []
        _opt(a, "LAYOUT", layout)
        _opt(a, "TIEBREAK", tiebreak)
        _opt(a, "UNIT", unit)
        _opt(a, "DIGITS", digits)
        _opt(a, "EPOCH", epoch)
        _opt(a, "TTL", ttl)
        _opt(a, "NOW", now)
        return R.ok(self._call("CREATE", *a))

    def add(self, member: Arg, points: int, gt: bool = False, lt: bool = False,
            now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        """The member's points now stored."""
        a: List[Arg] = [member, points] + (["GT"] if gt else []) + (["LT"] if lt else [])
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return R.integer(self._call("ADD", *a))

    def incr(self, member: Arg, delta: int, now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        a: List[Arg] = [member, delta]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return R.integer(self._call("INCR", *a))

    def decr(self, member: Arg, delta: int, now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        a: List[Arg] = [member, delta]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return R.integer(self._call("DECR", *a))

    def get(self, member: Arg) -> Optional[R.RankEntry]:
        return R.rank_get(self._call("GET", member))

    def top(self, count: Optional[int] = None, offset: Optional[int] = None) -> List[R.RankMember]:
        a: List[Arg] = [count] if count is not None else []
        _opt(a, "OFFSET", offset)
        return R.rank_top(self._call("TOP", *a))

    def around(self, member: Arg, n: int) -> Optional[List[R.RankPlace]]:
        return R.rank_around(self._call("AROUND", member, n))

    def rem(self, *members: Arg) -> int:
        return R.integer(self._call("REM", *members))

    def count(self) -> int:
        return R.integer(self._call("COUNT"))


class Like(_Entity):
    """Likes with Set→Bitmap promotion (docs/like.md). User ids are integers."""
    family = "LIKE"

    def toggle(self, user: int, now: Optional[int] = None, idem: Optional[Arg] = None) -> R.LikeToggle:
        a: List[Arg] = [user]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return R.like_toggle(self._call("TOGGLE", *a))

    def add(self, user: int, now: Optional[int] = None) -> R.LikeChange:
        a: List[Arg] = [user]
        _opt(a, "NOW", now)
        return R.like_change(self._call("ADD", *a))

    def rem(self, user: int) -> R.LikeChange:
        return R.like_change(self._call("REM", user))

    def check(self, *users: int) -> List[bool]:
        """One flag per user, in order."""
        return R.flags(self._call("CHECK", *users))

    def count(self) -> int:
        return R.integer(self._call("COUNT"))

    def recent(self, n: Optional[int] = None) -> List[R.Liker]:
        return R.like_recent(self._call("RECENT", *([n] if n is not None else [])))

    def info(self) -> R.LikeInfo:
        return R.like_info(self._call("INFO"))


class RedPacket(_Entity):
    """Red packets (docs/redpacket.md). Amounts are integer cents."""
    family = "REDPACKET"

    def split(self, total_cents: int, count: int, mode: Optional[str] = None,
              ttl: Optional[int] = None, now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        a: List[Arg] = [total_cents, count]
        _opt(a, "MODE", mode)
        _opt(a, "TTL", ttl)
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return R.integer(self._call("SPLIT", *a))

    def grab(self, user: Arg, now: Optional[int] = None, idem: Optional[Arg] = None) -> R.Grab:
        a: List[Arg] = [user]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return R.grab(self._call("GRAB", *a))

    def info(self, now: Optional[int] = None) -> Optional[R.PacketInfo]:
        a: List[Arg] = []
        _opt(a, "NOW", now)
        return R.packet_info(self._call("INFO", *a))

    def grabbed(self) -> dict:
        return R.grabbed(self._call("GRABBED"))

    def refund(self) -> int:
        return R.integer(self._call("REFUND"))


class LuckyBag(_Entity):
    """Live-stream lucky bags (docs/luckybag.md)."""
    family = "LUCKYBAG"

    def create(self, winners: int, shards: Optional[int] = None, poolcap: Optional[int] = None,
               highscore: Optional[str] = None, restore: Optional[bool] = None,
               ttl: Optional[int] = None) -> bool:
        a: List[Arg] = ["WINNERS", winners]
        _opt(a, "SHARDS", shards)
        _opt(a, "POOLCAP", poolcap)
        _opt(a, "HIGHSCORE", highscore)
        if restore is not None:
            a += ["RESTORE", "YES" if restore else "NO"]
        _opt(a, "TTL", ttl)
        return R.ok(self._call("CREATE", *a))

    def join(self, user: Arg, task_pending: bool = False, idem: Optional[Arg] = None) -> R.Join:
        a: List[Arg] = [user] + (["TASK", "PENDING"] if task_pending else [])
        _opt(a, "IDEM", idem)
        return R.join(self._call("JOIN", *a))

    def task(self, user: Arg) -> bool:
        return bool(R.integer(self._call("TASK", user)))

    def leave(self, user: Arg) -> bool:
        return bool(R.integer(self._call("LEAVE", user)))

    def enter(self, user: Arg) -> bool:
        return bool(R.integer(self._call("ENTER", user)))

    def draw(self) -> List[R.Winner]:
        return R.winners(self._call("DRAW"))

    def result(self, user: Arg) -> str:
        """PENDING, WON, LOST or ABSENT."""
        return R.text(self._call("RESULT", user))

    def info(self) -> Optional[R.BagInfo]:
        return R.bag_info(self._call("INFO"))


class Rate(_Entity):
    """Rate limits (docs/rate.md); the limiter is the key itself."""
    family = "RATE"

    def check(self, limit: int, period_ms: int, algo: Optional[str] = None,
              burst: Optional[int] = None, cost: Optional[int] = None, peek: bool = False,
              now: Optional[int] = None, idem: Optional[Arg] = None) -> R.RateResult:
        a: List[Arg] = [limit, period_ms]
        _opt(a, "ALGO", algo)
        _opt(a, "BURST", burst)
        _opt(a, "COST", cost)
        if peek:
            a.append("PEEK")
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return R.rate(self._call("CHECK", *a))

    def throttle(self, max_burst: int, count: int, period_s: int,
                 quantity: Optional[int] = None, now: Optional[int] = None, idem: Optional[Arg] = None) -> R.Throttle:
        a: List[Arg] = [max_burst, count, period_s] + ([quantity] if quantity is not None else [])
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return R.throttle(self._call("THROTTLE", *a))

    def reset(self) -> bool:
        return bool(R.integer(self._call("RESET")))


class Lock(_Entity):
    """Locks and semaphores with fencing tokens (docs/reference/lock.md)."""
    family = "LOCK"

    def acquire(self, owner: Arg, ttl_ms: int, limit: Optional[int] = None,
                maxhold: Optional[int] = None, block: Optional[int] = None,
                now: Optional[int] = None, idem: Optional[Arg] = None) -> Optional[int]:
        """The fencing token, or None when busy (after ``block`` ms with it).
        Blocking calls need a socket timeout longer than ``block``."""
        a: List[Arg] = [owner, ttl_ms]
        _opt(a, "LIMIT", limit)
        _opt(a, "MAXHOLD", maxhold)
        _opt(a, "BLOCK", block)
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return R.token(self._call("ACQUIRE", *a))

    def release(self, owner: Arg, now: Optional[int] = None) -> bool:
        """True when ``owner`` held a live lease (one acquisition undone)."""
        a: List[Arg] = [owner]
        _opt(a, "NOW", now)
        return bool(R.integer(self._call("RELEASE", *a)))

    def renew(self, owner: Arg, ttl_ms: int, now: Optional[int] = None) -> int:
        """The ms left in the renewed lease; 0 when ``owner`` holds none."""
        a: List[Arg] = [owner, ttl_ms]
        _opt(a, "NOW", now)
        return R.integer(self._call("RENEW", *a))

    def info(self, now: Optional[int] = None) -> List[R.LockHolder]:
        """The live holders, by token; empty when the lock is free."""
        a: List[Arg] = []
        _opt(a, "NOW", now)
        return R.lock_info(self._call("INFO", *a))

    def check(self, token: int, now: Optional[int] = None) -> bool:
        """True when ``token`` belongs to a live hold."""
        a: List[Arg] = [token]
        _opt(a, "NOW", now)
        return bool(R.integer(self._call("CHECK", *a)))


class Idem(_Entity):
    """An application idempotency key: a fenced in-progress lease, the
    stored result replayed (docs/reference/idem.md)."""
    family = "IDEM"

    def begin(self, fingerprint: Arg, lease_ms: int, ttl: Optional[int] = None,
              now: Optional[int] = None) -> R.IdemBegin:
        """NEW with a fence, RUNNING with the ms left, DONE with the stored
        result, or MISMATCH (another fingerprint under this key)."""
        a: List[Arg] = [fingerprint, lease_ms]
        _opt(a, "TTL", ttl)
        _opt(a, "NOW", now)
        return R.idem_begin(self._call("BEGIN", *a))

    def complete(self, fence: int, result: Arg, now: Optional[int] = None) -> bool:
        """True when the result was stored, False when this fence's equal
        result is stored already (a retried COMPLETE). A stale fence raises
        the server's error."""
        a: List[Arg] = [fence, result]
        _opt(a, "NOW", now)
        return bool(R.integer(self._call("COMPLETE", *a)))

    def abort(self, fence: int) -> bool:
        """True when the record begun with ``fence`` was given up."""
        return bool(R.integer(self._call("ABORT", fence)))

    def get(self, now: Optional[int] = None) -> Optional[R.IdemRecord]:
        """The record, or None."""
        a: List[Arg] = []
        _opt(a, "NOW", now)
        return R.idem_record(self._call("GET", *a))


class DelayQueue(_Entity):
    """A delay queue with leases and dead letters (docs/reference/delayq.md)."""
    family = "DELAYQ"

    def add(self, id: Arg, payload: Arg, delay: Optional[int] = None, at: Optional[int] = None,
            attempts: Optional[int] = None, replace: bool = False,
            now: Optional[int] = None, idem: Optional[Arg] = None) -> bool:
        """True when added (or replaced), False when ``id`` exists."""
        a: List[Arg] = [id, payload]
        _opt(a, "DELAY", delay)
        _opt(a, "AT", at)
        _opt(a, "ATTEMPTS", attempts)
        if replace:
            a.append("REPLACE")
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return bool(R.integer(self._call("ADD", *a)))

    def poll(self, lease_ms: int, count: Optional[int] = None, block: Optional[int] = None,
             now: Optional[int] = None) -> List[R.Job]:
        """Up to ``count`` ready jobs, each leased for ``lease_ms``; empty when
        none (after ``block`` ms with it)."""
        a: List[Arg] = [lease_ms]
        _opt(a, "COUNT", count)
        _opt(a, "BLOCK", block)
        _opt(a, "NOW", now)
        return R.jobs(self._call("POLL", *a))

    def ack(self, id: Arg, receipt: int) -> bool:
        return bool(R.integer(self._call("ACK", id, receipt)))

    def nack(self, id: Arg, receipt: int, delay: Optional[int] = None,
             backoff: Optional[Tuple[int, int]] = None, now: Optional[int] = None, idem: Optional[Arg] = None) -> R.Nack:
        """``backoff`` is ``(base_ms, max_ms)``."""
        a: List[Arg] = [id, receipt]
        _opt(a, "DELAY", delay)
        if backoff is not None:
            a += ["BACKOFF", backoff[0], backoff[1]]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return R.nack(self._call("NACK", *a))

    def extend(self, id: Arg, receipt: int, lease_ms: int, now: Optional[int] = None) -> bool:
        a: List[Arg] = [id, receipt, lease_ms]
        _opt(a, "NOW", now)
        return bool(R.integer(self._call("EXTEND", *a)))

    def dead(self, count: Optional[int] = None) -> List[R.DeadLetter]:
        a: List[Arg] = []
        _opt(a, "COUNT", count)
        return R.dead_letters(self._call("DEAD", *a))

    def redrive(self, count: Optional[int] = None, id: Optional[Arg] = None,
                now: Optional[int] = None) -> int:
        """Dead letters put back in line: the oldest ``count``, or ``id``."""
        a: List[Arg] = []
        _opt(a, "COUNT", count)
        _opt(a, "ID", id)
        _opt(a, "NOW", now)
        return R.integer(self._call("REDRIVE", *a))

    def info(self, now: Optional[int] = None) -> R.QueueInfo:
        a: List[Arg] = []
        _opt(a, "NOW", now)
        return R.queue_info(self._call("INFO", *a))

    def cancel(self, id: Arg, force: bool = False, now: Optional[int] = None) -> bool:
        """True when the job was removed (waiting, ready or dead), False when
        there is none. A job under a running lease raises ``job is leased``
        unless ``force`` (its holder's receipt then goes stale)."""
        a: List[Arg] = [id]
        if force:
            a.append("FORCE")
        _opt(a, "NOW", now)
        return bool(R.integer(self._call("CANCEL", *a)))

    def peek(self, count: Optional[int] = None,
             id: Optional[Arg] = None) -> List[R.ScheduledJob]:
        """The first ``count`` jobs in line (default 10, at most 100), the
        earliest first, or the one ``id``; changes nothing."""
        a: List[Arg] = []
        _opt(a, "COUNT", count)
        _opt(a, "ID", id)
        return R.scheduled_jobs(self._call("PEEK", *a))

    def purge(self, max_len: Optional[int] = None, max_age_ms: Optional[int] = None,
              now: Optional[int] = None) -> int:
        """Dead letters removed, the oldest first, beyond ``max_len`` or older
        than ``max_age_ms``: at most 100 per call (call again while it
        returns 100)."""
        a: List[Arg] = []
        _opt(a, "MAXLEN", max_len)
        _opt(a, "MAXAGE", max_age_ms)
        _opt(a, "NOW", now)
        return R.integer(self._call("PURGE", *a))


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
        return R.ok(self._call("CREATE", *a))

    def reserve(self, user: Arg, order: Arg, quantity: int = 1,
                now: Optional[int] = None, idem: Optional[Arg] = None) -> R.Reservation:
        """Reserves ``quantity`` units for ``order`` under a lease: OK,
        SOLDOUT or LIMIT; the same order gets the same reply again."""
        a: List[Arg] = [user, order, quantity]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return R.reservation(self._call("RESERVE", *a))

    def confirm(self, order: Arg, now: Optional[int] = None) -> bool:
        """True when the reservation became a sale, False when the order was
        already confirmed (after its lease: the server's error)."""
        a: List[Arg] = [order]
        _opt(a, "NOW", now)
        return bool(R.integer(self._call("CONFIRM", *a)))

    def release(self, order: Arg) -> bool:
        """True when the order's units went back, False when there was
        nothing to give back."""
        return bool(R.integer(self._call("RELEASE", order)))

    def restock(self, delta: int, now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        """Adds ``delta`` units (removes available ones when negative);
        the units available after."""
        a: List[Arg] = [delta]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return R.integer(self._call("RESTOCK", *a))

    def info(self) -> Optional[R.StockInfo]:
        """The counts; None for an unknown stock."""
        return R.stock_info(self._call("INFO"))

    def audit(self, cursor: Arg = 0, count: Optional[int] = None) -> R.StockAudit:
        """One audit step from ``cursor``."""
        a: List[Arg] = [cursor]
        _opt(a, "COUNT", count)
        return R.stock_audit(self._call("AUDIT", *a))

    def audit_all(self, count: Optional[int] = None) -> List[str]:
        """Every audit step, from cursor 0 until the walk is over: the
        problems found (the ledger's sums are checked when one step reads
        the whole ledger)."""
        problems: List[str] = []
        cursor = "0"
        while True:
            step = self.audit(cursor, count)
            problems += step.problems
            cursor = step.cursor
            if cursor == "0":
                return problems


class HotPath:
    """Entry point: ``hp = HotPath(redis.Redis(...))`` or
    ``HotPath(redis.RedisCluster(...))``; ``backend`` replaces the default
    (the module, falling back to the Functions library on servers without
    it: ``hotpath.fallback``); ``retry`` is the retry policy of the spread
    handles (``hotpath.retry``: 10 s by default)."""

    def __init__(self, client: Any, backend: Optional[Backend] = None,
                 retry: Optional["RetryPolicy"] = None):
        self.client = client
        from .retry import DEFAULT
        self.retry = retry if retry is not None else DEFAULT
        if backend is None:
            # The module, falling back to the Functions library on a
            # server without it (hotpath.fallback).
            from .fallback import default_backend
            backend = default_backend(client)
        self.backend = backend

    def poll(self, key: Key, spread: Optional[int] = None) -> Union[Poll, "SpreadPoll"]:
        """A poll; with ``spread=n``, the poll spread over ``n`` shards
        (docs/spread.md)."""
        if spread is not None:
            from .spread_poll import SpreadPoll
            return SpreadPoll(self.backend, key, spread).with_retry(self.retry)
        return Poll(self.backend, key)

    def rank(self, key: Key, spread: Optional[int] = None) -> Union[Rank, "SpreadRank"]:
        """A leaderboard; with ``spread=n``, the board spread over ``n``
        shards (docs/spread.md)."""
        if spread is not None:
            from .spread_rank import SpreadRank
            return SpreadRank(self.backend, key, spread).with_retry(self.retry)
        return Rank(self.backend, key)

    def like(self, key: Key, spread: Optional[int] = None) -> Union[Like, "SpreadLike"]:
        """A post; with ``spread=n``, the post spread over ``n`` shards
        (docs/spread.md)."""
        if spread is not None:
            return SpreadLike(self.backend, key, spread).with_retry(self.retry)
        return Like(self.backend, key)

    def spread_count(self, family: str, key: Key) -> Optional[int]:
        """The shard count of the spread entity ``key`` of ``family``
        (``"LIKE"``, …), read from its shard 0; None when it is not spread."""
        return spread_count(self.backend, family, key)

    def redpacket(self, key: Key) -> RedPacket:
        return RedPacket(self.backend, key)

    def luckybag(self, key: Key, spread: Optional[int] = None) -> Union[LuckyBag, "SpreadLuckyBag"]:
        """A lucky bag; with ``spread=n``, the bag spread over ``n`` shards
        (docs/spread.md)."""
        if spread is not None:
            return SpreadLuckyBag(self.backend, key, spread).with_retry(self.retry)
        return LuckyBag(self.backend, key)

    def rate(self, key: Key) -> Rate:
        return Rate(self.backend, key)

    def lock(self, key: Key) -> Lock:
        return Lock(self.backend, key)

    def delayq(self, key: Key) -> DelayQueue:
        return DelayQueue(self.backend, key)

    def idem(self, key: Key) -> Idem:
        return Idem(self.backend, key)

    def stock(self, key: Key) -> Stock:
        return Stock(self.backend, key)

    def rate_multi(self, rules: Iterable[Tuple[Key, int, int]], cost: Optional[int] = None,
                   peek: bool = False, now: Optional[int] = None) -> R.RateResult:
        """Checks ``(key, limit, period_ms)`` rules together (RATE.MULTI):
        all are consumed or none. On a cluster, the keys share one slot."""
        rules = list(rules)
        keys = [k for k, _, _ in rules]
        a: List[Arg] = [len(keys), *keys, "LIMITS"]
        for _, limit, period in rules:
            a += [limit, period]
        _opt(a, "COST", cost)
        if peek:
            a.append("PEEK")
        _opt(a, "NOW", now)
        return R.rate(self.backend.call("RATE.MULTI", a, keys))

    def rank_merge(self, dest: Key, sources: Sequence[Key], aggregate: Optional[str] = None,
                   ttl: Optional[int] = None, now: Optional[int] = None) -> int:
        """RANK.MERGE: members in ``dest`` (all keys in one slot on a cluster)."""
        a: List[Arg] = [dest, len(sources), *sources]
        _opt(a, "AGGREGATE", aggregate)
        _opt(a, "TTL", ttl)
        _opt(a, "NOW", now)
        return R.integer(self.backend.call("RANK.MERGE", a, [dest, *sources]))

    def like_common(self, a: Key, b: Key) -> List[int]:
        """LIKE.COMMON: users who like both (one slot on a cluster)."""
        return R.ints(self.backend.call("LIKE.COMMON", [a, b], [a, b]))
