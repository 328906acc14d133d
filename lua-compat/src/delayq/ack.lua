-- DELAYQ.ACK key id receipt
-- KEYS[1] = B; ARGV = id receipt.
-- Reply: 1 when the job was removed, 0 for a stale receipt.
-- Same replies, errors and stored data as the module (lua-compat/docs/delayq.md).
--@ keys 1
--@ flags allow-oom

local B = KEYS[1]
if #ARGV ~= 2 then
  return redis.error_reply("ERR wrong number of arguments for 'delayq.ack' command")
end
local id = ARGV[1]
if id == '' then return redis.error_reply('ERR delayq: id must not be empty') end
local receipt = int(ARGV[2])
if not receipt then return redis.error_reply(NOTINT) end
local e = check_types(B, {{'jobs', 'hash'}, {'due', 'zset'}})
if e then return e end
local j, err = get_job(B, id)
if j == nil then return err end
if not j or not holds(j, receipt) then return 0 end
redis.call('HDEL', B .. ':jobs', id)
redis.call('ZREM', B .. ':due', id)
return 1
