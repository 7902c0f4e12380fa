#!/usr/bin/env bash
# scripts/release-tag.sh, the release workflow's git steps, in a throw-away repository with a bare
# origin: `check` accepts only v<the project's version>; `commit` writes SHA256SUMS over the four
# artefacts, pins the two tarballs in the action's release-pin, commits that file alone on top of
# the tagged commit, moves the tag (annotated) there and pushes it to origin; with an artefact
# missing it fails and origin's tag stays where it was.
#
# Usage: release_tag_test.sh SOURCE_DIR
set -euo pipefail
src=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

work=$tmp/work
mkdir -p "$work/scripts" "$work/packaging/github-action" "$tmp/dist"
cp "$src/scripts/release-tag.sh" "$work/scripts/"
cp "$src/packaging/github-action/pin-release.sh" "$src/packaging/github-action/release-pin" "$work/packaging/github-action/"
echo 'project(runpool VERSION 9.9.9 LANGUAGES CXX)' >"$work/CMakeLists.txt"
git init --quiet --bare "$tmp/origin.git"
g() { git -C "$work" "$@"; }
g init --quiet --initial-branch=main
g config user.name test && g config user.email test@127.0.0.1
g add . && g commit --quiet -m source
g tag --annotate v9.9.9 -m "the tag a maintainer pushes"
g remote add origin "$tmp/origin.git"
g push --quiet origin main refs/tags/v9.9.9
source_commit=$(g rev-parse HEAD)
g checkout --quiet --detach v9.9.9  # as actions/checkout leaves a tag's checkout
origin_tag() { git -C "$tmp/origin.git" rev-parse "v9.9.9^{commit}"; }

for f in runpool-9.9.9-linux-x86_64.tar.gz runpool-9.9.9-linux-arm64.tar.gz runpool_9.9.9_amd64.deb runpool_9.9.9_arm64.deb; do
  echo "$f $RANDOM$RANDOM" >"$tmp/dist/$f"
done

# check: the project's version only.
"$work/scripts/release-tag.sh" check v9.9.9 || bad "check v9.9.9 refused"
for tag in v9.9.8 9.9.9 v9.9.9-rc1 ""; do
  if err=$("$work/scripts/release-tag.sh" check "$tag" 2>&1); then bad "check '$tag' accepted"; fi
  [[ $err == *release-tag:* ]] || bad "check '$tag': no message ($err)"
done

# commit with an artefact missing: refused, nothing committed or pushed.
mv "$tmp/dist/runpool_9.9.9_arm64.deb" "$tmp/deb"
if err=$("$work/scripts/release-tag.sh" commit v9.9.9 "$tmp/dist" 2>&1); then bad "commit without the arm64 .deb succeeded"; fi
[[ $err == *runpool_9.9.9_arm64.deb\ is\ missing* ]] || bad "commit without the arm64 .deb: $err"
if [ "$(g rev-parse HEAD)" != "$source_commit" ] || [ "$(origin_tag)" != "$source_commit" ]; then
  bad "a refused commit changed the repository"
fi
mv "$tmp/deb" "$tmp/dist/runpool_9.9.9_arm64.deb"

# commit: the release commit, the tag moved to it in origin.
release=$("$work/scripts/release-tag.sh" commit v9.9.9 "$tmp/dist") || bad "commit failed"
[ "$(origin_tag)" = "$release" ] || bad "origin's v9.9.9 is $(origin_tag), not the release commit $release"
[ "$(git -C "$tmp/origin.git" cat-file -t v9.9.9)" = tag ] || bad "v9.9.9 is not an annotated tag"
[ "$(g rev-parse "$release^")" = "$source_commit" ] || bad "the release commit's parent is not the tagged commit"
changed=$(g diff --name-only "$source_commit" "$release")
[ "$changed" = packaging/github-action/release-pin ] || bad "the release commit changes more than release-pin: $changed"
pin=$(g show "$release:packaging/github-action/release-pin")
for line in "version=9.9.9" \
  "sha256_x86_64=$(sha256sum "$tmp/dist/runpool-9.9.9-linux-x86_64.tar.gz" | cut -d' ' -f1)" \
  "sha256_arm64=$(sha256sum "$tmp/dist/runpool-9.9.9-linux-arm64.tar.gz" | cut -d' ' -f1)"; do
  grep -qxF "$line" <<<"$pin" || bad "release-pin lacks $line: $pin"
done
[ "$(wc -l <"$tmp/dist/SHA256SUMS")" -eq 4 ] || bad "SHA256SUMS does not list the four artefacts"
(cd "$tmp/dist" && sha256sum --check --strict --quiet SHA256SUMS) || bad "SHA256SUMS does not match the artefacts"
[ "$(git -C "$tmp/origin.git" rev-parse main)" = "$source_commit" ] || bad "origin's main moved: only the tag may"

[ $fail -eq 0 ] && echo "release_tag_test: OK"
exit $fail
