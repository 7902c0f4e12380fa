#!/usr/bin/env bash
# Installs runpoolctl for the composite action (run.sh calls it unless the runpoolctl input names a
# binary) and prints the directory of the installed binaries.
#
# Which release, and the SHA-256 its tarball must have:
#   - by default, the release this revision of the action belongs to: the version and each
#     architecture's digest in release-pin beside this script, which the release workflow writes
#     into the commit it tags (.github/workflows/release.yml);
#   - INPUT_RUNPOOLCTL_VERSION names another release;
#   - INPUT_RUNPOOLCTL_SHA256, a digest or `x86_64=<digest> arm64=<digest>`, wins over the pin.
# A release the pin does not name and no runpoolctl-sha256 covers is checked against the
# SHA256SUMS published beside it, with a warning: that catches a damaged download, not a
# substituted release.
#
# Environment (the action's inputs, never shell text):
#   INPUT_RUNPOOLCTL_VERSION, INPUT_RUNPOOLCTL_SHA256  as above
#   INPUT_RUNPOOLCTL_URL      where the release's files are: runpool-<version>-linux-<arch>.tar.gz (and
#                             SHA256SUMS) side by side; {version} and {arch} are replaced. Default:
#                             $GITHUB_SERVER_URL/$JOB_ACTION_REPOSITORY/releases/download/v{version}
#   JOB_ACTION_REPOSITORY     github.action_repository (owner/name), which reaches the step only
#                             through its env: in a composite action's run steps the runner leaves
#                             GITHUB_ACTION_REPOSITORY (and the expression) empty
#   RUNNER_TOOL_CACHE         the release is kept in $RUNNER_TOOL_CACHE/runpoolctl/<version>/<arch>,
#                             with <arch>.complete holding its tarball's SHA-256, and reused by later
#                             steps and jobs on the same runner that require that same digest
#
# A digest mismatch or a failed download installs nothing. Plain http:// is accepted only for this
# machine (127.0.0.1, localhost); anything else must be https://. Needs bash, curl, sha256sum, tar,
# gzip, mkdir, mktemp, mv, rm and uname, which every GitHub-hosted Linux runner has.
set -euo pipefail

die() { echo "::error::runpoolctl install: $*" >&2; exit 1; }
hex64='^[0-9a-f]{64}$'

[ "$(uname -s)" = Linux ] || die "runpoolctl releases are for Linux, and this runner runs $(uname -s)"
case "$(uname -m)" in
  x86_64 | amd64) arch=x86_64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) die "no runpoolctl release for $(uname -m)" ;;
esac

