-- RANK.AROUND key member n
-- Lua twin of RANK.AROUND B member n -> [rank, member, points, ...] or nil
-- KEYS[1] = B; ARGV = member n.
--@ keys 1
--@ flags no-writes


local B = KEYS[1]
if #ARGV ~= 2 then return arity('rank.around') end
local n = int_in(ARGV[2], 0, math.huge)
if n == nil then return redis.error_reply(NOT_INT) end
if ARGV[1] == '' then return rank_err('user must not be empty') end
-- n is bounded so that no call walks a whole board (rank-range-max).
if n > RANGE_MAX then return rank_err('n must be at most ' .. RANGE_MAX .. ' (rank-range-max)') end
local l, e = open_board(B)
if not l then return e end
local stored = ARGV[1]
if l.wide then
  local w, err = wide_entry(B, l, ARGV[1])
  if w == nil then return err end
  if not w then return false end
  stored = w.name
else
  local score = redis.call('ZSCORE', B, ARGV[1])
  if not score then return false end
  if decode(l, score) == nil then return corrupt(B, ARGV[1]) end
end
local rank = redis.call('ZREVRANK', B, stored)
local start = math.max(0, rank - n)
local stop = math.min(rank + n, redis.call('ZCARD', B) - 1)
local r = redis.call('ZREVRANGE', B, start, stop, 'WITHSCORES')
local out = {}
for j = 1, #r, 2 do
  local member, points = entry_of(B, l, r[j], r[j + 1])
  if member == nil then return points end
  out[#out + 1] = start + (j - 1) / 2
  out[#out + 1] = member
  out[#out + 1] = points
end
return out

