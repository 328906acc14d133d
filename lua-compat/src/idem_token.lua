-- `IDEM token` on a twin's write (docs/idem.md, "IDEM tokens on writes"
-- and "Lua twins"): the module's rules and the module's stored records,
-- so that a token stored by the module replays through the twin and the
-- reverse. The generator wraps the body of every twin whose header has a
-- `--@ idem` line in idem_token(). A script cannot read module configs:
-- idem-token-ttl, idem-token-cap and idem-token-max are their defaults.
local IDEM_TOKEN_TTL_MS = 86400000
local IDEM_TOKEN_CAP = 1000
local IDEM_TOKEN_MAX = 40
-- An integer (within +-2^53) as an i64, 8 bytes little-endian (struct
-- packs it in C: a loop of string.char here cost more than the SHA-1).
local function le64(n) return struct.pack('<i8', n) end
-- The i64 little-endian at s[at .. at + 7]: the bytes read in one call
-- and summed from the top one in the same order as ever (a value past
-- 2^53 rounds the same).
local function read_le64(s, at)
  local b1, b2, b3, b4, b5, b6, b7, b8 = string.byte(s, at, at + 7)
  if b8 >= 128 then
    local n = (255 - b8) * 256 + (255 - b7)
    n = ((n * 256 + (255 - b6)) * 256 + (255 - b5)) * 256 + (255 - b4)
    n = ((n * 256 + (255 - b3)) * 256 + (255 - b2)) * 256 + (255 - b1)
    return -n - 1
  end
  local n = b8 * 256 + b7
  n = ((n * 256 + b6) * 256 + b5) * 256 + b4
  return ((n * 256 + b3) * 256 + b2) * 256 + b1
end
-- A record's expiry (unix ms, 0 .. 2^48 - 1) as 6 bytes little-endian.
local function le48(n) return struct.pack('<I6', n) end
-- The unsigned 48-bit little-endian at s[at .. at + 5].
local function read_le48(s, at)
  local b1, b2, b3, b4, b5, b6 = string.byte(s, at, at + 5)
  return ((((b6 * 256 + b5) * 256 + b4) * 256 + b3) * 256 + b2) * 256 + b1
