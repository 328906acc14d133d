local MAX_TIME = 253402300799999
local function fail(msg) error({ hp = msg }, 0) end
local function syntax() fail('ERR syntax error') end
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
local function check(k, want)
  local t = redis.call('TYPE', k).ok
  if t == 'none' then return false end
  if t ~= want then fail('WRONGTYPE Operation against a key holding the wrong kind of value') end
  return true
end
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
-- Valid UTF-8 exactly as Rust's std::str::from_utf8 judges it (no
-- overlong forms, no surrogates, nothing above U+10FFFF).
local function valid_utf8(s)
  local i, n = 1, #s
  while i <= n do
    local c = string.byte(s, i)
    local len
    if c < 0x80 then len = 1
    elseif c >= 0xC2 and c <= 0xDF then len = 2
    elseif c >= 0xE0 and c <= 0xEF then len = 3
    elseif c >= 0xF0 and c <= 0xF4 then len = 4
    else return false end
    if i + len - 1 > n then return false end
    for k = i + 1, i + len - 1 do
      local b = string.byte(s, k)
      if b < 0x80 or b > 0xBF then return false end
    end
    local b = string.byte(s, i + 1)
    if len == 3 and ((c == 0xE0 and b < 0xA0) or (c == 0xED and b > 0x9F)) then return false end
    if len == 4 and ((c == 0xF0 and b < 0x90) or (c == 0xF4 and b > 0x8F)) then return false end
    i = i + len
  end
  return true
end
local function expire_at_if_unset(k, at)
  if at > 0 and redis.call('EXISTS', k) == 1 and redis.call('PTTL', k) < 0 then
    redis.call('PEXPIREAT', k, fmt(at))
  end
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
-- Calendar day yyyymmdd of now_ms at UTC+tz (Hinnant's days-to-civil).
local function day_of(now_ms, tz)
  local fl = math.floor
  local days = fl((now_ms + tz * 60000) / 86400000)
  local z = days + 719468
  local era = fl(z / 146097)
  local doe = z - era * 146097
  local yoe = fl((doe - fl(doe / 1460) + fl(doe / 36524) - fl(doe / 146096)) / 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + fl(yoe / 4) - fl(yoe / 100))
  local mp = fl((5 * doy + 2) / 153)
  local d = doy - fl((153 * mp + 2) / 5) + 1
  local m = (mp < 10) and (mp + 3) or (mp - 9)
  if m <= 2 then y = y + 1 end
  return y * 10000 + m * 100 + d
end
-- A MULTI user's vote list (B:uservotes); anything but a JSON array of
-- strings is an error naming the user's field.
local function parse_list(uvk, user)
  local j = redis.call('HGET', uvk, user)
  if not j then return {} end
  local ok, t = pcall(cjson.decode, j)
  if not ok or type(t) ~= 'table' or not string.find(j, '^%s*%[') then corrupt(uvk, user) end
  local n = 0
  for k, v in pairs(t) do
    if type(k) ~= 'number' or type(v) ~= 'string' then corrupt(uvk, user) end
    n = n + 1
  end
  for i = 1, n do
    if t[i] == nil then corrupt(uvk, user) end
  end
  return t
end
-- The candidate of a ballot's audit record "<candidate>:<unix-ms>"
-- (everything before the last ':'); an error naming the ballot's field
-- when the record is not of that form.
local function ballot_candidate(voted, field, v)
  local cand, t = string.match(v, '^(.*):([^:]*)$')
  local ms = parse_int(t)
  if cand == nil or cand == '' or ms == nil or ms < 0 or ms > 253402300799999 then corrupt(voted, field) end
  return cand
end
-- JSON exactly as serde_json writes a Vec<String> (cjson would escape '/').
local ESC = { ['"'] = '\\"', ['\\'] = '\\\\', ['\b'] = '\\b', ['\f'] = '\\f',
  ['\n'] = '\\n', ['\r'] = '\\r', ['\t'] = '\\t' }
local function json_list(list)
  local out = {}
  for i, s in ipairs(list) do
    out[i] = '"' .. string.gsub(s, '[%z\001-\031"\\]', function(c)
      return ESC[c] or string.format('\\u%04x', string.byte(c))
    end) .. '"'
  end
  return '[' .. table.concat(out, ',') .. ']'
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
local RANGE_MAX = 1000 -- the module's poll-range-max default
-- ---- spread polls (docs/spread.md; poll/commands.rs) ----
-- Raises the error reply a spread helper returned ({err = …}).
local function raise(e)
  if e then fail(e.err) end
end
-- The value of `SPREAD n`, or the module's error.
local function spread_n(s)
  local n, e = spread().spread_count('poll', s)
  raise(e)
  return n
end
-- The optional `SPREAD n` of a command that takes nothing else after its
-- first `fixed` arguments (ARGV passed in): the count or nil; anything
-- else there is the arity error `arity` raises.
local function only_spread(argv, fixed, bad_arity)
  local extra = #argv - fixed
  if extra == 0 then return nil end
  if extra == 2 and string.upper(argv[fixed + 1]) == 'SPREAD' then return spread_n(argv[fixed + 2]) end
  bad_arity()
end
-- A spread poll's data keys besides B:meta (poll/commands.rs POLL).
local POLL_DATA = {'voted', 'board', 'uservotes', 'synced', 'syncing'}
-- The shard a poll key is (commands.rs spread_in), B:meta already
-- type-checked: {n =, i =} when the call declared SPREAD n or the key
-- looks like a shard key and records one, nil for a single-slot poll;
-- raises the error for a missing shard, a deleted or edited record, other
-- counts, and (with user) a voter of another shard. A key that does not
-- start with '{' and declares nothing costs one byte comparison.
local function poll_spread(B, declared, user)
  if declared == nil and not looks_like_shard(B) then return nil end
  local S = spread()
  local v = redis.call('HMGET', B .. ':meta', 'spread', 'shard')
  local rec, e = S.parse_record('poll', B, v[1], v[2])
  raise(e)
  local sh, e2 = S.resolve('poll', B, declared, rec, function() return S.holds_data(B, POLL_DATA) end)
  raise(e2)
  if sh and user then raise(S.check_owner('poll', 'user', B, sh, user)) end
  return sh
end
-- True when one of a poll's main keys (B:meta, B:board, B:voted) exists.
local function poll_found(B)
  return redis.call('EXISTS', B .. ':meta', B .. ':board', B .. ':voted') > 0
end
-- For a single-slot call that found none of the poll's keys: refuses the
-- base key of a spread poll (costs nothing once the poll has a key).
local function refuse_base(B, sh, found)
  if sh == nil and not found then raise(spread().refuse_spread_base('poll', B, POLL_DATA)) end
end
