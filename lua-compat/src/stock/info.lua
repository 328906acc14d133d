-- STOCK.INFO key [SPREAD n]
-- KEYS[1] = B (or K_i, a shard of a spread stock); ARGV = [SPREAD n].
-- Reply: {total, n, available, n, reserved, n, sold, n, limit, n, lease_ms,
-- n, orders, n}, or {} for an unknown stock (the module's RESP3 map is an
-- array here: a script's reply has no map).
-- Same replies, errors and stored data as the module (lua-compat/docs/stock.md).
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
local declared, de = only_spread(ARGV, 1)
if de then return de end
local t = redis.call('TYPE', B).ok
if t ~= 'none' and t ~= 'string' then return redis.error_reply(WRONGTYPE) end
local s = nil
if t == 'string' then s = parse_stock(redis.call('GET', B)) end
if declared or t == 'string' then
  local sh, se = spread_of(B, declared, true, s, nil)
  if sh == nil then return se end
end
if t == 'none' then return {} end
if not s then return corrupt(B) end
local ot = redis.call('TYPE', B .. ':orders').ok
if ot ~= 'none' and ot ~= 'hash' then return redis.error_reply(WRONGTYPE) end
local n = redis.call('HLEN', B .. ':orders')
return {'total', s.total, 'available', s.available, 'reserved', s.reserved, 'sold', s.sold,
  'limit', s.limit, 'lease_ms', s.lease, 'orders', n}
