--[[ hotpath Lua twin of POLL.SYNCACK

Usage:  EVALSHA <sha> 1 B epoch
KEYS[1] = B, the poll's base key.
ARGV    = the arguments of POLL.SYNCACK after B, verbatim (the epoch).
Returns 1 when epoch is the pending one (that frozen snapshot becomes the
        new base: RENAME B:syncing B:synced), 0 for a stale or unknown
        epoch.
]]

local B = KEYS[1]

local function fail(msg) error({ hp = msg }, 0) end
local function arity() fail("ERR wrong number of arguments for 'poll.syncack' command") end

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

local function main()
  if #KEYS ~= 1 or #ARGV ~= 1 then arity() end
  local epoch = ARGV[1]
  if parse_int(epoch) == nil then fail('ERR value is not an integer or out of range') end
  local meta, synced, syncing = B .. ':meta', B .. ':synced', B .. ':syncing'
  check(meta, 'hash')
  check(synced, 'zset')
  check(syncing, 'zset')
  -- Valid integers have one spelling, so comparing the strings compares
  -- them as 64-bit integers exactly.
  local pending = redis.call('HGET', meta, 'pending')
  if pending and ((parse_int(pending) or -1) < 0) then corrupt(meta, 'pending') end
  if (parse_int(pending) or 0) == 0 or pending ~= epoch then return 0 end
  redis.call('HSET', meta, 'pending', '0')
  redis.call('UNLINK', synced)
  if redis.call('EXISTS', syncing) == 1 then redis.call('RENAME', syncing, synced) end
  return 1
end

local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' and res.hp then return redis.error_reply(res.hp) end
error(res, 0)
