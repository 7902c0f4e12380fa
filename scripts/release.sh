#!/usr/bin/env bash
# The release artefacts, into OUTPUT_DIR:
#   runpool-<version>-linux-<arch>.tar.gz  runpoolctl and runpool-agent with every shared library
#       they need beyond glibc (and libstdc++/libgcc_s, which every glibc distribution has) in lib/,
#       found through RPATH $ORIGIN/../lib: unpack anywhere, no packages to install. Runs on glibc
#       2.34 and later (Amazon Linux 2023, Ubuntu 22.04/24.04, Debian 12); checked below.
#   runpool_<version>_<arch>.deb           the Debian 12 package (packaging/CMakeLists.txt)
#   SHA256SUMS                             sha256sum's format, for `sha256sum -c` and the action
#
# Usage: scripts/release.sh OUTPUT_DIR
# RUNPOOL_RELEASE_ARCH (x86_64 or arm64; default: this machine's) is the target. arm64 on an
# x86_64 machine is a cross build (cmake/aarch64-linux-gnu.cmake: Debian's cross toolchain and
# the arm64 libraries, which scripts/setup.sh installs when RUNPOOL_RELEASE_ARM64=1); its
# binaries are run under qemu-user for the checks below.
# RUNPOOL_RELEASE_BUILD_DIR (default build-release, build-release-arm64 for a cross build) is the
# Release build it makes and reuses.
# RUNPOOL_RELEASE_NO_DEB=1 skips the .deb (the tarball alone, as the CI check makes it).
# RUNPOOL_RELEASE_JOBS (default: every core) is the build's parallelism.
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: scripts/release.sh OUTPUT_DIR}
mkdir -p "$out"
out=$(cd "$out" && pwd)

# The newest glibc symbol version the binaries and the bundled libraries may need: Amazon Linux
# 2023's glibc.
max_glibc=2.34
# The newest libstdc++ symbol version: GCC 11's libstdc++ (Amazon Linux 2023); Ubuntu 22.04 and
# Debian 12 have GCC 12's, Ubuntu 24.04 GCC 14's.
max_glibcxx=3.4.29
# Not bundled: glibc itself (it must match the system's loader) and the GCC runtime every glibc
# system carries (a bundled Debian 12 libstdc++ would need glibc 2.36, its libgcc_s glibc 2.35).
system_libs='^(ld-linux.*|libc|libm|libdl|libpthread|librt|libresolv|libutil|libanl|libstdc\+\+|libgcc_s)\.so'

case "$(uname -m)" in
  x86_64) host=x86_64 ;;
  aarch64) host=arm64 ;;
  *) echo "release: unsupported machine $(uname -m)" >&2; exit 1 ;;
esac
arch=${RUNPOOL_RELEASE_ARCH:-$host}
case "$arch" in
  x86_64) deb_arch=amd64 ;;
  arm64) deb_arch=arm64 ;;
  *) echo "release: RUNPOOL_RELEASE_ARCH must be x86_64 or arm64, not $arch" >&2; exit 1 ;;
esac
# How this script reads and runs the target's files: natively, or (cross) with the target's
# binutils and its programs under qemu-user through the target's own loader.
objdump=objdump cross=() run=() toolchain=()
build=${RUNPOOL_RELEASE_BUILD_DIR:-$src/build-release}
if [ "$arch" != "$host" ]; then
  [ "$arch" = arm64 ] || { echo "release: a cross build is made for arm64 only" >&2; exit 1; }
  objdump=aarch64-linux-gnu-objdump
  cross=(aarch64-linux-gnu-g++ qemu-aarch64-static)
  run=(qemu-aarch64-static)
  toolchain=(-DCMAKE_TOOLCHAIN_FILE="$src/cmake/aarch64-linux-gnu.cmake")
  build=${RUNPOOL_RELEASE_BUILD_DIR:-$src/build-release-arm64}
  [ -e /lib/ld-linux-aarch64.so.1 ] ||
    { echo "release: no arm64 glibc (libc6:arm64); RUNPOOL_RELEASE_ARM64=1 scripts/setup.sh installs it" >&2; exit 1; }
fi
for tool in cmake patchelf "$objdump" sha256sum tar "${cross[@]}"; do
  command -v "$tool" >/dev/null ||
    { echo "release: $tool is missing (scripts/setup.sh installs it${cross:+; RUNPOOL_RELEASE_ARM64=1 for arm64})" >&2; exit 1; }
done
# ldd for the target: its loader, asked to list what a program loads.
loaded() {
  if [ "$arch" = "$host" ]; then env -i "$(command -v ldd)" "$@"; return; fi
  local f
  for f in "$@"; do env -i LD_TRACE_LOADED_OBJECTS=1 "${run[@]}" /lib/ld-linux-aarch64.so.1 "$f"; done
}

# --- Build: Release, spdlog compiled in (RUNPOOL_PORTABLE), only what the artefacts carry --------
# A unity build, as the tests' (the same code, compiled in a fraction of the time).
cmake -S "$src" -B "$build" "${toolchain[@]}" -DCMAKE_BUILD_TYPE=Release -DRUNPOOL_PORTABLE=ON -DRUNPOOL_BENCH=OFF -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_INSTALL_PREFIX=/usr -DCMAKE_SKIP_INSTALL_ALL_DEPENDENCY=ON >/dev/null
cmake --build "$build" -j "${RUNPOOL_RELEASE_JOBS:-$(nproc)}" --target runpoolctl runpool-agent runpool_default_configs
version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$build/CMakeCache.txt")
[ -n "$version" ] || { echo "release: no project version in $build/CMakeCache.txt" >&2; exit 1; }

