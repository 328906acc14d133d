-- REDPACKET.INFO twin. KEYS[1] = B; ARGV = [NOW unix-ms].
-- Reply {total, t, count, c, left_cents, l, left_count, n, state, s,
-- expires, e}, or {} for an unknown packet.
local MAX_TIME = 253402300799999
local NOTINT = 'ERR value is not an integer or out of range'
local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
local function int(s)
  if type(s) ~= 'string' or #s > 19 then return nil end
  if s ~= '0' and not s:match('^%-?[1-9]%d*$') then return nil end
  local digits = s:gsub('^%-', '')
  if #digits == 19 and digits > '9223372036854775807' then return nil end
  return tonumber(s)
end
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
local m = redis.call('HMGET', meta, 'total', 'count', 'state', 'expires')
local expires = int(m[4]) or 0
local state = 'open'
if m[3] == 'closed' or (expires > 0 and now >= expires) then state = 'closed' end
local left = 0
local shares = redis.call('LRANGE', pool, 0, -1)
for _, s in ipairs(shares) do left = left + (int(s) or 0) end
return { 'total', int(m[1]) or 0, 'count', int(m[2]) or 0, 'left_cents', left,
  'left_count', #shares, 'state', state, 'expires', expires }
