-- STOCK.CONFIRM key order [NOW unix-ms] [SPREAD n]
-- KEYS[1] = B (or K_u, the user's shard of a spread stock); ARGV = order
-- [NOW unix-ms] [SPREAD n].
-- Reply: 1 when the reservation became a sale, 0 when the order was
-- already confirmed.
-- Same replies, errors and stored data as the module (lua-compat/docs/stock.md).
--@ keys 1

local B = KEYS[1]
if #ARGV < 1 then
  return redis.error_reply("ERR wrong number of arguments for 'stock.confirm' command")
end
local order = ARGV[1]
local now, declared, err = parse_now_spread(ARGV, 2)
if now == nil then return err end
if order == '' then return fail('order must not be empty') end
local head, he = open_head(B, declared)
if not head then return he end
now = now or clock_ms()
local e = check_ledger(B)
if e then return e end
local o, oe = get_order(B, order)
if o == nil then return oe end
if not o then return fail('no such order') end
if o.state == 'S' then return 0 end
if o.state == 'X' then return fail('order released') end
if o.state == 'E' or now >= o.lease_end then return fail('lease expired') end
local score = redis.call('ZSCORE', B .. ':leases', order)
if not score or tonumber(score) ~= o.lease_end then return corrupt(B .. ':orders', order) end
local list, le = lapsed(B, now)
if not list then return le end
local s = copy_stock(head)
local h = new_helds(B)
local ok, pe = plan_returns(B, s, list, h)
if not ok then return pe end
if s.reserved < o.qty then return corrupt(B) end
s.reserved = s.reserved - o.qty
s.sold = s.sold + o.qty
write_returns(B, list)
held_write(h)
redis.call('HSET', B .. ':orders', order, format_order(o, 'S'))
redis.call('ZREM', B .. ':leases', order)
write_stock(B, s)
return 1
