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
if l.wide then
  -- Every entry read (and checked) before anything is removed.
  local found = {}
  for j = 1, last do
    local w, err = wide_entry(B, l, ARGV[j])
    if w == nil then return err end
    if w then found[#found + 1] = { ARGV[j], w.name } end
  end
  for _, f in ipairs(found) do
    redis.call('ZREM', B, f[2])
    removed = removed + redis.call('HDEL', B .. ':time', f[1])
  end
  return removed
end
for j = 1, last do removed = removed + redis.call('ZREM', B, ARGV[j]) end
return removed

