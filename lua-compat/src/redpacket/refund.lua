-- REDPACKET.REFUND key
-- REDPACKET.REFUND twin. KEYS[1] = B; no ARGV.
-- Empties B:pool, sets state closed; reply the cents returned (0 when
-- unknown or already refunded): the running total left_cents.
--@ keys 1
--@ flags allow-oom

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
-- Every meta field is checked, in INFO's order (GRAB reads only what it
-- needs).
local m = redis.call('HMGET', meta, 'total', 'count', 'state', 'expires', 'left_cents')
local got = {}
for j, name in ipairs({ 'total', 'count', 'state', 'expires', 'left_cents' }) do
  local v, e = meta_value(meta, name, m[j])
  if e then return e end
  got[name] = v
end
if got.left_cents > got.total then return corrupt(meta, 'left_cents') end
if got.state then return 0 end
redis.call('UNLINK', pool)
redis.call('HSET', meta, 'state', 'closed', 'left_cents', '0')
return got.left_cents

