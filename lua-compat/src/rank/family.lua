local EXACT_MAX = 9007199254740991
local RANGE_MAX = 1000 -- the module's rank-range-max default
-- RANK.POSITION walks tie blocks up to this size member by member and
-- searches larger ones by halving, as the module does.
local TIE_WALK_MAX = 32
local NOT_INT = 'ERR value is not an integer or out of range'
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
-- ERR rank: corrupt data in '<key>' field '<field>': a value the module
-- never writes (control characters shown as '?', as the module does).
local function corrupt(key, field)
  local function text(s) return (string.gsub(s, '[%z\1-\31\127]', '?')) end
  return rank_err("corrupt data in '" .. text(key) .. "' field '" .. text(field) .. "'")
end
local function importing()
  return rank_err('board is being imported (call RANK.IMPORT until it replies 0)')
end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function tick(l, ms)
  if l.tiebreak == 'NONE' then return 0 end
  local d = ms - l.epoch
  if d < 0 then return nil end
  local t = (d - math.fmod(d, l.unitms)) / l.unitms
  if t >= l.scale then return nil end
  return t
end
-- The board's layout from the `layout` field of B:meta,
-- "<TIEBREAK> <UNIT> <DIGITS> <EPOCH>" (defaults for a board never
-- created), and the import's time when the field ends with
-- " IMPORT <unix-ms>" (RANK.IMPORT in progress); nil when the value is
-- not a layout.
local function layout(meta)
  local v = redis.call('HGET', meta, 'layout')
  local l = { tiebreak = 'EARLIER', unit = 'S', digits = 10, epoch = 0 }
  local import = nil
  if v then
    local tb, unit, digits, epoch = string.match(v, '^([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*)$')
    if not tb then
      local at
      tb, unit, digits, epoch, at = string.match(v, '^([^ ]*) ([^ ]*) ([^ ]*) ([^ ]*) IMPORT ([^ ]*)$')
      if not tb then return nil end
      import = int(at)
      if import == nil then return nil end
    end
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
  if import ~= nil and tick(l, import) == nil then return nil end
  return l, import
end
local function range_err(l)
  return rank_err('points out of exact range (max +/-' .. string.format('%d', l.limit) .. ')')
end
local function pack(l, points, t)
  local tb = 0
  if l.tiebreak == 'EARLIER' then tb = l.scale - 1 - t elseif l.tiebreak == 'LATER' then tb = t end
  return points * l.scale + tb
end
-- points and achievement time (false for NONE) of a stored score; nil for
-- a score the module never writes (not an integer, or beyond 2^53).
local function decode(l, score)
  local p = tonumber(score)
  if p == nil or p ~= math.floor(p) or math.abs(p) > EXACT_MAX then return nil end
  local r = math.fmod(p, l.scale)
  if r < 0 then r = r + l.scale end
  local points = (p - r) / l.scale
  if l.tiebreak == 'EARLIER' then return points, l.epoch + (l.scale - 1 - r) * l.unitms end
  if l.tiebreak == 'LATER' then return points, l.epoch + r * l.unitms end
  return points, false
end
-- The type checks of a board: B and B:meta. Returns true and the two
-- types, or nil and the error reply.
local function board_types(B)
  local tb = redis.call('TYPE', B)['ok']
  if tb ~= 'none' and tb ~= 'zset' then return nil, redis.error_reply(WRONGTYPE) end
  local tm = redis.call('TYPE', B .. ':meta')['ok']
  if tm ~= 'none' and tm ~= 'hash' then return nil, redis.error_reply(WRONGTYPE) end
  return true, tb, tm
end
-- The layout of a type-checked board (a board being imported refused
-- unless `import_ok`). Returns the layout and the import's time, or nil
-- and the error reply.
local function board_layout(B, import_ok)
  local l, import = layout(B .. ':meta')
  if not l then return nil, corrupt(B .. ':meta', 'layout') end
  if import and not import_ok then return nil, importing() end
  return l, import
end
-- A spread board's data: the Sorted Set under the shard key itself
-- (rank/commands.rs BOARD).
local RANK_DATA = {''}
-- A board opened for a command: checks B and B:meta, resolves the shard
-- (docs/spread.md; rank/commands.rs spread_of) from the count the call
-- declared (`declared`: SPREAD n, or nil) and the record in B:meta, reads
-- the layout. Returns the layout and the shard ({n =, i =}, nil for a
-- single-slot board), or nil and the error reply. A key that neither
-- declares a count nor looks like a shard key costs one byte comparison;
-- when a single-slot board does not exist at all, the base key of a
-- spread board is refused (spread/scope.rs resolve). (One function, not two: a script makes each of its helpers
-- at every call.)
local function open_board(B, declared)
  local ok, tb, tm = board_types(B)
  if not ok then return nil, tb end
  local sh = nil
  if declared == nil and not looks_like_shard(B) then
    if tb == 'none' and tm == 'none' then
      local e = spread().refuse_spread_base('rank', B, RANK_DATA)
      if e then return nil, e end
    end
  else
    local rec, e = spread().read_record('rank', B)
    if e then return nil, e end
    sh, e = spread().resolve('rank', B, declared, rec, function() return tb ~= 'none' end)
    if e then return nil, e end
    if sh == nil and tb == 'none' and tm == 'none' then
      e = spread().refuse_spread_base('rank', B, RANK_DATA)
      if e then return nil, e end
    end
  end
  local l, e2 = board_layout(B, false)
  if not l then return nil, e2 end
  return l, sh
end
-- The optional `SPREAD n` of a command that takes nothing else after its
-- first `fixed` arguments: the count, nil, or nil and the error (the
-- arity error for anything else: those commands had a fixed arity).
local function only_spread(argv, fixed, cmd)
  local extra = #argv - fixed
  if extra == 0 then return nil end
  if extra == 2 and string.upper(argv[fixed + 1]) == 'SPREAD' then
    return spread().spread_count('rank', argv[fixed + 2])
  end
  return nil, arity(cmd)
end
-- For MERGE and IMPORT, which have no spread form: the error for a shard
-- of a spread board, or for the base key of one (tb and tm: the types of
-- key and key:meta); nil otherwise.
local function refuse_spread(cmd, key, tb, tm)
  if looks_like_shard(key) then
    local rec, e = spread().read_record('rank', key)
    if e then return e end
    if rec then
      return rank_err(cmd .. " does not take a shard of a spread board ('" .. key_text(key) .. "'): see docs/rank.md")
    end
  end
  if tb == 'none' and tm == 'none' then return spread().refuse_spread_base('rank', key, RANK_DATA) end
  return nil
end
-- a > b byte by byte (the order of a sorted set's members): Lua's own
-- comparison follows the server's collation locale.
local function bytes_gt(a, b)
  for k = 1, math.min(#a, #b) do
    local x, y = string.byte(a, k), string.byte(b, k)
    if x ~= y then return x > y end
  end
  return #a > #b
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
-- Points are summed as hi * 2^26 + lo so that the sum stays exact.
local SPLIT = 67108864
