"""POLL.VOTE in three columns, in one run on one server: the module, the
seed-style script users write today (SISMEMBER, SADD, ZINCRBY, HSET; see
seeds.py) and the native floor, the fewest native commands that make the
same change (HSETNX + ZINCRBY, each measured on its own). Then the large
operations of issue 13 on a 1,000,000-candidate board: server CPU and the
longest slice against their native equivalents.

Set HOTPATH_BASELINE_SO to a libhotpath.so built from an older commit to
print the large operations of that build too ("before")."""

import os

import redis

from pollrank_large import rows as large_rows
from seeds import POLL_SEED

N = 100_000
T0 = 1_700_000_000_000


def bench(b):
    r = b.r
    seed = r.script_load(POLL_SEED)
    users = [f"u{i}" for i in range(N)]
    cands = [f"c{i % 50}" for i in range(N)]
    r.execute_command("POLL.CREATE", "pm")

    def three(name, ours, script, floor, target="≤ 1.5× floor (aim 1.2×)"):
        o = b.measure(ours[0], ours[1])
        s = b.measure("evalsha", script)
        f = sum(b.measure(cmd, calls) for cmd, calls in floor)
        b.row(name, o, [("seed script", s), ("native floor", f)], target)

    three("POLL.VOTE (ONCE, new voters)",
          ("poll.vote", (("POLL.VOTE", "pm", u, c) for u, c in zip(users, cands))),
          (("EVALSHA", seed, 3, "s:voters", "s:board", "s:audit", u, c, T0) for u, c in zip(users, cands)),
          [("hsetnx", (("HSETNX", "n:voted", u, f"{c}:{T0}") for u, c in zip(users, cands))),
           ("zincrby", (("ZINCRBY", "n:board", 1, c) for c in cands))])
    vs = [f"v{i}" for i in range(N)]
    three("POLL.VOTE (ONCE, new voters, NOW given)",
          ("poll.vote", (("POLL.VOTE", "pm", u, c, "NOW", T0 + i) for i, (u, c) in enumerate(zip(vs, cands)))),
          (("EVALSHA", seed, 3, "s:voters", "s:board", "s:audit", u, c, T0) for u, c in zip(vs, cands)),
          [("hsetnx", (("HSETNX", "n:voted", u, f"{c}:{T0}") for u, c in zip(vs, cands))),
           ("zincrby", (("ZINCRBY", "n:board", 1, c) for c in cands))])
    three("POLL.VOTE (duplicate, refused)",
          ("poll.vote", (("POLL.VOTE", "pm", u, "other") for u in users)),
          (("EVALSHA", seed, 3, "s:voters", "s:board", "s:audit", u, "other", T0) for u in users),
          [("hsetnx", (("HSETNX", "n:voted", u, "other") for u in users))], "")
    r.execute_command("POLL.CREATE", "mm", "MODE", "MULTI", "MAXVOTES", "3")
    three("POLL.VOTE (MULTI)",
          ("poll.vote", (("POLL.VOTE", "mm", u, c) for u, c in zip(users, cands))),
          (("EVALSHA", seed, 3, "ms:voters", "ms:board", "ms:audit", f"{u}:{c}", c, T0)
           for u, c in zip(users, cands)),
          [("hsetnx", (("HSETNX", "mn:voted", f"{u}:{c}", f"{c}:{T0}") for u, c in zip(users, cands))),
           ("zincrby", (("ZINCRBY", "mn:board", 1, c) for c in cands)),
           ("hset", (("HSET", "mn:uservotes", u, f'["{c}"]') for u, c in zip(users, cands)))])
    assert r.execute_command("POLL.INFO", "pm")[-1] == 2 * N
    b.note("POLL.VOTE against its floor: the ballot set-if-absent and the board increment are the natives' own "
           "work; the rest is reading the poll's rules from B:meta (one field, parsed once per distinct value), "
           "opening three keys (names kept between calls) and, without NOW, RM_Replicate of `POLL.VOTE … NOW <ms>` "
           "(~3,500 instructions, most of it the server looking the command name up). Sending NOW makes the "
           "replication verbatim, nearly free. Instruction counts: python3 bench/pollrank_callgrind.py.")
    r.execute_command("FLUSHALL")
    large(b, "POLL")


def large(b, family):
    """The large operations of `family` from pollrank_large.py: server CPU
    in ms against the native equivalent, and the longest slice as a note."""
    r = redis.Redis(port=b.server.port, socket_timeout=None)
    builds = [("", None)]
    if os.environ.get("HOTPATH_BASELINE_SO"):
        builds.append((" (before)", os.environ["HOTPATH_BASELINE_SO"]))
    for tag, so in builds:
        server = None
        port = b.server.port
        if so:
            import common
            saved, common.SO = common.SO, os.path.abspath(so)
            server = common.Server()
            common.SO = saved
            port = server.port
            r = redis.Redis(port=port, socket_timeout=None)
        try:
            for name, m, label, n in large_rows(r, port, family):
                if m[2] != m[2]:  # NaN: refused (bounded)
                    b.note(f"{name}{tag}: refused, n is bounded by rank-range-max; native {label} "
                           f"{n[2]:.0f} ms CPU, worst PING {n[1]:.0f} ms")
                    continue
                if m[2] > 50:
                    b.row(f"{name}{tag}, server CPU ms", m[2], [(f"{label} CPU ms", n[2])],
                          "no stall; aim ≈ native")
                b.note(f"{name}{tag}: wall {m[0]:.0f} ms, worst concurrent PING {m[1]:.1f} ms, longest slice "
                       f"{m[3]:.0f} ms wall / {m[4]:.0f} ms CPU; native {label}: wall {n[0]:.0f} ms, "
                       f"worst PING {n[1]:.1f} ms")
        finally:
            if server:
                server.stop()
