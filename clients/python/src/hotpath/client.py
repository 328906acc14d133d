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

import asyncio
import inspect
from typing import (TYPE_CHECKING, Any, Awaitable, Callable, Dict, Generic, Iterable, List, Optional,
                    Sequence, Tuple, TypeVar, Union, cast, overload)

from redis.exceptions import ResponseError

from . import replies as R
from .errors import typed
from .spread import SpreadLike, SpreadLuckyBag, spread_count

if TYPE_CHECKING:
    from .retry import RetryPolicy
    from .spread_poll import SpreadPoll
    from .spread_rank import SpreadRank
    from .spread_stock import SpreadStock

Key = Union[str, bytes]
Arg = Union[str, bytes, int, float]


Call = Tuple[str, Sequence[Arg], Sequence[Key]]
T = TypeVar("T")


class Backend:
    """Runs one hotpath command. ``argv`` is the module command's arguments
    after its name; ``keys`` are the Redis keys among them (what a Lua or
    Functions backend passes as KEYS)."""

    def call(self, command: str, argv: Sequence[Arg], keys: Sequence[Key]) -> Any:
        raise NotImplementedError

    async def acall(self, command: str, argv: Sequence[Arg], keys: Sequence[Key]) -> Any:
        """:meth:`call` on an asyncio client."""
        raise NotImplementedError

    def wire(self, command: str, argv: Sequence[Arg], keys: Sequence[Key]) -> List[Arg]:
        """The command as this backend sends it (what a pipeline queues):
        the module's own by default."""
        return [command, *argv]

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

    async def acall_many(self, calls: Sequence[Call]) -> List[Any]:
        """:meth:`call_many` on an asyncio client (the spread handles of
        ``hotpath.aspread``). This default awaits them one after the
        other."""
        out: List[Any] = []
        for command, argv, keys in calls:
            try:
                out.append(await self.acall(command, argv, keys))
            except Exception as e:  # noqa: BLE001 (each shard's own outcome)
                out.append(e)
        return out

    async def acall_many_durable(self, calls: Sequence[Call], replicas: int,
                                 timeout_ms: int) -> Tuple[List[Any], List[int]]:
        """:meth:`call_many_durable` on an asyncio client. This default
        serves a single server."""
        out = await self.acall_many(calls)
        acked = int(await self.acall("WAIT", [replicas, timeout_ms], []))
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
    groups: Dict[Optional[str], List[int]] = {}
    nodes: Dict[str, Any] = {}
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


async def _initialized(client: Any) -> None:
    """An asyncio ``RedisCluster`` reads its slot map on its first command;
    a pipeline or a node's own connection needs it before (redis-py 8.1:
    a cluster whose first command is a pipeline's cannot ``aclose()``
    afterwards)."""
    if getattr(client, "_initialize", False) and hasattr(client, "nodes_manager"):
        await client.initialize()


async def apipeline_many(client: Any, wires: Sequence[Sequence[Arg]]) -> List[Any]:
    """:func:`pipeline_many` on an asyncio client (``redis.asyncio.Redis``
    or ``RedisCluster``, which sends every node's part at once)."""
    if not wires:
        return []
    await _initialized(client)
    pipe = client.pipeline(transaction=False)
    for wire in wires:
        pipe.execute_command(*wire)
    return list(await pipe.execute(raise_on_error=False))


async def apipeline_durable(client: Any, wires: Sequence[Sequence[Arg]], keys: Sequence[Key],
                            replicas: int, timeout_ms: int) -> Tuple[List[Any], List[int]]:
    """:func:`pipeline_durable` on an asyncio client: per node, one
    pipeline on one connection ending in ``WAIT`` (on a ``RedisCluster``,
    the node's own ``execute_pipeline``, which keeps the commands on one
    connection); the nodes at once."""
    await _initialized(client)
    groups: Dict[Optional[str], List[int]] = {}
    nodes: Dict[str, Any] = {}
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

    async def one(name: Optional[str], idx: List[int]) -> None:
        wait: List[Arg] = ["WAIT", replicas, timeout_ms]
        try:
            if name is None:
                pipe = client.pipeline(transaction=False)
                for i in idx:
                    pipe.execute_command(*wires[i])
                pipe.execute_command(*wait)
                res = list(await pipe.execute(raise_on_error=False))
            else:
                from redis.asyncio.cluster import PipelineCommand
                cmds = [PipelineCommand(j, *wires[i]) for j, i in enumerate(idx)]
                cmds.append(PipelineCommand(len(idx), *wait))
                await nodes[name].execute_pipeline(cmds)
                res = [c.result for c in cmds]
        except Exception as e:  # noqa: BLE001 (the node failed: each call fails)
            res = [e] * (len(idx) + 1)
        ack = res[-1]
        for j, i in enumerate(idx):
            out[i] = res[j]
            ok = isinstance(ack, int) and not isinstance(res[j], BaseException)
            acks[i] = ack if ok else 0

    await asyncio.gather(*(one(name, idx) for name, idx in groups.items()))
    nodes_manager = getattr(client, "nodes_manager", None)
    if nodes_manager is not None:
        from .retry import classify
        if any(isinstance(e, BaseException) and classify(e) is not None for e in out):
            try:
                await nodes_manager.initialize()
            except Exception:  # noqa: BLE001 (the next attempt reports it)
                pass
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

    async def acall(self, command: str, argv: Sequence[Arg], keys: Sequence[Key]) -> Any:
        return await self.client.execute_command(command, *argv)

    def call_many(self, calls: Sequence[Call]) -> List[Any]:
        """One pipeline (:func:`pipeline_many`)."""
        return pipeline_many(self.client, [self.wire(*c) for c in calls])

    def call_many_durable(self, calls: Sequence[Call],
                          replicas: int, timeout_ms: int) -> Tuple[List[Any], List[int]]:
        """One plain pipeline per node ending in ``WAIT``
        (:func:`pipeline_durable`)."""
        return pipeline_durable(self.client, [self.wire(*c) for c in calls],
                                [c[2][0] for c in calls], replicas, timeout_ms)

    async def acall_many(self, calls: Sequence[Call]) -> List[Any]:
        """One asyncio pipeline (:func:`apipeline_many`)."""
        return await apipeline_many(self.client, [self.wire(*c) for c in calls])

    async def acall_many_durable(self, calls: Sequence[Call], replicas: int,
                                 timeout_ms: int) -> Tuple[List[Any], List[int]]:
        """One pipeline per node ending in ``WAIT`` (:func:`apipeline_durable`)."""
        return await apipeline_durable(self.client, [self.wire(*c) for c in calls],
                                       [c[2][0] for c in calls], replicas, timeout_ms)


