--[[ hotpath Lua twin of POLL.RANK

Usage:  EVALSHA <sha> 1 B candidate
KEYS[1] = B, the poll's base key.
ARGV    = the arguments of POLL.RANK after B, verbatim.
Returns [rank, votes] (rank 0-based as in ZREVRANK), or nil for a
        candidate not on the board. Read-only.
]]

local B = KEYS[1]

local function fail(msg) error({ hp = msg }, 0) end
local function arity() fail("ERR wrong number of arguments for 'poll.rank' command") end

local function check(k, want)
  local t = redis.call('TYPE', k).ok
  if t == 'none' then return false end
  if t ~= want then fail('WRONGTYPE Operation against a key holding the wrong kind of value') end
  return true
end

local function main()
  if #KEYS ~= 1 or #ARGV ~= 1 then arity() end
  local board = B .. ':board'
  check(board, 'zset')
  local score = redis.call('ZSCORE', board, ARGV[1])
  if not score then return false end
  local rank = redis.call('ZREVRANK', board, ARGV[1])
  if type(rank) ~= 'number' then return false end
  return { rank, tonumber(score) }
end

local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' and res.hp then return redis.error_reply(res.hp) end
error(res, 0)
