"""Backends for servers without the module: the Lua twins as the Redis
Functions library ``hotpath`` (lua-compat/generated/hotpath.lua, loaded with
``FUNCTION LOAD``; lua-compat/README.md).

``FunctionsBackend`` always calls the library (``FCALL``).
``FallbackBackend``, the default of ``HotPath``, sends the module's
command and, the first time a server answers that it does not know it,
switches to the library for good: one failed round trip on a server
without the module, none with it.

The twins give the same replies (RESP2 arrays where the module gives
RESP3 maps under ``HELLO 3``: the reply parsers take both), the same
errors and the same data, so the entity handles do not change.
"""
from __future__ import annotations

import re
from typing import Any, List, Optional, Sequence, Tuple

from ._base import Arg, Backend, Call, ClientBackend, Key, ModuleBackend

#: LIKE's twins take the module's three configs first (a script cannot
#: read them): like-max-id, like-promote-at, like-recent, the module's
#: defaults. Pass the values the deployment uses.
LIKE_DEFAULTS = (4294967295, 512, 0)


def function_name(command: str) -> str:
    """``POLL.VOTE`` -> ``hotpath_poll_vote``."""
    return "hotpath_" + command.lower().replace(".", "_")


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, str):
        a = a.encode()
    if isinstance(b, str):
        b = b.encode()
    return bool(a == b)


def twin_args(command: str, argv: Sequence[Arg], keys: Sequence[Key],
              like_configs: Sequence[Arg] = LIKE_DEFAULTS) -> List[Arg]:
    """The ARGV of a command's twin: the module's arguments without its
    keys (lua-compat/README.md, "The KEYS/ARGV contract"). RATE.MULTI
    drops its numkeys too (the twin counts KEYS); RANK.MERGE keeps it;
    LIKE's twins take their configs first."""
    cmd = command.upper()
    rest: List[Arg] = list(argv)
    if cmd == "RATE.MULTI":
        rest = rest[1:]
    pending = list(keys)
    out: List[Arg] = []
    for a in rest:
        if pending and _same(a, pending[0]):
            pending.pop(0)
            continue
        out.append(a)
    if cmd.startswith("LIKE."):
        out = [*like_configs, *out]
    return out


class FunctionsBackend(ClientBackend):
    """Calls the library's functions: ``FCALL hotpath_<family>_<command>
    numkeys key… arg…`` (``FCALL_RO`` is not used: a reader's ``FCALL``
    runs on a replica the client points at only if that replica allows
    it; the module's commands are routed the same way)."""

    def __init__(self, client: Any, like_configs: Sequence[Arg] = LIKE_DEFAULTS):
        super().__init__(client)
        self.like_configs = tuple(like_configs)

    def wire(self, command: str, argv: Sequence[Arg], keys: Sequence[Key]) -> List[Arg]:
        """The command as sent: ``FCALL`` of its twin."""
        args = twin_args(command, argv, keys, self.like_configs)
        return ["FCALL", function_name(command), len(keys), *keys, *args]

    def call(self, command: str, argv: Sequence[Arg], keys: Sequence[Key]) -> Any:
        fcall = self.wire(command, argv, keys)
        if keys and hasattr(self.client, "get_node_from_key"):
            # A cluster client routes FCALL by its first key.
            node = self.client.get_node_from_key(keys[0])
            return self.client.execute_command(*fcall, target_nodes=node)
        return self.client.execute_command(*fcall)

    async def acall(self, command: str, argv: Sequence[Arg], keys: Sequence[Key]) -> Any:
        fcall = self.wire(command, argv, keys)
        if keys and hasattr(self.client, "get_node_from_key"):
            node = self.client.get_node_from_key(keys[0])
            return await self.client.execute_command(*fcall, target_nodes=node)
        return await self.client.execute_command(*fcall)


#: "unknown command", as the server says it, or as redis-py reports it
#: from a pipeline ("Command # 1 (…) of pipeline caused error: …"; the
#: asyncio client quotes the message as a tuple).
_UNKNOWN = re.compile(r"^(command # \d+ \(.*\) of pipeline caused error: \(?['\"]?)?unknown command",
                      re.IGNORECASE | re.DOTALL)


def _unknown_command(err: Any) -> bool:
    return isinstance(err, Exception) and _UNKNOWN.match(str(err)) is not None


