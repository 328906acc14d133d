"""Instructions per call of writes with and without `IDEM token`, counted
by valgrind's callgrind inside Redis's `call()` (as bench/rate_callgrind.py
does): RATE.CHECK (GCRA) and RANK.INCR without a token, with a new token
per call (the write, its reply captured and stored), and a retry (the
stored reply replayed). `python3 bench/idem_token_callgrind.py` (needs
valgrind; about a minute). HOTPATH_SO=<path> counts another build (e.g.
the build before the token, for the "without" rows), which then skips
the token rows. The two native HSET rows are the floors "plus the store
of its reply": into a hashtable (RATE's long records) and into a listpack
of the size RANK's stores have (short records). `memory` rows: bytes per
token (MEMORY USAGE of a store of 100 tokens, a listpack, and of 1,000, a
hashtable, divided), with the mean stored reply."""
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402

OTHER = os.environ.get("HOTPATH_SO")
if OTHER:
    common.SO = OTHER
import rate_callgrind  # noqa: E402

if OTHER:
    rate_callgrind.SO = OTHER

CALLS = 1500
KEYS = 300
# Bytes before the reply in a token's record (src/idem_token/wire.rs).
HEADER = 11


def main():
    cg = rate_callgrind.Counter()
    rng = random.Random(1)
    keys = [rng.randrange(KEYS) for _ in range(CALLS)]
    rows = []

    def row(name, warm, cmds):
        cg.run(warm, count=False)
        n = cg.run(cmds)
        rows.append((name, n))
        print(f"| {name} | {n:,.0f} |", flush=True)

    print("| call | instr/call |")
    print("|---|---:|")
    rate = lambda k, *extra: ("RATE.CHECK", f"r{k}{{x}}", 1000000, 60000, *extra)  # noqa: E731
    rank = lambda k, *extra: ("RANK.INCR", f"b{k % 30}{{x}}", f"m{k}", 1, *extra)  # noqa: E731
    row("RATE.CHECK GCRA", [rate(k) for k in range(KEYS)], [rate(k) for k in keys])
    row("RANK.INCR", [rank(k) for k in range(KEYS)], [rank(k) for k in keys])
    if not OTHER:
        # The store of a reply, natively: one HSET of a token's record (11
        # bytes + RATE.CHECK's stored reply, ~80 bytes) into the entity's
        # Hash, as the kit writes it (the floor "plus the store of its
        # reply" is measured against).
        value = "x" * (HEADER + 80)
        row("native HSET of a token record (floor of the store)", [("HSET", f"h{k}{{x}}", "w", value) for k in range(KEYS)],
            [("HSET", f"h{k}{{x}}", f"tok-{i:08d}", value) for i, k in enumerate(keys)])
        # RANK.INCR's records are short (an integer reply), so its stores
        # stay listpacks (up to hash-max-listpack-entries, 128 by default),
        # where every lookup and insert walks the list: the same writes
        # natively, 30 hashes of 10 records growing to 60, as the RANK rows
        # below fill their stores.
        short = "x" * (HEADER + 3)
        row("native HSET of a short record into a 10-60 field listpack (floor for RANK)",
            [("HSET", f"l{k % 30}{{x}}", f"w{k}", short) for k in range(KEYS)],
            [("HSET", f"l{k % 30}{{x}}", f"tok-{i:08d}", short) for i, k in enumerate(keys)])
        row("RATE.CHECK GCRA IDEM (new token)", [rate(k, "IDEM", f"w{k}") for k in range(KEYS)],
            [rate(k, "IDEM", f"tok-{i:08d}") for i, k in enumerate(keys)])
        row("RATE.CHECK GCRA IDEM (retry, replayed)", [], [rate(k, "IDEM", f"tok-{i:08d}") for i, k in enumerate(keys)])
        row("RANK.INCR IDEM (new token)", [rank(k, "IDEM", f"w{k}") for k in range(KEYS)],
            [rank(k, "IDEM", f"tok-{i:08d}") for i, k in enumerate(keys)])
        row("RANK.INCR IDEM (retry, replayed)", [], [rank(k, "IDEM", f"tok-{i:08d}") for i, k in enumerate(keys)])
        # Memory per token: one entity's store of 1,000 tokens (hashtable)
        # and of 100 (listpack), minus the same store's key overhead.
        for n in (100, 1000):
            cg.r.config_set("hotpath.idem-token-cap", 10000)
            key = f"mem{n}{{y}}"
            for i in range(n):
                cg.r.execute_command("RANK.INCR", key, "m", 1, "IDEM", f"tok-{i:08d}")
            usage = cg.r.memory_usage(f"{key}:idem", samples=0)
            records = [v for f, v in cg.r.hgetall(f"{key}:idem").items() if f != b""]
            reply = sum(len(v) for v in records) / len(records) - HEADER
            enc = cg.r.object("encoding", f"{key}:idem").decode()
            print(f"| memory, {n} tokens of 12 bytes ({enc}) | {usage / n:.1f} B/token "
                  f"(mean stored reply {reply:.1f} B, header {HEADER} B: "
                  f"{usage / n - reply:.1f} B beyond the reply) |", flush=True)
    cg.stop()


if __name__ == "__main__":
    main()
