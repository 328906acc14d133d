-- LUCKYBAG.CREATE key WINNERS winners [SHARDS shards] [POOLCAP poolcap] [HIGHSCORE score] [RESTORE YES|NO] [TTL seconds]
-- LUCKYBAG.CREATE B WINNERS n [SHARDS s] [POOLCAP c] [HIGHSCORE h] [RESTORE YES|NO] [TTL seconds]
--@ keys 1

local B = KEYS[1]
if #ARGV < 2 then return arity('luckybag.create') end
local winners, shards, poolcap, highscore, restore, ttl = nil, '16', '700000', '0.99', 'yes', 0
local i = 1
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  local v = ARGV[i + 1]
  if kw ~= 'WINNERS' and kw ~= 'SHARDS' and kw ~= 'POOLCAP' and kw ~= 'HIGHSCORE'
      and kw ~= 'RESTORE' and kw ~= 'TTL' then
    return syntax()
  end
  if v == nil then return syntax() end
  if kw == 'WINNERS' then
    local n = toint(v)
    if not n then return notint() end
    if n < 1 or n > MAX_WINNERS then return ferr('winners must be between 1 and ' .. MAX_WINNERS) end
    winners = v
  elseif kw == 'SHARDS' then
    local n = toint(v)
    if not n then return notint() end
    if not valid_shards(n) then return ferr('shards must be a power of two up to 1024') end
    shards = v
  elseif kw == 'POOLCAP' then
    local n = toint(v)
    if not n or n < 0 then return notint() end
    poolcap = v
  elseif kw == 'HIGHSCORE' then
    local h = parse_highscore(v)
    if not h then return redis.error_reply('ERR value is not a valid float') end
    if h > 1 then return ferr('highscore must be between 0 and 1') end
    highscore = v
  elseif kw == 'RESTORE' then
    local u = string.upper(v)
    if u == 'YES' then restore = 'yes' elseif u == 'NO' then restore = 'no' else return syntax() end
  else
    local n = toint(v)
    if not n then return notint() end
    if n < 1 or n > 3153600000 then
      return redis.error_reply("ERR invalid expire time in 'luckybag.create' command")
    end
    ttl = n
  end
  i = i + 2
end
if not winners then return syntax() end
local meta = B .. ':meta'
local ok, exists = typed(meta, 'hash')
if not ok then return redis.error_reply(WRONGTYPE) end
if exists then return ferr('bag already exists') end
-- Keys left over from an earlier bag of the same name would be inherited.
for _, s in ipairs({'count', 'stored', 'winners'}) do
  if redis.call('EXISTS', B .. ':' .. s) == 1 then return ferr('bag already exists') end
end
for s = 0, tonumber(shards) - 1 do
  if redis.call('EXISTS', B .. ':cand:' .. s) == 1 then return ferr('bag already exists') end
end
redis.call('HSET', meta, 'shards', shards, 'state', 'open', 'poolcap', poolcap,
  'highscore', highscore, 'restore', restore, 'winners', winners, 'latepooled', '0')
if ttl > 0 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('PEXPIREAT', meta, now + ttl * 1000)
end
return {ok = 'OK'}

