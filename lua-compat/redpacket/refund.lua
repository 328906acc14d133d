-- REDPACKET.REFUND twin. KEYS[1] = B; no ARGV.
-- Empties B:pool, sets state closed; reply the cents returned (0 when
-- unknown or already refunded).
local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
local function int(s)
  if type(s) ~= 'string' or #s > 19 then return nil end
  if s ~= '0' and not s:match('^%-?[1-9]%d*$') then return nil end
  local digits = s:gsub('^%-', '')
  if #digits == 19 and digits > '9223372036854775807' then return nil end
  return tonumber(s)
end
if #ARGV > 0 then
  return redis.error_reply("ERR wrong number of arguments for 'redpacket.refund' command")
end
local B = KEYS[1]
local meta, pool, grabbed = B .. ':meta', B .. ':pool', B .. ':grabbed'
local tm = redis.call('TYPE', meta).ok
local tp = redis.call('TYPE', pool).ok
local tg = redis.call('TYPE', grabbed).ok
if (tm ~= 'none' and tm ~= 'hash') or (tp ~= 'none' and tp ~= 'list')
    or (tg ~= 'none' and tg ~= 'hash') then
  return redis.error_reply(WRONGTYPE)
end
if tm == 'none' then return 0 end
if redis.call('HGET', meta, 'state') == 'closed' then return 0 end
local left = 0
for _, s in ipairs(redis.call('LRANGE', pool, 0, -1)) do left = left + (int(s) or 0) end
redis.call('DEL', pool)
redis.call('HSET', meta, 'state', 'closed')
return left
