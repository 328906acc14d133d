-- LOCK.RENEW B owner ttl-ms [NOW unix-ms]
-- KEYS[1] = B; ARGV = owner ttl-ms [NOW unix-ms].
-- Reply: the ms left after restarting owner's lease (never past MAXHOLD's
-- end), or 0 when owner holds nothing.
-- Same replies, errors and stored data as the module (lua-compat/lock/README.md).

-- prelude: the same in every LOCK twin
local NOTINT = 'ERR value is not an integer or out of range'
local SYNTAX = 'ERR syntax error'
local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
local MAX_INT = 9007199254740991
local MAX_TTL = 3153600000000
local MAX_TIME = 253402300799999
local MAX_LIMIT = 100
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
    return redis.error_reply("ERR lock: corrupt data in '" .. key_text(k) .. "' field '" .. field .. "'")
  end
  return redis.error_reply("ERR lock: corrupt data in '" .. key_text(k) .. "'")
end
local function overflow(k, field)
  if field then
    return redis.error_reply("ERR lock: integer overflow in '" .. key_text(k) .. "' field '" .. field .. "'")
  end
  return redis.error_reply("ERR lock: integer overflow in '" .. key_text(k) .. "'")
end
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- A mutex: '<fence>:<count>:<expires>:<until>:<owner>'.
local function parse_mutex(v)
  local f, c, e, u, o = string.match(v, '^([^:]*):([^:]*):([^:]*):([^:]*):(.*)$')
  if not f then return nil end
  local m = {fence = stored(f), count = stored(c), expires = stored(e), hard = stored(u), owner = o}
  if not (m.fence and m.count and m.expires and m.hard) then return nil end
  local free = m.count == 0 and m.expires == 0 and m.hard == 0 and o == ''
  local held = m.count > 0 and m.expires > 0 and m.fence > 0 and o ~= ''
  if free or held then return m end
  return nil
end
local function format_mutex(m)
  return fmt(m.fence) .. ':' .. fmt(m.count) .. ':' .. fmt(m.expires) .. ':' .. fmt(m.hard) .. ':' .. m.owner
end
-- A semaphore holder: '<token>:<count>:<expires>:<until>'.
local function parse_hold(v)
  local t, c, e, u = string.match(v, '^([^:]*):([^:]*):([^:]*):([^:]*)$')
  if not t then return nil end
  local h = {token = stored(t), count = stored(c), expires = stored(e), hard = stored(u)}
  if not (h.token and h.count and h.expires and h.hard) then return nil end
  if h.token < 1 or h.count < 1 or h.expires < 1 then return nil end
  return h
end
local function format_hold(h)
  return fmt(h.token) .. ':' .. fmt(h.count) .. ':' .. fmt(h.expires) .. ':' .. fmt(h.hard)
end
local function live(h, now) return h ~= nil and h.count > 0 and now < h.expires end
local function lease_end(now, ttl, hard)
  local e = now + ttl
  if hard > 0 and hard < e then return hard end
  return e
end
-- Opens B: {kind = 'free'|'mutex'|'sem', ...} or an error reply.
local function open(B)
  local t = redis.call('TYPE', B).ok
  if t == 'none' then return {kind = 'free'} end
  if t == 'string' then
    local m = parse_mutex(redis.call('GET', B))
    if not m then return nil, corrupt(B) end
    return {kind = 'mutex', m = m}
  end
  if t == 'hash' then
    local v = redis.call('HMGET', B, 'fence', 'limit', 'next')
    local meta = {}
    for i, f in ipairs({'fence', 'limit', 'next'}) do
      meta[f] = v[i] and stored(v[i])
      if not meta[f] then return nil, corrupt(B, f) end
    end
    if meta.limit < 2 or meta.limit > MAX_LIMIT then return nil, corrupt(B, 'limit') end
    return {kind = 'sem', meta = meta, holders = redis.call('HLEN', B) - 3}
  end
  return nil, redis.error_reply(WRONGTYPE)
end
-- Every holder of a semaphore: {owner = hold}, or an error reply.
local function all_holders(B)
  local kv = redis.call('HGETALL', B)
  local out = {}
  for i = 1, #kv, 2 do
    local f = kv[i]
    if string.sub(f, 1, 7) == 'holder:' then
      local h = parse_hold(kv[i + 1])
      if not h then return nil, corrupt(B, f) end
      out[string.sub(f, 8)] = h
    elseif f ~= 'fence' and f ~= 'limit' and f ~= 'next' then
      return nil, corrupt(B, f)
    end
  end
  return out
end
-- The hold of one semaphore owner (false when none), or an error reply.
local function holder(B, owner)
  local v = redis.call('HGET', B, 'holder:' .. owner)
  if not v then return false end
  local h = parse_hold(v)
  if not h then return nil, corrupt(B, 'holder:' .. owner) end
  return h
end
local function cover(meta, expires)
  if meta.next == 0 or expires < meta.next then meta.next = expires end
end
-- end of prelude

local B = KEYS[1]
if #ARGV < 2 then
  return redis.error_reply("ERR wrong number of arguments for 'lock.renew' command")
end
local owner = ARGV[1]
if owner == '' then return redis.error_reply('ERR lock: user must not be empty') end
local ttl = arg_int(ARGV[2], 1, MAX_TTL)
if not ttl then return redis.error_reply(NOTINT) end
local now = nil
local i = 3
while i <= #ARGV do
  if string.upper(ARGV[i]) ~= 'NOW' or i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
  now = arg_int(ARGV[i + 1], 0, MAX_TIME)
  if not now then return redis.error_reply(NOTINT) end
  i = i + 2
end
now = now or clock()
local lock, err = open(B)
if not lock then return err end
if lock.kind == 'free' then return 0 end
if lock.kind == 'mutex' then
  local m = lock.m
  local h = {token = m.fence, count = m.count, expires = m.expires, hard = m.hard}
  if not live(h, now) or m.owner ~= owner then return 0 end
  m.expires = lease_end(now, ttl, m.hard)
  redis.call('SET', B, format_mutex(m))
  return m.expires - now
end
local mine, e = holder(B, owner)
if mine == nil then return e end
if not mine or not live(mine, now) then return 0 end
mine.expires = lease_end(now, ttl, mine.hard)
local meta = lock.meta
cover(meta, mine.expires)
redis.call('HSET', B, 'fence', fmt(meta.fence), 'limit', fmt(meta.limit), 'next', fmt(meta.next),
  'holder:' .. owner, format_hold(mine))
return mine.expires - now
