#!/usr/bin/env bash
# Loads hotpath's Lua twins, as one Functions library (lua-compat/generated/hotpath.lua),
# into a Redis 7+ or Valkey server: FUNCTION LOAD REPLACE, so that loading a
# newer version over an older one just works.
#
# Usage: scripts/lua-load.sh [URL]
#   URL: redis://[user:password@]host[:port][/db] (user "default" when
#   there are no ACL users: redis-cli 7.0 reads an empty one as a name) or
#   rediss://… for TLS;
#   default $REDIS_URL, else redis://127.0.0.1:6379. Needs redis-cli
#   (Debian: redis-tools).
# `make lua-load URL=…` runs it. On a cluster, load it into every master
# (redis-cli --cluster call HOST:PORT FUNCTION LOAD REPLACE … does that).
# Servers without FUNCTION (Redis 6) use the standalone scripts with EVALSHA
# instead (lua-compat/README.md).
set -euo pipefail
cd "$(dirname "$0")/.."
url=${1:-${REDIS_URL:-redis://127.0.0.1:6379}}
lib=lua-compat/generated/hotpath.lua
cli=(redis-cli --no-auth-warning -u "$url")
# The URL as shown in messages: without its password.
shown=$(printf '%s' "$url" | sed 's#//[^@/]*@#//#')
# redis-cli exits 0 on an error reply: the reply itself is checked. -x sends
# the file byte for byte as the last argument.
if ! out=$("${cli[@]}" -x FUNCTION LOAD REPLACE < "$lib"); then
  echo "lua-load: cannot reach $shown" >&2
  exit 1
fi
if [ "$out" != hotpath ]; then
  echo "lua-load: FUNCTION LOAD REPLACE failed: $out" >&2
  case $out in
    *"unknown command"*) echo "lua-load: this server has no Functions (Redis < 7): use the EVALSHA scripts (lua-compat/README.md)" >&2 ;;
  esac
  exit 1
fi
want=$(grep -c '^redis.register_function' "$lib")
got=$("${cli[@]}" FUNCTION LIST LIBRARYNAME hotpath | awk '/^hotpath_/ { n++ } END { print n + 0 }')
if [ "$got" != "$want" ]; then
  echo "lua-load: the server lists $got hotpath functions, the library registers $want" >&2
  exit 1
fi
echo "lua-load: library hotpath loaded into $shown ($got functions)"
