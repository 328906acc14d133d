-- Lua twin of LIKE.COMMON: LIKE.COMMON B1 B2 -> users who like both, ascending
-- KEYS: B1, B2
-- ARGV: like-max-id, like-promote-at, like-recent (the module's configs),
--       then the command's arguments after the key(s), verbatim.
-- Same replies, errors and derived keys as the module (see README.md).
local B = KEYS[1]
local MAXID = tonumber(ARGV[1])
local PROMOTE_AT = tonumber(ARGV[2])
local RECENT_CAP = tonumber(ARGV[3])
local args = {}
for i = 4, #ARGV do args[#args + 1] = ARGV[i] end

local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
local function arity(cmd)
  return redis.error_reply("ERR wrong number of arguments for '" .. cmd .. "' command")
end
local function corrupt(key) return redis.error_reply("ERR like: corrupt data in '" .. key .. "'") end
local function fmt(n) return string.format('%d', n) end
local function type_of(k) return redis.call('TYPE', k)['ok'] end

-- Canonical digits (no sign, no leading zero).
local function digits(s)
  return type(s) == 'string' and #s > 0 and #s <= 20 and string.match(s, '^%d+$') ~= nil
    and (#s == 1 or string.sub(s, 1, 1) ~= '0')
end
local function parse_user(s, max)
  if not digits(s) then return nil end
  local v = tonumber(s)
  if v > max then return nil end
  return v
end

local MAX_ID = 4294967295
local RANGE_IDS, CHUNK_BYTES, MIGRATING_BYTES = 64000, 8000, 8001

-- A stored count: canonical digits within int64 (exact up to 2^53 here).
local function parse_count(s)
  if not digits(s) or #s > 19 or (#s == 19 and s > '9223372036854775807') then return nil end
  return tonumber(s)
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

if #args ~= 0 then return arity('like.common') end
local p1, e1 = read_post(B, true)
if not p1 then return e1 end
local p2, e2 = read_post(KEYS[2], true)
if not p2 then return e2 end
-- Read the likers of the post with fewer, look each up in the other.
local p, q = p1, p2
if p2.count < p1.count then p, q = p2, p1 end
local mine, cache = {}, {}
for r = 0, #p.index * 8 - 1 do
  local c, err = chunk_of(p, r, cache)
  if err then return err end
  if c then
    local bytes = redis.call('GET', c.name)
    for i = 1, CHUNK_BYTES do
      local byte = string.byte(bytes, i)
      if byte ~= 0 then
        for j = 0, 7 do
          if bit.band(byte, bit.rshift(128, j)) ~= 0 then mine[#mine + 1] = r * RANGE_IDS + (i - 1) * 8 + j end
        end
      end
    end
  end
end
if p.set_members > 0 then
  for _, m in ipairs(redis.call('SMEMBERS', p.base .. ':set')) do
    local v = parse_user(m, MAX_ID)
    if v then mine[#mine + 1] = v end
  end
end
local flags, err = likes_of(q, mine)
if not flags then return err end
local out = {}
for i, v in ipairs(mine) do
  if flags[i] then out[#out + 1] = v end
end
table.sort(out)
local uniq = {}
for _, v in ipairs(out) do
  if uniq[#uniq] ~= v then uniq[#uniq + 1] = v end
end
return uniq
