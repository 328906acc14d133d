-- LIKE.CHECK key user [user ...]
-- Lua twin of LIKE.CHECK: LIKE.CHECK B user [user ...] -> [0|1, ...]
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
local list = {}
for i, a in ipairs(args) do
  if a == '' then return redis.error_reply('ERR like: user must not be empty') end
  list[i] = parse_user(a, MAXID)
  if list[i] == nil then
    return redis.error_reply('ERR like: user id must be an integer from 0 to ' .. fmt(MAXID))
  end
end
local p, err = read_post(B, false)
if not p then return err end
local flags, err2 = likes_of(p, list)
if not flags then return err2 end
local out = {}
for i, f in ipairs(flags) do out[i] = f and 1 or 0 end
return out

