-- LOCK.CHECK key token [NOW unix-ms]
-- KEYS[1] = B; ARGV = token [NOW unix-ms].
-- Reply: 1 when token belongs to a live hold, else 0.
-- Same replies, errors and stored data as the module (lua-compat/docs/lock.md).
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
if #ARGV < 1 then
  return redis.error_reply("ERR wrong number of arguments for 'lock.check' command")
end
local token = int(ARGV[1])
if not token then return redis.error_reply(NOTINT) end
local now = nil
local i = 2
while i <= #ARGV do
  if string.upper(ARGV[i]) ~= 'NOW' or i + 1 > #ARGV or now then return redis.error_reply(SYNTAX) end
  now = arg_int(ARGV[i + 1], 0, MAX_TIME)
  if not now then return redis.error_reply(NOTINT) end
  i = i + 2
end
now = now or clock_ms()
local lock, err = open(B)
if not lock then return err end
if lock.kind == 'free' then return 0 end
if lock.kind == 'mutex' then
  local m = lock.m
  if m.count > 0 and now < m.expires and m.fence == token then return 1 end
  return 0
end
local all, e = all_holders(B)
if not all then return e end
for _, h in pairs(all) do
  if live(h, now) and h.token == token then return 1 end
end
return 0
