-- STOCK.RELEASE key order [SPREAD n]
-- KEYS[1] = B (or K_u, the user's shard of a spread stock); ARGV = order
-- [SPREAD n].
-- Reply: 1 when the order's units went back, 0 when there is nothing to
-- give back (unknown, released, or returned at its lease's end).
-- Same replies, errors and stored data as the module (lua-compat/docs/stock.md).
--@ keys 1
--@ flags allow-oom

local B = KEYS[1]
if #ARGV < 1 then
  return redis.error_reply("ERR wrong number of arguments for 'stock.release' command")
end
local declared, de = only_spread(ARGV, 2)
if de then return de end
local order = ARGV[1]
if order == '' then return fail('order must not be empty') end
local head, he = open_head(B, declared)
if not head then return he end
local e = check_ledger(B)
if e then return e end
local o, oe = get_order(B, order)
if o == nil then return oe end
if not o then return 0 end
if o.state == 'S' then return fail('order is confirmed') end
if o.state ~= 'R' then return 0 end
local s = copy_stock(head)
if s.reserved < o.qty then return corrupt(B) end
s.reserved = s.reserved - o.qty
s.available = s.available + o.qty
local h = new_helds(B)
local ok, te = held_take(h, o.user, o.qty)
if not ok then return te end
held_write(h)
redis.call('HSET', B .. ':orders', order, format_order(o, 'X'))
redis.call('ZREM', B .. ':leases', order)
write_stock(B, s)
return 1
