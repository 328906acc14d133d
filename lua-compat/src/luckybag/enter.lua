-- LUCKYBAG.ENTER key user [SPREAD n]
-- LUCKYBAG.ENTER B user -> 1 if the kept score was restored (RESTORE YES)
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
local raw = read_meta(meta, {'shards', 'state', 'restore'})
local shards, e1 = scope(meta, raw)
if e1 then return e1 end
local cand, stored = B .. ':cand:' .. shard_of(user, shards), B .. ':stored'
if not typed(cand, 'zset') then return redis.error_reply(WRONGTYPE) end
if not typed(stored, 'hash') then return redis.error_reply(WRONGTYPE) end
local restore, e2 = meta_value(meta, raw, 'restore')
if e2 then return e2 end
if not restore then return 0 end
local sc = redis.call('ZSCORE', cand, user)
if not sc or tonumber(sc) ~= -1 then return 0 end
local kept = redis.call('HGET', stored, user)
if not kept then return 0 end
-- As LEAVE writes it: a pool score in [0, 1) or -2, six decimals.
local v = nil
if string.match(kept, '^%-?%d+%.%d%d%d%d%d%d$') then v = tonumber(kept) end
if not v or not (v == -2 or (v >= 0 and v < 1)) then return corrupt(stored, user) end
redis.call('ZADD', cand, 'XX', kept, user)
redis.call('HDEL', stored, user)
return 1

