#!/usr/bin/env bash
# The image's command line: redis-server with hotpath loaded, the module's
# arguments taken from the environment. tests/docker.rs runs this script
# outside Docker, so what the container runs is tested.
#
#   HOTPATH_ARGS    module arguments, e.g. "like-recent 20 redpacket-max-count 500"
#                   (a bad one stops the server, with a log line naming it)
#   HOTPATH_MODULE  the module (default: where the image puts it)
#   HOTPATH_SERVER  the server binary (default: redis-server)
# Arguments to the script (`docker run IMAGE --maxmemory 1gb`, or a config
# file first) go to the server before --loadmodule.
set -euo pipefail
module=${HOTPATH_MODULE:-/usr/local/lib/redis/modules/libhotpath.so}
server=${HOTPATH_SERVER:-redis-server}
read -r -a module_args <<<"${HOTPATH_ARGS:-}"
if [ ! -f "$module" ]; then
  echo "hotpath-entrypoint: module $module not found" >&2
  exit 1
fi
cmd=("$server" "$@" --loadmodule "$module" "${module_args[@]}")
echo "hotpath-entrypoint: ${cmd[*]}"
# In the official redis image, its own entrypoint drops root for the redis
# user and turns protected mode off when no config file is given.
if [ "$server" = redis-server ] && command -v docker-entrypoint.sh >/dev/null; then
  exec docker-entrypoint.sh "${cmd[@]}"
fi
exec "${cmd[@]}"