# ---- The one place commands are sent ------------------------------------
#
# An entity handle describes each command as a :class:`Cmd`: the module
# command, its arguments and keys, and the function that parses its reply.
# The handle's *runner* decides what happens to it: a sync client sends it
# and parses the reply; an asyncio client returns a coroutine that does;
# a pipeline (or a MULTI/EXEC transaction) queues it, and its parser runs
# when the pipeline's ``execute()`` reads the reply (a response callback).

#: The option that carries a queued command's parser to redis-py's
#: response callback (``execute_command(*wire, hotpath_parse=…)``).
PARSE_OPTION = "hotpath_parse"


class Cmd(Generic[T]):
    """One hotpath command as a handle describes it: ``command`` (e.g.
    ``"POLL.VOTE"``), ``argv`` (its arguments after the name), ``keys`` (the
    Redis keys among them, for a Functions backend) and ``parse``, which
    turns the server's reply into the handle's return value."""
    __slots__ = ("command", "argv", "keys", "parse")

    def __init__(self, command: str, argv: Sequence[Arg], keys: Sequence[Key],
                 parse: Callable[[Any], T]):
        self.command = command
        self.argv = list(argv)
        self.keys = list(keys)
        self.parse = parse

    def __repr__(self) -> str:
        return f"Cmd({self.command!r}, {self.argv!r})"


class Runner:
    """Runs the commands of a :class:`HotPath`'s handles on its client,
    through its :class:`Backend`: :class:`SyncRunner`, :class:`AsyncRunner`
    or :class:`PipelineRunner`, chosen by the kind of client."""
    mode = ""

    def __init__(self, backend: Backend):
        self.backend = backend

    def run(self, cmd: Cmd[T]) -> T:
        raise NotImplementedError


class SyncRunner(Runner):
    """``redis.Redis`` / ``redis.RedisCluster``: sends the command, returns
    its parsed reply; an error reply raises its ``hotpath.errors`` class."""
    mode = "sync"

    def run(self, cmd: Cmd[T]) -> T:
        try:
            reply = self.backend.call(cmd.command, cmd.argv, cmd.keys)
        except ResponseError as e:
            raise typed(e) from None
        return cmd.parse(reply)


class AsyncRunner(Runner):
    """``redis.asyncio.Redis`` / ``RedisCluster``: a handle's method returns
    a coroutine; awaiting it gives the parsed reply (or raises the typed
    error)."""
    mode = "async"

    def run(self, cmd: Cmd[T]) -> T:
        return cast(T, self._run(cmd))

    async def _run(self, cmd: Cmd[T]) -> T:
        try:
            reply = await self.backend.acall(cmd.command, cmd.argv, cmd.keys)
        except ResponseError as e:
            raise typed(e) from None
        return cmd.parse(reply)


class _Parse:
    """A queued command's parser, handed to the response callback. Parses
    once: a callback that redis-py applies a second time (a cluster
    pipeline has two layers of callbacks) gets its own output back."""
    __slots__ = ("parse", "out", "done")

    def __init__(self, parse: Callable[[Any], Any]):
        self.parse = parse
        self.out: Any = None
        self.done = False

    def __call__(self, reply: Any) -> Any:
        if self.done and reply is self.out:
            return reply
        self.out = self.parse(reply)
        self.done = True
        return self.out


def _callback(previous: Optional[Callable[..., Any]]) -> Callable[..., Any]:
    """The response callback hotpath installs for a command name on a
    pipeline: parses the replies of the commands hotpath queued (they carry
    :data:`PARSE_OPTION`), and leaves every other call of that name to the
    callback it replaces (none, for the module's commands and ``FCALL``)."""
    def callback(response: Any, **options: Any) -> Any:
        parse = options.get(PARSE_OPTION)
        if parse is not None:
            # A cluster pipeline hands the callback an error reply too.
            return response if isinstance(response, BaseException) else parse(response)
        options.pop(PARSE_OPTION, None)
        return previous(response, **options) if previous is not None else response

    setattr(callback, "_hotpath", True)
    return callback


