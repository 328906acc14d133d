-- REDPACKET.GRABBED key
-- REDPACKET.GRABBED twin. KEYS[1] = B; no ARGV.
-- Reply {user, cents, ...} in HGETALL order.
--@ keys 1
--@ flags no-writes

if #ARGV > 0 then
  return redis.error_reply("ERR wrong number of arguments for 'redpacket.grabbed' command")
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
local kv = redis.call('HGETALL', grabbed)
-- A share as an integer, anything else (GRAB never writes it) as the
-- string it is, as the module replies.
for j = 2, #kv, 2 do kv[j] = share_of(kv[j]) or kv[j] end
return kv

