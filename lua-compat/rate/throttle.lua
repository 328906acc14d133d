-- RATE.THROTTLE B max-burst count period-s [quantity] [NOW unix-ms | NOWUS unix-us]
-- KEYS[1] = B; ARGV = max-burst count period-s [quantity] [time option].
-- redis-cell's CL.THROTTLE reply: [limited, limit, remaining,
-- retry-after-s, reset-after-s]; state shared with RATE.CHECK's GCRA.
local NOTINT = 'ERR value is not an integer or out of range'
local SYNTAX = 'ERR syntax error'
local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
local MAX_COUNT = 1000000000000
local MAX_PERIOD = 1000000000000
local MAX_NOW = 4500000000000
local MAX_REFILL = 4500000000000
local MAX_STORED_MS = 9000000000000
local MAX_STORED_US = 9000000000000000
local P53 = 9007199254740992

local function toint(s, lo, hi)
  if type(s) ~= 'string' or #s == 0 or #s > 18 then return nil end
  if s ~= '0' and not string.match(s, '^[1-9]%d*$') then return nil end
  local n = tonumber(s)
  if n == nil or n < lo or n > hi then return nil end
  return n
end
-- A stored non-negative integer, at most `hi`.
local function stored(s, hi)
  if type(s) ~= 'string' then return nil end
  return toint(s, 0, hi)
end
-- floor(a / b) for exact integers |a| < 2^53, b > 0.
local function idiv(a, b)
  local q = math.floor(a / b)
  if q * b > a then q = q - 1 elseif (q + 1) * b <= a then q = q + 1 end
  return q
end
-- ceil(a / b), any sign of a.
local function cdiv(a, b) return -idiv(-a, b) end
-- floor(a * b / m) and a * b mod m for 0 <= a, b < 2^53, 0 < m < 2^51,
-- when the quotient is below 2^53: binary long multiplication.
local function mdm(a, b, m)
  local p = a * b
  if p < P53 then
    local q = idiv(p, m)
    return q, p - q * m
  end
  local qa = idiv(a, m)
  local ra = a - qa * m
  local q, r = qa * b, 0
  local aq, ar = 0, ra
  while b > 0 do
    if b % 2 == 1 then
      q = q + aq
      r = r + ar
      if r >= m then r = r - m; q = q + 1 end
      b = b - 1
    end
    b = b / 2
    if b > 0 then
      aq = aq * 2
      ar = ar * 2
      if ar >= m then ar = ar - m; aq = aq + 1 end
    end
  end
  return q, r
end
local function fmt(n) return string.format('%d', n) end


local function keytext(k) return (string.gsub(k, '%c', '?')) end
local function corrupt(k, f)
  local e = "ERR rate: corrupt data in '" .. keytext(k) .. "'"
  if f then e = e .. " field '" .. f .. "'" end
  return redis.error_reply(e)
