"""The large POLL and RANK operations of issue 13 on 1,000,000-member
boards, against their native equivalents: for each, the command's wall
time and the longest stall a concurrent client saw (the worst round trip
of a PING loop running on a second connection during the command).

`python3 bench/pollrank_large.py [path/to/libhotpath.so]` prints a markdown
table; bench/poll.py and bench/rank.py add the same rows to `make bench`.
"""
import os
import sys
import threading
import time

import redis

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Server  # noqa: E402
import common  # noqa: E402

N = 1_000_000
T0 = 1_700_000_000_000
SCALE = 10 ** 10


def fill(r, key, score_of, prefix="u", n=N, batch=1000):
    """ZADDs n members <prefix>0 … with score_of(i), pipelined."""
    pipe = r.pipeline(transaction=False)
    for start in range(0, n, batch):
        args = []
        for i in range(start, min(start + batch, n)):
            args += [score_of(i), f"{prefix}{i}"]
        pipe.execute_command("ZADD", key, *args)
        if (start // batch) % 50 == 49:
            pipe.execute()
    pipe.execute()


class Stall:
    """Pings the server from a second connection while a command runs and
    records the worst round trip."""

    def __init__(self, port):
        self.r = redis.Redis(port=port, socket_timeout=None)
        self.worst = 0.0
        self.stop = False

    def __enter__(self):
        self.t = threading.Thread(target=self.loop, daemon=True)
        self.t.start()
        time.sleep(0.05)
        return self

    def loop(self):
        while not self.stop:
            t = time.perf_counter()
            self.r.ping()
            self.worst = max(self.worst, time.perf_counter() - t)
            time.sleep(0.0005)

    def __exit__(self, *exc):
        self.stop = True
        self.t.join()


def cpu(r):
    """Returns the server's CPU seconds so far (main thread and others)."""
    i = r.info("cpu")
    return i["used_cpu_user"] + i["used_cpu_sys"]


def timed(r, port, *args):
    """Runs one command; returns (wall ms, worst concurrent PING ms, reply).
    Also records the server CPU it took and the longest slice the module
    reported to the latency monitor (`LATENCY LATEST`, events
    hotpath-*), in LAST."""
    r.execute_command("LATENCY", "RESET")
    c0 = cpu(r)
    with Stall(port) as s:
        t = time.perf_counter()
        reply = r.execute_command(*args)
        wall = time.perf_counter() - t
    LAST["cpu_ms"] = (cpu(r) - c0) * 1000
    events = {(e[0].decode() if isinstance(e[0], bytes) else e[0]): int(e[3])
              for e in r.execute_command("LATENCY", "LATEST")}
    LAST["slice_ms"] = max((v for k, v in events.items() if k.startswith("hotpath") and not k.endswith("-cpu")),
                           default=0)
    LAST["slice_cpu_ms"] = max((v for k, v in events.items() if k.startswith("hotpath") and k.endswith("-cpu")),
                               default=0)
    return wall * 1000, s.worst * 1000, reply


LAST = {}


def measure(r, port, *args):
    """Returns (figures, reply) of one command: wall ms, worst concurrent
    PING ms, server CPU ms, longest reported slice ms."""
    wall, stall, reply = timed(r, port, *args)
    return (wall, stall, LAST["cpu_ms"], LAST["slice_ms"], LAST["slice_cpu_ms"]), reply


def rows(r, port, family=None):
    """Yields (name, module figures, native label, native figures) for
    POLL and RANK (or only `family`); the figures as in `measure`."""
    r.execute_command("CONFIG", "SET", "latency-monitor-threshold", 1)
    if family in (None, "POLL"):
        yield from poll_rows(r, port)
    if family in (None, "RANK"):
        yield from rank_rows(r, port)


def poll_rows(r, port):
    # POLL on a 1M-candidate board (votes written straight to the board,
    # as a long-running poll would have them).
    fill(r, "poll:{p}:board", lambda i: i % 1000 + 1, prefix="c")
    r.execute_command("HSET", "poll:{p}:voted", "u0", "c0:1")
    m, _ = measure(r, port, "POLL.INFO", "poll:{p}")
    n, _ = measure(r, port, "HLEN", "poll:{p}:voted")
    yield "POLL.INFO (1M candidates)", m, "HLEN", n
    m, reply = measure(r, port, "POLL.SYNC", "poll:{p}")
    assert len(reply) == 1 + 2 * N, len(reply)
    n, _ = measure(r, port, "COPY", "poll:{p}:board", "copy:{p}")
    yield "POLL.SYNC (1M board, first freeze)", m, "COPY", n
    m, reply = measure(r, port, "POLL.SYNC", "poll:{p}")
    n, _ = measure(r, port, "ZRANGE", "copy:{p}", 0, -1, "WITHSCORES")
    yield "POLL.SYNC retry (1M, frozen)", m, "ZRANGE 0 -1 WITHSCORES", n
    m, _ = measure(r, port, "POLL.SYNCACK", "poll:{p}", reply[0])
    n, _ = measure(r, port, "RENAME", "copy:{p}", "copy2:{p}")
    yield "POLL.SYNCACK (1M)", m, "RENAME", n
    r.execute_command("FLUSHALL")


def rank_rows(r, port):
    # RANK: two 1M boards of packed scores, half the members shared.
    fill(r, "a:{r}", lambda i: (i % 100_000) * SCALE + (SCALE - 1 - (T0 // 1000 + i)))
    fill(r, "b:{r}", lambda i: (i % 50_000) * SCALE + (SCALE - 1 - (T0 // 1000 + i)), prefix="v")
    pipe = r.pipeline(transaction=False)
    for start in range(0, N // 2, 1000):
        args = []
        for i in range(start, start + 1000):
            args += [(i % 7) * SCALE + (SCALE - 1 - T0 // 1000), f"u{i}"]
        pipe.execute_command("ZADD", "b:{r}", *args)
    pipe.execute()
    m, reply = measure(r, port, "RANK.MERGE", "m:{r}", 2, "a:{r}", "b:{r}")
    n, _ = measure(r, port, "ZUNIONSTORE", "z:{r}", 2, "a:{r}", "b:{r}", "AGGREGATE", "MAX")
    yield f"RANK.MERGE SUM (two 1M boards, {reply:,} members)", m, "ZUNIONSTORE AGGREGATE MAX", n
    mid = "u500000"
    rank = r.execute_command("ZREVRANK", "a:{r}", mid)
    for k in (N, 1000):
        try:
            m, _ = measure(r, port, "RANK.AROUND", "a:{r}", mid, k)
        except redis.ResponseError as e:
            m = (float("nan"),) * 5
            print(f"RANK.AROUND n={k}: {e}")
        n, _ = measure(r, port, "ZREVRANGE", "a:{r}", max(0, rank - k), rank + k, "WITHSCORES")
        yield f"RANK.AROUND n = {k:,} (1M board)", m, "ZREVRANGE of 2n+1", n
    r.execute_command("FLUSHALL")


def main():
    if len(sys.argv) > 1:
        common.SO = os.path.abspath(sys.argv[1])
    server = Server()
    try:
        print("| operation | module wall ms | worst PING ms | server CPU ms | longest slice ms (wall / CPU) "
              "| native | wall ms | worst PING ms | server CPU ms |")
        print("|---|---:|---:|---:|---:|---|---:|---:|---:|")
        r = redis.Redis(port=server.port, socket_timeout=None)
        for name, m, label, n in rows(r, server.port):
            print(f"| {name} | {m[0]:.0f} | {m[1]:.1f} | {m[2]:.0f} | {m[3]:.0f} / {m[4]:.0f} "
                  f"| {label} | {n[0]:.0f} | {n[1]:.1f} | {n[2]:.0f} |", flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
