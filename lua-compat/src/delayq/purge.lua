-- DELAYQ.PURGE key [MAXLEN n] [MAXAGE ms] [NOW unix-ms]
-- KEYS[1] = B; ARGV = [options...].
-- Reply: how many of the oldest dead letters were removed (at most 100).
-- Same replies, errors and stored data as the module (lua-compat/docs/delayq.md).
--@ keys 1
--@ flags allow-oom

local B = KEYS[1]
local max_len, max_age, now = nil, nil, nil
local i = 1
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  local lo, hi
  if kw == 'MAXLEN' and not max_len then lo, hi = 0, MAX_INT
  elseif kw == 'MAXAGE' and not max_age then lo, hi = 0, MAX_DELAY
  elseif kw == 'NOW' and not now then lo, hi = 0, MAX_TIME
  else return redis.error_reply(SYNTAX) end
  if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
  local n = arg_int(ARGV[i + 1], lo, hi)
  if not n then return redis.error_reply(NOTINT) end
  if kw == 'MAXLEN' then max_len = n elseif kw == 'MAXAGE' then max_age = n else now = n end
  i = i + 2
end
if not max_len and not max_age then return redis.error_reply(SYNTAX) end
now = now or clock_ms()
local e = check_types(B, {{'jobs', 'hash'}, {'due', 'zset'}, {'dead', 'zset'}})
if e then return e end
local dead = B .. ':dead'
local total = redis.call('ZCARD', dead)
local got = redis.call('ZRANGE', dead, 0, MAX_COUNT - 1, 'WITHSCORES')
local ids, ats = {}, {}
for k = 1, #got, 2 do
  local at = instant(got[k + 1])
  if not at then return corrupt(dead, got[k]) end
  table.insert(ids, got[k])
  table.insert(ats, at)
end
-- The oldest go while more than MAXLEN would stay or they are older than
-- MAXAGE; the first that meets neither limit stops the purge.
local n = 0
for k = 1, #ids do
  local too_many = max_len and (total - (k - 1)) > max_len
  local too_old = max_age and (now - ats[k]) > max_age
  if not (too_many or too_old) then break end
  n = k
end
for k = 1, n do
  local j, err = listed_job(B, ids[k])
  if not j then return err end
end
for k = 1, n do
  redis.call('HDEL', B .. ':jobs', ids[k])
  redis.call('ZREM', dead, ids[k])
end
return n