end
-- Classifies a key for GCRA: nil (missing), 'gcra' with tat = a ms + b/c
-- ms, another algorithm's name, or 'error' with the reply. Hashes of the
-- millisecond version (SLIDING/BUCKET) are validated, then named.
local function read_state(k)
  local t = redis.call('TYPE', k).ok
  if t == 'none' then return nil end
  if t == 'string' then
    local v = redis.call('GET', k)
    local p = string.match(v, '^(%a+):')
    if p ~= 'gcra' and p ~= 'fixed' and p ~= 'sliding' and p ~= 'bucket' then
      return 'error', redis.error_reply(WRONGTYPE)
    end
    local parts = {}
    for f in string.gmatch(string.sub(v, #p + 2) .. ':', '([^:]*):') do parts[#parts + 1] = f end
    local want = (p == 'fixed') and 2 or 3
    if #parts ~= want then return 'error', corrupt(k) end
    local x = {}
    for j = 1, want do
      x[j] = stored(parts[j], 999999999999999999)
      if not x[j] then return 'error', corrupt(k) end
    end
    local ok
    if p == 'gcra' then
      ok = x[1] <= MAX_STORED_MS and x[3] >= 1 and x[3] <= MAX_COUNT * 1000 and x[2] < x[3]
    elseif p == 'fixed' then
      ok = x[1] <= MAX_STORED_MS and x[2] <= MAX_COUNT
    elseif p == 'sliding' then
      ok = x[1] <= MAX_STORED_MS and x[2] <= MAX_COUNT and x[3] <= MAX_COUNT
    else
      ok = x[1] <= MAX_COUNT and x[2] <= MAX_STORED_US and x[3] <= MAX_STORED_US
    end
    if not ok then return 'error', corrupt(k) end
    return p, x[1], x[2], x[3]
  end
  if t == 'hash' then
    local a = redis.call('HGET', k, 'algo')
    local fields
    if a == 'sliding' then
      fields = {{'window', MAX_STORED_MS}, {'count', MAX_COUNT}, {'prev', MAX_COUNT}}
    elseif a == 'bucket' then
      fields = {{'tokens', MAX_COUNT}, {'carry', MAX_STORED_US}, {'ts', MAX_STORED_MS}}
    else
      return 'error', redis.error_reply(WRONGTYPE)
    end
    for _, f in ipairs(fields) do
      if not stored(redis.call('HGET', k, f[1]), f[2]) then return 'error', corrupt(k, f[1]) end
    end
    return a
  end
  return 'error', redis.error_reply(WRONGTYPE)
end
-- One GCRA step: L per P us, burst B, cost at now (us), on a state tat =
-- ms + num/den ms (or none). Returns allowed, remaining, retry-ms, the
-- debt after as aq us + ar/L us, and the new tat (ms, num, den) if any.
local function gcra(L, P, B, st, now, cost)
  local x, y = 0, 0
  if st then
    local frac
    if st[3] == 1000 * L then
      frac = st[2]
    else
      local q, r = mdm(st[2], 1000 * L, st[3])
      frac = q + ((r > 0) and 1 or 0)
    end
    local fq = idiv(frac, L)
    x = st[1] * 1000 - now + fq
    y = frac - fq * L
    if x < 0 then x, y = 0, 0 end
  end
  local cq, cr = mdm(B, P, L)
  local possible = cost <= B
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
  local retry, vq = -1, 0
  if not allowed and possible then
    local vr
    vq, vr = sq - cq, sr - cr
    if vr < 0 then vq, vr = vq - 1, vr + L end
    retry = cdiv(vq + ((vr > 0) and 1 or 0), 1000)
  end
  local new = nil
  if allowed and cost > 0 then
    local t = now + aq
    local ms = idiv(t, 1000)
    new = {ms, (t - ms * 1000) * L + ar, 1000 * L}
  end
  return allowed, remaining, retry, aq, ar, vq, new
end
local function tat_text(t) return 'gcra:' .. fmt(t[1]) .. ':' .. fmt(t[2]) .. ':' .. fmt(t[3]) end

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
local function time_option(kw, v)
  kw = string.upper(kw)
  if kw ~= 'NOW' and kw ~= 'NOWUS' then return nil end
  if v == nil then return 'syntax' end
  local n = toint(v, 0, (kw == 'NOW') and MAX_NOW or MAX_NOW * 1000)
  if not n then return 'notint' end
  return (kw == 'NOW') and n * 1000 or n
end
if i <= #ARGV then
  local t = time_option(ARGV[i], ARGV[i + 1])
  if t == 'syntax' then return redis.error_reply(SYNTAX) end
  if t == 'notint' then return redis.error_reply(NOTINT) end
  if t then
    now = t
    i = i + 2
  else
    qty = toint(ARGV[i], 0, MAX_COUNT)
    if not qty then return redis.error_reply(NOTINT) end
    i = i + 1
    if i <= #ARGV then
      t = time_option(ARGV[i], ARGV[i + 1])
      if t == nil or t == 'syntax' then return redis.error_reply(SYNTAX) end
      if t == 'notint' then return redis.error_reply(NOTINT) end
      now = t
      i = i + 2
    end
  end
end
if i <= #ARGV then return redis.error_reply(SYNTAX) end
local L, P, B = per, period_s * 1000, max_burst + 1
local q, r = mdm(B, P, L)
if q > MAX_REFILL or (q == MAX_REFILL and r > 0) then
  return redis.error_reply('ERR rate: burst * period-ms / limit exceeds 4500000000000')
end
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
end
local kind, a, b, c = read_state(key)
if kind == 'error' then return a end
if kind and kind ~= 'gcra' then
  return redis.error_reply('ERR rate: key holds a ' .. kind .. ' limiter')
end
local allowed, remaining, retry, aq, ar, vq, new = gcra(L, P * 1000, B, kind and {a, b, c} or nil, now, qty)
-- redis-cell rounds a duration cut to whole milliseconds up to seconds.
local function secs(us) return cdiv(idiv(us, 1000), 1000) end
if retry >= 0 then retry = secs(vq) end
if new then
  redis.call('SET', key, tat_text(new), 'PX', math.max(cdiv(aq + ((ar > 0) and 1 or 0), 1000), 1))
end
return {allowed and 0 or 1, B, remaining, retry, secs(aq)}
