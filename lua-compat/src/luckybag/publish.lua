-- LUCKYBAG.PUBLISH key [user score [user score ...]] [LAST user score] [VERIFY] SPREAD n
-- LUCKYBAG.PUBLISH K [user score ...] [LAST user score] [VERIFY] SPREAD n ->
-- winners stored: spread bag, draw step 5 on every shard: checks that the
-- shard's winners are its true top (its own best candidates, and its best
-- non-winner ranks after LAST, the global list's last winner; without
-- LAST there must be none), then stores them in K:winners; the shard is
-- drawn. VERIFY checks only and writes nothing.
--@ keys 1

local B = KEYS[1]
if #ARGV < 2 then return arity('luckybag.publish') end
local last, declared = #ARGV, nil
if #ARGV >= 2 and string.upper(ARGV[#ARGV - 1]) == 'SPREAD' then
  local n, se = spread().spread_count('luckybag', ARGV[#ARGV])
  if se then return se end
  declared = n
  last = #ARGV - 2
end
-- VERIFY is never a score and a pair list is even: a trailing VERIFY,
-- then an odd rest ending in `LAST user score`, are the options.
local verify = last >= 1 and string.upper(ARGV[last]) == 'VERIFY'
if verify then last = last - 1 end
local cut = nil
if last % 2 == 1 and last >= 3 and string.upper(ARGV[last - 2]) == 'LAST' then
  cut = {ARGV[last - 1], ARGV[last]}
  last = last - 3
end
local sh, meta, e = draw_shard(B, declared, false)
if e then return e end
local won = B .. ':winners'
if not typed(won, 'zset') then return redis.error_reply(WRONGTYPE) end
local raw = read_meta(meta, {'winners', 'shards', 'state'})
local winners, e1 = meta_value(meta, raw, 'winners')
if e1 then return e1 end
local shards, e2 = meta_value(meta, raw, 'shards')
if e2 then return e2 end
local state, e3 = meta_value(meta, raw, 'state')
if e3 then return e3 end
local list, e4 = winner_list(ARGV, 1, last, winners)
if e4 then return e4 end
-- LAST: a score, and ranking after (or being) the shard's last winner.
if cut then
  local r = score_r(cut[2])
  if not r then return ferr(ERR_WINNER_SCORE) end
  cut = {cut[1], r}
  local with = {}
  for k, w in ipairs(list) do with[k] = w end
  local tail = list[#list]
  if not (tail and tail[1] == cut[1] and tail[2] == cut[2]) then with[#with + 1] = cut end
  local le = check_winner_list(with, winners)
  if le then return le end
end
for _, w in ipairs(list) do
  local oe = spread().check_owner('luckybag', 'user', B, sh, w[1])
  if oe then return oe end
  local cand = B .. ':cand:' .. shard_of(w[1], shards)
  if not typed(cand, 'zset') then return redis.error_reply(WRONGTYPE) end
  local sc = redis.call('ZSCORE', cand, w[1])
  if not sc or tonumber(sc) ~= w[2] then
    return ferr("'" .. key_text(w[1]) .. "' is not a candidate of '" .. key_text(B) .. "' with score " .. r_text(w[2]))
  end
end
if state == 'open' then
  return ferr("shard '" .. key_text(B) .. "' is not frozen (LUCKYBAG.FREEZE first)")
end
-- The true top: the shard's best #list + 1 over its internal pools.
local top, te = top_candidates(B, shards, #list + 1)
if te then return te end
local function left_out(c, above)
  local why = 'the winner list is shorter than WINNERS without LAST'
  if above then why = "does not rank after '" .. key_text(above[1]) .. "' with score " .. r_text(above[2]) end
  return ferr("not the true top: '" .. key_text(c[1]) .. "' with score " .. r_text(c[2]) .. " of '"
    .. key_text(B) .. "' is not a winner but " .. why)
end
for k, w in ipairs(list) do
  local t = top[k]
  if not t then return left_out(w, nil) end
  if t[1] ~= w[1] or t[2] ~= w[2] then return left_out(t, w) end
end
local next_best = top[#list + 1]
if next_best and not (cut and ranks_first(cut, next_best)) then return left_out(next_best, cut) end
if state == 'drawn' then
  if same_list(stored_list(won, winners), list) then return #list end
  return ferr('the shard was published with other winners')
end
if verify then return #list end
write_list(meta, won, list)
redis.call('HSET', meta, 'state', 'drawn')
return #list
