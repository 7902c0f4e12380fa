#!/usr/bin/env bash
# The serve container image (packaging/oci/build-serve-image.sh), built from the tarball
# packaging.portable made and the minimal Debian root, in a Docker engine of the test's own (its
# data under a temporary directory, no bridge, no iptables rules; the machine's engine is not
# touched), every container with --network none. Checked: runpoolctl runs as uid 65532 with the
# tarball's version; serve --help explains; a configuration mounted over the default one is read
# (status names its table and the endpoint it could not reach); the CA bundle is there; the image
# saved with `docker save` lists its manifest; --help explains the script.
#
# Usage: serve_image_test.sh SOURCE_DIR WORK_DIR VERSION RELEASE_DIR
set -euo pipefail
# (No `grep -q` at the end of a pipe: under pipefail its early exit fails the writer with SIGPIPE.)
src=$1 work=$2 version=$3 release=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
skip() { echo "serve_image_test: skipped ($*)"; exit 77; }
[ "${RUNPOOL_RELEASE_CHECK:-1}" = 0 ] && skip "RUNPOOL_RELEASE_CHECK=0: no release tarball"
[ "$(id -u)" = 0 ] || skip "the image's root file system and the engine need root"
{ command -v dockerd && command -v docker; } >/dev/null || skip "no Docker engine (scripts/setup.sh installs docker.io)"
arch=$(uname -m); [ "$arch" = aarch64 ] && arch=arm64
tarball=$release/runpool-$version-linux-$arch.tar.gz
[ -f "$tarball" ] || fail "no $tarball (packaging.portable makes it)"
rootfs=$src/build-cache/debian-bookworm-minbase.tar
[ -f "$rootfs" ] || fail "no $rootfs: scripts/setup.sh --test-roots (as root) makes it"
script=$src/packaging/oci/build-serve-image.sh
"$script" --help | grep "docker import" >/dev/null || fail "build-serve-image.sh --help does not explain"

rm -rf "$work" && mkdir -p "$work"
# A short path: a Unix socket's has 107 bytes at most.
engine=$(mktemp -d /tmp/rpoci-XXXXXX)
dockerd --data-root "$engine/data" --exec-root "$engine/exec" --pidfile "$engine/dockerd.pid" \
  -H "unix://$engine/docker.sock" --bridge=none --iptables=false --ip-masq=false >"$engine/dockerd.log" 2>&1 &
daemon=$!
cleanup() {
  kill "$daemon" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$daemon" 2>/dev/null || break; sleep 0.1; done
  umount -R "$engine/data" "$engine/exec" 2>/dev/null || true
  rm -rf "$engine"
}
trap cleanup EXIT
export DOCKER_HOST=unix://$engine/docker.sock
for _ in $(seq 300); do docker version >/dev/null 2>&1 && break; sleep 0.1; done
docker version >/dev/null 2>&1 || { tail -20 "$engine/dockerd.log" >&2; fail "the test's Docker engine did not start"; }

tag=runpool-serve-test:$version
out=$("$script" "$tarball" "$rootfs" "$tag" "$work/serve-image.tar" 2>&1) || fail "build-serve-image.sh: $out"
echo "$out"
run() { docker run --rm --network none "$@"; }
[ "$(run "$tag" --version)" = "$version" ] || fail "runpoolctl --version in the image is not $version"
run "$tag" serve --help | grep "scale set" >/dev/null || fail "serve --help in the image says nothing of scale sets"
[ "$(run --entrypoint /usr/bin/id "$tag" -u)" = 65532 ] || fail "the image does not run as uid 65532"
run --entrypoint /bin/sh "$tag" -c 'test -s /etc/ssl/certs/ca-certificates.crt' || fail "the image has no CA bundle"
[ "$(docker image inspect -f '{{json .Config.Cmd}}' "$tag")" = '["serve"]' ] || fail "the image's command is not serve"
printf 'table = oci-test-table\npool = ci\nregion = us-east-1\ninstance_role_id = AROAEXAMPLEEXAMPLE1\nendpoint_dynamodb = http://127.0.0.1:9\n' \
  >"$work/runpoolctl.conf"
chmod 0644 "$work/runpoolctl.conf"
out=$(run -e AWS_ACCESS_KEY_ID=AKIAEXAMPLE -e AWS_SECRET_ACCESS_KEY=example \
  -v "$work/runpoolctl.conf:/etc/runpool/runpoolctl.conf:ro" "$tag" status 2>&1) && fail "status reached a table with no network: $out"
grep -q "127.0.0.1:9" <<<"$out" || fail "status in the image did not use the mounted configuration: $out"
tar -tf "$work/serve-image.tar" | grep -x manifest.json >/dev/null || fail "docker save wrote no manifest.json"
echo "serve_image_test: OK ($tag)"
