-- LOCK.ACQUIRE key owner ttl-ms [LIMIT n] [MAXHOLD ms] [BLOCK timeout-ms] [NOW unix-ms] [IDEM token]
-- KEYS[1] = B; ARGV = owner ttl-ms [options...], exactly as the command.
-- Reply: the fencing token, or nil when the lock is held by others (or the
-- semaphore is full). BLOCK is accepted but cannot wait in a script: the
-- twin answers at once, as the module does inside MULTI or a script.
-- Same replies, errors and stored data as the module (lua-compat/docs/lock.md).
--@ keys 1
--@ idem -4

local B = KEYS[1]
if #ARGV < 2 then
  return redis.error_reply("ERR wrong number of arguments for 'lock.acquire' command")
end
local owner = ARGV[1]
if owner == '' then return redis.error_reply('ERR lock: user must not be empty') end
local ttl = arg_int(ARGV[2], 1, MAX_TTL)
if not ttl then return redis.error_reply(NOTINT) end
local limit, maxhold, now = nil, nil, nil
local seen = {}
local i = 3
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  local lo, hi
  -- Each option is given once: a second one is a syntax error.
  if seen[kw] then return redis.error_reply(SYNTAX) end
  seen[kw] = true
  if kw == 'LIMIT' then lo, hi = 1, MAX_LIMIT
  elseif kw == 'MAXHOLD' then lo, hi = 1, MAX_TTL
  elseif kw == 'BLOCK' then lo, hi = 0, MAX_TTL
  elseif kw == 'NOW' then lo, hi = 0, MAX_TIME
  else return redis.error_reply(SYNTAX) end
  if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
  local n = arg_int(ARGV[i + 1], lo, hi)
  if not n then return redis.error_reply(NOTINT) end
  if kw == 'LIMIT' then limit = n elseif kw == 'MAXHOLD' then maxhold = n
  elseif kw == 'NOW' then now = n end
  i = i + 2
end
now = now or clock_ms()
local lock, err = open(B)
if not lock then return err end
local asked = limit or 1
local function differs(a, has)
  return redis.error_reply('ERR lock: LIMIT ' .. fmt(a) .. " differs from the lock's limit " .. fmt(has))
end
local function fresh(token)
  local hard = 0
  if maxhold then hard = now + maxhold end
  return {token = token, count = 1, expires = lease_end(now, ttl, hard), hard = hard}
end
if lock.kind == 'free' then
  if asked == 1 then
    lock = {kind = 'mutex', m = {fence = 0, count = 0, expires = 0, hard = 0, owner = ''}}
  else
    lock = {kind = 'sem', meta = {fence = 0, limit = asked, next = 0}, holders = 0, meta_changed = true}
  end
end
if lock.kind == 'mutex' then
  local m = lock.m
  if limit and limit ~= 1 then return differs(asked, 1) end
  local h = {token = m.fence, count = m.count, expires = m.expires, hard = m.hard}
  if live(h, now) then
    if m.owner ~= owner then return false end
    if m.count >= MAX_INT then return overflow(B) end
    m.count = m.count + 1
    m.expires = lease_end(now, ttl, m.hard)
  else
    if m.fence >= MAX_INT then return overflow(B) end
    local n = fresh(m.fence + 1)
    m.fence, m.count, m.expires, m.hard, m.owner = n.token, 1, n.expires, n.hard, owner
  end
  redis.call('SET', B, format_mutex(m))
  return m.fence
end
-- A semaphore: drop the holders whose lease ended, when some may have
-- (or when holders exist without a next lease end: a hand edit, whose
-- holders are checked rather than counted).
local meta = lock.meta
local changed = lock.meta_changed or false
local meta_changed = changed
local ended = {}
if (meta.next > 0 and now >= meta.next) or (meta.next == 0 and lock.holders > 0) then
  local all, e = all_holders(B)
  if not all then return e end
  local next = 0
  for o, h in pairs(all) do
    if live(h, now) then
      if next == 0 or h.expires < next then next = h.expires end
    else
      table.insert(ended, o)
      lock.holders = lock.holders - 1
    end
  end
  if #ended > 0 or next ~= meta.next then
    meta.next = next
    meta_changed, changed = true, true
  end
end
local function commit(set_owner, hold)
  if not changed then return end
  local args = {}
  if meta_changed then
    for _, f in ipairs({'fence', 'limit', 'next'}) do
      table.insert(args, f)
      table.insert(args, fmt(meta[f]))
    end
  end
  local dels = {}
  local owners = {}
  for _, o in ipairs(ended) do owners[o] = false end
  if set_owner then owners[set_owner] = hold end
  local sorted = {}
  for o in pairs(owners) do table.insert(sorted, o) end
  table.sort(sorted)
  for _, o in ipairs(sorted) do
    if owners[o] then
      table.insert(args, 'holder:' .. o)
      table.insert(args, format_hold(owners[o]))
    else
      table.insert(dels, 'holder:' .. o)
    end
  end
  if #args > 0 then redis.call('HSET', B, unpack(args)) end
  if #dels > 0 then redis.call('HDEL', B, unpack(dels)) end
end
if limit then
  if limit == 1 then return differs(1, meta.limit) end
  if limit ~= meta.limit then
    if lock.holders > 0 then return differs(limit, meta.limit) end
    meta.limit = limit
    meta_changed, changed = true, true
  end
end
local mine, e = holder(B, owner)
if mine == nil then return e end
for _, o in ipairs(ended) do
  if o == owner then mine = false end
end
if mine and live(mine, now) then
  if mine.count >= MAX_INT then return overflow(B, 'holder:' .. owner) end
  mine.count = mine.count + 1
  mine.expires = lease_end(now, ttl, mine.hard)
  cover(meta, mine.expires)
  changed, meta_changed = true, true
  commit(owner, mine)
  return mine.token
end
if lock.holders >= meta.limit then
  commit(nil, nil)
  return false
end
if meta.fence >= MAX_INT then return overflow(B, 'fence') end
meta.fence = meta.fence + 1
local h = fresh(meta.fence)
cover(meta, h.expires)
changed, meta_changed = true, true
commit(owner, h)
return h.token
