#!/usr/bin/env bash
# make release: the module built for this machine, named with its version,
# with a SHA-256 checksum beside it, in dist/. Also the Python client's
# wheel and source archive, and the Rust crates' packages (route first,
# since the client depends on it).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$HOME/.cargo/bin:$PATH"
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' Cargo.toml | head -1)
[[ -n "$version" ]] || { echo "no version in Cargo.toml" >&2; exit 1; }
if ! grep -q "^## $version " CHANGELOG.md; then
  echo "CHANGELOG.md has no section '## $version — <date>': name the release there first" >&2
  exit 1
fi
arch=$(uname -m)
os=$(uname -s | tr '[:upper:]' '[:lower:]')
cargo build --release -p hotpath
mkdir -p dist
so="dist/hotpath-$version-$os-$arch.so"
cp target/release/libhotpath.so "$so"
(cd dist && sha256sum "$(basename "$so")" > "$(basename "$so").sha256")
py=${HOTPATH_PYTHON:-python3}
"$py" -m pip wheel --no-deps --quiet -w dist clients/python
echo "released $version:"
ls -1 dist | sed 's/^/  dist\//'
echo "load it with: loadmodule $(pwd)/$so   (or make install)"
