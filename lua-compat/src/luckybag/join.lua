-- LUCKYBAG.JOIN key user [TASK DONE|PENDING] [SPREAD n] [IDEM token]
-- LUCKYBAG.JOIN B user [TASK DONE|PENDING] -> {new, pooled, participants}
--@ keys 1
--@ idem -3

local B = KEYS[1]
if #ARGV < 1 then return arity('luckybag.join') end
local user = ARGV[1]
local pending, declared = false, nil
local i = 2
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  if kw ~= 'TASK' and kw ~= 'SPREAD' then return syntax() end
  local v = ARGV[i + 1]
  if v == nil then return syntax() end
  if kw == 'SPREAD' then
    local n, se = spread().spread_count('luckybag', v)
    if se then return se end
    declared = n
  else
    v = string.upper(v)
    if v == 'DONE' then pending = false elseif v == 'PENDING' then pending = true else return syntax() end
  end
  i = i + 2
end
if user == '' then return empty_user() end
local meta, e = find_meta(B)
if e then return e end
local _, se = bag_spread_of(B, declared, meta, user)
if se then return se end
if not meta then return ferr('no such bag') end
local raw = read_meta(meta, {'shards', 'state', 'poolcap', 'seed'})
local shards, e1 = scope(meta, raw)
if e1 then return e1 end
-- Every type check before any other value check.
local cand, count = B .. ':cand:' .. shard_of(user, shards), B .. ':count'
local ok, cand_existed = typed(cand, 'zset')
if not ok then return redis.error_reply(WRONGTYPE) end
local ok2, count_existed = typed(count, 'string')
if not ok2 then return redis.error_reply(WRONGTYPE) end
local poolcap, e2 = meta_value(meta, raw, 'poolcap')
if e2 then return e2 end
local seed, e6 = seed_of(meta, raw.seed)
if e6 then return e6 end
local before = 0
if count_existed then
  local n, e4, text = read_count(count)
  if e4 then return e4 end
  if n == MAX_COUNT then return overflow(count) end
  before = n
end
-- The user is looked up before its score is computed: a duplicate needs
-- no HMAC (nor HIGHSCORE or latepooled) and writes nothing.
local sc = redis.call('ZSCORE', cand, user)
if sc then return {0, (tonumber(sc) ~= -3) and 1 or 0, before} end
local participants = before + 1
local score = -2
if not pending then score = keyed_score(seed, user) end
-- HIGHSCORE matters (and is read) only past the pool cap.
local pooled = participants <= poolcap
if not pooled then
  local highscore, e3 = meta_value(meta, read_meta(meta, {'highscore'}), 'highscore')
  if e3 then return e3 end
  pooled = score >= highscore
end
-- A participant past the cap who entered the pool counts in `latepooled`.
local late = pooled and participants > poolcap
if late then
  local lraw = read_meta(meta, {'latepooled'})
  local _, e5 = meta_value(meta, lraw, 'latepooled')
  if e5 then return e5 end
  if lraw.latepooled == '9007199254740991' then return overflow(meta, 'latepooled') end
end
-- The pool is also the participant list (the user is not in it).
local kept = score
if not pooled then kept = -3 end
redis.call('ZADD', cand, 'NX', zscore_arg(kept), user)
if not cand_existed then adopt_expiry(meta, cand) end
local n = redis.call('INCR', count)
if not count_existed then adopt_expiry(meta, count) end
if late then redis.call('HINCRBY', meta, 'latepooled', 1) end
return {1, pooled and 1 or 0, n}

