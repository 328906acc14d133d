-- LOCK.RENEW key owner ttl-ms [NOW unix-ms]
-- KEYS[1] = B; ARGV = owner ttl-ms [NOW unix-ms].
-- Reply: the ms left after restarting owner's lease (never past MAXHOLD's
-- end), or 0 when owner holds nothing.
-- Same replies, errors and stored data as the module (lua-compat/docs/lock.md).
--@ keys 1

local B = KEYS[1]
if #ARGV < 2 then
  return redis.error_reply("ERR wrong number of arguments for 'lock.renew' command")
end
local owner = ARGV[1]
if owner == '' then return redis.error_reply('ERR lock: user must not be empty') end
local ttl = arg_int(ARGV[2], 1, MAX_TTL)
if not ttl then return redis.error_reply(NOTINT) end
local now = nil
local i = 3
while i <= #ARGV do
  if string.upper(ARGV[i]) ~= 'NOW' or i + 1 > #ARGV or now then return redis.error_reply(SYNTAX) end
  now = arg_int(ARGV[i + 1], 0, MAX_TIME)
  if not now then return redis.error_reply(NOTINT) end
  i = i + 2
end
now = now or clock_ms()
local lock, err = open(B)
if not lock then return err end
if lock.kind == 'free' then return 0 end
if lock.kind == 'mutex' then
  local m = lock.m
  local h = {token = m.fence, count = m.count, expires = m.expires, hard = m.hard}
  if not live(h, now) or m.owner ~= owner then return 0 end
  m.expires = lease_end(now, ttl, m.hard)
  redis.call('SET', B, format_mutex(m))
  return m.expires - now
end
local mine, e = holder(B, owner)
if mine == nil then return e end
if not mine or not live(mine, now) then return 0 end
mine.expires = lease_end(now, ttl, mine.hard)
local meta = lock.meta
cover(meta, mine.expires)
redis.call('HSET', B, 'fence', fmt(meta.fence), 'limit', fmt(meta.limit), 'next', fmt(meta.next),
  'holder:' .. owner, format_hold(mine))
return mine.expires - now
