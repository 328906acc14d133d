-- POLL.SYNCACK key epoch [SPREAD n]
-- hotpath Lua twin of POLL.SYNCACK
-- Usage:  EVALSHA <sha> 1 B epoch [SPREAD n]
-- KEYS[1] = B, the poll's base key.
-- ARGV    = the arguments of POLL.SYNCACK after B, verbatim (the epoch,
-- then [SPREAD n]).
-- Returns 1 when epoch is the pending one (that frozen snapshot becomes the
-- new base: RENAME B:syncing B:synced), 0 for a stale or unknown
-- epoch.
--@ keys 1

local B = KEYS[1]
local function arity() fail("ERR wrong number of arguments for 'poll.syncack' command") end
local function main()
  if #KEYS ~= 1 or #ARGV < 1 then arity() end
  local declared = only_spread(ARGV, 1, arity)
  local epoch = ARGV[1]
  if parse_int(epoch) == nil then fail('ERR value is not an integer or out of range') end
  local meta, synced, syncing = B .. ':meta', B .. ':synced', B .. ':syncing'
  local has_meta = check(meta, 'hash')
  check(synced, 'zset')
  check(syncing, 'zset')
  local sh = poll_spread(B, declared, nil)
  if not has_meta then refuse_base(B, sh, poll_found(B)) end
  -- Valid integers have one spelling, so comparing the strings compares
  -- them as 64-bit integers exactly.
  local pending = redis.call('HGET', meta, 'pending')
  if pending and ((parse_int(pending) or -1) < 0) then corrupt(meta, 'pending') end
  if (parse_int(pending) or 0) == 0 or pending ~= epoch then return 0 end
  redis.call('HSET', meta, 'pending', '0')
  redis.call('UNLINK', synced)
  if redis.call('EXISTS', syncing) == 1 then redis.call('RENAME', syncing, synced) end
  return 1
end
local ok, res = pcall(main)
if ok then return res end
if type(res) == 'table' and res.hp then return redis.error_reply(res.hp) end
error(res, 0)

