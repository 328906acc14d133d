"""IDEM against the native floor and the script users write today, in one
run: IDEM.BEGIN of a new key against `SET NX PX` (the usual in-progress
marker: no fingerprint, no fence, no stored result) and a Powertools-style
claim script (a Hash with status, fingerprint and expiry, read then
written, no fence); IDEM.BEGIN of a done key (the retry that gets the
stored result) against `HMGET`; IDEM.COMPLETE against `HSET` + `PEXPIRE`
in one script. The Lua twins are measured too.

Each figure is the best 10,000-call chunk (common.Bench.measure)."""

N = 50_000

# The claim most idempotency layers over Redis run: read the record, take
# it when absent or expired, else report it.
CLAIM = """
local v = redis.call('hmget', KEYS[1], 'status', 'fp', 'expiry', 'result')
if v[1] == false or (v[1] == 'INPROGRESS' and tonumber(v[3]) < tonumber(ARGV[3])) then
  redis.call('hset', KEYS[1], 'status', 'INPROGRESS', 'fp', ARGV[1], 'expiry', ARGV[3] + ARGV[2])
  redis.call('pexpire', KEYS[1], 86400000)
  return {'NEW'}
end
if v[2] ~= ARGV[1] then return {'MISMATCH'} end
return {v[1], v[4]}
"""

# The completion of that layer: store the result and the TTL.
SAVE = """
redis.call('hset', KEYS[1], 'status', 'COMPLETED', 'result', ARGV[1])
redis.call('pexpire', KEYS[1], 86400000)
return 1
"""

NOW = 1893456000000  # 2030-01-01: records expire a TTL after NOW.


def bench(b):
    r = b.r
    claim, save = r.script_load(CLAIM), r.script_load(SAVE)
    tb, tc = b.lua("idem/begin.lua"), b.lua("idem/complete.lua")
    keys = range(N)
    ours = b.measure("idem.begin", (("IDEM.BEGIN", f"ik:{i}", "sha-a", 30000, "NOW", NOW)
                                    for i in keys))
    native = b.measure("set", (("SET", f"sn:{i}", "1", "NX", "PX", 30000) for i in keys))
    usual = b.measure("evalsha", (("EVALSHA", claim, 1, f"cl:{i}", "sha-a", 30000, NOW)
                                  for i in keys))
    twin = b.measure("evalsha", (("EVALSHA", tb, 1, f"tw:{i}", "sha-a", 30000, "NOW", NOW)
                                 for i in keys))
    b.row("IDEM.BEGIN (new key)", ours,
          [("SET NX PX", native), ("claim script", usual), ("Lua twin", twin)],
          "≤ ½ of the claim script")
    res = '200:{"id":1}'
    ours = b.measure("idem.complete", (("IDEM.COMPLETE", f"ik:{i}", NOW, res, "NOW", NOW)
                                       for i in keys))
    usual = b.measure("evalsha", (("EVALSHA", save, 1, f"cl:{i}", res) for i in keys))
    twin = b.measure("evalsha", (("EVALSHA", tc, 1, f"tw:{i}", NOW, res, "NOW", NOW)
                                 for i in keys))
    b.row("IDEM.COMPLETE", ours, [("save script", usual), ("Lua twin", twin)],
          "≤ the save script")
    ours = b.measure("idem.begin", (("IDEM.BEGIN", f"ik:{i}", "sha-a", 30000, "NOW", NOW)
                                    for i in keys))
    native = b.measure("hmget", (("HMGET", f"cl:{i}", "status", "fp", "expiry", "result")
                                 for i in keys))
    usual = b.measure("evalsha", (("EVALSHA", claim, 1, f"cl:{i}", "sha-a", 30000, NOW)
                                  for i in keys))
    b.row("IDEM.BEGIN (done: the stored result replayed)", ours,
          [("HMGET", native), ("claim script", usual)], "")
    b.note("IDEM.BEGIN also checks the fingerprint, issues a fence and replicates the instants it "
           "used; SET NX PX does none of that. The module's own RM_Replicate is inside its "
           "measured time; a native command's propagation is not.")
