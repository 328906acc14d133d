#!/usr/bin/env bash
# `make clients-polyglot`: runs the Node (ioredis) and Go (go-redis)
# snippets of docs/clients.md against a redis-server with the module.
#
# The runtimes come from Debian's packages (nodejs/npm, golang-go), the
# libraries from the npm registry and the Go module proxy. Each language
# prints "<lang>: N passed, M failed" (one per snippet). A language whose
# runtime or library cannot be installed here fails the target with a
# message saying so: nothing is skipped silently.
#
# Offline Go: GO_MODULES_DIR=DIR takes go-redis and the modules it needs
# from sources in DIR instead of the proxy, laid out by module path like a
# vendor/ tree:
#   DIR/github.com/redis/go-redis/v9        (e.g. `git archive v9.0.5`)
#   DIR/github.com/cespare/xxhash/v2        (the version go-redis's go.mod names)
#   DIR/github.com/dgryski/go-rendezvous    (its commit, 9f7001d12a5f for v9.0.5)
# The script copies them, adds a go.mod where a module has none (as the
# proxy does), writes a `replace` line per module of go-redis's go.mod that
# DIR holds, and runs with GOPROXY=off: a module DIR lacks fails the build
# with Go's error. go-redis's test-only requirements (bsm/ginkgo,
# bsm/gomega) are not needed. The go-redis version reported is the one its
# version.go gives; GO_REDIS_VERSION is then not used.
#   make clients-polyglot GO_MODULES_DIR=/path/to/dir [SERVER=valkey-server]
set -uo pipefail
if [ -n "${GO_MODULES_DIR:-}" ]; then
  GO_MODULES_DIR=$(cd "$GO_MODULES_DIR" && pwd) || { echo "GO_MODULES_DIR: no such directory" >&2; exit 2; }
fi
cd "$(dirname "$0")/.."
root=$PWD
so=${HOTPATH_SO:-$root/target/release/libhotpath.so}
[ -f "$so" ] || { echo "no $so: run make build first" >&2; exit 2; }
SERVER=${SERVER:-redis-server}
IOREDIS_VERSION=${IOREDIS_VERSION:-5}
GO_REDIS_VERSION=${GO_REDIS_VERSION:-v9.0.5}
work=$(mktemp -d)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$SERVER" --port "$port" --save "" --appendonly no --daemonize no \
  --loadmodule "$so" >"$work/server.log" 2>&1 &
server_pid=$!
trap 'kill $server_pid 2>/dev/null; wait $server_pid 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 50); do redis-cli -p "$port" PING >/dev/null 2>&1 && break; sleep 0.1; done
redis-cli -p "$port" MODULE LIST | grep -q hotpath || { cat "$work/server.log"; echo "the server did not load the module" >&2; exit 1; }
failed=()

# Prints the fenced blocks of language $1 of docs/clients.md, NUL-separated.
blocks() {
  python3 - "$1" <<'PY'
import re, sys
text = open("docs/clients.md").read()
for b in re.findall(r"```" + sys.argv[1] + r"\n(.*?)```", text, re.S):
    sys.stdout.write(b + "\0")
PY
}

apt_install() {
  [ "$(id -u)" = 0 ] || { echo "installing $* needs root (apt-get)" >&2; return 1; }
  echo "installing $* from Debian's packages (log: $work/apt.log)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@"; } >"$work/apt.log" 2>&1 ||
    { tail -5 "$work/apt.log" >&2; return 1; }
}

