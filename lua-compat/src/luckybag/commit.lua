-- LUCKYBAG.COMMIT key draw-token [user score [user score ...]] SPREAD n
-- LUCKYBAG.COMMIT K token [user score ...] SPREAD n -> OK: spread bag, draw
-- step 4 on shard 0, by the holder of the draw's lease: stores the global
-- winners in K:allwinners; the draw is final. The same list again: OK.
--@ keys 1

local B = KEYS[1]
if #ARGV < 3 then return arity('luckybag.commit') end
local last, declared = #ARGV, nil
if #ARGV >= 3 and string.upper(ARGV[#ARGV - 1]) == 'SPREAD' then
  local n, se = spread().spread_count('luckybag', ARGV[#ARGV])
  if se then return se end
  declared = n
  last = #ARGV - 2
end
if last < 1 then return arity('luckybag.commit') end
local token = ARGV[1]
local _, meta, e = draw_shard(B, declared, true)
if e then return e end
local all = B .. ':allwinners'
if not typed(all, 'zset') then return redis.error_reply(WRONGTYPE) end
local raw = read_meta(meta, {'winners', 'draw', 'drawtoken'})
local winners, e1 = meta_value(meta, raw, 'winners')
if e1 then return e1 end
local list, e2 = winner_list(ARGV, 2, last, winners)
if e2 then return e2 end
if raw.draw == 'drawn' then
  if same_list(stored_list(all, winners), list) then
    -- Written again (unchanged) for a WAIT after it, as the module
    -- replicates a repeated COMMIT.
    redis.call('HSET', meta, 'draw', 'drawn')
    return {ok = 'OK'}
  end
  return ferr('the draw was committed with other winners')
elseif raw.draw == 'drawing' then
  if raw.drawtoken ~= token then return ferr('draw in progress') end
elseif not raw.draw then
  return ferr('no draw in progress (LUCKYBAG.DRAWBEGIN first)')
else
  return corrupt(meta, 'draw')
end
write_list(meta, all, list)
redis.call('HSET', meta, 'draw', 'drawn')
redis.call('HDEL', meta, 'drawtoken', 'drawlease')
return {ok = 'OK'}
