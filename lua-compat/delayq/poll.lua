-- DELAYQ.POLL B lease-ms [COUNT n] [BLOCK timeout-ms] [NOW unix-ms]
-- KEYS[1] = B; ARGV = lease-ms [options...].
-- Reply: {id, payload, attempt, receipt, ...} for up to n due jobs, each
-- leased for lease-ms; {} when none is due. BLOCK is accepted but cannot
-- wait in a script: the twin answers at once, as the module does inside
-- MULTI or a script.
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
if #ARGV < 1 then
  return redis.error_reply("ERR wrong number of arguments for 'delayq.poll' command")
end
local lease = arg_int(ARGV[1], 1, MAX_DELAY)
if not lease then return redis.error_reply(NOTINT) end
local count, now = 1, nil
local i = 2
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  local lo, hi
  if kw == 'COUNT' then lo, hi = 1, MAX_COUNT
  elseif kw == 'BLOCK' then lo, hi = 0, MAX_DELAY
  elseif kw == 'NOW' then lo, hi = 0, MAX_TIME
  else return redis.error_reply(SYNTAX) end
  if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
  local n = arg_int(ARGV[i + 1], lo, hi)
  if not n then return redis.error_reply(NOTINT) end
  if kw == 'COUNT' then count = n elseif kw == 'NOW' then now = n end
  i = i + 2
end
now = now or clock()
local e = check_types(B, {{'jobs', 'hash'}, {'due', 'zset'}, {'dead', 'zset'}})
if e then return e end
local due, dead = B .. ':due', B .. ':dead'
-- Read and check everything first: batches of what is wanted, doubling
-- when exhausted jobs are met, at most MAX_EXAMINE entries.
local deliver, exhausted = {}, {}
local offset, batch = 0, count
while #deliver < count and offset < MAX_EXAMINE do
  local want = math.min(batch, MAX_EXAMINE - offset)
  local got = redis.call('ZRANGEBYSCORE', due, '-inf', fmt(now), 'WITHSCORES', 'LIMIT', offset, want)
  local stop = false
  for k = 1, #got, 2 do
    offset = offset + 1
    local id = got[k]
    local j, err = listed_job(B, id)
    if not j then return err end
    if j.attempt >= j.max then
      table.insert(exhausted, {id, j, tonumber(got[k + 1])})
    else
      table.insert(deliver, {id, j})
      if #deliver == count then stop = true break end
    end
  end
  if stop or #got / 2 < want then break end
  batch = batch * 2
end
for _, x in ipairs(exhausted) do
  x[2].leased = 0
  redis.call('HSET', B .. ':jobs', x[1], format_job(x[2]))
  redis.call('ZREM', due, x[1])
  redis.call('ZADD', dead, fmt(x[3]), x[1])
end
local out = {}
for _, x in ipairs(deliver) do
  local j = x[2]
  j.attempt = j.attempt + 1
  j.leased = 1
  redis.call('HSET', B .. ':jobs', x[1], format_job(j))
  redis.call('ZADD', due, fmt(now + lease), x[1])
  table.insert(out, x[1])
  table.insert(out, j.payload)
  table.insert(out, j.attempt)
  table.insert(out, receipt_of(j))
end
return out
