-- LIKE.CHECK key user [user ...] [SPREAD n]
-- Lua twin of LIKE.CHECK: LIKE.CHECK B user [user ...] [SPREAD n] -> [0|1, ...]
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
if #args < 1 then return arity('like.check') end
local last, declared, se = trailing_spread(args, 1)
if se then return se end
local list = {}
for i = 1, last do
  local a = args[i]
  if a == '' then return redis.error_reply('ERR like: user must not be empty') end
  list[i] = parse_user(a, MAXID)
  if list[i] == nil then
    return redis.error_reply('ERR like: user id must be an integer from 0 to ' .. fmt(MAXID))
  end
end
-- A shard of a spread post: every user must belong to it; it holds id / n.
local sh, e = like_spread_of(B, declared)
if e then return e end
if sh then
  for i = 1, last do
    local s = list[i] % sh.n
    if s ~= sh.i then return spread().wrong_shard('like', 'user', B, sh, args[i], s) end
    list[i] = math.floor(list[i] / sh.n)
  end
end
local p, err = read_post(B, false, not sh)
if not p then return err end
local flags, err2 = likes_of(p, list)
if not flags then return err2 end
local out = {}
for i, f in ipairs(flags) do out[i] = f and 1 or 0 end
return out

