-- LUCKYBAG.CREATE key WINNERS winners [SHARDS shards] [POOLCAP poolcap] [HIGHSCORE score] [RESTORE YES|NO] [TTL seconds] [SEED seed] [NOW unix-ms] [SPREAD n]
-- LUCKYBAG.CREATE B WINNERS n [SHARDS s] [POOLCAP c] [HIGHSCORE h] [RESTORE YES|NO] [TTL seconds] [SEED seed] [NOW unix-ms]
-- Without SEED the twin makes one from the server's TIME and math.random:
-- not from a CSPRNG (scripts have none): pass SEED from one.
--@ keys 1

local B = KEYS[1]
if #ARGV < 2 then return arity('luckybag.create') end
local winners, shards, poolcap, highscore, restore, ttl = nil, '16', '700000', '0.99', 'yes', 0
local shards_given, declared, seed, now = false, nil, nil, nil
local i = 1
while i <= #ARGV do
  local kw = string.upper(ARGV[i])
  local v = ARGV[i + 1]
  if kw ~= 'WINNERS' and kw ~= 'SHARDS' and kw ~= 'POOLCAP' and kw ~= 'HIGHSCORE'
      and kw ~= 'RESTORE' and kw ~= 'TTL' and kw ~= 'SPREAD' and kw ~= 'SEED' and kw ~= 'NOW' then
    return syntax()
  end
  if v == nil then return syntax() end
  if kw == 'SPREAD' then
    local n, se = spread().spread_count('luckybag', v)
    if se then return se end
    declared = n
  elseif kw == 'SEED' then
    if #v < 16 or #v > 64 then return ferr('seed must be 16 to 64 bytes') end
    seed = v
  elseif kw == 'NOW' then
    local n = toint(v)
    if not n or n < 0 or n > 253402300799999 then return notint() end
    now = n
  elseif kw == 'WINNERS' then
    local n = toint(v)
    if not n then return notint() end
    if n < 1 or n > MAX_WINNERS then return ferr('winners must be between 1 and ' .. MAX_WINNERS) end
    winners = v
  elseif kw == 'SHARDS' then
    local n = toint(v)
    if not n then return notint() end
    if not valid_shards(n) then return ferr('shards must be a power of two up to 1024') end
    shards = v
    shards_given = true
  elseif kw == 'POOLCAP' then
    local n = toint(v)
    if not n or n < 0 then return notint() end
    poolcap = v
  elseif kw == 'HIGHSCORE' then
    local h = parse_highscore(v)
    if not h then return redis.error_reply('ERR value is not a valid float') end
    if h > 1 then return ferr('highscore must be between 0 and 1') end
    highscore = v
  elseif kw == 'RESTORE' then
    local u = string.upper(v)
    if u == 'YES' then restore = 'yes' elseif u == 'NO' then restore = 'no' else return syntax() end
  else
    local n = toint(v)
    if not n then return notint() end
    if n < 1 or n > 3153600000 then
      return redis.error_reply("ERR invalid expire time in 'luckybag.create' command")
    end
    ttl = n
  end
  i = i + 2
end
if not winners then return syntax() end
-- A shard of a spread bag: its own slice of the pool cap, and one
-- internal pool unless SHARDS says otherwise.
local sh = nil
if declared then
  local index = spread().shard_index(B, declared)
  if index == nil then return spread().not_a_shard_key('luckybag', B, declared) end
  sh = {n = declared, i = index}
  if not shards_given then shards = '1' end
  poolcap = share_text(poolcap, sh.n, sh.i)
end
local meta = B .. ':meta'
local ok, exists = typed(meta, 'hash')
if not ok then return redis.error_reply(WRONGTYPE) end
if exists then
  if not sh then return ferr('bag already exists') end
  -- Creating a spread bag's shard again with the same rules is harmless
  -- (a creation that failed half way is run again).
  local v = redis.call('HMGET', meta, 'spread', 'shard')
  local rec, re = spread().parse_record('luckybag', B, v[1], v[2])
  if re then return re end
  if not rec then return ferr('bag already exists') end
  if rec.n ~= sh.n then
    local _, e = spread().resolve('luckybag', B, sh.n, rec)
    return e
  end
  local have = redis.call('HMGET', meta, 'winners', 'shards', 'poolcap', 'highscore', 'restore')
  local want = {winners, shards, poolcap, highscore, restore}
  for k = 1, 5 do
    if have[k] ~= want[k] then return ferr('bag already exists') end
  end
  -- A seed given again must be the bag's; without one it keeps its own.
  if seed and redis.call('HGET', meta, 'seed') ~= seed then return ferr('bag already exists') end
  return {ok = 'OK'}
end
-- Shard 0 shares its base key's slot: a single-slot bag under the base
-- (in that slot when it has a hash tag, or on a standalone server) must
-- not be shadowed by a spread one.
if sh and sh.i == 0 then
  local _, b = spread().split_shard_key(B)
  if (spread().has_hash_tag(b) or not spread().cluster_enabled()) and redis.call('EXISTS', b .. ':meta') == 1 then
    return ferr("'" .. key_text(b) .. "' is a single-slot bag already")
  end
end
-- Keys left over from an earlier bag of the same name would be inherited.
for _, s in ipairs({'count', 'winners'}) do
  if redis.call('EXISTS', B .. ':' .. s) == 1 then return ferr('bag already exists') end
end
for s = 0, tonumber(shards) - 1 do
  if redis.call('EXISTS', B .. ':cand:' .. s) == 1 then return ferr('bag already exists') end
end
if not now then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
if not seed then
  seed = string.sub(redis.sha1hex(B .. ':' .. now .. ':' .. math.random() .. ':' .. math.random()), 1, 32)
end
redis.call('HSET', meta, 'shards', shards, 'state', 'open', 'poolcap', poolcap, 'seed', seed,
  'highscore', highscore, 'restore', restore, 'winners', winners, 'latepooled', '0')
if sh then redis.call('HSET', meta, 'spread', fmt(sh.n), 'shard', fmt(sh.i)) end
if ttl > 0 then redis.call('PEXPIREAT', meta, now + ttl * 1000) end
return {ok = 'OK'}

