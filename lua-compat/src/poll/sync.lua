-- POLL.SYNC key [SPREAD n]
-- hotpath Lua twin of POLL.SYNC
-- Usage:  EVALSHA <sha> 1 B [SPREAD n]
-- KEYS[1] = B, the poll's base key.
-- ARGV    = [SPREAD n].
-- Returns [epoch, candidate, delta, ...]: the change of every candidate's
-- count since the last acknowledged snapshot (B:synced), frozen in
-- B:syncing. Until POLL.SYNCACK, a retry returns the same epoch and
-- deltas.
-- Writes  on a new freeze: B:syncing (copy of B:board), B:meta `epoch` and
-- `pending`; PEXPIREAT at `expires` as the module does.
--@ keys 1

local B = KEYS[1]
local function arity() fail("ERR wrong number of arguments for 'poll.sync' command") end
local function main()
  if #KEYS ~= 1 then arity() end
  local declared = only_spread(ARGV, 0, arity)
  local meta, board = B .. ':meta', B .. ':board'
  local synced, syncing = B .. ':synced', B .. ':syncing'
  local has_meta = check(meta, 'hash')
  local has_board = check(board, 'zset')
  local has_synced = check(synced, 'zset')
  local has_syncing = check(syncing, 'zset')
  -- A shard of a spread poll writes back its own share (the client
  -- libraries merge the shards' deltas: docs/spread.md).
  local sh = poll_spread(B, declared, nil)
  local found = has_meta or has_board or has_synced or has_syncing
  refuse_base(B, sh, found or poll_found(B))
  local r = read_rules(meta)
  local epoch = meta_int(meta, 'pending')
  local last = meta_int(meta, 'epoch')
  if epoch == '0' then
    -- Freeze the board as the new snapshot.
    epoch = succ(last)
    if epoch == nil then fail("ERR poll: integer overflow in '" .. meta .. "' field 'epoch'") end
    -- As the module's freeze: the stale frozen snapshot goes first; then
    -- each candidate of the board, in the board's order, is checked, and
    -- its acknowledged count in B:synced with it, before anything else is
    -- written (a candidate that left the board is checked after the
    -- writes, by the loop below, as the module's last scan does).
    redis.call('UNLINK', syncing)
    local z = redis.call('ZRANGE', board, '0', '-1', 'WITHSCORES')
    for i = 1, #z, 2 do
      votes(board, z[i], z[i + 1])
      local acked = redis.call('ZSCORE', synced, z[i])
      if acked then votes(synced, z[i], acked) end
    end
    local args = {}
    for i = 1, #z, 2 do
      args[#args + 1] = z[i + 1]
      args[#args + 1] = z[i]
      if #args >= 400 or i + 2 > #z then
        redis.call('ZADD', syncing, unpack(args))
        args = {}
      end
    end
    local had_meta = redis.call('EXISTS', meta) == 1
    redis.call('HSET', meta, 'epoch', epoch, 'pending', epoch)
    if not had_meta then expire_at_if_unset(meta, r.expires) end
    expire_at_if_unset(syncing, r.expires)
  end
  -- The deltas in the frozen snapshot's order, then the candidates that
  -- left it (in the acknowledged one's order), checked as the module
  -- checks them.
  local out = { parse_int(epoch) }
  local frozen = redis.call('ZREVRANGE', syncing, '0', '-1', 'WITHSCORES')
  for i = 1, #frozen, 2 do
    local c = frozen[i]
    local d = votes(syncing, c, frozen[i + 1])
    local acked = redis.call('ZSCORE', synced, c)
    if acked then d = d - votes(synced, c, acked) end
    if d ~= 0 then
      out[#out + 1] = c
      out[#out + 1] = d
    end
  end
  local acked = redis.call('ZREVRANGE', synced, '0', '-1', 'WITHSCORES')
  for i = 1, #acked, 2 do
    local c = acked[i]
    local v = votes(synced, c, acked[i + 1])
    if not redis.call('ZSCORE', syncing, c) and v ~= 0 then
      out[#out + 1] = c
      out[#out + 1] = -v
    end
  end
  return out
end
local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' and res.hp then return redis.error_reply(res.hp) end
error(res, 0)

