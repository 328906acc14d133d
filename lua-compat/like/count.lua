-- Lua twin of LIKE.COUNT: LIKE.COUNT B -> count
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

if #args ~= 0 then return arity('like.count') end
local p, err = read_post(B, true)
if not p then return err end
return p.count
