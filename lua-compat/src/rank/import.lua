-- RANK.IMPORT key [LAYOUT PACKED|WIDE] [TIEBREAK EARLIER|LATER|NONE] [UNIT MS|S] [DIGITS digits] [EPOCH unix-ms] [COUNT count] [NOW unix-ms]
-- Lua twin of RANK.IMPORT -> members left to pack
-- KEYS[1] = B; ARGV = the options, verbatim. Packs a board of plain
-- scores (points written with ZADD) in place, COUNT members per call: the
-- first call moves B to B:import and records the layout and the import's
-- time in B:meta ("<layout> IMPORT <unix-ms>"); every call moves up to
-- COUNT members back into B, packed; the last one restores the plain
-- layout field.
--@ keys 1


local B = KEYS[1]
local opts = {}
local count, now, has_layout = 100, nil, false
-- LAYOUT WIDE, and whether an option it does not take was given.
local wide, packed_only = false, false
local i = 1
while i <= #ARGV do
  local k = string.upper(ARGV[i])
  local v = ARGV[i + 1]
  if k == 'TIEBREAK' or k == 'UNIT' or k == 'DIGITS' or k == 'EPOCH' or k == 'COUNT' or k == 'NOW'
    or k == 'LAYOUT' then
    if v == nil then return redis.error_reply(SYNTAX) end
    i = i + 1
  end
  if k == 'LAYOUT' then
    v = string.upper(v)
    if v ~= 'PACKED' and v ~= 'WIDE' then return redis.error_reply(SYNTAX) end
    wide, has_layout = v == 'WIDE', true
  elseif k == 'TIEBREAK' then
    v = string.upper(v)
    if v ~= 'EARLIER' and v ~= 'LATER' and v ~= 'NONE' then return redis.error_reply(SYNTAX) end
    opts.tiebreak, has_layout = v, true
  elseif k == 'UNIT' then
    v = string.upper(v)
    if v ~= 'MS' and v ~= 'S' then return redis.error_reply(SYNTAX) end
    opts.unit, has_layout, packed_only = v, true, true
  elseif k == 'DIGITS' then
    opts.digits = int_in(v, 0, 15)
    if opts.digits == nil then return redis.error_reply(NOT_INT) end
    has_layout, packed_only = true, true
  elseif k == 'EPOCH' then
    opts.epoch = int_in(v, 0, EXACT_MAX)
    if opts.epoch == nil then return redis.error_reply(NOT_INT) end
    has_layout, packed_only = true, true
  elseif k == 'COUNT' then
    count = int_in(v, 1, math.huge)
    if count == nil then return redis.error_reply(NOT_INT) end
  elseif k == 'NOW' then
    now = int_in(v, 0, EXACT_MAX)
    if now == nil then return redis.error_reply(NOT_INT) end
  else
    return redis.error_reply(SYNTAX)
  end
  i = i + 1
end
if wide and (packed_only or opts.tiebreak == 'NONE') then
  return rank_err('LAYOUT WIDE takes TIEBREAK EARLIER or LATER only (no UNIT, DIGITS or EPOCH)')
end
if count > RANGE_MAX then return rank_err('COUNT must be at most ' .. RANGE_MAX .. ' (rank-range-max)') end
local meta, plain = B .. ':meta', B .. ':import'
local ok, tb, tm = board_types(B)
if not ok then return tb end
if not typed(plain, 'zset') then return redis.error_reply(WRONGTYPE) end
local times = B .. ':time'
if not typed(times, 'hash') then return redis.error_reply(WRONGTYPE) end
local refused = refuse_spread('RANK.IMPORT', B, tb, tm)
if refused then return refused end
local l, at = board_layout(B, true)
if not l then return at end
-- Up to count members of a plain board, lowest first, with their packed
-- scores; nil and the error reply for a member that cannot be packed.
local function batch(key)
  local t = tick(l, at)
  if t == nil then return nil, rank_err('timestamp out of range') end
  local r = redis.call('ZRANGE', key, 0, count - 1, 'WITHSCORES')
  local out = {}
  for x = 1, #r, 2 do
    local p = tonumber(r[x + 1])
    if p == nil or p ~= math.floor(p) or math.abs(p) > EXACT_MAX then return nil, corrupt(key, r[x]) end
    if p > l.limit or p < -l.limit then return nil, range_err(l) end
    out[#out + 1] = pack(l, p, t)
    out[#out + 1] = r[x]
    if l.wide then out[#out - 1] = p end
  end
  return out
end
if at then
  if has_layout or now then return rank_err('import in progress: only COUNT may be given') end
elseif redis.call('EXISTS', meta) == 1 then
  return rank_err('board already exists')
elseif redis.call('EXISTS', B) == 0 then
  return 0
else
  local tb = opts.tiebreak or 'EARLIER'
  local digits = opts.digits or ((tb == 'NONE') and 0 or 10)
  local field = tb .. ' ' .. (opts.unit or 'S') .. ' ' .. string.format('%d', digits) .. ' '
    .. string.format('%d', opts.epoch or 0)
  l = { tiebreak = tb, unit = opts.unit or 'S', digits = digits, epoch = opts.epoch or 0 }
  l.unitms = (l.unit == 'S') and 1000 or 1
  l.scale = 1
  for _ = 1, digits do l.scale = l.scale * 10 end
  local x = EXACT_MAX - ((tb == 'NONE') and 0 or (l.scale - 1))
  l.limit = (x - math.fmod(x, l.scale)) / l.scale
  if wide then
    -- A wide import writes B:time: one already there is another board's
    -- index it must not mix with.
    if redis.call('EXISTS', times) == 1 then return rank_err('board already exists') end
    field = tb .. ' WIDE'
    l = { tiebreak = tb, unit = 'MS', digits = 0, epoch = 0, unitms = 1, scale = 1,
      limit = EXACT_MAX, wide = true }
  end
  at = now or now_ms()
  local _, err = batch(B)
  if err then return err end
  local expiry = redis.call('PEXPIRETIME', B)
  redis.call('RENAME', B, plain)
  redis.call('HSET', meta, 'layout', field .. ' IMPORT ' .. string.format('%d', at))
  if expiry > 0 then redis.call('PEXPIREAT', meta, expiry) end
end
local out, err = batch(plain)
if not out then return err end
local created = redis.call('EXISTS', B) == 0
local times_created = l.wide and redis.call('EXISTS', times) == 0
local at_text = string.format('%d', at)
for x = 1, #out, 2 do
  if l.wide then
    redis.call('ZADD', B, out[x], wide_name(l, at, out[x + 1]))
    redis.call('HSET', times, out[x + 1], at_text)
  else
    redis.call('ZADD', B, out[x], out[x + 1])
  end
  redis.call('ZREM', plain, out[x + 1])
end
if #out > 0 then
  local expiry = redis.call('PEXPIRETIME', meta)
  if expiry > 0 then
    if created then redis.call('PEXPIREAT', B, expiry) end
    if times_created then redis.call('PEXPIREAT', times, expiry) end
  end
end
local left = redis.call('ZCARD', plain)
if left == 0 then
  local v = redis.call('HGET', meta, 'layout')
  redis.call('HSET', meta, 'layout', (string.gsub(v, ' IMPORT [^ ]*$', '')))
end
return left

