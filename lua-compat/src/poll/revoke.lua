-- POLL.REVOKE key user [candidate] [NOW unix-ms] [SPREAD n] [IDEM token]
-- hotpath Lua twin of POLL.REVOKE
-- Usage:  EVALSHA <sha> 1 B user [candidate] [NOW unix-ms] [SPREAD n]
-- KEYS[1] = B, the poll's base key.
-- ARGV    = the arguments of POLL.REVOKE after B, verbatim.
-- Returns the number of votes taken back, or the same error as the module.
-- ONCE/MULTI: all the user's ballots, or only the named candidate's;
-- DAILY: the user's ballot of the day given by NOW.
-- Writes  HDEL on B:voted (and B:uservotes in MODE MULTI), ZINCRBY -1 on
-- B:board for every candidate still on the board.
--@ keys 1
--@ flags allow-oom
--@ idem -3

local B = KEYS[1]
local function arity() fail("ERR wrong number of arguments for 'poll.revoke' command") end
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
  if #KEYS ~= 1 or #ARGV < 1 then arity() end
  local user = nxt()
  if user == '' then fail('ERR poll: user must not be empty') end
  -- The options come in pairs: an odd count starts with the candidate.
  local only = nil
  if (#ARGV - 1) % 2 == 1 then
    only = nxt()
    if only == '' then fail('ERR poll: candidate must not be empty') end
  end
  local now, declared = trailing_now_spread()

  local meta, voted, board, uvk = B .. ':meta', B .. ':voted', B .. ':board', B .. ':uservotes'
  local has_meta = check(meta, 'hash')
  local sh = poll_spread(B, declared, user)
  local has_voted = check(voted, 'hash')
  local has_board = check(board, 'zset')
  refuse_base(B, sh, has_meta or has_voted or has_board)
  local r = read_rules(meta)
  local taken = {}
  if r.mode ~= 'MULTI' then
    local field = user
    if r.mode == 'DAILY' then field = user .. ':' .. fmt(day_of(now, r.tz)) end
    local v = redis.call('HGET', voted, field)
    if v then
      local cand = ballot_candidate(voted, field, v)
      if only == nil or only == cand then
        redis.call('HDEL', voted, field)
        taken[#taken + 1] = cand
      end
    end
  else
    check(uvk, 'hash')
    local list = parse_list(uvk, user)
    local kept = {}
    for _, cand in ipairs(list) do
      if only == nil or only == cand then
        redis.call('HDEL', voted, user .. ':' .. cand)
        taken[#taken + 1] = cand
      else
        kept[#kept + 1] = cand
      end
    end
    if #taken > 0 then
      if #kept == 0 then
        redis.call('HDEL', uvk, user)
      else
        redis.call('HSET', uvk, user, json_list(kept))
      end
    end
  end
  for _, cand in ipairs(taken) do
    if redis.call('ZSCORE', board, cand) then redis.call('ZINCRBY', board, '-1', cand) end
  end
  return #taken
end
local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' and res.hp then return redis.error_reply(res.hp) end
error(res, 0)

