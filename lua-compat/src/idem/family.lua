local MAX_INT = 9007199254740991
local MAX_LEASE = 3153600000000
local MAX_TTL_S = 3153600000
local MAX_TIME = 253402300799999
-- The module's idem-ttl default: a script cannot read module configs.
local DEFAULT_TTL_S = 86400
local function corrupt(k, field) return data_error('idem', 'corrupt data', k, field) end
-- Reads the trailing [NOW unix-ms] from argv[i]: the instant, or nil and an error reply.
local function parse_now(argv, i)
  local now = nil
  while i <= #argv do
    if string.upper(argv[i]) ~= 'NOW' or i + 1 > #argv or now then return nil, redis.error_reply(SYNTAX) end
    now = arg_int(argv[i + 1], 0, MAX_TIME)
    if not now then return nil, redis.error_reply(NOTINT) end
    i = i + 2
  end
  return now or clock_ms()
end
-- Opens B: false (no record), the record {state, fp, fence, lease, ttl,
-- result}, or nil and an error reply.
local function open(B)
  local t = redis.call('TYPE', B).ok
  if t == 'none' then return false end
  if t ~= 'hash' then return nil, redis.error_reply(WRONGTYPE) end
  local v = redis.call('HMGET', B, 'state', 'fp', 'fence', 'lease', 'ttl', 'result')
  local r = {state = v[1], fp = v[2], result = v[6]}
  if r.state ~= 'running' and r.state ~= 'done' and r.state ~= 'aborted' then
    return nil, corrupt(B, 'state')
  end
  if not r.fp or r.fp == '' then return nil, corrupt(B, 'fp') end
  r.fence = v[3] and arg_int(v[3], 0, MAX_INT)
  if not r.fence then return nil, corrupt(B, 'fence') end
  r.lease = v[4] and arg_int(v[4], 0, MAX_INT)
  if not r.lease then return nil, corrupt(B, 'lease') end
  r.ttl = v[5] and arg_int(v[5], 1, MAX_TTL_S)
  if not r.ttl then return nil, corrupt(B, 'ttl') end
  if (r.result ~= false and r.result ~= nil) ~= (r.state == 'done') then
    return nil, corrupt(B, 'result')
  end
  return r
end
