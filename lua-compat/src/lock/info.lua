-- LOCK.INFO key [NOW unix-ms]
-- KEYS[1] = B; ARGV = [NOW unix-ms].
-- Reply: {owner, token, count, ttl-ms, ...} for every live holder, by token.
-- Same replies, errors and stored data as the module (lua-compat/docs/lock.md).
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
local now = nil
local i = 1
while i <= #ARGV do
  if string.upper(ARGV[i]) ~= 'NOW' or i + 1 > #ARGV or now then return redis.error_reply(SYNTAX) end
  now = arg_int(ARGV[i + 1], 0, MAX_TIME)
  if not now then return redis.error_reply(NOTINT) end
  i = i + 2
end
now = now or clock_ms()
local lock, err = open(B)
if not lock then return err end
if lock.kind == 'free' then return {} end
if lock.kind == 'mutex' then
  local m = lock.m
  if m.count > 0 and now < m.expires then return {m.owner, m.fence, m.count, m.expires - now} end
  return {}
end
local all, e = all_holders(B)
if not all then return e end
local list = {}
for o, h in pairs(all) do
  if live(h, now) then table.insert(list, {o, h}) end
end
table.sort(list, function(a, b) return a[2].token < b[2].token end)
local out = {}
for _, p in ipairs(list) do
  table.insert(out, p[1])
  table.insert(out, p[2].token)
  table.insert(out, p[2].count)
  table.insert(out, p[2].expires - now)
end
return out
