local function syntax() return redis.error_reply('ERR syntax error') end
local function not_integer() return redis.error_reply('ERR value is not an integer or out of range') end
-- The module's corrupt-data and overflow errors, the key shown as the
-- module shows it (control characters as '?').
local function corrupt(key) return data_error('like', 'corrupt data', key) end
local function overflow(key) return data_error('like', 'integer overflow', key) end
-- Redis's string2ll: optional '-', digits, no leading zeros, within int64.
local function parse_int(s)
  if type(s) ~= 'string' or #s == 0 or #s > 20 then return nil end
  local neg = string.sub(s, 1, 1) == '-'
  local d = neg and string.sub(s, 2) or s
  if #d == 0 or not string.match(d, '^%d+$') then return nil end
  if #d > 1 and string.sub(d, 1, 1) == '0' then return nil end
  if neg and d == '0' then return nil end
  if #d > 19 or (#d == 19 and d > (neg and '9223372036854775808' or '9223372036854775807')) then return nil end
  return tonumber(s)
end
-- Canonical digits (no sign, no leading zero): ids, counts, positions.
local function digits(s)
  return type(s) == 'string' and #s > 0 and #s <= 20 and string.match(s, '^%d+$') ~= nil
    and (#s == 1 or string.sub(s, 1, 1) ~= '0')
end
-- A user id: canonical digits up to max.
local function parse_user(s, max)
  if not digits(s) then return nil end
  local v = tonumber(s)
  if v > max then return nil end
  return v
end
-- A stored count: canonical digits up to 2^53 - 1, as the module keeps
-- it (a post has at most 2^32 likers; a double holds every such count
-- exactly, and any larger one reads as at least 2^53).
local function parse_count(s)
  if not digits(s) or #s > 16 then return nil end
  local n = tonumber(s)
  if n > 9007199254740991 then return nil end
  return n
end
local function type_of(k) return redis.call('TYPE', k)['ok'] end
-- The layout and the memory model (src/like/model.rs, docs/like.md).
local MAX_ID = 4294967295
local RANGE_IDS, CHUNK_BYTES, MIGRATING_BYTES = 64000, 8000, 8001
local KEY_BYTES, MEMBER_BYTES = 64, 48
local CHUNK_MEMORY = KEY_BYTES + CHUNK_BYTES
local SAMPLE, MIN_HITS, MOVE_STEP = 256, 8, 64
local CREATE_STEP, SETTLE_STEP, WALK_STEP, OBSERVE_EVERY = 8, 16, 64, 32
-- The ranges to promote from a sample of the Set (model::plan).
local function plan(sample, size, exact, last)
  table.sort(sample)
  local ids = {}
  for _, v in ipairs(sample) do
    if ids[#ids] ~= v then ids[#ids + 1] = v end
  end
  local m = #ids
  -- A Set of at most 512 ids is an intset: no range of it pays for a chunk.
  if m == 0 or size <= 512 then return {} end
  local function wins(h, ranges) return h * size * MEMBER_BYTES > ranges * CHUNK_MEMORY * m end
  local function trusted(h) return exact or h >= MIN_HITS end
  -- Per block: {block, hits outside promoted ranges, ranges promoted,
  -- first and last range holding those hits}.
  local promoted, blocks = {}, {}
  for _, id in ipairs(ids) do
    local r = math.floor(id / RANGE_IDS)
    if r <= last then
      local e = blocks[#blocks]
      if e and e[1] == r then e[2] = e[2] + 1 else blocks[#blocks + 1] = {r, 1, 0, r, r} end
    end
  end
  local NONE = 2 ^ 62
  for _, e in ipairs(blocks) do
    if trusted(e[2]) and wins(e[2], 1) then
      promoted[#promoted + 1] = {e[1], e[1]}
      e[2], e[3], e[4], e[5] = 0, 1, NONE, 0
    end
  end
  if not exact then
    for _ = 1, 17 do
      local up = {}
      for _, e in ipairs(blocks) do
        local b = math.floor(e[1] / 2)
        local t = up[#up]
        if t and t[1] == b then
          t[2], t[3], t[4], t[5] = t[2] + e[2], t[3] + e[3], math.min(t[4], e[4]), math.max(t[5], e[5])
        else
          up[#up + 1] = {b, e[2], e[3], e[4], e[5]}
        end
      end
      for _, e in ipairs(up) do
        if e[2] > 0 then
          -- Only the span from the first to the last range hit.
          local lo, hi = e[4], e[5]
          local inside = 0
          for _, p in ipairs(promoted) do
            local a, b = math.max(p[1], lo), math.min(p[2], hi)
            if b >= a then inside = inside + (b - a + 1) end
          end
          local open = hi - lo + 1 - inside
          if trusted(e[2]) and wins(e[2], open) then
            promoted[#promoted + 1] = {lo, hi}
            e[2], e[3], e[4], e[5] = 0, e[3] + open, NONE, 0
          end
        end
      end
      blocks = up
    end
  end
  table.sort(promoted, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end)
  local out = {}
  for _, p in ipairs(promoted) do
    local l = out[#out]
    if l and p[1] <= l[2] + 1 then l[2] = math.max(l[2], p[2]) else out[#out + 1] = {p[1], p[2]} end
  end
  return out
end
-- A spread post's data keys besides B:meta (like/commands.rs POST).
local LIKE_DATA = {'count', 'set', 'chunks'}
-- The shard a post key is (docs/spread.md; like/commands.rs spread_of):
-- {n =, i =, expires_at =} when the call declared SPREAD n or the key
-- looks like a shard key and records one; nil for a single-slot post; nil
-- and the error for a missing shard, a deleted record, other counts.
local function like_spread_of(B, declared)
  if declared == nil and not looks_like_shard(B) then return nil end
  local meta = B .. ':meta'
  local tm = type_of(meta)
  if tm ~= 'none' and tm ~= 'hash' then return nil, redis.error_reply(WRONGTYPE) end
  local rec, e = spread().read_record('like', B)
  if e then return nil, e end
  local sh, e2 = spread().resolve('like', B, declared, rec, function()
    return spread().holds_data(B, LIKE_DATA)
  end)
  if e2 then return nil, e2 end
  if not sh then return nil end
  local at = redis.call('PEXPIRETIME', meta)
  return {n = sh.n, i = sh.i, expires_at = at > 0 and at or nil}
end
-- A trailing `SPREAD n` of a variadic command's arguments (at least
-- `min` before it): how many arguments come before it, and the count;
-- or nil and the error of a bad count.
local function trailing_spread(args, min)
  local len = #args
  if len >= min + 2 and string.upper(args[len - 1]) == 'SPREAD' then
    local n, e = spread().spread_count('like', args[len])
    if e then return nil, nil, e end
    return len - 2, n
  end
  return len
end
-- The optional `SPREAD n` of a command that takes nothing else after its
-- key: the count, nil, or nil and the arity error.
local function only_spread(args, cmd)
  if #args == 0 then return nil end
  if #args == 2 and string.upper(args[1]) == 'SPREAD' then return spread().spread_count('like', args[2]) end
  return nil, arity(cmd)
end
-- A post as a read sees it: every key's type checked, then the count (a
-- missing one is SCARD in set form, corrupt with chunks). Returns the
-- post, or nil and the error.
--
-- A single-slot read (`single`) of a post with no keys at all checks that
-- base is not the base key of a spread post.
local function read_post(base, need_count, single)
  local set, index, count = base .. ':set', base .. ':chunks', base .. ':count'
  local ts, ti, tc = type_of(set), type_of(index), type_of(count)
  if (ts ~= 'none' and ts ~= 'set') or (ti ~= 'none' and ti ~= 'string') or (tc ~= 'none' and tc ~= 'string') then
    return nil, redis.error_reply(WRONGTYPE)
  end
  if single and ts == 'none' and ti == 'none' and tc == 'none' then
    local e = spread().refuse_spread_base('like', base, LIKE_DATA)
    if e then return nil, e end
  end
  local p = {base = base, count = 0, set_members = redis.call('SCARD', set), index = redis.call('GET', index) or ''}
  if not need_count then return p end
  local v = redis.call('GET', count)
  if v then
    p.count = parse_count(v)
    if p.count == nil then return nil, corrupt(count) end
  elseif ti == 'string' then
    return nil, corrupt(count)
  else
    p.count = p.set_members
  end
  return p
end
local function index_bit(index, r)
  local byte = string.byte(index, math.floor(r / 8) + 1)
  return byte ~= nil and bit.band(byte, bit.rshift(128, r % 8)) ~= 0
end
-- The chunk of range r when the index marks it and it exists: its name
-- and whether it is migrating; nil in set form; an error for a key that is
-- not a chunk.
local function chunk_of(p, r, cache)
  if not index_bit(p.index, r) then return nil end
  local name = p.base .. ':bits:' .. fmt(r)
  local c = cache[name]
  if c == nil then
    local t = type_of(name)
    if t ~= 'none' and t ~= 'string' then return nil, redis.error_reply(WRONGTYPE) end
    c = false
    if t == 'string' then
      local len = redis.call('STRLEN', name)
      if len ~= CHUNK_BYTES and len ~= MIGRATING_BYTES then return nil, corrupt(name) end
      c = {name = name, migrating = len == MIGRATING_BYTES}
    end
    cache[name] = c
  end
  if c == false then return nil end
  return c
end
-- For each id: does it like the post? Bits from the chunks, the rest with
-- SMISMEMBER of the Set (in batches of 1000), as the module asks.
local function likes_of(p, ids)
  local out, ask, cache = {}, {}, {}
  for i, id in ipairs(ids) do
    local r, off = math.floor(id / RANGE_IDS), id % RANGE_IDS
    local c, err = chunk_of(p, r, cache)
    if err then return nil, err end
    out[i] = false
    if c then
      out[i] = redis.call('GETBIT', c.name, off) == 1
      if not out[i] and c.migrating then ask[#ask + 1] = i end
    else
      ask[#ask + 1] = i
    end
  end
  if p.set_members > 0 and #ask > 0 then
    for s = 1, #ask, 1000 do
      local batch = {}
      for j = s, math.min(s + 999, #ask) do batch[#batch + 1] = fmt(ids[ask[j]]) end
      local r = redis.call('SMISMEMBER', p.base .. ':set', unpack(batch))
      for j, v in ipairs(r) do out[ask[s + j - 1]] = v == 1 end
    end
  end
  return out
end
-- The memory model (src/like/model.rs, docs/like.md).
local function set_memory(n, top)
  if n == 0 then return 0 end
  if n <= 512 then
    local w = 8
    if top <= 32767 then w = 2 elseif top <= 2147483647 then w = 4 end
    return 72 + n * w
  end
  return 64 + 48 * n
end
-- LIKE.ADD, LIKE.REM and LIKE.TOGGLE: one write, `op` 'add', 'rem' or
-- 'toggle' (`cmd` the command's name, for its arity error); `keys` and
-- `argv` are the twin's KEYS and ARGV (the configs first).
local function write(OP, CMD, keys, argv)
  local B = keys[1]
  local MAXID = tonumber(argv[1])
  local PROMOTE_AT = tonumber(argv[2])
  local RECENT_CAP = tonumber(argv[3])
  local args = {}
  for i = 4, #argv do args[#args + 1] = argv[i] end
  local function bad_user()
    return redis.error_reply('ERR like: user id must be an integer from 0 to ' .. string.format('%d', MAXID))
  end
  if #args < 1 then return arity(CMD) end
  -- REM takes no NOW: anything after its user but `SPREAD n` is an arity
  -- error, as the module's.
  if OP == 'rem' and #args ~= 1 and not (#args == 3 and string.upper(args[2]) == 'SPREAD') then
    return arity(CMD)
  end
  local u = args[1]
  if u == '' then return redis.error_reply('ERR like: user must not be empty') end
  local uid = parse_user(u, MAX_ID)
  if uid == nil or uid > MAXID then return bad_user() end
  local now, declared = nil, nil
  local i = 2
  while i <= #args do
    local kw = string.upper(args[i])
    if kw == 'NOW' then
      if i + 1 > #args then return syntax() end
      local v = parse_int(args[i + 1])
      if v == nil or v < 0 or v > 9007199254740991 then return not_integer() end
      now = args[i + 1]
      i = i + 2
    elseif kw == 'SPREAD' then
      if i + 1 > #args then return syntax() end
      local n, e = spread().spread_count('like', args[i + 1])
      if e then return e end
      declared = n
      i = i + 2
    else
      return syntax()
    end
  end
  -- A shard of a spread post: the user must belong to it, and it stores
  -- the user as id / n (docs/spread.md). Recent likers keep their own ids.
  local sh, se = like_spread_of(B, declared)
  if se then return se end
  local liker = u
  if sh then
    local s = uid % sh.n
    if s ~= sh.i then return spread().wrong_shard('like', 'user', B, sh, u, s) end
    uid = math.floor(uid / sh.n)
    u = fmt(uid)
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
    if not sh then
      local e = spread().refuse_spread_base('like', B, LIKE_DATA)
      if e then return e end
    end
    local ts, ti = type_of(SET), type_of(INDEX)
    if ts ~= 'none' and ts ~= 'set' then return redis.error_reply(WRONGTYPE) end
    if ti ~= 'none' and ti ~= 'string' then return redis.error_reply(WRONGTYPE) end
    if has_chunk or ti == 'string' then return corrupt(COUNT) end
    old = redis.call('SCARD', SET)
    local t = redis.call('PEXPIRETIME', SET)
    if t > 0 then set_expiry = t end
    -- A shard's count takes the expiry of its record.
    if not set_expiry and sh then set_expiry = sh.expires_at end
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
        -- A Set created again takes the post's expiry (below).
        set_added = want
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
      -- The last unlike of a post in set form: the post leaves no keys
      -- (a shard keeps its record: only the promotion's check goes).
      if sh then
        redis.call('DEL', COUNT, RECENT)
        redis.call('HDEL', META, 'check')
      else
        redis.call('DEL', COUNT, META, RECENT)
      end
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
      redis.call('ZREM', RECENT, liker)
      return
    end
    local existed = redis.call('EXISTS', RECENT) == 1
    if now == nil then
      local t = redis.call('TIME')
      now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
    end
    redis.call('ZADD', RECENT, now, liker)
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
end
