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
  -- LAYOUT WIDE: the time in unix ms, any instant the options accept.
  if l.wide then
    if ms < 0 or ms > EXACT_MAX then return nil end
    return ms
  end
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
    -- LAYOUT WIDE: "<TIEBREAK> WIDE", and while RANK.IMPORT packs it
    -- "<TIEBREAK> WIDE IMPORT <unix-ms>".
    local wtb = string.match(v, '^([^ ]*) WIDE$')
    local wat = nil
    if not wtb then
      wtb, wat = string.match(v, '^([^ ]*) WIDE IMPORT ([^ ]*)$')
    end
    if wtb then
      if wtb ~= 'EARLIER' and wtb ~= 'LATER' then return nil end
      if wat then
        import = int_in(wat, 0, EXACT_MAX)
        if import == nil then return nil end
      end
      return { tiebreak = wtb, unit = 'MS', digits = 0, epoch = 0, unitms = 1, scale = 1,
        limit = EXACT_MAX, wide = true }, import
    end
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
-- LAYOUT WIDE (rank/model.rs wide_name): the name member is stored under
-- when it reached its points at ms: 16 digits, ':', the member. The
-- digits are ms (LATER) or 10^16 - 1 - ms (EARLIER): the nines'
-- complement of the digits of ms, computed on the string (10^16 - 1 is
-- beyond what a double holds exactly).
local function wide_name(l, ms, member)
  local d = string.format('%016d', ms)
  if l.tiebreak == 'EARLIER' then
    d = string.gsub(d, '%d', function(c) return string.char(105 - string.byte(c)) end)
  end
  return d .. ':' .. member
end
-- The achievement time and the member of a stored name, or nil for a
-- name the module never writes.
local function wide_split(l, stored)
  local d, member = string.match(stored, '^(%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d%d):(.+)$')
  if not d then return nil end
  if l.tiebreak == 'EARLIER' then
    d = string.gsub(d, '%d', function(c) return string.char(105 - string.byte(c)) end)
  end
  local ms = tonumber(d)
  if ms > EXACT_MAX then return nil end
  return ms, member
end
-- A member's entry on a LAYOUT WIDE board through B:time: { points, at,
-- name }, false when it is not on the board, or nil and the error.
local function wide_entry(B, l, member)
  local v = redis.call('HGET', B .. ':time', member)
  if not v then return false end
  local ms = int_in(v, 0, EXACT_MAX)
  if ms == nil then return nil, corrupt(B .. ':time', member) end
  local name = wide_name(l, ms, member)
  local score = redis.call('ZSCORE', B, name)
  if not score then return nil, corrupt(B .. ':time', member) end
  local points = decode(l, score)
  if points == nil then return nil, corrupt(B, name) end
  return { points = points, at = ms, name = name }
end
-- Writes points achieved at ms for member on a LAYOUT WIDE board (old:
-- its current stored name, or nil): the new name first, so that B never
-- empties; keys it creates take the expiry of B:meta.
local function write_wide(B, l, member, old, points, ms)
  local tk = B .. ':time'
  local nb, nt = redis.call('EXISTS', B) == 0, redis.call('EXISTS', tk) == 0
  local name = wide_name(l, ms, member)
  redis.call('ZADD', B, points, name)
  if old and old ~= name then redis.call('ZREM', B, old) end
  redis.call('HSET', tk, member, string.format('%d', ms))
  local at = redis.call('PEXPIRETIME', B .. ':meta')
  if at > 0 then
    if nb then redis.call('PEXPIREAT', B, at) end
    if nt then redis.call('PEXPIREAT', tk, at) end
  end
end
-- The member and points of an entry of B (stored name and score), or nil
-- and the error (rank/commands.rs entry_of).
local function entry_of(B, l, stored, score)
  local points = decode(l, score)
  if points == nil then return nil, corrupt(B, stored) end
  if not l.wide then return stored, points end
  local _, member = wide_split(l, stored)
  if not member then return nil, corrupt(B, stored) end
  return member, points
end
-- The member and the entry (points, time or false) of a name and score
-- stored in B (rank/model.rs decode_stored), or nil for what the module
-- never writes.
local function decode_stored(l, stored, score)
  local points, ms = decode(l, score)
  if points == nil then return nil end
  if not l.wide then return stored, points, ms end
  local at, member = wide_split(l, stored)
  if not member then return nil end
  return member, points, at
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
  if l.wide and not typed(B .. ':time', 'hash') then return nil, redis.error_reply(WRONGTYPE) end
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
-- RANK.INCR (RANK.DECR when decr) of B with argv = member delta
-- [NOW unix-ms] [SPREAD n]: the body both twins share.
local function incr_cmd(B, argv, decr)
  if #argv < 2 then return arity(decr and 'rank.decr' or 'rank.incr') end
  local member = argv[1]
  if member == '' then return rank_err('user must not be empty') end
  local delta = argv[2]
  if int(delta) == nil then return redis.error_reply(NOT_INT) end
  -- DECR adds -delta (the string negated: -2^63 has no positive twin).
  if decr then
    if string.sub(delta, 1, 1) == '-' then delta = string.sub(delta, 2) else delta = '-' .. delta end
  end
  local now, declared = nil, nil
  local i = 3
  while i <= #argv do
    local k = string.upper(argv[i])
    if k == 'NOW' then
      if i == #argv then return redis.error_reply(SYNTAX) end
      now = int_in(argv[i + 1], 0, EXACT_MAX)
      if now == nil then return redis.error_reply(NOT_INT) end
      i = i + 2
    elseif k == 'SPREAD' then
      if i == #argv then return redis.error_reply(SYNTAX) end
      local e
      declared, e = spread().spread_count('rank', argv[i + 1])
      if e then return e end
      i = i + 2
    else
      return redis.error_reply(SYNTAX)
    end
  end
  local l, sh = open_board(B, declared)
  if not l then return sh end
  if sh then
    local oe = spread().check_owner('rank', 'member', B, sh, member)
    if oe then return oe end
  end
  local t = tick(l, now or now_ms())
  if t == nil then return rank_err('timestamp out of range') end
  local cur, old = 0, nil
  if l.wide then
    local e, err = wide_entry(B, l, member)
    if e == nil then return err end
    if e then cur, old = e.points, e.name end
  else
    local score = redis.call('ZSCORE', B, member)
    if score then
      cur = decode(l, score)
      if cur == nil then return corrupt(B, member) end
    end
  end
  -- cur + delta, exact: a delta of more than 15 digits is added in two
  -- parts, so that a double never rounds a result that is in range.
  local neg = string.sub(delta, 1, 1) == '-'
  local d = neg and string.sub(delta, 2) or delta
  local points
  if #d <= 15 then
    points = cur + tonumber(delta)
  else
    local hi, lo = tonumber(string.sub(d, 1, #d - 8)), tonumber(string.sub(d, #d - 7))
    if hi > 200000000 then return range_err(l) end
    if neg then hi, lo = -hi, -lo end
    points = (cur + lo) + hi * 100000000
  end
  if points > l.limit or points < -l.limit then return range_err(l) end
  if l.wide then
    write_wide(B, l, member, old, points, t)
  else
    write_score(B, member, pack(l, points, t))
  end
  return points
end
