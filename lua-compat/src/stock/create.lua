-- STOCK.CREATE key total [LIMIT per-user] [LEASE lease-ms] [TTL seconds] [NOW unix-ms] [SPREAD n]
-- KEYS[1] = B (or K_i, shard i of a spread stock); ARGV = total
-- [options...], exactly as the command.
-- Reply: OK. With SPREAD n, K_i is created empty, its record marked
-- (shard i of n, not dry), with its meta (spread n, shard i); shard 0 also
-- gets the pool of all `total` units.
-- Same replies, errors and stored data as the module (lua-compat/docs/stock.md).
--@ keys 1

local B = KEYS[1]
if #ARGV < 1 then
  return redis.error_reply("ERR wrong number of arguments for 'stock.create' command")
end
local total = arg_int(ARGV[1], 0, MAX_INT)
if not total then return redis.error_reply(NOTINT) end
local limit, lease, ttl, now, declared = 0, DEFAULT_LEASE, nil, nil, nil
local i = 2
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  if kw == 'SPREAD' then
    local n, e = spread_value(ARGV, i + 1)
    if e then return e end
    declared = n
  else
    local lo, hi
    if kw == 'LIMIT' then lo, hi = 0, MAX_INT
    elseif kw == 'LEASE' then lo, hi = 1, MAX_LEASE
    elseif kw == 'TTL' then lo, hi = 1, MAX_TTL
    elseif kw == 'NOW' then lo, hi = 0, MAX_TIME
    else return redis.error_reply(SYNTAX) end
    if i + 1 > #ARGV then return redis.error_reply(SYNTAX) end
    local n = arg_int(ARGV[i + 1], lo, hi)
    if not n then return redis.error_reply(NOTINT) end
    if kw == 'LIMIT' then limit = n elseif kw == 'LEASE' then lease = n
    elseif kw == 'TTL' then ttl = n else now = n end
  end
  i = i + 2
end
now = now or clock_ms()
local expires = 0
if ttl then expires = now + ttl * 1000 end
local index = nil
if declared then
  index = spread().shard_index(B, declared)
  if index == nil then return spread().not_a_shard_key('stock', B, declared) end
end
local t = redis.call('TYPE', B).ok
if t == 'string' then return fail('already exists') end
if t ~= 'none' then return redis.error_reply(WRONGTYPE) end
local META = B .. ':meta'
local tm = redis.call('TYPE', META).ok
if tm ~= 'none' and tm ~= 'hash' then return redis.error_reply(WRONGTYPE) end
if index == nil then
  local e = spread().refuse_spread_base('stock', B, STOCK_DATA)
  if e then return e end
elseif tm ~= 'none' then
  -- A meta without a stock record: a shard whose record was deleted.
  return corrupt(B)
elseif index == 0 then
  -- Shard 0 shares its base key's slot: a single-slot stock under the
  -- base must not be shadowed by a spread one.
  local _, base = spread().split_shard_key(B)
  base = base or B
  if (spread().has_hash_tag(base) or not spread().cluster_enabled()) and redis.call('EXISTS', base) == 1 then
    return fail("'" .. key_text(base) .. "' is a single-slot stock already")
  end
end
-- Leftovers of an earlier stock of this name would join the new one.
redis.call('DEL', B .. ':orders', B .. ':users', B .. ':leases', B .. ':applied', B .. ':pool',
  B .. ':transfers', B .. ':open')
-- A shard starts empty: every unit it sells comes from the pool by a
-- transfer (shard 0 holds the pool of all `total` units).
-- Its record carries its mark (which shard of how many, not dry).
local own, mark = total, nil
if index then own, mark = 0, {n = declared, i = index, dry = false} end
redis.call('SET', B, format_stock({available = own, reserved = 0, sold = 0, total = own,
  limit = limit, lease = lease, expires = expires, mark = mark}))
if expires > 0 then redis.call('PEXPIREAT', B, fmt(expires)) end
if index then
  redis.call('HSET', META, 'spread', fmt(declared), 'shard', fmt(index))
  if expires > 0 then redis.call('PEXPIREAT', META, fmt(expires)) end
  if index == 0 then
    redis.call('SET', B .. ':pool', format_pool({free = total, transit = 0, total = total, expires = expires}))
    if expires > 0 then redis.call('PEXPIREAT', B .. ':pool', fmt(expires)) end
  end
end
return {ok = 'OK'}
