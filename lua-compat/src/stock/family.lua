local MAX_INT = 9007199254740991
local MAX_TIME = 253402300799999
local MAX_LEASE = 3153600000000
local MAX_TTL = 3153600000
local DEFAULT_LEASE = 900000
local MAX_RECLAIM = 100
local MAX_AUDIT_COUNT = 500
local DEFAULT_AUDIT_COUNT = 100
local function stored(s) return arg_int(s, 0, MAX_INT) end
local function corrupt(k, field) return data_error('stock', 'corrupt data', k, field) end
local function fail(what) return redis.error_reply('ERR stock: ' .. what) end
-- The twins have no spread form: the keyword SPREAD among the options
-- (argv[i...]) is refused; nil when there is none.
local function no_spread(argv, i)
  for j = i, #argv do
    if string.upper(argv[j]) == 'SPREAD' then
      return fail('SPREAD is not supported by the Lua twins: a spread stock needs the module (lua-compat/docs/stock.md)')
    end
  end
  return nil
end
-- Reads a trailing [NOW unix-ms], given once, from argv[i...]; nil, error on bad input.
local function parse_now(argv, i)
  local now = false
  while i <= #argv do
    if string.upper(argv[i]) ~= 'NOW' or i + 1 > #argv or now then return nil, redis.error_reply(SYNTAX) end
    now = arg_int(argv[i + 1], 0, MAX_TIME)
    if not now then return nil, redis.error_reply(NOTINT) end
    i = i + 2
  end
  return now
end
-- The stock record, the value of B:
-- '<available>:<reserved>:<sold>:<total>:<limit>:<lease-ms>:<expires>'; nil
-- for anything STOCK never writes (the law broken included). The sum is
-- exact: the counts are at most 2^53 - 1, and a sum past 2^53 rounds to
-- 2^53 or more, above any total.
local function parse_stock(v)
  local a, r, s, t, l, m, e = string.match(v, '^([^:]*):([^:]*):([^:]*):([^:]*):([^:]*):([^:]*):([^:]*)$')
  if not a then return nil end
  local st = {available = stored(a), reserved = stored(r), sold = stored(s), total = stored(t),
    limit = stored(l), lease = stored(m), expires = stored(e)}
  for _, f in ipairs({'available', 'reserved', 'sold', 'total', 'limit', 'lease', 'expires'}) do
    if not st[f] then return nil end
  end
  if st.available + st.reserved + st.sold ~= st.total then return nil end
  if st.lease < 1 or st.lease > MAX_LEASE then return nil end
  return st
end
local function format_stock(s)
  return fmt(s.available) .. ':' .. fmt(s.reserved) .. ':' .. fmt(s.sold) .. ':' .. fmt(s.total)
    .. ':' .. fmt(s.limit) .. ':' .. fmt(s.lease) .. ':' .. fmt(s.expires)
end
local function same_stock(a, b)
  return a.available == b.available and a.reserved == b.reserved and a.sold == b.sold
    and a.total == b.total and a.limit == b.limit and a.lease == b.lease and a.expires == b.expires
end
local function copy_stock(s)
  return {available = s.available, reserved = s.reserved, sold = s.sold, total = s.total,
    limit = s.limit, lease = s.lease, expires = s.expires}
end
-- The sold-out fast path: the value begins '0:0:' (nothing available,
-- nothing reserved).
local function finished(v) return #v > 4 and string.sub(v, 1, 4) == '0:0:' end
-- Writes B, keeping its expiry.
local function write_stock(B, s) redis.call('SET', B, format_stock(s), 'KEEPTTL') end
-- An order record, a field of B:orders:
-- '<state>:<quantity>:<lease-end>:<left>:<user>'; nil for anything STOCK
-- never writes.
local function parse_order(v)
  local st, q, e, l, u = string.match(v, '^([RSXE]):([^:]*):([^:]*):([^:]*):(.+)$')
  if not st then return nil end
  local o = {state = st, qty = stored(q), lease_end = stored(e), left = stored(l), user = u}
  if not (o.qty and o.lease_end and o.left) or o.qty < 1 then return nil end
  return o
end
local function format_order(o, state)
  return state .. ':' .. fmt(o.qty) .. ':' .. fmt(o.lease_end) .. ':' .. fmt(o.left) .. ':' .. o.user
end
-- A user's count in B:users: a positive canonical integer, or nil.
local function parse_held(v)
  local n = stored(v)
  if n and n > 0 then return n end
  return nil
