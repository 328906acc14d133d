-- RANK.MERGE destination numkeys key [key ...] [AGGREGATE SUM|MAX] [TTL seconds] [NOW unix-ms]
-- Lua twin of RANK.MERGE dest numkeys src [src ...] [AGGREGATE SUM|MAX]
-- [TTL seconds] [NOW unix-ms] -> members in dest
-- KEYS = dest, src1 ... srcN; ARGV = numkeys [options], verbatim.
--@ keys n


if #KEYS < 2 or #ARGV < 1 then return arity('rank.merge') end
local dest = KEYS[1]
local numkeys = int_in(ARGV[1], 1, math.huge)
if numkeys == nil then return redis.error_reply(NOT_INT) end
if numkeys ~= #KEYS - 1 then return redis.error_reply(SYNTAX) end
local agg, ttl, now = 'SUM', nil, nil
local i = 2
while i <= #ARGV do
  local k = string.upper(ARGV[i])
  local v = ARGV[i + 1]
  if k == 'AGGREGATE' or k == 'TTL' or k == 'NOW' then
    if v == nil then return redis.error_reply(SYNTAX) end
    i = i + 1
  end
  if k == 'AGGREGATE' then
    v = string.upper(v)
    if v ~= 'SUM' and v ~= 'MAX' then return redis.error_reply(SYNTAX) end
    agg = v
  elseif k == 'TTL' then
    ttl = int_in(v, 1, 10000000000)
    if ttl == nil then return redis.error_reply(NOT_INT) end
  elseif k == 'NOW' then
    now = int_in(v, 0, EXACT_MAX)
    if now == nil then return redis.error_reply(NOT_INT) end
  else
    return redis.error_reply(SYNTAX)
  end
  i = i + 1
end
-- Every type check first (dest, then each source), then the layouts.
local types = {}
for j = 1, #KEYS do
  local ok, tb, tm = board_types(KEYS[j])
  if not ok then return tb end
  types[j] = {tb, tm}
end
-- A spread board has no MERGE: its shards live in other slots than any
-- single-slot board (docs/rank.md).
for j = 1, #KEYS do
  local err = refuse_spread('RANK.MERGE', KEYS[j], types[j][1], types[j][2])
  if err then return err end
end
local dl, e = board_layout(dest, false)
if not dl then return e end
-- A wide destination's index is replaced with the board.
if dl.wide and not typed(dest .. ':time', 'hash') then return redis.error_reply(WRONGTYPE) end
local layouts = {}
for j = 2, #KEYS do
  local l, err = board_layout(KEYS[j], false)
  if not l then return err end
  layouts[j] = l
end
now = now or now_ms()
local acc, order = {}, {}
for j = 2, #KEYS do
  local l = layouts[j]
  local r = redis.call('ZRANGE', KEYS[j], 0, -1, 'WITHSCORES')
  for x = 1, #r, 2 do
    local m, points, ms = decode_stored(l, r[x], r[x + 1])
    if m == nil then return corrupt(KEYS[j], r[x]) end
    if not ms then ms = now end
    local a = acc[m]
    local hi = math.floor(points / SPLIT)
    local lo = points - hi * SPLIT
    if not a then
      acc[m] = { hi = hi, lo = lo, points = points, ms = ms }
      order[#order + 1] = m
    elseif agg == 'SUM' then
      a.hi, a.lo = a.hi + hi, a.lo + lo
      if ms > a.ms then a.ms = ms end
    else
      local better = points > a.points
      if points == a.points then
        if dl.tiebreak == 'EARLIER' then better = ms < a.ms
        elseif dl.tiebreak == 'LATER' then better = ms > a.ms end
      end
      if better then acc[m] = { hi = hi, lo = lo, points = points, ms = ms } end
    end
  end
end
-- out: score, stored name pairs for ZADD; index: member, time pairs of
-- a wide destination's B:time.
local out, index = {}, {}
for _, m in ipairs(order) do
  local a = acc[m]
  local points = a.hi * SPLIT + a.lo
  local t = tick(dl, a.ms)
  if t == nil then return rank_err('timestamp out of range') end
  if points > dl.limit or points < -dl.limit then return range_err(dl) end
  if dl.wide then
    out[#out + 1] = points
    out[#out + 1] = wide_name(dl, t, m)
    index[#index + 1] = m
    index[#index + 1] = string.format('%d', t)
  else
    out[#out + 1] = pack(dl, points, t)
    out[#out + 1] = m
  end
end
redis.call('UNLINK', dest)
if dl.wide then redis.call('UNLINK', dest .. ':time') end
for x = 1, #out, 1000 do
  local args = {}
  for y = x, math.min(x + 999, #out) do args[#args + 1] = out[y] end
  redis.call('ZADD', dest, unpack(args))
  if dl.wide then redis.call('HSET', dest .. ':time', unpack(index, x, math.min(x + 999, #out))) end
end
local meta = dest .. ':meta'
if ttl then
  if #out > 0 then
    redis.call('PEXPIRE', dest, ttl * 1000)
    if dl.wide then redis.call('PEXPIRE', dest .. ':time', ttl * 1000) end
  end
  redis.call('PEXPIRE', meta, ttl * 1000)
elseif #out > 0 then
  local at = redis.call('PEXPIRETIME', meta)
  if at > 0 then
    redis.call('PEXPIREAT', dest, at)
    if dl.wide then redis.call('PEXPIREAT', dest .. ':time', at) end
  end
end
return #out / 2

