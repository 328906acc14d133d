-- DELAYQ.CANCEL key id [FORCE] [NOW unix-ms]
-- KEYS[1] = B; ARGV = id [FORCE] [NOW unix-ms].
-- Reply: 1 when the job was removed, 0 when there is no such job; a job
-- held by a running lease is refused unless FORCE.
-- Same replies, errors and stored data as the module (lua-compat/docs/delayq.md).
--@ keys 1
--@ flags allow-oom

local B = KEYS[1]
if #ARGV < 1 then
  return redis.error_reply("ERR wrong number of arguments for 'delayq.cancel' command")
end
local id = ARGV[1]
if id == '' then return redis.error_reply('ERR delayq: id must not be empty') end
local force, now = false, nil
local i = 2
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  if kw == 'FORCE' and not force then
    force = true
    i = i + 1
  elseif kw == 'NOW' and not now then
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
if not j then return 0 end
if j.leased == 1 then
  local s = redis.call('ZSCORE', B .. ':due', id)
  if s then
    local due = instant(s)
    if not due then return corrupt(B .. ':due', id) end
    if due > now and not force then return redis.error_reply('ERR delayq: job is leased') end
  end
end
redis.call('HDEL', B .. ':jobs', id)
redis.call('ZREM', B .. ':due', id)
redis.call('ZREM', B .. ':dead', id)
return 1
