--[[ hotpath Lua twin of POLL.INFO

Usage:  EVALSHA <sha> 1 B
KEYS[1] = B, the poll's base key.
ARGV    = none (POLL.INFO takes nothing after B).
Returns the map [mode, <m>, maxvotes, <n>, start, <ms>, end, <ms>,
        ballots, <fields of B:voted>, votes, <the same: one vote per ballot>].
        Read-only.
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

-- ERR poll: corrupt data in '<key>' field '<field>': a value the module
-- never writes (control characters shown as '?', as the module does).
local function corrupt(key, field)
  local function text(s) return (string.gsub(s, '[%z\1-\31\127]', '?')) end
  fail("ERR poll: corrupt data in '" .. text(key) .. "' field '" .. text(field) .. "'")
end

-- The poll's rules from a type-checked B:meta: the defaults for a poll
-- never created (no B:meta, or one holding only the write-back state), an
-- error naming the field when `rules` holds something CREATE never writes.
local function read_rules(meta)
  local r = { mode = 'ONCE', maxvotes = 1, start = 0, stop = 0, tz = 0, closed = false, expires = 0 }
  -- One packed field, as the module keeps it:
  -- "<MODE> <maxvotes> <start> <end> <tz> <closed> <expires>".
  local packed = redis.call('HGET', meta, 'rules')
  if not packed then return r end
  local p, i = {}, 1
  while true do
    local j = string.find(packed, ' ', i, true)
    if not j then
      p[#p + 1] = string.sub(packed, i)
      break
    end
    p[#p + 1] = string.sub(packed, i, j - 1)
    i = j + 1
  end
  local m = p[1]
  if #p ~= 7 or (m ~= 'ONCE' and m ~= 'DAILY' and m ~= 'MULTI') then corrupt(meta, 'rules') end
  local n = {}
  for k = 2, 7 do
    n[k] = parse_int(p[k])
    if n[k] == nil then corrupt(meta, 'rules') end
  end
  local maxv = (m == 'MULTI') and 1000 or 1
  local function within(x, lo, hi) return x >= lo and x <= hi end
  if not (within(n[2], 1, maxv) and within(n[3], 0, 253402300799999) and within(n[4], 0, 253402300799999)
      and within(n[5], -1440, 1440) and within(n[6], 0, 1)
      and within(n[7], 0, 253402300799999 + 3153600000000)) then
    corrupt(meta, 'rules')
  end
  return { mode = m, maxvotes = n[2], start = n[3], stop = n[4], tz = n[5], closed = n[6] == 1, expires = n[7] }
end

local function main()
  if #KEYS ~= 1 or #ARGV ~= 0 then arity() end
  local meta, voted, board = B .. ':meta', B .. ':voted', B .. ':board'
  check(meta, 'hash')
  check(voted, 'hash')
  check(board, 'zset')
  local r = read_rules(meta)
  -- Every counted vote is one ballot and one point on the board: the
  -- board's total is the number of ballots (O(1), like the module).
  local ballots = redis.call('HLEN', voted)
  return { 'mode', r.mode, 'maxvotes', r.maxvotes, 'start', r.start, 'end', r.stop,
    'ballots', ballots, 'votes', ballots }
end

local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' and res.hp then return redis.error_reply(res.hp) end
error(res, 0)
