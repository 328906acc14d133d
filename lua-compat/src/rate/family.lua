local MAX_COUNT = 1000000000000
local MAX_PERIOD = 1000000000000
local MAX_NOW = 4500000000000
local MAX_REFILL = 4500000000000
local MAX_STORED_MS = 9000000000000
local MAX_STORED_US = 9000000000000000
local P53 = 9007199254740992

-- A stored non-negative integer, at most `hi`.
local function stored(s, hi) return arg_int(s, 0, hi) end
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
local function corrupt(k, f) return data_error('rate', 'corrupt data', k, f) end
-- The state in the String value v of key k: the algorithm's name and its
-- stored integers (a, b, c), or 'error' and the reply. A value that does
-- not start like a limiter's is another application's: WRONGTYPE.
local function string_state(k, v)
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
-- A SLIDING or BUCKET Hash of the millisecond version: 'sliding', window,
-- count, prev or 'bucket', tokens, carry, ts (both in ms, as stored), or
-- 'error' and the reply. Fields are checked in the module's order.
local function hash_state(k)
  local a = redis.call('HGET', k, 'algo')
  local fields
  if a == 'sliding' then
    fields = {{'window', MAX_STORED_MS}, {'count', MAX_COUNT}, {'prev', MAX_COUNT}}
  elseif a == 'bucket' then
    fields = {{'tokens', MAX_COUNT}, {'carry', MAX_STORED_US}, {'ts', MAX_STORED_MS}}
  else
    return 'error', redis.error_reply(WRONGTYPE)
  end
  local v = redis.call('HMGET', k, fields[1][1], fields[2][1], fields[3][1])
  local x = {}
  for j, f in ipairs(fields) do
    x[j] = stored(v[j], f[2])
    if not x[j] then return 'error', corrupt(k, f[1]) end
  end
  return a, x[1], x[2], x[3]
end
-- Classifies a key for GCRA: nil (missing), 'gcra' with tat = a ms + b/c
-- ms, another algorithm's name, or 'error' with the reply.
local function read_state(k)
  local t = redis.call('TYPE', k).ok
  if t == 'none' then return nil end
  if t == 'string' then return string_state(k, redis.call('GET', k)) end
  if t == 'hash' then return hash_state(k) end
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

