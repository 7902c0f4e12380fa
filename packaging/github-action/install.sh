#!/usr/bin/env bash
# Installs a release of runpoolctl for the composite action (run.sh calls it when the
# runpoolctl-version input is given) and prints the directory of the installed binaries.
#
# Environment (the action's inputs, never shell text):
#   INPUT_RUNPOOLCTL_VERSION  the release, e.g. 0.1.0
#   INPUT_RUNPOOLCTL_URL      where the release's files are: runpool-<version>-linux-<arch>.tar.gz and
#                             SHA256SUMS side by side; {version} and {arch} are replaced. Default:
#                             <server>/<the action's repository>/releases/download/v{version}
#   RUNNER_TOOL_CACHE         the runner's tool cache: the release is kept in
#                             $RUNNER_TOOL_CACHE/runpoolctl/<version>/<arch> and reused by later steps
#                             and jobs on the same runner
#
# The tarball must be listed in SHA256SUMS with the digest it has: a mismatch, a missing entry or a
# failed download installs nothing. Plain http:// is accepted only for this machine (127.0.0.1,
# localhost); anything else must be https://.
set -euo pipefail

die() { echo "::error::runpoolctl install: $*" >&2; exit 1; }

version=${INPUT_RUNPOOLCTL_VERSION:?}
[[ $version =~ ^[0-9A-Za-z][0-9A-Za-z.+_-]*$ ]] || die "runpoolctl-version '$version' is not a version"
case "$(uname -m)" in
  x86_64 | amd64) arch=x86_64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die "no runpoolctl release for $(uname -m)" ;;
esac

base=${INPUT_RUNPOOLCTL_URL:-}
if [ -z "$base" ]; then
  [ -n "${GITHUB_ACTION_REPOSITORY:-}" ] || die "no runpoolctl-url given and the action's repository is unknown"
  base=${GITHUB_SERVER_URL:-https://github.com}/$GITHUB_ACTION_REPOSITORY"/releases/download/v{version}"
fi
base=${base//\{version\}/$version}
base=${base//\{arch\}/$arch}
base=${base%/}
case "$base" in
  https://*) ;;
  http://127.0.0.1[:/]* | http://localhost[:/]*) ;;
  *) die "runpoolctl-url must be https:// (got '$base')" ;;
esac

cache_root=${RUNNER_TOOL_CACHE:-${RUNNER_TEMP:-${TMPDIR:-/tmp}}/runpool-tool-cache}
dir=$cache_root/runpoolctl/$version/$arch
# The tool cache's convention (actions/toolkit tool-cache): <dir>.complete marks a finished install.
if [ -f "$dir.complete" ] && [ -x "$dir/bin/runpoolctl" ]; then
  echo "runpoolctl $version ($arch): from the tool cache, $dir" >&2
  echo "$dir/bin"
  exit 0
fi

command -v curl >/dev/null || die "curl is needed to download runpoolctl"
name=runpool-$version-linux-$arch.tar.gz
mkdir -p "$cache_root/runpoolctl/$version"
tmp=$(mktemp -d "$cache_root/runpoolctl/$version/.install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fetch() {  # fetch FILE: $base/FILE into $tmp/FILE
  curl --fail --silent --show-error --location --retry 3 --connect-timeout 20 --max-time 300 \
    --output "$tmp/$1" "$base/$1" || die "could not download $base/$1"
}
fetch SHA256SUMS
fetch "$name"

# sha256sum's format: "<digest>  <file>" (or " *<file>" in binary mode).
want=$(awk -v f="$name" '$2 == f || $2 == "*" f {print $1; exit}' "$tmp/SHA256SUMS")
[[ $want =~ ^[0-9a-f]{64}$ ]] || die "$base/SHA256SUMS lists no SHA-256 for $name"
have=$(sha256sum "$tmp/$name" | cut -d' ' -f1)
[ "$have" = "$want" ] || die "checksum mismatch for $name: SHA256SUMS says $want, the download is $have; nothing installed"

mkdir "$tmp/unpacked"
tar -xzf "$tmp/$name" -C "$tmp/unpacked" --strip-components=1 --no-same-owner
[ -x "$tmp/unpacked/bin/runpoolctl" ] || die "$name has no bin/runpoolctl"
"$tmp/unpacked/bin/runpoolctl" --version >/dev/null || die "the downloaded runpoolctl does not run here"

# Into place in one rename; a finished install by someone else meanwhile is kept.
if [ ! -f "$dir.complete" ]; then
  rm -rf "$dir"
  mv -T "$tmp/unpacked" "$dir"
  touch "$dir.complete"
fi
echo "runpoolctl $version ($arch): installed from $base into $dir" >&2
echo "$dir/bin"
