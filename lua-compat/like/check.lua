-- Lua twin of LIKE.CHECK: LIKE.CHECK B user [user ...] -> [0|1, ...]
-- KEYS: B
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

if #args < 1 then return arity('like.check') end
local list = {}
for i, a in ipairs(args) do
  if a == '' then return redis.error_reply('ERR like: user must not be empty') end
  list[i] = parse_user(a, MAXID)
  if list[i] == nil then
    return redis.error_reply('ERR like: user id must be an integer from 0 to ' .. fmt(MAXID))
  end
end
local p, err = read_post(B, false)
if not p then return err end
local flags, err2 = likes_of(p, list)
if not flags then return err2 end
local out = {}
for i, f in ipairs(flags) do out[i] = f and 1 or 0 end
return out
