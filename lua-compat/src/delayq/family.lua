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
local function stored(s) return arg_int(s, 0, MAX_INT) end
-- The latest instant DELAYQ scores a job at: the latest NOW or AT plus the
-- longest delay or lease.
local MAX_DUE = MAX_TIME + MAX_DELAY
-- A B:due or B:dead score as DELAYQ writes it, a whole ms from 0 to
-- MAX_DUE; nil for anything else (a fraction, inf, a hand-set 1e300),
-- which the commands refuse as corrupt, as the module does.
local function instant(score)
  local n = tonumber(score)
  if not n or n ~= n or n < 0 or n > MAX_DUE or n % 1 ~= 0 then return nil end
  return n
end
local function corrupt(k, field) return data_error('delayq', 'corrupt data', k, field) end
-- Reads a trailing [NOW unix-ms] from argv[i...]; nil, error on bad input.
local function parse_now(argv, i)
  local now = false
  while i <= #argv do
    if string.upper(argv[i]) ~= 'NOW' or i + 1 > #argv then return nil, redis.error_reply(SYNTAX) end
    now = arg_int(argv[i + 1], 0, MAX_TIME)
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
-- A job record: '<generation>:<attempt>:<max>:<leased>:<payload>', or
-- with a lost-lease cap (LOSTMAX) '...:<leased>/<lost>/<lostmax>:<payload>'.
local function parse_job(v)
  local g, a, m, l, p = string.match(v, '^([^:]*):([^:]*):([^:]*):([^:]*):(.*)$')
  if not g then return nil end
  local lost, cap = 0, nil
  local l1, l2, l3 = string.match(l, '^([^/]*)/([^/]*)/([^/]*)$')
  if l1 then
    l, lost, cap = l1, stored(l2), stored(l3)
    if not (lost and cap) or cap > MAX_ATTEMPTS then return nil end
  end
  local j = {gen = stored(g), attempt = stored(a), max = stored(m), leased = stored(l),
    lost = lost, lostmax = cap, payload = p}
  if not (j.gen and j.attempt and j.max and j.leased) then return nil end
  if j.gen < 1 or j.gen > MAX_GENERATION or j.max < 1 or j.max > MAX_ATTEMPTS
      or j.attempt > j.max or j.leased > 1 or (j.attempt == 0 and j.leased == 1) then
    return nil
  end
  -- A count past the cap is a dead letter's: never leased.
  if cap and (lost > j.attempt or lost > cap + 1 or (lost > cap and j.leased == 1)) then
    return nil
  end
  return j
end
local function format_job(j)
  local l = fmt(j.leased)
  if j.lostmax then l = l .. '/' .. fmt(j.lost) .. '/' .. fmt(j.lostmax) end
  return fmt(j.gen) .. ':' .. fmt(j.attempt) .. ':' .. fmt(j.max) .. ':' .. l .. ':' .. j.payload
end
-- True when the job lost more leases than its cap allows.
local function lost_too_often(j) return j.lostmax ~= nil and j.lost > j.lostmax end
local function receipt_of(j) return j.gen * RECEIPT_BASE + j.attempt end
-- Takes n new generations from B:seq: the first, or nil and an error reply.
local function generations(B, n)
  local last = 0
  local v = redis.call('GET', B .. ':seq')
  if v then
    -- Past the last generation is an overflow, not corrupt data.
    last = int(v)
    if not last or last < 0 then return nil, corrupt(B .. ':seq') end
  end
  if last > MAX_GENERATION - n then
    return nil, data_error('delayq', 'integer overflow', B .. ':seq')
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
