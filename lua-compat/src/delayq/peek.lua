-- DELAYQ.PEEK key [COUNT n | ID id]
-- KEYS[1] = B; ARGV = [COUNT n | ID id].
-- Reply: {id, payload, attempt, at-ms, leased, ...}, the earliest at first.
-- Same replies, errors and stored data as the module (lua-compat/docs/delayq.md).
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
local count, one = nil, nil
local i = 1
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  if kw == 'COUNT' and not one and not count then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    count = arg_int(ARGV[i + 1], 1, MAX_COUNT)
    if not count then return redis.error_reply(NOTINT) end
  elseif kw == 'ID' and not count and not one then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    one = ARGV[i + 1]
    if one == '' then return redis.error_reply('ERR delayq: id must not be empty') end
  else
    return redis.error_reply(SYNTAX)
  end
  i = i + 2
end
local e = check_types(B, {{'jobs', 'hash'}, {'due', 'zset'}})
if e then return e end
local listed = {}
if one then
  local s = redis.call('ZSCORE', B .. ':due', one)
  if s then
    local at = instant(s)
    if not at then return corrupt(B .. ':due', one) end
    listed = {{one, at}}
  end
else
  local got = redis.call('ZRANGE', B .. ':due', 0, (count or 10) - 1, 'WITHSCORES')
  for k = 1, #got, 2 do
    local at = instant(got[k + 1])
    if not at then return corrupt(B .. ':due', got[k]) end
    table.insert(listed, {got[k], at})
  end
end
local out = {}
for _, p in ipairs(listed) do
  local j, err = listed_job(B, p[1])
  if not j then return err end
  table.insert(out, p[1])
  table.insert(out, j.payload)
  table.insert(out, j.attempt)
  table.insert(out, p[2])
  table.insert(out, j.leased)
end
return out
