-- POLL.CREATE key [MODE ONCE|DAILY|MULTI] [MAXVOTES maxvotes] [CANDIDATES count candidate [candidate ...]] [START unix-ms] [END unix-ms] [TZ minutes] [TTL seconds] [NOW unix-ms] [SPREAD n]
-- hotpath Lua twin of POLL.CREATE
-- Usage:  EVALSHA <sha> 1 B [MODE ONCE|DAILY|MULTI] [MAXVOTES n]
-- [CANDIDATES n c1 ... cn] [START unix-ms]
-- [END unix-ms] [TZ minutes] [TTL seconds]
-- [NOW unix-ms] [SPREAD n]
-- KEYS[1] = B, the poll's base key.
-- ARGV    = the arguments of POLL.CREATE after B, verbatim.
-- Returns OK, or the same error as the module.
-- Writes  B:meta (mode maxvotes start end tz closed expires) and, with
-- CANDIDATES, B:board (every candidate at 0); with TTL both get
-- PEXPIREAT <expires>. With SPREAD n, B is shard i of n of a spread poll
-- ({<tag>}base, docs/spread.md) and B:meta records spread n and shard i;
-- again with the same rules and count: OK, nothing changes.
--@ keys 1

local B = KEYS[1]
local function arity() fail("ERR wrong number of arguments for 'poll.create' command") end
local pos = 1
local function done() return pos > #ARGV end
local function nxt()
  local a = ARGV[pos]
  if a == nil then arity() end
  pos = pos + 1
  return a
end
local function option_int(lo, hi)
  if done() then syntax() end
  return int_in(nxt(), lo, hi)
