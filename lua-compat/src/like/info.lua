-- LIKE.INFO key [SPREAD n]
-- Lua twin of LIKE.INFO: LIKE.INFO B [SPREAD n] -> [encoding, none|set|bitmap|mixed, count, n, bytes, n,
-- set, n, chunks, n, promotion, none|create|move|settle] (a shard adds spread, n, shard, i)
-- KEYS: B
-- ARGV: like-max-id, like-promote-at, like-recent (the module's configs),
-- then the command's arguments after the key(s), verbatim.
-- Same replies, errors and derived keys as the module (see README.md).
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
local MAXID = tonumber(ARGV[1])
local PROMOTE_AT = tonumber(ARGV[2])
local RECENT_CAP = tonumber(ARGV[3])
local args = {}
for i = 4, #ARGV do args[#args + 1] = ARGV[i] end
local declared, de = only_spread(args, 'like.info')
if de then return de end
local sh, se = like_spread_of(B, declared)
if se then return se end
local META = B .. ':meta'
local tm = type_of(META)
if tm ~= 'none' and tm ~= 'hash' then return redis.error_reply(WRONGTYPE) end
local p, err = read_post(B, true, not sh)
if not p then return err end
local promotion = redis.call('HGET', META, 'state') or 'none'
if promotion ~= 'none' and promotion ~= 'create' and promotion ~= 'move' and promotion ~= 'settle' then
  return data_error('like', 'corrupt data', META, 'state')
end
local chunks = redis.call('BITCOUNT', B .. ':chunks')
local top = 0
if p.set_members > 0 and p.set_members <= 512 then
  -- An intset is read whole; a Set of this size still in a hashtable (it
  -- was large and shrank: a big sparse table) counts as 8-byte ids, as the
  -- module models it without walking the table.
  if redis.call('OBJECT', 'ENCODING', B .. ':set') == 'hashtable' then
    top = 2 ^ 64
  else
    for _, m in ipairs(redis.call('SMEMBERS', B .. ':set')) do
      local v = parse_user(m, 1e300)
      if v == nil then v = 2 ^ 64 end
      if v > top then top = v end
    end
  end
end
local bytes = set_memory(p.set_members, top)
if chunks > 0 then bytes = bytes + chunks * (64 + CHUNK_BYTES) + 64 + #p.index end
local encoding = 'set'
if p.set_members == 0 and chunks == 0 and p.count == 0 then encoding = 'none'
elseif chunks > 0 and p.set_members == 0 then encoding = 'bitmap'
elseif chunks > 0 then encoding = 'mixed' end
local out = {'encoding', encoding, 'count', p.count, 'bytes', bytes, 'set', p.set_members,
  'chunks', chunks, 'promotion', promotion}
-- A shard says which one it is.
if sh then
  for _, v in ipairs({'spread', sh.n, 'shard', sh.i}) do out[#out + 1] = v end
end
return out

