-- STOCK.CREATE key total [LIMIT per-user] [LEASE lease-ms] [TTL seconds] [NOW unix-ms] [SPREAD n]
-- KEYS[1] = B; ARGV = total [options...], exactly as the command.
-- Reply: OK.
-- Same replies, errors and stored data as the module (lua-compat/docs/stock.md).
--@ keys 1

local B = KEYS[1]
if #ARGV < 1 then
  return redis.error_reply("ERR wrong number of arguments for 'stock.create' command")
end
local ns = no_spread(ARGV, 2)
if ns then return ns end
local total = arg_int(ARGV[1], 0, MAX_INT)
if not total then return redis.error_reply(NOTINT) end
local limit, lease, ttl, now = 0, DEFAULT_LEASE, nil, nil
local i = 2
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
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
  i = i + 2
end
local t = redis.call('TYPE', B).ok
if t == 'string' then return fail('already exists') end
if t ~= 'none' then return redis.error_reply(WRONGTYPE) end
now = now or clock_ms()
local expires = 0
if ttl then expires = now + ttl * 1000 end
-- Leftovers of an earlier stock of this name would join the new one.
redis.call('DEL', B .. ':orders', B .. ':users', B .. ':leases')
redis.call('SET', B, format_stock({available = total, reserved = 0, sold = 0, total = total,
  limit = limit, lease = lease, expires = expires}))
if expires > 0 then redis.call('PEXPIREAT', B, fmt(expires)) end
return {ok = 'OK'}
