#!/usr/bin/env bash
# Runs the side-by-side benchmark and writes its table into README.md
# between the bench markers (bench/results.md keeps the raw output).
# Uses the project's virtualenv (scripts/deps.sh makes it).
set -euo pipefail
cd "$(dirname "$0")/.."
py=${HOTPATH_PYTHON:-.venv/bin/python}
if [ ! -x "$py" ]; then
  echo "$py is missing: run make deps (scripts/deps.sh) first" >&2
  exit 1
fi
"$py" bench/run.py "$@"
if [ $# -eq 0 ]; then
  "$py" - <<'PY'
import re
table = open("bench/results.md").read().strip()
readme = open("README.md").read()
new = re.sub(r"(<!-- bench:start -->\n).*?(\n<!-- bench:end -->)",
             lambda m: m.group(1) + table + m.group(2), readme, flags=re.S)
open("README.md", "w").write(new)
print("README.md performance table updated")
PY
fi
