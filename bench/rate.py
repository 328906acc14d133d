"""RATE against the script users write today, its own Lua twin, and the
fewest native commands that make the same change, all in one run on one
server; RATE.THROTTLE against redis-cell's CL.THROTTLE loaded in the same
server.

redis-cell is not part of this repository: build it from its public source
(`cargo build --release` in a checkout of brandur/redis-cell) and point
REDIS_CELL_SO at the library (e.g. .../target/release/libredis_cell.so).
Without it the CL.THROTTLE row is skipped with a note.

Each figure is the best 10,000-call chunk (common.Bench.measure): server µs
per call from INFO commandstats. The native floor of an algorithm is the
sum of its native commands, each measured on its own over the same key
pattern.
"""
import os
import random
import subprocess
import time

import redis

import common

N = 100_000
KEYS = 10_000  # ~10 requests per limiter: new keys and existing state mixed
CELL = os.environ.get("REDIS_CELL_SO", "")

# The scripts users write today, one per algorithm: short, float-based,
# reading the clock with TIME, no validation, written the usual way.
SEED = {
    # A GCRA in the style of go-redis/redis_rate: the arrival time as float
    # seconds in a String, SET with PX.
    "GCRA": """
local rate, period, burst = tonumber(ARGV[1]), tonumber(ARGV[2]) / 1000, tonumber(ARGV[1])
local t = redis.call('TIME')
local now = (t[1] - 1700000000) + t[2] / 1000000
local interval = period / rate
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local new_tat = tat + interval
if new_tat - now > burst * interval then
  return {0, rate, 0, math.ceil((new_tat - now - burst * interval) * 1000), math.ceil((tat - now) * 1000)}
end
redis.call('SET', KEYS[1], new_tat, 'PX', math.ceil((new_tat - now) * 1000))
return {1, rate, math.floor((burst * interval - (new_tat - now)) / interval), -1, math.ceil((new_tat - now) * 1000)}
""",
    # A fixed window: INCR, PEXPIRE on the first request of a window.
    "FIXED": """
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
local limit = tonumber(ARGV[1])
if n > limit then return {0, limit, 0, redis.call('PTTL', KEYS[1]), 0} end
return {1, limit, limit - n, -1, 0}
""",
    # A sliding window: this window's and the previous window's counters in
    # a Hash, weighted by the time left of the previous one.
    "SLIDING": """
local limit, period = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
local w = now - now % period
local v = redis.call('HMGET', KEYS[1], tostring(w), tostring(w - period))
local cur, prev = tonumber(v[1]) or 0, tonumber(v[2]) or 0
local est = prev * (period - (now - w)) / period + cur
if est + 1 > limit then return {0, limit, 0, 1, 0} end
redis.call('HINCRBY', KEYS[1], tostring(w), 1)
redis.call('PEXPIRE', KEYS[1], 2 * period)
return {1, limit, math.floor(limit - est - 1), -1, 0}
""",
    # A sliding log: drop old entries, count, add, expire.
    "LOG": """
local limit, period = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000000 + t[2]
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - period * 1000)
local n = redis.call('ZCARD', KEYS[1])
if n >= limit then return {0, limit, 0, 1, 0} end
redis.call('ZADD', KEYS[1], now, now .. '-' .. n)
redis.call('PEXPIRE', KEYS[1], period)
return {1, limit, limit - n - 1, -1, period}
""",
    # A token bucket: tokens and time in a Hash, refilled with floats.
    "BUCKET": """
local rate, period = tonumber(ARGV[1]), tonumber(ARGV[2])
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
local v = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local tokens, ts = tonumber(v[1]) or rate, tonumber(v[2]) or now
tokens = math.min(rate, tokens + (now - ts) * rate / period)
if tokens < 1 then return {0, rate, 0, math.ceil((1 - tokens) * period / rate), 0} end
tokens = tokens - 1
redis.call('HSET', KEYS[1], 'tokens', tokens, 'ts', now)
redis.call('PEXPIRE', KEYS[1], math.ceil((rate - tokens) * period / rate))
return {1, rate, math.floor(tokens), -1, 0}
""",
}


class CellServer(common.Server):
    """A redis-server with the module and redis-cell loaded."""

    def __init__(self, cell):
        self.dir = __import__("tempfile").mkdtemp(prefix="hotpath-bench-")
        self.port = common.free_port()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1",
             "--save", "", "--appendonly", "no", "--dir", self.dir,
             "--loadmodule", common.SO, "--loadmodule", cell],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.r = redis.Redis(port=self.port, protocol=2)
        for _ in range(200):
            try:
                self.r.ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError(f"redis-server did not start with {cell}")


def best(b, command, calls):
    return b.measure(command, calls)


