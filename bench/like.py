"""LIKE benchmark rows: LIKE.TOGGLE against its Lua twin (set and bitmap
form), LIKE.CHECK of 20 users against 20 pipelined SISMEMBER / GETBIT, memory
of 1k / 100k / 1M likes (ids below 10M) as a Set and as the promoted bitmap,
and the time the server is blocked by a promotion.

Run with `python3 bench/run.py like`.
"""
import random

N = 30000
MAX_ID = "4294967295"


def cfg(b):
    return [MAX_ID, b.r.config_get("hotpath.like-promote-at")["hotpath.like-promote-at"],
            b.r.config_get("hotpath.like-recent")["hotpath.like-recent"]]


def fill_set(r, key, ids, count_key=None):
    ids = list(ids)
    p = r.pipeline(transaction=False)
    for i in range(0, len(ids), 5000):
        p.sadd(key, *ids[i:i + 5000])
    if count_key:
        p.set(count_key, len(ids))
    p.execute()


def like_many(r, base, ids):
    p = r.pipeline(transaction=False)
    for i, u in enumerate(ids):
        p.execute_command("LIKE.ADD", base, u, "NOW", 1_700_000_000_000 + i)
        if i % 5000 == 4999:
            p.execute()
    p.execute()


def slowlog_us(r, command, fn):
    """Runs fn() alone and returns the server time of `command` in µs."""
    r.config_set("slowlog-log-slower-than", 0)
    r.slowlog_reset()
    fn()
    entries = r.slowlog_get(20)
    r.config_set("slowlog-log-slower-than", 10000)
    for e in entries:
        name = e["command"]
        if isinstance(name, bytes):
            name = name.decode()
        if name.split()[0].lower() == command:
            return e["duration"]
    raise RuntimeError(f"{command} not in the slow log")


def bench(b):
    r = b.r
    rng = random.Random(4)
    toggle = b.lua("like/toggle.lua")
    conf = cfg(b)

    # LIKE.TOGGLE against its twin, alternated three times on the same
    # server (the median of each), since one figure on a shared machine is
    # noisy. Set form: sparse ids over the whole range keep the posts sets.
    def toggles(base, top, reps=3):
        ours, lua = [], []
        for rep in range(reps):
            users = [rng.randrange(top) for _ in range(N // reps)]
            ours.append(b.measure("like.toggle", (("LIKE.TOGGLE", "m" + base, u, "NOW", 1000 + i)
                                                  for i, u in enumerate(users))))
            lua.append(b.measure("evalsha", (("EVALSHA", toggle, 1, "l" + base, *conf, u, "NOW", 1000 + i)
                                              for i, u in enumerate(users))))
        return sorted(ours)[reps // 2], sorted(lua)[reps // 2]

    ours, lua = toggles("{set}", 4_294_967_295)
    assert r.execute_command("LIKE.INFO", "m{set}")[1] == b"set"
    b.row("LIKE.TOGGLE, set form", ours, [("Lua twin", lua)], "≤ 1/2 of the Lua twin")

    # Bitmap form: a post promoted at 32768 likes with ids < 10M.
    for base in ("m{bits}", "l{bits}"):
        like_many(r, base, rng.sample(range(10_000_000), 40000))
    assert r.execute_command("LIKE.INFO", "m{bits}")[1] == b"bitmap"
    ours, lua = toggles("{bits}", 10_000_000)
    b.row("LIKE.TOGGLE, bitmap form", ours, [("Lua twin", lua)], "≤ 1/2 of the Lua twin")

    # LIKE.CHECK of 20 users against 20 pipelined SISMEMBER / GETBIT.
    fill_set(r, "native{set}", [int(x) for x in r.smembers("m{set}")])
    for form, base, native, cmd in (("set", "m{set}", "native{set}", "sismember"),
                                    ("bitmap", "m{bits}", "m{bits}:bits", "getbit")):
        top = 4_294_967_295 if form == "set" else 10_000_000
        batches = [[rng.randrange(top) for _ in range(20)] for _ in range(N // 20)]
        ours = b.measure("like.check", (("LIKE.CHECK", base, *batch) for batch in batches))
        one = b.measure(cmd, ((cmd.upper(), native, u) for batch in batches for u in batch))
        b.row(f"LIKE.CHECK of 20 users, {form} form", ours, [(f"20 × {cmd.upper()}", 20 * one)],
              "(server time only; the 20 native calls also cost the client 20 replies)")

    # Memory of n likes with ids below 10M: module (promoted when smaller)
    # against a plain Set of the same ids.
    r.config_set("hotpath.like-recent", 0)
    for n, label in ((1000, "1k"), (100_000, "100k"), (1_000_000, "1M")):
        ids = rng.sample(range(10_000_000), n)
        r.delete("mem{a}:set", "mem{a}:bits", "mem{a}:count", "plain{a}")
        like_many(r, "mem{a}", ids)
        fill_set(r, "plain{a}", ids)
        enc, count, _ = r.execute_command("LIKE.INFO", "mem{a}")[1::2]
        assert count == n
        ours = r.memory_usage("mem{a}:" + ("bits" if enc == b"bitmap" else "set"), samples=0)
        plain = r.memory_usage("plain{a}", samples=0)
        b.row(f"memory, {label} likes ids < 10M (KB; LIKE is {enc.decode()})", ours / 1000,
              [("Set", plain / 1000)], "1M: ≤ 1.3 MB, Set tens of MB" if n == 1_000_000 else "")
    r.config_set("hotpath.like-recent", 10)
    r.delete("plain{a}", "mem{a}:bits", "mem{a}:set", "mem{a}:count")

    # Time the server is blocked by a promotion: the set is filled natively
    # to one below a check point, then one LIKE.ADD promotes it. Median of
    # several runs where affordable: single figures are noisy here.
    promote_at = int(conf[1])
    cases = ((promote_at + 1, (promote_at + 1) * 8, 5), (32768, 10_000_000, 3), (1 << 19, 20_000_000, 1))
    for n, top, reps in cases:
        times = []
        for rep in range(reps):
            base = f"blk{{{n}:{rep}}}"
            ids = rng.sample(range(top), n)
            fill_set(r, f"{base}:set", ids[:-1], f"{base}:count")
            times.append(slowlog_us(r, "like.add", lambda: r.execute_command("LIKE.ADD", base, ids[-1])))
            enc = r.execute_command("LIKE.INFO", base)[1].decode()
            assert enc == "bitmap", (n, enc)
            r.delete(f"{base}:bits", f"{base}:count")
        b.row(f"promotion of {n} likes (ids < {top:,}), µs blocked (median of {reps})",
              sorted(times)[reps // 2], [], "default threshold: the 513-like case")
    # The check that fails: 2^20 sparse likes, the new id small enough to
    # force reading the set.
    base = "sparse{x}"
    ids = rng.sample(range(4_294_967_295), (1 << 20) - 1)
    fill_set(r, f"{base}:set", ids, f"{base}:count")
    us = slowlog_us(r, "like.add", lambda: r.execute_command("LIKE.ADD", base, 5))
    assert r.execute_command("LIKE.INFO", base)[1] == b"set"
    b.row("failed promotion check at 2^20 sparse likes, µs blocked", us, [], "rare: once per doubling")
    b.note("LIKE.TOGGLE/ADD look at promotion only when the set first passes like-promote-at "
           "and at each power-of-two size after it, so the O(n) work is amortized O(1) per like.")
