-- DELAYQ.NACK key id receipt [DELAY ms | BACKOFF base-ms max-ms] [NOW unix-ms] [IDEM token]
-- KEYS[1] = B; ARGV = id receipt [options...].
-- Reply: 1 back in line, 2 moved to the dead letters, 0 for a stale receipt.
-- Same replies, errors and stored data as the module (lua-compat/docs/delayq.md).
--@ keys 1
--@ idem -4

local B = KEYS[1]
if #ARGV < 2 then
  return redis.error_reply("ERR wrong number of arguments for 'delayq.nack' command")
end
local id = ARGV[1]
if id == '' then return redis.error_reply('ERR delayq: id must not be empty') end
local receipt = int(ARGV[2])
if not receipt then return redis.error_reply(NOTINT) end
local delay, base, cap, now = nil, nil, nil, nil
local i = 3
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  if kw == 'DELAY' and not delay and not base then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    delay = arg_int(ARGV[i + 1], 0, MAX_DELAY)
    if not delay then return redis.error_reply(NOTINT) end
    i = i + 2
  elseif kw == 'BACKOFF' and not delay and not base then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    base = arg_int(ARGV[i + 1], 1, MAX_DELAY)
    if not base then return redis.error_reply(NOTINT) end
    if i + 2 > #ARGV then return redis.error_reply(SYNTAX) end
    cap = arg_int(ARGV[i + 2], 1, MAX_DELAY)
    if not cap then return redis.error_reply(NOTINT) end
    i = i + 3
  elseif kw == 'NOW' then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    now = arg_int(ARGV[i + 1], 0, MAX_TIME)
    if not now then return redis.error_reply(NOTINT) end
    i = i + 2
  else
    return redis.error_reply(SYNTAX)
  end
end
now = now or clock_ms()
local e = check_types(B, {{'jobs', 'hash'}, {'due', 'zset'}, {'dead', 'zset'}})
if e then return e end
local j, err = get_job(B, id)
if j == nil then return err end
if not j or not holds(j, receipt) then return 0 end
j.leased = 0
redis.call('HSET', B .. ':jobs', id, format_job(j))
if j.attempt >= j.max then
  redis.call('ZREM', B .. ':due', id)
  redis.call('ZADD', B .. ':dead', fmt(now), id)
  return 2
end
local wait = delay or 0
if base then
  local shift = math.max(0, math.min(j.attempt - 1, 62))
  wait = math.min(base * 2 ^ shift, cap)
end
redis.call('ZADD', B .. ':due', fmt(now + wait), id)
return 1
