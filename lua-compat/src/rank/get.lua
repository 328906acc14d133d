-- RANK.GET key member
-- Lua twin of RANK.GET B member -> [points, rank, achieved-unix-ms] or nil
-- KEYS[1] = B; ARGV = member.
-- Shared helpers (the same block opens every RANK script, so that each
-- script stands alone). Numbers are doubles: every value the board holds
-- stays below 2^53 and all arithmetic here is kept exact.
--@ keys 1
--@ flags no-writes

-- End of the shared helpers.

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

