local MAX_WINNERS = 1000
local function ferr(msg) return redis.error_reply('ERR luckybag: ' .. msg) end
local function syntax() return redis.error_reply('ERR syntax error') end
local function notint() return redis.error_reply('ERR value is not an integer or out of range') end
local function empty_user() return ferr('user must not be empty') end
-- A key or field in an error line: control characters become '?'.
local function shown(s) return (string.gsub(s, '%c', '?')) end
local function corrupt(key, field)
  if field then return ferr("corrupt data in '" .. shown(key) .. "' field '" .. shown(field) .. "'") end
  return ferr("corrupt data in '" .. shown(key) .. "'")
end
local function overflow(key, field)
  if field then return ferr("integer overflow in '" .. shown(key) .. "' field '" .. shown(field) .. "'") end
  return ferr("integer overflow in '" .. shown(key) .. "'")
end
local I64_MAX = '9223372036854775807'
-- The largest participant count (B:count) and `latepooled`: 2^53 - 1, so
-- that every count is exact in a double; the module keeps the same bound.
local MAX_COUNT = 9007199254740991
-- Byte-wise a > b (Lua's own string order follows the locale).
local function bytes_gt(a, b)
  local la, lb = #a, #b
  for i = 1, math.min(la, lb) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return la > lb
end
-- An integer as Redis reads one: optional '-', digits, no leading zero,
-- within the signed 64-bit range. Returns the number, or nil.
local function toint(s)
  if s == '0' then return 0 end
  if not string.match(s, '^%-?[1-9]%d*$') then return nil end
  local neg = string.sub(s, 1, 1) == '-'
  local digits = neg and string.sub(s, 2) or s
  if #digits > 19 then return nil end
  if #digits == 19 then
    local lim = neg and '9223372036854775808' or I64_MAX
    if bytes_gt(digits, lim) then return nil end
  end
  return tonumber(s)
end
-- HIGHSCORE: plain decimal digits with an optional fraction, at most 32 bytes.
local function parse_highscore(s)
  if #s == 0 or #s > 32 then return nil end
  if not (string.match(s, '^%d+$') or string.match(s, '^%d*%.%d+$')) then return nil end
  return tonumber(s)
end
local function valid_shards(n)
  if not n or n < 1 or n > 1024 then return false end
  while n > 1 do
    if n % 2 ~= 0 then return false end
    n = n / 2
  end
  return true
end
-- user & (shards - 1) for integer ids, else the low bits of FNV-1a 32
-- (computed modulo 1024: shards divides 1024, and the low bits of FNV-1a
-- depend only on the low bits of each step).
local function shard_of(user, shards)
  if toint(user) then
    local neg = string.sub(user, 1, 1) == '-'
    local digits = neg and string.sub(user, 2) or user
    local low = tonumber(string.sub(digits, -10)) % 1024
    if neg then low = (1024 - low) % 1024 end
    return low % shards
  end
  local h = 453 -- 2166136261 % 1024
  for i = 1, #user do
    h = (bit.bxor(h, string.byte(user, i)) * 403) % 1024 -- 16777619 % 1024
  end
  return h % shards
end
-- Returns ok, exists for a key that must hold `want` when present.
local function typed(key, want)
  local t = redis.call('TYPE', key).ok
  if t == 'none' then return true, false end
  return t == want, true
end
-- The B:meta values, each parsed as CREATE writes it; nil for garbage.
local PARSE = {
  winners = function(v)
    local n = toint(v)
    if n and n >= 1 and n <= MAX_WINNERS then return n end
  end,
  shards = function(v)
    local n = toint(v)
    if valid_shards(n) then return n end
  end,
  poolcap = function(v)
    local n = toint(v)
    if n and n >= 0 then return n end
  end,
  -- A counter JOIN keeps: at most 2^53 - 1, exact in a double (the
  -- module's bound too).
  latepooled = function(v)
    local n = toint(v)
    if n and n >= 0 and n <= MAX_COUNT then return n end
  end,
  highscore = function(v)
    local h = parse_highscore(v)
    if h and h <= 1 then return h end
  end,
  restore = function(v)
    if v == 'yes' then return true elseif v == 'no' then return false end
  end,
  state = function(v)
    if v == 'open' then return false elseif v == 'drawn' then return true end
  end,
}
-- Opens B:meta: returns its name, or nil when the bag does not exist, or
-- nil and a WRONGTYPE error.
local function find_meta(B)
  local meta = B .. ':meta'
  local ok, exists = typed(meta, 'hash')
  if not ok then return nil, redis.error_reply(WRONGTYPE) end
  if not exists then return nil end
  return meta
end
-- Reads the B:meta fields `names` (one HMGET) into a table of raw values.
local function read_meta(meta, names)
  local v = redis.call('HMGET', meta, unpack(names))
  local raw = {}
  for i = 1, #names do raw[names[i]] = v[i] end
  return raw
end
-- Returns the parsed value of field `name`, or nil and the corrupt-data error.
local function meta_value(meta, raw, name)
  local v = raw[name]
  local x = nil
  if v then x = PARSE[name](v) end
  if x == nil then return nil, corrupt(meta, name) end
  return x
end
-- `shards` and `state` decide which keys a write touches: read first; a
-- drawn bag takes no more writes.
local function scope(meta, raw)
  local shards, e = meta_value(meta, raw, 'shards')
  if e then return nil, e end
  local drawn, e2 = meta_value(meta, raw, 'state')
  if e2 then return nil, e2 end
  if drawn then return nil, ferr('bag is closed') end
  return shards
end
-- B:count: a non-negative integer; nil and an error otherwise.
local function read_count(key)
  local v = redis.call('GET', key)
  local n = toint(v)
  if not n or n < 0 or n > MAX_COUNT then return nil, corrupt(key) end
  return n, nil, v
end
-- Gives a key just created the bag's expiry: B:meta's absolute instant.
local function adopt_expiry(meta, key)
  local at = redis.call('PEXPIRETIME', meta)
  if at > 0 then redis.call('PEXPIREAT', key, at) end
end
local function score_text(score) return string.format('%.6f', tonumber(score)) end
