-- POLL.STATUS key user [NOW unix-ms] [SPREAD n]
-- hotpath Lua twin of POLL.STATUS
-- Usage:  EVALSHA <sha> 1 B user [NOW unix-ms] [SPREAD n]
-- KEYS[1] = B, the poll's base key.
-- ARGV    = the arguments of POLL.STATUS after B, verbatim.
-- Returns the candidates this user has votes for, as an array (DAILY: the
-- day given by NOW, default today). Read-only.
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
local function arity() fail("ERR wrong number of arguments for 'poll.status' command") end
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
  local now, declared = trailing_now_spread()
  local meta, voted = B .. ':meta', B .. ':voted'
  local has_meta = check(meta, 'hash')
  local sh = poll_spread(B, declared, user)
  local has_voted = check(voted, 'hash')
  if not has_meta and not has_voted then refuse_base(B, sh, poll_found(B)) end
  local r = read_rules(meta)
  if r.mode ~= 'MULTI' then
    local field = user
    if r.mode == 'DAILY' then field = user .. ':' .. fmt(day_of(now, r.tz)) end
    local v = redis.call('HGET', voted, field)
    if not v then return {} end
    return { ballot_candidate(voted, field, v) }
  end
  local uvk = B .. ':uservotes'
  check(uvk, 'hash')
  return parse_list(uvk, user)
end
local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' and res.hp then return redis.error_reply(res.hp) end
error(res, 0)

