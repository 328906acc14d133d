-- Redis's own error texts, as the module words them.
local NOTINT = 'ERR value is not an integer or out of range'
local SYNTAX = 'ERR syntax error'
local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
-- Redis's string2ll: optional '-', digits, no '+', no leading zeros, no
-- '-0', within the i64 range. The range is checked on the text (a double
-- cannot tell 9223372036854775807 from ...808): at 19 characters without
-- a sign, or 20 with one, digit strings of one length compare as numbers,
-- and a 20-digit number sorts above any text starting with '-'. The value
-- is a double: exact below 2^53, which every family's ranges keep to.
local function int(s)
  if type(s) ~= 'string' then return nil end
  local n = #s
  if n == 0 or n > 20 then return nil end
  if s ~= '0' and not string.match(s, '^%-?[1-9]%d*$') then return nil end
  if (n == 19 and s > '9223372036854775807') or (n == 20 and s > '-9223372036854775808') then
    return nil
  end
  return tonumber(s)
end
-- An integer argument within [lo, hi], or nil.
local function arg_int(s, lo, hi)
  local n = int(s)
  if n == nil or n < lo or n > hi then return nil end
  return n
end
local function fmt(n) return string.format('%d', n) end
-- A key name as the module shows it in an error line: control characters
-- (which would break the line) become '?'.
local function key_text(k) return (string.gsub(k, '%c', '?')) end
-- 'ERR <family>: <what> in '<key>'', with " field '<field>'" for a hash
-- field (or a member): the module's corrupt-data and overflow errors. The
-- field is shown like the key.
local function data_error(family, what, k, field)
  local e = 'ERR ' .. family .. ': ' .. what .. " in '" .. key_text(k) .. "'"
  if field then e = e .. " field '" .. key_text(field) .. "'" end
  return redis.error_reply(e)
end
local function arity(cmd)
  return redis.error_reply("ERR wrong number of arguments for '" .. cmd .. "' command")
end
-- The server clock in unix milliseconds (TIME).
local function clock_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- The server clock in unix microseconds (TIME).
local function clock_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
