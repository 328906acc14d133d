-- RANK.TOP key [count] [OFFSET offset]
-- Lua twin of RANK.TOP B [count] [OFFSET o] -> [member, points, ...]
-- KEYS[1] = B; ARGV = [count] [OFFSET o], verbatim.
--@ keys 1
--@ flags no-writes


local B = KEYS[1]
local count, offset, first = 10, 0, true
local i = 1
while i <= #ARGV do
  if string.upper(ARGV[i]) == 'OFFSET' then
    if i == #ARGV then return redis.error_reply(SYNTAX) end
    offset = int_in(ARGV[i + 1], 0, math.huge)
    if offset == nil then return redis.error_reply(NOT_INT) end
    i = i + 1
  elseif first then
    count = int_in(ARGV[i], 0, math.huge)
    if count == nil then return redis.error_reply(NOT_INT) end
  else
    return redis.error_reply(SYNTAX)
  end
  first = false
  i = i + 1
end
-- count is bounded so that no call sends a whole board (rank-range-max).
if count > RANGE_MAX then return rank_err('count must be at most ' .. RANGE_MAX .. ' (rank-range-max)') end
local l, e = open_board(B)
if not l then return e end
local len = redis.call('ZCARD', B)
if count == 0 or offset >= len then return {} end
local stop = math.min(offset + count - 1, len - 1)
local r = redis.call('ZREVRANGE', B, offset, stop, 'WITHSCORES')
local out = {}
for j = 1, #r, 2 do
  local member, points = entry_of(B, l, r[j], r[j + 1])
  if member == nil then return points end
  out[#out + 1] = member
  out[#out + 1] = points
end
return out

