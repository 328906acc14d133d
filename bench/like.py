"""LIKE benchmark rows.

Hot writes (TOGGLE as a like and as an unlike, ADD, REM), in set form and in
bitmap form, each against the script users write today (the seed's 5-line
Lua: SISMEMBER or GETBIT, SADD/SREM or SETBIT, INCR/DECR) and against the
native floor, the fewest native commands that make the same change
(SADD + INCR, SREM + DECR, SETBIT + INCR, SETBIT + DECR), each native
measured on its own. Then LIKE.CHECK of 20 users, the memory of 1k / 100k /
1M likes, and the longest command while a post of 2^19 and 2^20 likers is
promoted, when a bitmap post gets the largest id, when a count is missing,
and for LIKE.COMMON at its cap.

Run with `python3 bench/run.py like`.
"""
import random

N = 30000
MAX_ID = 4_294_967_295

SEED_TOGGLE = """
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then
  redis.call('SREM', KEYS[1], ARGV[1]) return {0, redis.call('DECR', KEYS[2])}
end
redis.call('SADD', KEYS[1], ARGV[1]) return {1, redis.call('INCR', KEYS[2])}
"""
SEED_ADD = """
if redis.call('SADD', KEYS[1], ARGV[1]) == 1 then return {1, redis.call('INCR', KEYS[2])} end
return {0, tonumber(redis.call('GET', KEYS[2]))}
"""
SEED_REM = """
if redis.call('SREM', KEYS[1], ARGV[1]) == 1 then return {1, redis.call('DECR', KEYS[2])} end
return {0, tonumber(redis.call('GET', KEYS[2]))}
"""
SEED_BIT_TOGGLE = """
if redis.call('GETBIT', KEYS[1], ARGV[1]) == 1 then
  redis.call('SETBIT', KEYS[1], ARGV[1], 0) return {0, redis.call('DECR', KEYS[2])}
end
redis.call('SETBIT', KEYS[1], ARGV[1], 1) return {1, redis.call('INCR', KEYS[2])}
"""
SEED_BIT_ADD = """
if redis.call('SETBIT', KEYS[1], ARGV[1], 1) == 0 then return {1, redis.call('INCR', KEYS[2])} end
return {0, tonumber(redis.call('GET', KEYS[2]))}
"""
SEED_BIT_REM = """
if redis.call('SETBIT', KEYS[1], ARGV[1], 0) == 1 then return {1, redis.call('DECR', KEYS[2])} end
return {0, tonumber(redis.call('GET', KEYS[2]))}
"""


def fill_set(r, key, ids, count_key=None):
    ids = list(ids)
    p = r.pipeline(transaction=False)
    for i in range(0, len(ids), 5000):
        p.sadd(key, *ids[i:i + 5000])
    if count_key:
        p.set(count_key, len(ids))
    p.execute()


def drive(r, base, users, batch=2000):
    """LIKE.ADDs `users` pipelined."""
    p = r.pipeline(transaction=False)
    for i, u in enumerate(users):
        p.execute_command("LIKE.ADD", base, u)
        if i % batch == batch - 1:
            p.execute()
    p.execute()


def settle(r, base, rng, top):
    """Likes and unlikes new ids until the post's promotion is over (the
    first batch brings the count to a check)."""
    for batch in range(400):
        state = r.execute_command("LIKE.INFO", base)[11]
        migrating = any(r.strlen(k) != 8000 for k in r.scan_iter(f"{base}:bits:*", count=1000))
        if batch > 0 and state == b"none" and not migrating:
            return
        p = r.pipeline(transaction=False)
        for _ in range(2000):
            u = rng.randrange(top)
            p.execute_command("LIKE.ADD", base, u)
            p.execute_command("LIKE.REM", base, u)
        p.execute()
    raise RuntimeError(f"promotion of {base} never ended")


def slow_log(r, fn):
    """Runs fn() with every command logged; returns the longest LIKE
    command's µs and its name."""
    r.config_set("slowlog-log-slower-than", 0)
    r.config_set("slowlog-max-len", 1_000_000)
    r.slowlog_reset()
    fn()
    entries = r.slowlog_get(1_000_000)
    r.config_set("slowlog-log-slower-than", 10000)
    best = (0, "")
    for e in entries:
        name = e["command"]
        name = name.decode() if isinstance(name, bytes) else name
        if name.split()[0].lower().startswith("like.") and e["duration"] > best[0]:
            best = (e["duration"], name.split()[0])
    return best


