"""The seed-style scripts users write today (SEEDS.md), the middle column
of every POLL and RANK benchmark row: the five-line Lua a team copies
before it has hotpath. They do less than the module (no rules, no window,
no expiry, no type checks), which is the point of the comparison.

POLL_SEED: KEYS = voters Set, board ZSet, audit Hash; ARGV = user,
candidate, now. SISMEMBER, SADD, ZINCRBY, HSET.

RANK_SEED: KEYS = board ZSet; ARGV = member, delta, now in seconds.
ZSCORE, ZADD of `points × 10^10 + (10^10 − 1 − now)` (earlier wins).
With delta 0 it is the ADD of the same points at a new time.

SECKILL_SEED: the flash-sale (秒杀) script of SEEDS.md, with its public
bugs fixed (a missing key reads as 0, `SISMEMBER` compared with 1):
KEYS = stock String, buyers Set, orders Stream; ARGV = user, quantity,
order. GET, SISMEMBER, DECRBY, SADD, XADD. It has no lease, no release,
no per-user quantity limit (one purchase per user) and no idempotent
order id; a sold-out call is its GET alone.
SECKILL_SEED_NO_STREAM: the same without the order message."""

POLL_SEED = """
if redis.call('SISMEMBER', KEYS[1], ARGV[1]) == 1 then return 0 end
redis.call('SADD', KEYS[1], ARGV[1])
redis.call('ZINCRBY', KEYS[2], 1, ARGV[2])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[2] .. ':' .. ARGV[3])
return 1
"""

RANK_SEED = """
local cur = redis.call('ZSCORE', KEYS[1], ARGV[1])
local pts = tonumber(ARGV[2])
if cur then pts = pts + math.floor(tonumber(cur) / 1e10) end
redis.call('ZADD', KEYS[1], string.format('%.0f', pts * 1e10 + (1e10 - 1 - tonumber(ARGV[3]))), ARGV[1])
return pts
"""

SECKILL_SEED = """
local left = tonumber(redis.call('GET', KEYS[1]) or '0')
if left < tonumber(ARGV[2]) then return 0 end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return -1 end
redis.call('DECRBY', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('XADD', KEYS[3], '*', 'user', ARGV[1], 'order', ARGV[3], 'qty', ARGV[2])
return 1
"""

SECKILL_SEED_NO_STREAM = """
local left = tonumber(redis.call('GET', KEYS[1]) or '0')
if left < tonumber(ARGV[2]) then return 0 end
if redis.call('SISMEMBER', KEYS[2], ARGV[1]) == 1 then return -1 end
redis.call('DECRBY', KEYS[1], ARGV[2])
redis.call('SADD', KEYS[2], ARGV[1])
return 1
"""
