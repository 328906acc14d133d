-- RANK.DECR key member delta [NOW unix-ms] [SPREAD n] [IDEM token]
-- Lua twin of RANK.DECR B member delta [NOW unix-ms] [SPREAD n] -> the new
-- points (RANK.INCR of -delta)
-- KEYS[1] = B; ARGV = member delta [NOW unix-ms], verbatim.
--@ keys 1
--@ idem -4


return incr_cmd(KEYS[1], ARGV, true)
