-- RATE.MULTI numkeys B1 … Bn LIMITS limit1 period1-ms … limitn periodn-ms
--            [COST n] [PEEK] [NOW unix-ms]
-- KEYS = B1 … Bn; ARGV = LIMITS limit1 period1-ms … [options…], exactly as
-- the command. GCRA rules checked together, consumed only if all allow.
local NOTINT = 'ERR value is not an integer or out of range'
local SYNTAX = 'ERR syntax error'
local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
local ARITY = "ERR wrong number of arguments for 'rate.multi' command"
local MAX_COUNT = 1000000000000
local MAX_PERIOD = 1000000000000
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

local n = #KEYS
if n + #ARGV < 4 then return redis.error_reply(ARITY) end
if n < 1 or n > 1000 then return redis.error_reply(NOTINT) end
if #ARGV < 1 or string.upper(ARGV[1]) ~= 'LIMITS' then return redis.error_reply(SYNTAX) end
-- Distinct keys in order of first appearance; each rule points at one.
local names, slot_of, rules = {}, {}, {}
for i = 1, n do
  local k = KEYS[i]
  if not slot_of[k] then
    names[#names + 1] = k
    slot_of[k] = #names
  end
end
local i = 2
for r = 1, n do
  if i > #ARGV then return redis.error_reply(ARITY) end
  local limit = toint(ARGV[i], 1, MAX_COUNT)
  if not limit then return redis.error_reply(NOTINT) end
  if i + 1 > #ARGV then return redis.error_reply(ARITY) end
  local period = toint(ARGV[i + 1], 1, MAX_PERIOD)
  if not period then return redis.error_reply(NOTINT) end
  rules[r] = {limit = limit, period = period, slot = slot_of[KEYS[r]]}
  i = i + 2
end
local cost, peek, now = 1, false, nil
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  if kw == 'COST' or kw == 'NOW' then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    local v = toint(ARGV[i + 1], 0, kw == 'COST' and MAX_COUNT or MAX_NOW)
    if not v then return redis.error_reply(NOTINT) end
    if kw == 'COST' then cost = v else now = v end
    i = i + 2
  elseif kw == 'PEEK' then
    peek = true
    i = i + 1
  else
    return redis.error_reply(SYNTAX)
  end
end
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
for _, r in ipairs(rules) do
  if r.limit * r.period > MAX_PRODUCT then
    return redis.error_reply('ERR rate: limit or burst * period-ms exceeds 2^52')
  end
end
-- States: {ms, num, den} or false.
local states = {}
for s, k in ipairs(names) do
  local t = redis.call('TYPE', k).ok
  if t == 'none' then
    states[s] = false
  elseif t ~= 'string' then
    return redis.error_reply(WRONGTYPE)
  else
    local v = redis.call('GET', k)
    local a, b, c = string.match(v, '^gcra:(%d+):(%d+):(%d+)$')
    local ms, num, den
    if a then ms, num, den = nonneg(a), nonneg(b), nonneg(c) end
    if ms and num and den and den > 0 and num < den then
      states[s] = {ms, num, den}
    else
      local x, y = string.match(v, '^fixed:(%d+):(%d+)$')
      if x and nonneg(x) and nonneg(y) then
        return redis.error_reply('ERR rate: key holds a fixed limiter')
      end
      return redis.error_reply(WRONGTYPE)
    end
  end
end

local touched = {}
local all = true
local best = nil
for _, r in ipairs(rules) do
  local L, P, B = r.limit, r.period, r.limit
  local st = states[r.slot]
  local debt = 0
  if st then
    local ms, num = st[1], st[2]
    if st[3] ~= L then
      if num > 0 then ms = ms + 1 end
      num = 0
    end
    debt = (ms - now) * L + num
    if debt < 0 then debt = 0 end
  end
  local capu = B * P
  local possible = cost <= B
  local want = possible and cost * P or 0
  local allowed = possible and debt + want <= capu
  local after = allowed and debt + want or debt
  local retry = -1
  if not allowed and possible then retry = cdiv(debt + want - capu, L) end
  local reply = {allowed and 1 or 0, L, (capu - after < 0) and 0 or idiv(capu - after, P), retry, cdiv(after, L)}
  if allowed and cost > 0 then
    local q = idiv(after, L)
    states[r.slot] = {now + q, after - q * L, L}
    touched[r.slot] = true
  end
  local tighter
  if best == nil then
    tighter = true
  elseif reply[1] == 0 and best[1] == 1 then
    tighter = true
  elseif reply[1] ~= best[1] then
    tighter = false
  elseif reply[1] == 0 then
    local function w(x) if x < 0 then return math.huge end return x end
    tighter = w(reply[4]) > w(best[4])
  else
    tighter = reply[3] < best[3]
  end
  if tighter then best = reply end
  all = all and allowed
end
if all and cost > 0 and not peek then
  for s, k in ipairs(names) do
    if touched[s] then
      local st = states[s]
      local debt = (st[1] - now) * st[3] + st[2]
      redis.call('SET', k, 'gcra:' .. fmt(st[1]) .. ':' .. fmt(st[2]) .. ':' .. fmt(st[3]),
        'PX', math.max(cdiv(debt, st[3]), 1))
    end
  end
end
return best
