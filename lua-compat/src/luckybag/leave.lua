-- LUCKYBAG.LEAVE key user [SPREAD n]
-- LUCKYBAG.LEAVE B user -> 1 if the user's score was kept and set to -1
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
local raw = read_meta(meta, {'shards', 'state', 'restore'})
local shards, e1 = scope(meta, raw)
if e1 then return e1 end
local cand, stored = B .. ':cand:' .. shard_of(user, shards), B .. ':stored'
if not typed(cand, 'zset') then return redis.error_reply(WRONGTYPE) end
local ok, stored_existed = typed(stored, 'hash')
if not ok then return redis.error_reply(WRONGTYPE) end
local restore, e2 = meta_value(meta, raw, 'restore')
if e2 then return e2 end
local sc = redis.call('ZSCORE', cand, user)
if not sc or tonumber(sc) == -1 or tonumber(sc) == -3 then return 0 end
if restore then
  redis.call('HSET', stored, user, score_text(sc))
  if not stored_existed then adopt_expiry(meta, stored) end
end
redis.call('ZADD', cand, 'XX', -1, user)
return 1

