-- REDPACKET.SPLIT key total-cents count [MODE RANDOM|EQUAL] [TTL seconds] [NOW unix-ms] [IDEM token]
-- REDPACKET.SPLIT twin. KEYS[1] = B; ARGV = total-cents count
-- [MODE RANDOM|EQUAL] [TTL seconds] [NOW unix-ms]. Writes B:pool and B:meta
-- like the module. The shares are drawn by Lua's own generator (seeded from
-- the server clock), so RANDOM splits differ from the module's; EQUAL is
-- identical. redpacket-max-count cannot be read from a script: 10000 here.
--@ keys 1
--@ idem -4

if #ARGV < 2 then
  return redis.error_reply("ERR wrong number of arguments for 'redpacket.split' command")
end
local B = KEYS[1]
local meta, pool, grabbed = B .. ':meta', B .. ':pool', B .. ':grabbed'
local total, count = int(ARGV[1]), int(ARGV[2])
if not total or total > MAX_TOTAL or not count then return redis.error_reply(NOTINT) end
local mode, ttl, now = 'RANDOM', nil, nil
local i = 3
while i <= #ARGV do
  local k = string.upper(ARGV[i])
  local v = ARGV[i + 1]
  if k == 'MODE' then
    if v == nil then return redis.error_reply('ERR syntax error') end
    mode = string.upper(v)
    if mode ~= 'RANDOM' and mode ~= 'EQUAL' then return redis.error_reply('ERR syntax error') end
  elseif k == 'TTL' or k == 'NOW' then
    if v == nil then return redis.error_reply('ERR syntax error') end
    local n = int(v)
    if k == 'TTL' then
      if not n or n < 1 or n > MAX_TTL then return redis.error_reply(NOTINT) end
      ttl = n
    else
      if not n or n < 0 or n > MAX_TIME then return redis.error_reply(NOTINT) end
      now = n
    end
  else
    return redis.error_reply('ERR syntax error')
  end
  i = i + 2
end
if now == nil then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local expires = 0
if ttl then expires = now + ttl * 1000 end
if count < 1 or count > MAX_COUNT then
  return redis.error_reply('ERR redpacket: count must be from 1 to ' .. MAX_COUNT)
end
if total < count then
  return redis.error_reply('ERR redpacket: total must be at least count cents')
end
local want = { [meta] = 'hash', [pool] = 'list', [grabbed] = 'hash' }
local exists = false
for _, k in ipairs({ meta, pool, grabbed }) do
  local t = redis.call('TYPE', k).ok
  if t ~= 'none' then
    if t ~= want[k] then return redis.error_reply(WRONGTYPE) end
    exists = true
  end
end
if exists then return redis.error_reply('ERR redpacket: packet already exists') end
local shares = {}
if mode == 'EQUAL' then
  -- Exact below 2^53: fmod and the division of a multiple round nothing
  -- (total / count itself may round up to the next integer).
  local extra = math.fmod(total, count)
  local base = (total - extra) / count
  for s = 1, count do
    shares[s] = (s <= extra) and base + 1 or base
  end
else
  local t = redis.call('TIME')
  math.randomseed(tonumber(t[2]) + tonumber(t[1]) % 100000 * 1000000)
  local rest = total
  for s = 1, count - 1 do
    local left = count - s + 1
    local bound = math.max(math.min(double_mean(rest, left) - 1, rest - (left - 1)), 1)
    local share = draw(bound)
    shares[s] = share
    rest = rest - share
  end
  shares[count] = rest
end
-- RPUSH in batches: Lua's unpack has a stack limit.
for s = 1, #shares, 1000 do
  local batch = {}
  for j = s, math.min(s + 999, #shares) do
    batch[#batch + 1] = string.format('%d', shares[j])
  end
  redis.call('RPUSH', pool, unpack(batch))
end
redis.call('HSET', meta, 'expires', string.format('%d', expires), 'left_cents', string.format('%d', total),
  'state', 'open', 'total', string.format('%d', total), 'count', string.format('%d', count))
if expires > 0 then
  redis.call('PEXPIREAT', pool, string.format('%d', expires))
  redis.call('PEXPIREAT', meta, string.format('%d', expires))
end
return count

