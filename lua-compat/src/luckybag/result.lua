-- LUCKYBAG.RESULT key user [SPREAD n]
-- LUCKYBAG.RESULT B user -> PENDING, WON, LOST or ABSENT
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
if #ARGV < 1 then return arity('luckybag.result') end
local user, declared, ae = user_spread(ARGV, 'luckybag.result')
if ae then return ae end
if user == '' then return empty_user() end
local meta, e = find_meta(B)
if e then return e end
local _, se = bag_spread_of(B, declared, meta, user)
if se then return se end
if not meta then return {ok = 'ABSENT'} end
local raw = read_meta(meta, {'shards', 'state'})
local shards, e1 = meta_value(meta, raw, 'shards')
if e1 then return e1 end
local cand, winners = B .. ':cand:' .. shard_of(user, shards), B .. ':winners'
if not typed(cand, 'zset') then return redis.error_reply(WRONGTYPE) end
if not typed(winners, 'zset') then return redis.error_reply(WRONGTYPE) end
local state, e2 = meta_value(meta, raw, 'state')
if e2 then return e2 end
-- A frozen shard of a spread bag is not drawn yet.
local drawn = state == 'drawn'
-- Every participant has an entry in its shard's pool (capped ones too).
if not redis.call('ZSCORE', cand, user) then return {ok = 'ABSENT'} end
if not drawn then return {ok = 'PENDING'} end
if redis.call('ZSCORE', winners, user) then return {ok = 'WON'} end
return {ok = 'LOST'}

