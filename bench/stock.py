"""STOCK against its native floor and the seckill script users write today,
in one run: STOCK.RESERVE of a new order against the natives that make the
same change (HSETNX of the order + DECRBY of the stock + HINCRBY of the
buyer's count + ZADD of the lease, each measured alone and added) and the
seed-style seckill script (bench/seeds.py: GET, SISMEMBER, DECRBY, SADD,
XADD; no lease, no release, no idempotent order); a sold-out RESERVE
against a bare GET. The Lua twin is measured when lua-compat has it.

A row's sides are measured interleaved (`side_by_side`): ROUNDS rounds,
each running a chunk of every side in turn, so load that comes and goes
on a shared machine falls on all sides alike; a side's figure is its best
round, and a floor's round is the sum of its natives in that same round
(adding each native's own best round would pick four lucky moments
against the module's one). Each row has its own keys, fresh for the
module and for the natives alike, and the natives write what the module
writes: the lease ZSet gets the same increasing lease ends. Instruction
counts, which do not depend on the machine's load: bench/stock_callgrind.py."""

import os
import sys

from seeds import SECKILL_SEED

N = 50_000
ROUNDS = 10
T0 = 1_767_225_600_000
LEASE = 900_000
BIG = 10 ** 12


def side_by_side(b, sides, n=N, rounds=ROUNDS):
    """sides: [(label, [(command, fn)])], fn(i) giving call i's arguments;
    a side of several commands is their sum. Returns {label: µs per call},
    each side's best round; rounds run every side in turn on the same
    indices."""
    chunk = n // rounds
    per = {label: [] for label, _ in sides}
    for j in range(rounds):
        idx = range(j * chunk, (j + 1) * chunk)
        for label, cmds in sides:
            per[label].append(sum(b.measure(cmd, (fn(i) for i in idx), chunk=chunk) for cmd, fn in cmds))
    return {label: min(v) for label, v in per.items()}


def floor(r, p):
    """The native floor on keys `p:*`: what a reservation of one unit at
    NOW T0 + i changes (order record, stock, buyer's count, lease)."""
    r.set(f"{p}:stock", BIG)
    return [("hsetnx", lambda i: ("HSETNX", f"{p}:orders", f"o{i}", f"R:1:{T0 + i + LEASE}:{BIG - 1 - i}:u{i}")),
            ("decrby", lambda i: ("DECRBY", f"{p}:stock", 1)),
            ("hincrby", lambda i: ("HINCRBY", f"{p}:users", f"u{i}", 1)),
            ("zadd", lambda i: ("ZADD", f"{p}:leases", T0 + i + LEASE, f"o{i}"))]