def step_cpu_max(r):
    info = r.info("hotpath")
    return info.get("hotpath_like_promotion_step_max_cpu_us", 0)


def bench(b):
    r = b.r
    rng = random.Random(4)
    scripts = {name: r.script_load(src) for name, src in (
        ("toggle", SEED_TOGGLE), ("add", SEED_ADD), ("rem", SEED_REM),
        ("btoggle", SEED_BIT_TOGGLE), ("badd", SEED_BIT_ADD), ("brem", SEED_BIT_REM))}
    lua = lambda name, keys, u: ("EVALSHA", scripts[name], 2, *keys, u)  # noqa: E731

    # ---- hot writes, set form: 100k likers spread over 4e9 ids (a post that
    # stays a Set), the same likers in the seed's keys and the natives'.
    fill = rng.sample(range(MAX_ID), 100_000)
    for keys in (("m{s}:set", "m{s}:count"), ("l{s}", "l{s}:c"), ("n{s}", "n{s}:c")):
        fill_set(r, *keys[:1], fill, keys[1])

    def three(label, ours, seed, natives, target):
        """Module, seed script and each native measured on its own."""
        o = b.measure(ours[0], ours[1])
        s = b.measure("evalsha", seed)
        n = sum(b.measure(name, calls) for name, calls in natives)
        floor = " + ".join(name.upper() for name, _ in natives)
        b.row(label, o, [("seed script", s), (floor, n)], target)

    new = [rng.randrange(MAX_ID) for _ in range(N)]
    three("LIKE.TOGGLE (a like), set form",
          ("like.toggle", (("LIKE.TOGGLE", "m{s}", u) for u in new)),
          (lua("toggle", ("l{s}", "l{s}:c"), u) for u in new),
          [("sadd", (("SADD", "n{s}", u) for u in new)), ("incr", (("INCR", "n{s}:c") for _ in new))],
          "≤ 2.5× the floor (issue 27: set form)")
    three("LIKE.TOGGLE (an unlike), set form",
          ("like.toggle", (("LIKE.TOGGLE", "m{s}", u) for u in new)),
          (lua("toggle", ("l{s}", "l{s}:c"), u) for u in new),
          [("srem", (("SREM", "n{s}", u) for u in new)), ("decr", (("DECR", "n{s}:c") for _ in new))],
          "≤ 2.5× the floor (issue 27: set form)")
    new = [rng.randrange(MAX_ID) for _ in range(N)]
    three("LIKE.ADD, set form",
          ("like.add", (("LIKE.ADD", "m{s}", u) for u in new)),
          (lua("add", ("l{s}", "l{s}:c"), u) for u in new),
          [("sadd", (("SADD", "n{s}", u) for u in new)), ("incr", (("INCR", "n{s}:c") for _ in new))],
          "≤ 2.5× the floor (issue 27: set form)")
    three("LIKE.REM, set form",
          ("like.rem", (("LIKE.REM", "m{s}", u) for u in new)),
          (lua("rem", ("l{s}", "l{s}:c"), u) for u in new),
          [("srem", (("SREM", "n{s}", u) for u in new)), ("decr", (("DECR", "n{s}:c") for _ in new))],
          "≤ 2.5× the floor (issue 27: set form)")

    # ---- hot writes, bitmap form: 200k likers below 10M (157 chunks).
    drive(r, "m{b}", rng.sample(range(10_000_000), 200_000))
    settle(r, "m{b}", rng, 10_000_000)
    assert r.execute_command("LIKE.INFO", "m{b}")[1] in (b"bitmap", b"mixed")
    new = rng.sample(range(10_000_000), N)
    three("LIKE.TOGGLE (a like), bitmap form",
          ("like.toggle", (("LIKE.TOGGLE", "m{b}", u) for u in new)),
          (lua("btoggle", ("l{b}", "l{b}:c"), u) for u in new),
          [("setbit", (("SETBIT", "n{b}", u, 1) for u in new)), ("incr", (("INCR", "n{b}:c") for _ in new))],
          "≤ 1.5× the floor or the floor + 0.3 µs (issue 27)")
    three("LIKE.TOGGLE (an unlike), bitmap form",
          ("like.toggle", (("LIKE.TOGGLE", "m{b}", u) for u in new)),
          (lua("btoggle", ("l{b}", "l{b}:c"), u) for u in new),
          [("setbit", (("SETBIT", "n{b}", u, 0) for u in new)), ("decr", (("DECR", "n{b}:c") for _ in new))],
          "≤ 1.5× the floor or the floor + 0.3 µs (issue 27)")
    new = rng.sample(range(10_000_000), N)
    three("LIKE.ADD, bitmap form",
          ("like.add", (("LIKE.ADD", "m{b}", u) for u in new)),
          (lua("badd", ("l{b}", "l{b}:c"), u) for u in new),
          [("setbit", (("SETBIT", "n{b}", u, 1) for u in new)), ("incr", (("INCR", "n{b}:c") for _ in new))],
          "≤ 1.5× the floor or the floor + 0.3 µs (issue 27)")
    three("LIKE.REM, bitmap form",
          ("like.rem", (("LIKE.REM", "m{b}", u) for u in new)),
          (lua("brem", ("l{b}", "l{b}:c"), u) for u in new),
          [("setbit", (("SETBIT", "n{b}", u, 0) for u in new)), ("decr", (("DECR", "n{b}:c") for _ in new))],
          "≤ 1.5× the floor or the floor + 0.3 µs (issue 27)")

    # ---- LIKE.CHECK of 20 users against 20 pipelined SISMEMBER / GETBIT.
    for form, base, native, cmd, top in (("set", "m{s}", "n{s}", "sismember", MAX_ID),
                                         ("bitmap", "m{b}", "n{b}", "getbit", 10_000_000)):
        batches = [[rng.randrange(top) for _ in range(20)] for _ in range(N // 20)]
        ours = b.measure("like.check", (("LIKE.CHECK", base, *batch) for batch in batches))
        one = b.measure(cmd, ((cmd.upper(), native, u) for batch in batches for u in batch))
        b.row(f"LIKE.CHECK of 20 users, {form} form", ours, [(f"20 × {cmd.upper()}", 20 * one)],
              "(server time only; the 20 native calls also cost the client 20 replies)")

    # ---- memory of n likes with ids below 10M, every key of the post,
    # against a plain Set of the same ids.
    for n, label in ((1000, "1k"), (100_000, "100k"), (1_000_000, "1M")):
        ids = rng.sample(range(10_000_000), n)
        drive(r, f"mem{{{n}}}", ids)
        settle(r, f"mem{{{n}}}", rng, 10_000_000) if n > 1000 else None
        fill_set(r, f"plain{{{n}}}", ids)
        enc = r.execute_command("LIKE.INFO", f"mem{{{n}}}")[1].decode()
        ours = sum(r.memory_usage(k, samples=0) for k in r.scan_iter(f"mem{{{n}}}*", count=1000))
        plain = r.memory_usage(f"plain{{{n}}}", samples=0)
        b.row(f"memory, {label} likes ids < 10M (KB; LIKE is {enc})", ours / 1000,
              [("Set", plain / 1000)], "1M: ≤ 1.3 MB, Set tens of MB" if n == 1_000_000 else "")
        for k in list(r.scan_iter(f"mem{{{n}}}*", count=1000)) + [f"plain{{{n}}}"]:
            r.delete(k)

    # ---- the longest single command (µs, SLOWLOG) while a post of n likers
    # below 20M is promoted from start to end; the Set is filled natively
    # one below the check, then likes and unlikes of new ids drive it.
    for n in (1 << 19, 1 << 20):
        base = f"blk{{{n}}}"
        ids = rng.sample(range(20_000_000), n - 1)
        fill_set(r, f"{base}:set", ids, f"{base}:count")
        us, name = slow_log(r, lambda: settle(r, base, rng, 20_000_000))
        b.row(f"promotion of {n:,} likes (ids < 20M): longest command, µs (wall)", us, [],
              f"{name}; longest step so far {step_cpu_max(r)} µs of CPU; "
              "was 842,000 / 1,395,000 µs in one command")
        for k in list(r.scan_iter(f"{base}*", count=1000)):
            r.delete(k)
    # The control: natives emptying a Set of 2^20 members the same way (64
    # members per SREM, with a SETBIT and an INCR beside each): the Set's
    # own shrinking (Redis rehashes it into a smaller table and frees the
    # old one inside an SREM) shows in the SLOWLOG as it does for LIKE.
    ids = rng.sample(range(20_000_000), 1 << 20)
    fill_set(r, "ctl{1}", ids)
    rng.shuffle(ids)

    def natives():
        p = r.pipeline(transaction=False)
        for i in range(0, len(ids), 64):
            p.srem("ctl{1}", *ids[i:i + 64])
            p.setbit("ctl{1}b", ids[i] % 10_000_000, 1)
            p.incr("ctl{1}c")
            if i % (64 * 500) == 0:
                p.execute()
        p.execute()
    r.config_set("slowlog-log-slower-than", 0)
    r.slowlog_reset()
    natives()
    longest = max((e["duration"] for e in r.slowlog_get(1_000_000)), default=0)
    r.config_set("slowlog-log-slower-than", 10000)
    b.row("control: SREM of 64 members at a time emptying 2^20 (natives): longest command, µs (wall)",
          longest, [], "the machine's and the Set's own share of the figures above")
    # The adversarial post of issue 13: 2^20 − 1 likers below 20M and one at
    # 4e9 (it used to fail the check, scanning the whole set, at each power
    # of two).
    base = "adv{1}"
    ids = rng.sample(range(20_000_000), (1 << 20) - 2) + [4_000_000_000]
    fill_set(r, f"{base}:set", ids, f"{base}:count")
    us, name = slow_log(r, lambda: settle(r, base, rng, 20_000_000))
    b.row("2^20 likers below 20M and one at 4e9: longest command, µs (wall)", us, [],
          f"{name}; longest step so far {step_cpu_max(r)} µs of CPU; promoted but the outlier "
          f"({r.execute_command('LIKE.INFO', base)[1].decode()}); was 598,000 µs per failed check")
    # The largest id on a bitmap post: the like goes to the Set. Memory is
    # the sum of MEMORY USAGE over the post's keys (used_memory moves with
    # background frees).
    grow = "grow{1}"
    drive(r, grow, rng.sample(range(1_000_000), 50_000))
    settle(r, grow, rng, 1_000_000)
    post_bytes = lambda: sum(r.memory_usage(k, samples=0) for k in r.scan_iter(f"{grow}*", count=1000))  # noqa: E731
    before = post_bytes()
    us, _ = slow_log(r, lambda: r.execute_command("LIKE.ADD", grow, MAX_ID))
    grown = post_bytes() - before
    b.row("LIKE.ADD of id 4294967295 on a bitmap post: µs", us, [],
          f"the post grew {grown:,} bytes; was 3,920,000 µs and +666 MB")
    # A count deleted by hand on a bitmap post: refused in O(1).
    r.delete(f"{base}:count")
    us, _ = slow_log(r, lambda: _try(r, "LIKE.COUNT", base))
    b.row("LIKE.COUNT with B:count missing on a bitmap post: µs", us, [],
          "an error naming the key; was 735,000 µs (popcount)")
    us, _ = slow_log(r, lambda: _try(r, "LIKE.INFO", base))
    b.row("LIKE.INFO with B:count missing on a bitmap post: µs", us, [], "was 766,000 µs")
    # LIKE.COMMON of two 500k Sets: refused over like-common-max; at the cap.
    a = rng.sample(range(MAX_ID), 500_000)
    fill_set(r, "c{1}:set", a, "c{1}:count")
    fill_set(r, "c{1}x:set", a[:250_000] + rng.sample(range(MAX_ID), 250_000), "c{1}x:count")
    us, _ = slow_log(r, lambda: _try(r, "LIKE.COMMON", "c{1}", "c{1}x"))
    b.row("LIKE.COMMON of two 500k Sets: µs", us, [], "refused over like-common-max; was 877,000 µs")
    small = rng.sample(range(MAX_ID), 5_000)
    fill_set(r, "c{2}:set", small, "c{2}:count")
    us, _ = slow_log(r, lambda: r.execute_command("LIKE.COMMON", "c{2}", "c{1}"))
    b.row("LIKE.COMMON at like-common-max (5k likers vs 500k): µs", us, [], "")
    b.note("Hot writes: the module and the seed script run on their own posts, the natives on "
           "their own keys, each measured on its own (best of 10,000-call chunks).")
    b.note("Longest command (wall): SLOWLOG over the whole promotion; on a machine busier than "
           "its CPUs it shows scheduling, so the longest step's own CPU time is given beside it.")


def _try(r, *args):
    try:
        return r.execute_command(*args)
    except Exception as e:  # noqa: BLE001 - an error reply is the expected outcome
        return e
