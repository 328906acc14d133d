-- REDPACKET.REFUND key
-- REDPACKET.REFUND twin. KEYS[1] = B; no ARGV.
-- Empties B:pool, sets state closed; reply the cents returned (0 when
-- unknown or already refunded): the running total left_cents.
--@ keys 1

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
local m = redis.call('HMGET', meta, 'state', 'left_cents')
local closed, e1 = meta_value(meta, 'state', m[1])
if e1 then return e1 end
if closed then return 0 end
local left, e2 = meta_value(meta, 'left_cents', m[2])
if e2 then return e2 end
redis.call('UNLINK', pool)
redis.call('HSET', meta, 'state', 'closed', 'left_cents', '0')
return left

