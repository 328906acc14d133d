-- RATE.RESET key
-- KEYS[1] = B; no ARGV. 1 if there was limiter state to drop, else 0. A
-- damaged limiter (a value that starts like one) is dropped too.
--@ keys 1
--@ flags allow-oom

if #ARGV ~= 0 then
  return redis.error_reply("ERR wrong number of arguments for 'rate.reset' command")
end
local key = KEYS[1]
local t = redis.call('TYPE', key).ok
if t == 'none' then return 0 end
if t == 'string' then
  local p = string.match(redis.call('GET', key), '^(%a+):')
  if p ~= 'gcra' and p ~= 'fixed' and p ~= 'sliding' and p ~= 'bucket' then
    return redis.error_reply(WRONGTYPE)
  end
elseif t == 'hash' then
  local a = redis.call('HGET', key, 'algo')
  if a ~= 'sliding' and a ~= 'bucket' then return redis.error_reply(WRONGTYPE) end
elseif t ~= 'zset' then
  return redis.error_reply(WRONGTYPE)
end
redis.call('UNLINK', key)
return 1