# ---- Node
run_node() {
  command -v node >/dev/null && command -v npm >/dev/null || apt_install nodejs npm || {
    echo "node: nodejs/npm could not be installed from Debian's packages" >&2; return 1; }
  mkdir -p "$work/node" && cd "$work/node" || return 1
  npm init -y >/dev/null && npm install --no-audit --no-fund --silent "ioredis@$IOREDIS_VERSION" || {
    echo "node: ioredis could not be installed from the npm registry" >&2; return 1; }
  echo "ioredis $(node -p 'require("ioredis/package.json").version') on node $(node --version)"
  mapfile -d '' -t js < <(cd "$root" && blocks js)
  {
    echo "${js[0]}"
    echo "let passed = 0, failed = 0;"
    echo "(async () => {"
    for ((i = 1; i < ${#js[@]}; i++)); do
      echo "  try {"
      echo "${js[$i]}"
      echo "    passed++;"
      echo "  } catch (e) { failed++; console.error('snippet $i:', e.message); }"
    done
    echo "  await redis.quit();"
    echo "  console.log(\`node: \${passed} passed, \${failed} failed\`);"
    echo "  process.exit(failed ? 1 : 0);"
    echo "})();"
  } >snippets.js
  REDIS_URL="redis://127.0.0.1:$port" node snippets.js
}

# ---- Go
# GO_MODULES_DIR: go-redis and its requirements from local sources (header).
go_local_modules() {
  local dir=$GO_MODULES_DIR redis_mod=github.com/redis/go-redis/v9 mods mod version
  [ -f "$dir/$redis_mod/go.mod" ] || {
    echo "go: GO_MODULES_DIR=$dir has no $redis_mod/go.mod (go-redis's sources)" >&2; return 1; }
  version=$(sed -n 's/.*return "\([0-9][^"]*\)".*/\1/p' "$dir/$redis_mod/version.go")
  [ -n "$version" ] || { echo "go: no version in $dir/$redis_mod/version.go" >&2; return 1; }
  # go-redis itself, then every module its go.mod requires (one per line in
  # the require block, or `require path version`).
  mods=$(printf '%s\n' "$redis_mod"; awk '
    /^require \(/ { inblock = 1; next }
    inblock && /^\)/ { inblock = 0; next }
    inblock && NF >= 2 { print $1 }
    /^require [^(]/ { print $2 }' "$dir/$redis_mod/go.mod")
  for mod in $mods; do
    [ -d "$dir/$mod" ] || continue
    mkdir -p "$work/gomods/$mod" && cp -a "$dir/$mod/." "$work/gomods/$mod/" || return 1
    [ -f "$work/gomods/$mod/go.mod" ] || echo "module $mod" >"$work/gomods/$mod/go.mod"
    go mod edit -replace="$mod=$work/gomods/$mod" || return 1
  done
  go mod edit -require="$redis_mod@v$version" || return 1
  export GOPROXY=off GOSUMDB=off
}

run_go() {
  command -v go >/dev/null || apt_install golang-go || {
    echo "go: golang-go could not be installed from Debian's packages" >&2; return 1; }
  mkdir -p "$work/go" && cd "$work/go" || return 1
  mapfile -d '' -t gos < <(cd "$root" && blocks go)
  {
    echo "${gos[0]}"
    echo "func main() {"
    echo "	passed, failed := 0, 0"
    for ((i = 1; i < ${#gos[@]}; i++)); do
      echo "	func() {"
      echo "		defer func() {"
      echo "			if r := recover(); r != nil {"
      echo "				failed++"
      echo "				fmt.Fprintln(os.Stderr, \"snippet $i:\", r)"
      echo "			}"
      echo "		}()"
      echo "${gos[$i]}"
      echo "		passed++"
      echo "	}()"
    done
    echo "	fmt.Printf(\"go: %d passed, %d failed\\n\", passed, failed)"
    echo "	if failed > 0 {"
    echo "		os.Exit(1)"
    echo "	}"
    echo "}"
  } >main.go
  gofmt -e -l main.go >/dev/null || { echo "go: the snippets do not parse" >&2; return 1; }
  export GOPATH=$work/gopath GOCACHE=$work/gocache GOFLAGS=-mod=mod
  go mod init snippets >/dev/null 2>&1
  if [ -n "${GO_MODULES_DIR:-}" ]; then
    go_local_modules || return 1
  elif ! timeout 120 go get "github.com/redis/go-redis/v9@$GO_REDIS_VERSION" >"$work/go-get.log" 2>&1; then
    tail -3 "$work/go-get.log" >&2
    echo "go: github.com/redis/go-redis/v9 could not be fetched through the Go module proxy" \
      "($(go env GOPROXY)); the Go snippets parse (gofmt) but were NOT compiled or run;" \
      "GO_MODULES_DIR takes the modules from local sources (see this script's header)" >&2
    return 1
  fi
  echo "go-redis $(go list -m -f '{{.Version}}' github.com/redis/go-redis/v9)" \
    "(${GO_MODULES_DIR:+from $GO_MODULES_DIR, }GOPROXY=$(go env GOPROXY)) on $(go env GOVERSION)"
  go build -o snippets . || {
    echo "go: the snippets did not compile${GO_MODULES_DIR:+ (\"module lookup disabled by GOPROXY=off\": GO_MODULES_DIR lacks that module)}" >&2
    return 1; }
  REDIS_ADDR="127.0.0.1:$port" ./snippets
}

echo "== Node snippets (ioredis $IOREDIS_VERSION) on $("$SERVER" --version | head -c 40)"
redis-cli -p "$port" FLUSHALL >/dev/null
(run_node) || failed+=(node)
echo "== Go snippets (go-redis ${GO_MODULES_DIR:+from }${GO_MODULES_DIR:-$GO_REDIS_VERSION}) on $("$SERVER" --version | head -c 40)"
redis-cli -p "$port" FLUSHALL >/dev/null
(run_go) || failed+=(go)
if [ ${#failed[@]} -gt 0 ]; then
  echo "make clients-polyglot: failed: ${failed[*]}" >&2
  exit 1
fi
echo "make clients-polyglot: node and go snippets passed"
