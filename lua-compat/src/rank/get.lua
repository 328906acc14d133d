-- RANK.GET key member
-- Lua twin of RANK.GET B member -> [points, rank, achieved-unix-ms] or nil
-- KEYS[1] = B; ARGV = member.
--@ keys 1
--@ flags no-writes


local B = KEYS[1]
if #ARGV ~= 1 then return arity('rank.get') end
if ARGV[1] == '' then return rank_err('user must not be empty') end
local l, e = open_board(B)
if not l then return e end
local score = redis.call('ZSCORE', B, ARGV[1])
if not score then return false end
local points, achieved = decode(l, score)
if points == nil then return corrupt(B, ARGV[1]) end
return { points, redis.call('ZREVRANK', B, ARGV[1]), achieved }

