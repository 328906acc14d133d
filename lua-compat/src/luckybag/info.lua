-- LUCKYBAG.INFO key
-- LUCKYBAG.INFO B -> {state, s, participants, n, pooled, n, winners, n, shards, n}
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
if #ARGV ~= 0 then return arity('luckybag.info') end
local meta, e = find_meta(B)
if e then return e end
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
return {'state', got.state and 'drawn' or 'open', 'participants', participants, 'pooled', pooled,
  'winners', got.winners, 'shards', got.shards}

