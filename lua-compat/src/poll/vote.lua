-- POLL.VOTE key user candidate [NOW unix-ms] [SPREAD n] [IDEM token]
-- hotpath Lua twin of POLL.VOTE
-- Usage:  EVALSHA <sha> 1 B user candidate [NOW unix-ms] [SPREAD n]
-- KEYS[1] = B, the poll's base key.
-- ARGV    = the arguments of POLL.VOTE after B, verbatim.
-- Returns 1 when the vote is counted, 0 when refused as a duplicate under
-- the poll's rule, or the same error as the module.
-- Writes  B:voted (dedup member -> "<candidate>:<unix-ms>"), B:board
-- (ZINCRBY 1) and, in MODE MULTI, B:uservotes (user -> JSON array);
-- keys it creates get PEXPIREAT at B:meta's `expires`.
--@ keys 1
--@ idem -4

local B = KEYS[1]
local function arity() fail("ERR wrong number of arguments for 'poll.vote' command") end
local pos = 1
local function done() return pos > #ARGV end
local function nxt()
  local a = ARGV[pos]
  if a == nil then arity() end
  pos = pos + 1
  return a
end
-- Trailing [NOW unix-ms] [SPREAD n], in either order (a master appends
-- NOW after SPREAD n when it replicates a call that read its clock).
local function trailing_now_spread()
  local now, declared = nil, nil
  while not done() do
    local kw = string.upper(nxt())
    if kw == 'NOW' then
      if done() then syntax() end
      now = int_in(nxt(), 0, MAX_TIME)
    elseif kw == 'SPREAD' then
      if done() then syntax() end
      declared = spread_n(nxt())
    else
      syntax()
    end
  end
  return now or clock(), declared
end
local function main()
  if #KEYS ~= 1 or #ARGV < 2 then arity() end
  local user = nxt()
  if user == '' then fail('ERR poll: user must not be empty') end
  local cand = nxt()
  if cand == '' then fail('ERR poll: candidate must not be empty') end
  local now, declared = trailing_now_spread()

  local meta, voted, board, uvk = B .. ':meta', B .. ':voted', B .. ':board', B .. ':uservotes'
  local has_meta = check(meta, 'hash')
  -- A shard of a spread poll takes only its own voters.
  local sh = poll_spread(B, declared, user)
  local has_voted = check(voted, 'hash')
  local has_board = check(board, 'zset')
  refuse_base(B, sh, has_meta or has_voted or has_board)
  local r = read_rules(meta)
  local multi = r.mode == 'MULTI'
  if multi then check(uvk, 'hash') end
  if not ((r.start == 0 or now >= r.start) and (r.stop == 0 or now < r.stop)) then
    fail('ERR poll: not open')
  end
  if r.closed and not redis.call('ZSCORE', board, cand) then fail('ERR poll: unknown candidate') end
  if multi and string.find(cand, ':', 1, true) then
    fail("ERR poll: candidate must not contain ':' in MODE MULTI")
  end
  if multi and not valid_utf8(cand) then
    fail('ERR poll: candidate must be valid UTF-8 in MODE MULTI')
  end
  local field = user
  if r.mode == 'DAILY' then
    field = user .. ':' .. fmt(day_of(now, r.tz))
  elseif multi then
    field = user .. ':' .. cand
  end
  local list
  if multi then
    list = parse_list(uvk, user)
    for _, c in ipairs(list) do
      if c == cand then return 0 end
    end
    if #list >= r.maxvotes then fail('ERR poll: vote limit reached') end
    list[#list + 1] = cand
  end
  local had_voted = redis.call('EXISTS', voted) == 1
  local had_board = redis.call('EXISTS', board) == 1
  if redis.call('HEXISTS', voted, field) == 1 then return 0 end
  -- A count at 2^53 - 1 takes no more votes: past it every read of the
  -- board would refuse it (the module's text; a duplicate is found first).
  local score = redis.call('ZSCORE', board, cand)
  if score and tonumber(score) + 1 > 9007199254740991 then
    local function text(s) return (string.gsub(s, '[%z\1-\31\127]', '?')) end
    fail("ERR poll: integer overflow in '" .. text(board) .. "' field '" .. text(cand) .. "'")
  end
  redis.call('HSETNX', voted, field, cand .. ':' .. fmt(now))
  redis.call('ZINCRBY', board, '1', cand)
  if multi then
    local had = redis.call('EXISTS', uvk) == 1
    redis.call('HSET', uvk, user, json_list(list))
    if not had then expire_at_if_unset(uvk, r.expires) end
  end
  if not had_voted then expire_at_if_unset(voted, r.expires) end
  if not had_board then expire_at_if_unset(board, r.expires) end
  return 1
end
local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' and res.hp then return redis.error_reply(res.hp) end
error(res, 0)

