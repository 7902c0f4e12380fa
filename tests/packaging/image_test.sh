#!/usr/bin/env bash
# build-image.sh, run as on a builder instance, up to where AWS would make the AMI: in a chroot of
# a Debian 12 root with what a stock cloud image has (debootstrap minbase plus curl, CA
# certificates, nftables and cloud-init: scripts/setup.sh --test-roots), with the release tarball
# packaging.portable made and a runner tarball served over HTTP on 127.0.0.1. Nothing is installed
# from the network: everything the script needs is in the root already, so it installs no package.
# Checked:
#   - a runner tarball whose SHA-256 is not the one given is refused and nothing of it installed;
#   - a tarball without bin/installdependencies.sh is refused unless --no-runner-dependencies;
#   - the image: runpool-agent and runpoolctl on PATH and running, the agent's unit in
#     /etc/systemd/system naming /usr/bin/runpool-agent, the runner root-owned and read-only to
#     others, cloud-init's state, machine-id and SSH host keys reset;
#   - a second run over the first succeeds (safe to run again); --help explains.
#
# Usage: image_test.sh SOURCE_DIR WORK_DIR VERSION RELEASE_DIR
set -euo pipefail
src=$1 work=$2 version=$3 release=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
if [ "${RUNPOOL_RELEASE_CHECK:-1}" = 0 ]; then
  echo "image_test: skipped (RUNPOOL_RELEASE_CHECK=0: no release tarball)"
  exit 77
fi
if [ "$(id -u)" != 0 ]; then
  echo "image_test: skipped (a chroot needs root)"
  exit 77
fi
arch=$(uname -m); [ "$arch" = aarch64 ] && arch=arm64
runner_arch=x64; [ "$arch" = arm64 ] && runner_arch=arm64
tarball=$release/runpool-$version-linux-$arch.tar.gz
[ -f "$tarball" ] || fail "no $tarball (packaging.portable makes it)"
rootfs=$src/build-cache/debian-bookworm-image-builder.tar
[ -f "$rootfs" ] || fail "no $rootfs: scripts/setup.sh --test-roots (as root) makes it"

rm -rf "$work" && mkdir -p "$work/root" "$work/www"
root=$work/root
tar -C "$root" --numeric-owner -xf "$rootfs"
cp "$tarball" "$root/tmp/"
# What a builder instance that booted once has: cloud-init's state, a machine-id, SSH host keys.
mkdir -p "$root/var/lib/cloud/instances/i-0builder" "$root/etc/ssh"
echo 0123456789abcdef0123456789abcdef >"$root/etc/machine-id"
touch "$root/etc/ssh/ssh_host_ed25519_key" "$root/etc/ssh/ssh_host_ed25519_key.pub" "$root/var/log/cloud-init.log"

# The runner's release tarball, as the stand-in runner (its files at the top, like actions/runner's).
runner_version=2.0.0-test
runner_name=actions-runner-linux-$runner_arch-$runner_version.tar.gz
tar -C "$src/tests/localcloud/runner" --owner=1001 --group=1001 -czf "$work/www/$runner_name" .
sha=$(sha256sum "$work/www/$runner_name" | cut -d' ' -f1)
timeout 300 python3 -c '
import http.server, functools, os, sys
d = sys.argv[1]
class H(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a): pass
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(H, directory=d))
open(d + "/../port.tmp", "w").write(str(s.server_address[1])); os.rename(d + "/../port.tmp", d + "/../port")
s.serve_forever()' "$work/www" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -f "$work/port" ] && break; sleep 0.1; done
[ -f "$work/port" ] || fail "the HTTP server did not start"
url=http://127.0.0.1:$(cat "$work/port")/$runner_name

chroot=$(command -v chroot) unshare=$(command -v unshare)
in_root() {
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root "$unshare" --mount --pid --fork --mount-proc="$root/proc" \
    "$chroot" "$root" "$@"
}
build_image() { in_root bash /usr/share/runpool-image/build-image.sh --runpool "/tmp/${tarball##*/}" "$@" 2>&1; }
mkdir -p "$root/usr/share/runpool-image"
cp "$src/packaging/image/build-image.sh" "$root/usr/share/runpool-image/"

out=$(build_image --help) || fail "--help: $out"
grep -q -- "--runner-sha256" <<<"$out" || fail "--help does not explain --runner-sha256: $out"

out=$(build_image --runner-version "$runner_version" --runner-sha256 "$(printf '0%.0s' {1..64})" --runner-url "$url") &&
  fail "a runner tarball with another SHA-256 was accepted: $out"
grep -q "SHA-256 $sha, not the" <<<"$out" || fail "the refusal does not name the checksums: $out"
[ ! -e "$root/opt/actions-runner" ] || fail "a refused runner tarball was unpacked"

out=$(build_image --runner-version "$runner_version" --runner-sha256 "$sha" --runner-url "$url") &&
  fail "a runner without bin/installdependencies.sh was accepted: $out"
grep -q "installdependencies.sh is missing" <<<"$out" || fail "the refusal does not say why: $out"

for run in first second; do
  out=$(build_image --runner-version "$runner_version" --runner-sha256 "$sha" --runner-url "$url" \
        --no-runner-dependencies) || fail "$run run: $out"
  grep -q "build-image: done: runpool $version, actions/runner $runner_version in /opt/actions-runner" <<<"$out" ||
    fail "$run run: no summary: $out"
  ! grep -q "installing " <<<"${out//installing runpool/}" || fail "$run run installed packages the root has: $out"
done

[ "$(in_root runpool-agent --version)" = "$version" ] || fail "runpool-agent --version in the image"
[ "$(in_root runpoolctl --version)" = "$version" ] || fail "runpoolctl --version in the image"
unit=$root/etc/systemd/system/runpool-agent.service
[ -f "$unit" ] || fail "no agent unit in /etc/systemd/system"
grep -q '^ExecStart=/usr/bin/runpool-agent ' "$unit" || fail "the unit does not start /usr/bin/runpool-agent"
[ ! -e "$root/etc/systemd/system/multi-user.target.wants/runpool-agent.service" ] || fail "the unit is enabled (user-data starts it)"
for f in config.sh run.sh bin/Runner.Listener; do
  [ -f "$root/opt/actions-runner/$f" ] || fail "the runner has no $f"
done
[ -z "$(find "$root/opt/actions-runner" "$root/opt/runpool" -not -type l \( -not -uid 0 -o -perm /022 \) -print -quit)" ] ||
  fail "a runner or runpool file is not root's, or others may write it: $(find "$root/opt/actions-runner" "$root/opt/runpool" -not -type l \( -not -uid 0 -o -perm /022 \) | head -3)"
[ ! -s "$root/etc/machine-id" ] || fail "machine-id not reset"
[ -z "$(find "$root/etc/ssh" -name 'ssh_host_*')" ] || fail "SSH host keys left"
[ ! -e "$root/var/lib/cloud/instances/i-0builder" ] || fail "cloud-init's state left"
echo "image_test: OK (runpool $version and a runner tarball checked by SHA-256 in a Debian $(cat "$root/etc/debian_version") builder root)"
