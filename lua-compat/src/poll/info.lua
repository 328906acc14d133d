-- POLL.INFO key
-- hotpath Lua twin of POLL.INFO
-- Usage:  EVALSHA <sha> 1 B
-- KEYS[1] = B, the poll's base key.
-- ARGV    = none (POLL.INFO takes nothing after B).
-- Returns the map [mode, <m>, maxvotes, <n>, start, <ms>, end, <ms>,
-- ballots, <fields of B:voted>, votes, <the same: one vote per ballot>].
-- Read-only.
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
local function arity() fail("ERR wrong number of arguments for 'poll.info' command") end
local function main()
  if #KEYS ~= 1 or #ARGV ~= 0 then arity() end
  local meta, voted, board = B .. ':meta', B .. ':voted', B .. ':board'
  check(meta, 'hash')
  check(voted, 'hash')
  check(board, 'zset')
  local r = read_rules(meta)
  -- Every counted vote is one ballot and one point on the board: the
  -- board's total is the number of ballots (O(1), like the module).
  local ballots = redis.call('HLEN', voted)
  return { 'mode', r.mode, 'maxvotes', r.maxvotes, 'start', r.start, 'end', r.stop,
    'ballots', ballots, 'votes', ballots }
end
local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' and res.hp then return redis.error_reply(res.hp) end
error(res, 0)

