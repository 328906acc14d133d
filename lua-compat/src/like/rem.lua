-- LIKE.REM key user
-- Lua twin of LIKE.REM: LIKE.REM B user -> [changed, count]
-- KEYS: B
-- ARGV: like-max-id, like-promote-at, like-recent (the module's configs),
-- then the command's arguments after the key(s), verbatim.
-- Same replies, errors and derived keys as the module (see README.md).
-- toggle.lua, add.lua and rem.lua are the same script but for this line:
--@ keys 1

local OP, CMD = 'rem', 'like.rem'
local B = KEYS[1]
local MAXID = tonumber(ARGV[1])
local PROMOTE_AT = tonumber(ARGV[2])
local RECENT_CAP = tonumber(ARGV[3])
local args = {}
for i = 4, #ARGV do args[#args + 1] = ARGV[i] end
local function bad_user()
  return redis.error_reply('ERR like: user id must be an integer from 0 to ' .. string.format('%d', MAXID))
end
if (OP == 'rem' and #args ~= 1) or #args < 1 then return arity(CMD) end
local u = args[1]
if u == '' then return redis.error_reply('ERR like: user must not be empty') end
local uid = parse_user(u, MAX_ID)
if uid == nil or uid > MAXID then return bad_user() end
local now = nil
if OP ~= 'rem' then
  local i = 2
  while i <= #args do
    if string.upper(args[i]) == 'NOW' then
      if i + 1 > #args then return syntax() end
      local v = parse_int(args[i + 1])
      if v == nil or v < 0 or v > 9007199254740991 then return not_integer() end
      now = args[i + 1]
      i = i + 2
    else
      return syntax()
    end
  end
end
local range, off = math.floor(uid / RANGE_IDS), uid % RANGE_IDS
local CHUNK = B .. ':bits:' .. fmt(range)
local SET, COUNT, INDEX, META, RECENT = B .. ':set', B .. ':count', B .. ':chunks', B .. ':meta', B .. ':recent'
local tchunk = type_of(CHUNK)
if tchunk ~= 'none' and tchunk ~= 'string' then return redis.error_reply(WRONGTYPE) end
local has_chunk = tchunk == 'string'
local tcount = type_of(COUNT)
if tcount ~= 'none' and tcount ~= 'string' then return redis.error_reply(WRONGTYPE) end
local recent_on = RECENT_CAP > 0
if recent_on then
  local t = type_of(RECENT)
  if t ~= 'none' and t ~= 'zset' then return redis.error_reply(WRONGTYPE) end
end
-- A count that is not one: the Set's type error comes first.
local function corrupt_count()
  local t = type_of(SET)
  if t ~= 'none' and t ~= 'set' then return redis.error_reply(WRONGTYPE) end
  return corrupt(COUNT)
end
local stored = redis.call('GET', COUNT)
local old, set_expiry, at_max = 0, nil, false
if stored then
  old = parse_count(stored)
  if old == nil then return corrupt_count() end
  at_max = stored == '9007199254740991'
else
  -- No count: a post without likers, or a count deleted by hand from a
  -- post all in set form (SCARD); with chunks it cannot be counted.
  local ts, ti = type_of(SET), type_of(INDEX)
  if ts ~= 'none' and ts ~= 'set' then return redis.error_reply(WRONGTYPE) end
  if ti ~= 'none' and ti ~= 'string' then return redis.error_reply(WRONGTYPE) end
  if has_chunk or ti == 'string' then return corrupt(COUNT) end
  old = redis.call('SCARD', SET)
  local t = redis.call('PEXPIRETIME', SET)
  if t > 0 then set_expiry = t end
end
-- A count that cannot change is refused before anything is written.
local function count_error(want)
  if want and at_max then return overflow(COUNT) end
  if not want and old == 0 then return corrupt_count() end
  return nil
end
local function want_of(was)
  if OP == 'add' then return true elseif OP == 'rem' then return false end
  return not was
end
-- The module's SADD/SREM/SISMEMBER answer WRONGTYPE for a Set of the
-- wrong type; a script's redis.call would raise instead.
local function set_ok()
  local t = type_of(SET)
  return t == 'none' or t == 'set'
end
local migrating, set_added = false, false
local was, liked, dirty
if has_chunk then
  local len = redis.call('STRLEN', CHUNK)
  if len == MIGRATING_BYTES then migrating = true elseif len ~= CHUNK_BYTES then return corrupt(CHUNK) end
  local bit = redis.call('GETBIT', CHUNK, off) == 1
  local in_set = false
  if not bit and migrating then
    if not set_ok() then return redis.error_reply(WRONGTYPE) end
    if old == 0 and OP ~= 'add' and redis.call('SISMEMBER', SET, u) == 1 then return corrupt_count() end
    in_set = redis.call('SREM', SET, u) == 1
  end
  was = bit or in_set
  local want = want_of(was)
  if want ~= was then
    local e = count_error(want)
    if e then return e end
  end
  if want ~= bit then redis.call('SETBIT', CHUNK, off, want and 1 or 0) end
  liked, dirty = want, in_set or want ~= bit
else
  if not set_ok() then return redis.error_reply(WRONGTYPE) end
  if (at_max and OP ~= 'rem') or (old == 0 and OP ~= 'add') then
    was = redis.call('SISMEMBER', SET, u) == 1
    local want = want_of(was)
    if was ~= want then
      local e = count_error(want)
      if e then return e end
      redis.call(want and 'SADD' or 'SREM', SET, u)
    end
    liked, dirty = want, was ~= want
  elseif OP == 'add' then
    set_added = redis.call('SADD', SET, u) == 1
    was, liked, dirty = not set_added, true, set_added
  elseif OP == 'rem' then
    local removed = redis.call('SREM', SET, u) == 1
    was, liked, dirty = removed, false, removed
  else
    set_added = redis.call('SADD', SET, u) == 1
    if not set_added then redis.call('SREM', SET, u) end
    was, liked, dirty = not set_added, set_added, true
  end
end
local changed = was ~= liked
local count = old
if changed then
  if liked then count = old + 1 else count = old - 1 end
  if not has_chunk and count == 0 and redis.call('EXISTS', INDEX) == 0 then
    -- The last unlike of a post in set form: the post leaves no keys.
    redis.call('DEL', COUNT, META, RECENT)
  else
    redis.call('SET', COUNT, fmt(count), 'KEEPTTL')
    if not stored and set_expiry then redis.call('PEXPIREAT', COUNT, set_expiry) end
  end
end
-- Keys created later take the post's expiry: the instant B:count holds.
local observe = changed and count % OBSERVE_EVERY == 0
local step = changed and (recent_on or observe or migrating)
local expires_at = nil
if set_added or step then
  local t = redis.call('PEXPIRETIME', COUNT)
  if t > 0 then expires_at = t end
end
if set_added and expires_at and redis.call('PEXPIRETIME', SET) == -1 then
  redis.call('PEXPIREAT', SET, expires_at)
end
local function created(key)
  if expires_at then redis.call('PEXPIREAT', key, expires_at) end
end
-- Recent likers (like-recent > 0): the latest likers, user -> unix-ms.
local function record_recent()
  if not liked then
    redis.call('ZREM', RECENT, u)
    return
  end
  local existed = redis.call('EXISTS', RECENT) == 1
  if now == nil then
    local t = redis.call('TIME')
    now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
  end
  redis.call('ZADD', RECENT, now, u)
  if not existed then created(RECENT) end
  local over = redis.call('ZCARD', RECENT) - RECENT_CAP
  if over > 0 then
    for _, m in ipairs(redis.call('ZRANGE', RECENT, 0, over - 1)) do
      redis.call('ZREM', RECENT, m)
    end
  end
end
-- Promotion, in bounded steps (the module's promotion_step).
local function set_state(state, at)
  local existed = redis.call('EXISTS', META) == 1
  if state then
    redis.call('HSET', META, 'state', state, 'at', at)
    if not existed then created(META) end
  else
    redis.call('HDEL', META, 'state', 'at')
  end
end
local function set_check(n)
  local existed = redis.call('EXISTS', META) == 1
  redis.call('HSET', META, 'check', fmt(n))
  if not existed then created(META) end
end
-- The Set size of the next check: doubled, at least like-promote-at + 1,
-- never while the Set is an intset (at most 512 ids).
local function next_check(members)
  local floor = math.max(PROMOTE_AT + 1, 513)
  if members <= 512 then return floor end
  return math.max(members * 2, floor)
end
-- Walks the chunk index from `at` (model::WALK_STEP marked ranges at
-- most), calling f(name, type) until it returned true `limit` times;
-- returns the position to go on from, or nil at the end.
local function walk(at, limit, f)
  local p = tonumber(at)
  local t = type_of(INDEX)
  if t ~= 'none' and t ~= 'string' then return nil end
  local bytes = redis.call('GET', INDEX) or ''
  local bits = #bytes * 8
  local looked, done = 0, 0
  while p < bits do
    local byte = string.byte(bytes, math.floor(p / 8) + 1)
    if byte == 0 then
      p = (math.floor(p / 8) + 1) * 8
    else
      if bit.band(byte, bit.rshift(128, p % 8)) ~= 0 then
        if looked == WALK_STEP or done == limit then return p end
        looked = looked + 1
        local name = B .. ':bits:' .. fmt(p)
        local tn = type_of(name)
        if (tn == 'none' or tn == 'string') and f(name, tn) then done = done + 1 end
      end
      p = p + 1
    end
  end
  return nil
end
local function create_step(at)
  local nxt = walk(at, CREATE_STEP, function(name, t)
    if t ~= 'none' then return false end
    redis.call('SETRANGE', name, CHUNK_BYTES, '\0')
    created(name)
    return true
  end)
  if nxt then set_state('create', fmt(nxt)) else set_state('move', '0') end
  return false
end
local function check(n)
  local threshold = next_check(0)
  local c = redis.call('HGET', META, 'check')
  if c then
    threshold = parse_int(c)
    if threshold == nil or threshold < 0 then return false end
  end
  if n < threshold then return false end
  local ts = type_of(SET)
  if ts ~= 'none' and ts ~= 'set' then return false end
  local size = redis.call('SCARD', SET)
  if size < threshold then return false end
  local res = redis.call('SSCAN', SET, '0', 'COUNT', SAMPLE)
  local ids = {}
  for _, m in ipairs(res[2]) do
    local v = parse_user(m, MAX_ID)
    if v then ids[#ids + 1] = v end
  end
  local p = plan(ids, size, res[1] == '0', math.floor(MAXID / RANGE_IDS))
  if #p == 0 then
    set_check(next_check(size))
    return false
  end
  local ti = type_of(INDEX)
  if ti ~= 'none' and ti ~= 'string' then return false end
  -- Mark the planned ranges in the chunk index, written in one piece.
  local bytes = redis.call('GET', INDEX) or ''
  local need = math.floor(p[#p][2] / 8) + 1
  local out = {}
  for i = 1, math.max(#bytes, need) do out[i] = string.byte(bytes, i) or 0 end
  for _, iv in ipairs(p) do
    for r = iv[1], iv[2] do
      local i = math.floor(r / 8) + 1
      out[i] = bit.bor(out[i], bit.rshift(128, r % 8))
    end
  end
  local chars = {}
  for i = 1, #out do chars[i] = string.char(out[i]) end
  redis.call('SETRANGE', INDEX, 0, table.concat(chars))
  if ti == 'none' then created(INDEX) end
  set_state('create', fmt(p[1][1]))
  return false
end
local function move_step(at)
  local ts = type_of(SET)
  if ts ~= 'none' and ts ~= 'set' then return false end
  local res = redis.call('SSCAN', SET, at, 'COUNT', MOVE_STEP)
  local usable, moved, seen = {}, {}, {}
  for _, m in ipairs(res[2]) do
    local v = parse_user(m, MAX_ID)
    if v then
      local name = B .. ':bits:' .. fmt(math.floor(v / RANGE_IDS))
      if usable[name] == nil then
        local len = type_of(name) == 'string' and redis.call('STRLEN', name) or 0
        usable[name] = len == CHUNK_BYTES or len == MIGRATING_BYTES
      end
      if usable[name] and not seen[m] then
        seen[m] = true
        moved[#moved + 1] = {m, name, v % RANGE_IDS}
      end
    end
  end
  if #moved > 0 then
    local ms = {}
    for i, x in ipairs(moved) do ms[i] = x[1] end
    redis.call('SREM', SET, unpack(ms))
    for _, x in ipairs(moved) do redis.call('SETBIT', x[2], x[3], 1) end
  end
  if res[1] == '0' then set_state('settle', '0') else set_state('move', res[1]) end
  return false
end
local function settle_step(at)
  local nxt = walk(at, SETTLE_STEP, function(name, t)
    if t ~= 'string' or redis.call('STRLEN', name) ~= MIGRATING_BYTES then return false end
    redis.call('SET', name, redis.call('GETRANGE', name, 0, CHUNK_BYTES - 1), 'KEEPTTL')
    return true
  end)
  if nxt then
    set_state('settle', fmt(nxt))
    return false
  end
  set_state(nil)
  local left = 0
  if type_of(SET) == 'set' then left = redis.call('SCARD', SET) end
  -- Checked again at once (the sample may have missed dense blocks).
  set_check(math.max(left, next_check(0)))
  return true
end
local function promotion_step(n)
  local tm = type_of(META)
  if tm ~= 'none' and tm ~= 'hash' then return false end
  local state = redis.call('HGET', META, 'state')
  local at = ''
  if state then
    at = redis.call('HGET', META, 'at') or ''
    if #at == 0 or #at > 20 or not string.match(at, '^%d+$') then return false end
  end
  if not state then
    if migrating then
      set_state('move', '0')
      return false
    end
    return check(n)
  elseif state == 'create' then return create_step(at)
  elseif state == 'move' then return move_step(at)
  elseif state == 'settle' then return settle_step(at)
  end
  return false
end
if step then
  if recent_on then record_recent() end
  if observe or migrating then promotion_step(count) end
end
local first = changed
if OP == 'toggle' then first = liked end
return {first and 1 or 0, count}

