#!/usr/bin/env bash
# The release workflow's git steps (.github/workflows/release.yml), run in a checkout of the tag:
#
#   scripts/release-tag.sh check TAG
#       TAG must be v<version> with the version CMakeLists.txt gives the project (and so the
#       artefacts' names and --version).
#   scripts/release-tag.sh commit TAG DIST
#       DIST holds runpool-<version>-linux-{x86_64,arm64}.tar.gz and runpool_<version>_{amd64,arm64}.deb.
#       Writes DIST/SHA256SUMS over them; pins the two tarballs in the action's release-pin
#       (packaging/github-action/pin-release.sh); commits that file alone on top of the checked-out
#       commit (the release commit); moves TAG to it, annotated; pushes the tag to origin, replacing
#       the one that started the workflow. Prints the release commit. The action at TAG then installs
#       exactly these tarballs.
set -euo pipefail
cd "$(dirname "$0")/.."
die() { echo "release-tag: $*" >&2; exit 1; }

mode=${1:-} tag=${2:-}
[[ $tag =~ ^v([0-9]+\.[0-9]+\.[0-9]+)$ ]] || die "'$tag' is no release tag (v<major>.<minor>.<patch>)"
version=${BASH_REMATCH[1]}
project=$(sed -n 's/^project(runpool VERSION \([0-9.]*\) .*/\1/p' CMakeLists.txt)
[ "$version" = "$project" ] || die "the tag $tag is not v$project, the version in CMakeLists.txt that the artefacts carry"

case "$mode" in
  check) exit 0 ;;
  commit) dist=${3:?usage: release-tag.sh commit TAG DIST} ;;
  *) die "usage: release-tag.sh check TAG | commit TAG DIST" ;;
esac

files=("runpool-$version-linux-x86_64.tar.gz" "runpool-$version-linux-arm64.tar.gz"
       "runpool_${version}_amd64.deb" "runpool_${version}_arm64.deb")
for f in "${files[@]}"; do [ -f "$dist/$f" ] || die "$dist/$f is missing"; done
(cd "$dist" && sha256sum -- "${files[@]}" >SHA256SUMS)
packaging/github-action/pin-release.sh "$version" "$dist"
git add packaging/github-action/release-pin
git commit --quiet -m "Release $tag: the action installs runpoolctl $version, pinned by SHA-256"
git tag --force --annotate "$tag" --message "runpool $version" >/dev/null
git push --quiet --force origin "refs/tags/$tag"
git rev-parse HEAD
