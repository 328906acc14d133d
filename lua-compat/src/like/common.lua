-- LIKE.COMMON key1 key2
-- Lua twin of LIKE.COMMON: LIKE.COMMON B1 B2 -> users who like both, ascending
-- KEYS: B1, B2
-- ARGV: like-max-id, like-promote-at, like-recent (the module's configs),
-- then the command's arguments after the key(s), verbatim.
-- Same replies, errors and derived keys as the module (see README.md).
--@ keys n
--@ flags no-writes

-- Two keys, as the command takes: any other count is the module's arity
-- error (not a Lua error on a missing KEYS[2]).
if #KEYS ~= 2 then return arity('like.common') end
local B = KEYS[1]
local MAXID = tonumber(ARGV[1])
local PROMOTE_AT = tonumber(ARGV[2])
local RECENT_CAP = tonumber(ARGV[3])
local args = {}
for i = 4, #ARGV do args[#args + 1] = ARGV[i] end
if #args ~= 0 then return arity('like.common') end
-- A shard of a spread post has no LIKE.COMMON.
for _, k in ipairs({B, KEYS[2]}) do
  local sh, e = like_spread_of(k, nil)
  if e then return e end
  if sh then
    return redis.error_reply("ERR like: LIKE.COMMON does not take a shard of a spread post ('" .. key_text(k) .. "')")
  end
end
local p1, e1 = read_post(B, true, true)
if not p1 then return e1 end
local p2, e2 = read_post(KEYS[2], true, true)
if not p2 then return e2 end
-- Read the likers of the post with fewer, look each up in the other.
local p, q = p1, p2
if p2.count < p1.count then p, q = p2, p1 end
local mine, cache = {}, {}
for r = 0, #p.index * 8 - 1 do
  local c, err = chunk_of(p, r, cache)
  if err then return err end
  if c then
    local bytes = redis.call('GET', c.name)
    for i = 1, CHUNK_BYTES do
      local byte = string.byte(bytes, i)
      if byte ~= 0 then
        for j = 0, 7 do
          if bit.band(byte, bit.rshift(128, j)) ~= 0 then mine[#mine + 1] = r * RANGE_IDS + (i - 1) * 8 + j end
        end
      end
    end
  end
end
if p.set_members > 0 then
  for _, m in ipairs(redis.call('SMEMBERS', p.base .. ':set')) do
    local v = parse_user(m, MAX_ID)
    if v then mine[#mine + 1] = v end
  end
end
local flags, err = likes_of(q, mine)
if not flags then return err end
local out = {}
for i, v in ipairs(mine) do
  if flags[i] then out[#out + 1] = v end
end
table.sort(out)
local uniq = {}
for _, v in ipairs(out) do
  if uniq[#uniq] ~= v then uniq[#uniq + 1] = v end
end
return uniq

