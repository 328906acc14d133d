-- LIKE.CREATE key SPREAD n
-- Lua twin of LIKE.CREATE: LIKE.CREATE K SPREAD n -> OK, creates shard i of
-- n of a spread post (K = {<tag>}B, docs/spread.md): K:meta records
-- spread n and shard i. Again with the same count: OK, nothing changes.
-- KEYS: K
-- ARGV: like-max-id, like-promote-at, like-recent (the module's configs),
-- then the command's arguments after the key(s), verbatim.
-- Same replies, errors and derived keys as the module (see README.md).
--@ keys 1

local K = KEYS[1]
local args = {}
for i = 4, #ARGV do args[#args + 1] = ARGV[i] end
local n = nil
local i = 1
while i <= #args do
  if string.upper(args[i]) ~= 'SPREAD' or i + 1 > #args then return syntax() end
  local e
  n, e = spread().spread_count('like', args[i + 1])
  if e then return e end
  i = i + 2
end
if n == nil then
  return redis.error_reply('ERR like: LIKE.CREATE needs SPREAD n (a single-slot post needs no creation)')
end
local index = spread().shard_index(K, n)
if index == nil then return spread().not_a_shard_key('like', K, n) end
-- Every key of the shard is type-checked before anything is written.
local META = K .. ':meta'
local tm = type_of(META)
if tm ~= 'none' and tm ~= 'hash' then return redis.error_reply(WRONGTYPE) end
local in_use = false
for _, kt in ipairs({{'set', 'set'}, {'count', 'string'}, {'chunks', 'string'}, {'recent', 'zset'}}) do
  local t = type_of(K .. ':' .. kt[1])
  if t ~= 'none' and t ~= kt[2] then return redis.error_reply(WRONGTYPE) end
  if t ~= 'none' then in_use = true end
end
local rec, e = spread().read_record('like', K)
if e then return e end
if rec then
  if rec.n == n then return {ok = 'OK'} end
  local _, e2 = spread().resolve('like', K, n, rec)
  return e2
end
if in_use or tm ~= 'none' then
  return redis.error_reply("ERR like: '" .. key_text(K) .. "' already holds a single-slot post")
end
-- Shard 0 shares its base key's slot: a single-slot post under the base
-- (in that slot when it has a hash tag, or on a standalone server) must
-- not be shadowed by a spread one.
if index == 0 then
  local _, base = spread().split_shard_key(K)
  if spread().has_hash_tag(base) or not spread().cluster_enabled() then
    for _, s in ipairs({'set', 'count', 'chunks'}) do
      if redis.call('EXISTS', base .. ':' .. s) == 1 then
        return redis.error_reply("ERR like: '" .. key_text(base) .. "' is a single-slot post already")
      end
    end
  end
end
redis.call('HSET', META, 'spread', fmt(n), 'shard', fmt(index))
return {ok = 'OK'}
