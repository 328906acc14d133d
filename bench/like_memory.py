"""Measures the Set -> bitmap memory crossover for LIKE with MEMORY USAGE.

`python3 bench/like_memory.py` starts a plain redis-server (the module is not
needed: it stores likes in ordinary Sets and bitmaps), fills Sets of n random
integer ids below R and bitmaps reaching the largest id (built the way a
promotion builds them: one exact-sized string), and prints a markdown table of
MEMORY USAGE (SAMPLES 0) in bytes, next to the fixed memory model that the
promotion rule uses (src/like/model.rs). docs/like.md holds the table and the
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


def model_set(n, top):
    """The promotion rule's model of a Set (src/like/model.rs set_memory)."""
    if n <= 512:
        width = 2 if top <= 0x7FFF else 4 if top <= 0x7FFF_FFFF else 8
        return 64 + 8 + n * width
    return 64 + 48 * n


def model_bitmap(top):
    """The model of the bitmap a promotion builds (bitmap_len + 64)."""
    need = top // 8 + 1
    return 64 + min(need + need // 64, 512 * 1024 * 1024)


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
                ms, mb = model_set(n, max(ids)), model_bitmap(max(ids))
                print(f"| {n:,} | {rng_top:,} | {enc} | {sm:,} | {ms:,} | {sm / n:.1f} | "
                      f"{f'{bm:,}' if bm is not None else '(>64 MB, not built)'} | {mb:,} | "
                      f"{'bitmap' if bm is not None and bm < sm else 'set'} | "
                      f"{'bitmap' if mb < ms else 'set'} |", flush=True)
    finally:
        s.stop()


if __name__ == "__main__":
    print("| likes | ids below | Set encoding | Set bytes | model | bytes/like | bitmap bytes | model | "
          "smaller (measured) | promoted (model) |")
    print("|---:|---:|---|---:|---:|---:|---:|---:|---|---|")
    main()
