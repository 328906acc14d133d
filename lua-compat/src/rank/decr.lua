-- RANK.DECR key member delta [NOW unix-ms] [SPREAD n]
-- Lua twin of RANK.DECR B member delta [NOW unix-ms] [SPREAD n] -> the new
-- points (RANK.INCR of -delta)
-- KEYS[1] = B; ARGV = member delta [NOW unix-ms], verbatim.
--@ keys 1


return incr_cmd(KEYS[1], ARGV, true)