class FallbackBackend(Backend):
    """The module while the server has it, else the Functions library.

    ``mode`` is ``None`` until the first call decides, then ``"module"``
    or ``"functions"``: a server that answers "unknown command" to a
    hotpath command has no module, and every later call (this one
    included) goes to the library."""

    def __init__(self, client: Any, like_configs: Sequence[Arg] = LIKE_DEFAULTS):
        self.module = ModuleBackend(client)
        self.functions = FunctionsBackend(client, like_configs)
        self.mode: Optional[str] = None

    def call(self, command: str, argv: Sequence[Arg], keys: Sequence[Key]) -> Any:
        if self.mode == "functions":
            return self.functions.call(command, argv, keys)
        try:
            reply = self.module.call(command, argv, keys)
        except Exception as e:  # redis.ResponseError, without importing redis here
            if self.mode is None and _unknown_command(e):
                self.mode = "functions"
                return self.functions.call(command, argv, keys)
            raise
        self.mode = "module"
        return reply

    async def acall(self, command: str, argv: Sequence[Arg], keys: Sequence[Key]) -> Any:
        if self.mode == "functions":
            return await self.functions.acall(command, argv, keys)
        try:
            reply = await self.module.acall(command, argv, keys)
        except Exception as e:  # redis.ResponseError, without importing redis here
            if self.mode is None and _unknown_command(e):
                self.mode = "functions"
                return await self.functions.acall(command, argv, keys)
            raise
        self.mode = "module"
        return reply

    def wire(self, command: str, argv: Sequence[Arg], keys: Sequence[Key]) -> List[Arg]:
        """The command as the backend in use sends it: the module's until
        the server said it has no module (a pipeline queued before any call
        decided sends the module's; :class:`hotpath.Pipeline` sends those
        the server did not know again, to the library)."""
        if self.mode == "functions":
            return self.functions.wire(command, argv, keys)
        return self.module.wire(command, argv, keys)

    def _decide(self, results: Sequence[Any]) -> List[int]:
        """After a first batch on the module: the positions to run again on
        the library (those the server did not know), switching to it for
        good when there is any; else the module is confirmed by a reply."""
        unknown = [i for i, r in enumerate(results) if _unknown_command(r)]
        if unknown:
            self.mode = "functions"
        elif any(not isinstance(r, BaseException) for r in results):
            self.mode = "module"
        return unknown

    def call_many(self, calls: Sequence[Call]) -> List[Any]:
        """The backend in use's pipeline (one per node on a cluster): the
        module's, or the library's once the server said it has no module."""
        if self.mode == "functions":
            return self.functions.call_many(calls)
        out = self.module.call_many(calls)
        if self.mode is None:
            again = self._decide(out)
            if again:
                for i, r in zip(again, self.functions.call_many([calls[i] for i in again])):
                    out[i] = r
        return out

    def call_many_durable(self, calls: Sequence[Call],
                          replicas: int, timeout_ms: int) -> Tuple[List[Any], List[int]]:
        """The durable write of the backend in use: one pipeline per node
        ending in ``WAIT`` on the connection of the node's writes."""
        if self.mode == "functions":
            return self.functions.call_many_durable(calls, replicas, timeout_ms)
        out, acks = self.module.call_many_durable(calls, replicas, timeout_ms)
        if self.mode is None:
            again = self._decide(out)
            if again:
                res, ack2 = self.functions.call_many_durable(
                    [calls[i] for i in again], replicas, timeout_ms)
                for j, i in enumerate(again):
                    out[i], acks[i] = res[j], ack2[j]
        return out, acks


    async def acall_many(self, calls: Sequence[Call]) -> List[Any]:
        """:meth:`call_many` on an asyncio client."""
        if self.mode == "functions":
            return await self.functions.acall_many(calls)
        out = await self.module.acall_many(calls)
        if self.mode is None:
            again = self._decide(out)
            if again:
                res = await self.functions.acall_many([calls[i] for i in again])
                for i, r in zip(again, res):
                    out[i] = r
        return out

    async def acall_many_durable(self, calls: Sequence[Call], replicas: int,
                                 timeout_ms: int) -> Tuple[List[Any], List[int]]:
        """:meth:`call_many_durable` on an asyncio client."""
        if self.mode == "functions":
            return await self.functions.acall_many_durable(calls, replicas, timeout_ms)
        out, acks = await self.module.acall_many_durable(calls, replicas, timeout_ms)
        if self.mode is None:
            again = self._decide(out)
            if again:
                res, ack2 = await self.functions.acall_many_durable(
                    [calls[i] for i in again], replicas, timeout_ms)
                for j, i in enumerate(again):
                    out[i], acks[i] = res[j], ack2[j]
        return out, acks


def default_backend(client: Any) -> Backend:
    """What ``HotPath(client)`` uses without a backend: the module, with
    the Functions library as its fallback."""
    return FallbackBackend(client)


#: The public names (the rest is the package's own).
__all__ = [
    "FunctionsBackend", "FallbackBackend", "LIKE_DEFAULTS", "function_name", "twin_args",
    "default_backend",
]
