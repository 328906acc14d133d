-- LUCKYBAG.LEAVE key user [SPREAD n]
-- LUCKYBAG.LEAVE B user -> 1 if the user is now out of the room (-1, or -1.5 with the task pending)
--@ keys 1

local B = KEYS[1]
if #ARGV < 1 then return arity('luckybag.leave') end
local user, declared, ae = user_spread(ARGV, 'luckybag.leave')
if ae then return ae end
if user == '' then return empty_user() end
local meta, e = find_meta(B)
if e then return e end
local _, se = bag_spread_of(B, declared, meta, user)
if se then return se end
if not meta then return ferr('no such bag') end
local raw = read_meta(meta, {'shards', 'state', 'restore', 'seed'})
local shards, e1 = scope(meta, raw)
if e1 then return e1 end
local cand = B .. ':cand:' .. shard_of(user, shards)
if not typed(cand, 'zset') then return redis.error_reply(WRONGTYPE) end
-- No score is needed, but a bag without a seed could not give it back.
local _, e2 = seed_of(meta, raw.seed)
if e2 then return e2 end
local sc = redis.call('ZSCORE', cand, user)
if not sc then return 0 end
local v = tonumber(sc)
if v == -1 or v == AWAY_PENDING or v == -3 then return 0 end
local away = -1
if v == -2 then away = AWAY_PENDING end
redis.call('ZADD', cand, 'XX', away, user)
return 1
