-- RANK.CREATE key [TIEBREAK EARLIER|LATER|NONE] [UNIT MS|S] [DIGITS digits] [EPOCH unix-ms] [TTL seconds] [NOW unix-ms]
-- Lua twin of RANK.CREATE B [TIEBREAK EARLIER|LATER|NONE] [UNIT MS|S]
-- [DIGITS d] [EPOCH unix-ms] [TTL seconds] [NOW unix-ms] -> OK
-- KEYS[1] = B; ARGV = the options, verbatim. Writes B:meta.
--@ keys 1


local B = KEYS[1]
local l = { tiebreak = 'EARLIER', unit = 'S', epoch = 0 }
local digits, ttl, now = nil, nil, nil
local i = 1
while i <= #ARGV do
  local k = string.upper(ARGV[i])
  local v = ARGV[i + 1]
  if k == 'TIEBREAK' or k == 'UNIT' or k == 'DIGITS' or k == 'EPOCH' or k == 'TTL' or k == 'NOW' then
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
  elseif k == 'DIGITS' then
    digits = int_in(v, 0, 15)
    if digits == nil then return redis.error_reply(NOT_INT) end
  elseif k == 'EPOCH' then
    l.epoch = int_in(v, 0, EXACT_MAX)
    if l.epoch == nil then return redis.error_reply(NOT_INT) end
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
if digits == nil then digits = (l.tiebreak == 'NONE') and 0 or 10 end
local meta = B .. ':meta'
if not typed(B, 'zset') then return redis.error_reply(WRONGTYPE) end
if not typed(meta, 'hash') then return redis.error_reply(WRONGTYPE) end
if redis.call('EXISTS', meta) == 1 or redis.call('EXISTS', B) == 1 then
  return rank_err('board already exists')
end
l.digits = digits
l.unitms = (l.unit == 'S') and 1000 or 1
l.scale = 1
for _ = 1, digits do l.scale = l.scale * 10 end
if tick(l, now or now_ms()) == nil then return rank_err('timestamp out of range') end
redis.call('HSET', meta, 'layout', l.tiebreak .. ' ' .. l.unit .. ' '
  .. string.format('%d', digits) .. ' ' .. string.format('%d', l.epoch))
if ttl then redis.call('PEXPIRE', meta, ttl * 1000) end
return redis.status_reply('OK')

