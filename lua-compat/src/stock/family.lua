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
-- A spread stock's data keys besides K:meta ('' is K itself;
-- stock/commands.rs SPREAD_STOCK): data there without a record means the
-- record was deleted.
local STOCK_DATA = {'', 'orders', 'users', 'leases', 'applied'}
-- Reads `SPREAD n`'s value argv[i]: n, or nil and the error.
local function spread_value(argv, i)
  if i > #argv then return nil, redis.error_reply(SYNTAX) end
  return spread().spread_count('stock', argv[i])
end
-- Reads an optional trailing `SPREAD n` (nothing else) from argv[i...]:
-- n, or nil when there is none, or nil and the error (anything else is a
-- syntax error).
local function only_spread(argv, i)
  if i > #argv then return nil end
  if string.upper(argv[i]) ~= 'SPREAD' then return nil, redis.error_reply(SYNTAX) end
  local n, e = spread_value(argv, i + 1)
  if e then return nil, e end
  if i + 2 <= #argv then return nil, redis.error_reply(SYNTAX) end
  return n
end
-- The `SPREAD n` a transfer command requires after its arguments.
local function required_spread(argv, i)
  local n, e = only_spread(argv, i)
  if e then return nil, e end
  if n == nil then return nil, redis.error_reply(SYNTAX) end
  return n
end
-- Reads `[NOW unix-ms] [SPREAD n]` in either order, each at most once,
-- from argv[i...]: now (false when not given) and the declared count (nil
-- when not given); or nil, nil and the error.
local function parse_now_spread(argv, i)
  local now, declared = false, nil
  while i <= #argv do
    local kw = string.upper(argv[i])
    if kw == 'NOW' and not now then
      if i + 1 > #argv then return nil, nil, redis.error_reply(SYNTAX) end
      now = arg_int(argv[i + 1], 0, MAX_TIME)
      if not now then return nil, nil, redis.error_reply(NOTINT) end
    elseif kw == 'SPREAD' and declared == nil then
      local n, e = spread_value(argv, i + 1)
      if e then return nil, nil, e end
      declared = n
    else
      return nil, nil, redis.error_reply(SYNTAX)
    end
    i = i + 2
  end
  return now, declared
end
-- The shard a record's mark m names, for a call on B that declared
-- `declared` and names `user` (stock/commands.rs marked): {n =, i =, dry
-- =}, or nil and the error (other counts; a mark that names another key,
-- a copied record, is corrupt data in B; a user of another shard).
local function marked(B, declared, m, user)
  if declared ~= nil and declared ~= m.n then
    return nil, fail("shard counts disagree: '" .. key_text(B) .. "' is shard " .. fmt(m.i) .. ' of '
      .. fmt(m.n) .. ', the call says ' .. fmt(declared))
  end
  if spread().shard_index(B, m.n) ~= m.i then return nil, corrupt(B) end
  local sh = {n = m.n, i = m.i, dry = m.dry}
  if user then
    local e = spread().check_owner('stock', 'user', B, sh, user)
    if e then return nil, e end
  end
  return sh
end
-- Which shard a call on B runs on (stock/commands.rs spread_of): false
-- for a single-slot stock; {n =, i =, dry =} for a shard of a spread
-- stock; or nil and the error. `found`: whether B is a String; `rec`: its
-- record when it parses (a shard's record carries its mark, which decides
-- alone: no B:meta read); `user`: the user a RESERVE names (it must
-- belong to the shard). A key that declares no count and does not start
-- with `{` costs one byte comparison. Any other call on a key that may be
-- a shard goes through the spread scope (B:meta), and a shard found there
-- whose record has no mark is corrupt data in B.
local function spread_of(B, declared, found, rec, user)
  if rec and rec.mark then return marked(B, declared, rec.mark, user) end
  if declared == nil and not looks_like_shard(B) then
    if not found then
      local e = spread().refuse_spread_base('stock', B, STOCK_DATA)
      if e then return nil, e end
    end
    return false
  end
  local S = spread()
  local meta = B .. ':meta'
  local tm = redis.call('TYPE', meta).ok
  if tm ~= 'none' and tm ~= 'hash' then return nil, redis.error_reply(WRONGTYPE) end
  local r, e = S.read_record('stock', B)
  if e then return nil, e end
  local sh, e2 = S.resolve('stock', B, declared, r, function() return S.holds_data(B, STOCK_DATA) end)
  if e2 then return nil, e2 end
  if sh and user then
    local e3 = S.check_owner('stock', 'user', B, sh, user)
    if e3 then return nil, e3 end
  end
  if not sh then
    if not found then
      local e4 = S.refuse_spread_base('stock', B, STOCK_DATA)
      if e4 then return nil, e4 end
    end
    return false
  end
  if rec then return nil, corrupt(B) end
  return {n = sh.n, i = sh.i, dry = false}
