-- LUCKYBAG.DRAW key
-- LUCKYBAG.DRAW B -> {user, score, ...} the winners, best score first
--@ keys 1

local B = KEYS[1]
if #ARGV ~= 0 then return arity('luckybag.draw') end
local meta, e = find_meta(B)
if e then return e end
local sh, se = bag_spread_of(B, nil, meta, nil)
if se then return se end
if sh then
  return ferr("'" .. key_text(B) .. "' is shard " .. sh.i .. ' of a bag spread over ' .. sh.n
    .. ' shards: draw it with a client library (docs/spread.md)')
end
if not meta then return ferr('no such bag') end
local winners = B .. ':winners'
if not typed(winners, 'zset') then return redis.error_reply(WRONGTYPE) end
local raw = read_meta(meta, {'shards', 'state', 'winners'})
local shards, e1 = meta_value(meta, raw, 'shards')
if e1 then return e1 end
-- The single-slot draw knows `open` and `drawn` only.
if raw.state ~= 'open' and raw.state ~= 'drawn' then return corrupt(meta, 'state') end
local drawn = raw.state == 'drawn'
local out = {}
if drawn then
  local n, e3 = meta_value(meta, raw, 'winners')
  if e3 then return e3 end
  local r = redis.call('ZREVRANGE', winners, 0, n - 1, 'WITHSCORES')
  for i = 1, #r, 2 do
    out[#out + 1] = r[i]
    out[#out + 1] = score_text(r[i + 1])
  end
  return out
end
for s = 0, shards - 1 do
  if not typed(B .. ':cand:' .. s, 'zset') then return redis.error_reply(WRONGTYPE) end
end
local n, e4 = meta_value(meta, raw, 'winners')
if e4 then return e4 end
-- The top n of every shard with a score in [0, 1], as ZREVRANGEBYSCORE
-- gives them: score descending, then member descending.
local tops, pos = {}, {}
for s = 0, shards - 1 do
  tops[s + 1] = redis.call('ZREVRANGEBYSCORE', B .. ':cand:' .. s, 1, 0, 'WITHSCORES', 'LIMIT', 0, n)
  pos[s + 1] = 1
end
-- Merge: repeatedly take the best head among the shards.
local picked = {}
while #picked < n do
  local best, bs, bm, bscore = nil, nil, nil, nil
  for s = 1, #tops do
    local p = pos[s]
    local m = tops[s][p]
    if m then
      local sc = tonumber(tops[s][p + 1])
      if not best or sc > bs or (sc == bs and bytes_gt(m, bm)) then
        best, bs, bm, bscore = s, sc, m, tops[s][p + 1]
      end
    end
  end
  if not best then break end
  pos[best] = pos[best] + 2
  picked[#picked + 1] = {bm, bscore}
end
redis.call('DEL', winners)
for i = 1, #picked, 500 do
  local args = {}
  for j = i, math.min(i + 499, #picked) do
    args[#args + 1] = picked[j][2]
    args[#args + 1] = picked[j][1]
  end
  redis.call('ZADD', winners, unpack(args))
end
if #picked > 0 then adopt_expiry(meta, winners) end
redis.call('HSET', meta, 'state', 'drawn')
for i = 1, #picked do
  out[#out + 1] = picked[i][1]
  out[#out + 1] = score_text(picked[i][2])
end
return out

