"""STOCK against its native floor and the seckill script users write today,
in one run: STOCK.RESERVE of a new order against the natives that make the
same change (HSETNX of the order + DECRBY of the stock + HINCRBY of the
buyer's count + ZADD of the lease, each measured alone and added) and the
seed-style seckill script (bench/seeds.py: GET, SISMEMBER, DECRBY, SADD,
XADD; no lease, no release, no idempotent order); a sold-out RESERVE
against a bare GET. The Lua twin is measured when lua-compat has it.

Each figure is the best 10,000-call chunk (common.Bench.measure).
Instruction counts, which do not depend on the machine's load:
bench/stock_callgrind.py."""

import os

from seeds import SECKILL_SEED

N = 50_000
T0 = 1_767_225_600_000


def bench(b):
    r = b.r
    seed = r.script_load(SECKILL_SEED)
    keys = range(N)
    big = 10 ** 12
    r.execute_command("STOCK.CREATE", "sk", big, "LEASE", 900000)
    r.set("n:stock", big)
    r.set("s:stock", big)
    ours = b.measure("stock.reserve", (("STOCK.RESERVE", "sk", f"u{i}", f"o{i}", 1, "NOW", T0 + i)
                                       for i in keys))
    floor = sum([
        b.measure("hsetnx", (("HSETNX", "n:orders", f"o{i}", f"R:1:{T0 + 900000}:{i}:u{i}") for i in keys)),
        b.measure("decrby", (("DECRBY", "n:stock", 1) for i in keys)),
        b.measure("hincrby", (("HINCRBY", "n:users", f"u{i}", 1) for i in keys)),
        b.measure("zadd", (("ZADD", "n:leases", T0 + 900000, f"o{i}") for i in keys)),
    ])
    usual = b.measure("evalsha", (("EVALSHA", seed, 3, "s:stock", "s:buyers", "s:orders", f"u{i}", 1, f"o{i}")
                                  for i in keys))
    others = [("HSETNX+DECRBY+HINCRBY+ZADD", floor), ("seckill script", usual)]
    twin = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lua-compat", "generated",
                        "stock", "reserve.lua")
    if os.path.exists(twin):
        r.execute_command("STOCK.CREATE", "tw", big, "LEASE", 900000)
        sha = b.lua("stock/reserve.lua")
        others.append(("Lua twin", b.measure("evalsha", (("EVALSHA", sha, 1, "tw", f"u{i}", f"o{i}", 1,
                                                          "NOW", T0 + i) for i in keys))))
    b.row("STOCK.RESERVE (new order, NOW given)", ours, others, "≤ 1.5× the natives; ≤ ½ of the script")
    # A finished sale: every unit sold, no lease alive.
    r.execute_command("STOCK.CREATE", "done", 1)
    r.execute_command("STOCK.RESERVE", "done", "a", "a1", 1)
    r.execute_command("STOCK.CONFIRM", "done", "a1")
    r.set("g:stock", 0)
    ours = b.measure("stock.reserve", (("STOCK.RESERVE", "done", f"u{i}", f"o{i}", 1) for i in keys))
    native = b.measure("get", (("GET", "g:stock") for i in keys))
    b.row("STOCK.RESERVE (sold out)", ours, [("GET", native)], "≤ 1.2× GET")
    # The spread form (docs/stock.md): shard 0 of a SKU spread over 1
    # shard (every user is its), refilled once by a transfer; then a dry
    # shard's SOLDOUT.
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients",
                                    "python", "src"))
    from hotpath import routing
    k = routing.shard_key("sps", 1, 0)
    r.execute_command("STOCK.CREATE", k, big, "LEASE", 900000, "SPREAD", 1)
    r.execute_command("STOCK.TRANSFER", k, "t", 0, big, "SPREAD", 1)
    r.execute_command("STOCK.APPLY", k, "t", big, "SPREAD", 1)
    r.execute_command("STOCK.SETTLE", k, "t", big, "SPREAD", 1)
    spread = b.measure("stock.reserve", (("STOCK.RESERVE", k, f"u{i}", f"o{i}", 1, "NOW", T0 + i,
                                          "SPREAD", 1) for i in keys))
    b.row("STOCK.RESERVE (a shard of a spread SKU, NOW given)", spread, others[:2],
          "≤ 1.5× the natives; ≤ ½ of the script")
    d = routing.shard_key("spd", 1, 0)
    r.execute_command("STOCK.CREATE", d, 0, "SPREAD", 1)
    r.execute_command("STOCK.APPLY", d, "dry", 0, "SPREAD", 1)
    dry = b.measure("stock.reserve", (("STOCK.RESERVE", d, f"u{i}", f"o{i}", 1, "SPREAD", 1)
                                      for i in keys))
    b.row("STOCK.RESERVE (sold out, a dry shard)", dry, [("GET", native)], "≤ 1.2× GET")
    b.note("RESERVE records the order (a retry gets its reply), the buyer's count (LIMIT) and a "
           "lease (unpaid units come back); the seckill script does none of that. A sold-out RESERVE "
           "reads the one String `B` and replies a 3-element array; GET replies one bulk string. "
           "Instruction counts: python3 bench/stock_callgrind.py (docs/stock.md).")
