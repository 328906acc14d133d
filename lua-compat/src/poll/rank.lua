-- POLL.RANK key candidate [SPREAD n]
-- hotpath Lua twin of POLL.RANK
-- Usage:  EVALSHA <sha> 1 B candidate [SPREAD n]
-- KEYS[1] = B, the poll's base key.
-- ARGV    = the arguments of POLL.RANK after B, verbatim.
-- Returns [rank, votes] (rank 0-based as in ZREVRANK), or nil for a
-- candidate not on the board. Read-only.
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
local function arity() fail("ERR wrong number of arguments for 'poll.rank' command") end
local function main()
  if #KEYS ~= 1 or #ARGV < 1 then arity() end
  local declared = only_spread(ARGV, 1, arity)
  if ARGV[1] == '' then fail('ERR poll: candidate must not be empty') end
  local sh = nil
  if declared ~= nil or looks_like_shard(B) then
    check(B .. ':meta', 'hash')
    sh = poll_spread(B, declared, nil)
  end
  local board = B .. ':board'
  local has_board = check(board, 'zset')
  local score = redis.call('ZSCORE', board, ARGV[1])
  if not score then
    if not has_board then refuse_base(B, sh, poll_found(B)) end
    return false
  end
  local n = tonumber(score)
  if n == nil or n ~= math.floor(n) or math.abs(n) > 9007199254740991 then corrupt(board, ARGV[1]) end
  local rank = redis.call('ZREVRANK', board, ARGV[1])
  if type(rank) ~= 'number' then return false end
  return { rank, n }
end
local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' and res.hp then return redis.error_reply(res.hp) end
error(res, 0)

