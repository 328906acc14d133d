-- IDEM.ABORT key fence
-- KEYS[1] = B; ARGV = fence.
-- Reply: 1 when the record running under fence is now aborted, else 0.
-- Same replies, errors and stored data as the module (lua-compat/docs/idem.md).
--@ keys 1

local B = KEYS[1]
if #ARGV ~= 1 then return arity('idem.abort') end
local fence = int(ARGV[1])
if not fence then return redis.error_reply(NOTINT) end
local r, err = open(B)
if r == nil then return err end
if not r or r.state ~= 'running' or r.fence ~= fence then return 0 end
redis.call('HSET', B, 'state', 'aborted')
return 1
