-- LIKE.TOGGLE key user [NOW unix-ms] [SPREAD n] [IDEM token]
-- Lua twin of LIKE.TOGGLE: LIKE.TOGGLE B user [NOW unix-ms] [SPREAD n] -> [liked, count]
-- KEYS: B
-- ARGV: like-max-id, like-promote-at, like-recent (the module's configs),
-- then the command's arguments after the key(s), verbatim.
-- Same replies, errors and derived keys as the module (see README.md).
--@ keys 1
--@ idem -3 configs 3

-- One write for ADD, REM and TOGGLE (lua-compat/src/like/family.lua).
return write('toggle', 'like.toggle', KEYS, ARGV)
