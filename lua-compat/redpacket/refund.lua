-- REDPACKET.REFUND twin. KEYS[1] = B; no ARGV.
-- Empties B:pool, sets state closed; reply the cents returned (0 when
-- unknown or already refunded): the running total left_cents.
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
