-- RATE.RESET B
-- KEYS[1] = B; no ARGV. 1 if there was limiter state to drop, else 0.
local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
if #ARGV ~= 0 then
  return redis.error_reply("ERR wrong number of arguments for 'rate.reset' command")
end
local key = KEYS[1]
local t = redis.call('TYPE', key).ok
local function nonneg(s)
  if type(s) ~= 'string' or #s == 0 or #s > 18 then return nil end
  if s ~= '0' and not string.match(s, '^[1-9]%d*$') then return nil end
  return tonumber(s)
end
if t == 'none' then return 0 end
if t == 'string' then
  local v = redis.call('GET', key)
  local a, b, c = string.match(v, '^gcra:(%d+):(%d+):(%d+)$')
  local ok = false
  if a then
    local ms, num, den = nonneg(a), nonneg(b), nonneg(c)
    ok = ms and num and den and den > 0 and num < den
  end
  if not ok then
    local x, y = string.match(v, '^fixed:(%d+):(%d+)$')
    ok = x and nonneg(x) and nonneg(y)
  end
  if not ok then return redis.error_reply(WRONGTYPE) end
elseif t == 'hash' then
  local a = redis.call('HGET', key, 'algo')
  if a ~= 'sliding' and a ~= 'bucket' then return redis.error_reply(WRONGTYPE) end
elseif t ~= 'zset' then
  return redis.error_reply(WRONGTYPE)
end
redis.call('DEL', key)
return 1
