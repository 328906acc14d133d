-- LUCKYBAG.ENTER key user [SPREAD n]
-- LUCKYBAG.ENTER B user -> 1 if the user's score is back (RESTORE YES)
--@ keys 1

local B = KEYS[1]
if #ARGV < 1 then return arity('luckybag.enter') end
local user, declared, ae = user_spread(ARGV, 'luckybag.enter')
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
local restore, e2 = meta_value(meta, raw, 'restore')
if e2 then return e2 end
local seed, e3 = seed_of(meta, raw.seed)
if e3 then return e3 end
if not restore then return 0 end
local sc = redis.call('ZSCORE', cand, user)
if not sc then return 0 end
-- The score the user had: its keyed score, computed again (or -2).
local v = tonumber(sc)
local back = nil
if v == -1 then back = zscore_arg(keyed_score(seed, user)) elseif v == AWAY_PENDING then back = -2 end
if not back then return 0 end
redis.call('ZADD', cand, 'XX', back, user)
return 1
