-- STOCK.TRANSFER key transfer shard delta SPREAD n
-- KEYS[1] = K_0, shard 0 of a spread stock (it holds the pool); ARGV =
-- transfer shard delta SPREAD n.
-- Reply: {status, units, free, open}: a new refill takes up to delta units
-- off the pool's free units into transit ('OPEN', the units granted); a
-- pool with nothing free answers 'DRY' and records nothing; a handback
-- (delta < 0) records only the intent. A known id answers its record
-- ('OPEN' or 'CLOSED') and changes nothing.
-- Same replies, errors and stored data as the module (lua-compat/docs/stock.md).
--@ keys 1

local K = KEYS[1]
if #ARGV ~= 5 then
  return redis.error_reply("ERR wrong number of arguments for 'stock.transfer' command")
end
local id = ARGV[1]
local shard = arg_int(ARGV[2], 0, 1023)
if not shard then return redis.error_reply(NOTINT) end
local delta = arg_int(ARGV[3], -MAX_INT, MAX_INT)
if not delta then return redis.error_reply(NOTINT) end
local n, ne = required_spread(ARGV, 4)
if not n then return ne end
if id == '' then return fail('transfer must not be empty') end
if delta == 0 then return fail('delta must not be 0') end
if shard >= n then return fail('shard must be from 0 to ' .. fmt(n - 1)) end
local head, sh = open_head(K, n)
if not head then return sh end
local pe = require_pool_shard(K, sh, n)
if pe then return pe end
local before, oe = open_pool(K)
if not before then return oe end
local known, te = get_transfer(K, id)
if known == nil then return te end
local dir, asked = 'R', delta
if delta < 0 then dir, asked = 'H', -delta end
local open_count = function() return redis.call('ZCARD', K .. ':open') end
if known then
  if known.shard ~= shard or known.dir ~= dir or known.asked ~= asked then
    return fail('transfer exists with another shard or quantity')
  end
  return {known.open and 'OPEN' or 'CLOSED', known.units, before.free, open_count()}
end
local pool = {free = before.free, transit = before.transit, total = before.total, expires = before.expires}
local t = {open = true, dir = dir, shard = shard, asked = asked, units = 0}
if dir == 'R' then
  local g = math.min(asked, pool.free)
  if g == 0 then return {'DRY', 0, pool.free, open_count()} end
  pool.free = pool.free - g
  pool.transit = pool.transit + g
  t.units = g
end
write_transfer(K, id, t, pool, before)
return {'OPEN', t.units, pool.free, open_count()}
