-- RANK.COUNT key [SPREAD n]
-- Lua twin of RANK.COUNT B [SPREAD n] -> members
-- KEYS[1] = B; ARGV = [SPREAD n].
--@ keys 1
--@ flags no-writes


local B = KEYS[1]
local declared, de = only_spread(ARGV, 0, 'rank.count')
if de then return de end
local l, e = open_board(B, declared)
if not l then return e end
return redis.call('ZCARD', B)

