#!/usr/bin/env bash
# Writes release-pin (beside this script) for release VERSION from the tarballs in DIR, as the
# release workflow does in the commit it tags: the action at that tag then installs exactly these
# tarballs (install.sh).
#
# Usage: packaging/github-action/pin-release.sh VERSION DIR
#   DIR holds runpool-VERSION-linux-x86_64.tar.gz and runpool-VERSION-linux-arm64.tar.gz.
set -euo pipefail
version=${1:?usage: pin-release.sh VERSION DIR}
dir=${2:?usage: pin-release.sh VERSION DIR}
[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+([.+-][0-9A-Za-z.+-]+)?$ ]] || { echo "pin-release: '$version' is not a version" >&2; exit 1; }
pin=$(dirname "$0")/release-pin
digests=()
for arch in x86_64 arm64; do
  tarball=$dir/runpool-$version-linux-$arch.tar.gz
  [ -f "$tarball" ] || { echo "pin-release: $tarball is missing" >&2; exit 1; }
  digest=$(sha256sum "$tarball")
  digests+=("sha256_$arch=${digest%% *}")
done
{
  sed -n '/^#/p' "$pin"  # the file's own explanation, kept
  echo "version=$version"
  printf '%s\n' "${digests[@]}"
} >"$pin.tmp"
mv "$pin.tmp" "$pin"