def bench(b):
    r = b.r
    seed = r.script_load(SECKILL_SEED)

    def script(p):
        r.set(f"{p}:stock", BIG)
        return [("evalsha", lambda i: ("EVALSHA", seed, 3, f"{p}:stock", f"{p}:buyers", f"{p}:orders",
                                       f"u{i}", 1, f"o{i}"))]

    def reserved(key):
        # Every call must have been a new order's OK (not SOLDOUT, LIMIT
        # or REFILL): each wrote its order.
        if r.hlen(f"{key}:orders") != N:
            raise RuntimeError(f"{key}: {r.hlen(f'{key}:orders')} orders after {N} reservations")

    r.execute_command("STOCK.CREATE", "sk", BIG, "LEASE", LEASE)
    sides = [("ours", [("stock.reserve", lambda i: ("STOCK.RESERVE", "sk", f"u{i}", f"o{i}", 1, "NOW", T0 + i))]),
             ("floor", floor(r, "n")),
             ("script", script("s"))]
    twin = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "lua-compat", "generated",
                        "stock", "reserve.lua")
    if os.path.exists(twin):
        r.execute_command("STOCK.CREATE", "tw", BIG, "LEASE", LEASE)
        sha = b.lua("stock/reserve.lua")
        sides.append(("twin", [("evalsha", lambda i: ("EVALSHA", sha, 1, "tw", f"u{i}", f"o{i}", 1,
                                                      "NOW", T0 + i))]))
    got = side_by_side(b, sides)
    reserved("sk")
    others = [("HSETNX+DECRBY+HINCRBY+ZADD", got["floor"]), ("seckill script", got["script"])]
    if "twin" in got:
        others.append(("Lua twin", got["twin"]))
    b.row("STOCK.RESERVE (new order, NOW given)", got["ours"], others, "≤ 1.5× the natives; ≤ ½ of the script")
    # A finished sale: every unit sold, no lease alive.
    r.execute_command("STOCK.CREATE", "done", 1)
    r.execute_command("STOCK.RESERVE", "done", "a", "a1", 1)
    r.execute_command("STOCK.CONFIRM", "done", "a1")
    r.set("g:stock", 0)
    get = [("get", lambda i: ("GET", "g:stock"))]
    got = side_by_side(b, [("ours", [("stock.reserve", lambda i: ("STOCK.RESERVE", "done", f"u{i}", f"o{i}", 1))]),
                           ("get", get)])
    b.row("STOCK.RESERVE (sold out)", got["ours"], [("GET", got["get"])], "≤ 1.2× GET")
    # The spread form (docs/stock.md): shard 0 of a SKU spread over 1
    # shard (every user is its), refilled once by a transfer; then a dry
    # shard's SOLDOUT. Its floor and script run on their own fresh keys,
    # interleaved with it, like the single-slot row's.
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "clients",
                                    "python", "src"))
    from hotpath import routing
    k = routing.shard_key("sps", 1, 0)
    r.execute_command("STOCK.CREATE", k, BIG, "LEASE", LEASE, "SPREAD", 1)
    r.execute_command("STOCK.TRANSFER", k, "t", 0, BIG, "SPREAD", 1)
    r.execute_command("STOCK.APPLY", k, "t", BIG, "SPREAD", 1)
    r.execute_command("STOCK.SETTLE", k, "t", BIG, "SPREAD", 1)
    got = side_by_side(b, [("ours", [("stock.reserve", lambda i: ("STOCK.RESERVE", k, f"u{i}", f"o{i}", 1,
                                                                  "NOW", T0 + i, "SPREAD", 1))]),
                           ("floor", floor(r, "f")),
                           ("script", script("e"))])
    reserved(k.decode() if isinstance(k, bytes) else k)
    b.row("STOCK.RESERVE (a shard of a spread SKU, NOW given)", got["ours"],
          [("HSETNX+DECRBY+HINCRBY+ZADD", got["floor"]), ("seckill script", got["script"])],
          "≤ 1.5× the natives; ≤ ½ of the script")
    d = routing.shard_key("spd", 1, 0)
    r.execute_command("STOCK.CREATE", d, 0, "SPREAD", 1)
    r.execute_command("STOCK.APPLY", d, "dry", 0, "SPREAD", 1)
    got = side_by_side(b, [("ours", [("stock.reserve", lambda i: ("STOCK.RESERVE", d, f"u{i}", f"o{i}", 1,
                                                                  "SPREAD", 1))]),
                           ("get", get)])
    b.row("STOCK.RESERVE (sold out, a dry shard)", got["ours"], [("GET", got["get"])], "≤ 1.2× GET")
    b.note("RESERVE records the order (a retry gets its reply), the buyer's count (LIMIT) and a "
           "lease (unpaid units come back); the seckill script does none of that. A sold-out RESERVE "
           "reads the one String `B` and replies a 3-element array; GET replies one bulk string. "
           "Each row's sides run interleaved (10 rounds of 5,000 calls, best round; a floor's round "
           "is its natives' sum in that round), the natives on their own fresh keys writing the same "
           "lease ends. Instruction counts: python3 bench/stock_callgrind.py (docs/stock.md).")
