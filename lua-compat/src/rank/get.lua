-- RANK.GET key member [SPREAD n]
-- Lua twin of RANK.GET B member [SPREAD n] -> [points, rank,
-- achieved-unix-ms] or nil
-- KEYS[1] = B; ARGV = member [SPREAD n].
--@ keys 1
--@ flags no-writes


local B = KEYS[1]
if #ARGV < 1 then return arity('rank.get') end
local declared, de = only_spread(ARGV, 1, 'rank.get')
if de then return de end
if ARGV[1] == '' then return rank_err('user must not be empty') end
local l, sh = open_board(B, declared)
if not l then return sh end
if sh then
  local oe = spread().check_owner('rank', 'member', B, sh, ARGV[1])
  if oe then return oe end
end
if l.wide then
  local w, err = wide_entry(B, l, ARGV[1])
  if w == nil then return err end
  if not w then return false end
  return { w.points, redis.call('ZREVRANK', B, w.name), w.at }
end
local score = redis.call('ZSCORE', B, ARGV[1])
if not score then return false end
local points, achieved = decode(l, score)
if points == nil then return corrupt(B, ARGV[1]) end
return { points, redis.call('ZREVRANK', B, ARGV[1]), achieved }

