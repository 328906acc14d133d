-- IDEM.GET key [NOW unix-ms]
-- KEYS[1] = B; ARGV = [NOW unix-ms].
-- Reply: {state, fingerprint, fence, lease_ms, result} (result nil unless
-- done), or nil when there is no record.
-- Same replies, errors and stored data as the module (lua-compat/docs/idem.md).
--@ keys 1
--@ flags no-writes

local B = KEYS[1]
local now, e = parse_now(ARGV, 1)
if not now then return e end
local r, err = open(B)
if r == nil then return err end
if not r then return false end
local state, left = r.state, 0
if state == 'running' then
  if now < r.lease then left = r.lease - now else state = 'ended' end
end
local result = false
if r.state == 'done' then result = r.result end
return {state, r.fp, r.fence, left, result}
