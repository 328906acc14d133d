-- IDEM.BEGIN key fingerprint lease-ms [TTL seconds] [NOW unix-ms]
-- KEYS[1] = B; ARGV = fingerprint lease-ms [TTL seconds] [NOW unix-ms].
-- Reply: {'NEW', fence}, {'RUNNING', ms-left}, {'DONE', result} or
-- {'MISMATCH', nil}. TTL defaults to 86400 (the module's idem-ttl default).
-- Same replies, errors and stored data as the module (lua-compat/docs/idem.md).
--@ keys 1

local B = KEYS[1]
if #ARGV < 2 then return arity('idem.begin') end
local fp = ARGV[1]
if fp == '' then return redis.error_reply('ERR idem: fingerprint must not be empty') end
local lease_ms = arg_int(ARGV[2], 1, MAX_LEASE)
if not lease_ms then return redis.error_reply(NOTINT) end
local ttl, now = nil, nil
local i = 3
while i <= #ARGV do
  local k = string.upper(ARGV[i])
  if k == 'TTL' and not ttl then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    ttl = arg_int(ARGV[i + 1], 1, MAX_TTL_S)
    if not ttl then return redis.error_reply(NOTINT) end
  elseif k == 'NOW' and not now then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    now = arg_int(ARGV[i + 1], 0, MAX_TIME)
    if not now then return redis.error_reply(NOTINT) end
  else
    return redis.error_reply(SYNTAX)
  end
  i = i + 2
end
ttl = ttl or DEFAULT_TTL_S
now = now or clock_ms()
local r, err = open(B)
if r == nil then return err end
local prev = 0
if r then
  if r.state == 'aborted' then
    prev = r.fence
  elseif r.fp ~= fp then
    return {'MISMATCH', false}
  elseif r.state == 'done' then
    return {'DONE', r.result}
  elseif now < r.lease then
    return {'RUNNING', r.lease - now}
  else
    prev = r.fence
  end
end
if prev >= MAX_INT then return data_error('idem', 'integer overflow', B, 'fence') end
local fence = prev + 1
if now > fence then fence = now end
local lease = now + lease_ms
local expire_at = now + ttl * 1000
if lease > expire_at then expire_at = lease end
redis.call('HSET', B, 'state', 'running', 'fp', fp, 'fence', fmt(fence), 'lease', fmt(lease), 'ttl', fmt(ttl))
redis.call('PEXPIREAT', B, fmt(expire_at))
return {'NEW', fence}
