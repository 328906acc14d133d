-- LIKE.RECENT key [count] [SPREAD n]
-- Lua twin of LIKE.RECENT: LIKE.RECENT B [n] [SPREAD n] -> [user, unix-ms, ...] newest first
-- KEYS: B
-- ARGV: like-max-id, like-promote-at, like-recent (the module's configs),
-- then the command's arguments after the key(s), verbatim.
-- Same replies, errors and derived keys as the module (see README.md).
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
local MAXID = tonumber(ARGV[1])
local PROMOTE_AT = tonumber(ARGV[2])
local RECENT_CAP = tonumber(ARGV[3])
local args = {}
for i = 4, #ARGV do args[#args + 1] = ARGV[i] end
-- Without n: every recorded liker (the list is capped when written).
local n = math.huge
local i, declared = 1, nil
if #args >= 1 and string.upper(args[1]) ~= 'SPREAD' then
  n = parse_int(args[1])
  if n == nil or n < 0 then return not_integer() end
  i = 2
end
if i <= #args then
  if string.upper(args[i]) ~= 'SPREAD' or i + 1 > #args then return syntax() end
  local e
  declared, e = spread().spread_count('like', args[i + 1])
  if e then return e end
  i = i + 2
end
if i <= #args then return syntax() end
local sh, se = like_spread_of(B, declared)
if se then return se end
local RECENT = B .. ':recent'
local tr = type_of(RECENT)
if tr ~= 'none' and tr ~= 'zset' then return redis.error_reply(WRONGTYPE) end
if not sh and tr == 'none' then
  local e = spread().refuse_spread_base('like', B, LIKE_DATA)
  if e then return e end
end
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

