-- LUCKYBAG.DRAWBEGIN key draw-token [LEASE ms] [NOW unix-ms] SPREAD n
-- LUCKYBAG.DRAWBEGIN K token [LEASE ms] [NOW unix-ms] SPREAD n -> {drawing, winners}
-- or {drawn, winners, user, score, ...}: spread bag, draw step 1 on shard 0
-- (docs/spread.md): takes the draw's lease for the token. The lease's end
-- comes from the server clock (TIME) unless NOW is given, and is written
-- as an absolute time, which replicates as it is.
--@ keys 1

local B = KEYS[1]
if #ARGV < 1 then return arity('luckybag.drawbegin') end
local token = ARGV[1]
local lease, now, declared = 30000, nil, nil
local i = 2
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  local v = ARGV[i + 1]
  if kw ~= 'LEASE' and kw ~= 'NOW' and kw ~= 'SPREAD' then return syntax() end
  if v == nil then return syntax() end
  if kw == 'LEASE' then
    local n = toint(v)
    if not n or n < 1 or n > 86400000 then return notint() end
    lease = n
  elseif kw == 'NOW' then
    -- 0 to 253402300799999 (year 9999), as in the other families.
    local n = toint(v)
    if not n or string.byte(v, 1) == 45 or n > 253402300799999 then return notint() end
    now = v
  else
    local n, se = spread().spread_count('luckybag', v)
    if se then return se end
    declared = n
  end
  i = i + 2
end
if #token == 0 or #token > 128 then return ferr('a draw token must be 1 to 128 bytes') end
local _, meta, e = draw_shard(B, declared, true)
if e then return e end
local all = B .. ':allwinners'
if not typed(all, 'zset') then return redis.error_reply(WRONGTYPE) end
local raw = read_meta(meta, {'winners', 'draw', 'drawtoken', 'drawlease'})
local winners, e1 = meta_value(meta, raw, 'winners')
if e1 then return e1 end
if now == nil then now = fmt(clock_ms()) end
if raw.draw == 'drawn' then
  local out = {'drawn', winners}
  for _, w in ipairs(stored_list(all, winners)) do
    out[#out + 1] = w[1]
    out[#out + 1] = r_text(w[2])
  end
  return out
elseif raw.draw == 'drawing' then
  if not raw.drawtoken then return corrupt(meta, 'drawtoken') end
  local lease_end = raw.drawlease
  if not lease_end or not toint(lease_end) then return corrupt(meta, 'drawlease') end
  if raw.drawtoken ~= token and int_text_gt(lease_end, now) then return ferr('draw in progress') end
elseif raw.draw then
  return corrupt(meta, 'draw')
end
redis.call('HSET', meta, 'draw', 'drawing', 'drawtoken', token, 'drawlease', dec_add(now, lease))
return {'drawing', winners}
