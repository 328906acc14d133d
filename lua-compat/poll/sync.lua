--[[ hotpath Lua twin of POLL.SYNC

Usage:  EVALSHA <sha> 1 B
KEYS[1] = B, the poll's base key.
ARGV    = none (POLL.SYNC takes nothing after B).
Returns [epoch, candidate, delta, ...]: the change of every candidate's
        count since the last acknowledged snapshot (B:synced), frozen in
        B:syncing. Until POLL.SYNCACK, a retry returns the same epoch and
        deltas.
Writes  on a new freeze: B:syncing (copy of B:board), B:meta `epoch` and
        `pending`; PEXPIREAT at `expires` as the module does.
]]

local B = KEYS[1]

local function fail(msg) error({ hp = msg }, 0) end
local function arity() fail("ERR wrong number of arguments for 'poll.sync' command") end
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

local function expire_at_if_unset(k, at)
  if at > 0 and redis.call('EXISTS', k) == 1 and redis.call('PTTL', k) < 0 then
    redis.call('PEXPIREAT', k, fmt(at))
  end
end

-- A board count, or an error naming the member when the score is not a
-- whole number of votes (edited by hand).
local function votes(key, member, score)
  local n = tonumber(score)
  if n == nil or n ~= math.floor(n) or math.abs(n) > 9007199254740991 then corrupt(key, member) end
  return n
end

-- An integer field of B:meta (`epoch`, `pending`) as its decimal string:
-- '0' when absent, an error naming the field when it is not a
-- non-negative integer.
local function meta_int(meta, field)
  local v = redis.call('HGET', meta, field)
  if not v then return '0' end
  local n = parse_int(v)
  if n == nil or n < 0 then corrupt(meta, field) end
  return v
end

-- s + 1 for a non-negative decimal string, exactly (an epoch may be
-- beyond 2^53, where doubles round); nil past the i64 range.
local function succ(s)
  if s == '9223372036854775807' then return nil end
  local digits, i = {}, #s
  for k = 1, #s do digits[k] = string.byte(s, k) - 48 end
  while i >= 1 do
    if digits[i] < 9 then
      digits[i] = digits[i] + 1
      break
    end
    digits[i] = 0
    i = i - 1
  end
  local out = (i == 0) and '1' or ''
  for k = 1, #digits do out = out .. string.char(digits[k] + 48) end
  return out
end

local function main()
  if #KEYS ~= 1 or #ARGV ~= 0 then arity() end
  local meta, board = B .. ':meta', B .. ':board'
  local synced, syncing = B .. ':synced', B .. ':syncing'
  check(meta, 'hash')
  check(board, 'zset')
  check(synced, 'zset')
  check(syncing, 'zset')
  local r = read_rules(meta)
  local epoch = meta_int(meta, 'pending')
  local last = meta_int(meta, 'epoch')
  if epoch == '0' then
    -- Freeze the board as the new snapshot.
    epoch = succ(last)
    if epoch == nil then fail("ERR poll: integer overflow in '" .. meta .. "' field 'epoch'") end
    redis.call('UNLINK', syncing)
    local z = redis.call('ZRANGE', board, '0', '-1', 'WITHSCORES')
    for i = 1, #z, 2 do votes(board, z[i], z[i + 1]) end
    local args = {}
    for i = 1, #z, 2 do
      args[#args + 1] = z[i + 1]
      args[#args + 1] = z[i]
      if #args >= 400 or i + 2 > #z then
        redis.call('ZADD', syncing, unpack(args))
        args = {}
      end
    end
    local had_meta = redis.call('EXISTS', meta) == 1
    redis.call('HSET', meta, 'epoch', epoch, 'pending', epoch)
    if not had_meta then expire_at_if_unset(meta, r.expires) end
    expire_at_if_unset(syncing, r.expires)
  end
  -- The deltas in the frozen snapshot's order, then the candidates that
  -- left it (in the acknowledged one's order), checked as the module
  -- checks them.
  local out = { parse_int(epoch) }
  local frozen = redis.call('ZREVRANGE', syncing, '0', '-1', 'WITHSCORES')
  for i = 1, #frozen, 2 do
    local c = frozen[i]
    local d = votes(syncing, c, frozen[i + 1])
    local acked = redis.call('ZSCORE', synced, c)
    if acked then d = d - votes(synced, c, acked) end
    if d ~= 0 then
      out[#out + 1] = c
      out[#out + 1] = d
    end
  end
  local acked = redis.call('ZREVRANGE', synced, '0', '-1', 'WITHSCORES')
  for i = 1, #acked, 2 do
    local c = acked[i]
    local v = votes(synced, c, acked[i + 1])
    if not redis.call('ZSCORE', syncing, c) and v ~= 0 then
      out[#out + 1] = c
      out[#out + 1] = -v
    end
  end
  return out
end

local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' and res.hp then return redis.error_reply(res.hp) end
error(res, 0)
