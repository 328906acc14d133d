-- LIKE.MIGRATE key user [user ...]
-- Lua twin of LIKE.MIGRATE: LIKE.MIGRATE B user [user ...] -> users moved
-- KEYS: B
-- ARGV: like-max-id, like-promote-at, like-recent (the module's configs,
-- unused: ids are checked against 4294967295 as the module does), then the
-- users, verbatim.
-- Moves each user who is in B:set and whose range has a chunk
-- (B:bits:<k>, 8000 or 8001 bytes) from the Set to the chunk's bit. The
-- module replicates a migration step as this command; it changes no like
-- and no count. Same replies, errors and keys as the module.
--@ keys 1

local B = KEYS[1]
if #ARGV < 4 then return arity('like.migrate') end
local ids = {}
for i = 4, #ARGV do
  local a = ARGV[i]
  if a == '' then return redis.error_reply('ERR like: user must not be empty') end
  local id = parse_user(a, MAX_ID)
  if id == nil then
    return redis.error_reply('ERR like: user id must be an integer from 0 to ' .. fmt(MAX_ID))
  end
  ids[#ids + 1] = id
end
local set = B .. ':set'
local ts = type_of(set)
if ts == 'none' then return 0 end
if ts ~= 'set' then return redis.error_reply(WRONGTYPE) end
-- Every chunk an id falls in is checked (in the ids' order) before any
-- write: a key that is not a chunk is WRONGTYPE or corrupt data.
local chunks, want = {}, {}
for _, id in ipairs(ids) do
  local name = B .. ':bits:' .. fmt(math.floor(id / RANGE_IDS))
  local usable = chunks[name]
  if usable == nil then
    local t = type_of(name)
    if t ~= 'none' and t ~= 'string' then return redis.error_reply(WRONGTYPE) end
    usable = false
    if t == 'string' then
      local len = redis.call('STRLEN', name)
      if len ~= CHUNK_BYTES and len ~= MIGRATING_BYTES then return corrupt(name) end
      usable = true
    end
    chunks[name] = usable
  end
  if usable then want[#want + 1] = {name, id % RANGE_IDS, fmt(id)} end
end
if #want == 0 then return 0 end
-- In batches of 1000 (Lua's unpack stops near 8000 values).
local member = {}
for s = 1, #want, 1000 do
  local batch = {}
  for j = s, math.min(s + 999, #want) do batch[#batch + 1] = want[j][3] end
  for _, v in ipairs(redis.call('SMISMEMBER', set, unpack(batch))) do member[#member + 1] = v end
end
local gone, bits, seen = {}, {}, {}
for i, w in ipairs(want) do
  local bit_key = w[1] .. ' ' .. w[2]
  if member[i] == 1 and not seen[bit_key] then
    seen[bit_key] = true
    gone[#gone + 1] = w[3]
    bits[#bits + 1] = w
  end
end
if #bits == 0 then return 0 end
for s = 1, #gone, 1000 do
  redis.call('SREM', set, unpack(gone, s, math.min(s + 999, #gone)))
end
for _, w in ipairs(bits) do redis.call('SETBIT', w[1], w[2], 1) end
return #bits
