#!/usr/bin/env bash
# The release tarball runs where runpool's build dependencies are not: scripts/release.sh builds it
# (its own Release build in WORK_DIR/build, RUNPOOL_PORTABLE, no .deb), then, independently of the
# script's own check:
#   - objdump -T: no binary or bundled library needs a GLIBC symbol newer than 2.34 (Amazon Linux
#     2023's glibc) or a GLIBCXX one newer than 3.4.29 (GCC 11's libstdc++, Amazon Linux 2023's);
#   - SHA256SUMS matches; the tarball carries LICENSE, the default configurations, the systemd unit,
#     the user-data template, the IAM policies and the CloudFormation template;
#   - unpacked elsewhere, run from another directory with an empty environment (no LD_LIBRARY_PATH):
#     every library resolves to the tarball's lib/ or the system's glibc / libstdc++ / libgcc_s,
#     and runpoolctl --version / --help / provision --help and runpool-agent --version work;
#   - as root: the same commands in a chroot of a minimal Debian 12 root (debootstrap
#     --variant=minbase, made by scripts/setup.sh; no curl, OpenSSL, jsoncpp, CA certificates),
#     whose own loader finds every library, and there runpoolctl reaches an HTTPS server on
#     127.0.0.1 trusted through Amazon Linux's CA bundle path alone; the tarball's install.sh
#     installs it there (and into a root file system with --root).
#
# The Release build runs one compiler at a time (RUNPOOL_RELEASE_JOBS, default 1 here), beside the
# other tests. RUNPOOL_RELEASE_CHECK=0 skips the test (exit 77, which ctest reports as skipped).
#
# ARCH arm64 on an x86_64 machine checks the cross-built arm64 tarball the same way, its programs
# run under qemu-user (qemu-aarch64-static, also inside the arm64 minimal root). That check needs
# the cross toolchain and the arm64 libraries: it runs when RUNPOOL_RELEASE_ARM64=1 (with which
# scripts/setup.sh installs them) and is skipped otherwise.
#
# Usage: portable_test.sh SOURCE_DIR WORK_DIR VERSION [ARCH]
set -euo pipefail
src=$1 work=$2 version=$3
if [ "${RUNPOOL_RELEASE_CHECK:-1}" = 0 ]; then
  echo "portable_test: skipped (RUNPOOL_RELEASE_CHECK=0)"
  exit 77
fi
fail() { echo "FAIL: $*" >&2; exit 1; }
host=$(uname -m); [ "$host" = aarch64 ] && host=arm64
arch=${4:-$host}
# How the target's files are read and run: natively, or with its binutils and under qemu-user.
objdump=objdump run=() loader=/lib64/ld-linux-x86-64.so.2 rootfs_name=debian-bookworm-minbase
[ "$arch" = arm64 ] && loader=/lib/ld-linux-aarch64.so.1
if [ "$arch" != "$host" ]; then
  if [ "${RUNPOOL_RELEASE_ARM64:-0}" != 1 ]; then
    echo "portable_test: the $arch check is skipped (RUNPOOL_RELEASE_ARM64=1 runs it)"
    exit 77
  fi
  objdump=aarch64-linux-gnu-objdump run=(qemu-aarch64-static) rootfs_name=debian-bookworm-minbase-arm64
fi
# ldd for the target: its loader lists what a program loads, in an empty environment.
loaded() { env -i "${run[@]}" "$loader" --list "$1"; }

mkdir -p "$work"
rm -rf "$work/out" "$work/unpacked" "$work/root"
RUNPOOL_RELEASE_BUILD_DIR=$work/build RUNPOOL_RELEASE_NO_DEB=1 RUNPOOL_RELEASE_JOBS=${RUNPOOL_RELEASE_JOBS:-1} \
  RUNPOOL_RELEASE_ARCH=$arch "$src/scripts/release.sh" "$work/out"

name=runpool-$version-linux-$arch
tarball=$work/out/$name.tar.gz
[ -f "$tarball" ] || fail "release.sh made no $name.tar.gz"
(cd "$work/out" && sha256sum --quiet -c SHA256SUMS) || fail "SHA256SUMS does not match"
grep -q "  $name.tar.gz\$" "$work/out/SHA256SUMS" || fail "SHA256SUMS does not list $name.tar.gz"