end
-- RESERVE's answer when the units are lacking: SOLDOUT, or on a shard of
-- a spread stock not marked dry REFILL (the shard lacks units, the SKU
-- may not).
local function soldout(sh, left)
  if sh and not sh.dry then return {'REFILL', left, 0} end
  return {'SOLDOUT', left, 0}
end
-- The stock record, the value of B:
-- '<available>:<reserved>:<sold>:<total>:<limit>:<lease-ms>:<expires>',
-- and on a shard of a spread stock its mark ':<n>:<i>:<dry>' after it
-- (stock/model.rs Stock, Mark); nil for anything STOCK never writes (the
-- law broken included). The sum is exact: the counts are at most 2^53 - 1,
-- and a sum past 2^53 rounds to 2^53 or more, above any total.
--
-- A shard's mark from its three fields: {n =, i =, dry =}, or nil.
local function make_mark(n, i, d)
  n, i, d = stored(n), stored(i), stored(d)
  if not (n and i and d) or n < 1 or n > 1024 or i >= n or d > 1 then return nil end
  return {n = n, i = i, dry = d == 1}
end
local function parse_stock(v)
  local a, r, s, t, l, m, e, rest = string.match(v, '^([^:]*):([^:]*):([^:]*):([^:]*):([^:]*):([^:]*):([^:]*)(.*)$')
  if not a then return nil end
  local st = {available = stored(a), reserved = stored(r), sold = stored(s), total = stored(t),
    limit = stored(l), lease = stored(m), expires = stored(e)}
  for _, f in ipairs({'available', 'reserved', 'sold', 'total', 'limit', 'lease', 'expires'}) do
    if not st[f] then return nil end
  end
  if rest ~= '' then
    local n, i, d = string.match(rest, '^:([^:]*):([^:]*):([^:]*)$')
    if not n then return nil end
    st.mark = make_mark(n, i, d)
    if not st.mark then return nil end
  end
  if st.available + st.reserved + st.sold ~= st.total then return nil end
  if st.lease < 1 or st.lease > MAX_LEASE then return nil end
  return st
end
-- The mark alone, as a shard's sold-out fast path reads it (Mark::read):
-- a value of ten ':'-separated fields whose last three are a mark; the
-- counts before it are not read.
local function read_mark(v)
  local _, colons = string.gsub(v, ':', '')
  if colons ~= 9 then return nil end
  local n, i, d = string.match(v, '^[^:]*:[^:]*:[^:]*:[^:]*:[^:]*:[^:]*:[^:]*:([^:]*):([^:]*):([^:]*)$')
  return make_mark(n, i, d)
end
local function format_stock(s)
  local v = fmt(s.available) .. ':' .. fmt(s.reserved) .. ':' .. fmt(s.sold) .. ':' .. fmt(s.total)
    .. ':' .. fmt(s.limit) .. ':' .. fmt(s.lease) .. ':' .. fmt(s.expires)
  if s.mark then v = v .. ':' .. fmt(s.mark.n) .. ':' .. fmt(s.mark.i) .. ':' .. (s.mark.dry and '1' or '0') end
  return v
end
local function same_stock(a, b)
  local ma, mb = a.mark, b.mark
  local same_mark = (ma == nil and mb == nil)
    or (ma ~= nil and mb ~= nil and ma.n == mb.n and ma.i == mb.i and ma.dry == mb.dry)
  return a.available == b.available and a.reserved == b.reserved and a.sold == b.sold
    and a.total == b.total and a.limit == b.limit and a.lease == b.lease and a.expires == b.expires
    and same_mark
end
local function copy_stock(s)
  local mark = nil
  if s.mark then mark = {n = s.mark.n, i = s.mark.i, dry = s.mark.dry} end
  return {available = s.available, reserved = s.reserved, sold = s.sold, total = s.total,
    limit = s.limit, lease = s.lease, expires = s.expires, mark = mark}
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
-- Opens B (stock/commands.rs open_head): the stock and its shard (false
-- for a single-slot stock; see spread_of), or nil and an error reply.
local function open_head(B, declared)
  local t = redis.call('TYPE', B).ok
  if t ~= 'none' and t ~= 'string' then return nil, redis.error_reply(WRONGTYPE) end
  local rec = nil
  if t == 'string' then rec = parse_stock(redis.call('GET', B)) end
  local sh, se = spread_of(B, declared, t == 'string', rec, nil)
  if sh == nil then return nil, se end
  if t == 'none' then return nil, fail('no such stock') end
  if not rec then return nil, corrupt(B) end
  return rec, sh
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
-- ---- The spread form's pool and transfers (docs/stock.md, "Spread form") ----
-- The record layouts of the pool, its transfers and a shard's applied
-- transfers are decoded and encoded here only (stock/model.rs Pool,
-- Transfer, parse_applied).
--
-- The pool, K_0:pool: '<free>:<transit>:<total>:<expires>'; nil for
-- anything STOCK never writes.
local function parse_pool(v)
  local f, t, tot, e = string.match(v, '^([^:]*):([^:]*):([^:]*):([^:]*)$')
  if not f then return nil end
  local p = {free = stored(f), transit = stored(t), total = stored(tot), expires = stored(e)}
  if not (p.free and p.transit and p.total and p.expires) or p.free > p.total then return nil end
  return p
