-- RATE.CHECK B limit period-ms [ALGO GCRA|FIXED|SLIDING|LOG|BUCKET]
--            [BURST n] [COST n] [PEEK] [NOW unix-ms]
-- KEYS[1] = B; ARGV = limit period-ms [options…], exactly as the command.
-- Same replies, errors and stored data as the module (see README.md).
local NOTINT = 'ERR value is not an integer or out of range'
local SYNTAX = 'ERR syntax error'
local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
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
local function field(s) return toint(s, 0, 9.3e18) end
-- floor(a / b) and ceil(a / b) for exact integers a >= 0, b > 0.
local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end
local function cdiv(a, b) return idiv(a + b - 1, b) end
local function fmt(n) return string.format('%d', n) end

local key = KEYS[1]
if #ARGV < 2 then
  return redis.error_reply("ERR wrong number of arguments for 'rate.check' command")
end
local limit = toint(ARGV[1], 1, MAX_COUNT)
if not limit then return redis.error_reply(NOTINT) end
local period = toint(ARGV[2], 1, MAX_PERIOD)
if not period then return redis.error_reply(NOTINT) end
local algo, burst, cost, peek, now = 'gcra', nil, 1, false, nil
local algos = {gcra = true, fixed = true, sliding = true, log = true, bucket = true}
local i = 3
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  if kw == 'ALGO' then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    local a = string.lower(ARGV[i + 1])
    if not algos[a] then return redis.error_reply(SYNTAX) end
    algo = a
    i = i + 2
  elseif kw == 'BURST' or kw == 'COST' or kw == 'NOW' then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    local lo, hi = 0, MAX_COUNT
    if kw == 'BURST' then lo = 1 elseif kw == 'NOW' then hi = MAX_NOW end
    local n = toint(ARGV[i + 1], lo, hi)
    if not n then return redis.error_reply(NOTINT) end
    if kw == 'BURST' then burst = n elseif kw == 'COST' then cost = n else now = n end
    i = i + 2
  elseif kw == 'PEEK' then
    peek = true
    i = i + 1
  else
    return redis.error_reply(SYNTAX)
  end
end
if burst and algo ~= 'gcra' and algo ~= 'bucket' then
  return redis.error_reply('ERR rate: BURST applies only to GCRA and BUCKET')
end
if algo == 'log' and limit > 100000 then
  return redis.error_reply('ERR rate: LOG limit must be at most 100000')
end
burst = burst or limit
local cap = (algo == 'sliding') and limit or burst
if (algo == 'gcra' or algo == 'bucket' or algo == 'sliding') and cap * period > MAX_PRODUCT then
  return redis.error_reply('ERR rate: limit or burst * period-ms exceeds 2^52')
end
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

local ktype = redis.call('TYPE', key).ok
local function holds(a) return redis.error_reply('ERR rate: key holds a ' .. a .. ' limiter') end

-- A String limiter: 'gcra', ms, num, den | 'fixed', start, count | nil |
-- 'wrong' (not a limiter).
local function read_text()
  if ktype == 'none' then return nil end
  if ktype ~= 'string' then return 'wrong' end
  local v = redis.call('GET', key)
  local a, b, c = string.match(v, '^gcra:(%d+):(%d+):(%d+)$')
  if a then
    local ms, num, den = nonneg(a), nonneg(b), nonneg(c)
    if ms and num and den and den > 0 and num < den then return 'gcra', ms, num, den end
  end
  a, b = string.match(v, '^fixed:(%d+):(%d+)$')
  if a then
    local s, n = nonneg(a), nonneg(b)
    if s and n then return 'fixed', s, n end
  end
  return 'wrong'
end
local function read_hash_kind()
  if ktype == 'none' then return nil end
  if ktype ~= 'hash' then return 'wrong' end
  local a = redis.call('HGET', key, 'algo')
  if a == 'sliding' or a == 'bucket' then return a end
  return 'wrong'
end
local function reply(allowed, remaining, retry, reset)
  return {allowed and 1 or 0, limit, remaining, retry, reset}
end

if algo == 'gcra' then
  local kind, ms, num, den = read_text()
  if kind == 'wrong' then return redis.error_reply(WRONGTYPE) end
  if kind == 'fixed' then return holds('fixed') end
  local L, P = limit, period
  local capu = burst * P
  local debt = 0
  if kind == 'gcra' then
    if den ~= L then
      if num > 0 then ms = ms + 1 end
      num = 0
    end
    debt = (ms - now) * L + num
    if debt < 0 then debt = 0 end
  end
  local possible = cost <= burst
  local want = possible and cost * P or 0
  local allowed = possible and debt + want <= capu
  local after = allowed and debt + want or debt
  local remaining = (capu - after < 0) and 0 or idiv(capu - after, P)
  local retry = -1
  if not allowed and possible then retry = cdiv(debt + want - capu, L) end
  local reset = cdiv(after, L)
  if allowed and cost > 0 and not peek then
    local q = idiv(after, L)
    local v = 'gcra:' .. fmt(now + q) .. ':' .. fmt(after - q * L) .. ':' .. fmt(L)
    redis.call('SET', key, v, 'PX', math.max(reset, 1))
  end
  return reply(allowed, remaining, retry, reset)
end

