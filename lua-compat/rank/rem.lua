-- Lua twin of RANK.REM B member [member ...] -> number removed
-- KEYS[1] = B; ARGV = the members.
-- Shared helpers (the same block opens every RANK script, so that each
-- script stands alone). Numbers are doubles: every value the board holds
-- stays below 2^53 and all arithmetic here is kept exact.
local EXACT_MAX = 9007199254740991
local NOT_INT = 'ERR value is not an integer or out of range'
local SYNTAX = 'ERR syntax error'
local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'

local function arity(cmd)
  return redis.error_reply("ERR wrong number of arguments for '" .. cmd .. "' command")
end

-- An integer the way Redis reads one (no '+', spaces or leading zeros,
-- within 64 bits); nil otherwise.
local function int(s)
  if type(s) ~= 'string' or #s == 0 or #s > 20 then return nil end
  local neg = string.sub(s, 1, 1) == '-'
  local d = neg and string.sub(s, 2) or s
  if #d == 0 or not string.match(d, '^%d+$') then return nil end
  if (#d > 1 and string.sub(d, 1, 1) == '0') or s == '-0' then return nil end
  if #d > 19 then return nil end
  if #d == 19 and d > (neg and '9223372036854775808' or '9223372036854775807') then return nil end
  return tonumber(s)
end

local function int_in(s, min, max)
  local v = int(s)
  if v == nil or v < min or v > max then return nil end
  return v
end

-- True when key is missing or holds `want`.
local function typed(key, want)
  local t = redis.call('TYPE', key)['ok']
  return t == 'none' or t == want
end

local function rank_err(msg)
  return redis.error_reply('ERR rank: ' .. msg)
end

local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The board's layout from the `layout` field of B:meta,
-- "<TIEBREAK> <UNIT> <DIGITS> <EPOCH>" (defaults for a board never
-- created); nil when the value is not a layout.
local function layout(meta)
  local v = redis.call('HGET', meta, 'layout')
  local l = { tiebreak = 'EARLIER', unit = 'S', digits = 10, epoch = 0 }
  if v then
    local tb, unit, digits, epoch = string.match(v, '^([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*)$')
    if not tb then return nil end
    if tb ~= 'EARLIER' and tb ~= 'LATER' and tb ~= 'NONE' then return nil end
    if unit ~= 'MS' and unit ~= 'S' then return nil end
    l.tiebreak, l.unit = tb, unit
    l.digits = int_in(digits, 0, 15)
    l.epoch = int_in(epoch, 0, EXACT_MAX)
    if l.digits == nil or l.epoch == nil then return nil end
  end
  l.unitms = (l.unit == 'S') and 1000 or 1
  l.scale = 1
  for _ = 1, l.digits do l.scale = l.scale * 10 end
  local x = EXACT_MAX - ((l.tiebreak == 'NONE') and 0 or (l.scale - 1))
  l.limit = (x - math.fmod(x, l.scale)) / l.scale
  return l
end

local function range_err(l)
  return rank_err('points out of exact range (max \194\177' .. string.format('%d', l.limit) .. ')')
end

-- t for a time in unix ms, or nil when it does not fit the layout.
local function tick(l, ms)
  if l.tiebreak == 'NONE' then return 0 end
  local d = ms - l.epoch
  if d < 0 then return nil end
  local t = (d - math.fmod(d, l.unitms)) / l.unitms
  if t >= l.scale then return nil end
  return t
end

local function pack(l, points, t)
  local tb = 0
  if l.tiebreak == 'EARLIER' then tb = l.scale - 1 - t elseif l.tiebreak == 'LATER' then tb = t end
  return points * l.scale + tb
end

-- points and achievement time (false for NONE) of a stored score.
local function decode(l, score)
  local p = math.floor(tonumber(score))
  local r = math.fmod(p, l.scale)
  if r < 0 then r = r + l.scale end
  local points = (p - r) / l.scale
  if l.tiebreak == 'EARLIER' then return points, l.epoch + (l.scale - 1 - r) * l.unitms end
  if l.tiebreak == 'LATER' then return points, l.epoch + r * l.unitms end
  return points, false
end

-- A board opened for a command: checks B and B:meta, reads the layout.
-- Returns the layout, or nil and the error reply.
local function open_board(B)
  if not typed(B, 'zset') then return nil, redis.error_reply(WRONGTYPE) end
  if not typed(B .. ':meta', 'hash') then return nil, redis.error_reply(WRONGTYPE) end
  local l = layout(B .. ':meta')
  if not l then return nil, rank_err('invalid board layout') end
  return l
end

-- Writes member's packed score; a board just created takes the expiry of
-- its B:meta.
local function write_score(B, member, packed)
  local created = redis.call('EXISTS', B) == 0
  redis.call('ZADD', B, packed, member)
  if created then
    local at = redis.call('PEXPIRETIME', B .. ':meta')
    if at > 0 then redis.call('PEXPIREAT', B, at) end
  end
end
-- End of the shared helpers.

local B = KEYS[1]
if #ARGV < 1 then return arity('rank.rem') end
if not typed(B, 'zset') then return redis.error_reply(WRONGTYPE) end
local removed = 0
for j = 1, #ARGV do removed = removed + redis.call('ZREM', B, ARGV[j]) end
return removed
