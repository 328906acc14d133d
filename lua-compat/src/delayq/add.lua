-- DELAYQ.ADD key id payload [DELAY ms | AT unix-ms] [ATTEMPTS n] [LOSTMAX n] [REPLACE] [NOW unix-ms] [IDEM token]
-- KEYS[1] = B; ARGV = id payload [options...], exactly as the command.
-- Reply: 1 added (or replaced), 0 when the id exists and REPLACE was not given.
-- Same replies, errors and stored data as the module (lua-compat/docs/delayq.md).
--@ keys 1
--@ idem -4

local B = KEYS[1]
if #ARGV < 2 then
  return redis.error_reply("ERR wrong number of arguments for 'delayq.add' command")
end
local id, payload = ARGV[1], ARGV[2]
if id == '' then return redis.error_reply('ERR delayq: id must not be empty') end
local delay, at, attempts, replace, now = nil, nil, DEFAULT_ATTEMPTS, false, nil
local lostmax = nil
local i = 3
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  if kw == 'REPLACE' then
    replace = true
    i = i + 1
  else
    local lo, hi
    if kw == 'DELAY' and not at then lo, hi = 0, MAX_DELAY
    elseif kw == 'AT' and not delay then lo, hi = 0, MAX_TIME
    elseif kw == 'ATTEMPTS' then lo, hi = 1, MAX_ATTEMPTS
    elseif kw == 'LOSTMAX' then lo, hi = 0, MAX_ATTEMPTS
    elseif kw == 'NOW' then lo, hi = 0, MAX_TIME
    else return redis.error_reply(SYNTAX) end
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    local n = arg_int(ARGV[i + 1], lo, hi)
    if not n then return redis.error_reply(NOTINT) end
    if kw == 'DELAY' then delay = n elseif kw == 'AT' then at = n
    elseif kw == 'ATTEMPTS' then attempts = n elseif kw == 'LOSTMAX' then lostmax = n
    else now = n end
    i = i + 2
  end
end
if #payload > MAX_PAYLOAD then
  return redis.error_reply('ERR delayq: payload exceeds ' .. MAX_PAYLOAD .. ' bytes')
end
now = now or clock_ms()
local due_at = at or (now + (delay or 0))
local e = check_types(B, {{'jobs', 'hash'}, {'due', 'zset'}, {'dead', 'zset'}, {'seq', 'string'}})
if e then return e end
local old, err = get_job(B, id)
if old == nil then return err end
if old then
  if not replace then return 0 end
  if old.leased == 1 then
    local score = redis.call('ZSCORE', B .. ':due', id)
    local at = score and instant(score)
    if score and not at then return corrupt(B .. ':due', id) end
    if at and at > now then return redis.error_reply('ERR delayq: job is leased') end
  end
end
local gen, gerr = generations(B, 1)
if not gen then return gerr end
redis.call('SET', B .. ':seq', fmt(gen))
redis.call('HSET', B .. ':jobs', id, format_job({gen = gen, attempt = 0, max = attempts, leased = 0,
  lost = 0, lostmax = lostmax, payload = payload}))
redis.call('ZADD', B .. ':due', fmt(due_at), id)
if old then redis.call('ZREM', B .. ':dead', id) end
return 1