mkdir -p "$work/unpacked"
tar -C "$work/unpacked" -xzf "$tarball"
top=$work/unpacked/$name
for f in LICENSE install.sh bin/runpoolctl bin/runpool-agent etc/runpool/agent.conf etc/runpool/runpoolctl.conf \
         share/runpool/systemd/runpool-agent.service share/runpool/systemd/runpoolctl-serve.service \
         "share/runpool/systemd/runpoolctl-serve@.service" share/runpool/systemd/runpoolctl-refresh.service \
         share/runpool/systemd/runpoolctl-refresh.timer \
         share/runpool/user-data.sh.in \
         share/runpool/iam/controller-policy.json share/runpool/runpool.yaml share/runpool/build-image.sh \
         share/doc/runpool/copyright; do
  [ -f "$top/$f" ] || fail "the tarball has no $f"
done
cmp -s "$src/LICENSE" "$top/LICENSE" || fail "LICENSE differs from the source's"

# GLIBC / GLIBCXX: the newest version any file references (undefined symbols only).
newest() {
  "$objdump" -T "$top"/bin/* "$top"/lib/* | awk '$0 ~ /\*UND\*/' | grep -oE "\(${1}_[0-9.]+\)" | tr -d '()' \
    | sed "s/^${1}_//" | sort -uV | tail -1
}
glibc=$(newest GLIBC) glibcxx=$(newest GLIBCXX)
[ -n "$glibc" ] || fail "objdump -T found no GLIBC symbol at all"
[ "$(printf '%s\n2.34\n' "$glibc" | sort -V | tail -1)" = 2.34 ] || fail "a file needs GLIBC_$glibc (at most 2.34)"
[ "$(printf '%s\n3.4.29\n' "$glibcxx" | sort -V | tail -1)" = 3.4.29 ] || fail "a file needs GLIBCXX_$glibcxx (at most 3.4.29)"
echo "portable_test: newest GLIBC_$glibc, GLIBCXX_$glibcxx; $(du -k "$tarball" | cut -f1) KiB"

# Outside the tarball only the system set: glibc, libstdc++, libgcc_s.
system='^/(usr/)?lib(64)?/([a-z0-9_-]+/)?(ld-linux[^/]*|libc|libm|libdl|libpthread|librt|libresolv|libstdc\+\+|libgcc_s)\.so[.0-9]*$'
cd "$work"  # not the tarball's directory: RUNPATH is $ORIGIN-relative, not cwd-relative
for bin in "$top"/bin/*; do
  while read -r soname path; do
    path=$(realpath -m "$path")
    case "$path" in
      "$top/lib/"*) ;;
      *) [[ $path =~ $system ]] || fail "${bin##*/} loads $soname from $path, outside the tarball" ;;
    esac
  done < <(loaded "$bin" | awk '$2 == "=>" {print $1, $3}')
done
for args in "--version" "--help" "provision --help"; do
  # shellcheck disable=SC2086
  out=$(env -i "${run[@]}" "$top/bin/runpoolctl" $args 2>&1) || fail "runpoolctl $args: $out"
done
[ "$(env -i "${run[@]}" "$top/bin/runpoolctl" --version)" = "$version" ] || fail "runpoolctl --version is not $version"
[ "$(env -i "${run[@]}" "$top/bin/runpool-agent" --version)" = "$version" ] || fail "runpool-agent --version is not $version"
env -i "${run[@]}" "$top/bin/runpoolctl" provision --help | grep -- "--count" >/dev/null || fail "provision --help lists no --count"

# A minimal Debian 12 root (debootstrap --variant=minbase, made by scripts/setup.sh): a real
# distribution's userland with none of runpool's build dependencies (no curl, OpenSSL, jsoncpp,
# CA certificates), the tarball unpacked in /opt.
if [ "$(id -u)" != 0 ]; then
  echo "portable_test: not root, the chroot check is left out"
  exit 0
