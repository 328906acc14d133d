-- DELAYQ.POLL key lease-ms [COUNT n] [BLOCK timeout-ms] [NOW unix-ms]
-- KEYS[1] = B; ARGV = lease-ms [options...].
-- Reply: {id, payload, attempt, receipt, ...} for up to n due jobs, each
-- leased for lease-ms; {} when none is due. BLOCK is accepted but cannot
-- wait in a script: the twin answers at once, as the module does inside
-- MULTI or a script.
-- Same replies, errors and stored data as the module (lua-compat/docs/delayq.md).
--@ keys 1

local B = KEYS[1]
if #ARGV < 1 then
  return redis.error_reply("ERR wrong number of arguments for 'delayq.poll' command")
end
local lease = arg_int(ARGV[1], 1, MAX_DELAY)
if not lease then return redis.error_reply(NOTINT) end
local count, now = 1, nil
local i = 2
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  local lo, hi
  if kw == 'COUNT' then lo, hi = 1, MAX_COUNT
  elseif kw == 'BLOCK' then lo, hi = 0, MAX_DELAY
  elseif kw == 'NOW' then lo, hi = 0, MAX_TIME
  else return redis.error_reply(SYNTAX) end
  if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
  local n = arg_int(ARGV[i + 1], lo, hi)
  if not n then return redis.error_reply(NOTINT) end
  if kw == 'COUNT' then count = n elseif kw == 'NOW' then now = n end
  i = i + 2
end
now = now or clock_ms()
local e = check_types(B, {{'jobs', 'hash'}, {'due', 'zset'}, {'dead', 'zset'}})
if e then return e end
local due, dead = B .. ':due', B .. ':dead'
-- Read and check everything first: batches of what is wanted, doubling
-- when exhausted jobs are met, at most MAX_EXAMINE entries.
local deliver, exhausted = {}, {}
local offset, batch = 0, count
while #deliver < count and offset < MAX_EXAMINE do
  local want = math.min(batch, MAX_EXAMINE - offset)
  local got = redis.call('ZRANGEBYSCORE', due, '-inf', fmt(now), 'WITHSCORES', 'LIMIT', offset, want)
  local stop = false
  for k = 1, #got, 2 do
    offset = offset + 1
    local id = got[k]
    local at = instant(got[k + 1])
    if not at then return corrupt(due, id) end
    local j, err = listed_job(B, id)
    if not j then return err end
    -- Still leased while due: its lease ran out; counted against a cap.
    if j.leased == 1 and j.lostmax then j.lost = j.lost + 1 end
    if j.attempt >= j.max or lost_too_often(j) then
      table.insert(exhausted, {id, j, at})
    else
      table.insert(deliver, {id, j})
      if #deliver == count then stop = true break end
    end
  end
  if stop or #got / 2 < want then break end
  batch = batch * 2
end
for _, x in ipairs(exhausted) do
  x[2].leased = 0
  redis.call('HSET', B .. ':jobs', x[1], format_job(x[2]))
  redis.call('ZREM', due, x[1])
  redis.call('ZADD', dead, fmt(x[3]), x[1])
end
local out = {}
for _, x in ipairs(deliver) do
  local j = x[2]
  j.attempt = j.attempt + 1
  j.leased = 1
  redis.call('HSET', B .. ':jobs', x[1], format_job(j))
  redis.call('ZADD', due, fmt(now + lease), x[1])
  table.insert(out, x[1])
  table.insert(out, j.payload)
  table.insert(out, j.attempt)
  table.insert(out, receipt_of(j))
end
return out
