-- POLL.INFO key [SPREAD n]
-- hotpath Lua twin of POLL.INFO
-- Usage:  EVALSHA <sha> 1 B [SPREAD n]
-- KEYS[1] = B, the poll's base key.
-- ARGV    = [SPREAD n].
-- Returns the map [mode, <m>, maxvotes, <n>, start, <ms>, end, <ms>,
-- ballots, <fields of B:voted>, votes, <the same: one vote per ballot>]; a
-- shard of a spread poll adds spread, <n>, shard, <i>, expires, <unix-ms>.
-- Read-only.
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
local function arity() fail("ERR wrong number of arguments for 'poll.info' command") end
local function main()
  if #KEYS ~= 1 then arity() end
  local declared = only_spread(ARGV, 0, arity)
  local meta, voted, board = B .. ':meta', B .. ':voted', B .. ':board'
  local has_meta = check(meta, 'hash')
  local has_voted = check(voted, 'hash')
  local has_board = check(board, 'zset')
  local sh = poll_spread(B, declared, nil)
  refuse_base(B, sh, has_meta or has_voted or has_board)
  local r = read_rules(meta)
  -- Every counted vote is one ballot and one point on the board: the
  -- board's total is the number of ballots (O(1), like the module).
  local ballots = redis.call('HLEN', voted)
  local out = { 'mode', r.mode, 'maxvotes', r.maxvotes, 'start', r.start, 'end', r.stop,
    'ballots', ballots, 'votes', ballots }
  -- A shard says which one it is, and its absolute expiry (0: none).
  if sh then
    for _, v in ipairs({ 'spread', sh.n, 'shard', sh.i, 'expires', r.expires }) do out[#out + 1] = v end
  end
  return out
end
local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' and res.hp then return redis.error_reply(res.hp) end
error(res, 0)

