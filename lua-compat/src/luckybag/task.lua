-- LUCKYBAG.TASK key user [SPREAD n]
-- LUCKYBAG.TASK B user -> 1 if a pending user now has its score
--@ keys 1

local B = KEYS[1]
if #ARGV < 1 then return arity('luckybag.task') end
local user, declared, ae = user_spread(ARGV, 'luckybag.task')
if ae then return ae end
if user == '' then return empty_user() end
local meta, e = find_meta(B)
if e then return e end
local _, se = bag_spread_of(B, declared, meta, user)
if se then return se end
if not meta then return ferr('no such bag') end
local raw = read_meta(meta, {'shards', 'state', 'seed'})
local shards, e1 = scope(meta, raw)
if e1 then return e1 end
local cand = B .. ':cand:' .. shard_of(user, shards)
if not typed(cand, 'zset') then return redis.error_reply(WRONGTYPE) end
local seed, e2 = seed_of(meta, raw.seed)
if e2 then return e2 end
local sc = redis.call('ZSCORE', cand, user)
if not sc or tonumber(sc) ~= -2 then return 0 end
redis.call('ZADD', cand, 'XX', zscore_arg(keyed_score(seed, user)), user)
return 1

