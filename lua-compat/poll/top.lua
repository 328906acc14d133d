--[[ hotpath Lua twin of POLL.TOP

Usage:  EVALSHA <sha> 1 B [count] [OFFSET o]
KEYS[1] = B, the poll's base key.
ARGV    = the arguments of POLL.TOP after B, verbatim.
Returns [candidate, votes, ...], most votes first (ZREVRANGE order);
        count defaults to 10. Read-only.
]]

local MAX_TIME = 253402300799999
local B = KEYS[1]

local function fail(msg) error({ hp = msg }, 0) end
local function arity() fail("ERR wrong number of arguments for 'poll.top' command") end
local function syntax() fail('ERR syntax error') end
local function fmt(n) return string.format('%d', n) end

-- Redis string2ll: optional '-', digits, no '+', no leading zeros, no
-- "-0", at most 20 chars, within the i64 range. Returns a number or nil.
local function parse_int(s)
  if type(s) ~= 'string' or #s == 0 or #s > 20 then return nil end
  if s ~= '0' and not string.find(s, '^%-?[1-9]%d*$') then return nil end
  local digits = string.gsub(s, '^%-', '')
  if #digits > 19 then return nil end
  if #digits == 19 then
    local lim = (digits == s) and '9223372036854775807' or '9223372036854775808'
    if digits > lim then return nil end
  end
  return tonumber(s)
end

local function int_in(s, lo, hi)
  local n = parse_int(s)
  if n == nil or n < lo or n > hi then fail('ERR value is not an integer or out of range') end
  return n
end

local pos = 1
local function done() return pos > #ARGV end
local function nxt()
  local a = ARGV[pos]
  if a == nil then arity() end
  pos = pos + 1
  return a
end

local function check(k, want)
  local t = redis.call('TYPE', k).ok
  if t == 'none' then return false end
  if t ~= want then fail('WRONGTYPE Operation against a key holding the wrong kind of value') end
  return true
end

-- ERR poll: corrupt data in '<key>' field '<field>': a value the module
-- never writes (control characters shown as '?', as the module does).
local function corrupt(key, field)
  local function text(s) return (string.gsub(s, '[%z\1-\31\127]', '?')) end
  fail("ERR poll: corrupt data in '" .. text(key) .. "' field '" .. text(field) .. "'")
end

local RANGE_MAX = 1000 -- the module's poll-range-max default

local function main()
  if #KEYS ~= 1 then arity() end
  local count, offset, first = 10, 0, true
  while not done() do
    local a = nxt()
    if string.upper(a) == 'OFFSET' then
      if done() then syntax() end
      offset = int_in(nxt(), 0, math.huge)
    elseif first then
      count = int_in(a, 0, math.huge)
    else
      syntax()
    end
    first = false
  end
  -- count is bounded so that no call sends a whole board (poll-range-max).
  if count > RANGE_MAX then fail('ERR poll: count must be at most ' .. RANGE_MAX .. ' (poll-range-max)') end
  local board = B .. ':board'
  check(board, 'zset')
  local out = {}
  if count == 0 or offset >= redis.call('ZCARD', board) then return out end
  local z = redis.call('ZREVRANGE', board, fmt(offset), fmt(offset + count - 1), 'WITHSCORES')
  for i = 1, #z, 2 do
    local n = tonumber(z[i + 1])
    if n == nil or n ~= math.floor(n) or math.abs(n) > 9007199254740991 then corrupt(board, z[i]) end
    out[#out + 1] = z[i]
    out[#out + 1] = n
  end
  return out
end

local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' and res.hp then return redis.error_reply(res.hp) end
error(res, 0)
