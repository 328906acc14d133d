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

-- ERR poll: corrupt data in '<key>' field '<field>': a value the module
-- never writes (control characters shown as '?', as the module does).
local function corrupt(key, field)
  local function text(s) return (string.gsub(s, '[%z\1-\31\127]', '?')) end
  fail("ERR poll: corrupt data in '" .. text(key) .. "' field '" .. text(field) .. "'")
end

local function main()
  if #KEYS ~= 1 or #ARGV ~= 1 then arity() end
  if ARGV[1] == '' then fail('ERR poll: candidate must not be empty') end
  local board = B .. ':board'
  check(board, 'zset')
  local score = redis.call('ZSCORE', board, ARGV[1])
  if not score then return false end
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
