-- Spread entities (docs/spread.md): the routing spec and the shard record
-- checks of src/spread/route.rs and src/spread/shard.rs, word for word, for
-- every family's twins (LIKE, LUCKYBAG, POLL and RANK call the same
-- helpers). The generator adds these after shared.lua; a script
-- carries only the helpers it uses.
--
-- The slot-tag table: TAG[s] for every slot s, each tag padded to three
-- characters with spaces, slot 0 first. scripts/lua-gen.py writes it from
-- clients/python/src/hotpath/slot_tags.txt (the same table as
-- src/spread/slot_tags.rs; both are checked against the definition by
-- unit tests). A string constant is part of the compiled script: reading
-- it costs nothing per call.
local SLOT_TAGS = '@SLOT_TAGS@'
-- The helpers below are built by spread() on first use and kept: once
-- per library load in the Functions library, once per call in a script
-- (and only in a call that needs them). A script's top-level helpers are
-- closures made at every call, which single-slot calls would pay for.
local spread_helpers = nil
local function spread()
  if spread_helpers then return spread_helpers end
  local S = {}
  -- CRC16/XMODEM (polynomial 0x1021, initial value 0), Redis Cluster's hash.
  local function crc16(s)
    local crc = 0
    for i = 1, #s do
      crc = bit.bxor(crc, bit.lshift(string.byte(s, i), 8))
      for _ = 1, 8 do
        if bit.band(crc, 0x8000) ~= 0 then
          crc = bit.band(bit.bxor(bit.lshift(crc, 1), 0x1021), 0xffff)
        else
          crc = bit.band(bit.lshift(crc, 1), 0xffff)
        end
      end
    end
    return crc
  end
  -- The cluster slot of a key: CRC16 of its hash tag (the bytes between the
  -- first '{' and the first '}' after it, when not empty), else of the key.
  local function key_slot(k)
    local open = string.find(k, '{', 1, true)
    if open then
      local close = string.find(k, '}', open + 1, true)
      if close and close > open + 1 then k = string.sub(k, open + 1, close - 1) end
    end
    return crc16(k) % 16384
  end
  local function slot_tag(slot)
    return (string.gsub(string.sub(SLOT_TAGS, slot * 3 + 1, slot * 3 + 3), ' ', ''))
  end
  -- The slot of shard i of n of a base key, and its shard key {TAG}base.
  local function shard_slot(base, n, i)
    return (key_slot(base) + math.floor(i * 16384 / n)) % 16384
  end
  local function shard_key(base, n, i)
    return '{' .. slot_tag(shard_slot(base, n, i)) .. '}' .. base
  end
  -- The tag and the base of a shard key {<tag>}<base> whose tag is the
  -- table's tag of its own slot; nil for any other key. The base is never
  -- empty: a bare hash tag ({bm}) is not a shard key.
  local function split_shard_key(k)
    if string.byte(k, 1) ~= 123 then return nil end
    local close = string.find(k, '}', 2, true)
    -- Every tag of the table has 1 to 3 characters.
    if not close or close < 3 or close > 5 or close == #k then return nil end
    local tag = string.sub(k, 2, close - 1)
    if slot_tag(crc16(tag) % 16384) ~= tag then return nil end
    return tag, string.sub(k, close + 1)
  end
  -- i when k is the key of shard i of n of its base, else nil.
  local function shard_index(k, n)
    if n < 1 or n > 1024 then return nil end
    local tag, base = split_shard_key(k)
    if not tag then return nil end
    local slot = crc16(tag) % 16384
    local offset = (slot + 16384 - key_slot(base)) % 16384
    local i = math.ceil(offset * n / 16384)
    if i < n and shard_slot(base, n, i) == slot then return i end
    return nil
  end
  -- The key of shard 0 of a spread entity: the same for every count, and
  -- in the base key's slot.
  local function first_shard_key(base) return shard_key(base, 1, 0) end
  -- True when k is the key of shard 0 of its base ({TAG[slot(B)]}B): the
  -- same key for every count (shard.rs is_first_shard_key).
  local function is_first_shard_key(k) return shard_index(k, 1) == 0 end
  -- True when one of a family's data keys of key exists: `data` lists
  -- their suffixes, '' for key itself (scope.rs holds_data).
  local function holds_data(key, data)
    for _, s in ipairs(data) do
      local k = key
      if s ~= '' then k = key .. ':' .. s end
      if redis.call('EXISTS', k) == 1 then return true end
    end
    return false
  end
  -- FNV-1a 32-bit. The product is split in 16-bit halves: h * 16777619
  -- would pass 2^53, where doubles stop being exact.
  local function fnv1a32(s)
    local h = 2166136261
    for i = 1, #s do
      h = bit.bxor(h, string.byte(s, i)) % 4294967296
      local hi, lo = math.floor(h / 65536), h % 65536
      h = ((hi * 16777619) % 65536 * 65536 + lo * 16777619) % 4294967296
    end
    return h
  end
  -- The shard (0 .. n-1) of an id: id mod n (Euclidean) for an integer as
  -- Redis reads one, else FNV-1a 32 mod n. The remainder is taken digit by
  -- digit, exact for every 64-bit id (a double is not, above 2^53).
  local function route_shard(id, n)
    if int(id) == nil then return fnv1a32(id) % n end
    local neg = string.byte(id, 1) == 45
    local r = 0
    for i = neg and 2 or 1, #id do r = (r * 10 + string.byte(id, i) - 48) % n end
    if neg and r ~= 0 then r = n - r end
    return r
  end
  -- 'ERR <family>: <msg>'.
  local function family_error(family, msg) return redis.error_reply('ERR ' .. family .. ': ' .. msg) end
  -- The value of SPREAD n: n, or nil and the error.
  local function spread_count(family, s)
    local n = int(s)
    if n == nil then return nil, redis.error_reply(NOTINT) end
    if n < 1 or n > 1024 then return nil, family_error(family, 'SPREAD must be from 1 to 1024') end
    return n
  end
  -- The shard record of key from the values of its meta fields `spread` and
  -- `shard` (false or nil when missing): {n =, i =}, or nil for no record,
  -- or nil and the corrupt-data error.
  local function parse_record(family, key, spread, shard)
    local meta = key .. ':meta'
    if not spread then
      if shard then return nil, data_error(family, 'corrupt data', meta, 'spread') end
      return nil
    end
    local n = int(spread)
    if n == nil or n < 1 or n > 1024 then return nil, data_error(family, 'corrupt data', meta, 'spread') end
    local i = nil
    if shard then i = int(shard) end
    if i == nil or i < 0 or i >= n or shard_index(key, n) ~= i then
      return nil, data_error(family, 'corrupt data', meta, 'shard')
    end
    return {n = n, i = i}
  end
  -- The record of key, read from its meta when that is a Hash (the caller
  -- checks the type where the module does).
  local function read_record(family, key)
    local meta = key .. ':meta'
    if redis.call('TYPE', meta).ok ~= 'hash' then return nil end
    local v = redis.call('HMGET', meta, 'spread', 'shard')
    return parse_record(family, key, v[1], v[2])
  end
  local function not_a_shard_key(family, key, n)
    return family_error(family, "'" .. key_text(key) .. "' is not a shard key of " .. n .. ' shards (see docs/spread.md)')
  end
  -- How a command on key runs, from the declared SPREAD n and the record
  -- (shard.rs resolve): the shard, or nil for a single-slot entity, or nil
  -- and the error. has_data() tells a deleted record from a missing shard.
  local function resolve(family, key, declared, rec, has_data)
    if declared == nil then
      -- Shard 0's key names it whatever the count: with data and no
      -- record, its record was deleted.
      if rec == nil and is_first_shard_key(key) and has_data() then
        return nil, data_error(family, 'corrupt data', key .. ':meta', 'spread')
      end
      return rec
    end
    if rec then
      if rec.n == declared then return rec end
      return nil, family_error(family, "shard counts disagree: '" .. key_text(key) .. "' is shard " .. rec.i
        .. ' of ' .. rec.n .. ', the call says ' .. declared)
    end
    local i = shard_index(key, declared)
    if i == nil then return nil, not_a_shard_key(family, key, declared) end
    if has_data() then return nil, data_error(family, 'corrupt data', key .. ':meta', 'spread') end
    return nil, family_error(family, "shard '" .. key_text(key) .. "' (" .. i .. ' of ' .. declared .. ') does not exist')
  end
  -- The error for an id of shard j sent to shard sh of key: names the key
  -- the call should have gone to.
  local function wrong_shard(family, what, key, sh, id, j)
    local _, base = split_shard_key(key)
    return family_error(family, 'wrong shard: ' .. what .. " '" .. key_text(id) .. "' belongs to '"
      .. key_text(shard_key(base or key, sh.n, j)) .. "' (shard " .. j .. ' of ' .. sh.n .. ')')
  end
  -- nil when id belongs to shard sh, else the wrong-shard error.
  local function check_owner(family, what, key, sh, id)
    local j = route_shard(id, sh.n)
    if j == sh.i then return nil end
    return wrong_shard(family, what, key, sh, id, j)
  end
  -- For a single-slot command on base that found no entity: the error when
  -- base is the base key of a spread entity (its shard 0 records one), or
  -- when shard 0 holds data (`data`: the family's data keys, as for
  -- holds_data) without a record (scope.rs refuse_base).
  local function refuse_spread_base(family, base, data)
    local k0 = first_shard_key(base)
    local meta = k0 .. ':meta'
    local no_record = function()
      if holds_data(k0, data) then return data_error(family, 'corrupt data', meta, 'spread') end
      return nil
    end
    local t = redis.call('TYPE', meta).ok
    if t == 'none' then return no_record() end
    if t ~= 'hash' then return nil end
    local n = redis.call('HGET', meta, 'spread')
    if not n then return no_record() end
    return family_error(family, "'" .. key_text(base) .. "' is spread over " .. n
      .. " shards: call its shard keys ('" .. key_text(k0) .. "' is shard 0) or use a client library")
  end
  -- Redis Cluster's hash-tag test: a '{' with a non-empty '...}' after it.
  local function has_hash_tag(k)
    local open = string.find(k, '{', 1, true)
    if not open then return false end
    local close = string.find(k, '}', open + 1, true)
    return close ~= nil and close > open + 1
  end
  -- True on a cluster node (a script cannot read the module's context
  -- flags; INFO says it).
  local function cluster_enabled()
    return string.find(redis.call('INFO', 'cluster'), 'cluster_enabled:1', 1, true) ~= nil
  end
  S.crc16 = crc16
  S.key_slot = key_slot
  S.slot_tag = slot_tag
  S.shard_slot = shard_slot
  S.shard_key = shard_key
  S.split_shard_key = split_shard_key
  S.shard_index = shard_index
  S.first_shard_key = first_shard_key
  S.is_first_shard_key = is_first_shard_key
  S.holds_data = holds_data
  S.fnv1a32 = fnv1a32
  S.route_shard = route_shard
  S.family_error = family_error
  S.spread_count = spread_count
  S.parse_record = parse_record
  S.read_record = read_record
  S.not_a_shard_key = not_a_shard_key
  S.resolve = resolve
  S.wrong_shard = wrong_shard
  S.check_owner = check_owner
  S.refuse_spread_base = refuse_spread_base
  S.has_hash_tag = has_hash_tag
  S.cluster_enabled = cluster_enabled
  spread_helpers = S
  return S
end
-- True when k may be a shard key (`{` and the tag of its own slot): one
-- byte for a key that does not start with `{`.
local function looks_like_shard(k)
  if string.byte(k, 1) ~= 123 then return false end
  -- A table tag has 1 to 3 characters: longer `{…}` prefixes (a hash tag
  -- such as `{user:42}`) and a bare tag (`{bm}`: the base is empty) are
  -- told apart without building the helpers.
  local close = string.find(k, '}', 2, true)
  if not close or close < 3 or close > 5 or close == #k then return false end
  return spread().split_shard_key(k) ~= nil
end
