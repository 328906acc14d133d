-- RATE.CHECK key limit period-ms [ALGO GCRA|FIXED|SLIDING|LOG|BUCKET] [BURST burst] [COST cost] [PEEK] [NOW unix-ms | NOWUS unix-us] [IDEM token]
-- KEYS[1] = B; ARGV = limit period-ms [options...], exactly as the command.
-- Same replies, errors and stored data as the module (see README.md).
-- Time is in microseconds; every value stays below 2^53, and products
-- that could pass it go through mdm (an exact multiply-divide).
--@ keys 1
--@ idem -4 record allowed limit remaining retry_after_ms reset_after_ms

local key = KEYS[1]
if #ARGV < 2 then
  return redis.error_reply("ERR wrong number of arguments for 'rate.check' command")
end
local limit = arg_int(ARGV[1], 1, MAX_COUNT)
if not limit then return redis.error_reply(NOTINT) end
local period = arg_int(ARGV[2], 1, MAX_PERIOD)
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
  elseif kw == 'BURST' or kw == 'COST' or kw == 'NOW' or kw == 'NOWUS' then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    local lo, hi = 0, MAX_COUNT
    if kw == 'BURST' then lo = 1 elseif kw == 'NOW' then hi = MAX_NOW elseif kw == 'NOWUS' then hi = MAX_NOW * 1000 end
    local n = arg_int(ARGV[i + 1], lo, hi)
    if not n then return redis.error_reply(NOTINT) end
    if kw == 'BURST' then burst = n elseif kw == 'COST' then cost = n
    elseif kw == 'NOW' then now = n * 1000 else now = n end
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
if algo == 'log' and cost > 100 then
  return redis.error_reply('ERR rate: LOG cost must be at most 100')
end
burst = burst or limit
if algo == 'gcra' or algo == 'bucket' then
  -- burst * period / limit <= MAX_REFILL, compared exactly.
  local q, r = mdm(burst, period, limit)
  if q > MAX_REFILL or (q == MAX_REFILL and r > 0) then
    return redis.error_reply('ERR rate: burst * period-ms / limit exceeds 4500000000000')
  end
end
now = now or clock_us()
local P = period * 1000 -- period in us

local ktype = redis.call('TYPE', key).ok
local function holds(a) return redis.error_reply('ERR rate: key holds a ' .. a .. ' limiter') end
local function reply(allowed, remaining, retry, reset)
  return {allowed and 1 or 0, limit, remaining, retry, reset}
end
local function ttl_ms(us) return math.max(cdiv(us, 1000), 1) end

