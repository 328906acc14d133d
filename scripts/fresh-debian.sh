#!/usr/bin/env bash
# Checks the README's promise on a pristine Debian 12: builds a bookworm
# minbase chroot with debootstrap, installs only make, git, python3 and
# ca-certificates in it, clones the committed branch of this repository
# and runs, as root, what a newcomer runs: `make run` (until the server
# answers PING with the module loaded), then `make test` and `make lint`.
#
#   sudo bash scripts/fresh-debian.sh        # or: make fresh-debian
#
# Needs root on a Debian-like host (debootstrap, chroot, mount) and takes
# minutes: everything is downloaded and built from scratch. It is not part
# of `make test`.
#
# Settings (environment):
#   DEBIAN_MIRROR, DEBIAN_SECURITY_MIRROR  the archive URLs (default: the
#       host's own apt sources, else deb.debian.org)
#   FRESH_DEBIAN_DIR   where to build the chroot (default: a new temporary
#       directory, removed at the end)
#   FRESH_DEBIAN_KEEP=1  keep the chroot afterwards, to look around in it
#   FRESH_DEBIAN_LOG   the log file (default: /tmp/hotpath-fresh-debian.log)
#
# The chroot's apt sources are those of a standard Debian 12 install (the
# installer, the cloud images and the debian:12 container image all have
# them): bookworm, bookworm-updates and bookworm-security. debootstrap by
# itself writes only the first, and without bookworm-security apt finds
# rustc-web 1.85, older than Cargo.lock needs.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

if [ "$(id -u)" != 0 ]; then
  echo "fresh-debian: needs root (debootstrap, chroot and mount)" >&2
  exit 1
fi

log=${FRESH_DEBIAN_LOG:-/tmp/hotpath-fresh-debian.log}
exec > >(tee "$log") 2>&1
start=$(date +%s)
trap 'echo "fresh-debian: FAILED (line $LINENO)" >&2' ERR
phase_start=$start
phase_name=""
# Starts a named step and prints how long the previous one took.
phase() {
  local now
  now=$(date +%s)
  [ -z "$phase_name" ] || echo "== $phase_name: took $((now - phase_start))s"
  phase_name=$1
  phase_start=$now
  [ -z "$1" ] || echo "== $1 (at $((now - start))s)"
}

