-- RANK.COUNT key
-- Lua twin of RANK.COUNT B -> members
-- KEYS[1] = B; ARGV empty.
--@ keys 1
--@ flags no-writes


local B = KEYS[1]
if #ARGV ~= 0 then return arity('rank.count') end
local l, e = open_board(B)
if not l then return e end
return redis.call('ZCARD', B)

