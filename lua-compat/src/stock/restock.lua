-- STOCK.RESTOCK key delta [NOW unix-ms] [SPREAD n] [IDEM token]
-- KEYS[1] = B (or K_i, a shard of a spread stock: delta 0 only); ARGV =
-- delta [NOW unix-ms] [SPREAD n].
-- Reply: the units available after the call (lapsed leases returned
-- first).
-- Same replies, errors and stored data as the module (lua-compat/docs/stock.md).
--@ keys 1
--@ idem -3

local B = KEYS[1]
if #ARGV < 1 then
  return redis.error_reply("ERR wrong number of arguments for 'stock.restock' command")
end
local delta = arg_int(ARGV[1], -MAX_INT, MAX_INT)
if not delta then return redis.error_reply(NOTINT) end
local now, declared, err = parse_now_spread(ARGV, 2)
if now == nil then return err end
local head, sh = open_head(B, declared)
if not head then return sh end
if sh and delta ~= 0 then
  return fail('a shard of a spread stock takes units only by transfers (RESTOCK 0 returns lapsed leases)')
end
now = now or clock_ms()
local e = check_ledger(B)
if e then return e end
local list, le = lapsed(B, now)
if not list then return le end
local s = copy_stock(head)
local h = new_helds(B)
local ok, pe = plan_returns(B, s, list, h)
if not ok then return pe end
if delta < 0 and s.available < -delta then return fail('not enough available units') end
if delta > 0 and s.total > MAX_INT - delta then return data_error('stock', 'integer overflow', B) end
s.available = s.available + delta
s.total = s.total + delta
write_returns(B, list)
held_write(h)
if not same_stock(s, head) then write_stock(B, s) end
return s.available