-- The state of a String algorithm: kind, a, b, c (the stored integers),
-- or 'error' and the reply. An older SLIDING/BUCKET Hash reads as the
-- same state (a bucket's carry and ts converted to microseconds, exactly).
local function read_key_state()
  if ktype == 'none' then return nil end
  if ktype == 'string' then return string_state(key, redis.call('GET', key)) end
  if ktype == 'hash' then
    local kind, a, b, c = hash_state(key)
    if kind == 'bucket' then return kind, a, math.min(b, period) * 1000, c * 1000 end
    return kind, a, b, c
  end
  return 'error', redis.error_reply(WRONGTYPE)
end

if algo ~= 'log' then
  local kind, a, b, c = read_key_state()
  if kind == 'error' then return a end
  if kind and kind ~= algo then return holds(kind) end

  if algo == 'gcra' then
    local L = limit
    -- The debt as x us + y/L us (y < L), from tat = a ms + b/c ms.
    local x, y = 0, 0
    if kind then
      local frac
      if c == 1000 * L then
        frac = b
      else
        local q, r = mdm(b, 1000 * L, c)
        frac = q + ((r > 0) and 1 or 0)
      end
      local fq = idiv(frac, L)
      x = a * 1000 - now + fq
      y = frac - fq * L
      if x < 0 then x, y = 0, 0 end
    end
    local cq, cr = mdm(burst, P, L)
    local possible = cost <= burst
    local wq, wr = 0, 0
    if possible then wq, wr = mdm(cost, P, L) end
    local sq, sr = x + wq, y + wr
    if sr >= L then sq, sr = sq + 1, sr - L end
    local allowed = possible and (sq < cq or (sq == cq and sr <= cr))
    local aq, ar = x, y
    if allowed then aq, ar = sq, sr end
    local remaining = 0
    local dq, dr = cq - aq, cr - ar
    if dr < 0 then dq, dr = dq - 1, dr + L end
    if dq >= 0 then
      local q1, r1 = mdm(dq, L, P)
      remaining = q1 + idiv(r1 + dr, P)
    end
    local retry = -1
    if not allowed and possible then
      local vq, vr = sq - cq, sr - cr
      if vr < 0 then vq, vr = vq - 1, vr + L end
      retry = cdiv(vq + ((vr > 0) and 1 or 0), 1000)
    end
    local ttl = aq + ((ar > 0) and 1 or 0)
    if allowed and cost > 0 and not peek then
      local t = now + aq
      local ms = idiv(t, 1000)
      local v = 'gcra:' .. fmt(ms) .. ':' .. fmt((t - ms * 1000) * L + ar) .. ':' .. fmt(1000 * L)
      redis.call('SET', key, v, 'PX', ttl_ms(ttl))
    end
    return reply(allowed, remaining, retry, cdiv(ttl, 1000))
  end

  if algo == 'fixed' then
    local now_ms = idiv(now, 1000)
    local start = now_ms - (now_ms - idiv(now_ms, period) * period)
    local count = (kind and a == start) and b or 0
    local possible = cost <= limit
    local allowed = possible and count + cost <= limit
    local after = allowed and count + cost or count
    local ending = (start + period) * 1000 - now
    local retry = (allowed or not possible) and -1 or cdiv(ending, 1000)
    local reset = after > 0 and cdiv(ending, 1000) or 0
    if allowed and cost > 0 and not peek then
      redis.call('SET', key, 'fixed:' .. fmt(start) .. ':' .. fmt(after), 'PX', ttl_ms(ending))
    end
    return reply(allowed, math.max(limit - after, 0), retry, reset)
  end

  if algo == 'sliding' then
    local L, k = limit, cost
    local now_ms = idiv(now, 1000)
    local start = now_ms - (now_ms - idiv(now_ms, period) * period)
    local cnt, pv = 0, 0
    if kind then
      if a == start then cnt, pv = b, c elseif a == start - period then cnt, pv = 0, b end
    end
    local e = now - start * 1000
    local room = L - cnt - k
    -- prev's weight prev * (P - e) / P, rounded up, against the room left.
    local q, r = mdm(pv, P - e, P)
    local weighted = q + ((r > 0) and 1 or 0)
    local possible = k <= L
    local allowed = possible and room >= 0 and weighted <= room
    local after = allowed and cnt + k or cnt
    local retry = -1
    if not allowed and possible then
      if room >= 0 then
        retry = cdiv(P - (mdm(room, P, pv)) - e, 1000)
      else
        retry = cdiv(P - e + P - (mdm(L - k, P, cnt)), 1000)
      end
    end
    local remaining = math.max(L - after - weighted, 0)
    local reset = 0
    if after > 0 then reset = 2 * P - e elseif pv > 0 then reset = P - e end
    if allowed and k > 0 and not peek then
      redis.call('SET', key, 'sliding:' .. fmt(start) .. ':' .. fmt(after) .. ':' .. fmt(pv),
        'PX', ttl_ms((start + 2 * period) * 1000 - now))
    end
    return reply(allowed, remaining, retry, cdiv(reset, 1000))
  end

  -- BUCKET: tokens, a carry of 1/P-us tokens, and the time ts (us).
  local L, B = limit, burst
  local tokens, carry, ts = B, 0, now
  if kind then tokens, carry, ts = a, math.min(b, P - 1), c end
  -- Microseconds until (B - tokens) * P - carry units refill, rounded up.
  local function refill(n, less)
    local q, r = mdm(n, P, L)
    return q + cdiv(r - less, L)
  end
  if tokens >= B then
    tokens, carry = B, 0
    if now > ts then ts = now end
  elseif now > ts then
    local e = now - ts
    if e >= refill(B - tokens, carry) then
      tokens, carry = B, 0
    else
      local q1, r1 = mdm(e, L, P)
      local s = carry + r1
      local q2 = idiv(s, P)
      tokens, carry = tokens + q1 + q2, s - q2 * P
    end
    ts = now
  end
  local possible = cost <= B
  local allowed = possible and cost <= tokens
  if allowed then tokens = tokens - cost end
  local ahead = ts - now
  local retry = -1
  if not allowed and possible then retry = cdiv(ahead + refill(cost - tokens, carry), 1000) end
  local reset = 0
  if tokens < B then reset = ahead + refill(B - tokens, carry) end
  if allowed and cost > 0 and not peek then
    redis.call('SET', key, 'bucket:' .. fmt(tokens) .. ':' .. fmt(carry) .. ':' .. fmt(ts), 'PX', ttl_ms(reset))
  end
  return reply(allowed, tokens, retry, cdiv(reset, 1000))
end

-- LOG: an exact sliding log in a Sorted Set, one entry per request, scored
-- by its microsecond and named <us, 16 digits>-<n>. A log written by the
-- millisecond version (scores in ms, names <ms>-<n>) keeps millisecond
-- resolution.
if ktype ~= 'none' and ktype ~= 'zset' then return redis.error_reply(WRONGTYPE) end
local top = redis.call('ZRANGE', key, -1, -1, 'WITHSCORES')
local unit = 1
if top[1] then
  local m = top[1]
  local micros = #m > 17 and string.sub(m, 17, 17) == '-' and string.match(string.sub(m, 1, 16), '^%d+$')
  if not micros then unit = 1000 end
end
local function time_of(s)
  local n = tonumber(s)
  local limit_s = (unit == 1) and MAX_STORED_US or MAX_STORED_MS
  if not n or n ~= n or n % 1 ~= 0 or math.abs(n) > limit_s then return nil end
  return n * unit
end
local newest = nil
if top[1] then
  newest = time_of(top[2])
  if not newest then return corrupt(key) end
end
local t_now = now - now % unit
local cutoff = (t_now - P) / unit
local stale = redis.call('ZCOUNT', key, '-inf', fmt(cutoff))
local count = redis.call('ZCARD', key) - stale
local possible = cost <= limit
local allowed = possible and count + cost <= limit
local after = allowed and count + cost or count
local retry = -1
if not allowed and possible then
  local rank = stale + count + cost - limit - 1
  local r = redis.call('ZRANGE', key, rank, rank, 'WITHSCORES')
  local t = t_now
  if r[1] then
    t = time_of(r[2])
    if not t then return corrupt(key) end
  end
  retry = cdiv(math.max(t + P - t_now, 1), 1000)
end
local latest = newest
if allowed and cost > 0 then latest = latest and math.max(latest, t_now) or t_now end
local reset = 0
if latest and after > 0 then reset = cdiv(math.max(latest + P - t_now, 0), 1000) end
if allowed and cost > 0 and not peek then
  local score = t_now / unit
  local n = 0
  if newest == t_now then n = redis.call('ZCOUNT', key, fmt(score), fmt(score)) end
  local drop = math.min(stale, cost + 128)
  if drop > 0 then redis.call('ZREMRANGEBYRANK', key, 0, drop - 1) end
  for _ = 1, cost do
    -- A name is only ever taken when the clock went back by more than a
    -- period; then the next free number is used.
    while true do
      local m
      if unit == 1 then m = string.format('%016d', t_now) else m = fmt(score) end
      m = m .. '-' .. fmt(n)
      n = n + 1
      if redis.call('ZADD', key, 'NX', fmt(score), m) == 1 then break end
    end
  end
  redis.call('PEXPIRE', key, ttl_ms(latest + P - now))
end
return reply(allowed, math.max(limit - after, 0), retry, reset)
