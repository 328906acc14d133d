-- RANK.POSITION key count [MEMBER member | AT score member] [SPREAD n]
-- Lua twin of RANK.POSITION B count [MEMBER m | AT score m] [SPREAD n]
-- -> [place, [member, points, score] or nil, [above ...], [below ...]]
-- KEYS[1] = B; ARGV = count [options], verbatim. The per-shard read of a
-- spread board (docs/spread.md): how many members rank above a position
-- (the board's top, a member, or a packed score and member that may be on
-- another shard), the entry at it, and the count entries just above and
-- below it, each with its packed score.
--@ keys 1
--@ flags no-writes


local B = KEYS[1]
if #ARGV < 1 then return arity('rank.position') end
local count = int_in(ARGV[1], 0, math.huge)
if count == nil then return redis.error_reply(NOT_INT) end
-- kind: nil (the top), 'MEMBER' or 'AT'.
local kind, member, at_score, declared = nil, nil, nil, nil
local i = 2
while i <= #ARGV do
  local k = string.upper(ARGV[i])
  if k == 'MEMBER' and kind == nil then
    if i == #ARGV then return redis.error_reply(SYNTAX) end
    member = ARGV[i + 1]
    if member == '' then return rank_err('user must not be empty') end
    kind = 'MEMBER'
    i = i + 2
  elseif k == 'AT' and kind == nil then
    if i == #ARGV then return redis.error_reply(SYNTAX) end
    at_score = int_in(ARGV[i + 1], -EXACT_MAX, EXACT_MAX)
    if at_score == nil then return redis.error_reply(NOT_INT) end
    if i + 1 == #ARGV then return redis.error_reply(SYNTAX) end
    member = ARGV[i + 2]
    if member == '' then return rank_err('user must not be empty') end
    kind = 'AT'
    i = i + 3
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
-- count is bounded so that no call sends a whole board (rank-range-max).
if count > RANGE_MAX then return rank_err('count must be at most ' .. RANGE_MAX .. ' (rank-range-max)') end
local l, sh = open_board(B, declared)
if not l then return sh end
-- [member, points, score] of an entry ([member, points, stored name] on a
-- LAYOUT WIDE board); nil and the error for what the module never writes.
local function entry(m, score)
  local member, points = entry_of(B, l, m, score)
  if member == nil then return nil, points end
  if l.wide then return {member, points, m} end
  return {m, points, tonumber(score)}
end
-- place: the place the position takes on this board; at_entry: the
-- (member, score) there when the board holds the position itself.
local place, here = 0, nil
if kind == 'MEMBER' then
  if sh then
    local oe = spread().check_owner('rank', 'member', B, sh, member)
    if oe then return oe end
  end
  local name, score = member, nil
  if l.wide then
    -- A position on a wide board is (points, stored name).
    local w, err = wide_entry(B, l, member)
    if w == nil then return err end
    if not w then return false end
    name, score = w.name, w.points
  else
    score = redis.call('ZSCORE', B, member)
    if not score then return false end
    if decode(l, score) == nil then return corrupt(B, member) end
  end
  place = redis.call('ZREVRANK', B, name)
  here = {name, score}
elseif kind == 'AT' then
  -- Members above (score, member): a higher score, or the same score and
  -- a byte-wise greater member (the order of ZREVRANGE).
  local s = string.format('%d', at_score)
  local higher = redis.call('ZCOUNT', B, '(' .. s, '+inf')
  local ties = redis.call('ZCOUNT', B, s, s)
  place = higher
  if ties > 0 and ties <= TIE_WALK_MAX then
    -- A small tie block is walked, greater members first.
    for _, m in ipairs(redis.call('ZREVRANGEBYSCORE', B, s, s)) do
      if not bytes_gt(m, member) then break end
      place = place + 1
    end
  elseif ties > 0 then
    -- A large one is searched by halving, one place per step.
    local lo, hi = higher, higher + ties
    while lo < hi do
      local mid = lo + math.floor((hi - lo) / 2)
      local r = redis.call('ZREVRANGE', B, mid, mid)
      if r[1] and bytes_gt(r[1], member) then lo = mid + 1 else hi = mid end
    end
    place = lo
  end
  local score = redis.call('ZSCORE', B, member)
  if score and tonumber(score) == at_score then here = {member, score} end
end
local above, below = {}, {}
if count > 0 then
  local start = math.max(0, place - count)
  local stop = place + count + (here and 1 or 0)
  local r = redis.call('ZREVRANGE', B, start, stop - 1, 'WITHSCORES')
  for j = 1, #r, 2 do
    local p = start + (j - 1) / 2
    local list = nil
    if p < place then
      list = above
    elseif not (p == place and here) and #below < count * 3 then
      list = below
    end
    if list then
      local en, err = entry(r[j], r[j + 1])
      if not en then return err end
      for _, v in ipairs(en) do list[#list + 1] = v end
    end
  end
end
local at = false
if here then
  local en, err = entry(here[1], here[2])
  if not en then return err end
  at = en
end
return {place, at, above, below}
