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

The pieces live in modules of their own, and keep their names here
(``hotpath.client.Poll``, ``hotpath.client.ModuleBackend``, …): the
backends, ``Cmd`` and the runners in ``hotpath._base``, each family's
entity handle and ``HotPath`` methods in its file of ``hotpath.entities``
(``HotPath`` derives from ``entities.Families``, which gathers them).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Sequence, cast

from redis.exceptions import ResponseError

from . import entities
# The base pieces, under their names here too (hotpath.client.<name>).
from ._base import (PARSE_OPTION, Arg, AsyncRunner, Backend, Call, Cmd, Key, ModuleBackend,
                    PipelineRunner, Runner, SyncRunner, _Entity, _opt, apipeline_durable,
                    apipeline_many, is_async, is_pipeline, pipeline_durable, pipeline_many,
                    runner_for)
from .entities import *  # noqa: F401,F403  (every family's entity handle: entities.__all__)
from .entities import Families
from .errors import typed
from .spread import spread_count

if TYPE_CHECKING:
    from .retry import RetryPolicy


class HotPath(Families):
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

    def spread_count(self, family: str, key: Key) -> Optional[int]:
        """The shard count of the spread entity ``key`` of ``family``
        (``"LIKE"``, …), read from its shard 0; None when it is not spread."""
        if isinstance(self._runner, AsyncRunner):
            from .aspread import aspread_count
            return cast(Optional[int], aspread_count(self.backend, family, key))
        return spread_count(self._spread_backend(), family, key)


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


#: The public names (the rest is the package's own): these and every
#: family's entity handle (hotpath.entities).
__all__ = ["HotPath", "Pipeline", "AsyncPipeline", "Backend", "ModuleBackend", "Cmd", "Key", "Arg",
           "Call", "PARSE_OPTION"]
__all__ += entities.__all__
