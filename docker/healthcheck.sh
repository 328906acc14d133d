#!/usr/bin/env bash
# The image's HEALTHCHECK: healthy when the server answers PING and has
# hotpath loaded. HOTPATH_PORT is the port (default 6379); REDISCLI_AUTH,
# when set, is the password redis-cli uses.
set -euo pipefail
port=${HOTPATH_PORT:-6379}
[ "$(redis-cli -h 127.0.0.1 -p "$port" PING)" = PONG ]
modules=$(redis-cli -h 127.0.0.1 -p "$port" MODULE LIST)
grep -qx hotpath <<<"$modules"
