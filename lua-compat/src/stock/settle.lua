-- STOCK.SETTLE key transfer delta SPREAD n
-- KEYS[1] = K_0, shard 0 of a spread stock (it holds the pool); ARGV =
-- transfer applied SPREAD n (applied: the signed units APPLY replied).
-- Reply: 1 when the open transfer was settled (a refill's units leave
-- transit, a handback's enter the pool's free units), 0 when it was
-- settled before.
-- Same replies, errors and stored data as the module (lua-compat/docs/stock.md).
--@ keys 1

local K = KEYS[1]
if #ARGV ~= 4 then
  return redis.error_reply("ERR wrong number of arguments for 'stock.settle' command")
end
local id = ARGV[1]
local applied = arg_int(ARGV[2], -MAX_INT, MAX_INT)
if not applied then return redis.error_reply(NOTINT) end
local n, ne = required_spread(ARGV, 3)
if not n then return ne end
if id == '' then return fail('transfer must not be empty') end
local head, sh = open_head(K, n)
if not head then return sh end
local pe = require_pool_shard(K, sh, n)
if pe then return pe end
local before, oe = open_pool(K)
if not before then return oe end
local t, te = get_transfer(K, id)
if t == nil then return te end
if not t then return fail('no such transfer') end
if not t.open then return 0 end
local pool = {free = before.free, transit = before.transit, total = before.total, expires = before.expires}
if t.dir == 'R' then
  if applied ~= t.units or pool.transit < t.units then return fail('units do not match the transfer') end
  pool.transit = pool.transit - t.units
else
  if applied > 0 or -applied > t.asked or pool.free - applied > pool.total then
    return fail('units do not match the transfer')
  end
  t.units = -applied
  pool.free = pool.free + t.units
end
t.open = false
write_transfer(K, id, t, pool, before)
return 1
