#!/usr/bin/env bash
# Runs the side-by-side benchmark and writes its table into README.md
# between the bench markers (bench/results.md keeps the raw output).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 bench/run.py "$@"
if [ $# -eq 0 ]; then
  python3 - <<'PY'
import re
table = open("bench/results.md").read().strip()
readme = open("README.md").read()
new = re.sub(r"(<!-- bench:start -->\n).*?(\n<!-- bench:end -->)",
             lambda m: m.group(1) + table + m.group(2), readme, flags=re.S)
open("README.md", "w").write(new)
print("README.md performance table updated")
PY
fi