# The archive mirrors the host itself uses (deb822 .sources files or the
# one-line format); deb.debian.org when none is found.
host_uri() {
  local suffix=$1 f uris=()
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    uris+=($(sed -n 's/^URIs:[[:space:]]*//p' "$f"))
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    uris+=($(sed -n 's/^deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\).*/\2/p' "$f"))
  done
  local u
  for u in "${uris[@]}"; do
    u=${u%/}
    if [ "${u##*/}" = "$suffix" ]; then
      echo "$u"
      return
    fi
  done
}
mirror=${DEBIAN_MIRROR:-$(host_uri debian)}
mirror=${mirror:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-$(host_uri debian-security)}
security=${security:-http://deb.debian.org/debian-security}

branch=$(git rev-parse --abbrev-ref HEAD)
commit=$(git rev-parse HEAD)
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  echo "fresh-debian: note: uncommitted changes are not tested; the chroot gets commit $commit"
fi

if [ -n "${FRESH_DEBIAN_DIR:-}" ]; then
  root=$FRESH_DEBIAN_DIR
  if [ -e "$root" ] && [ -n "$(ls -A "$root")" ]; then
    echo "fresh-debian: $root is not empty" >&2
    exit 1
  fi
  mkdir -p "$root"
else
  root=$(mktemp -d "${TMPDIR:-/tmp}/hotpath-fresh-debian.XXXXXX")
fi
echo "fresh-debian: branch $branch at $commit, chroot $root, mirror $mirror, security $security, log $log"

mounted=()
cleanup() {
  local rc=$?
  set +e
  trap - ERR
  phase ""
  # Stop whatever still runs inside the chroot (a server left by a failed
  # step): only processes whose root directory is this chroot.
  for p in /proc/[0-9]*; do
    if [ "$(readlink "$p/root" 2>/dev/null)" = "$root" ]; then
      kill -9 "${p#/proc/}" 2>/dev/null
    fi
  done
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do
    umount "${mounted[i]}" || umount -l "${mounted[i]}"
  done
  if [ "${FRESH_DEBIAN_KEEP:-0}" = 1 ]; then
    echo "fresh-debian: kept the chroot in $root"
  elif grep -q " $root/" /proc/mounts; then
    echo "fresh-debian: something is still mounted under $root: not removing it" >&2
  else
    rm -rf --one-file-system "$root"
  fi
  local now
  now=$(date +%s)
  if [ $rc = 0 ]; then
    echo "fresh-debian: PASSED in $((now - start))s (commit $commit)"
  else
    echo "fresh-debian: FAILED (exit $rc) after $((now - start))s (commit $commit); log in $log"
  fi
  exit $rc
}
trap cleanup EXIT

if ! command -v debootstrap >/dev/null; then
  phase "installing debootstrap from Debian's packages"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends debootstrap
fi

phase "debootstrap --variant=minbase bookworm"
debootstrap --variant=minbase bookworm "$root" "$mirror"

phase "apt sources of a standard install; make git python3 ca-certificates"
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb $security bookworm-security main
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf"
[ -s "$root/etc/hosts" ] || printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
mount -t proc proc "$root/proc" && mounted+=("$root/proc")
mount -t sysfs -o ro sysfs "$root/sys" && mounted+=("$root/sys")
mkdir -p "$root/dev/pts" "$root/dev/shm"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts" && mounted+=("$root/dev/pts")
mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm" && mounted+=("$root/dev/shm")

# Runs a command in the chroot as root with a clean environment, the way a
# login shell on the new machine would have it.
in_chroot() {
  env -i HOME=/root TERM=dumb LANG=C.UTF-8 USER=root LOGNAME=root \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    chroot "$root" /bin/bash -c "$1"
}

in_chroot 'set -e; export DEBIAN_FRONTEND=noninteractive; apt-get update -qq;
  apt-get install -y -qq make git python3 ca-certificates >/dev/null;
  echo "installed: $(dpkg-query -W -f="\${binary:Package} " make git python3 ca-certificates)"
  echo "$(dpkg-query -W | wc -l) packages; cargo: $(command -v cargo || echo none); pip: $(command -v pip || echo none)"'

# A host whose network intercepts TLS (an egress proxy) trusts the
# proxy's CA beyond Debian's stock set; without it nothing in the chroot
# could reach crates.io or PyPI over https. Carry those certificates over,
# as the machine's owner would install them on the new box.
extra_cas=$(python3 - "$root/usr/local/share/ca-certificates" <<'PY'
import glob, os, re, sys
pem = re.compile(r"-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----", re.S)
bundle = "/etc/ssl/certs/ca-certificates.crt"
if not os.path.exists(bundle):
    sys.exit(0)
stock = {c for f in glob.glob("/usr/share/ca-certificates/**/*.crt", recursive=True)
         for c in pem.findall(open(f).read())}
extra = [c for c in pem.findall(open(bundle).read()) if c not in stock]
for i, c in enumerate(extra):
    with open(os.path.join(sys.argv[1], f"host-{i}.crt"), "w") as f:
        f.write(c + "\n")
print(len(extra))
PY
)
if [ "$extra_cas" != 0 ]; then
  echo "fresh-debian: carrying $extra_cas CA certificate(s) the host trusts beyond Debian's into the chroot"
  in_chroot 'update-ca-certificates >/dev/null'
fi

phase "cloning $branch into the chroot"
git clone -q --bare --single-branch --branch "$branch" "$repo" "$root/srv/hotpath.git"
in_chroot 'set -e; cd /root; git clone -q /srv/hotpath.git hotpath; git -C hotpath log -1 --format="cloned %H %s"'

# make run serves on 6379 until stopped; use another port only when the
# host (whose network the chroot shares) already has something there.
port=6379
if (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  echo "fresh-debian: port 6379 is busy on this host; make run gets PORT=$port"
fi

phase "make run (PORT=$port), until the server answers with the module loaded"
in_chroot "set -e; cd /root/hotpath
  if [ $port = 6379 ]; then make run >/root/make-run.log 2>&1 & else make run PORT=$port >/root/make-run.log 2>&1 & fi
  pid=\$!
  until [ \"\$(redis-cli -p $port PING 2>/dev/null)\" = PONG ]; do
    if ! kill -0 \$pid 2>/dev/null; then
      cat /root/make-run.log; wait \$pid; echo 'make run stopped before serving'; exit 1
    fi
    sleep 2
  done
  tail -n 5 /root/make-run.log
  redis-cli -p $port MODULE LIST
  redis-cli -p $port POLL.CREATE 'poll:{1}' CANDIDATES 2 a b
  redis-cli -p $port POLL.VOTE 'poll:{1}' u1 a
  redis-cli -p $port SHUTDOWN NOSAVE
  wait \$pid
  echo 'make run: served and stopped cleanly'"

phase "make test"
in_chroot 'set -e; cd /root/hotpath; make test'

phase "make lint (clippy from Debian's rust-web-clippy)"
in_chroot 'set -e; cd /root/hotpath; make lint'

phase "done"
in_chroot 'cd /root/hotpath; echo "toolchain: $(cargo --version) at $(command -v cargo); $(rustc --version)"; echo "python: $(.venv/bin/python --version), $(.venv/bin/python -m pip list --format=freeze 2>/dev/null | tr "\n" " ")"; echo "server: $(redis-server --version)"'
