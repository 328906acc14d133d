-- Lua twin of LIKE.COMMON: LIKE.COMMON B1 B2 -> users who like both, ascending
-- KEYS: B1, B2
-- ARGV: like-max-id, like-promote-at, like-recent (the module's configs),
--       then the command's arguments after the key(s), verbatim.
-- Same replies, errors and derived keys as the module (see README.md).
local B = KEYS[1]
local MAXID = tonumber(ARGV[1])
local PROMOTE_AT = tonumber(ARGV[2])
local RECENT_CAP = tonumber(ARGV[3])
local args = {}
for i = 4, #ARGV do args[#args + 1] = ARGV[i] end

local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
local function arity(cmd)
  return redis.error_reply("ERR wrong number of arguments for '" .. cmd .. "' command")
end
local function syntax() return redis.error_reply('ERR syntax error') end
local function not_integer() return redis.error_reply('ERR value is not an integer or out of range') end
local function bad_user()
  return redis.error_reply('ERR like: user id must be an integer from 0 to ' .. string.format('%d', MAXID))
end

-- Redis's string2ll: optional '-', digits, no leading zeros, within int64.
local function parse_int(s)
  if type(s) ~= 'string' or #s == 0 or #s > 20 then return nil end
  local neg = string.sub(s, 1, 1) == '-'
  local d = neg and string.sub(s, 2) or s
  if #d == 0 or not string.match(d, '^%d+$') then return nil end
  if #d > 1 and string.sub(d, 1, 1) == '0' then return nil end
  if neg and d == '0' then return nil end
  if #d > 19 or (#d == 19 and d > (neg and '9223372036854775808' or '9223372036854775807')) then return nil end
  return tonumber(s)
end

-- A user id: a canonical non-negative integer up to max.
local function parse_user(s, max)
  if type(s) ~= 'string' or #s == 0 or #s > 20 or not string.match(s, '^%d+$') then return nil end
  if #s > 1 and string.sub(s, 1, 1) == '0' then return nil end
  local v = tonumber(s)
  if max ~= nil and v > max then return nil end
  return v
end

local function type_of(k) return redis.call('TYPE', k)['ok'] end

-- The form of a post's likes: 'bitmap', 'set' or 'none'; nil on WRONGTYPE.
local function form_of(base)
  local ts, tb = type_of(base .. ':set'), type_of(base .. ':bits')
  if (ts ~= 'none' and ts ~= 'set') or (tb ~= 'none' and tb ~= 'string') then return nil end
  if tb == 'string' then return 'bitmap' elseif ts == 'set' then return 'set' end
  return 'none'
end

-- B:count when it holds a non-negative integer, else counted (no write).
local function read_count(base, form)
  if form == 'none' then return 0 end
  local v = redis.call('GET', base .. ':count')
  if v then
    local n = parse_int(v)
    if n ~= nil and n >= 0 then return n end
  end
  if form == 'set' then return redis.call('SCARD', base .. ':set') end
  return redis.call('BITCOUNT', base .. ':bits')
end


if #args ~= 0 then return arity('like.common') end
local B2 = KEYS[2]
local f1, f2 = form_of(B), form_of(B2)
if f1 == nil or f2 == nil then return redis.error_reply(WRONGTYPE) end
local out = {}
local function ids_of(members)
  local r = {}
  for _, m in ipairs(members) do
    local v = parse_user(m, nil)
    if v ~= nil then r[#r + 1] = v end
  end
  return r
end
if f1 == 'none' or f2 == 'none' then
  return out
elseif f1 == 'set' and f2 == 'set' then
  out = ids_of(redis.call('SINTER', B .. ':set', B2 .. ':set'))
elseif f1 == 'bitmap' and f2 == 'bitmap' then
  local a = redis.call('GET', B .. ':bits')
  local b = redis.call('GET', B2 .. ':bits')
  for i = 1, math.min(#a, #b) do
    local both = bit.band(string.byte(a, i), string.byte(b, i))
    if both ~= 0 then
      for j = 0, 7 do
        if bit.band(both, bit.rshift(128, j)) ~= 0 then out[#out + 1] = (i - 1) * 8 + j end
      end
    end
  end
else
  local set, bits = B .. ':set', B2 .. ':bits'
  if f1 == 'bitmap' then set, bits = B2 .. ':set', B .. ':bits' end
  for _, v in ipairs(ids_of(redis.call('SMEMBERS', set))) do
    if redis.call('GETBIT', bits, string.format('%d', v)) == 1 then out[#out + 1] = v end
  end
end
table.sort(out)
return out
