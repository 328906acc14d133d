"""Measures the figures of LIKE's memory model with MEMORY USAGE.

`python3 bench/like_memory.py` starts a plain redis-server (the module is not
needed: LIKE stores likes in ordinary Sets and Strings) and prints three
markdown tables next to the fixed model the promotion uses
(src/like/model.rs): what a chunk costs, what a Set costs per member, and
where a range pays for its chunk. docs/like.md holds the tables.
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Server  # noqa: E402

RANGE_IDS = 64_000
CHUNK_BYTES = 8_000
KEY_BYTES = 64
MEMBER_BYTES = 48


def model_set(n, top):
    """src/like/model.rs set_memory."""
    if n == 0:
        return 0
    if n <= 512:
        width = 2 if top <= 0x7FFF else 4 if top <= 0x7FFF_FFFF else 8
        return 64 + 8 + n * width
    return 64 + 48 * n


def fill_set(r, key, ids):
    r.delete(key)
    ids = list(ids)
    for i in range(0, len(ids), 10000):
        r.sadd(key, *ids[i:i + 10000])


def mem(r, key):
    return r.memory_usage(key, samples=0)


def main():
    s = Server()
    r = s.r
    rng = random.Random(7)
    try:
        print("A chunk, created as the module (and a replica, with SETRANGE) creates it:\n")
        print("| chunk | bytes | MEMORY USAGE | model |")
        print("|---|---:|---:|---:|")
        for name, length in (("settled", CHUNK_BYTES), ("migrating", CHUNK_BYTES + 1)):
            r.delete("post:{1}:bits:17")
            r.setrange("post:{1}:bits:17", length - 1, b"\0")
            print(f"| {name} | {length:,} | {mem(r, 'post:{1}:bits:17'):,} | "
                  f"{KEY_BYTES + CHUNK_BYTES:,} |")
        print("\nA Set of n ids spread over 4 billion (MEMORY USAGE per member):\n")
        print("| members | encoding | MEMORY USAGE | per member | model | per member |")
        print("|---:|---|---:|---:|---:|---:|")
        for n in (256, 512, 513, 1_000, 10_000, 100_000, 1_000_000):
            ids = list({rng.randrange(4_294_967_295) for _ in range(n + n // 8)})[:n]
            fill_set(r, "m", ids)
            m = mem(r, "m")
            ms = model_set(n, max(ids))
            print(f"| {n:,} | {r.object('encoding', 'm').decode()} | {m:,} | {m / n:.1f} | "
                  f"{ms:,} | {ms / n:.1f} |", flush=True)
        r.delete("m")
        print("\nOne range's likers inside a large Set (the rest elsewhere) against its chunk:\n")
        print("| likers in the range | their Set bytes (measured) | chunk (measured) | "
              "smaller | model says |")
        print("|---:|---:|---:|---|---|")
        base = list({rng.randrange(RANGE_IDS, 4_294_967_295) for _ in range(12_000)})[:10_000]
        fill_set(r, "m", base)
        without = mem(r, "m")
        r.delete("c")
        r.setrange("c", CHUNK_BYTES - 1, b"\0")
        chunk = mem(r, "c")
        for k in (50, 100, 150, 168, 169, 200, 400, 1_000, 10_000):
            fill_set(r, "m", base + rng.sample(range(RANGE_IDS), k))
            extra = mem(r, "m") - without
            print(f"| {k:,} | {extra:,} | {chunk:,} | {'chunk' if chunk < extra else 'set'} | "
                  f"{'chunk' if k * MEMBER_BYTES > KEY_BYTES + CHUNK_BYTES else 'set'} |",
                  flush=True)
    finally:
        s.stop()


if __name__ == "__main__":
    main()
