-- RATE.THROTTLE key max-burst count period-s [quantity] [NOW unix-ms | NOWUS unix-us] [IDEM token]
-- KEYS[1] = B; ARGV = max-burst count period-s [quantity] [time option].
-- redis-cell's CL.THROTTLE reply: [limited, limit, remaining,
-- retry-after-s, reset-after-s]; state shared with RATE.CHECK's GCRA.
--@ keys 1
--@ idem -5

local key = KEYS[1]
if #ARGV < 3 then
  return redis.error_reply("ERR wrong number of arguments for 'rate.throttle' command")
end
local max_burst = arg_int(ARGV[1], 0, MAX_COUNT - 1)
if not max_burst then return redis.error_reply(NOTINT) end
local per = arg_int(ARGV[2], 1, MAX_COUNT)
if not per then return redis.error_reply(NOTINT) end
local period_s = arg_int(ARGV[3], 1, 1000000000)
if not period_s then return redis.error_reply(NOTINT) end
local qty, now = 1, nil
local i = 4
local function time_option(kw, v)
  kw = string.upper(kw)
  if kw ~= 'NOW' and kw ~= 'NOWUS' then return nil end
  if v == nil then return 'syntax' end
  local n = arg_int(v, 0, (kw == 'NOW') and MAX_NOW or MAX_NOW * 1000)
  if not n then return 'notint' end
  return (kw == 'NOW') and n * 1000 or n
end
if i <= #ARGV then
  local t = time_option(ARGV[i], ARGV[i + 1])
  if t == 'syntax' then return redis.error_reply(SYNTAX) end
  if t == 'notint' then return redis.error_reply(NOTINT) end
  if t then
    now = t
    i = i + 2
  else
    qty = arg_int(ARGV[i], 0, MAX_COUNT)
    if not qty then return redis.error_reply(NOTINT) end
    i = i + 1
    if i <= #ARGV then
      t = time_option(ARGV[i], ARGV[i + 1])
      if t == nil or t == 'syntax' then return redis.error_reply(SYNTAX) end
      if t == 'notint' then return redis.error_reply(NOTINT) end
      now = t
      i = i + 2
    end
  end
end
if i <= #ARGV then return redis.error_reply(SYNTAX) end
local L, P, B = per, period_s * 1000, max_burst + 1
local q, r = mdm(B, P, L)
if q > MAX_REFILL or (q == MAX_REFILL and r > 0) then
  return redis.error_reply('ERR rate: burst * period-ms / limit exceeds 4500000000000')
end
now = now or clock_us()
local kind, a, b, c = read_state(key)
if kind == 'error' then return a end
if kind and kind ~= 'gcra' then
  return redis.error_reply('ERR rate: key holds a ' .. kind .. ' limiter')
end
local allowed, remaining, retry, aq, ar, vq, new = gcra(L, P * 1000, B, kind and {a, b, c} or nil, now, qty)
-- redis-cell rounds a duration cut to whole milliseconds up to seconds.
local function secs(us) return cdiv(idiv(us, 1000), 1000) end
if retry >= 0 then retry = secs(vq) end
if new then
  redis.call('SET', key, tat_text(new), 'PX', math.max(cdiv(aq + ((ar > 0) and 1 or 0), 1000), 1))
end
return {allowed and 0 or 1, B, remaining, retry, secs(aq)}
