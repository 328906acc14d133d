-- REDPACKET.INFO key [NOW unix-ms]
-- REDPACKET.INFO twin. KEYS[1] = B; ARGV = [NOW unix-ms].
-- Reply {total, t, count, c, left_cents, l, left_count, n, state, s,
-- expires, e}, or {} for an unknown packet.
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
local meta, pool, grabbed = B .. ':meta', B .. ':pool', B .. ':grabbed'
local now = nil
local i = 1
while i <= #ARGV do
  if string.upper(ARGV[i]) ~= 'NOW' or ARGV[i + 1] == nil then
    return redis.error_reply('ERR syntax error')
  end
  now = int(ARGV[i + 1])
  if not now or now < 0 or now > MAX_TIME then return redis.error_reply(NOTINT) end
  i = i + 2
end
local tm = redis.call('TYPE', meta).ok
local tp = redis.call('TYPE', pool).ok
local tg = redis.call('TYPE', grabbed).ok
if (tm ~= 'none' and tm ~= 'hash') or (tp ~= 'none' and tp ~= 'list')
    or (tg ~= 'none' and tg ~= 'hash') then
  return redis.error_reply(WRONGTYPE)
end
if tm == 'none' then return {} end
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local m = redis.call('HMGET', meta, 'total', 'count', 'state', 'expires', 'left_cents')
local got = {}
for j, name in ipairs({ 'total', 'count', 'state', 'expires', 'left_cents' }) do
  local v, e = meta_value(meta, name, m[j])
  if e then return e end
  got[name] = v
end
if got.left_cents > got.total then return corrupt(meta, 'left_cents') end
local state = 'open'
if got.state or (got.expires > 0 and now >= got.expires) then state = 'closed' end
return { 'total', got.total, 'count', got.count, 'left_cents', got.left_cents,
  'left_count', redis.call('LLEN', pool), 'state', state, 'expires', got.expires }

