-- Lua twin of LIKE.TOGGLE: LIKE.TOGGLE B user [NOW unix-ms] -> [liked, count]
-- KEYS: B
-- ARGV: like-max-id, like-promote-at, like-recent (the module's configs),
--       then the command's arguments after the key(s), verbatim.
-- Same replies, errors and derived keys as the module (see README.md).
local OP, CMD = 'toggle', 'like.toggle'
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
local function syntax() return redis.error_reply('ERR syntax error') end
local function not_integer() return redis.error_reply('ERR value is not an integer or out of range') end
local function bad_user()
  return redis.error_reply('ERR like: user id must be an integer from 0 to ' .. string.format('%d', MAXID))
end

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

-- A user id: a canonical non-negative integer up to max.
local function parse_user(s, max)
  if type(s) ~= 'string' or #s == 0 or #s > 20 or not string.match(s, '^%d+$') then return nil end
  if #s > 1 and string.sub(s, 1, 1) == '0' then return nil end
  local v = tonumber(s)
  if max ~= nil and v > max then return nil end
  return v
end

local function type_of(k) return redis.call('TYPE', k)['ok'] end

-- The form of a post's likes: 'bitmap', 'set' or 'none'; nil on WRONGTYPE.
local function form_of(base)
  local ts, tb = type_of(base .. ':set'), type_of(base .. ':bits')
  if (ts ~= 'none' and ts ~= 'set') or (tb ~= 'none' and tb ~= 'string') then return nil end
  if tb == 'string' then return 'bitmap' elseif ts == 'set' then return 'set' end
  return 'none'
end

-- B:count when it holds a non-negative integer, else counted (no write).
local function read_count(base, form)
  if form == 'none' then return 0 end
  local v = redis.call('GET', base .. ':count')
  if v then
    local n = parse_int(v)
    if n ~= nil and n >= 0 then return n end
  end
  if form == 'set' then return redis.call('SCARD', base .. ':set') end
  return redis.call('BITCOUNT', base .. ':bits')
end

local MAX_BITMAP_BYTES = 536870912
-- Bytes up to bit top, plus 1/64 of slack (capped at 512 MB).
local function bitmap_len(top)
  local need = math.floor(top / 8) + 1
  return math.min(need + math.floor(need / 64), MAX_BITMAP_BYTES)
end
-- The memory model of promotion (docs/like.md): a key costs 64 bytes; a
-- bitmap adds its length; a set of at most 512 ids (an intset) adds 8 plus
-- 2, 4 or 8 bytes per id by the largest id; a larger set 48 bytes per id.
local function bitmap_memory(len) return 64 + len end
local function set_memory(n, top)
  if n <= 512 then
    local w = 8
    if top <= 32767 then w = 2 elseif top <= 2147483647 then w = 4 end
    return 72 + n * w
  end
  return 64 + 48 * n
end

if (OP == 'rem' and #args ~= 1) or #args < 1 then return arity(CMD) end
local u = args[1]
local uid = parse_user(u, MAXID)
if uid == nil then return bad_user() end
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

local SET, BITS, COUNT, RECENT = B .. ':set', B .. ':bits', B .. ':count', B .. ':recent'
local form = form_of(B)
if form == nil then return redis.error_reply(WRONGTYPE) end
local tc, tr = type_of(COUNT), type_of(RECENT)
if (tc ~= 'none' and tc ~= 'string') or (tr ~= 'none' and tr ~= 'zset') then
  return redis.error_reply(WRONGTYPE)
end

local old = read_count(B, form)
local changed, liked = false, false
if form ~= 'bitmap' then
  if OP == 'add' then
    changed, liked = redis.call('SADD', SET, u) == 1, true
  elseif OP == 'rem' then
    if form == 'set' then changed = redis.call('SREM', SET, u) == 1 end
  elseif redis.call('SADD', SET, u) == 1 then
    changed, liked = true, true
  else
    redis.call('SREM', SET, u)
    changed, liked = true, false
  end
else
  local was = redis.call('GETBIT', BITS, u) == 1
  local want = (OP == 'add') or (OP == 'toggle' and not was)
  if was ~= want then
    if want and math.floor(uid / 8) >= redis.call('STRLEN', BITS) then
      redis.call('SETRANGE', BITS, bitmap_len(uid) - 1, '\0')
    end
    redis.call('SETBIT', BITS, u, want and 1 or 0)
  end
  changed, liked = was ~= want, want
end

local count = old
if changed then
  if liked then count = old + 1 else count = math.max(old - 1, 0) end
  if form ~= 'bitmap' and count == 0 then
    redis.call('DEL', COUNT)
  else
    redis.call('SET', COUNT, string.format('%d', count), 'KEEPTTL')
  end
  if not liked then
    redis.call('ZREM', RECENT, u)
  elseif RECENT_CAP > 0 then
    if now == nil then
      local t = redis.call('TIME')
      now = string.format('%d', tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000))
    end
    redis.call('ZADD', RECENT, now, u)
    local over = redis.call('ZCARD', RECENT) - RECENT_CAP
    if over > 0 then
      for _, m in ipairs(redis.call('ZRANGE', RECENT, 0, over - 1)) do
        redis.call('ZREM', RECENT, m)
      end
    end
  end
end

-- Promotion: past the threshold and at each power-of-two size beyond it,
-- when the bitmap reaching the largest id is smaller than the set.
local function is_pow2(c)
  while c > 1 and c % 2 == 0 do c = c / 2 end
  return c == 1
end
-- The bitmap could be smaller than some set of n ids holding id.
local function possible(n, id)
  return math.floor(id / 8) < MAX_BITMAP_BYTES and bitmap_memory(bitmap_len(id)) < set_memory(n, 2 ^ 63)
end
-- The bitmap reaching top is smaller than the set of n ids up to top.
local function wins(n, top)
  return math.floor(top / 8) < MAX_BITMAP_BYTES and bitmap_memory(bitmap_len(top)) < set_memory(n, top)
end
if changed and liked and form ~= 'bitmap' and count > PROMOTE_AT
    and (count == PROMOTE_AT + 1 or is_pow2(count)) and possible(count, uid) then
  local n = redis.call('SCARD', SET)
  local members = redis.call('SMEMBERS', SET)
  local top, ok = 0, true
  for _, m in ipairs(members) do
    local v = parse_user(m, nil)
    if v == nil or not possible(n, v) then ok = false break end
    if v > top then top = v end
  end
  if ok and wins(n, top) then
    local ttl = redis.call('PTTL', SET)
    redis.call('UNLINK', SET)
    redis.call('SETRANGE', BITS, bitmap_len(top) - 1, '\0')
    for _, m in ipairs(members) do redis.call('SETBIT', BITS, m, 1) end
    if ttl > 0 then redis.call('PEXPIRE', BITS, ttl) end
  end
end

local first = changed
if OP == 'toggle' then first = liked end
return {first and 1 or 0, count}
