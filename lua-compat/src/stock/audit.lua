-- STOCK.AUDIT key cursor [COUNT count] [SPREAD n]
-- KEYS[1] = B (or K_i, a shard of a spread stock); ARGV = cursor
-- [COUNT count] [SPREAD n].
-- Reply: {next-cursor, checked, problem...}: the conservation law, then one
-- HSCAN step of B:orders (and the ledger's sums when the whole ledger was
-- read in one call).
-- Same replies, errors and stored data as the module (lua-compat/docs/stock.md).
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
if #ARGV < 1 then
  return redis.error_reply("ERR wrong number of arguments for 'stock.audit' command")
end
local cursor = ARGV[1]
-- An HSCAN cursor: decimal digits of a value in the u64 range.
if not string.match(cursor, '^%d+$') then return redis.error_reply(NOTINT) end
local digits = string.gsub(cursor, '^0+', '')
if #digits > 20 or (#digits == 20 and digits > '18446744073709551615') then
  return redis.error_reply(NOTINT)
end
local count, declared = DEFAULT_AUDIT_COUNT, nil
local i = 2
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  if kw == 'COUNT' then
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    count = arg_int(ARGV[i + 1], 1, MAX_AUDIT_COUNT)
    if not count then return redis.error_reply(NOTINT) end
  elseif kw == 'SPREAD' then
    local n, e = spread_value(ARGV, i + 1)
    if e then return e end
    declared = n
  else
    return redis.error_reply(SYNTAX)
  end
  i = i + 2
end
local s, he = open_head(B, declared)
if not s then return he end
local e = check_ledger(B)
if e then return e end
local problems = {}
-- A record the parser accepts satisfies the law; the checks stay explicit
-- so that the audit says which part failed.
if s.available < 0 or s.reserved < 0 or s.sold < 0 then
  table.insert(problems, 'counts: negative')
end
if s.available + s.reserved + s.sold ~= s.total then
  table.insert(problems, 'counts: available + reserved + sold != total')
end
-- Sums of quantities, exact past 2^53 (hand-edited records can hold
-- quantities up to 2^53 - 1 each, and the module sums them in 64 bits):
-- {hi, lo} = hi * 10^8 + lo, 0 <= lo < 10^8.
local BASE = 100000000
local function sum_add(a, q)
  a[2] = a[2] + q % BASE
  a[1] = a[1] + math.floor(q / BASE)
  if a[2] >= BASE then a[1], a[2] = a[1] + 1, a[2] - BASE end
end
local function sum_is(a, n) return a[1] == math.floor(n / BASE) and a[2] == n % BASE end
local function sum_text(a)
  if a[1] == 0 then return fmt(a[2]) end
  return fmt(a[1]) .. string.format('%08d', a[2])
end
local step = redis.call('HSCAN', B .. ':orders', cursor, 'COUNT', fmt(count))
local cursor_next, items = step[1], step[2]
local whole = cursor == '0' and cursor_next == '0'
local checked, reserved, sold, live = 0, {0, 0}, {0, 0}, 0
local per_user, users = {}, {}
local function touch(u, q)
  if per_user[u] == nil then
    per_user[u] = {0, 0}
    table.insert(users, u)
  end
  sum_add(per_user[u], q)
end
for k = 1, #items, 2 do
  local id, rec = items[k], items[k + 1]
  checked = checked + 1
  local lease = redis.call('ZSCORE', B .. ':leases', id)
  local o = parse_order(rec)
  if not o then
    table.insert(problems, "order '" .. key_text(id) .. "': corrupt record")
  elseif o.state == 'R' then
    sum_add(reserved, o.qty)
    live = live + 1
    touch(o.user, o.qty)
    if not lease or tonumber(lease) ~= o.lease_end then
      table.insert(problems, "order '" .. key_text(id) .. "': reserved without its lease")
    end
  else
    if o.state == 'S' then
      sum_add(sold, o.qty)
      touch(o.user, o.qty)
    else
      touch(o.user, 0)
    end
    if lease then
      table.insert(problems, "order '" .. key_text(id) .. "': lease on an order not reserved")
    end
  end
end
-- Users of the orders checked: the limit.
table.sort(users, bytes_less)
for _, u in ipairs(users) do
  local v = redis.call('HGET', B .. ':users', u)
  local held = (v and parse_held(v)) or 0
  if s.limit > 0 and held > s.limit then
    table.insert(problems, "user '" .. key_text(u) .. "': holds " .. fmt(held) .. ' over the limit ' .. fmt(s.limit))
  end
end
if whole then
  if not sum_is(reserved, s.reserved) then
    table.insert(problems, 'ledger: reserved orders hold ' .. sum_text(reserved) .. ', reserved is ' .. fmt(s.reserved))
  end
  if not sum_is(sold, s.sold) then
    table.insert(problems, 'ledger: confirmed orders hold ' .. sum_text(sold) .. ', sold is ' .. fmt(s.sold))
  end
  local leases = redis.call('ZCARD', B .. ':leases')
  if leases ~= live then
    table.insert(problems, 'ledger: ' .. fmt(leases) .. ' leases for ' .. fmt(live) .. ' reserved orders')
  end
  local kv = redis.call('HGETALL', B .. ':users')
  local stored_n, names = {}, {}
  for k = 1, #kv, 2 do
    stored_n[kv[k]] = parse_held(kv[k + 1]) or -1
    table.insert(names, kv[k])
  end
  for _, u in ipairs(users) do
    if stored_n[u] == nil then
      stored_n[u] = 0
      table.insert(names, u)
    end
  end
  table.sort(names, bytes_less)
  for _, u in ipairs(names) do
    local own = per_user[u] or {0, 0}
    local n = stored_n[u]
    if n < 0 or not sum_is(own, n) then
      table.insert(problems, "ledger: user '" .. key_text(u) .. "' holds " .. fmt(n) .. ', orders hold ' .. sum_text(own))
    end
  end
end
local out = {cursor_next, checked}
for _, p in ipairs(problems) do table.insert(out, p) end
return out