def _callbacks_of(pipe: Any) -> Any:
    """The callback table the pipeline's ``execute()`` applies."""
    for owner in (pipe, getattr(pipe, "cluster_client", None)):
        for name in ("cluster_response_callbacks", "response_callbacks"):
            table = getattr(owner, name, None)
            if table is not None:
                return table
    return None


class PipelineRunner(Runner):
    """A redis-py pipeline (``r.pipeline()``, transaction or not; sync or
    asyncio; ``Redis`` or ``RedisCluster``): a handle's method queues the
    command and returns the pipeline; ``pipe.execute()`` returns each
    reply parsed, as the sync method would (a response callback that
    applies only to the commands hotpath queued). Error replies come back
    as redis-py gives them from a pipeline (``hotpath.errors.typed(e)``
    gives an error's class); :meth:`HotPath.pipeline` raises them typed."""
    mode = "pipeline"

    def __init__(self, backend: Backend, pipe: Any, defer: bool = False):
        super().__init__(backend)
        self.pipe = pipe
        #: Whether commands wait in :attr:`queued` until :meth:`send`
        #: (:meth:`HotPath.pipeline`) instead of going on the pipeline at
        #: once (``HotPath(r.pipeline())``).
        self.defer = defer
        #: The commands queued since the last :meth:`take`.
        self.queued: List[Cmd[Any]] = []

    def _hook(self, name: str) -> None:
        table = _callbacks_of(self.pipe)
        previous = table.get(name) if table is not None else None
        if previous is not None and getattr(previous, "_hotpath", False):
            return
        self.pipe.set_response_callback(name, _callback(previous))

    def send(self, cmd: Cmd[Any]) -> None:
        """Puts ``cmd`` on the redis-py pipeline, as the backend sends it
        (the module's command, or ``FCALL`` of its twin), with its parser."""
        wire = self.backend.wire(cmd.command, cmd.argv, cmd.keys)
        self._hook(str(wire[0]))
        self.pipe.execute_command(*wire, **{PARSE_OPTION: _Parse(cmd.parse)})

    def run(self, cmd: Cmd[T]) -> T:
        if not self.defer:
            self.send(cmd)
        self.queued.append(cmd)
        return cast(T, self.pipe)

    def take(self) -> List[Cmd[Any]]:
        """The commands queued so far, forgetting them."""
        out, self.queued = self.queued, []
        return out


def is_pipeline(client: Any) -> bool:
    """Whether ``client`` is a redis-py pipeline (sync or asyncio, plain or
    cluster)."""
    from redis.asyncio.client import Pipeline as AsyncPipeline
    from redis.asyncio.cluster import ClusterPipeline as AsyncClusterPipeline
    from redis.client import Pipeline as SyncPipeline
    from redis.cluster import ClusterPipeline as SyncClusterPipeline
    return isinstance(client, (SyncPipeline, SyncClusterPipeline, AsyncPipeline,
                               AsyncClusterPipeline))


def is_async(client: Any) -> bool:
    """Whether ``client``'s commands are coroutines (``redis.asyncio``)."""
    return inspect.iscoroutinefunction(getattr(client, "execute_command", None))


def runner_for(client: Any, backend: Backend) -> Runner:
    """The runner of ``client``'s kind."""
    if is_pipeline(client):
        return PipelineRunner(backend, client)
    if is_async(client):
        return AsyncRunner(backend)
    return SyncRunner(backend)


def _opt(argv: List[Arg], name: str, value: Optional[Arg]) -> None:
    if value is not None:
        argv += [name, value]


class _Entity:
    family = ""

    def __init__(self, runner: Union[Runner, Backend], key: Key):
        # A Backend (how handles were made before runners): a sync one.
        self._runner = SyncRunner(runner) if isinstance(runner, Backend) else runner
        self.key = key

    @property
    def backend(self) -> Backend:
        return self._runner.backend

    def _call(self, sub: str, parse: Callable[[Any], T], *args: Arg) -> T:
        """The family's command ``sub`` on this entity's key, run by the
        handle's runner (sent, awaited or queued)."""
        return self._runner.run(Cmd(f"{self.family}.{sub}", [self.key, *args], [self.key], parse))

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.key!r})"