# --- The tarball ---------------------------------------------------------------------------------
name=runpool-$version-linux-$arch
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
DESTDIR=$work/install cmake --install "$build" --strip >/dev/null
top=$work/$name
mkdir -p "$top/lib"
# /usr/{bin,share} -> bin, share; /etc/runpool -> etc/runpool; the units -> share/runpool/systemd.
mv "$work/install/usr/bin" "$work/install/usr/share" "$top/"
mkdir -p "$top/etc" "$top/share/runpool/systemd"
mv "$work/install/etc/runpool" "$top/etc/"
mv "$work/install/usr/lib/systemd/system/runpool-agent.service" "$work/install/usr/lib/systemd/system/runpoolctl-serve.service" \
  "$work/install/usr/lib/systemd/system/runpoolctl-serve@.service" \
  "$work/install/usr/lib/systemd/system/runpoolctl-refresh.service" \
  "$work/install/usr/lib/systemd/system/runpoolctl-refresh.timer" \
  "$top/share/runpool/systemd/"
cp "$src/LICENSE" "$top/"
# Installs this directory on any systemd distribution (units, links, default configurations).
install -m 0755 "$src/packaging/install.sh" "$top/install.sh"

# Every shared library the binaries load beyond the system's (ldd: the whole closure), copied with
# its SONAME as file name. Each finds the others through RUNPATH $ORIGIN, the binaries through
# $ORIGIN/../lib.
bundle=()
while read -r soname path; do
  [[ $soname =~ $system_libs ]] && continue
  bundle+=("$soname")
  cp -L "$path" "$top/lib/$soname"
done < <(loaded "$top/bin/runpoolctl" "$top/bin/runpool-agent" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | sort -u)
chmod 0644 "$top"/lib/*
# shellcheck disable=SC2016 # $ORIGIN is the loader's, not the shell's
for lib in "$top"/lib/*; do
  patchelf --set-rpath '$ORIGIN' "$lib"
done
# shellcheck disable=SC2016
for bin in "$top"/bin/*; do
  patchelf --set-rpath '$ORIGIN/../lib' "$bin"
done

# The check: no binary or bundled library needs a glibc or libstdc++ newer than the oldest target's,
# and each binary resolves every library from lib/ or the system set with the environment cleared.
newest() {  # newest PREFIX FILE...: the newest PREFIX_x.y version the files reference (undefined)
  local prefix=$1; shift
  "$objdump" -T "$@" | awk '$0 ~ /\*UND\*/' | grep -oE "\(${prefix}_[0-9.]+\)" | tr -d '()' \
    | sed "s/^${prefix}_//" | sort -uV | tail -1
}
too_new() {  # too_new HAVE MAX: HAVE is a newer version than MAX
  [ "$1" != "$2" ] && [ "$(printf '%s\n%s\n' "$1" "$2" | sort -V | tail -1)" = "$1" ]
}
glibc=$(newest GLIBC "$top"/bin/* "$top"/lib/*)
glibcxx=$(newest GLIBCXX "$top"/bin/* "$top"/lib/*)
if too_new "$glibc" "$max_glibc" || too_new "$glibcxx" "$max_glibcxx"; then
  echo "release: the tarball needs GLIBC_$glibc / GLIBCXX_$glibcxx (at most $max_glibc / $max_glibcxx):" >&2
  for f in "$top"/bin/* "$top"/lib/*; do
    "$objdump" -T "$f" | awk '$0 ~ /\*UND\*/' | grep -E "GLIBC_(2\.3[5-9]|2\.[4-9])|GLIBCXX_3\.4\.(3[0-9])" | sed "s|^|  ${f##*/}: |" >&2 || true
  done
  exit 1
fi
for bin in "$top"/bin/*; do
  missing=$(loaded "$bin" | grep 'not found' || true)
  [ -z "$missing" ] || { echo "release: ${bin##*/} misses $missing" >&2; exit 1; }
  env -i "${run[@]}" "$bin" --version >/dev/null
done

tarball=$out/$name.tar.gz
tar -C "$work" --owner=0 --group=0 --numeric-owner --sort=name -czf "$tarball" "$name"
echo "release: $tarball ($(du -k "$tarball" | cut -f1) KiB; GLIBC_$glibc, GLIBCXX_$glibcxx; bundles ${bundle[*]})" >&2
artefacts=("${tarball##*/}")

# --- The Debian package --------------------------------------------------------------------------
if [ "${RUNPOOL_RELEASE_NO_DEB:-}" != 1 ]; then
  (cd "$build" && cpack -G DEB -B "$work/deb" >/dev/null)
  deb=$(find "$work/deb" -maxdepth 1 -name "runpool_${version}_${deb_arch}.deb" -print -quit)
  [ -n "$deb" ] || { echo "release: cpack made no runpool_${version}_${deb_arch}.deb" >&2; exit 1; }
  cp "$deb" "$out/"
  artefacts+=("${deb##*/}")
fi

(cd "$out" && sha256sum "${artefacts[@]}" >SHA256SUMS)
echo "release: $out: ${artefacts[*]} SHA256SUMS" >&2
