local MAX_INT = 9007199254740991
local MAX_TTL = 3153600000000
local MAX_TIME = 253402300799999
local MAX_LIMIT = 100
local function stored(s) return arg_int(s, 0, MAX_INT) end
local function corrupt(k, field) return data_error('lock', 'corrupt data', k, field) end
local function overflow(k, field) return data_error('lock', 'integer overflow', k, field) end
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
