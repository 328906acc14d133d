-- RATE.THROTTLE B max-burst count period-s [quantity] [NOW unix-ms]
-- KEYS[1] = B; ARGV = max-burst count period-s [quantity] [NOW unix-ms].
-- redis-cell's CL.THROTTLE reply: [limited, limit, remaining,
-- retry-after-s, reset-after-s]; state shared with RATE.CHECK's GCRA.
local NOTINT = 'ERR value is not an integer or out of range'
local SYNTAX = 'ERR syntax error'
local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
local MAX_COUNT = 1000000000000
local MAX_NOW = 10000000000000
local MAX_PRODUCT = 4503599627370496 -- 2^52

local function toint(s, lo, hi)
  if type(s) ~= 'string' or #s == 0 or #s > 20 then return nil end
  if s ~= '0' and not string.match(s, '^%-?[1-9]%d*$') then return nil end
  local n = tonumber(s)
  if n == nil or n < lo or n > hi then return nil end
  return n
end
local function nonneg(s)
  if type(s) ~= 'string' or #s == 0 or #s > 18 then return nil end
  if s ~= '0' and not string.match(s, '^[1-9]%d*$') then return nil end
  return tonumber(s)
end
local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end
local function cdiv(a, b) return idiv(a + b - 1, b) end
local function fmt(n) return string.format('%d', n) end

local key = KEYS[1]
if #ARGV < 3 then
  return redis.error_reply("ERR wrong number of arguments for 'rate.throttle' command")
end
local max_burst = toint(ARGV[1], 0, MAX_COUNT - 1)
if not max_burst then return redis.error_reply(NOTINT) end
local per = toint(ARGV[2], 1, MAX_COUNT)
if not per then return redis.error_reply(NOTINT) end
local period_s = toint(ARGV[3], 1, 1000000000)
if not period_s then return redis.error_reply(NOTINT) end
local qty, now = 1, nil
local i = 4
if i <= #ARGV then
  if string.upper(ARGV[i]) == 'NOW' then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    now = toint(ARGV[i + 1], 0, MAX_NOW)
    if not now then return redis.error_reply(NOTINT) end
    i = i + 2
  else
    qty = toint(ARGV[i], 0, MAX_COUNT)
    if not qty then return redis.error_reply(NOTINT) end
    i = i + 1
    if i <= #ARGV then
      if string.upper(ARGV[i]) ~= 'NOW' then return redis.error_reply(SYNTAX) end
      if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
      now = toint(ARGV[i + 1], 0, MAX_NOW)
      if not now then return redis.error_reply(NOTINT) end
      i = i + 2
    end
  end
end
if i <= #ARGV then return redis.error_reply(SYNTAX) end
local L, P, B = per, period_s * 1000, max_burst + 1
if B * P > MAX_PRODUCT then
  return redis.error_reply('ERR rate: limit or burst * period-ms exceeds 2^52')
end
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local ktype = redis.call('TYPE', key).ok
local debt = 0
if ktype == 'string' then
  local v = redis.call('GET', key)
  local a, b, c = string.match(v, '^gcra:(%d+):(%d+):(%d+)$')
  local ms, num, den
  if a then ms, num, den = nonneg(a), nonneg(b), nonneg(c) end
  if not (ms and num and den and den > 0 and num < den) then
    local x, y = string.match(v, '^fixed:(%d+):(%d+)$')
    if x and nonneg(x) and nonneg(y) then
      return redis.error_reply('ERR rate: key holds a fixed limiter')
    end
    return redis.error_reply(WRONGTYPE)
  end
  if den ~= L then
    if num > 0 then ms = ms + 1 end
    num = 0
  end
  debt = (ms - now) * L + num
  if debt < 0 then debt = 0 end
elseif ktype ~= 'none' then
  return redis.error_reply(WRONGTYPE)
end
local capu = B * P
local possible = qty <= B
local want = possible and qty * P or 0
local allowed = possible and debt + want <= capu
local after = allowed and debt + want or debt
local remaining = (capu - after < 0) and 0 or idiv(capu - after, P)
local function secs(units) return cdiv(idiv(units, L), 1000) end
local retry = -1
if not allowed and possible then retry = secs(debt + want - capu) end
if allowed and qty > 0 then
  local q = idiv(after, L)
  redis.call('SET', key, 'gcra:' .. fmt(now + q) .. ':' .. fmt(after - q * L) .. ':' .. fmt(L),
    'PX', math.max(cdiv(after, L), 1))
end
return {allowed and 0 or 1, B, remaining, retry, secs(after)}
