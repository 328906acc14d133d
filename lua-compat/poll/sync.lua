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

-- The poll's rules from B:meta (defaults for a poll never created).
local function read_rules(meta)
  local r = { mode = 'ONCE', maxvotes = 1, start = 0, stop = 0, tz = 0, closed = false, expires = 0 }
  if not check(meta, 'hash') then return r end
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
  if #p ~= 7 then return r end
  local m = string.upper(p[1])
  if m ~= 'ONCE' and m ~= 'DAILY' and m ~= 'MULTI' then return r end
  local n = {}
  for k = 2, 7 do
    n[k] = parse_int(p[k])
    if n[k] == nil then return r end
  end
  return { mode = m, maxvotes = n[2], start = n[3], stop = n[4], tz = n[5], closed = n[6] == 1, expires = n[7] }
end

local function expire_at_if_unset(k, at)
  if at > 0 and redis.call('EXISTS', k) == 1 and redis.call('PTTL', k) < 0 then
    redis.call('PEXPIREAT', k, fmt(at))
  end
end

local function zrange_all(k)
  local z = redis.call('ZREVRANGE', k, '0', '-1', 'WITHSCORES')
  local out = {}
  for i = 1, #z, 2 do
    local n = tonumber(z[i + 1])
    if n >= 0 then n = math.floor(n) else n = math.ceil(n) end
    out[#out + 1] = { z[i], n }
  end
  return out
end

local function main()
  if #KEYS ~= 1 or #ARGV ~= 0 then arity() end
  local meta, board = B .. ':meta', B .. ':board'
  local synced, syncing = B .. ':synced', B .. ':syncing'
  local r = read_rules(meta)
  check(board, 'zset')
  check(synced, 'zset')
  check(syncing, 'zset')
  local epoch = parse_int(redis.call('HGET', meta, 'pending')) or 0
  if epoch == 0 then
    -- Freeze the board as the new snapshot.
    epoch = (parse_int(redis.call('HGET', meta, 'epoch')) or 0) + 1
    redis.call('DEL', syncing)
    local z = redis.call('ZREVRANGE', board, '0', '-1', 'WITHSCORES')
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
    redis.call('HSET', meta, 'epoch', fmt(epoch), 'pending', fmt(epoch))
    if not had_meta then expire_at_if_unset(meta, r.expires) end
    expire_at_if_unset(syncing, r.expires)
  end
  local frozen = zrange_all(syncing)
  local acked = zrange_all(synced)
  local base, in_frozen = {}, {}
  for _, e in ipairs(acked) do base[e[1]] = e[2] end
  local out = { epoch }
  for _, e in ipairs(frozen) do
    in_frozen[e[1]] = true
    local d = e[2] - (base[e[1]] or 0)
    if d ~= 0 then
      out[#out + 1] = e[1]
      out[#out + 1] = d
    end
  end
  for _, e in ipairs(acked) do
    if not in_frozen[e[1]] and e[2] ~= 0 then
      out[#out + 1] = e[1]
      out[#out + 1] = -e[2]
    end
  end
  return out
end

local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' and res.hp then return redis.error_reply(res.hp) end
error(res, 0)
