-- DELAYQ.REDRIVE B [COUNT n | ID id] [NOW unix-ms]
-- KEYS[1] = B; ARGV = [options...].
-- Reply: how many dead letters were put back in line.
-- Same replies, errors and stored data as the module (lua-compat/delayq/README.md).

-- prelude: the same in every DELAYQ twin
local NOTINT = 'ERR value is not an integer or out of range'
local SYNTAX = 'ERR syntax error'
local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
local MAX_INT = 9007199254740991
local MAX_TIME = 253402300799999
local MAX_DELAY = 3153600000000
local MAX_COUNT = 100
local MAX_ATTEMPTS = 999999
local RECEIPT_BASE = 1000000
local MAX_GENERATION = 9007199253
local DEFAULT_ATTEMPTS = 5
local MAX_PAYLOAD = 1048576
local MAX_EXAMINE = 200
-- Redis's string2ll: optional '-', digits, no '+', no leading zeros, no '-0'.
local function int(s)
  if type(s) ~= 'string' or #s == 0 or #s > 20 then return nil end
  if s ~= '0' and not string.match(s, '^%-?[1-9]%d*$') then return nil end
  local digits = string.gsub(s, '^%-', '')
  if #digits == 19 and digits > '9223372036854775807' and s ~= '-9223372036854775808' then
    return nil
  end
  return tonumber(s)
end
local function arg_int(s, lo, hi)
  local n = int(s)
  if n == nil or n < lo or n > hi then return nil end
  return n
end
local function stored(s) return arg_int(s, 0, MAX_INT) end
local function fmt(n) return string.format('%d', n) end
local function key_text(k) return (string.gsub(k, '[%c]', '?')) end
local function corrupt(k, field)
  if field then
    return redis.error_reply("ERR delayq: corrupt data in '" .. key_text(k) .. "' field '" .. field .. "'")
  end
  return redis.error_reply("ERR delayq: corrupt data in '" .. key_text(k) .. "'")
end
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- Reads a trailing [NOW unix-ms] from ARGV[i...]; nil, error on bad input.
local function parse_now(i)
  local now = false
  while i <= #ARGV do
    if string.upper(ARGV[i]) ~= 'NOW' or i + 1 > #ARGV then return nil, redis.error_reply(SYNTAX) end
    now = arg_int(ARGV[i + 1], 0, MAX_TIME)
    if not now then return nil, redis.error_reply(NOTINT) end
    i = i + 2
  end
  return now
end
-- Checks the types of the queue's keys (names = suffix -> wanted type).
local function check_types(B, wanted)
  for _, p in ipairs(wanted) do
    local t = redis.call('TYPE', B .. ':' .. p[1]).ok
    if t ~= 'none' and t ~= p[2] then return redis.error_reply(WRONGTYPE) end
  end
  return nil
end
-- A job record: '<generation>:<attempt>:<max>:<leased>:<payload>'.
local function parse_job(v)
  local g, a, m, l, p = string.match(v, '^([^:]*):([^:]*):([^:]*):([^:]*):(.*)$')
  if not g then return nil end
  local j = {gen = stored(g), attempt = stored(a), max = stored(m), leased = stored(l), payload = p}
  if not (j.gen and j.attempt and j.max and j.leased) then return nil end
  if j.gen < 1 or j.gen > MAX_GENERATION or j.max < 1 or j.max > MAX_ATTEMPTS
      or j.attempt > j.max or j.leased > 1 or (j.attempt == 0 and j.leased == 1) then
    return nil
  end
  return j
end
local function format_job(j)
  return fmt(j.gen) .. ':' .. fmt(j.attempt) .. ':' .. fmt(j.max) .. ':' .. fmt(j.leased) .. ':' .. j.payload
end
local function receipt_of(j) return j.gen * RECEIPT_BASE + j.attempt end
-- Takes n new generations from B:seq: the first, or nil and an error reply.
local function generations(B, n)
  local last = 0
  local v = redis.call('GET', B .. ':seq')
  if v then
    last = arg_int(v, 0, MAX_GENERATION)
    if not last then return nil, corrupt(B .. ':seq') end
  end
  if last > MAX_GENERATION - n then
    return nil, redis.error_reply("ERR delayq: integer overflow in '" .. key_text(B .. ':seq') .. "'")
  end
  return last + 1
end
-- The record of id: a job, false when missing, or nil and an error reply.
local function get_job(B, id)
  local v = redis.call('HGET', B .. ':jobs', id)
  if not v then return false end
  local j = parse_job(v)
  if not j then return nil, corrupt(B .. ':jobs', id) end
  return j
end
-- The record of a job listed in B:due or B:dead, which must exist.
local function listed_job(B, id)
  local j, e = get_job(B, id)
  if j == false then return nil, corrupt(B .. ':jobs', id) end
  return j, e
end
local function holds(j, receipt)
  return j.leased == 1 and j.attempt > 0 and receipt == receipt_of(j)
end
-- end of prelude

local B = KEYS[1]
local count, one, now = nil, nil, nil
local i = 1
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  if kw == 'COUNT' and not one then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    count = arg_int(ARGV[i + 1], 1, MAX_COUNT)
    if not count then return redis.error_reply(NOTINT) end
  elseif kw == 'ID' and not count then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    one = ARGV[i + 1]
    if one == '' then return redis.error_reply('ERR delayq: id must not be empty') end
  elseif kw == 'NOW' then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    now = arg_int(ARGV[i + 1], 0, MAX_TIME)
    if not now then return redis.error_reply(NOTINT) end
  else
    return redis.error_reply(SYNTAX)
  end
  i = i + 2
end
now = now or clock()
local e = check_types(B, {{'jobs', 'hash'}, {'due', 'zset'}, {'dead', 'zset'}, {'seq', 'string'}})
if e then return e end
local dead = B .. ':dead'
local ids = {}
if one then
  if redis.call('ZSCORE', dead, one) then ids = {one} end
else
  ids = redis.call('ZRANGE', dead, 0, (count or 10) - 1)
end
local jobs = {}
for k, id in ipairs(ids) do
  local j, err = listed_job(B, id)
  if not j then return err end
  jobs[k] = j
end
if #ids == 0 then return 0 end
local first, gerr = generations(B, #ids)
if not first then return gerr end
for k, id in ipairs(ids) do
  local j = jobs[k]
  j.gen, j.attempt, j.leased = first + k - 1, 0, 0
  redis.call('HSET', B .. ':jobs', id, format_job(j))
  redis.call('ZREM', dead, id)
  redis.call('ZADD', B .. ':due', fmt(now), id)
end
redis.call('SET', B .. ':seq', fmt(first + #ids - 1))
return #ids
