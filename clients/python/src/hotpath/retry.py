"""The retry policy of the spread handles (docs/spread.md, "Retries under
topology change").

redis-py follows ``MOVED`` and ``ASK`` by itself, but gives up on
``TRYAGAIN`` after about 0.4 s (``ClusterError: TTL exhausted``), and a
failover shows as ``ConnectionError`` or ``CLUSTERDOWN`` for the few
seconds until a replica is promoted. A spread handle retries these, with a
bounded, documented policy:

* **Errors that say nothing was done** are retried for every command:
  ``TRYAGAIN`` (a slot half-moved; hotpath answers it while its slot is
  ``MIGRATING`` or ``IMPORTING``), ``MOVED``, ``ASK``, ``CLUSTERDOWN``,
  ``MASTERDOWN``, ``LOADING``, redis-py's "TTL exhausted" (it gave up
  following redirections or ``TRYAGAIN``) and "slot not covered", and a
  connection that could not be opened (nothing was sent).
* **Errors with an unknown outcome** (a connection lost or timed out after
  the command was sent: it may have run) are retried only for commands
  that give the same state when run twice (:data:`RESEND_UNSAFE` lists the
  ones that do not: ``LIKE.TOGGLE``, ``RANK.INCR`` and ``RANK.DECR``, whose error is
  raised at once).
* Anything else (an error reply of the command itself) is final.

Retries go on until ``deadline_ms`` (10 s by default) has passed since the
call began, sleeping ``first_ms`` (20 ms), then twice as long each time up
to ``max_ms`` (500 ms), each sleep drawn uniformly from its upper half
(jitter, so that many clients do not retry in step). No attempt starts
that would end past the deadline, judged by the longest attempt so far
(one attempt is redis-py's own call, with its own retries: about 2.8 s on
``CLUSTERDOWN`` with its defaults, 0.4 s on ``TRYAGAIN``), so the caller
sees the last error within ``deadline_ms``, or after the first attempt
when that one alone took longer.
"""
from __future__ import annotations

import asyncio
import random
import time
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterator, List, Optional, Sequence

from redis.exceptions import (AskError, BusyLoadingError, ClusterDownError, ClusterError,
                              ConnectionError, RedisClusterException, ResponseError,
                              SlotNotCoveredError, TimeoutError, TryAgainError)

#: Nothing was done: safe to send again, whatever the command.
NOT_APPLIED = "not-applied"
#: The command may have run: safe to send again only if running it twice
#: gives the same state.
UNKNOWN = "unknown"

#: Commands that must not be sent again after an unknown outcome: a second
#: run changes the state again (a toggle undone, an increment doubled).
RESEND_UNSAFE = frozenset({"LIKE.TOGGLE", "RANK.INCR", "RANK.DECR"})

_NOT_APPLIED_PREFIXES = ("TRYAGAIN", "MOVED", "ASK", "CLUSTERDOWN", "MASTERDOWN", "LOADING")


def classify(err: BaseException) -> Optional[str]:
    """:data:`NOT_APPLIED`, :data:`UNKNOWN`, or ``None`` for an error that
    is final (the command's own error reply, a bug)."""
    if isinstance(err, (TryAgainError, AskError, ClusterDownError, SlotNotCoveredError,
                        BusyLoadingError)):
        return NOT_APPLIED
    if isinstance(err, ClusterError) and "TTL exhausted" in str(err):
        return NOT_APPLIED
    if isinstance(err, ResponseError):
        return NOT_APPLIED if str(err).startswith(_NOT_APPLIED_PREFIXES) else None
    if isinstance(err, (ConnectionError, TimeoutError)):
        # redis-py's messages for a connection it could not open: "Error
        # 111 connecting to host:port.", "Timeout connecting to server".
        return NOT_APPLIED if "connecting to" in str(err) else UNKNOWN
    if isinstance(err, RedisClusterException) and "not covered" in str(err):
        return NOT_APPLIED
    return None


def retryable(err: BaseException, command: str) -> bool:
    """Whether ``command``'s ``err`` may be retried."""
    kind = classify(err)
    if kind == NOT_APPLIED:
        return True
    return kind == UNKNOWN and command.upper() not in RESEND_UNSAFE