end
local function format_pool(p)
  return fmt(p.free) .. ':' .. fmt(p.transit) .. ':' .. fmt(p.total) .. ':' .. fmt(p.expires)
end
local function same_pool(a, b)
  return a.free == b.free and a.transit == b.transit and a.total == b.total and a.expires == b.expires
end
-- A transfer, a field of K_0:transfers:
-- '<O|C>:<R|H>:<shard>:<asked>:<units>' (open or closed, refill or
-- handback); {open =, dir = 'R'|'H', shard =, asked =, units =}, or nil.
local function parse_transfer(v)
  local o, d, sh, a, u = string.match(v, '^([OC]):([RH]):([^:]*):([^:]*):([^:]*)$')
  if not o then return nil end
  local t = {open = o == 'O', dir = d, shard = stored(sh), asked = stored(a), units = stored(u)}
  if not (t.shard and t.asked and t.units) or t.shard > 4294967295 then return nil end
  if t.asked < 1 or t.units > t.asked then return nil end
  if d == 'R' and t.units < 1 then return nil end
  if d == 'H' and t.open and t.units ~= 0 then return nil end
  return t
end
local function format_transfer(t)
  return (t.open and 'O' or 'C') .. ':' .. t.dir .. ':' .. fmt(t.shard) .. ':' .. fmt(t.asked) .. ':' .. fmt(t.units)
end
-- A shard's record of an applied transfer, a field of K_i:applied: the
-- signed units applied, a canonical integer ('-0' is not one); or nil.
local function parse_applied(v)
  if string.byte(v, 1) == 45 then
    local n = stored(string.sub(v, 2))
    if n and n > 0 then return -n end
    return nil
  end
  return stored(v)
end
-- Gives key the instant `expires` when it has no expiry (a key this call
-- created); nothing for 0.
local function expire_if_unset(k, expires)
  if expires > 0 and redis.call('PTTL', k) == -1 then redis.call('PEXPIREAT', k, fmt(expires)) end
end
-- Fails unless sh is shard 0, the one holding the pool.
local function require_pool_shard(K, sh, n)
  if sh and sh.i == 0 then return nil end
  local _, base = spread().split_shard_key(K)
  return fail('the pool is on shard 0 of ' .. fmt(n) .. " ('" .. key_text(spread().first_shard_key(base or K))
    .. "'), not on '" .. key_text(K) .. "'")
end
-- Opens K_0:pool, K_0:transfers and K_0:open (types checked) and reads
-- the pool: the pool, or nil and the error (a missing pool is corrupt).
local function open_pool(K)
  for _, p in ipairs({{'pool', 'string'}, {'transfers', 'hash'}, {'open', 'zset'}}) do
    local t = redis.call('TYPE', K .. ':' .. p[1]).ok
    if t ~= 'none' and t ~= p[2] then return nil, redis.error_reply(WRONGTYPE) end
  end
  local v = redis.call('GET', K .. ':pool')
  local p = v and parse_pool(v)
  if not p then return nil, corrupt(K .. ':pool') end
  return p
end
-- The record of transfer id: false when unknown, or nil and the error.
local function get_transfer(K, id)
  local v = redis.call('HGET', K .. ':transfers', id)
  if not v then return false end
  local t = parse_transfer(v)
  if not t then return nil, corrupt(K .. ':transfers', id) end
  return t
end
-- Writes a transfer's record, the pool (when it changed) and the open set.
local function write_transfer(K, id, t, pool, before)
  redis.call('HSET', K .. ':transfers', id, format_transfer(t))
  if t.open then
    redis.call('ZADD', K .. ':open', 0, id)
  else
    redis.call('ZREM', K .. ':open', id)
  end
  if not same_pool(pool, before) then redis.call('SET', K .. ':pool', format_pool(pool), 'KEEPTTL') end
  expire_if_unset(K .. ':transfers', pool.expires)
  expire_if_unset(K .. ':open', pool.expires)
end
