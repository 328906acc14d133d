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
-- A post as a read sees it: every key's type checked, then the count (a
-- missing one is SCARD in set form, corrupt with chunks). Returns the
-- post, or nil and the error.
local function read_post(base, need_count)
  local set, index, count = base .. ':set', base .. ':chunks', base .. ':count'
  local ts, ti, tc = type_of(set), type_of(index), type_of(count)
  if (ts ~= 'none' and ts ~= 'set') or (ti ~= 'none' and ti ~= 'string') or (tc ~= 'none' and tc ~= 'string') then
    return nil, redis.error_reply(WRONGTYPE)
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
