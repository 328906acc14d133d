-- RANK.COUNT key
-- Lua twin of RANK.COUNT B -> members
-- KEYS[1] = B; ARGV empty.
-- Shared helpers (the same block opens every RANK script, so that each
-- script stands alone). Numbers are doubles: every value the board holds
-- stays below 2^53 and all arithmetic here is kept exact.
--@ keys 1
--@ flags no-writes

-- End of the shared helpers.

local B = KEYS[1]
if #ARGV ~= 0 then return arity('rank.count') end
local l, e = open_board(B)
if not l then return e end
return redis.call('ZCARD', B)

