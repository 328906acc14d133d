#!/usr/bin/env bash
# Fills a GO_MODULES_DIR for `make clients-polyglot` (scripts/clients-polyglot.sh)
# from git, for a machine where the Go module proxy is out of reach:
#
#   scripts/go-modules-dir.sh OUT [GO_REDIS_REF]
#
# writes the sources of go-redis (GO_REDIS_REF, default v9.0.5) and of the
# two modules its build needs, at the versions its go.mod names, laid out by
# module path:
#   OUT/github.com/redis/go-redis/v9
#   OUT/github.com/cespare/xxhash/v2       (tag from go-redis's go.mod)
#   OUT/github.com/dgryski/go-rendezvous   (commit of its pseudo-version)
# The repositories are GO_REDIS_GIT, XXHASH_GIT and RENDEZVOUS_GIT: a local
# git directory (a clone or a bare mirror) is read in place, anything else
# is cloned (default: the GitHub URLs). go-redis's nested modules (example/,
# extra/) are left out, as the module proxy's zip leaves them out.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 OUT [GO_REDIS_REF]" >&2; exit 2; }
out=$1
ref=${2:-v9.0.5}
GO_REDIS_GIT=${GO_REDIS_GIT:-https://github.com/redis/go-redis}
XXHASH_GIT=${XXHASH_GIT:-https://github.com/cespare/xxhash}
RENDEZVOUS_GIT=${RENDEZVOUS_GIT:-https://github.com/dgryski/go-rendezvous}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# Prints a git directory holding repository $1 (in place, or a bare clone).
gitdir() {
  if [ -d "$1" ] && git -C "$1" rev-parse --git-dir >/dev/null 2>&1; then
    echo "$1"
  else
    local d
    d="$tmp/$(basename "$1").git"
    git clone --quiet --bare "$1" "$d" >&2
    echo "$d"
  fi
}

# extract GITDIR REF MODULE [pathspec...]: REF's tree into OUT/MODULE.
extract() {
  local g=$1 r=$2 mod=$3
  shift 3
  rm -rf "${out:?}/$mod" && mkdir -p "$out/$mod"
  git -C "$g" archive "$r" -- . "$@" | tar -x -C "$out/$mod"
  echo "$mod: $r"
}

redis_git=$(gitdir "$GO_REDIS_GIT")
gomod=$(git -C "$redis_git" show "$ref:go.mod")
grep -q '^module github.com/redis/go-redis/v9$' <<<"$gomod" ||
  { echo "$ref of $GO_REDIS_GIT is not github.com/redis/go-redis/v9" >&2; exit 1; }
xxhash=$(awk '$1 == "github.com/cespare/xxhash/v2" { print $2 }' <<<"$gomod")
rendezvous=$(awk '$1 == "github.com/dgryski/go-rendezvous" { print $2 }' <<<"$gomod")
[ -n "$xxhash" ] && [ -n "$rendezvous" ] ||
  { echo "$ref's go.mod does not name xxhash/v2 and go-rendezvous" >&2; exit 1; }

extract "$redis_git" "$ref" github.com/redis/go-redis/v9 ':!example' ':!extra'
extract "$(gitdir "$XXHASH_GIT")" "$xxhash" github.com/cespare/xxhash/v2
# v0.0.0-20200823014737-9f7001d12a5f: the commit is the part after the last '-'.
extract "$(gitdir "$RENDEZVOUS_GIT")" "${rendezvous##*-}" github.com/dgryski/go-rendezvous
echo "GO_MODULES_DIR=$out"
