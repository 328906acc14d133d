-- POLL.TOP key [count] [OFFSET offset] [SPREAD n]
-- hotpath Lua twin of POLL.TOP
-- Usage:  EVALSHA <sha> 1 B [count] [OFFSET o] [SPREAD n]
-- KEYS[1] = B, the poll's base key.
-- ARGV    = the arguments of POLL.TOP after B, verbatim.
-- Returns [candidate, votes, ...], most votes first (ZREVRANGE order);
-- count defaults to 10. Read-only.
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
local function arity() fail("ERR wrong number of arguments for 'poll.top' command") end
local pos = 1
local function done() return pos > #ARGV end
local function nxt()
  local a = ARGV[pos]
  if a == nil then arity() end
  pos = pos + 1
  return a
end
local function main()
  if #KEYS ~= 1 then arity() end
  local count, offset, first, declared = 10, 0, true, nil
  while not done() do
    local a = nxt()
    if string.upper(a) == 'OFFSET' then
      if done() then syntax() end
      offset = int_in(nxt(), 0, math.huge)
    elseif string.upper(a) == 'SPREAD' then
      if done() then syntax() end
      declared = spread_n(nxt())
    elseif first then
      count = int_in(a, 0, math.huge)
    else
      syntax()
    end
    first = false
  end
  -- count is bounded so that no call sends a whole board (poll-range-max).
  if count > RANGE_MAX then fail('ERR poll: count must be at most ' .. RANGE_MAX .. ' (poll-range-max)') end
  local sh = nil
  if declared ~= nil or looks_like_shard(B) then
    check(B .. ':meta', 'hash')
    sh = poll_spread(B, declared, nil)
  end
  local board = B .. ':board'
  if not check(board, 'zset') and sh == nil then refuse_base(B, sh, poll_found(B)) end
  local out = {}
  if count == 0 or offset >= redis.call('ZCARD', board) then return out end
  local z = redis.call('ZREVRANGE', board, fmt(offset), fmt(offset + count - 1), 'WITHSCORES')
  for i = 1, #z, 2 do
    local n = tonumber(z[i + 1])
    if n == nil or n ~= math.floor(n) or math.abs(n) > 9007199254740991 then corrupt(board, z[i]) end
    out[#out + 1] = z[i]
    out[#out + 1] = n
  end
  return out
end
local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' and res.hp then return redis.error_reply(res.hp) end
error(res, 0)

