-- Lua twin of LIKE.INFO: LIKE.INFO B -> [encoding, none|set|bitmap|mixed, count, n, bytes, n,
--   set, n, chunks, n, promotion, none|create|move|settle]
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

local CHUNK_BYTES = 8000

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

if #args ~= 0 then return arity('like.info') end
local META = B .. ':meta'
local tm = type_of(META)
if tm ~= 'none' and tm ~= 'hash' then return redis.error_reply(WRONGTYPE) end
local p, err = read_post(B, true)
if not p then return err end
local promotion = redis.call('HGET', META, 'state') or 'none'
if promotion ~= 'none' and promotion ~= 'create' and promotion ~= 'move' and promotion ~= 'settle' then
  return redis.error_reply("ERR like: corrupt data in '" .. META .. "' field 'state'")
end
local chunks = redis.call('BITCOUNT', B .. ':chunks')
local top = 0
if p.set_members > 0 and p.set_members <= 512 then
  for _, m in ipairs(redis.call('SMEMBERS', B .. ':set')) do
    local v = parse_user(m, 1e300)
    if v == nil then v = 2 ^ 64 end
    if v > top then top = v end
  end
end
local bytes = set_memory(p.set_members, top)
if chunks > 0 then bytes = bytes + chunks * (64 + CHUNK_BYTES) + 64 + #p.index end
local encoding = 'set'
if p.set_members == 0 and chunks == 0 and p.count == 0 then encoding = 'none'
elseif chunks > 0 and p.set_members == 0 then encoding = 'bitmap'
elseif chunks > 0 then encoding = 'mixed' end
return {'encoding', encoding, 'count', p.count, 'bytes', bytes, 'set', p.set_members,
  'chunks', chunks, 'promotion', promotion}