# --- The release and the digest it must have ---------------------------------------------------
pin_file=${BASH_SOURCE[0]%/*}/release-pin
pin_version='' pin_digest=''
if [ -f "$pin_file" ]; then
  while IFS='=' read -r key value; do
    case "$key" in
      version) pin_version=$value ;;
      "sha256_$arch") pin_digest=${value,,} ;;
    esac
  done <"$pin_file"
fi
version=${INPUT_RUNPOOLCTL_VERSION:-}
if [ -z "$version" ]; then
  [ -f "$pin_file" ] || die "$pin_file is missing, so this copy of the action does not say which" \
    "runpoolctl release it belongs to. Use the action from a release commit (its release page names" \
    "it), or give the runpoolctl-version input (with runpoolctl-sha256), or the runpoolctl input"
  [ -n "$pin_version" ] || die "this revision of the action is no release: release-pin names no" \
    "version (only the commits the release workflow tags do). Pin the action to a release's commit," \
    "or give the runpoolctl-version input (with runpoolctl-sha256), or the runpoolctl input (a binary," \
    "e.g. runpoolctl for the one on PATH)"
  version=$pin_version
fi
[[ $version =~ ^[0-9A-Za-z][0-9A-Za-z.+_-]*$ ]] || die "runpoolctl-version '$version' is not a version"

want='' source=''
if [ -n "${INPUT_RUNPOOLCTL_SHA256:-}" ]; then
  read -r -d '' -a entries <<<"${INPUT_RUNPOOLCTL_SHA256,,}" || true  # split on any white space
  for entry in "${entries[@]}"; do
    case "$entry" in
      x86_64=* | arm64=*) [ "${entry%%=*}" != "$arch" ] || want=${entry#*=} ;;
      *=*) die "runpoolctl-sha256: '${entry%%=*}' is no architecture (x86_64, arm64)" ;;
      *) want=$entry ;;
    esac
  done
  [ -n "$want" ] || die "runpoolctl-sha256 gives no SHA-256 for $arch (give <digest>, or $arch=<digest>)"
  [[ $want =~ $hex64 ]] || die "runpoolctl-sha256: '$want' is not a SHA-256 (64 hex digits)"
  source="the runpoolctl-sha256 input"
elif [ -n "$pin_version" ] && [ "$version" = "$pin_version" ]; then
  [[ $pin_digest =~ $hex64 ]] || die "$pin_file names release $version but no SHA-256 for $arch (sha256_$arch)"
  want=$pin_digest
  source="the digest pinned in this action for $version (release-pin)"
fi

base=${INPUT_RUNPOOLCTL_URL:-}
if [ -z "$base" ]; then
  repository=${JOB_ACTION_REPOSITORY:-}
  [ -n "$repository" ] || die "the action's repository is unknown (github.action_repository is empty," \
    "as it is for an action used from a path, uses: ./), so there is no release to download from:" \
    "give the runpoolctl-url input, or the runpoolctl input"
  if [[ ! $repository =~ ^[A-Za-z0-9][A-Za-z0-9-]*/[A-Za-z0-9_.-]+$ ]] || [[ $repository =~ /\.\.?$ ]]; then
    die "'$repository' is not an owner/name repository"
  fi
  base=${GITHUB_SERVER_URL:-https://github.com}/$repository"/releases/download/v{version}"
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
name=runpool-$version-linux-$arch.tar.gz
command -v curl >/dev/null || die "curl is needed to download runpoolctl"
mkdir -p "$cache_root/runpoolctl/$version"
tmp=$(mktemp -d "$cache_root/runpoolctl/$version/.install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

fetch() {  # fetch FILE: $base/FILE into $tmp/FILE
  curl --fail --silent --show-error --location --retry 3 --connect-timeout 20 --max-time 300 \
    --output "$tmp/$1" "$base/$1" || die "could not download $base/$1"
}

if [ -z "$want" ]; then
  fetch SHA256SUMS
  # sha256sum's format: "<digest>  <file>" (or " *<file>" in binary mode).
  while read -r digest file; do
    if [ "$file" = "$name" ] || [ "$file" = "*$name" ]; then want=${digest,,}; break; fi
  done <"$tmp/SHA256SUMS"
  [[ $want =~ $hex64 ]] || die "$base/SHA256SUMS lists no SHA-256 for $name"
  source="the SHA256SUMS published beside it"
  echo "::warning::runpoolctl $version is not the release this action pins and no runpoolctl-sha256" \
    "was given: its tarball is checked only against the SHA256SUMS downloaded from the same place." \
    "Give runpoolctl-sha256 to pin it." >&2
fi

# The tool cache's convention (actions/toolkit tool-cache): <dir>.complete marks a finished install;
# here it also holds the tarball's digest, so an install of other bytes is never taken for this one.
if [ -f "$dir.complete" ] && [ "$(<"$dir.complete")" = "$want" ] && [ -x "$dir/bin/runpoolctl" ]; then
  echo "runpoolctl $version ($arch): from the tool cache, $dir (SHA-256 $want, $source)" >&2
  echo "$dir/bin"
  exit 0
fi

fetch "$name"
have=$(sha256sum "$tmp/$name")
have=${have%% *}
[ "$have" = "$want" ] || die "checksum mismatch for $name: $source says $want, the download from $base" \
  "is $have; nothing installed"

mkdir "$tmp/unpacked"
tar -xzf "$tmp/$name" -C "$tmp/unpacked" --strip-components=1 --no-same-owner
[ -x "$tmp/unpacked/bin/runpoolctl" ] || die "$name has no bin/runpoolctl"
said=$("$tmp/unpacked/bin/runpoolctl" --version) || die "the downloaded runpoolctl does not run here"

# Into place in one rename; the same digest installed by someone else meanwhile is kept.
if [ ! -f "$dir.complete" ] || [ "$(<"$dir.complete")" != "$want" ]; then
  rm -rf "$dir" "$dir.complete"
  mv -T "$tmp/unpacked" "$dir"
  echo "$want" >"$dir.complete"
fi
echo "runpoolctl $version ($arch): $name has SHA-256 $want, as $source requires;" \
  "installed from $base into $dir (runpoolctl --version: $said)" >&2
echo "$dir/bin"
