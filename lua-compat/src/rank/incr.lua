-- RANK.INCR key member delta [NOW unix-ms] [SPREAD n]
-- Lua twin of RANK.INCR B member delta [NOW unix-ms] [SPREAD n] -> the new
-- points
-- KEYS[1] = B; ARGV = member delta [NOW unix-ms], verbatim.
--@ keys 1


local B = KEYS[1]
if #ARGV < 2 then return arity('rank.incr') end
local member = ARGV[1]
if member == '' then return rank_err('user must not be empty') end
local delta = ARGV[2]
if int(delta) == nil then return redis.error_reply(NOT_INT) end
local now, declared = nil, nil
local i = 3
while i <= #ARGV do
  local k = string.upper(ARGV[i])
  if k == 'NOW' then
    if i == #ARGV then return redis.error_reply(SYNTAX) end
    now = int_in(ARGV[i + 1], 0, EXACT_MAX)
    if now == nil then return redis.error_reply(NOT_INT) end
    i = i + 2
  elseif k == 'SPREAD' then
    if i == #ARGV then return redis.error_reply(SYNTAX) end
    local e
    declared, e = spread().spread_count('rank', ARGV[i + 1])
    if e then return e end
    i = i + 2
  else
    return redis.error_reply(SYNTAX)
  end
end
local l, sh = open_board(B, declared)
if not l then return sh end
if sh then
  local oe = spread().check_owner('rank', 'member', B, sh, member)
  if oe then return oe end
end
local t = tick(l, now or now_ms())
if t == nil then return rank_err('timestamp out of range') end
local cur = 0
local score = redis.call('ZSCORE', B, member)
if score then
  cur = decode(l, score)
  if cur == nil then return corrupt(B, member) end
end
-- cur + delta, exact: a delta of more than 15 digits is added in two
-- parts, so that a double never rounds a result that is in range.
local neg = string.sub(delta, 1, 1) == '-'
local d = neg and string.sub(delta, 2) or delta
local points
if #d <= 15 then
  points = cur + tonumber(delta)
else
  local hi, lo = tonumber(string.sub(d, 1, #d - 8)), tonumber(string.sub(d, #d - 7))
  if hi > 200000000 then return range_err(l) end
  if neg then hi, lo = -hi, -lo end
  points = (cur + lo) + hi * 100000000
end
if points > l.limit or points < -l.limit then return range_err(l) end
write_score(B, member, pack(l, points, t))
return points

