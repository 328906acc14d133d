-- STOCK.POOL key SPREAD n
-- KEYS[1] = K_0, shard 0 of a spread stock (it holds the pool); ARGV =
-- SPREAD n.
-- Reply: {total, n, free, n, transit, n, open, n, pending, {transfer,
-- shard, delta, ...}}: the pool and up to 100 open transfers, each with
-- the delta its shard's APPLY takes (the module's RESP3 map is an array
-- here: a script's reply has no map).
-- Same replies, errors and stored data as the module (lua-compat/docs/stock.md).
--@ keys 1
--@ flags no-writes

local K = KEYS[1]
if #ARGV ~= 2 then
  return redis.error_reply("ERR wrong number of arguments for 'stock.pool' command")
end
local n, ne = required_spread(ARGV, 1)
if not n then return ne end
local head, sh = open_head(K, n)
if not head then return sh end
local pe = require_pool_shard(K, sh, n)
if pe then return pe end
local p, oe = open_pool(K)
if not p then return oe end
local pending = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', K .. ':open', '-inf', '+inf', 'LIMIT', 0, 100)) do
  local t, te = get_transfer(K, id)
  if t == nil then return te end
  if not t or not t.open then return corrupt(K .. ':open', id) end
  local d = t.units
  if t.dir == 'H' then d = -t.asked end
  table.insert(pending, id)
  table.insert(pending, t.shard)
  table.insert(pending, d)
end
return {'total', p.total, 'free', p.free, 'transit', p.transit, 'open', redis.call('ZCARD', K .. ':open'),
  'pending', pending}
