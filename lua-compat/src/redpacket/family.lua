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
  -- Amounts never pass the largest total, 2^53 - 1: beyond, a double
  -- would not hold them exactly (the module refuses them too).
  left_cents = function(v) local n = int(v); if n and n >= 0 and n <= 9007199254740991 then return n end end,
  state = function(v) if v == 'open' then return false elseif v == 'closed' then return true end end,
}
-- Returns the parsed value of B:meta field `name` (raw value v), or nil and the error.
local function meta_value(meta, name, v)
  local x = nil
  if v then x = PARSE[name](v) end
  if x == nil then return nil, corrupt(meta, name) end
  return x
end
-- A share (in B:pool or B:grabbed): at least one cent, at most the
-- largest total.
local function share_of(v)
  local n = int(v)
  if n and n >= 1 and n <= 9007199254740991 then return n end
end
local MAX_COUNT = 10000
local MAX_TTL = 3153600000
local MAX_TOTAL = 9007199254740991
-- floor(2 * rest / left), exact for any rest below 2^53 (the quotient of
-- doubles may round up to the next integer there): 2 * (rest div left)
-- plus what the remainder adds.
local function double_mean(rest, left)
  local r = math.fmod(rest, left)
  return 2 * ((rest - r) / left) + math.floor(2 * r / left)
end
-- A uniform integer from 1 to bound (bound < 2^53). Lua 5.1's
-- math.random(m, n) takes C ints, so a bound past 2^31 - 1 ("interval is
-- empty") is drawn as 53 random bits (22 + 31) with rejection of the
-- uneven top, then reduced: every value equally likely, no rounding.
local function draw(bound)
  if bound <= 2147483647 then return math.random(1, bound) end
  local limit = bound * math.floor(9007199254740992 / bound)
  while true do
    local x = math.random(0, 4194303) * 2147483648 + math.random(0, 2147483647)
    if x < limit then return math.fmod(x, bound) + 1 end
  end
end
