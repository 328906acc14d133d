local MAX_WINNERS = 1000
local function ferr(msg) return redis.error_reply('ERR luckybag: ' .. msg) end
local function syntax() return redis.error_reply('ERR syntax error') end
local function notint() return redis.error_reply('ERR value is not an integer or out of range') end
local function empty_user() return ferr('user must not be empty') end
-- A key or field in an error line: control characters become '?'.
local function shown(s) return (string.gsub(s, '%c', '?')) end
local function corrupt(key, field)
  if field then return ferr("corrupt data in '" .. shown(key) .. "' field '" .. shown(field) .. "'") end
  return ferr("corrupt data in '" .. shown(key) .. "'")
end
local function overflow(key, field)
  if field then return ferr("integer overflow in '" .. shown(key) .. "' field '" .. shown(field) .. "'") end
  return ferr("integer overflow in '" .. shown(key) .. "'")
end
local I64_MAX = '9223372036854775807'
-- The largest participant count (B:count) and `latepooled`: 2^53 - 1, so
-- that every count is exact in a double; the module keeps the same bound.
local MAX_COUNT = 9007199254740991
-- Byte-wise a > b (Lua's own string order follows the locale).
local function bytes_gt(a, b)
  local la, lb = #a, #b
  for i = 1, math.min(la, lb) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x > y end
  end
  return la > lb
end
-- An integer as Redis reads one: optional '-', digits, no leading zero,
-- within the signed 64-bit range. Returns the number, or nil.
local function toint(s)
  if s == '0' then return 0 end
  if not string.match(s, '^%-?[1-9]%d*$') then return nil end
  local neg = string.sub(s, 1, 1) == '-'
  local digits = neg and string.sub(s, 2) or s
  if #digits > 19 then return nil end
  if #digits == 19 then
    local lim = neg and '9223372036854775808' or I64_MAX
    if bytes_gt(digits, lim) then return nil end
  end
  return tonumber(s)
end
-- HIGHSCORE: plain decimal digits with an optional fraction, at most 32 bytes.
local function parse_highscore(s)
  if #s == 0 or #s > 32 then return nil end
  if not (string.match(s, '^%d+$') or string.match(s, '^%d*%.%d+$')) then return nil end
  return tonumber(s)
end
local function valid_shards(n)
  if not n or n < 1 or n > 1024 then return false end
  while n > 1 do
    if n % 2 ~= 0 then return false end
    n = n / 2
  end
  return true
end
-- user & (shards - 1) for integer ids, else the low bits of FNV-1a 32
-- (computed modulo 1024: shards divides 1024, and the low bits of FNV-1a
-- depend only on the low bits of each step).
local function shard_of(user, shards)
  if toint(user) then
    local neg = string.sub(user, 1, 1) == '-'
    local digits = neg and string.sub(user, 2) or user
    local low = tonumber(string.sub(digits, -10)) % 1024
    if neg then low = (1024 - low) % 1024 end
    return low % shards
  end
  local h = 453 -- 2166136261 % 1024
  for i = 1, #user do
    h = (bit.bxor(h, string.byte(user, i)) * 403) % 1024 -- 16777619 % 1024
  end
  return h % shards
end
-- Returns ok, exists for a key that must hold `want` when present.
local function typed(key, want)
  local t = redis.call('TYPE', key).ok
  if t == 'none' then return true, false end
  return t == want, true
end
-- The B:meta values, each parsed as CREATE writes it; nil for garbage.
local PARSE = {
  winners = function(v)
    local n = toint(v)
    if n and n >= 1 and n <= MAX_WINNERS then return n end
  end,
  shards = function(v)
    local n = toint(v)
    if valid_shards(n) then return n end
  end,
  poolcap = function(v)
    local n = toint(v)
    if n and n >= 0 then return n end
  end,
  -- A counter JOIN keeps: at most 2^53 - 1, exact in a double (the
  -- module's bound too).
  latepooled = function(v)
    local n = toint(v)
    if n and n >= 0 and n <= MAX_COUNT then return n end
  end,
  highscore = function(v)
    local h = parse_highscore(v)
    if h and h <= 1 then return h end
  end,
  restore = function(v)
    if v == 'yes' then return true elseif v == 'no' then return false end
  end,
  -- `open`, `frozen` (a shard of a spread bag being drawn) or `drawn`.
  state = function(v)
    if v == 'open' or v == 'frozen' or v == 'drawn' then return v end
  end,
}
-- Opens B:meta: returns its name, or nil when the bag does not exist, or
-- nil and a WRONGTYPE error.
local function find_meta(B)
  local meta = B .. ':meta'
  local ok, exists = typed(meta, 'hash')
  if not ok then return nil, redis.error_reply(WRONGTYPE) end
  if not exists then return nil end
  return meta
end
-- Reads the B:meta fields `names` (one HMGET) into a table of raw values.
local function read_meta(meta, names)
  local v = redis.call('HMGET', meta, unpack(names))
  local raw = {}
  for i = 1, #names do raw[names[i]] = v[i] end
  return raw
end
-- Returns the parsed value of field `name`, or nil and the corrupt-data error.
local function meta_value(meta, raw, name)
  local v = raw[name]
  local x = nil
  if v then x = PARSE[name](v) end
  if x == nil then return nil, corrupt(meta, name) end
  return x
end
-- `shards` and `state` decide which keys a write touches: read first; a
-- drawn bag takes no more writes.
local function scope(meta, raw)
  local shards, e = meta_value(meta, raw, 'shards')
  if e then return nil, e end
  local state, e2 = meta_value(meta, raw, 'state')
  if e2 then return nil, e2 end
  -- A frozen shard of a spread bag is being drawn: closed too.
  if state ~= 'open' then return nil, ferr('bag is closed') end
  return shards
end
-- B:count: a non-negative integer; nil and an error otherwise.
local function read_count(key)
  local v = redis.call('GET', key)
  local n = toint(v)
  if not n or n < 0 or n > MAX_COUNT then return nil, corrupt(key) end
  return n, nil, v
end
-- Gives a key just created the bag's expiry: B:meta's absolute instant.
local function adopt_expiry(meta, key)
  local at = redis.call('PEXPIRETIME', meta)
  if at > 0 then redis.call('PEXPIREAT', key, at) end
end
-- A score as replies print it: C's %.17g, exact (luckybag/model.rs format_score).
local function score_text(score) return string.format('%.17g', tonumber(score)) end
-- The bag's keyed pool score of a user (luckybag/keyed.rs):
-- HMAC-SHA1(key = seed, message = user), its first 52 bits over 2^52.
local function hex_bytes(h)
  return (string.gsub(h, '..', function(x) return string.char(tonumber(x, 16)) end))
end
local function keyed_score(seed, user)
  local k = seed
  if #k > 64 then k = hex_bytes(redis.sha1hex(k)) end
  local ip, op = {}, {}
  for i = 1, 64 do
    local b = string.byte(k, i) or 0
    ip[i] = string.char(bit.bxor(b, 0x36))
    op[i] = string.char(bit.bxor(b, 0x5c))
  end
  local inner = hex_bytes(redis.sha1hex(table.concat(ip) .. user))
  local mac = redis.sha1hex(table.concat(op) .. inner)
  return tonumber(string.sub(mac, 1, 13), 16) / 4503599627370496
end
-- Scores sent to ZADD as exact text: Lua would print a number with 14 digits.
local function zscore_arg(score) return string.format('%.17g', score) end
-- Score of a user out of the room with the task pending.
local AWAY_PENDING = -1.5
-- The bag's seed (16 to 64 bytes), nil and the error otherwise: a bag
-- created before keyed scores has none.
local function seed_of(meta, v)
  if not v then return nil, ferr('bag has no seed (created by an older hotpath): draw it, or create a new bag') end
  if #v < 16 or #v > 64 then return nil, corrupt(meta, 'seed') end
  return v
end
-- ---- spread bags (docs/spread.md; luckybag/commands.rs) ----
-- A spread bag's data keys besides B:meta (luckybag/commands.rs BAG):
-- data in a shard without its record means the record was deleted.
local BAG_DATA = {'count', 'winners', 'cand:0'}
-- The shard of a spread bag B is, from the declared SPREAD n and the
-- record in B:meta (`meta`: its name when the bag exists): {n =, i =}, or
-- nil for a single-slot bag, or nil and the error. With `user`, the user
-- must belong to this shard. A single-slot call on a missing bag refuses
-- the base key of a spread bag.
local function bag_spread_of(B, declared, meta, user)
  if declared == nil and not looks_like_shard(B) then
    if not meta then
      local e = spread().refuse_spread_base('luckybag', B, BAG_DATA)
      if e then return nil, e end
    end
    return nil
  end
  local rec = nil
  if meta then
    local v = redis.call('HMGET', meta, 'spread', 'shard')
    local r, e = spread().parse_record('luckybag', B, v[1], v[2])
    if e then return nil, e end
    rec = r
  end
  local sh, e = spread().resolve('luckybag', B, declared, rec, function() return spread().holds_data(B, BAG_DATA) end)
  if e then return nil, e end
  if sh and user then
    local e2 = spread().check_owner('luckybag', 'user', B, sh, user)
    if e2 then return nil, e2 end
  elseif not sh and not meta then
    local e3 = spread().refuse_spread_base('luckybag', B, BAG_DATA)
    if e3 then return nil, e3 end
  end
  return sh
end
-- `B user [SPREAD n]` of TASK, LEAVE, ENTER, RESULT: the user and the
-- declared count; anything else after the user is an arity error.
local function user_spread(argv, cmd)
  if #argv == 1 then return argv[1] end
  if #argv == 3 and string.upper(argv[2]) == 'SPREAD' then
    local n, e = spread().spread_count('luckybag', argv[3])
    if e then return nil, nil, e end
    return argv[1], n
  end
  return nil, nil, arity(cmd)
end
-- Shard i's share of a total c (decimal text, up to 2^63 - 1) over n
-- shards, as text: floor(c(i+1)/n) - floor(ci/n) = q + floor(r(i+1)/n) -
-- floor(ri/n) for c = qn + r, by long division (a double is not exact
-- above 2^53).
local function share_text(c, n, i)
  local q, r = {}, 0
  for k = 1, #c do
    r = r * 10 + string.byte(c, k) - 48
    q[#q + 1] = string.char(48 + math.floor(r / n))
    r = r % n
  end
  local add = math.floor(r * (i + 1) / n) - math.floor(r * i / n)
  local digits = string.match(table.concat(q), '^0*(%d-)$')
  -- + add (0 or 1), from the last digit.
  local out, carry = {}, add
  for k = #digits, 1, -1 do
    local d = string.byte(digits, k) - 48 + carry
    out[#out + 1] = string.char(48 + d % 10)
    carry = math.floor(d / 10)
  end
  if carry > 0 then out[#out + 1] = string.char(48 + carry) end
  local text = string.reverse(table.concat(out))
  if text == '' then return '0' end
  return text
end
-- The shard a draw step runs on (SPREAD n required), with its meta name;
-- or nil and the error. The coordinator's steps run on shard 0 only.
local function draw_shard(B, declared, coordinator)
  if declared == nil then return nil, nil, ferr('the draw steps of a spread bag need SPREAD n') end
  local meta, e = find_meta(B)
  if e then return nil, nil, e end
  local sh, e2 = bag_spread_of(B, declared, meta, nil)
  if e2 then return nil, nil, e2 end
  if coordinator and sh.i ~= 0 then
    local _, base = spread().split_shard_key(B)
    return nil, nil, ferr("the draw of a spread bag is coordinated by its shard 0 ('"
      .. key_text(spread().first_shard_key(base or B)) .. "')")
  end
  return sh, meta
end
local ERR_WINNER_SCORE = 'winner scores must be scores from 0 to 1 as replies print them (17 significant digits)'
-- A score as the spread draw carries it (as replies print it, 0 to 1),
-- or nil; another spelling of the same number is refused.
local function score_r(v)
  if #v == 0 or #v > 32 or string.find(v, '[^0-9%.e%+%-]') then return nil end
  local r = tonumber(v)
  if not r or r < 0 or r > 1 or string.format('%.17g', r) ~= v then return nil end
  return r
end
-- The draw's order on {user, r}: true when a ranks before b.
local function ranks_first(a, b)
  return a[2] > b[2] or (a[2] == b[2] and bytes_gt(a[1], b[1]))
end
-- Checks a winner list (model::check_winner_list): at most `max`, no
-- empty user, in the draw's order with no user twice; the error or nil.
local function check_winner_list(list, max)
  if #list > max then return ferr('bad winner list: more winners than the bag has prizes') end
  for k, w in ipairs(list) do
    if w[1] == '' then return ferr('bad winner list: a winner with an empty user') end
    if k > 1 and not ranks_first(list[k - 1], w) then
      return ferr('bad winner list: winners out of order or repeated')
    end
  end
  return nil
end
-- Parses `user score ...` (argv[from .. to]) into {{user, r}, ...},
-- checked against WINNERS; or nil and the error.
local function winner_list(argv, from, to, winners)
  if (to - from + 1) % 2 ~= 0 then return nil, syntax() end
  local list = {}
  for k = from, to, 2 do
    local r = score_r(argv[k + 1])
    if not r then return nil, ferr(ERR_WINNER_SCORE) end
    list[#list + 1] = {argv[k], r}
  end
  local e = check_winner_list(list, winners)
  if e then return nil, e end
  return list
end
-- A stored winner list (B:winners, B:allwinners) as {{user, r}, ...}.
local function stored_list(key, max)
  local v = redis.call('ZREVRANGE', key, 0, max - 1, 'WITHSCORES')
  local out = {}
  for k = 1, #v, 2 do out[#out + 1] = {v[k], tonumber(v[k + 1])} end
  return out
end
local function same_list(a, b)
  if #a ~= #b then return false end
  for k = 1, #a do
    if a[k][1] ~= b[k][1] or a[k][2] ~= b[k][2] then return false end
  end
  return true
end
-- The text of a score: %.17g.
local function r_text(r) return string.format('%.17g', r) end
-- Replaces a winner list key whole, with the bag's expiry.
local function write_list(meta, key, list)
  redis.call('DEL', key)
  for k = 1, #list, 500 do
    local args = {}
    for j = k, math.min(k + 499, #list) do
      args[#args + 1] = r_text(list[j][2])
      args[#args + 1] = list[j][1]
    end
    redis.call('ZADD', key, unpack(args))
  end
  if #list > 0 then adopt_expiry(meta, key) end
end
-- The best `n` eligible candidates (score 0 to 1) over a bag's internal
-- pools, in the draw's order, as {{user, r}, ...}; every pool's type is
-- checked first (nil and WRONGTYPE).
local function top_candidates(B, shards, n)
  for s = 0, shards - 1 do
    if not typed(B .. ':cand:' .. s, 'zset') then return nil, redis.error_reply(WRONGTYPE) end
  end
  local all = {}
  for s = 0, shards - 1 do
    local v = redis.call('ZREVRANGEBYSCORE', B .. ':cand:' .. s, 1, 0, 'WITHSCORES', 'LIMIT', 0, n)
    for k = 1, #v, 2 do all[#all + 1] = {v[k], tonumber(v[k + 1])} end
  end
  table.sort(all, ranks_first)
  local out = {}
  for k = 1, math.min(n, #all) do out[k] = all[k] end
  return out
end
-- Decimal integer texts (canonical, possibly negative): a > b.
local function int_text_gt(a, b)
  local na, nb = string.byte(a, 1) == 45, string.byte(b, 1) == 45
  if na ~= nb then return nb end
  local x, y = a, b
  if na then x, y = string.sub(b, 2), string.sub(a, 2) end
  if #x ~= #y then return #x > #y end
  return bytes_gt(x, y)
end
-- A canonical non-negative decimal text plus a small non-negative k.
local function dec_add(s, k)
  local out, carry = {}, k
  local j = #s
  while j >= 1 or carry > 0 do
    local d = carry
    if j >= 1 then d = d + string.byte(s, j) - 48 end
    out[#out + 1] = string.char(48 + d % 10)
    carry = math.floor(d / 10)
    j = j - 1
  end
  return string.reverse(table.concat(out))
end
