-- DELAYQ.INFO key [NOW unix-ms]
-- KEYS[1] = B; ARGV = [NOW unix-ms].
-- Reply: {jobs, n, ready, n, scheduled, n, dead, n}.
-- Same replies, errors and stored data as the module (lua-compat/docs/delayq.md).
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
local now, err = parse_now(ARGV, 1)
if now == nil then return err end
now = now or clock_ms()
local e = check_types(B, {{'jobs', 'hash'}, {'due', 'zset'}, {'dead', 'zset'}})
if e then return e end
local jobs = redis.call('HLEN', B .. ':jobs')
local pending = redis.call('ZCARD', B .. ':due')
local dead = redis.call('ZCARD', B .. ':dead')
local ready = redis.call('ZCOUNT', B .. ':due', '-inf', fmt(now))
return {'jobs', jobs, 'ready', ready, 'scheduled', pending - ready, 'dead', dead}
