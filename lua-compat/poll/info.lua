--[[ hotpath Lua twin of POLL.INFO

Usage:  EVALSHA <sha> 1 B
KEYS[1] = B, the poll's base key.
ARGV    = none (POLL.INFO takes nothing after B).
Returns the map [mode, <m>, maxvotes, <n>, start, <ms>, end, <ms>,
        ballots, <fields of B:voted>, votes, <sum of B:board>]. Read-only.
]]

local B = KEYS[1]

local function fail(msg) error({ hp = msg }, 0) end
local function arity() fail("ERR wrong number of arguments for 'poll.info' command") end

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

local function check(k, want)
  local t = redis.call('TYPE', k).ok
  if t == 'none' then return false end
  if t ~= want then fail('WRONGTYPE Operation against a key holding the wrong kind of value') end
  return true
end

-- The poll's rules from B:meta (defaults for a poll never created).
local function read_rules(meta)
  local r = { mode = 'ONCE', maxvotes = 1, start = 0, stop = 0, tz = 0, closed = false, expires = 0 }
  if not check(meta, 'hash') then return r end
  local v = redis.call('HMGET', meta, 'mode', 'maxvotes', 'start', 'end', 'tz', 'closed', 'expires')
  local m = v[1] and string.upper(v[1])
  if m == 'ONCE' or m == 'DAILY' or m == 'MULTI' then r.mode = m end
  r.maxvotes = parse_int(v[2]) or 1
  r.start = parse_int(v[3]) or 0
  r.stop = parse_int(v[4]) or 0
  r.tz = parse_int(v[5]) or 0
  r.closed = (parse_int(v[6]) or 0) == 1
  r.expires = parse_int(v[7]) or 0
  return r
end

local function main()
  if #KEYS ~= 1 or #ARGV ~= 0 then arity() end
  local meta, voted, board = B .. ':meta', B .. ':voted', B .. ':board'
  local r = read_rules(meta)
  check(voted, 'hash')
  check(board, 'zset')
  local votes = 0
  local z = redis.call('ZREVRANGE', board, '0', '-1', 'WITHSCORES')
  for i = 2, #z, 2 do votes = votes + tonumber(z[i]) end
  return { 'mode', r.mode, 'maxvotes', r.maxvotes, 'start', r.start, 'end', r.stop,
    'ballots', redis.call('HLEN', voted), 'votes', votes }
end

local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' and res.hp then return redis.error_reply(res.hp) end
error(res, 0)
