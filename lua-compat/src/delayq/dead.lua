-- DELAYQ.DEAD key [COUNT n]
-- KEYS[1] = B; ARGV = [COUNT n].
-- Reply: {id, payload, attempts, dead-at-ms, ...}, oldest first.
-- Same replies, errors and stored data as the module (lua-compat/docs/delayq.md).
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
local count = 10
local i = 1
while i <= #ARGV do
  if string.upper(ARGV[i]) ~= 'COUNT' or i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
  count = arg_int(ARGV[i + 1], 1, MAX_COUNT)
  if not count then return redis.error_reply(NOTINT) end
  i = i + 2
end
local e = check_types(B, {{'jobs', 'hash'}, {'due', 'zset'}, {'dead', 'zset'}})
if e then return e end
local got = redis.call('ZRANGE', B .. ':dead', 0, count - 1, 'WITHSCORES')
local out = {}
for k = 1, #got, 2 do
  local at = instant(got[k + 1])
  if not at then return corrupt(B .. ':dead', got[k]) end
  local j, err = listed_job(B, got[k])
  if not j then return err end
  table.insert(out, got[k])
  table.insert(out, j.payload)
  table.insert(out, j.attempt)
  table.insert(out, at)
end
return out
