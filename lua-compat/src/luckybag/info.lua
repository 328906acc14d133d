-- LUCKYBAG.INFO key [SPREAD n]
-- LUCKYBAG.INFO B -> {state, s, participants, n, pooled, n, winners, n, shards, n}
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
local declared = nil
if #ARGV ~= 0 then
  if #ARGV ~= 2 or string.upper(ARGV[1]) ~= 'SPREAD' then return arity('luckybag.info') end
  local n, ce = spread().spread_count('luckybag', ARGV[2])
  if ce then return ce end
  declared = n
end
local meta, e = find_meta(B)
if e then return e end
local sh, se = bag_spread_of(B, declared, meta, nil)
if se then return se end
if not meta then return {} end
local count = B .. ':count'
local ok, exists = typed(count, 'string')
if not ok then return redis.error_reply(WRONGTYPE) end
local raw = read_meta(meta, {'winners', 'shards', 'poolcap', 'state', 'latepooled'})
local got = {}
for _, name in ipairs({'winners', 'shards', 'poolcap', 'state', 'latepooled'}) do
  local v, e1 = meta_value(meta, raw, name)
  if e1 then return e1 end
  got[name] = v
end
local participants = 0
if exists then
  local n, e2 = read_count(count)
  if e2 then return e2 end
  participants = n
end
-- Everyone up to the cap entered the pool, then the late high scores.
local pooled = math.min(participants, got.poolcap) + got.latepooled
if pooled > MAX_COUNT then return overflow(meta, 'latepooled') end
local out = {'state', got.state, 'participants', participants, 'pooled', pooled,
  'winners', got.winners, 'shards', got.shards}
-- A shard of a spread bag says which one it is; shard 0 also gives the
-- state of the bag's draw.
if sh then
  for _, v in ipairs({'spread', sh.n, 'shard', sh.i}) do out[#out + 1] = v end
  if sh.i == 0 then
    local d = redis.call('HGET', meta, 'draw') or 'none'
    if d ~= 'none' and d ~= 'drawing' and d ~= 'drawn' then return corrupt(meta, 'draw') end
    out[#out + 1] = 'draw'
    out[#out + 1] = d
  end
end
return out

