-- LUCKYBAG.CREATE B WINNERS n [SHARDS s] [POOLCAP c] [HIGHSCORE h] [RESTORE YES|NO] [TTL seconds]
-- Shared helpers (identical in every LUCKYBAG script).
local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
local function ferr(msg) return redis.error_reply('ERR luckybag: ' .. msg) end
local function arity(cmd) return redis.error_reply("ERR wrong number of arguments for '" .. cmd .. "' command") end
local function syntax() return redis.error_reply('ERR syntax error') end
local function notint() return redis.error_reply('ERR value is not an integer or out of range') end

-- Byte-wise a > b (Lua's own string order follows the locale).
local function bytes_gt(a, b)
  local la, lb = #a, #b
  for i = 1, math.min(la, lb) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return la > lb
end

-- An integer as Redis reads one: optional '-', digits, no leading zero,
-- within the signed 64-bit range. Returns the number, or nil.
local function toint(s)
  if s == '0' then return 0 end
  if not string.match(s, '^%-?[1-9]%d*$') then return nil end
  local neg = string.sub(s, 1, 1) == '-'
  local digits = neg and string.sub(s, 2) or s
  if #digits > 19 then return nil end
  if #digits == 19 then
    local lim = neg and '9223372036854775808' or '9223372036854775807'
    if bytes_gt(digits, lim) then return nil end
  end
  return tonumber(s)
end

-- HIGHSCORE: plain decimal digits with an optional fraction, at most 32 bytes.
local function parse_highscore(s)
  if #s == 0 or #s > 32 then return nil end
  if not (string.match(s, '^%d+$') or string.match(s, '^%d*%.%d+$')) then return nil end
  return tonumber(s)
end

local function valid_shards(n)
  if not n or n < 1 or n > 1024 then return false end
  while n > 1 do
    if n % 2 ~= 0 then return false end
    n = n / 2
  end
  return true
end

-- user & (shards - 1) for integer ids, else the low bits of FNV-1a 32
-- (computed modulo 1024: shards divides 1024, and the low bits of FNV-1a
-- depend only on the low bits of each step).
local function shard_of(user, shards)
  if toint(user) then
    local neg = string.sub(user, 1, 1) == '-'
    local digits = neg and string.sub(user, 2) or user
    local low = tonumber(string.sub(digits, -10)) % 1024
    if neg then low = (1024 - low) % 1024 end
    return low % shards
  end
  local h = 453 -- 2166136261 % 1024
  for i = 1, #user do
    h = (bit.bxor(h, string.byte(user, i)) * 403) % 1024 -- 16777619 % 1024
  end
  return h % shards
end

-- Returns ok, exists for a key that must hold `want` when present.
local function typed(key, want)
  local t = redis.call('TYPE', key).ok
  if t == 'none' then return true, false end
  return t == want, true
end

-- Returns the bag's rules, nil when the bag does not exist, or an error.
local function load_bag(B)
  local meta = B .. ':meta'
  local ok, exists = typed(meta, 'hash')
  if not ok then return nil, redis.error_reply(WRONGTYPE) end
  if not exists then return nil end
  local v = redis.call('HMGET', meta, 'winners', 'shards', 'poolcap', 'highscore', 'restore', 'state')
  local corrupt = ferr('bag metadata is corrupt')
  for i = 1, 6 do if not v[i] then return nil, corrupt end end
  local bag = {
    winners = toint(v[1]), shards = toint(v[2]), poolcap = toint(v[3]),
    highscore = parse_highscore(v[4]), restore = v[5], state = v[6],
  }
  if not bag.winners or bag.winners < 1 or bag.winners > 100000 then return nil, corrupt end
  if not valid_shards(bag.shards) then return nil, corrupt end
  if not bag.poolcap or bag.poolcap < 0 then return nil, corrupt end
  if not bag.highscore or bag.highscore > 1 then return nil, corrupt end
  if bag.restore ~= 'yes' and bag.restore ~= 'no' then return nil, corrupt end
  if bag.state ~= 'open' and bag.state ~= 'drawn' then return nil, corrupt end
  bag.restore = bag.restore == 'yes'
  bag.drawn = bag.state == 'drawn'
  bag.ttl = redis.call('PTTL', meta)
  return bag
end

-- A bag that must exist and be open.
local function open_bag(B)
  local bag, e = load_bag(B)
  if e then return nil, e end
  if not bag then return nil, ferr('no such bag') end
  if bag.drawn then return nil, ferr('bag is closed') end
  return bag
end

local function adopt_ttl(key, bag)
  if bag.ttl > 0 then redis.call('PEXPIRE', key, bag.ttl) end
end

local function fmt(score) return string.format('%.6f', tonumber(score)) end
-- End of shared helpers.
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
    if n < 1 or n > 100000 then return ferr('winners must be between 1 and 100000') end
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
redis.call('HSET', meta, 'winners', winners, 'shards', shards, 'poolcap', poolcap,
  'highscore', highscore, 'restore', restore, 'state', 'open')
if ttl > 0 then redis.call('PEXPIRE', meta, ttl * 1000) end
return {ok = 'OK'}