fi
rootfs=$src/build-cache/$rootfs_name.tar
[ -f "$rootfs" ] || fail "no $rootfs: scripts/setup.sh --test-roots (as root${run:+, with RUNPOOL_RELEASE_ARM64=1}) makes it"
root=$work/root
chroot=$(command -v chroot) unshare=$(command -v unshare)
mkdir -p "$root"
tar -C "$root" --numeric-owner -xf "$rootfs"
{ [ -e "$root$loader" ] && [ -f "$root/etc/debian_version" ]; } || fail "$rootfs is not a Debian root for $arch"
# Under qemu-user, the emulator (a static binary) runs inside the root too.
root_run=()
if ((${#run[@]})); then
  cp "$(command -v "${run[0]}")" "$root/usr/bin/" && root_run=("/usr/bin/${run[0]}")
fi
# /proc as in any container: the loader finds $ORIGIN through /proc/self/exe. The mount lives in
# a mount namespace of its own and is gone with it.
in_root() {
  env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin "$unshare" --mount --pid --fork --mount-proc="$root/proc" \
    "$chroot" "$root" "${root_run[@]}" "$@"
}
mkdir -p "$root/opt" "$root/tmp" "$root/proc"  # a first-stage (foreign) root has not made them yet
cp -a "$top" "$root/opt/runpool"
for lib in 'libcurl*' 'libjsoncpp*' 'libssl*' 'libcrypto*' 'libspdlog*' 'libfmt*'; do
  find "$root" -name "$lib" -not -path "$root/opt/*" | grep . >/dev/null && fail "the minimal root has the system's $lib"
done
[ ! -e "$root/etc/ssl/certs/ca-certificates.crt" ] || fail "the minimal root has a CA bundle"
# The root's own loader resolves every library: from the tarball, or the root's glibc / libstdc++ / libgcc_s.
for bin in runpoolctl runpool-agent; do
  libs=$(in_root "$loader" --list "/opt/runpool/bin/$bin" 2>&1) || fail "chroot: $loader --list $bin: $libs"
  ! grep -q "not found" <<<"$libs" || fail "chroot: $bin has libraries the root lacks: $libs"
  while read -r soname path; do
    path=$(realpath -m -s "$path")  # bin/../lib/x: RUNPATH $ORIGIN/../lib, spelled out
    case "$path" in
      /opt/runpool/lib/*) ;;
      *) [[ $path =~ $system ]] || fail "chroot: $bin loads $soname from $path, outside the tarball" ;;
    esac
  done < <(awk '$2 == "=>" {print $1, $3}' <<<"$libs")
done
for args in "--version" "--help" "provision --help"; do
  # shellcheck disable=SC2086
  out=$(in_root /opt/runpool/bin/runpoolctl $args 2>&1) || fail "chroot: runpoolctl $args: $out"
done
out=$(in_root /opt/runpool/bin/runpool-agent --version 2>&1) || fail "chroot: runpool-agent --version: $out"
[ "$out" = "$version" ] || fail "chroot: runpool-agent --version printed $out"
# TLS where the CA bundle is not Debian's: Amazon Linux 2023 keeps it at
# /etc/pki/tls/certs/ca-bundle.crt, not at the /etc/ssl/certs/ca-certificates.crt that Debian's
# libcurl (the tarball's) names. An HTTPS stand-in for DynamoDB on 127.0.0.1 with a certificate
# trusted only through that file must see runpoolctl's request; with no bundle in the root at all,
# the TLS handshake must fail and it must see none (the check can tell the two apart).
command -v openssl >/dev/null || fail "openssl is missing (Debian's openssl package)"
tls=$work/tls
rm -rf "$tls" && mkdir -p "$tls"
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$tls/key.pem" -out "$tls/cert.pem" 2>/dev/null || fail "openssl could not make a certificate"
timeout 120 python3 -c '
import http.server, ssl, sys
d = sys.argv[1]
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def do_POST(self):
        self.rfile.read(int(self.headers.get("Content-Length", 0)))
        open(d + "/requests", "a").write(self.headers.get("X-Amz-Target", "?") + "\n")
        body = b"{\"__type\":\"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException\",\"message\":\"stand-in\"}"
        self.send_response(400); self.send_header("Content-Type", "application/x-amz-json-1.0")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
s = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
c = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER); c.load_cert_chain(d + "/cert.pem", d + "/key.pem")
s.socket = c.wrap_socket(s.socket, server_side=True)
open(d + "/port.tmp", "w").write(str(s.server_address[1])); __import__("os").rename(d + "/port.tmp", d + "/port")
s.serve_forever()' "$tls" &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 100); do [ -f "$tls/port" ] && break; sleep 0.1; done
[ -f "$tls/port" ] || fail "the HTTPS stand-in did not start"
printf 'table = runpool\npool = ci\nregion = us-east-1\ninstance_role_id = AROAEXAMPLEEXAMPLE1\n' >"$root/tmp/runpool.conf"
status_in_root() {
  env -i AWS_ACCESS_KEY_ID=AKIAEXAMPLE AWS_SECRET_ACCESS_KEY=example RUNPOOL_ENDPOINT_DYNAMODB="https://127.0.0.1:$(cat "$tls/port")" \
    timeout 60 "$unshare" --mount --pid --fork --mount-proc="$root/proc" "$chroot" "$root" "${root_run[@]}" \
    /opt/runpool/bin/runpoolctl --config /tmp/runpool.conf status 2>&1 || true
}
out=$(status_in_root)
[ ! -e "$tls/requests" ] || fail "TLS without any CA bundle reached the stand-in: $out"
mkdir -p "$root/etc/pki/tls/certs"
cp "$tls/cert.pem" "$root/etc/pki/tls/certs/ca-bundle.crt"
out=$(status_in_root)
grep -q Scan "$tls/requests" 2>/dev/null ||
  fail "runpoolctl did not reach the HTTPS stand-in with /etc/pki/tls/certs/ca-bundle.crt as the only bundle: $out"
# install.sh, as a system with nothing of runpool runs it (the minimal root, as its root): the copy
# in /opt/runpool/<name> (current), the /usr/bin links the units name, the units, the default
# configurations; run again, a configuration changed since stays. Native builds only (under
# qemu-user the script's bash would be the target's).
if ((${#run[@]} == 0)); then
  rm -rf "$root/opt/runpool"
  cp -a "$top" "$root/tmp/$name"
  out=$(in_root "/tmp/$name/install.sh" 2>&1) || fail "chroot: install.sh: $out"
  [ "$(readlink "$root/opt/runpool/current")" = "$name" ] || fail "install.sh: /opt/runpool/current is not $name: $out"
  [ "$(in_root runpoolctl --version 2>&1)" = "$version" ] || fail "install.sh: runpoolctl on PATH is not $version"
  [ "$(in_root runpool-agent --version 2>&1)" = "$version" ] || fail "install.sh: runpool-agent on PATH is not $version"
  for unit in runpool-agent.service runpoolctl-serve.service runpoolctl-serve@.service runpoolctl-refresh.service \
              runpoolctl-refresh.timer; do
    [ -f "$root/etc/systemd/system/$unit" ] || fail "install.sh installed no $unit"
  done
  [ -z "$(find "$root/opt/runpool/$name" -perm /022 -not -type l)" ] || fail "install.sh left files writable by others"
  [ "$(stat -c %u "$root/opt/runpool/$name/bin/runpoolctl")" = 0 ] || fail "install.sh left runpoolctl not root's"
  echo "# the operator's" >>"$root/etc/runpool/runpoolctl.conf"
  out=$(in_root "/tmp/$name/install.sh" --units serve 2>&1) || fail "chroot: install.sh, again: $out"
  grep -q "the operator's" "$root/etc/runpool/runpoolctl.conf" || fail "install.sh replaced a configuration: $out"
  grep -q "runpoolctl.conf is kept" <<<"$out" || fail "install.sh did not say it kept the configuration: $out"
  # Into a root file system being built (an image): no units with --units none, links all the same.
  img=$work/image-root
  rm -rf "$img" && mkdir -p "$img"
  "$top/install.sh" --units none --root "$img" >/dev/null || fail "install.sh --root failed"
  [ "$(readlink "$img/usr/bin/runpoolctl")" = /opt/runpool/current/bin/runpoolctl ] || fail "install.sh --root: no /usr/bin link"
  [ ! -e "$img/etc/systemd" ] || fail "install.sh --units none installed units"
  if out=$("$top/install.sh" --units some 2>&1); then fail "install.sh took --units some"; fi
  grep -q "all, agent, serve or none" <<<"$out" || fail "install.sh --units some: $out"
fi
echo "portable_test: OK, $arch (and in a debootstrap minbase root of Debian $(cat "$root/etc/debian_version")${run:+, under ${run[0]}})"
