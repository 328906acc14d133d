-- REDPACKET.GRAB key user [NOW unix-ms] [IDEM token]
-- REDPACKET.GRAB twin. KEYS[1] = B; ARGV = user [NOW unix-ms].
-- Reply {status, cents}: OK, ALREADY, EMPTY, CLOSED or NOSUCH.
--@ keys 1
--@ idem -3

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
if user == '' then return redis.error_reply('ERR redpacket: user must not be empty') end
local tm = redis.call('TYPE', meta).ok
local tp = redis.call('TYPE', pool).ok
local tg = redis.call('TYPE', grabbed).ok
if (tm ~= 'none' and tm ~= 'hash') or (tp ~= 'none' and tp ~= 'list')
    or (tg ~= 'none' and tg ~= 'hash') then
  return redis.error_reply(WRONGTYPE)
end
if tm == 'none' then return { 'NOSUCH', 0 } end
local held = redis.call('HGET', grabbed, user)
if held then
  local cents = share_of(held)
  if not cents then return corrupt(grabbed, user) end
  return { 'ALREADY', cents }
end
local m = redis.call('HMGET', meta, 'expires', 'left_cents', 'state')
-- SPLIT gives B:meta the absolute expiry `expires`: while the key has one,
-- that is the instant; without one, the field is read (0, or the instant
-- of a packet whose keys were made persistent, which stays closed).
local expires = redis.call('PEXPIRETIME', meta)
if expires < 0 then
  local e1
  expires, e1 = meta_value(meta, 'expires', m[1])
  if e1 then return e1 end
end
-- REFUND empties the pool: a packet with shares left is not refunded, and
-- `state` is read only once the pool is empty.
local refunded = false
if tp == 'none' then
  local r, e2 = meta_value(meta, 'state', m[3])
  if e2 then return e2 end
  refunded = r
end
if now == nil and expires > 0 then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
if refunded or (expires > 0 and now >= expires) then
  return { 'CLOSED', 0 }
end
local left, e3 = meta_value(meta, 'left_cents', m[2])
if e3 then return e3 end
-- The next share, checked before it is taken: a share the module never
-- writes, or more than the running total says is left, is refused.
local share = redis.call('LINDEX', pool, 0)
if not share then return { 'EMPTY', 0 } end
local cents = share_of(share)
if not cents then return corrupt(pool) end
if left - cents < 0 then return corrupt(meta, 'left_cents') end
redis.call('LPOP', pool)
redis.call('HSET', grabbed, user, share)
if tg == 'none' and expires > 0 then
  redis.call('PEXPIREAT', grabbed, expires)
end
redis.call('HSET', meta, 'left_cents', string.format('%d', left - cents))
return { 'OK', cents }