def run(b, cell_loaded):
    rng = random.Random(7)
    keys = [f"{{u{rng.randrange(KEYS)}}}" for _ in range(N)]
    check = b.lua("rate/check.lua")
    seeds = {a: b.r.script_load(src) for a, src in SEED.items()}
    floor_label = {"LOG": "natives ZCOUNT + ZADD + PEXPIREAT"}
    ratios = {}
    for algo in ["GCRA", "FIXED", "SLIDING", "LOG", "BUCKET"]:
        opts = ("ALGO", algo)
        ours = best(b, "rate.check", (("RATE.CHECK", f"m:{algo}:{k}", 20, 60000) + opts for k in keys))
        seed = best(b, "evalsha", (("EVALSHA", seeds[algo], 1, f"s:{algo}:{k}", 20, 60000) for k in keys))
        twin = best(b, "evalsha", (("EVALSHA", check, 1, f"l:{algo}:{k}", 20, 60000) + opts for k in keys))
        # The natives write the same state shape on their own keys.
        if algo == "LOG":
            now = int(time.time() * 1e6)
            zc = best(b, "zcount", (("ZCOUNT", f"n:{algo}:{k}", f"({now - 60_000_000}", "+inf") for k in keys))
            za = best(b, "zadd", (("ZADD", f"n:{algo}:{k}", now + i, f"{now + i:016d}-0")
                                  for i, k in enumerate(keys)))
            pe = best(b, "pexpireat", (("PEXPIREAT", f"n:{algo}:{k}", now // 1000 + 60_000 + i)
                                       for i, k in enumerate(keys)))
            floor = zc + za + pe
            strict = None
        else:
            value = {"GCRA": "gcra:1764720060000:12000:20000", "FIXED": "fixed:1764720000000:7",
                     "SLIDING": "sliding:1764720000000:7:3", "BUCKET": "bucket:13:20000:1764720000000123"}[algo]
            sp = best(b, "set", (("SET", f"n:{algo}:{k}", value, "PX", 60000) for k in keys))
            g = best(b, "get", (("GET", f"n:{algo}:{k}") for k in keys))
            floor = g + sp
            # FIXED and SLIDING move their expiry once per window: within a
            # window the change is the value alone.
            strict = None
            if algo in ("FIXED", "SLIDING"):
                strict = g + best(b, "set", (("SET", f"n:{algo}:{k}", value, "KEEPTTL") for k in keys))
        others = [("seed script", seed), ("Lua twin", twin),
                  (floor_label.get(algo, "natives GET + SET PX"), floor)]
        if strict:
            others.append(("GET + SET KEEPTTL", strict))
        b.row(f"RATE.CHECK ALGO {algo}", ours, others, "≤ 1.5× natives (aim 1.2×)")
        ratios[algo] = ours / floor
    # Refused requests (a hot key over its limit) read and reply, write nothing.
    ours = best(b, "rate.check", (("RATE.CHECK", "hot", 10, 3600000) for _ in range(N)))
    lua = best(b, "evalsha", (("EVALSHA", check, 1, "lhot", 10, 3600000) for _ in range(N)))
    g = best(b, "get", (("GET", "hot") for _ in range(N)))
    b.row("RATE.CHECK GCRA, refused (hot key)", ours, [("Lua twin", lua), ("native GET", g)], "")
    multi = b.lua("rate/multi.lua")
    rules = ("LIMITS", 10, 1000, 100, 60000, 1000, 86400000)
    ours = best(b, "rate.multi", (("RATE.MULTI", 3, f"{k}:s", f"{k}:m", f"{k}:d") + rules for k in keys))
    lua = best(b, "evalsha", (("EVALSHA", multi, 3, f"l{k}:s", f"l{k}:m", f"l{k}:d") + rules for k in keys))
    three = best(b, "rate.check", (("RATE.CHECK", f"c{k}:{sfx}", lim, per)
                                   for k in keys
                                   for sfx, lim, per in (("s", 10, 1000), ("m", 100, 60000), ("d", 1000, 86400000))))
    b.row("RATE.MULTI, 3 rules", ours, [("3 × RATE.CHECK", 3 * three), ("Lua twin", lua)], "< 3 × RATE.CHECK")
    throttle = b.lua("rate/throttle.lua")
    rkeys = [f"t{rng.randrange(N)}" for _ in range(N)]
    ours = best(b, "rate.throttle", (("RATE.THROTTLE", f"r{k}", 15, 30, 60) for k in rkeys))
    lua = best(b, "evalsha", (("EVALSHA", throttle, 1, f"l{k}", 15, 30, 60) for k in rkeys))
    g = best(b, "get", (("GET", f"n{k}") for k in rkeys))
    sp = best(b, "set", (("SET", f"n{k}", "gcra:1764720000000:0:30000", "PX", 2000) for k in rkeys))
    others = [("Lua twin", lua), ("natives GET + SET PX", g + sp)]
    if cell_loaded:
        cell = best(b, "cl.throttle", (("CL.THROTTLE", f"c{k}", 15, 30, 60) for k in rkeys))
        others.insert(0, ("redis-cell CL.THROTTLE", cell))
        b.note(f"RATE.THROTTLE ÷ CL.THROTTLE = {ours / cell:.2f} (target ≤ 0.8), same server, same run.")
    else:
        b.note("redis-cell not loaded: set REDIS_CELL_SO to a built libredis_cell.so "
               "(cargo build --release in a checkout of brandur/redis-cell) for the CL.THROTTLE row.")
    b.row("RATE.THROTTLE (100k random keys)", ours, others, "≤ 0.8× CL.THROTTLE")
    b.note("module ÷ native floor: " + ", ".join(f"{a} {r:.2f}" for a, r in ratios.items())
           + ". The floors are the fewest native commands making the same change, each measured on its own: "
             "GET + SET PX for the String states, ZCOUNT + ZADD + PEXPIREAT for LOG; FIXED and SLIDING, whose "
             "expiry moves once per window, also against GET + SET KEEPTTL (see docs/rate.md).")


def bench(b):
    if CELL and os.path.exists(CELL):
        server = CellServer(CELL)
        try:
            inner = common.Bench(server)
            run(inner, True)
        finally:
            server.stop()
        b.rows.extend(inner.rows)
        b.notes.extend(inner.notes)
    else:
        if CELL:
            b.note(f"REDIS_CELL_SO={CELL} does not exist: the CL.THROTTLE row is skipped.")
        run(b, False)
