#!/usr/bin/env bash
# The container image of `runpoolctl serve`, made from a release tarball and a minimal Debian 12
# root file system (debootstrap --variant=minbase: glibc, libstdc++, a shell) and imported with
# `docker import` — nothing is pulled. Inside:
#   /opt/runpool/<name>, runpoolctl and runpool-agent in /usr/bin (the tarball's install.sh,
#       --units none: the container's command is its only service)
#   /etc/runpool/runpoolctl.conf         the default configuration: mount yours over it
#   /etc/ssl/certs/ca-certificates.crt   the CA bundle of the building machine (its
#                                        ca-certificates package): minbase has none
#   /var/lib/runpool                     the state directory (metrics_file), the user's
#   user runpool, uid and gid 65532, no home and no login shell; the image runs as it
#   ENTRYPOINT runpoolctl, CMD serve; docker stop's SIGTERM closes the session, gives the lease up
# The GitHub token comes from the environment (RUNPOOL_GITHUB_TOKEN or
# RUNPOOL_GITHUB_APP_PRIVATE_KEY: `docker run --env-file`), AWS credentials from the task's or
# instance's role (or AWS_* variables), as for the systemd unit.
#
# Usage: build-serve-image.sh TARBALL ROOTFS_TAR TAG [OUTPUT_TAR]
#   TARBALL     runpool-<version>-linux-<arch>.tar.gz (scripts/release.sh)
#   ROOTFS_TAR  a debootstrap --variant=minbase root of Debian 12 for the same architecture, as a
#               tarball (scripts/setup.sh --test-roots makes build-cache/debian-bookworm-minbase.tar)
#   TAG         the image's name in the engine, e.g. runpool-serve:0.4.0
#   OUTPUT_TAR  also written with `docker save`, to publish or load elsewhere
# Needs root (the root file system keeps its owners) and a Docker engine (DOCKER_HOST as for docker).
set -euo pipefail
die() { echo "build-serve-image: $*" >&2; exit 1; }
case "${1:-}" in -h | --help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac
(($# >= 3)) || die "usage: build-serve-image.sh TARBALL ROOTFS_TAR TAG [OUTPUT_TAR] (--help)"
tarball=$1 rootfs=$2 tag=$3 output=${4:-}
[ -f "$tarball" ] || die "no tarball $tarball"
[ -f "$rootfs" ] || die "no root file system $rootfs (scripts/setup.sh --test-roots makes one)"
[ "$(id -u)" = 0 ] || die "run as root: the root file system keeps its owners"
command -v docker >/dev/null || die "docker is missing"
bundle=/etc/ssl/certs/ca-certificates.crt
[ -s "$bundle" ] || die "this machine has no $bundle (install ca-certificates)"
name=$(tar -tzf "$tarball" | sed -n 1p | cut -d/ -f1)  # sed reads it all: no SIGPIPE for tar
[[ $name =~ ^runpool-([0-9A-Za-z.+~-]+)-linux-(x86_64|arm64)$ ]] || die "$tarball is not a runpool release tarball"
version=${BASH_REMATCH[1]} arch=${BASH_REMATCH[2]}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
root=$work/root
mkdir -p "$root"
tar -C "$root" --numeric-owner -xf "$rootfs"
[ -f "$root/etc/debian_version" ] || die "$rootfs is not a Debian root"
# What a container never uses: the package manager's state, documentation, locales.
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/* "$root"/usr/share/doc/* "$root"/usr/share/man/* \
  "$root"/usr/share/locale/* "$root"/usr/share/info/*
tar -C "$work" --no-same-owner -xzf "$tarball"
"$work/$name/install.sh" --units none --root "$root" >/dev/null
install -D -m 0644 "$bundle" "$root/etc/ssl/certs/ca-certificates.crt"
echo "runpool:x:65532:65532:runpool serve:/nonexistent:/usr/sbin/nologin" >>"$root/etc/passwd"
echo "runpool:x:65532:" >>"$root/etc/group"
echo "runpool:!:19000::::::" >>"$root/etc/shadow"
install -d -o 65532 -g 65532 -m 0700 "$root/var/lib/runpool"

# The engine's own platform unless the tarball is for another architecture.
platform=()
host=$(uname -m); [ "$host" = aarch64 ] && host=arm64
[ "$arch" != "$host" ] && platform=(--platform "linux/${arch/x86_64/amd64}")
tar -C "$root" --numeric-owner -c . | docker import "${platform[@]}" \
  --change 'USER 65532:65532' \
  --change 'WORKDIR /var/lib/runpool' \
  --change 'ENV PATH=/usr/bin:/bin' \
  --change 'ENTRYPOINT ["/usr/bin/runpoolctl"]' \
  --change 'CMD ["serve"]' \
  --change "LABEL org.opencontainers.image.title=runpool-serve org.opencontainers.image.version=$version" \
  - "$tag" >/dev/null
echo "build-serve-image: $tag (runpool $version, $arch): $(docker image inspect -f '{{.Size}}' "$tag" | awk '{printf "%.0f MB", $1 / 1e6}')"
if [ -n "$output" ]; then
  docker save -o "$output" "$tag"
  echo "build-serve-image: $output"
fi
