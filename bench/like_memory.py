"""Measures the Set -> bitmap memory crossover for LIKE with MEMORY USAGE.

`python3 bench/like_memory.py` starts a plain redis-server (the module is not
needed: it stores likes in ordinary Sets and bitmaps), fills Sets of n random
integer ids below R and bitmaps reaching the largest id (built the way a
promotion builds them: one exact-sized string), and prints a markdown table of
MEMORY USAGE (SAMPLES 0) in bytes. docs/like.md holds the table and the
default `like-promote-at` chosen from it.
"""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Server  # noqa: E402


def fill_set(r, key, ids):
    r.delete(key)
    ids = list(ids)
    for i in range(0, len(ids), 10000):
        r.sadd(key, *ids[i:i + 10000])


def fill_bitmap(r, key, ids):
    r.delete(key)
    top = max(ids)
    need = top // 8 + 1
    length = need + need // 64  # the promotion's size rule (growth slack)
    buf = bytearray(length)
    for u in ids:
        buf[u >> 3] |= 0x80 >> (u & 7)
    r.set(key, bytes(buf))


def mem(r, key):
    return r.memory_usage(key, samples=0)


def main():
    s = Server()
    r = s.r
    rng = random.Random(7)
    rows = []
    try:
        for n in [64, 256, 512, 513, 1000, 4096, 10000, 32768, 100000, 1000000]:
            for rng_top in [4 * n, 32 * n, 512 * n, 10_000_000, 100_000_000, 4_294_967_295]:
                if rng_top < n:
                    continue
                ids = rng.sample(range(rng_top), n) if rng_top < 50_000_000 else \
                    list({rng.randrange(rng_top) for _ in range(n + n // 10)})[:n]
                fill_set(r, "m:set", ids)
                enc = r.object("encoding", "m:set").decode()
                sm = mem(r, "m:set")
                r.delete("m:set")
                if max(ids) // 8 < 64 * 1024 * 1024:
                    fill_bitmap(r, "m:bits", ids)
                    bm = mem(r, "m:bits")
                    r.delete("m:bits")
                else:
                    bm = None
                rows.append((n, rng_top, enc, sm, bm))
                print(f"| {n} | {rng_top} | {enc} | {sm} | {sm / n:.1f} | "
                      f"{bm if bm is not None else '(>64 MB, not built)'} | "
                      f"{'bitmap' if bm is not None and bm < sm else 'set'} |", flush=True)
    finally:
        s.stop()


if __name__ == "__main__":
    print("| likes n | ids below | set encoding | Set bytes | Set bytes/like | bitmap bytes | smaller |")
    print("|---:|---:|---|---:|---:|---:|---|")
    main()
