-- LOCK.RELEASE key owner [NOW unix-ms]
-- KEYS[1] = B; ARGV = owner [NOW unix-ms].
-- Reply: 1 when one acquisition of owner was released, 0 when owner holds
-- nothing (nothing changes). No waiting client is handed the lock: the
-- twins have no waiters.
-- Same replies, errors and stored data as the module (lua-compat/docs/lock.md).
--@ keys 1
--@ flags allow-oom

local B = KEYS[1]
if #ARGV < 1 then
  return redis.error_reply("ERR wrong number of arguments for 'lock.release' command")
end
local owner = ARGV[1]
if owner == '' then return redis.error_reply('ERR lock: user must not be empty') end
local now = nil
local i = 2
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
  if m.count > 1 then
    m.count = m.count - 1
  else
    m.count, m.expires, m.hard, m.owner = 0, 0, 0, ''
  end
  redis.call('SET', B, format_mutex(m))
  return 1
end
local mine, e = holder(B, owner)
if mine == nil then return e end
if not mine or not live(mine, now) then return 0 end
if mine.count > 1 then
  mine.count = mine.count - 1
  redis.call('HSET', B, 'holder:' .. owner, format_hold(mine))
else
  redis.call('HDEL', B, 'holder:' .. owner)
end
return 1
