-- LUCKYBAG.FREEZE key count SPREAD n
-- LUCKYBAG.FREEZE K count SPREAD n -> {user, score, ...}: spread bag, draw
-- step 2 on every shard: closes the shard to JOIN, TASK, LEAVE and ENTER
-- (open -> frozen) and answers its best `count` candidates in the draw's
-- order. A frozen shard answers again from the same pool; its state is
-- written again (unchanged), so that a WAIT after the call also covers a
-- freeze made by another connection, as the module's verbatim replication.
--@ keys 1

local B = KEYS[1]
if #ARGV < 1 then return arity('luckybag.freeze') end
local count = toint(ARGV[1])
if not count or count < 1 or count > MAX_WINNERS then return notint() end
local declared = nil
if #ARGV > 1 then
  if #ARGV ~= 3 or string.upper(ARGV[2]) ~= 'SPREAD' then return arity('luckybag.freeze') end
  local n, se = spread().spread_count('luckybag', ARGV[3])
  if se then return se end
  declared = n
end
local _, meta, e = draw_shard(B, declared, false)
if e then return e end
local raw = read_meta(meta, {'shards', 'state'})
local shards, e1 = meta_value(meta, raw, 'shards')
if e1 then return e1 end
local state, e2 = meta_value(meta, raw, 'state')
if e2 then return e2 end
local top, e3 = top_candidates(B, shards, count)
if e3 then return e3 end
if state == 'open' then state = 'frozen' end
redis.call('HSET', meta, 'state', state)
local out = {}
for _, w in ipairs(top) do
  out[#out + 1] = w[1]
  out[#out + 1] = r_text(w[2])
end
return out