end
-- Opens B: the stock, or nil and an error reply.
local function open_head(B)
  local t = redis.call('TYPE', B).ok
  if t == 'none' then return nil, fail('no such stock') end
  if t ~= 'string' then return nil, redis.error_reply(WRONGTYPE) end
  local s = parse_stock(redis.call('GET', B))
  if not s then return nil, corrupt(B) end
  return s
end
-- Checks the types of B:orders, B:users and B:leases; an error reply or nil.
local function check_ledger(B)
  for _, p in ipairs({{'orders', 'hash'}, {'users', 'hash'}, {'leases', 'zset'}}) do
    local t = redis.call('TYPE', B .. ':' .. p[1]).ok
    if t ~= 'none' and t ~= p[2] then return redis.error_reply(WRONGTYPE) end
  end
  return nil
end
-- The record of order: false when missing, or nil and an error reply.
local function get_order(B, id)
  local v = redis.call('HGET', B .. ':orders', id)
  if not v then return false end
  local o = parse_order(v)
  if not o then return nil, corrupt(B .. ':orders', id) end
  return o
end
-- Users' counts as a plan changes them, in the order first read.
local function new_helds(B) return {B = B, list = {}, at = {}} end
local function held_get(h, user)
  local i = h.at[user]
  if i then return h.list[i][2] end
  local n = 0
  local v = redis.call('HGET', h.B .. ':users', user)
  if v then
    n = parse_held(v)
    if not n then return nil, corrupt(h.B .. ':users', user) end
  end
  table.insert(h.list, {user, n})
  h.at[user] = #h.list
  return n
end
local function held_set(h, user, n)
  local i = h.at[user]
  if i then h.list[i][2] = n end
end
-- Takes qty units off user's count; a count below qty does not match the
-- ledger.
local function held_take(h, user, qty)
  local n, e = held_get(h, user)
  if not n then return nil, e end
  if n < qty then return nil, corrupt(h.B .. ':users', user) end
  held_set(h, user, n - qty)
  return true
end
-- Writes every count (a 0 removes the field).
local function held_write(h)
  for _, p in ipairs(h.list) do
    if p[2] == 0 then
      redis.call('HDEL', h.B .. ':users', p[1])
    else
      redis.call('HSET', h.B .. ':users', p[1], fmt(p[2]))
    end
  end
end
-- Up to MAX_RECLAIM lapsed leases (lease end at or before now), oldest
-- first, each checked against its order's record: {id, order} pairs, or
-- nil and an error reply.
local function lapsed(B, now)
  local out = {}
  local r = redis.call('ZRANGEBYSCORE', B .. ':leases', '-inf', fmt(now), 'WITHSCORES', 'LIMIT', 0, MAX_RECLAIM)
  for i = 1, #r, 2 do
    local id, score = r[i], tonumber(r[i + 1])
    local o, e = get_order(B, id)
    if o == nil then return nil, e end
    if not o or o.state ~= 'R' or o.lease_end ~= score then return nil, corrupt(B .. ':leases', id) end
    table.insert(out, {id, o})
  end
  return out
end
-- Plans the return of lapsed leases into s and h; true, or nil and an error.
local function plan_returns(B, s, list, h)
  for _, x in ipairs(list) do
    local q = x[2].qty
    if s.reserved < q then return nil, corrupt(B) end
    s.reserved = s.reserved - q
    s.available = s.available + q
    local ok, e = held_take(h, x[2].user, q)
    if not ok then return nil, e end
  end
  return true
end
-- Writes the return of lapsed leases (their orders to E).
local function write_returns(B, list)
  for _, x in ipairs(list) do
    redis.call('HSET', B .. ':orders', x[1], format_order(x[2], 'E'))
    redis.call('ZREM', B .. ':leases', x[1])
  end
end
-- Gives the ledger keys that have no expiry the stock's (a key this call
-- created).
local function expire_ledger(B, expires)
  if expires <= 0 then return end
  for _, sfx in ipairs({'orders', 'users', 'leases'}) do
    if redis.call('PTTL', B .. ':' .. sfx) == -1 then
      redis.call('PEXPIREAT', B .. ':' .. sfx, fmt(expires))
    end
  end
end
-- Byte order of two strings (Lua's < follows the locale's collation).
local function bytes_less(a, b)
  local n = math.min(#a, #b)
  for i = 1, n do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end
