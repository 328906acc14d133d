-- POLL.CREATE key [MODE ONCE|DAILY|MULTI] [MAXVOTES maxvotes] [CANDIDATES count candidate [candidate ...]] [START unix-ms] [END unix-ms] [TZ minutes] [TTL seconds] [NOW unix-ms]
-- hotpath Lua twin of POLL.CREATE
-- Usage:  EVALSHA <sha> 1 B [MODE ONCE|DAILY|MULTI] [MAXVOTES n]
-- [CANDIDATES n c1 ... cn] [START unix-ms]
-- [END unix-ms] [TZ minutes] [TTL seconds]
-- [NOW unix-ms]
-- KEYS[1] = B, the poll's base key.
-- ARGV    = the arguments of POLL.CREATE after B, verbatim.
-- Returns OK, or the same error as the module.
-- Writes  B:meta (mode maxvotes start end tz closed expires) and, with
-- CANDIDATES, B:board (every candidate at 0); with TTL both get
-- PEXPIREAT <expires>.
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
  local mode, maxvotes, cands, now = 'ONCE', nil, nil, nil
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
    else
      syntax()
    end
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
  if e1 or e2 or e3 then fail('ERR poll: poll already exists') end
  if mode == 'MULTI' then maxvotes = maxvotes or 3 else maxvotes = 1 end
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