end
local function main()
  if #KEYS ~= 1 then arity() end
  local mode, maxvotes, cands, now, declared = 'ONCE', nil, nil, nil, nil
  local start, stop, tz, ttl = 0, 0, 0, 0
  while not done() do
    local kw = string.upper(nxt())
    if kw == 'MODE' then
      if done() then syntax() end
      local v = string.upper(nxt())
      if v ~= 'ONCE' and v ~= 'DAILY' and v ~= 'MULTI' then syntax() end
      mode = v
    elseif kw == 'MAXVOTES' then
      maxvotes = option_int(1, 1000)
    elseif kw == 'CANDIDATES' then
      local n = option_int(1, 100000)
      if #ARGV - pos + 1 < n then syntax() end
      local list = {}
      for i = 1, n do
        local c = nxt()
        if c == '' then fail('ERR poll: candidate must not be empty') end
        list[i] = c
      end
      cands = list
    elseif kw == 'START' then
      start = option_int(0, MAX_TIME)
    elseif kw == 'END' then
      stop = option_int(0, MAX_TIME)
    elseif kw == 'TZ' then
      tz = option_int(-1440, 1440)
    elseif kw == 'TTL' then
      ttl = option_int(1, 3153600000)
    elseif kw == 'NOW' then
      now = option_int(0, MAX_TIME)
    elseif kw == 'SPREAD' then
      if done() then syntax() end
      declared = spread_n(nxt())
    else
      syntax()
    end
  end
  -- Shard i of a poll spread over n shards: the key must be that shard's
  -- key (docs/spread.md).
  local sh = nil
  if declared ~= nil then
    local i = spread().shard_index(B, declared)
    if i == nil then raise(spread().not_a_shard_key('poll', B, declared)) end
    sh = { n = declared, i = i }
  end
  if maxvotes ~= nil and mode ~= 'MULTI' then fail('ERR poll: MAXVOTES needs MODE MULTI') end
  if mode == 'MULTI' and cands then
    for _, c in ipairs(cands) do
      if string.find(c, ':', 1, true) then fail("ERR poll: candidate must not contain ':' in MODE MULTI") end
    end
    for _, c in ipairs(cands) do
      if not valid_utf8(c) then fail('ERR poll: candidate must be valid UTF-8 in MODE MULTI') end
    end
  end
  if start ~= 0 and stop ~= 0 and start >= stop then fail('ERR poll: START must be before END') end
  if now == nil then now = clock() end

  local meta, board, voted = B .. ':meta', B .. ':board', B .. ':voted'
  local e1 = check(meta, 'hash')
  local e2 = check(board, 'zset')
  local e3 = check(voted, 'hash')
  if mode == 'MULTI' then maxvotes = maxvotes or 3 else maxvotes = 1 end
  if sh and e1 then
    -- Creating a shard again with the same rules and count is harmless (a
    -- creation that failed half way is run again): OK, nothing changes,
    -- the first expiry included.
    local v = redis.call('HMGET', meta, 'spread', 'shard')
    local rec, re = spread().parse_record('poll', B, v[1], v[2])
    raise(re)
    if rec == nil then fail('ERR poll: poll already exists') end
    if rec.n ~= sh.n or rec.i ~= sh.i then
      local _, e = spread().resolve('poll', B, sh.n, rec)
      raise(e)
    end
    local have = read_rules(meta)
    local same = have.mode == mode and have.maxvotes == maxvotes and have.start == start
      and have.stop == stop and have.tz == tz and have.closed == (cands ~= nil)
    if same and cands then
      local distinct, count = {}, 0
      for _, c in ipairs(cands) do
        if not distinct[c] then
          distinct[c] = true
          count = count + 1
        end
      end
      same = redis.call('ZCARD', board) == count
      if same then
        for c in pairs(distinct) do
          if not redis.call('ZSCORE', board, c) then
            same = false
            break
          end
        end
      end
    end
    if same then return redis.status_reply('OK') end
    fail('ERR poll: poll already exists')
  end
  if e1 or e2 or e3 then fail('ERR poll: poll already exists') end
  if sh == nil then
    -- A single-slot poll must not shadow a spread one.
    refuse_base(B, nil, false)
  elseif sh.i == 0 then
    -- Shard 0 shares its base key's slot: a single-slot poll under the
    -- base (in that slot when it has a hash tag, or on a standalone
    -- server) must not be shadowed by a spread one.
    local _, b = spread().split_shard_key(B)
    b = b or B
    if (spread().has_hash_tag(b) or not spread().cluster_enabled()) and poll_found(b) then
      fail("ERR poll: '" .. key_text(b) .. "' is a single-slot poll already")
    end
  end
  local expires = 0
  if ttl > 0 then expires = now + ttl * 1000 end
  -- Born expired (NOW + TTL already past): like SET with a past PXAT,
  -- nothing is kept.
  if expires > 0 and expires <= clock() then return redis.status_reply('OK') end
  -- `rules` first: every vote reads it, and a small hash is searched from
  -- its first field.
  redis.call('HSET', meta,
    'rules', table.concat({ mode, fmt(maxvotes), fmt(start), fmt(stop), fmt(tz), cands and '1' or '0', fmt(expires) }, ' '),
    'mode', mode, 'maxvotes', fmt(maxvotes), 'start', fmt(start),
    'end', fmt(stop), 'tz', fmt(tz), 'closed', cands and '1' or '0', 'expires', fmt(expires))
  if sh then redis.call('HSET', meta, 'spread', fmt(sh.n), 'shard', fmt(sh.i)) end
  if cands then
    local args = {}
    for _, c in ipairs(cands) do
      args[#args + 1] = '0'
      args[#args + 1] = c
      if #args >= 400 then
        redis.call('ZADD', board, 'NX', unpack(args))
        args = {}
      end
    end
    if #args > 0 then redis.call('ZADD', board, 'NX', unpack(args)) end
  end
  expire_at_if_unset(meta, expires)
  expire_at_if_unset(board, expires)
  return redis.status_reply('OK')
end
local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' and res.hp then return redis.error_reply(res.hp) end
error(res, 0)

