"""DELAYQ against the native floor and the scripts users write today, in one
run: ADD against HSETNX + ZADD and an add-once script; POLL against the
plain ZSet consume (ZRANGEBYSCORE + ZREM, no lease: a consumer that dies
loses the job) and the usual Lua consume script; ACK against ZREM + HDEL.
The Lua twins are measured too.

Jobs are due in a known order (AT with increasing instants in the past),
so the i-th poll delivers job i (added i-th, generation i + 1) with
receipt (i + 1) x 10^6 + 1 and the acks can be pipelined. Each figure is the best 10,000-call chunk."""

N = 50_000
T = 1764720000000

# The consume script of a plain delayed ZSet (member = job): take the due
# ones out in one step.
ZSET_CONSUME = """
local due = redis.call('zrangebyscore', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, ARGV[2])
for _, m in ipairs(due) do redis.call('zrem', KEYS[1], m) end
return due
"""

# The usual consume script of a queue with a visibility timeout (what a
# reliable delay queue writes by hand): the first due job is leased by
# moving its score to now + lease, its attempts are counted, its payload
# read. KEYS = due, attempts, payloads; ARGV = now, lease.
LEASE_CONSUME = """
local due = redis.call('zrangebyscore', KEYS[1], '-inf', ARGV[1], 'LIMIT', 0, 1)
local out = {}
for _, id in ipairs(due) do
  redis.call('zadd', KEYS[1], string.format('%d', ARGV[1] + ARGV[2]), id)
  local n = redis.call('hincrby', KEYS[2], id, 1)
  out[#out + 1] = id
  out[#out + 1] = redis.call('hget', KEYS[3], id)
  out[#out + 1] = n
end
return out
"""

# An idempotent add: the job record once, then its due time.
ADD_ONCE = """
if redis.call('hsetnx', KEYS[1], ARGV[1], ARGV[2]) == 1 then
  redis.call('zadd', KEYS[2], ARGV[3], ARGV[1])
  return 1
end
return 0
"""


def bench(b):
    r = b.r
    consume, add_once = r.script_load(ZSET_CONSUME), r.script_load(ADD_ONCE)
    lease_consume = r.script_load(LEASE_CONSUME)
    t_add, t_poll, t_ack = b.lua("delayq/add.lua"), b.lua("delayq/poll.lua"), b.lua("delayq/ack.lua")
    jobs = range(N)
    payload = '{"order":12345,"action":"cancel-if-unpaid"}'
    ours = b.measure("delayq.add", (("DELAYQ.ADD", "q{1}", f"job{i}", payload, "AT", T + i) for i in jobs))
    hsetnx = b.measure("hsetnx", (("HSETNX", "n{1}:jobs", f"job{i}", payload) for i in jobs))
    zadd = b.measure("zadd", (("ZADD", "n{1}:due", T + i, f"job{i}") for i in jobs))
    usual = b.measure("evalsha", (("EVALSHA", add_once, 2, "u{1}:jobs", "u{1}:due", f"job{i}", payload, T + i)
                                  for i in jobs))
    twin = b.measure("evalsha", (("EVALSHA", t_add, 1, "t{1}", f"job{i}", payload, "AT", T + i) for i in jobs))
    b.row("DELAYQ.ADD", ours, [("HSETNX+ZADD", hsetnx + zadd), ("add-once script", usual), ("Lua twin", twin)],
          "")
    ours = b.measure("delayq.poll", (("DELAYQ.POLL", "q{1}", 60000) for _ in jobs))
    pipe = r.pipeline(transaction=False)
    for i in jobs:
        pipe.execute_command("ZADD", "p{1}", T + i, f"job{i}")
        pipe.execute_command("ZADD", "c{1}", T + i, f"job{i}")
        pipe.execute_command("ZADD", "lc{1}:due", T + i, f"job{i}")
        pipe.execute_command("HSET", "lc{1}:payload", f"job{i}", payload)
    pipe.execute()
    zr = b.measure("zrangebyscore", (("ZRANGEBYSCORE", "p{1}", "-inf", T + N, "LIMIT", 0, 1) for _ in jobs))
    zrem = b.measure("zrem", (("ZREM", "p{1}", f"job{i}") for i in jobs))
    usual = b.measure("evalsha", (("EVALSHA", consume, 1, "c{1}", T + N, 1) for _ in jobs))
    leasing = b.measure("evalsha", (("EVALSHA", lease_consume, 3, "lc{1}:due", "lc{1}:n", "lc{1}:payload",
                                     T + N, 60000) for _ in jobs))
    twin = b.measure("evalsha", (("EVALSHA", t_poll, 1, "t{1}", 60000) for _ in jobs))
    b.row("DELAYQ.POLL (1 job, leased)", ours,
          [("ZRANGEBYSCORE+ZREM (no lease)", zr + zrem), ("ZSet consume script (no lease)", usual),
           ("leasing consume script", leasing), ("Lua twin", twin)], "≤ 1.5× the natives; ≤ ½ of the script")
    # Job i was added i-th (generation i + 1) and delivered once.
    ours = b.measure("delayq.ack", (("DELAYQ.ACK", "q{1}", f"job{i}", (i + 1) * 1_000_000 + 1) for i in jobs))
    zrem = b.measure("zrem", (("ZREM", "n{1}:due", f"job{i}") for i in jobs))
    hdel = b.measure("hdel", (("HDEL", "n{1}:jobs", f"job{i}") for i in jobs))
    twin = b.measure("evalsha", (("EVALSHA", t_ack, 1, "t{1}", f"job{i}", (i + 1) * 1_000_000 + 1) for i in jobs))
    b.row("DELAYQ.ACK", ours, [("ZREM+HDEL", zrem + hdel), ("Lua twin", twin)], "≤ 1.5× the natives")
    assert r.hlen("q{1}:jobs") == 0, "every ack must have removed its job"
    assert r.hlen("t{1}:jobs") == 0, "every twin ack must have removed its job"
    b.note("POLL leases the job (it comes back if the consumer dies), counts its attempt and issues a receipt; "
           "the plain ZSet consume removes the job, so a crash loses it. The natives that make POLL's whole "
           "change are ZRANGEBYSCORE+ZADD+HSET (bench/lockdq_callgrind.py counts them); the leasing "
           "consume script makes about the same change as POLL.")
