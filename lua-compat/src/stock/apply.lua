-- STOCK.APPLY key transfer delta SPREAD n
-- KEYS[1] = K_i, the transfer's shard of a spread stock; ARGV = transfer
-- delta SPREAD n.
-- Reply: {applied, available}: a refill (delta > 0) adds its units to the
-- shard; a handback (delta < 0) takes up to -delta available units off;
-- once per id (the same id again answers what it applied and changes
-- nothing). Delta 0 marks the shard dry in its record (its REFILL becomes
-- SOLDOUT) and replies {0, available}; a refill applied later clears the
-- mark.
-- Same replies, errors and stored data as the module (lua-compat/docs/stock.md).
--@ keys 1

local K = KEYS[1]
if #ARGV ~= 4 then
  return redis.error_reply("ERR wrong number of arguments for 'stock.apply' command")
end
local id = ARGV[1]
local delta = arg_int(ARGV[2], -MAX_INT, MAX_INT)
if not delta then return redis.error_reply(NOTINT) end
local n, ne = required_spread(ARGV, 3)
if not n then return ne end
if id == '' then return fail('transfer must not be empty') end
local head, sh = open_head(K, n)
if not head then return sh end
local APPLIED = K .. ':applied'
local ta = redis.call('TYPE', APPLIED).ok
if ta ~= 'none' and ta ~= 'hash' then return redis.error_reply(WRONGTYPE) end
if delta == 0 then
  -- The dry notice: nothing moves; SOLDOUT becomes final here (the mark
  -- in the shard's record).
  if head.mark and not head.mark.dry then
    local s = copy_stock(head)
    s.mark.dry = true
    write_stock(K, s)
  end
  return {0, head.available}
end
local v = redis.call('HGET', APPLIED, id)
if v then
  local a = parse_applied(v)
  if not a then return corrupt(APPLIED, id) end
  -- A replay: the same sign and at most the size asked.
  local same
  if delta > 0 then same = a == delta else same = a <= 0 and -a <= -delta end
  if not same then return fail('transfer exists with another shard or quantity') end
  return {a, head.available}
end
local s = copy_stock(head)
local a
if delta > 0 then
  if s.total > MAX_INT - delta then return data_error('stock', 'integer overflow', K) end
  a = delta
else
  a = -math.min(-delta, s.available)
  if a == 0 then a = 0 end
end
s.available = s.available + a
s.total = s.total + a
-- Units came: the shard's SOLDOUT is no longer the SKU's.
if a > 0 and s.mark then s.mark.dry = false end
redis.call('HSET', APPLIED, id, fmt(a))
expire_if_unset(APPLIED, s.expires)
write_stock(K, s)
return {a, s.available}
