-- LIKE.REM key user [SPREAD n]
-- Lua twin of LIKE.REM: LIKE.REM B user [SPREAD n] -> [changed, count]
-- KEYS: B
-- ARGV: like-max-id, like-promote-at, like-recent (the module's configs),
-- then the command's arguments after the key(s), verbatim.
-- Same replies, errors and derived keys as the module (see README.md).
--@ keys 1

-- One write for ADD, REM and TOGGLE (lua-compat/src/like/family.lua).
return write('rem', 'like.rem', KEYS, ARGV)
