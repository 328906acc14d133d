-- Lua twin of LIKE.INFO: LIKE.INFO B -> [encoding, set|bitmap|none, count, n, bytes, n]
-- KEYS: B
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

-- The memory model of promotion (docs/like.md): a key costs 64 bytes; a
-- bitmap adds its length; a set of at most 512 ids (an intset) adds 8 plus
-- 2, 4 or 8 bytes per id by the largest id; a larger set 48 bytes per id.
local function bitmap_memory(len) return 64 + len end
local function set_memory(n, top)
  if n <= 512 then
    local w = 8
    if top <= 32767 then w = 2 elseif top <= 2147483647 then w = 4 end
    return 72 + n * w
  end
  return 64 + 48 * n
end

if #args ~= 0 then return arity('like.info') end
local form = form_of(B)
if form == nil then return redis.error_reply(WRONGTYPE) end
local tc = type_of(B .. ':count')
if tc ~= 'none' and tc ~= 'string' then return redis.error_reply(WRONGTYPE) end
local count = read_count(B, form)
-- The modelled memory of the structure, the figure promotion compares.
local bytes = 0
if form == 'set' then
  local n, top = redis.call('SCARD', B .. ':set'), 0
  if n <= 512 then
    for _, m in ipairs(redis.call('SMEMBERS', B .. ':set')) do
      local v = parse_user(m, nil)
      if v == nil then v = 2 ^ 63 end
      if v > top then top = v end
    end
  end
  bytes = set_memory(n, top)
elseif form == 'bitmap' then
  bytes = bitmap_memory(redis.call('STRLEN', B .. ':bits'))
end
return {'encoding', form, 'count', count, 'bytes', bytes}
