-- RANK.REM key member [member ...]
-- Lua twin of RANK.REM B member [member ...] -> number removed
-- KEYS[1] = B; ARGV = the members.
--@ keys 1


local B = KEYS[1]
if #ARGV < 1 then return arity('rank.rem') end
for j = 1, #ARGV do
  if ARGV[j] == '' then return rank_err('user must not be empty') end
end
local l, e = open_board(B)
if not l then return e end
local removed = 0
for j = 1, #ARGV do removed = removed + redis.call('ZREM', B, ARGV[j]) end
return removed

