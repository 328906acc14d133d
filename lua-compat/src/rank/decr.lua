-- RANK.DECR key member delta [NOW unix-ms] [SPREAD n] [IDEM token]
-- (IDEM token: the module only; this twin does not take it yet and
-- refuses it with a syntax or arity error, docs/idem.md.)
-- Lua twin of RANK.DECR B member delta [NOW unix-ms] [SPREAD n] -> the new
-- points (RANK.INCR of -delta)
-- KEYS[1] = B; ARGV = member delta [NOW unix-ms], verbatim.
--@ keys 1


return incr_cmd(KEYS[1], ARGV, true)
