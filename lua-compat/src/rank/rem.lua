-- RANK.REM key member [member ...] [SPREAD n]
-- Lua twin of RANK.REM B member [member ...] [SPREAD n] -> number removed
-- KEYS[1] = B; ARGV = the members [SPREAD n].
--@ keys 1
--@ flags allow-oom


local B = KEYS[1]
if #ARGV < 1 then return arity('rank.rem') end
-- A trailing SPREAD n (after at least one member).
local last, declared = #ARGV, nil
if #ARGV >= 3 and string.upper(ARGV[#ARGV - 1]) == 'SPREAD' then
  local de
  declared, de = spread().spread_count('rank', ARGV[#ARGV])
  if de then return de end
  last = #ARGV - 2
end
for j = 1, last do
  if ARGV[j] == '' then return rank_err('user must not be empty') end
end
local l, sh = open_board(B, declared)
if not l then return sh end
if sh then
  for j = 1, last do
    local oe = spread().check_owner('rank', 'member', B, sh, ARGV[j])
    if oe then return oe end
  end
end
local removed = 0
for j = 1, last do removed = removed + redis.call('ZREM', B, ARGV[j]) end
return removed

