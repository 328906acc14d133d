-- REDPACKET.GRAB twin. KEYS[1] = B; ARGV = user [NOW unix-ms].
-- Reply {status, cents}: OK, ALREADY, EMPTY, CLOSED or NOSUCH.
local MAX_TIME = 253402300799999
local NOTINT = 'ERR value is not an integer or out of range'
local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
local function int(s)
  if type(s) ~= 'string' or #s > 19 then return nil end
  if s ~= '0' and not s:match('^%-?[1-9]%d*$') then return nil end
  local digits = s:gsub('^%-', '')
  if #digits == 19 and digits > '9223372036854775807' then return nil end
  return tonumber(s)
end
if #ARGV < 1 then
  return redis.error_reply("ERR wrong number of arguments for 'redpacket.grab' command")
end
local B, user = KEYS[1], ARGV[1]
local meta, pool, grabbed = B .. ':meta', B .. ':pool', B .. ':grabbed'
local now = nil
local i = 2
while i <= #ARGV do
  if string.upper(ARGV[i]) ~= 'NOW' or ARGV[i + 1] == nil then
    return redis.error_reply('ERR syntax error')
  end
  now = int(ARGV[i + 1])
  if not now or now < 0 or now > MAX_TIME then return redis.error_reply(NOTINT) end
  i = i + 2
end
local tm = redis.call('TYPE', meta).ok
local tp = redis.call('TYPE', pool).ok
local tg = redis.call('TYPE', grabbed).ok
if (tm ~= 'none' and tm ~= 'hash') or (tp ~= 'none' and tp ~= 'list')
    or (tg ~= 'none' and tg ~= 'hash') then
  return redis.error_reply(WRONGTYPE)
end
if tm == 'none' then return { 'NOSUCH', 0 } end
local held = redis.call('HGET', grabbed, user)
if held then return { 'ALREADY', int(held) or 0 } end
local m = redis.call('HMGET', meta, 'state', 'expires')
local expires = int(m[2]) or 0
if now == nil and expires > 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- REFUND empties the pool: a packet with shares left is not refunded.
if (m[1] == 'closed' and tp == 'none') or (expires > 0 and now >= expires) then
  return { 'CLOSED', 0 }
end
local share = redis.call('LPOP', pool)
if not share then return { 'EMPTY', 0 } end
local cents = int(share)
if not cents then return redis.error_reply('ERR redpacket: pool holds a share that is not an integer') end
redis.call('HSET', grabbed, user, share)
if tg == 'none' and expires > 0 then
  redis.call('PEXPIREAT', grabbed, m[2])
end
return { 'OK', cents }
