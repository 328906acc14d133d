local MAX_TIME = 253402300799999
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
local MAX_COUNT = 10000
local MAX_TTL = 3153600000
local MAX_TOTAL = 9007199254740991