if algo == 'fixed' then
  local kind, s, n = read_text()
  if kind == 'wrong' then return redis.error_reply(WRONGTYPE) end
  if kind == 'gcra' then return holds('gcra') end
  local start = now - (now - idiv(now, period) * period)
  local count = (kind == 'fixed' and s == start) and n or 0
  local possible = cost <= limit
  local allowed = possible and count + cost <= limit
  local after = allowed and count + cost or count
  local ending = start + period - now
  local retry = (allowed or not possible) and -1 or ending
  local reset = after > 0 and ending or 0
  if allowed and cost > 0 and not peek then
    redis.call('SET', key, 'fixed:' .. fmt(start) .. ':' .. fmt(after), 'PX', math.max(reset, 1))
  end
  return reply(allowed, math.max(limit - after, 0), retry, reset)
end

if algo == 'sliding' then
  local kind = read_hash_kind()
  if kind == 'wrong' then return redis.error_reply(WRONGTYPE) end
  if kind == 'bucket' then return holds('bucket') end
  local L, P, k = limit, period, cost
  local start = now - (now - idiv(now, P) * P)
  local c, pv = 0, 0
  if kind == 'sliding' then
    local w = field(redis.call('HGET', key, 'window'))
    local sc = field(redis.call('HGET', key, 'count'))
    local sp = field(redis.call('HGET', key, 'prev'))
    if not (w and sc and sp) then return redis.error_reply(WRONGTYPE) end
    if w == start then c, pv = sc, sp elseif w == start - P then c, pv = 0, sc end
  end
  local e = now - start
  local weighted = pv * (P - e)
  local possible = k <= L
  local allowed = possible and L - c - k >= 0 and weighted <= (L - c - k) * P
  local after = allowed and c + k or c
  local retry = -1
  if not allowed and possible then
    if L - c - k >= 0 then
      retry = (P - idiv((L - c - k) * P, pv)) - e
    else
      retry = P - e + (P - idiv((L - k) * P, c))
    end
  end
  local remaining = math.max(L - after - cdiv(weighted, P), 0)
  local reset = 0
  if after > 0 then reset = 2 * P - e elseif pv > 0 then reset = P - e end
  if allowed and k > 0 and not peek then
    redis.call('HSET', key, 'algo', 'sliding', 'window', fmt(start), 'count', fmt(after), 'prev', fmt(pv))
    redis.call('PEXPIRE', key, math.max(reset, 1))
  end
  return reply(allowed, remaining, retry, reset)
end

if algo == 'bucket' then
  local kind = read_hash_kind()
  if kind == 'wrong' then return redis.error_reply(WRONGTYPE) end
  if kind == 'sliding' then return holds('sliding') end
  local L, P, B = limit, period, burst
  local tokens, carry, ts = B, 0, now
  if kind == 'bucket' then
    tokens = field(redis.call('HGET', key, 'tokens'))
    carry = field(redis.call('HGET', key, 'carry'))
    ts = field(redis.call('HGET', key, 'ts'))
    if not (tokens and carry and ts) then return redis.error_reply(WRONGTYPE) end
    carry = math.min(carry, P - 1)
  end
  if tokens >= B then
    tokens, carry, ts = B, 0, math.max(ts, now)
  elseif now > ts then
    local need = (B - tokens) * P - carry
    local e = now - ts
    if e >= cdiv(need, L) then
      tokens, carry = B, 0
    else
      local total = carry + e * L
      local q = idiv(total, P)
      tokens, carry = tokens + q, total - q * P
    end
    ts = now
  end
  local possible = cost <= B
  local allowed = possible and cost <= tokens
  if allowed then tokens = tokens - cost end
  local ahead = ts - now
  local retry = -1
  if not allowed and possible then retry = ahead + cdiv((cost - tokens) * P - carry, L) end
  local reset = 0
  if tokens < B then reset = ahead + cdiv((B - tokens) * P - carry, L) end
  if allowed and cost > 0 and not peek then
    redis.call('HSET', key, 'algo', 'bucket', 'tokens', fmt(tokens), 'carry', fmt(carry), 'ts', fmt(ts))
    redis.call('PEXPIRE', key, math.max(reset, 1))
  end
  return reply(allowed, tokens, retry, reset)
end

-- LOG: an exact sliding log in a Sorted Set.
if ktype ~= 'none' and ktype ~= 'zset' then return redis.error_reply(WRONGTYPE) end
local cutoff = now - period
local count = redis.call('ZCOUNT', key, '(' .. fmt(cutoff), '+inf')
local possible = cost <= limit
local allowed = possible and count + cost <= limit
local after = allowed and count + cost or count
local retry = -1
if not allowed and possible then
  local r = redis.call('ZRANGEBYSCORE', key, '(' .. fmt(cutoff), '+inf', 'WITHSCORES', 'LIMIT', count + cost - limit - 1, 1)
  local t = tonumber(r[2]) or now
  retry = math.max(t + period - now, 1)
end
local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
local newest = tonumber(top[2])
if allowed and cost > 0 then newest = newest and math.max(newest, now) or now end
local reset = 0
if newest and after > 0 then reset = math.max(newest + period - now, 0) end
if allowed and cost > 0 and not peek then
  redis.call('ZREMRANGEBYSCORE', key, '-inf', fmt(cutoff))
  local batch = {}
  for j = 0, cost - 1 do
    batch[#batch + 1] = fmt(now)
    batch[#batch + 1] = fmt(now) .. '-' .. fmt(count + j)
    if #batch >= 1000 then
      redis.call('ZADD', key, unpack(batch))
      batch = {}
    end
  end
  if #batch > 0 then redis.call('ZADD', key, unpack(batch)) end
  redis.call('PEXPIRE', key, math.max(reset, 1))
end
return reply(allowed, math.max(limit - after, 0), retry, reset)
