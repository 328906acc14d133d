"""What every entity handle and ``HotPath`` share (hotpath.client re-exports
the public names): the backend seam (``Backend.call(command, argv, keys)``;
``ModuleBackend`` sends the module's command), the pipelines under it, a
command and its reply parser (``Cmd``), the runners that send, await or
queue a handle's commands, the entity handles' base class, and what
``HotPath``'s per-family methods (hotpath.entities) need of ``HotPath``.
"""
from __future__ import annotations

import asyncio
import inspect
from typing import (TYPE_CHECKING, Any, Callable, Dict, Generic, List, Optional, Sequence, Tuple,
                    TypeVar, Union, cast)

from redis.exceptions import ResponseError

from .errors import typed

if TYPE_CHECKING:
    from .retry import RetryPolicy

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


def _by_node(client: Any, keys: Sequence[Key],
             out: List[Any]) -> Tuple[Dict[Optional[str], List[int]], Dict[str, Any]]:
    """The durable write's calls grouped by the node of their first key,
    ``keys[i]``: {node name: call indexes} and {node name: node} (one group
    named None on a client that is no cluster). A call whose key has no
    known owner gets that error in ``out`` and no group."""
    groups: Dict[Optional[str], List[int]] = {}
    nodes: Dict[str, Any] = {}
    get_node = getattr(client, "get_node_from_key", None)
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
    return groups, nodes


def _settle(out: List[Any], acks: List[int], idx: List[int], res: List[Any]) -> None:
    """Files one node's replies: ``res`` holds the replies of the calls
    ``idx`` and last ``WAIT``'s; a call acknowledged by the replicas
    ``WAIT`` counted, unless it failed."""
    ack = res[-1]
    for j, i in enumerate(idx):
        out[i] = res[j]
        ok = isinstance(ack, int) and not isinstance(res[j], BaseException)
        acks[i] = ack if ok else 0


def pipeline_durable(client: Any, wires: Sequence[Sequence[Arg]], keys: Sequence[Key],
                     replicas: int, timeout_ms: int) -> Tuple[List[Any], List[int]]:
    """The durable write over ``client``: one plain pipeline per node (the
    node of each command's first key, ``keys[i]``), ending in ``WAIT
    replicas timeout_ms``, so that the ``WAIT`` runs on the very
    connection of the node's writes. Returns each reply (or error) and the
    replicas that acknowledged its node's writes (0 where it failed). A
    redirection (a slot moved meanwhile) comes back as that call's error,
    and the cluster's slot map is read again for the next attempt."""
    out: List[Any] = [None] * len(wires)
    acks: List[int] = [0] * len(wires)
    groups, nodes = _by_node(client, keys, out)
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
        _settle(out, acks, idx, res)
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
    out: List[Any] = [None] * len(wires)
    acks: List[int] = [0] * len(wires)
    groups, nodes = _by_node(client, keys, out)

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
        _settle(out, acks, idx, res)

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


class ClientBackend(Backend):
    """A backend over one redis-py client (sync or asyncio, standalone or
    cluster) whose several calls go out as pipelines of the commands
    :meth:`wire` makes: the module's own (:class:`ModuleBackend`) or the
    library's ``FCALL``s (``fallback.FunctionsBackend``)."""

    def __init__(self, client: Any):
        self.client = client

    def call_many(self, calls: Sequence[Call]) -> List[Any]:
        """One pipeline (:func:`pipeline_many`; on a cluster, routed by
        each command's first key, one pipeline per node)."""
        return pipeline_many(self.client, [self.wire(*c) for c in calls])

    def call_many_durable(self, calls: Sequence[Call],
                          replicas: int, timeout_ms: int) -> Tuple[List[Any], List[int]]:
        """One plain pipeline per node ending in ``WAIT``, on the
        connection of the node's writes (:func:`pipeline_durable`)."""
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


class ModuleBackend(ClientBackend):
    """Sends the module's own commands."""

    def wire(self, command: str, argv: Sequence[Arg], keys: Sequence[Key]) -> List[Arg]:
        """The command as sent: the module's own."""
        return [command, *argv]

    def call(self, command: str, argv: Sequence[Arg], keys: Sequence[Key]) -> Any:
        return self.client.execute_command(command, *argv)

    async def acall(self, command: str, argv: Sequence[Arg], keys: Sequence[Key]) -> Any:
        return await self.client.execute_command(command, *argv)


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


class _HotPathBase:
    """What ``HotPath``'s per-family methods (``HotPathMethods`` in each
    file of hotpath.entities) use of it: its runner, backend and retry
    policy, and how a spread handle is made. ``HotPath`` derives from
    every family's methods, and they from this."""

    client: Any
    backend: Backend
    retry: "RetryPolicy"
    _runner: Runner

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
