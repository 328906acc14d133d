-- DELAYQ.EXTEND key id receipt lease-ms [NOW unix-ms]
-- KEYS[1] = B; ARGV = id receipt lease-ms [NOW unix-ms].
-- Reply: 1 when the lease was restarted, 0 for a stale receipt.
-- Same replies, errors and stored data as the module (lua-compat/docs/delayq.md).
--@ keys 1

local B = KEYS[1]
if #ARGV < 3 then
  return redis.error_reply("ERR wrong number of arguments for 'delayq.extend' command")
end
local id = ARGV[1]
if id == '' then return redis.error_reply('ERR delayq: id must not be empty') end
local receipt = int(ARGV[2])
if not receipt then return redis.error_reply(NOTINT) end
local lease = arg_int(ARGV[3], 1, MAX_DELAY)
if not lease then return redis.error_reply(NOTINT) end
local now, err = parse_now(ARGV, 4)
if now == nil then return err end
now = now or clock_ms()
local e = check_types(B, {{'jobs', 'hash'}, {'due', 'zset'}})
if e then return e end
local j, err2 = get_job(B, id)
if j == nil then return err2 end
if not j or not holds(j, receipt) or not redis.call('ZSCORE', B .. ':due', id) then return 0 end
redis.call('ZADD', B .. ':due', fmt(now + lease), id)
return 1
