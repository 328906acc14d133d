-- IDEM.COMPLETE key fence result [NOW unix-ms]
-- KEYS[1] = B; ARGV = fence result [NOW unix-ms].
-- Reply: 1 when the result was stored, 0 when this fence's equal result is
-- stored already; a stale fence, no record or another result is an error.
-- Same replies, errors and stored data as the module (lua-compat/docs/idem.md).
--@ keys 1

local B = KEYS[1]
if #ARGV < 2 then return arity('idem.complete') end
local fence = int(ARGV[1])
if not fence then return redis.error_reply(NOTINT) end
local result = ARGV[2]
local now, e = parse_now(ARGV, 3)
if not now then return e end
local r, err = open(B)
if r == nil then return err end
if not r then return redis.error_reply('ERR idem: no such record') end
if r.fence ~= fence or r.state == 'aborted' then
  return redis.error_reply('ERR idem: stale fence ' .. ARGV[1])
end
if r.state == 'done' then
  if r.result == result then return 0 end
  return redis.error_reply('ERR idem: already completed with another result')
end
redis.call('HSET', B, 'state', 'done', 'result', result)
redis.call('PEXPIREAT', B, fmt(now + r.ttl * 1000))
return 1
