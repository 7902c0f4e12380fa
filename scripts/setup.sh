#!/usr/bin/env bash
# One set-up step for a fresh Debian 12 machine: the Debian packages runpool builds and tests
# with, the local cloud's npm packages from the committed lockfile and the Go modules of the
# scale-set client check. `--test-roots` (below) makes the Debian roots of the packaging checks.
# Safe to run again.
set -euo pipefail
cd "$(dirname "$0")/.."

# --test-roots: only the Debian roots the packaging checks run things in (scripts/test.sh makes them
# beside the build), each made once with debootstrap and kept as a tarball under build-cache/.
# Only root can make them (and only root runs those checks' chroot parts).
#   debian-bookworm-minbase.tar: --variant=minbase, no curl, OpenSSL, jsoncpp or CA certificates;
#     packaging.portable runs the release tarball in it.
#   debian-bookworm-image-builder.tar: minbase with what a stock cloud image has that the image
#     script relies on (curl, CA certificates, nftables, cloud-init); packaging.image runs
#     build-image.sh in it.
#   debian-bookworm-minbase-arm64.tar (RUNPOOL_RELEASE_ARM64=1): debootstrap's first stage only
#     (--foreign: the packages unpacked, not configured, which would mean running arm64 programs),
#     enough for a loader, glibc and libstdc++ of Debian's arm64 build.
minbase() {  # minbase TARBALL [DEBOOTSTRAP OPTION...]
  local rootfs=$1 tmp; shift
  [ ! -f "$rootfs" ] && [ "$(id -u)" -eq 0 ] || return 0
  echo "setup: debootstrap --variant=minbase $* bookworm ($rootfs)" >&2
  mkdir -p build-cache
  tmp=$(mktemp -d build-cache/minbase.XXXXXX)
  debootstrap --variant=minbase "$@" bookworm "$tmp/root" "${RUNPOOL_DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
    >"$tmp/log" 2>&1 || { cat "$tmp/log" >&2; rm -rf "$tmp"; echo "setup: debootstrap failed" >&2; exit 1; }
  tar -C "$tmp/root" --numeric-owner -cf "$rootfs.tmp" .
  mv "$rootfs.tmp" "$rootfs"
  rm -rf "$tmp"
}
if [ "${1:-}" = --test-roots ]; then
  command -v debootstrap >/dev/null || { echo "setup: debootstrap is missing: run scripts/setup.sh first" >&2; exit 1; }
  minbase build-cache/debian-bookworm-minbase.tar
  # python3-cffi-backend: debootstrap does not resolve the virtual package cloud-init's
  # python3-cryptography needs.
  minbase build-cache/debian-bookworm-image-builder.tar \
    --include=curl,ca-certificates,nftables,cloud-init,python3-cffi-backend
  if [ "${RUNPOOL_RELEASE_ARM64:-0}" = 1 ]; then
    minbase build-cache/debian-bookworm-minbase-arm64.tar --arch=arm64 --foreign
  fi
  exit 0
fi

packages=(
  cmake g++ pkg-config make
  libcurl4-openssl-dev libjsoncpp-dev libspdlog-dev libsystemd-dev libcli11-dev
  libpugixml-dev libssl-dev libsodium-dev libhowardhinnant-date-dev tzdata libgtest-dev libgmock-dev
  nodejs npm util-linux procps shellcheck python3-yaml python3-venv cloud-init
  clang libclang-rt-14-dev nftables patchelf
  docker.io busybox-static sudo debootstrap btrfs-progs
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A machine that already has Node (not from Debian) keeps it: npm and node are all we need.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
read -r -a missing <<<"${missing[*]}"
if ((${#missing[@]})); then
  sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_="sudo"
  echo "setup: installing ${missing[*]}" >&2
  $sudo_ apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# RUNPOOL_RELEASE_ARM64=1: what the arm64 release build and its check need besides (Debian's cross
# toolchain, qemu-user, the arm64 builds of runpool's libraries beside the host's).
arm64_packages=(
  crossbuild-essential-arm64 qemu-user-static
  libcurl4-openssl-dev:arm64 libjsoncpp-dev:arm64 libspdlog-dev:arm64 libsystemd-dev:arm64
  libpugixml-dev:arm64 libssl-dev:arm64 libsodium-dev:arm64 libhowardhinnant-date-dev:arm64 libgtest-dev:arm64 libgmock-dev:arm64
)
if [ "${RUNPOOL_RELEASE_ARM64:-0}" = 1 ]; then
  sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_="sudo"
  missing=()
  for p in "${arm64_packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]} (arm64)" >&2
    dpkg --print-foreign-architectures | grep -qx arm64 || $sudo_ dpkg --add-architecture arm64
    $sudo_ apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
fi

# The unprivileged user runpool-agent runs the runner as (integration tests launch real agents):
# a system user with its own group, no home directory and no login shell.
if ! id -u runpool-runner >/dev/null 2>&1; then
  sudo_=""; [ "$(id -u)" -eq 0 ] || sudo_="sudo"
  echo "setup: creating the system user runpool-runner" >&2
  $sudo_ useradd --system --user-group --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin runpool-runner
fi

# The local cloud's npm packages, exactly as locked.
# A stamp of the lockfile npm ci last installed from skips the reinstall when nothing changed.
stamp=tests/localcloud/node_modules/.runpool-installed-lock
if ! cmp -s tests/localcloud/package-lock.json "$stamp" 2>/dev/null; then
  echo "setup: npm ci (local cloud)" >&2
  (cd tests/localcloud && npm ci --no-audit --no-fund --loglevel=error)
  cp tests/localcloud/package-lock.json "$stamp"
fi

# GitHub's scale-set client for the localcloud.scaleset_client check, exactly as go.sum pins it
# (a no-op once it is in the module cache), and actionlint for the packaging.actionlint check, built
# at the version tests/actionlint/go.sum pins into build-cache/bin (a no-op when it is up to date).
# Without Go those checks fail, so say so here.
if command -v go >/dev/null; then
  (cd tests/scaleset_client && GOFLAGS=-mod=readonly GOTOOLCHAIN=local go mod download)
  (cd tests/actionlint && GOFLAGS=-mod=readonly GOTOOLCHAIN=local GOBIN="$PWD/../../build-cache/bin" \
    go install github.com/rhysd/actionlint/cmd/actionlint)
else
  echo "setup: go not found: the localcloud.scaleset_client and packaging.actionlint tests need Go 1.25 or newer" >&2
fi