end
-- The record's layout (src/idem_token/wire.rs): expiry (6 bytes), digest
-- (5 bytes), reply tree; the store's field '' holds the next sweep instant
-- and the store's expiry (two i64 little-endian).
local IDEM_HEADER = 11
local IDEM_MAX_EXPIRY = 281474976710655
-- Appends a tag byte (its code) and a LEB128 varint (v >= 0) to the
-- parts `out`: one string.char call when v < 128.
local function idem_head(out, tag, v)
  if v < 128 then
    out[#out + 1] = string.char(tag, v)
    return
  end
  out[#out + 1] = string.char(tag)
  while v >= 128 do
    local b = v % 128
    out[#out + 1] = string.char(b + 128)
    v = (v - b) / 128
  end
  out[#out + 1] = string.char(v)
end
-- Appends the reply tree of `v`, a script's reply as Redis sends it
-- (src/idem_token/wire.rs: tag byte, varints, integers zigzag): a number
-- is an integer (cut toward zero), a string a bulk, {ok=} a status,
-- {err=} an error, false or nil a null, true the integer 1, any other
-- table an array up to its first nil.
local function idem_encode(out, v)
  local t = type(v)
  if t == 'number' then
    local n = v >= 0 and math.floor(v) or -math.floor(-v)
    idem_head(out, 105, n >= 0 and 2 * n or -2 * n - 1) -- i
  elseif t == 'string' then
    idem_head(out, 98, #v) -- b
    out[#out + 1] = v
  elseif t == 'table' and type(v.err) == 'string' then
    idem_head(out, 101, #v.err) -- e
    out[#out + 1] = v.err
  elseif t == 'table' and type(v.ok) == 'string' then
    idem_head(out, 115, #v.ok) -- s
    out[#out + 1] = v.ok
  elseif t == 'table' then
    local n = 0
    while v[n + 1] ~= nil do n = n + 1 end
    idem_head(out, 97, n) -- a
    for i = 1, n do idem_encode(out, v[i]) end
  elseif v == true then
    out[#out + 1] = 'i\2'
  else
    out[#out + 1] = 'n'
  end
end
-- Reads a varint at `pos`: the value and the position after it, or nil.
local function idem_read_varint(s, pos)
  local v, mul = 0, 1
  for _ = 1, 10 do
    local b = string.byte(s, pos)
    if not b then return nil end
    pos = pos + 1
    v = v + (b % 128) * mul
    if b < 128 then return v, pos end
    mul = mul * 128
  end
  return nil
end
-- Reads one reply tree at `pos` as the script's reply that sends what a
-- RESP2 client of the module gets (a map is its 2n items, a record its
-- values, a double its text, a boolean 1 or 0): the position after it
-- and the value, or nil when the tree is not well formed (the module's
-- wire::valid).
local function idem_decode(s, pos, cmd, depth)
  if depth > 64 then return nil end
  -- The tag and the next byte in one call (a C call costs more than the
  -- rest of a node): that byte is the whole varint when below 128.
  local tag, n = string.byte(s, pos, pos + 1)
  pos = pos + 1
  if tag == 105 or tag == 98 or tag == 115 or tag == 101 or tag == 78
    or tag == 97 or tag == 83 or tag == 109 or tag == 114 then
    if n and n < 128 then
      pos = pos + 1
    else
      n, pos = idem_read_varint(s, pos)
      if not n then return nil end
    end
  end
  if tag == 105 then -- i
    if n % 2 == 0 then return pos, n / 2 end
    return pos, -(n + 1) / 2
  elseif tag == 98 or tag == 78 or tag == 115 or tag == 101 then -- b N s e
    if pos + n - 1 > #s then return nil end
    local text = string.sub(s, pos, pos + n - 1)
    pos = pos + n
    if tag == 98 or tag == 78 then return pos, text end
    if string.find(text, '[%z\r\n]') then return nil end
    if tag == 115 then return pos, {ok = text} end
    return pos, redis.error_reply(text)
  elseif tag == 110 then -- n
    return pos, false
  elseif tag == 65 then -- A
    return pos, arity(cmd)
  elseif tag == 116 or tag == 102 then -- t f
    return pos, tag == 116 and 1 or 0
  elseif tag == 100 then -- d
    if pos + 7 > #s then return nil end
    local v = struct.unpack('<d', string.sub(s, pos, pos + 7))
    return pos + 8, string.format('%.17g', v)
  elseif tag == 97 or tag == 83 or tag == 109 or tag == 114 then -- a S m r
    if n > #s - pos + 1 then return nil end
    local pairs_of = tag == 109 or tag == 114
    local items, k = {}, 0
    for i = 1, pairs_of and 2 * n or n do
      local v
      pos, v = idem_decode(s, pos, cmd, depth + 1)
      if not pos then return nil end
      if tag ~= 114 or i % 2 == 0 then
        k = k + 1
        items[k] = v
      end
    end
    return pos, items
  end
  return nil
end
-- Stores `token` -> expiry | digest | reply in the store `store` at `now`,
-- after a sweep when one is due: the module's store() and wire::plan.
-- `m` is the store's field '' as the lookup read it (or nil).
local function idem_store(store, token, digest, reply, now, m)
  local ttl, cap = IDEM_TOKEN_TTL_MS, IDEM_TOKEN_CAP
  local expiry = math.min(now + ttl, IDEM_MAX_EXPIRY)
  local meta, meta_at
  if m and #m == 16 then
    meta, meta_at = read_le64(m, 1), read_le64(m, 9)
  end
  local fields = redis.call('HLEN', store) - (meta and 1 or 0)
  local due
  if meta then due = now >= meta else due = fields > 0 end
  due = due or fields >= cap
  local due_at
  if due then
    local all = redis.call('HGETALL', store)
    local dead, live = {}, {}
    for i = 1, #all, 2 do
      local f, v = all[i], all[i + 1]
      if f ~= '' and f ~= token then
        local e = (#v >= IDEM_HEADER) and read_le48(v, 1) or -math.huge
        if e <= now then dead[#dead + 1] = f else live[#live + 1] = {e, #live, f} end
      end
    end
    if #live + 1 > cap then
      local go = math.min(#live + 1 - cap + math.floor(cap / 16), #live)
      table.sort(live, function(a, b) return a[1] < b[1] or (a[1] == b[1] and a[2] < b[2]) end)
      for i = 1, go do dead[#dead + 1] = live[i][3] end
      local kept = {}
      for i = go + 1, #live do kept[#kept + 1] = live[i] end
      live = kept
    end
    local earliest = math.huge
    for _, l in ipairs(live) do if l[1] < earliest then earliest = l[1] end end
    due_at = math.min(math.max(earliest, now + math.floor(ttl / 16)), expiry)
    for i = 1, #dead, 1000 do
      redis.call('HDEL', store, unpack(dead, i, math.min(i + 999, #dead)))
    end
  else
    due_at = math.min(meta or expiry, expiry)
  end
  local record = le48(expiry) .. digest .. reply
  -- The store outlives its latest token by up to TTL/16; its expiry is
  -- the one the field '' holds (the key's own only when the field is
  -- missing: PEXPIRETIME on Redis 7, PTTL before).
  local at = meta_at
  if not meta then
    if redis.call('EXISTS', store) == 1 then
      at = redis.pcall('PEXPIRETIME', store)
      if type(at) ~= 'number' then
        local pt = redis.call('PTTL', store)
        at = pt >= 0 and now + pt or -1
      end
      if at < 0 then at = nil end
    end
  end
  local new_at
  if not (at and at >= expiry) then new_at = expiry + math.floor(ttl / 16) end
  local now_at = new_at or at or expiry
  if meta ~= due_at or meta_at ~= now_at then
    redis.call('HSET', store, token, record, '', le64(due_at) .. le64(now_at))
  else
    redis.call('HSET', store, token, record)
  end
  if new_at then redis.call('PEXPIREAT', store, new_at) end
end
-- Runs a twin's write `run(keys, argv)` with the module's `IDEM token`
-- rules: `cmd` the command's name, `min` its arity (the module's), `nk` 1
-- when the command counts its keys (numkeys), `nconf` the configs before
-- the command's arguments in `argv` (LIKE). Without the option: run.
-- With it: strip it (only when the arguments without it still meet the
-- arity; last, or before a final NOW/NOWUS), look the token up in
-- `<first key>:idem`, replay / refuse a mismatch / run and store.
local function idem_token(cmd, min, nk, nconf, record, keys, argv, run)
  local n = #argv
  local argc = 1 + nk + #keys + n - nconf
  local p
  if argc >= min + 2 and argc >= 4 then
    if string.upper(argv[n - 1]) == 'IDEM' then
      p = n - 1
    elseif argc >= min + 4 and argc >= 6 then
      local kw = string.upper(argv[n - 1])
      if (kw == 'NOW' or kw == 'NOWUS') and string.upper(argv[n - 3]) == 'IDEM' then p = n - 3 end
    end
  end
  if not p then return run(keys, argv) end
  local token = argv[p + 1]
  local args = {}
  for i = 1, n do
    if i ~= p and i ~= p + 1 then args[#args + 1] = argv[i] end
  end
  local family = string.match(cmd, '^[^.]*')
  if #token == 0 or #token > IDEM_TOKEN_MAX then
    return redis.error_reply('ERR ' .. family .. ': IDEM token must be 1 to ' .. fmt(IDEM_TOKEN_MAX) .. ' bytes')
  end
  -- The digest (wire::digest): the first 5 bytes of the SHA-1 of the
  -- name and every argument after the key, each after its length.
  local parts = {le64(#cmd), string.lower(cmd)}
  local np = 2
  if nk == 1 then
    local a = fmt(#keys)
    parts[3], parts[4], np = le64(#a), a, 4
  end
  for i = 2, #keys do
    local a = keys[i]
    parts[np + 1], parts[np + 2], np = le64(#a), a, np + 2
  end
  for i = nconf + 1, #args do
    local a = args[i]
    parts[np + 1], parts[np + 2], np = le64(#a), a, np + 2
  end
  -- The first 10 hex digits (40 bits, exact in a double) as 5 bytes.
  local digest = struct.pack('>I5', tonumber(string.sub(redis.sha1hex(table.concat(parts)), 1, 10), 16))
  local store = keys[1] .. ':idem'
  -- One HMGET is the type check too (a missing store reads as a hash
  -- without the token): no TYPE call.
  local got = redis.pcall('HMGET', store, token, '')
  if got.err then return redis.error_reply(WRONGTYPE) end
  local now = clock_ms()
  local m = got[2] or nil
  do
    local v = got[1]
    if v then
      local pos, reply
      if #v >= IDEM_HEADER then pos, reply = idem_decode(v, IDEM_HEADER + 1, cmd, 0) end
      if pos ~= #v + 1 then return data_error(family, 'corrupt data', store) end
      if read_le48(v, 1) > now then
        if string.sub(v, 7, IDEM_HEADER) ~= digest then
          return redis.error_reply('ERR ' .. family .. ': IDEM token reused with other arguments')
        end
        return reply
      end
    end
  end
  local r = run(keys, args)
  local out = {}
  if record and type(r) == 'table' and r.err == nil and r.ok == nil and #r == #record then
    idem_head(out, 114, #record) -- r
    for i = 1, #record do
      idem_encode(out, record[i])
      idem_encode(out, r[i])
    end
  else
    idem_encode(out, r)
  end
  idem_store(store, token, digest, table.concat(out), now, m)
  return r
end
