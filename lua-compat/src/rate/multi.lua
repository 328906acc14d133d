-- RATE.MULTI numkeys key [key ...] LIMITS limit period-ms [limit period-ms ...] [COST cost] [PEEK] [NOW unix-ms | NOWUS unix-us] [IDEM token]
-- KEYS = B1 ... Bn; ARGV = LIMITS limit1 period1-ms ... [options...], exactly
-- as the command. GCRA rules checked together, consumed only if all allow.
--@ keys n
--@ idem -6 record allowed limit remaining retry_after_ms reset_after_ms

local ARITY = "ERR wrong number of arguments for 'rate.multi' command"
local n = #KEYS
if n + #ARGV < 4 then return redis.error_reply(ARITY) end
if n < 1 or n > 100 then return redis.error_reply(NOTINT) end
if #ARGV < 1 or string.upper(ARGV[1]) ~= 'LIMITS' then return redis.error_reply(SYNTAX) end
-- Distinct keys in order of first appearance; each rule points at one.
local names, slot_of, rules = {}, {}, {}
for j = 1, n do
  local k = KEYS[j]
  if not slot_of[k] then
    names[#names + 1] = k
    slot_of[k] = #names
  end
end
local i = 2
for r = 1, n do
  if i + 1 > #ARGV then return redis.error_reply(ARITY) end
  local limit = arg_int(ARGV[i], 1, MAX_COUNT)
  if not limit then return redis.error_reply(NOTINT) end
  local period = arg_int(ARGV[i + 1], 1, MAX_PERIOD)
  if not period then return redis.error_reply(NOTINT) end
  rules[r] = {limit = limit, period = period, slot = slot_of[KEYS[r]]}
  i = i + 2
end
local cost, peek, now = 1, false, nil
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  if kw == 'COST' or kw == 'NOW' or kw == 'NOWUS' then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    local hi = MAX_COUNT
    if kw == 'NOW' then hi = MAX_NOW elseif kw == 'NOWUS' then hi = MAX_NOW * 1000 end
    local v = arg_int(ARGV[i + 1], 0, hi)
    if not v then return redis.error_reply(NOTINT) end
    if kw == 'COST' then cost = v elseif kw == 'NOW' then now = v * 1000 else now = v end
    i = i + 2
  elseif kw == 'PEEK' then
    peek = true
    i = i + 1
  else
    return redis.error_reply(SYNTAX)
  end
end
for _, r in ipairs(rules) do
  -- Rules have no BURST (burst = limit): a full burst refills in one
  -- period, so only the period can be too long.
  if r.period > MAX_REFILL then
    return redis.error_reply('ERR rate: burst * period-ms / limit exceeds 4500000000000')
  end
end
now = now or clock_us()
-- Every type check before any value check.
for _, k in ipairs(names) do
  local t = redis.call('TYPE', k).ok
  if t == 'string' then
    local p = string.match(redis.call('GET', k), '^(%a+):')
    if p ~= 'gcra' and p ~= 'fixed' and p ~= 'sliding' and p ~= 'bucket' then
      return redis.error_reply(WRONGTYPE)
    end
  elseif t == 'hash' then
    local a = redis.call('HGET', k, 'algo')
    if a ~= 'sliding' and a ~= 'bucket' then return redis.error_reply(WRONGTYPE) end
  elseif t ~= 'none' then
    return redis.error_reply(WRONGTYPE)
  end
end
local states = {}
for s, k in ipairs(names) do
  local kind, a, b, c = read_state(k)
  if kind == 'error' then return a end
  if kind and kind ~= 'gcra' then
    return redis.error_reply('ERR rate: key holds a ' .. kind .. ' limiter')
  end
  states[s] = kind and {a, b, c} or false
end

local touched, ttls = {}, {}
local all = true
local best = nil
for _, r in ipairs(rules) do
  local L = r.limit
  local allowed, remaining, retry, aq, ar, _, new =
    gcra(L, r.period * 1000, L, states[r.slot] or nil, now, cost)
  local reply = {allowed and 1 or 0, L, remaining, retry, cdiv(aq + ((ar > 0) and 1 or 0), 1000)}
  if new then
    states[r.slot] = new
    touched[r.slot] = true
    ttls[r.slot] = aq + ((ar > 0) and 1 or 0)
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
      redis.call('SET', k, tat_text(states[s]), 'PX', math.max(cdiv(ttls[s], 1000), 1))
    end
  end
end
return best