class Poll(_Entity):
    """One-vote polls (docs/poll.md)."""
    family = "POLL"

    def create(self, mode: Optional[str] = None, maxvotes: Optional[int] = None,
               candidates: Optional[Sequence[Arg]] = None, start: Optional[int] = None,
               end: Optional[int] = None, tz: Optional[int] = None,
               ttl: Optional[int] = None, now: Optional[int] = None) -> bool:
        """Creates the poll with its rules (POLL.CREATE): ``mode`` ONCE, DAILY or
        MULTI, ``maxvotes``, the ``candidates`` allowed, ``start``/``end``
        (unix ms), ``tz`` (DAILY's day), ``ttl`` seconds. True (OK)."""
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
        return self._call("CREATE", R.ok, *a)

    def vote(self, user: Arg, candidate: Arg, now: Optional[int] = None, idem: Optional[Arg] = None) -> bool:
        """True when the vote counted, False for a duplicate."""
        a: List[Arg] = [user, candidate]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("VOTE", R.boolean, *a)

    def revoke(self, user: Arg, candidate: Optional[Arg] = None, now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        """Takes back the user's votes (only for ``candidate`` when given): the
        number of votes taken back."""
        a: List[Arg] = [user] + ([candidate] if candidate is not None else [])
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("REVOKE", R.integer, *a)

    def top(self, count: Optional[int] = None, offset: Optional[int] = None) -> List[R.PollEntry]:
        """The candidates with the most votes, best first: ``count`` from
        ``offset``."""
        a: List[Arg] = [count] if count is not None else []
        _opt(a, "OFFSET", offset)
        return self._call("TOP", R.poll_top, *a)

    def rank(self, candidate: Arg) -> Optional[R.PollRank]:
        """The candidate's rank (0: first) and votes; None when it has none."""
        return self._call("RANK", R.poll_rank, candidate)

    def status(self, user: Arg, now: Optional[int] = None) -> List[str]:
        """The candidates the user voted for (today's, for a DAILY poll)."""
        a: List[Arg] = [user]
        _opt(a, "NOW", now)
        return self._call("STATUS", R.texts, *a)

    def info(self) -> Optional[R.PollInfo]:
        """The poll's rules and totals; a poll never created reads as MODE ONCE
        with nothing in it."""
        return self._call("INFO", R.poll_info)

    def sync(self) -> R.PollSync:
        """Freezes the vote changes since the last acknowledged write-back: the
        same snapshot again until :meth:`syncack` acknowledges its epoch."""
        return self._call("SYNC", R.poll_sync)

    def syncack(self, epoch: int) -> bool:
        """Acknowledges the snapshot of :meth:`sync`: True when ``epoch`` was the
        pending one, False for a stale or unknown epoch."""
        return self._call("SYNCACK", R.boolean, epoch)


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
        return self._call("CREATE", R.ok, *a)

    def add(self, member: Arg, points: int, gt: bool = False, lt: bool = False,
            now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        """The member's points now stored."""
        a: List[Arg] = [member, points] + (["GT"] if gt else []) + (["LT"] if lt else [])
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("ADD", R.integer, *a)

    def incr(self, member: Arg, delta: int, now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        """Adds ``delta`` to the member's points (its achievement time becomes
        now): the points now stored."""
        a: List[Arg] = [member, delta]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("INCR", R.integer, *a)

    def decr(self, member: Arg, delta: int, now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        """Subtracts ``delta`` from the member's points (its achievement time
        becomes now): the points now stored."""
        a: List[Arg] = [member, delta]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("DECR", R.integer, *a)

    def get(self, member: Arg) -> Optional[R.RankEntry]:
        """The member's points, rank (0: first) and achievement time; None for
        a member not on the board."""
        return self._call("GET", R.rank_get, member)

    def top(self, count: Optional[int] = None, offset: Optional[int] = None) -> List[R.RankMember]:
        """The best members with their points, best first: ``count`` from
        ``offset``."""
        a: List[Arg] = [count] if count is not None else []
        _opt(a, "OFFSET", offset)
        return self._call("TOP", R.rank_top, *a)

    def around(self, member: Arg, n: int) -> Optional[List[R.RankPlace]]:
        """The places from ``n`` above to ``n`` below the member, with ranks and
        points; None for a member not on the board."""
        return self._call("AROUND", R.rank_around, member, n)

    def rem(self, *members: Arg) -> int:
        """Removes members: the number that were on the board."""
        return self._call("REM", R.integer, *members)

    def count(self) -> int:
        """The number of members on the board."""
        return self._call("COUNT", R.integer)


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


class RedPacket(_Entity):
    """Red packets (docs/redpacket.md). Amounts are integer cents."""
    family = "REDPACKET"

    def split(self, total_cents: int, count: int, mode: Optional[str] = None,
              ttl: Optional[int] = None, now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        """Splits ``total_cents`` once into ``count`` shares (``mode`` RANDOM,
        the double-mean method and the default, or EQUAL) and opens the
        packet: ``count``."""
        a: List[Arg] = [total_cents, count]
        _opt(a, "MODE", mode)
        _opt(a, "TTL", ttl)
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("SPLIT", R.integer, *a)

    def grab(self, user: Arg, now: Optional[int] = None, idem: Optional[Arg] = None) -> R.Grab:
        """Grabs one share for the user (at most one per user): its status
        (OK, ALREADY, EMPTY, CLOSED or NOSUCH) and the cents won."""
        a: List[Arg] = [user]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("GRAB", R.grab, *a)

    def info(self, now: Optional[int] = None) -> Optional[R.PacketInfo]:
        """The packet's total, count, what is left, state and expiry; None for
        an unknown packet."""
        a: List[Arg] = []
        _opt(a, "NOW", now)
        return self._call("INFO", R.packet_info, *a)

    def grabbed(self) -> Dict[str, int]:
        """Every user who grabbed a share, with the cents won."""
        return self._call("GRABBED", R.grabbed)

    def refund(self) -> int:
        """Closes the packet: the cents left to the sender."""
        return self._call("REFUND", R.integer)


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


class Rate(_Entity):
    """Rate limits (docs/rate.md); the limiter is the key itself."""
    family = "RATE"

    def check(self, limit: int, period_ms: int, algo: Optional[str] = None,
              burst: Optional[int] = None, cost: Optional[int] = None, peek: bool = False,
              now: Optional[int] = None, idem: Optional[Arg] = None) -> R.RateResult:
        """Checks and consumes one request (``cost`` units) against ``limit``
        per ``period_ms`` (``algo``: GCRA by default, FIXED, SLIDING, LOG or
        BUCKET; ``peek``: consume nothing). ``allowed`` is the first field."""
        a: List[Arg] = [limit, period_ms]
        _opt(a, "ALGO", algo)
        _opt(a, "BURST", burst)
        _opt(a, "COST", cost)
        if peek:
            a.append("PEEK")
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("CHECK", R.rate, *a)

    def throttle(self, max_burst: int, count: int, period_s: int,
                 quantity: Optional[int] = None, now: Optional[int] = None, idem: Optional[Arg] = None) -> R.Throttle:
        """redis-cell's CL.THROTTLE, reply for reply: ``limited`` is its first
        field (False when the request is allowed)."""
        a: List[Arg] = [max_burst, count, period_s]
        if quantity is not None:
            a.append(quantity)
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("THROTTLE", R.throttle, *a)

    def reset(self) -> bool:
        """Drops the limiter's state: True when there was some."""
        return self._call("RESET", R.boolean)


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
        return self._call("ACQUIRE", R.token, *a)

    def release(self, owner: Arg, now: Optional[int] = None) -> bool:
        """True when ``owner`` held a live lease (one acquisition undone)."""
        a: List[Arg] = [owner]
        _opt(a, "NOW", now)
        return self._call("RELEASE", R.boolean, *a)

    def renew(self, owner: Arg, ttl_ms: int, now: Optional[int] = None) -> int:
        """The ms left in the renewed lease; 0 when ``owner`` holds none."""
        a: List[Arg] = [owner, ttl_ms]
        _opt(a, "NOW", now)
        return self._call("RENEW", R.integer, *a)

    def info(self, now: Optional[int] = None) -> List[R.LockHolder]:
        """The live holders, by token; empty when the lock is free."""
        a: List[Arg] = []
        _opt(a, "NOW", now)
        return self._call("INFO", R.lock_info, *a)

    def check(self, token: int, now: Optional[int] = None) -> bool:
        """True when ``token`` belongs to a live hold."""
        a: List[Arg] = [token]
        _opt(a, "NOW", now)
        return self._call("CHECK", R.boolean, *a)


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
        return self._call("BEGIN", R.idem_begin, *a)

    def complete(self, fence: int, result: Arg, now: Optional[int] = None) -> bool:
        """True when the result was stored, False when this fence's equal
        result is stored already (a retried COMPLETE). A stale fence raises
        the server's error."""
        a: List[Arg] = [fence, result]
        _opt(a, "NOW", now)
        return self._call("COMPLETE", R.boolean, *a)

    def abort(self, fence: int) -> bool:
        """True when the record begun with ``fence`` was given up."""
        return self._call("ABORT", R.boolean, fence)

    def get(self, now: Optional[int] = None) -> Optional[R.IdemRecord]:
        """The record, or None."""
        a: List[Arg] = []
        _opt(a, "NOW", now)
        return self._call("GET", R.idem_record, *a)


class DelayQueue(_Entity):
    """A delay queue with leases and dead letters (docs/reference/delayq.md)."""
    family = "DELAYQ"

    def add(self, id: Arg, payload: Arg, delay: Optional[int] = None, at: Optional[int] = None,
            attempts: Optional[int] = None, replace: bool = False,
            now: Optional[int] = None, lost_max: Optional[int] = None, idem: Optional[Arg] = None) -> bool:
        """True when added (or replaced), False when ``id`` exists.
        ``lost_max``: the most deliveries after a lost lease (LOSTMAX, server
        2.1.0)."""
        a: List[Arg] = [id, payload]
        _opt(a, "DELAY", delay)
        _opt(a, "AT", at)
        _opt(a, "ATTEMPTS", attempts)
        _opt(a, "LOSTMAX", lost_max)
        if replace:
            a.append("REPLACE")
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("ADD", R.boolean, *a)

    def poll(self, lease_ms: int, count: Optional[int] = None, block: Optional[int] = None,
             now: Optional[int] = None) -> List[R.Job]:
        """Up to ``count`` ready jobs, each leased for ``lease_ms``; empty when
        none (after ``block`` ms with it)."""
        a: List[Arg] = [lease_ms]
        _opt(a, "COUNT", count)
        _opt(a, "BLOCK", block)
        _opt(a, "NOW", now)
        return self._call("POLL", R.jobs, *a)

    def ack(self, id: Arg, receipt: int) -> bool:
        """Removes the job delivered with ``receipt``: True, or False for a
        stale receipt (nothing changed)."""
        return self._call("ACK", R.boolean, id, receipt)

    def nack(self, id: Arg, receipt: int, delay: Optional[int] = None,
             backoff: Optional[Tuple[int, int]] = None, now: Optional[int] = None, idem: Optional[Arg] = None) -> R.Nack:
        """``backoff`` is ``(base_ms, max_ms)``."""
        a: List[Arg] = [id, receipt]
        _opt(a, "DELAY", delay)
        if backoff is not None:
            a += ["BACKOFF", backoff[0], backoff[1]]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("NACK", R.nack, *a)

    def extend(self, id: Arg, receipt: int, lease_ms: int, now: Optional[int] = None) -> bool:
        """Restarts the lease of the delivery with ``receipt`` for
        ``lease_ms`` (a consumer's heartbeat): False for a stale receipt."""
        a: List[Arg] = [id, receipt, lease_ms]
        _opt(a, "NOW", now)
        return self._call("EXTEND", R.boolean, *a)

    def dead(self, count: Optional[int] = None) -> List[R.DeadLetter]:
        """The oldest dead letters (``count``): id, payload, attempts, dead-at."""
        a: List[Arg] = []
        _opt(a, "COUNT", count)
        return self._call("DEAD", R.dead_letters, *a)

    def redrive(self, count: Optional[int] = None, id: Optional[Arg] = None,
                now: Optional[int] = None) -> int:
        """Dead letters put back in line: the oldest ``count``, or ``id``."""
        a: List[Arg] = []
        _opt(a, "COUNT", count)
        _opt(a, "ID", id)
        _opt(a, "NOW", now)
        return self._call("REDRIVE", R.integer, *a)

    def info(self, now: Optional[int] = None) -> R.QueueInfo:
        """The queue's jobs, ready, scheduled and dead counts."""
        a: List[Arg] = []
        _opt(a, "NOW", now)
        return self._call("INFO", R.queue_info, *a)

    def cancel(self, id: Arg, force: bool = False, now: Optional[int] = None) -> bool:
        """True when the job was removed (waiting, ready or dead), False when
        there is none. A job under a running lease raises ``job is leased``
        unless ``force`` (its holder's receipt then goes stale)."""
        a: List[Arg] = [id]
        if force:
            a.append("FORCE")
        _opt(a, "NOW", now)
        return self._call("CANCEL", R.boolean, *a)

    def peek(self, count: Optional[int] = None,
             id: Optional[Arg] = None) -> List[R.ScheduledJob]:
        """The first ``count`` jobs in line (default 10, at most 100), the
        earliest first, or the one ``id``; changes nothing."""
        a: List[Arg] = []
        _opt(a, "COUNT", count)
        _opt(a, "ID", id)
        return self._call("PEEK", R.scheduled_jobs, *a)

    def purge(self, max_len: Optional[int] = None, max_age_ms: Optional[int] = None,
              now: Optional[int] = None) -> int:
        """Dead letters removed, the oldest first, beyond ``max_len`` or older
        than ``max_age_ms``: at most 100 per call (call again while it
        returns 100)."""
        a: List[Arg] = []
        _opt(a, "MAXLEN", max_len)
        _opt(a, "MAXAGE", max_age_ms)
        _opt(a, "NOW", now)
        return self._call("PURGE", R.integer, *a)


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
        return self._call("CREATE", R.ok, *a)

    def reserve(self, user: Arg, order: Arg, quantity: int = 1,
                now: Optional[int] = None, idem: Optional[Arg] = None) -> R.Reservation:
        """Reserves ``quantity`` units for ``order`` under a lease: OK,
        SOLDOUT or LIMIT; the same order gets the same reply again."""
        a: List[Arg] = [user, order, quantity]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("RESERVE", R.reservation, *a)

    def confirm(self, order: Arg, now: Optional[int] = None) -> bool:
        """True when the reservation became a sale, False when the order was
        already confirmed (after its lease: the server's error)."""
        a: List[Arg] = [order]
        _opt(a, "NOW", now)
        return self._call("CONFIRM", R.boolean, *a)

    def release(self, order: Arg) -> bool:
        """True when the order's units went back, False when there was
        nothing to give back."""
        return self._call("RELEASE", R.boolean, order)

    def restock(self, delta: int, now: Optional[int] = None, idem: Optional[Arg] = None) -> int:
        """Adds ``delta`` units (removes available ones when negative);
        the units available after."""
        a: List[Arg] = [delta]
        _opt(a, "NOW", now)
        _opt(a, "IDEM", idem)
        return self._call("RESTOCK", R.integer, *a)

    def info(self) -> Optional[R.StockInfo]:
        """The counts; None for an unknown stock."""
        return self._call("INFO", R.stock_info)

    def audit(self, cursor: Arg = 0, count: Optional[int] = None) -> R.StockAudit:
        """One audit step from ``cursor``."""
        a: List[Arg] = [cursor]
        _opt(a, "COUNT", count)
        return self._call("AUDIT", R.stock_audit, *a)

    def audit_all(self, count: Optional[int] = None) -> List[str]:
        """Every audit step, from cursor 0 until the walk is over: the
        problems found (the ledger's sums are checked when one step reads
        the whole ledger). On an asyncio client, a coroutine; not in a
        pipeline (each step needs the cursor of the one before)."""
        if isinstance(self._runner, AsyncRunner):
            return cast(List[str], self._audit_all_async(count))
        if not isinstance(self._runner, SyncRunner):
            raise TypeError("audit_all needs a client, not a pipeline: queue audit() steps")
        problems: List[str] = []
        cursor = "0"
        while True:
            step = self.audit(cursor, count)
            problems += step.problems
            cursor = step.cursor
            if cursor == "0":
                return problems

    async def _audit_all_async(self, count: Optional[int]) -> List[str]:
        problems: List[str] = []
        cursor = "0"
        while True:
            step = await cast(Awaitable[R.StockAudit], self.audit(cursor, count))
            problems += step.problems
            cursor = step.cursor
            if cursor == "0":
                return problems


class HotPath:
    """The entry point, over any redis-py client:

    * ``HotPath(redis.Redis(...))`` or ``HotPath(redis.RedisCluster(...))``:
      each handle method sends its command and returns the parsed reply;
    * ``HotPath(redis.asyncio.Redis(...))`` (or its ``RedisCluster``): each
      method returns a coroutine, ``await hp.poll(k).vote(u, c)``;
    * ``HotPath(r.pipeline())`` (transaction or not, sync or asyncio): each
      method queues its command; the pipeline's ``execute()`` returns the
      parsed replies. :meth:`pipeline` is the same with typed errors.

    ``backend`` replaces the default (the module, falling back to the
    Functions library on servers without it: ``hotpath.fallback``);
    ``retry`` is the retry policy of the spread handles (``hotpath.retry``:
    10 s by default). Spread handles (``spread=n``) work on sync and
    asyncio clients (``hotpath.aspread``: every method that sends is a
    coroutine), not on a pipeline.
    """

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
        self._runner = runner_for(client, backend)

    @property
    def mode(self) -> str:
        """``"sync"``, ``"async"`` or ``"pipeline"``: what a handle method
        does with its command (sends it, returns a coroutine, queues it)."""
        return self._runner.mode

    def _spread_backend(self) -> Backend:
        if isinstance(self._runner, PipelineRunner):
            raise TypeError("spread handles need a client (sync or asyncio), not a pipeline: "
                            "their reads take several rounds")
        return self.backend

    def _spread(self, sync_cls: Any, key: Key, n: int) -> Any:
        """The spread handle of ``sync_cls`` for this client: the class
        itself on a sync client, its ``hotpath.aspread`` twin
        (``Async<name>``) on an asyncio one."""
        backend = self._spread_backend()
        cls = sync_cls
        if isinstance(self._runner, AsyncRunner):
            from . import aspread
            cls = getattr(aspread, "Async" + sync_cls.__name__)
        return cls(backend, key, n).with_retry(self.retry)

    def _run(self, cmd: Cmd[T]) -> T:
        return self._runner.run(cmd)

    def pipeline(self, transaction: bool = True) -> "Pipeline":
        """A pipeline of hotpath commands on this client (a MULTI/EXEC
        transaction unless ``transaction=False``; on a cluster, a
        transaction's keys share one slot)::

            with hp.pipeline() as p:
                p.rank("board").incr("alice", 5)
                p.poll("poll:{42}").vote("user:1", "alice")
                points, counted = p.execute()

        ``execute()`` returns the parsed replies in order and raises the
        first error reply as its ``hotpath.errors`` class
        (``raise_on_error=False``: the errors in the list instead). On an
        asyncio client it is :class:`AsyncPipeline`: ``async with``,
        ``await p.execute()``."""
        if isinstance(self._runner, PipelineRunner):
            raise TypeError("this HotPath is over a pipeline already")
        pipe = self.client.pipeline(transaction=transaction)
        if isinstance(self._runner, AsyncRunner):
            # Typed as the sync client's, as every method here is
            # (hotpath.aio.AsyncHotPath.pipeline is AsyncPipeline).
            return cast(Pipeline, AsyncPipeline(self, pipe, transaction))
        return Pipeline(self, pipe, transaction)

    @overload
    def poll(self, key: Key, spread: None = None) -> Poll: ...

    @overload
    def poll(self, key: Key, spread: int) -> "SpreadPoll": ...

    def poll(self, key: Key, spread: Optional[int] = None) -> Union[Poll, "SpreadPoll"]:
        """A poll; with ``spread=n``, the poll spread over ``n`` shards
        (docs/spread.md)."""
        if spread is not None:
            from .spread_poll import SpreadPoll
            return cast(SpreadPoll, self._spread(SpreadPoll, key, spread))
        return Poll(self._runner, key)

    @overload
    def rank(self, key: Key, spread: None = None) -> Rank: ...

    @overload
    def rank(self, key: Key, spread: int) -> "SpreadRank": ...

    def rank(self, key: Key, spread: Optional[int] = None) -> Union[Rank, "SpreadRank"]:
        """A leaderboard; with ``spread=n``, the board spread over ``n``
        shards (docs/spread.md)."""
        if spread is not None:
            from .spread_rank import SpreadRank
            return cast(SpreadRank, self._spread(SpreadRank, key, spread))
        return Rank(self._runner, key)

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

    def spread_count(self, family: str, key: Key) -> Optional[int]:
        """The shard count of the spread entity ``key`` of ``family``
        (``"LIKE"``, …), read from its shard 0; None when it is not spread."""
        if isinstance(self._runner, AsyncRunner):
            from .aspread import aspread_count
            return cast(Optional[int], aspread_count(self.backend, family, key))
        return spread_count(self._spread_backend(), family, key)

    def redpacket(self, key: Key) -> RedPacket:
        """A red packet."""
        return RedPacket(self._runner, key)

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

    def rate(self, key: Key) -> Rate:
        """A rate limiter (the key is the limiter)."""
        return Rate(self._runner, key)

    def lock(self, key: Key) -> Lock:
        """A lock or semaphore with fencing tokens."""
        return Lock(self._runner, key)

    def delayq(self, key: Key) -> DelayQueue:
        """A delay queue."""
        return DelayQueue(self._runner, key)

    def idem(self, key: Key) -> Idem:
        """An idempotency key."""
        return Idem(self._runner, key)

    @overload
    def stock(self, key: Key, spread: None = None) -> Stock: ...

    @overload
    def stock(self, key: Key, spread: int) -> SpreadStock: ...

    def stock(self, key: Key, spread: Optional[int] = None) -> Union[Stock, SpreadStock]:
        """Flash-sale stock; with ``spread=n``, the SKU spread over ``n``
        shards (docs/stock.md, "Spread form")."""
        if spread is not None:
            from .spread_stock import SpreadStock
            return cast(SpreadStock, self._spread(SpreadStock, key, spread))
        return Stock(self._runner, key)

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
        return self._run(Cmd("RATE.MULTI", a, keys, R.rate))

    def rank_merge(self, dest: Key, sources: Sequence[Key], aggregate: Optional[str] = None,
                   ttl: Optional[int] = None, now: Optional[int] = None) -> int:
        """RANK.MERGE: members in ``dest`` (all keys in one slot on a cluster)."""
        a: List[Arg] = [dest, len(sources), *sources]
        _opt(a, "AGGREGATE", aggregate)
        _opt(a, "TTL", ttl)
        _opt(a, "NOW", now)
        return self._run(Cmd("RANK.MERGE", a, [dest, *sources], R.integer))

    def like_common(self, a: Key, b: Key) -> List[int]:
        """LIKE.COMMON: users who like both (one slot on a cluster)."""
        return self._run(Cmd("LIKE.COMMON", [a, b], [a, b], R.ints))


class _PipelineBase(HotPath):
    """What :class:`Pipeline` and :class:`AsyncPipeline` share: the entity
    handles of :class:`HotPath`, whose methods queue their commands; they
    go on the redis-py pipeline when it is executed (so that the backend
    in use, the module or the Functions library, is the one decided by
    then)."""

    def __init__(self, parent: HotPath, pipe: Any, transaction: bool):
        super().__init__(pipe, backend=parent.backend, retry=parent.retry)
        self.transaction = transaction
        self.runner = PipelineRunner(self.backend, pipe, defer=True)
        self._runner = self.runner

    def __len__(self) -> int:
        return len(self.runner.queued)

    def _send(self, cmds: Sequence[Cmd[Any]]) -> None:
        for c in cmds:
            self.runner.send(c)

    def _unknown(self, res: Sequence[Any]) -> List[int]:
        """With the default backend, before any call decided: the commands
        the server did not know (it has no module), to send again to the
        Functions library; the backend decides for good."""
        from .fallback import FallbackBackend
        if not isinstance(self.backend, FallbackBackend) or self.backend.mode is not None:
            return []
        return self.backend._decide(res)

    @staticmethod
    def _finish(res: Sequence[Any], raise_on_error: bool) -> List[Any]:
        out = [typed(r) if isinstance(r, BaseException) else r for r in res]
        if raise_on_error:
            for r in out:
                if isinstance(r, BaseException):
                    raise r
        return out


class Pipeline(_PipelineBase):
    """:meth:`HotPath.pipeline` on a sync client."""

    def __enter__(self) -> "Pipeline":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.reset()

    def reset(self) -> None:
        """Forgets the queued commands."""
        self.runner.take()
        self.client.reset()

    def _execute(self, cmds: Sequence[Cmd[Any]]) -> List[Any]:
        self._send(cmds)
        return list(self.client.execute(raise_on_error=False))

    def execute(self, raise_on_error: bool = True) -> List[Any]:
        """Sends the queued commands; their parsed replies, in order. An
        error reply is raised as its ``hotpath.errors`` class (the first
        one; the other commands ran), or, with ``raise_on_error=False``,
        put in the list in its place."""
        cmds = self.runner.take()
        try:
            res = self._execute(cmds)
        except ResponseError as e:
            # A transaction with a command the server does not know is
            # refused whole (EXECABORT): on a server without the module,
            # all of it again, to the library.
            if not self._unknown([e]):
                raise typed(e) from None
            res = self._execute(cmds)
        again = self._unknown(res)
        if again:
            for i, r in zip(again, self._execute([cmds[i] for i in again])):
                res[i] = r
        return self._finish(res, raise_on_error)


class AsyncPipeline(_PipelineBase):
    """:meth:`HotPath.pipeline` on an asyncio client: ``async with``,
    ``await p.execute()``."""

    async def __aenter__(self) -> "AsyncPipeline":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.reset()

    async def reset(self) -> None:
        """Forgets the queued commands."""
        self.runner.take()
        await self.client.reset()

    async def _execute(self, cmds: Sequence[Cmd[Any]]) -> List[Any]:
        cluster = getattr(self.client, "cluster_client", None)
        if cluster is not None and getattr(cluster, "_initialize", False):
            # redis-py 8.1: an asyncio RedisCluster that queues a pipeline's
            # command before its first connection cannot close afterwards
            # ("Event loop is closed"); read the slot map first.
            await cluster.initialize()
        self._send(cmds)
        return list(await self.client.execute(raise_on_error=False))

    async def execute(self, raise_on_error: bool = True) -> List[Any]:
        """Sends the queued commands; their parsed replies, in order (as
        :meth:`Pipeline.execute`)."""
        cmds = self.runner.take()
        try:
            res = await self._execute(cmds)
        except ResponseError as e:
            if not self._unknown([e]):
                raise typed(e) from None
            res = await self._execute(cmds)
        again = self._unknown(res)
        if again:
            for i, r in zip(again, await self._execute([cmds[i] for i in again])):
                res[i] = r
        return self._finish(res, raise_on_error)


#: The public names (the rest is the package's own).
__all__ = [
    "HotPath", "Pipeline", "AsyncPipeline", "Poll", "Rank", "Like", "RedPacket", "LuckyBag",
    "Rate", "Lock", "DelayQueue", "Idem", "Stock", "Backend", "ModuleBackend", "Cmd", "Key", "Arg",
    "Call", "PARSE_OPTION",
]