@dataclass(frozen=True)
class RetryPolicy:
    """How long and how often a spread handle retries (module docstring).
    ``RetryPolicy(deadline_ms=0)`` never retries."""
    deadline_ms: int = 10_000
    first_ms: int = 20
    max_ms: int = 500

    def delays(self, rnd: Callable[[], float] = random.random) -> Iterator[float]:
        """The sleeps between attempts, in seconds, without end: ``first_ms``
        doubling up to ``max_ms``, each drawn from ``[d/2, d]``."""
        d = max(1, self.first_ms)
        while True:
            yield (d / 2 + rnd() * d / 2) / 1000
            d = min(d * 2, max(1, self.max_ms))

    def run(self, fn: Callable[[], Any], command: str,
            clock: Callable[[], float] = time.monotonic,
            sleep: Callable[[float], None] = time.sleep) -> Any:
        """``fn()``, tried again while it raises an error :func:`retryable`
        for ``command`` and the deadline allows; else its last error."""
        res = self.run_many(lambda calls: [_outcome(fn)], [command], clock, sleep)[0]
        if isinstance(res, BaseException):
            raise res
        return res

    def run_many(self, step: Callable[[Sequence[int]], List[Any]], commands: Sequence[str],
                 clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep) -> List[Any]:
        """Runs calls ``0 … len(commands)-1`` through ``step(indexes)``,
        which answers each call's reply or exception in order; the calls
        that failed with an error :func:`retryable` for their command go
        again (only those) until the deadline. Returns every call's last
        outcome."""
        start = clock()
        out: List[Any] = [None] * len(commands)
        pending = list(range(len(commands)))
        delays = self.delays()
        longest = 0.0
        while True:
            began = clock()
            res = step(pending)
            longest = max(longest, clock() - began)
            again = []
            for i, r in zip(pending, res):
                out[i] = r
                if isinstance(r, BaseException) and retryable(r, commands[i]):
                    again.append(i)
            if not again:
                return out
            d = next(delays)
            # No attempt that would end past the deadline (judged by the
            # longest attempt so far: the cluster client's own retries).
            if (clock() - start) + d + longest > self.deadline_ms / 1000:
                return out
            sleep(d)
            pending = again


    async def arun(self, fn: Callable[[], Awaitable[Any]], command: str,
                   clock: Callable[[], float] = time.monotonic) -> Any:
        """:meth:`run` on asyncio: ``await fn()``, tried again as
        :meth:`run` does (sleeping with ``asyncio.sleep``)."""
        async def step(calls: Sequence[int]) -> List[Any]:
            try:
                return [await fn()]
            except Exception as e:  # noqa: BLE001 (classified by run_many)
                return [e]

        res = (await self.arun_many(step, [command], clock))[0]
        if isinstance(res, BaseException):
            raise res
        return res

    async def arun_many(self, step: Callable[[Sequence[int]], Awaitable[List[Any]]],
                        commands: Sequence[str],
                        clock: Callable[[], float] = time.monotonic) -> List[Any]:
        """:meth:`run_many` on asyncio: ``await step(indexes)``, the same
        rounds, deadline and sleeps (``asyncio.sleep``)."""
        start = clock()
        out: List[Any] = [None] * len(commands)
        pending = list(range(len(commands)))
        delays = self.delays()
        longest = 0.0
        while True:
            began = clock()
            res = await step(pending)
            longest = max(longest, clock() - began)
            again = []
            for i, r in zip(pending, res):
                out[i] = r
                if isinstance(r, BaseException) and retryable(r, commands[i]):
                    again.append(i)
            if not again:
                return out
            d = next(delays)
            if (clock() - start) + d + longest > self.deadline_ms / 1000:
                return out
            await asyncio.sleep(d)
            pending = again


def _outcome(fn: Callable[[], Any]) -> Any:
    try:
        return fn()
    except Exception as e:  # noqa: BLE001 (classified by the caller)
        return e


#: The default policy: 10 s, 20 ms doubling to 500 ms.
DEFAULT = RetryPolicy()
#: No retry at all (the cluster client's own retries only).
NEVER = RetryPolicy(deadline_ms=0)


#: The public names (the rest is the package's own).
__all__ = [
    "RetryPolicy", "DEFAULT", "NEVER", "NOT_APPLIED", "UNKNOWN", "RESEND_UNSAFE", "classify",
    "retryable",
]
