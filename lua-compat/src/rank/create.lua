-- RANK.CREATE key [LAYOUT PACKED|WIDE] [TIEBREAK EARLIER|LATER|NONE] [UNIT MS|S] [DIGITS digits] [EPOCH unix-ms] [TTL seconds] [NOW unix-ms] [SPREAD n]
-- Lua twin of RANK.CREATE B [TIEBREAK EARLIER|LATER|NONE] [UNIT MS|S]
-- [DIGITS d] [EPOCH unix-ms] [TTL seconds] [NOW unix-ms] [SPREAD n] -> OK
-- KEYS[1] = B; ARGV = the options, verbatim. Writes B:meta. With SPREAD
-- n, B is shard i of n of its base ({<tag>}base, docs/spread.md) and
-- B:meta records spread n and shard i next to the layout; creating a
-- shard again with the same layout and count answers OK, changes nothing.
--@ keys 1


local B = KEYS[1]
local l = { tiebreak = 'EARLIER', unit = 'S', epoch = 0 }
local digits, ttl, now, n = nil, nil, nil, nil
-- LAYOUT WIDE, and whether an option it does not take was given.
local wide, packed_only = false, false
local i = 1
while i <= #ARGV do
  local k = string.upper(ARGV[i])
  local v = ARGV[i + 1]
  if k == 'TIEBREAK' or k == 'UNIT' or k == 'DIGITS' or k == 'EPOCH' or k == 'TTL' or k == 'NOW'
    or k == 'SPREAD' or k == 'LAYOUT' then
    if v == nil then return redis.error_reply(SYNTAX) end
    i = i + 1
  end
  if k == 'TIEBREAK' then
    v = string.upper(v)
    if v ~= 'EARLIER' and v ~= 'LATER' and v ~= 'NONE' then return redis.error_reply(SYNTAX) end
    l.tiebreak = v
  elseif k == 'UNIT' then
    v = string.upper(v)
    if v ~= 'MS' and v ~= 'S' then return redis.error_reply(SYNTAX) end
    l.unit = v
    packed_only = true
  elseif k == 'DIGITS' then
    digits = int_in(v, 0, 15)
    if digits == nil then return redis.error_reply(NOT_INT) end
    packed_only = true
  elseif k == 'EPOCH' then
    l.epoch = int_in(v, 0, EXACT_MAX)
    if l.epoch == nil then return redis.error_reply(NOT_INT) end
    packed_only = true
  elseif k == 'LAYOUT' then
    v = string.upper(v)
    if v ~= 'PACKED' and v ~= 'WIDE' then return redis.error_reply(SYNTAX) end
    wide = v == 'WIDE'
  elseif k == 'TTL' then
    ttl = int_in(v, 1, 10000000000)
    if ttl == nil then return redis.error_reply(NOT_INT) end
  elseif k == 'NOW' then
    now = int_in(v, 0, EXACT_MAX)
    if now == nil then return redis.error_reply(NOT_INT) end
  elseif k == 'SPREAD' then
    local e
    n, e = spread().spread_count('rank', v)
    if e then return e end
  else
    return redis.error_reply(SYNTAX)
  end
  i = i + 1
end
if wide and (packed_only or l.tiebreak == 'NONE') then
  return rank_err('LAYOUT WIDE takes TIEBREAK EARLIER or LATER only (no UNIT, DIGITS or EPOCH)')
end
if digits == nil then digits = (l.tiebreak == 'NONE') and 0 or 10 end
local index = nil
if n then
  index = spread().shard_index(B, n)
  if index == nil then return spread().not_a_shard_key('rank', B, n) end
end
local meta = B .. ':meta'
if not typed(B, 'zset') then return redis.error_reply(WRONGTYPE) end
if not typed(meta, 'hash') then return redis.error_reply(WRONGTYPE) end
local field = l.tiebreak .. ' ' .. l.unit .. ' ' .. string.format('%d', digits) .. ' '
  .. string.format('%d', l.epoch)
if wide then field = l.tiebreak .. ' WIDE' end
if redis.call('EXISTS', meta) == 1 then
  if n then
    local rec, e = spread().read_record('rank', B)
    if e then return e end
    -- The same shard with the same layout: nothing to do.
    if rec and rec.n == n and redis.call('HGET', meta, 'layout') == field then
      return redis.status_reply('OK')
    end
    if rec and rec.n ~= n then
      local _, e2 = spread().resolve('rank', B, n, rec)
      return e2
    end
  end
  return rank_err('board already exists')
end
if redis.call('EXISTS', B) == 1 then return rank_err('board already exists') end
if not n then
  local e = spread().refuse_spread_base('rank', B, RANK_DATA)
  if e then return e end
elseif index == 0 then
  -- Shard 0 shares its base key's slot: a single-slot board under the base
  -- (in that slot when it has a hash tag, or on a standalone server) must
  -- not be shadowed by a spread one.
  local _, b = spread().split_shard_key(B)
  b = b or B
  if (spread().has_hash_tag(b) or not spread().cluster_enabled())
    and (redis.call('EXISTS', b) == 1 or redis.call('EXISTS', b .. ':meta') == 1) then
    return rank_err("'" .. key_text(b) .. "' is a single-slot board already")
  end
end
l.digits = digits
l.unitms = (l.unit == 'S') and 1000 or 1
l.scale = 1
for _ = 1, digits do l.scale = l.scale * 10 end
l.wide = wide
if tick(l, now or now_ms()) == nil then return rank_err('timestamp out of range') end
if n then
  redis.call('HSET', meta, 'layout', field, 'spread', string.format('%d', n), 'shard', string.format('%d', index))
else
  redis.call('HSET', meta, 'layout', field)
end
if ttl then redis.call('PEXPIRE', meta, ttl * 1000) end
return redis.status_reply('OK')

