-- Lua twin of LIKE.RECENT: LIKE.RECENT B [n] -> [user, unix-ms, ...] newest first
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
local function syntax() return redis.error_reply('ERR syntax error') end
local function not_integer() return redis.error_reply('ERR value is not an integer or out of range') end

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

local function type_of(k) return redis.call('TYPE', k)['ok'] end

-- Without n: every recorded liker (the list is capped when written).
local n = math.huge
if #args >= 1 then
  n = parse_int(args[1])
  if n == nil or n < 0 then return not_integer() end
end
if #args > 1 then return syntax() end
local RECENT = B .. ':recent'
local tr = type_of(RECENT)
if tr ~= 'none' and tr ~= 'zset' then return redis.error_reply(WRONGTYPE) end
local card = redis.call('ZCARD', RECENT)
if n > card then n = card end
if n == 0 then return {} end
local r = redis.call('ZREVRANGE', RECENT, 0, n - 1, 'WITHSCORES')
local out = {}
for i = 1, #r, 2 do
  local id = parse_int(r[i])
  if id ~= nil then out[#out + 1] = id else out[#out + 1] = r[i] end
  out[#out + 1] = tonumber(r[i + 1])
end
return out
