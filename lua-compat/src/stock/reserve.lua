-- STOCK.RESERVE key user order quantity [NOW unix-ms] [SPREAD n] [IDEM token]
-- KEYS[1] = B (or K_u, the user's shard of a spread stock); ARGV = user
-- order quantity [NOW unix-ms] [SPREAD n], exactly as the command.
-- Reply: {status, left, lease-end}: {'OK', left, lease-end},
-- {'SOLDOUT', available, 0} or {'LIMIT', available, 0}; a known order gets
-- its first reply again. A shard not marked dry answers {'REFILL',
-- available, 0} where a single-slot stock answers SOLDOUT.
-- Same replies, errors and stored data as the module (lua-compat/docs/stock.md).
--@ keys 1
--@ idem -5

local B = KEYS[1]
if #ARGV < 3 then
  return redis.error_reply("ERR wrong number of arguments for 'stock.reserve' command")
end
local user, order = ARGV[1], ARGV[2]
local qty = arg_int(ARGV[3], 1, MAX_INT)
if not qty then return redis.error_reply(NOTINT) end
local now, declared, err = parse_now_spread(ARGV, 4)
if now == nil then return err end
if user == '' then return fail('user must not be empty') end
if order == '' then return fail('order must not be empty') end
local t = redis.call('TYPE', B).ok
if t ~= 'none' and t ~= 'string' then return redis.error_reply(WRONGTYPE) end
local found = t == 'string'
local raw = found and redis.call('GET', B)
-- A key that may be a shard: its record (and mark) read now, once; a
-- sold-out shard answers from its mark alone. A single-slot stock reads
-- its record after the sold-out fast path.
local head = nil
if declared ~= nil or looks_like_shard(B) then
  if found and finished(raw) then
    local m = read_mark(raw)
    if m then
      local ms, me = marked(B, declared, m, user)
      if not ms then return me end
      return soldout(ms, 0)
    end
  end
  if found then head = parse_stock(raw) end
end
local sh, se = spread_of(B, declared, found, head, user)
if sh == nil then return se end
if not found then return fail('no such stock') end
if finished(raw) then return soldout(sh, 0) end
head = head or parse_stock(raw)
if not head then return corrupt(B) end
now = now or clock_ms()
local e = check_ledger(B)
if e then return e end
local known, oe = get_order(B, order)
if known == nil then return oe end
if known then
  if known.user ~= user or known.qty ~= qty then
    return fail('order exists with another user or quantity')
  end
  return {'OK', known.left, known.lease_end}
end
local list, le = lapsed(B, now)
if not list then return le end
local s = copy_stock(head)
local h = new_helds(B)
local ok, pe = plan_returns(B, s, list, h)
if not ok then return pe end
-- The buyer's count: from the plan when a lapsed lease of theirs is being
-- returned, else read from B:users (and written there, as the module does,
-- before the plan's counts: the order decides whether B:users is emptied
-- and made again, which keeps or drops its expiry).
local planned = h.at[user] ~= nil
local held
if planned then
  held = h.list[h.at[user]][2]
else
  held = 0
  local v = redis.call('HGET', B .. ':users', user)
  if v then
    held = parse_held(v)
    if not held then return corrupt(B .. ':users', user) end
  end
end
-- SOLDOUT comes before LIMIT.
local status, left, lease_end = 'OK', 0, 0
if s.available < qty then
  status, left = 'SOLDOUT', s.available
elseif s.limit > 0 and held + qty > s.limit then
  status, left = 'LIMIT', s.available
else
  s.available = s.available - qty
  s.reserved = s.reserved + qty
  left, lease_end = s.available, now + s.lease
end
write_returns(B, list)
if status == 'OK' then
  if planned then
    held_set(h, user, held + qty)
  else
    redis.call('HSET', B .. ':users', user, fmt(held + qty))
  end
  local o = {qty = qty, lease_end = lease_end, left = left, user = user}
  redis.call('HSET', B .. ':orders', order, format_order(o, 'R'))
  redis.call('ZADD', B .. ':leases', fmt(lease_end), order)
end
held_write(h)
if not same_stock(s, head) then
  write_stock(B, s)
end
-- A lapsed lease returned and a new one of the same quantity leave the
-- counts as they were, yet the ledger changed (and B:leases was emptied
-- and made again): give its keys the stock's expiry all the same.
if not same_stock(s, head) or #list > 0 or status == 'OK' then
  expire_ledger(B, s.expires)
end
if status == 'SOLDOUT' then return soldout(sh, left) end
return {status, left, lease_end}
