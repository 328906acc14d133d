"""LOCK against the native floor and the scripts users write today, in one
run: LOCK.ACQUIRE against `SET NX PX` (no owner check on release, no
reentrance, no fencing token) and Redisson's reentrant lock script (no
fencing token); LOCK.RELEASE against `DEL` and the compare-and-delete
script of the SET NX recipe. The Lua twins are measured too.

Each figure is the best 10,000-call chunk (common.Bench.measure)."""

N = 50_000

# Redisson's RLock acquisition, in its usual form: a Hash owner -> count
# with a PEXPIRE; nil when acquired, the TTL left when held by others.
REDISSON_LOCK = """
if redis.call('exists', KEYS[1]) == 0 or redis.call('hexists', KEYS[1], ARGV[2]) == 1 then
  redis.call('hincrby', KEYS[1], ARGV[2], 1)
  redis.call('pexpire', KEYS[1], ARGV[1])
  return nil
end
return redis.call('pttl', KEYS[1])
"""

# The release of the single-instance SET NX recipe.
COMPARE_AND_DELETE = """
if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end
return 0
"""


def bench(b):
    r = b.r
    rl, cad = r.script_load(REDISSON_LOCK), r.script_load(COMPARE_AND_DELETE)
    acq, rel = b.lua("lock/acquire.lua"), b.lua("lock/release.lua")
    keys = range(N)
    ours = b.measure("lock.acquire", (("LOCK.ACQUIRE", f"lk:{i}", "worker-17", 30000) for i in keys))
    native = b.measure("set", (("SET", f"sn:{i}", "worker-17", "NX", "PX", 30000) for i in keys))
    usual = b.measure("evalsha", (("EVALSHA", rl, 1, f"rl:{i}", 30000, "worker-17") for i in keys))
    twin = b.measure("evalsha", (("EVALSHA", acq, 1, f"tw:{i}", "worker-17", 30000) for i in keys))
    b.row("LOCK.ACQUIRE (free lock)", ours,
          [("SET NX PX", native), ("Redisson lock script", usual), ("Lua twin", twin)],
          "≤ 1.5× SET NX PX; ≤ ½ of the script")
    ours = b.measure("lock.release", (("LOCK.RELEASE", f"lk:{i}", "worker-17") for i in keys))
    native = b.measure("del", (("DEL", f"sn:{i}") for i in keys))
    pipe = r.pipeline(transaction=False)
    for i in keys:
        pipe.execute_command("SET", f"sn:{i}", "worker-17", "NX", "PX", 30000)
    pipe.execute()
    usual = b.measure("evalsha", (("EVALSHA", cad, 1, f"sn:{i}", "worker-17") for i in keys))
    twin = b.measure("evalsha", (("EVALSHA", rel, 1, f"tw:{i}", "worker-17") for i in keys))
    b.row("LOCK.RELEASE", ours,
          [("DEL", native), ("compare-and-delete script", usual), ("Lua twin", twin)],
          "≤ 1.5× DEL; ≤ ½ of the script")
    # Lock names are usually reused: the key (and its fence) is still there.
    ours = b.measure("lock.acquire", (("LOCK.ACQUIRE", f"lk:{i}", "worker-18", 30000) for i in keys))
    native = b.measure("set", (("SET", f"sn:{i}", "worker-18", "NX", "PX", 30000) for i in keys))
    b.row("LOCK.ACQUIRE (released lock, fence kept)", ours, [("SET NX PX (free key)", native)], "")
    ours = b.measure("lock.acquire", (("LOCK.ACQUIRE", f"lk:{i}", "worker-19", 30000) for i in keys))
    native = b.measure("set", (("SET", f"sn:{i}", "worker-19", "NX", "PX", 30000) for i in keys))
    usual = b.measure("evalsha", (("EVALSHA", rl, 1, f"rl:{i}", 30000, "worker-19") for i in keys))
    b.row("LOCK.ACQUIRE (held by another: refused)", ours,
          [("SET NX PX, refused", native), ("Redisson lock script", usual)], "")
    b.note("LOCK.ACQUIRE also returns a fencing token, is reentrant and keeps the token counter; "
           "SET NX PX does none of that. The module's own RM_Replicate is inside its measured time; "
           "a native command's propagation is not (INFO commandstats times the command only): "
           "bench/lockdq_callgrind.py counts both inside call().")
