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


def timed(r, port, *args):
    """Runs one command; returns (wall ms, worst concurrent PING ms, reply)."""
    with Stall(port) as s:
        t = time.perf_counter()
        reply = r.execute_command(*args)
        wall = time.perf_counter() - t
    return wall * 1000, s.worst * 1000, reply


def rows(r, port):
    """Yields (name, module wall ms, module worst stall ms, native label,
    native wall ms, native worst stall ms)."""
    # POLL on a 1M-candidate board (votes written straight to the board,
    # as a long-running poll would have them).
    fill(r, "poll:{p}:board", lambda i: i % 1000 + 1, prefix="c")
    r.execute_command("HSET", "poll:{p}:voted", "u0", "c0:1")
    wall, stall, _ = timed(r, port, "POLL.INFO", "poll:{p}")
    nwall, nstall, _ = timed(r, port, "HLEN", "poll:{p}:voted")
    yield (("POLL.INFO (1M candidates)", wall, stall, "HLEN", nwall, nstall))
    wall, stall, reply = timed(r, port, "POLL.SYNC", "poll:{p}")
    assert len(reply) == 1 + 2 * N, len(reply)
    nwall, nstall, _ = timed(r, port, "COPY", "poll:{p}:board", "copy:{p}")
    yield (("POLL.SYNC (1M board, first freeze)", wall, stall, "COPY", nwall, nstall))
    wall, stall, reply = timed(r, port, "POLL.SYNC", "poll:{p}")
    yield (("POLL.SYNC retry (1M, frozen)", wall, stall, "ZRANGE 0 -1 WITHSCORES",
                *timed(r, port, "ZRANGE", "copy:{p}", 0, -1, "WITHSCORES")[:2]))
    wall, stall, _ = timed(r, port, "POLL.SYNCACK", "poll:{p}", reply[0])
    yield (("POLL.SYNCACK (1M)", wall, stall, "RENAME", *timed(r, port, "RENAME", "copy:{p}", "copy2:{p}")[:2]))
    r.execute_command("FLUSHALL")

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
    wall, stall, reply = timed(r, port, "RANK.MERGE", "m:{r}", 2, "a:{r}", "b:{r}")
    nwall, nstall, _ = timed(r, port, "ZUNIONSTORE", "z:{r}", 2, "a:{r}", "b:{r}", "AGGREGATE", "MAX")
    yield ((f"RANK.MERGE SUM (two 1M boards, {reply:,} members)", wall, stall,
                "ZUNIONSTORE AGGREGATE MAX", nwall, nstall))
    mid = "u500000"
    for n in (N, 1000):
        try:
            wall, stall, _ = timed(r, port, "RANK.AROUND", "a:{r}", mid, n)
        except redis.ResponseError as e:
            wall, stall = float("nan"), float("nan")
            print(f"RANK.AROUND n={n}: {e}")
        rank = r.execute_command("ZREVRANK", "a:{r}", mid)
        nwall, nstall, _ = timed(r, port, "ZREVRANGE", "a:{r}", max(0, rank - n), rank + n, "WITHSCORES")
        yield ((f"RANK.AROUND n = {n:,} (1M board)", wall, stall, "ZREVRANGE of 2n+1", nwall, nstall))
    r.execute_command("FLUSHALL")


def main():
    if len(sys.argv) > 1:
        common.SO = os.path.abspath(sys.argv[1])
    server = Server()
    try:
        print("| operation | module ms | module worst stall ms | native | native ms | native worst stall ms |")
        print("|---|---:|---:|---|---:|---:|")
        r = redis.Redis(port=server.port, socket_timeout=None)
        for name, w, s, label, nw, ns in rows(r, server.port):
            print(f"| {name} | {w:.0f} | {s:.1f} | {label} | {nw:.0f} | {ns:.1f} |", flush=True)
    finally:
        server.stop()


if __name__ == "__main__":
    main()
