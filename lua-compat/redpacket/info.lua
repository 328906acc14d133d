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
local function shown(s) return (string.gsub(s, '%c', '?')) end
local function corrupt(key, field)
  if field then
    return redis.error_reply("ERR redpacket: corrupt data in '" .. shown(key) .. "' field '" .. shown(field) .. "'")
  end
  return redis.error_reply("ERR redpacket: corrupt data in '" .. shown(key) .. "'")
end
-- The B:meta values as SPLIT writes them; nil for garbage.
local PARSE = {
  total = function(v) local n = int(v); if n and n >= 1 and n <= 9007199254740991 then return n end end,
  count = function(v) local n = int(v); if n and n >= 1 then return n end end,
  expires = function(v) local n = int(v); if n and n >= 0 and n <= 253402300799999 then return n end end,
  left_cents = function(v) local n = int(v); if n and n >= 0 then return n end end,
  state = function(v) if v == 'open' then return false elseif v == 'closed' then return true end end,
}
-- Returns the parsed value of B:meta field `name` (raw value v), or nil and the error.
local function meta_value(meta, name, v)
  local x = nil
  if v then x = PARSE[name](v) end
  if x == nil then return nil, corrupt(meta, name) end
  return x
end
-- A share (in B:pool or B:grabbed): at least one cent.
local function share_of(v)
  local n = int(v)
  if n and n >= 1 then return n end
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
