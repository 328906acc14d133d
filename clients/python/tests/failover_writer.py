"""Writes through a spread handle for ``seconds`` while the caller kills a
master (tests/clients.rs, ``python_spread_handle_rides_out_a_failover``),
and prints one JSON line: writes acknowledged, how many errors the caller
saw (and the first kinds), the longest call, and the entity's count
afterwards.

Usage: failover_writer.py host:port base seconds default|never
"""
import json
import sys
import time

from redis.cluster import ClusterNode, RedisCluster

import hotpath
from hotpath import retry


def main() -> None:
    addr, base, seconds, policy = sys.argv[1], sys.argv[2], float(sys.argv[3]), sys.argv[4]
    host, port = addr.rsplit(":", 1)
    rc = RedisCluster(startup_nodes=[ClusterNode(host, int(port))])
    post = hotpath.HotPath(rc).like(base, spread=16)
    if policy == "never":
        post = post.with_retry(retry.NEVER)
    post.create()
    print("ready", flush=True)
    writes, errors, longest = 0, [], 0.0
    stop = time.monotonic() + seconds
    user = 0
    while time.monotonic() < stop:
        t = time.monotonic()
        try:
            post.add(user)
            writes += 1
        except Exception as e:  # noqa: BLE001 (what the caller sees)
            errors.append(f"{type(e).__name__}: {e}"[:120])
        longest = max(longest, time.monotonic() - t)
        user += 1
    count = hotpath.HotPath(rc).like(base, spread=16).count()
    print(json.dumps({"writes": writes, "errors": len(errors), "longest": round(longest, 3),
                      "count": count, "first_errors": sorted(set(errors))[:3]}), flush=True)


if __name__ == "__main__":
    main()
