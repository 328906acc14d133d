-- DELAYQ.REDRIVE key [COUNT n | ID id] [NOW unix-ms]
-- KEYS[1] = B; ARGV = [options...].
-- Reply: how many dead letters were put back in line.
-- Same replies, errors and stored data as the module (lua-compat/docs/delayq.md).
--@ keys 1

local B = KEYS[1]
local count, one, now = nil, nil, nil
local i = 1
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  if kw == 'COUNT' and not one then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    count = arg_int(ARGV[i + 1], 1, MAX_COUNT)
    if not count then return redis.error_reply(NOTINT) end
  elseif kw == 'ID' and not count then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    one = ARGV[i + 1]
    if one == '' then return redis.error_reply('ERR delayq: id must not be empty') end
  elseif kw == 'NOW' then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    now = arg_int(ARGV[i + 1], 0, MAX_TIME)
    if not now then return redis.error_reply(NOTINT) end
  else
    return redis.error_reply(SYNTAX)
  end
  i = i + 2
end
now = now or clock_ms()
local e = check_types(B, {{'jobs', 'hash'}, {'due', 'zset'}, {'dead', 'zset'}, {'seq', 'string'}})
if e then return e end
local dead = B .. ':dead'
local ids = {}
if one then
  if redis.call('ZSCORE', dead, one) then ids = {one} end
else
  ids = redis.call('ZRANGE', dead, 0, (count or 10) - 1)
end
local jobs = {}
for k, id in ipairs(ids) do
  local j, err = listed_job(B, id)
  if not j then return err end
  jobs[k] = j
end
if #ids == 0 then return 0 end
local first, gerr = generations(B, #ids)
if not first then return gerr end
for k, id in ipairs(ids) do
  local j = jobs[k]
  j.gen, j.attempt, j.leased = first + k - 1, 0, 0
  if j.lostmax then j.lost = 0 end
  redis.call('HSET', B .. ':jobs', id, format_job(j))
  redis.call('ZREM', dead, id)
  redis.call('ZADD', B .. ':due', fmt(now), id)
end
redis.call('SET', B .. ':seq', fmt(first + #ids - 1))
return #ids
