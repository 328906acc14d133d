-- RANK.ADD key member points [GT|LT] [NOW unix-ms] [SPREAD n] [IDEM token]
-- Lua twin of RANK.ADD B member points [GT|LT] [NOW unix-ms] [SPREAD n]
-- -> points stored
-- KEYS[1] = B; ARGV = member points [options], verbatim.
--@ keys 1
--@ idem -4


local B = KEYS[1]
if #ARGV < 2 then return arity('rank.add') end
local member = ARGV[1]
if member == '' then return rank_err('user must not be empty') end
local points = int(ARGV[2])
if points == nil then return redis.error_reply(NOT_INT) end
local cond, now, declared = nil, nil, nil
local i = 3
while i <= #ARGV do
  local k = string.upper(ARGV[i])
  if k == 'GT' and cond ~= 'LT' then
    cond = 'GT'
  elseif k == 'LT' and cond ~= 'GT' then
    cond = 'LT'
  elseif k == 'NOW' then
    if i == #ARGV then return redis.error_reply(SYNTAX) end
    now = int_in(ARGV[i + 1], 0, EXACT_MAX)
    if now == nil then return redis.error_reply(NOT_INT) end
    i = i + 1
  elseif k == 'SPREAD' then
    if i == #ARGV then return redis.error_reply(SYNTAX) end
    local e
    declared, e = spread().spread_count('rank', ARGV[i + 1])
    if e then return e end
    i = i + 1
  else
    return redis.error_reply(SYNTAX)
  end
  i = i + 1
end
local l, sh = open_board(B, declared)
if not l then return sh end
if sh then
  local oe = spread().check_owner('rank', 'member', B, sh, member)
  if oe then return oe end
end
local t = tick(l, now or now_ms())
if t == nil then return rank_err('timestamp out of range') end
if points > l.limit or points < -l.limit then return range_err(l) end
if l.wide then
  local e, err = wide_entry(B, l, member)
  if e == nil then return err end
  if e then
    local cur = e.points
    if cur == points or (cond == 'GT' and points < cur) or (cond == 'LT' and points > cur) then
      return cur
    end
    write_wide(B, l, member, e.name, points, t)
  else
    write_wide(B, l, member, nil, points, t)
  end
  return points
end
local score = redis.call('ZSCORE', B, member)
if score then
  local cur = decode(l, score)
  if cur == nil then return corrupt(B, member) end
  if cur == points or (cond == 'GT' and points < cur) or (cond == 'LT' and points > cur) then
    return cur
  end
end
write_score(B, member, pack(l, points, t))
return points
