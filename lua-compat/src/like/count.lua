-- LIKE.COUNT key [SPREAD n]
-- Lua twin of LIKE.COUNT: LIKE.COUNT B [SPREAD n] -> count
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
local declared, e = only_spread(args, 'like.count')
if e then return e end
local sh, e2 = like_spread_of(B, declared)
if e2 then return e2 end
local p, err = read_post(B, true, not sh)
if not p then return err end
return p.count

