#!/usr/bin/env bash
# Rewrites the generated key references in the docs from the binaries of a build, so that they
# never drift from the code (tests/packaging/docs_test.sh and controller/settings_test.cc check):
# docs/configuration.md (runpoolctl's table, then runpool-agent's), docs/runpoolctl.md and docs/agent.md.
# Usage: scripts/update-doc-references.sh [BUILD_DIR]   (default: build)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/build}
ctl=$build/controller/runpoolctl agent=$build/agent/runpool-agent
for b in "$ctl" "$agent"; do [ -x "$b" ] || { echo "no $b: build first" >&2; exit 2; }; done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# user_data_template's default is the build's install prefix; the docs show a default build's.
# shellcheck disable=SC2016 # the backquotes are literal Markdown
"$ctl" config --reference |
  sed 's#^\(| `user_data_template` | [^|]* | string | `\)[^`]*/share/runpool/user-data.sh.in`#\1/usr/local/share/runpool/user-data.sh.in`#' \
    >"$tmp/ctl"
"$agent" --config-reference >"$tmp/agent"
# Replaces the Nth table that starts with "| key | environment" in FILE by the given reference.
replace() {  # file n reference
  awk -v n="$2" -v ref="$3" '
    BEGIN { while ((getline line < ref) > 0) table = table line "\n" }
    /^\| key \| environment/ && !in_table { count++; if (count == n) { printf "%s", table; skip = 1 } in_table = 1 }
    in_table && !/^\|/ { in_table = 0; skip = 0 }
    !skip { print }
  ' "$1" >"$tmp/out" && cat "$tmp/out" >"$1"
}
replace "$src/docs/configuration.md" 1 "$tmp/ctl"
replace "$src/docs/configuration.md" 2 "$tmp/agent"
replace "$src/docs/runpoolctl.md" 1 "$tmp/ctl"
replace "$src/docs/agent.md" 1 "$tmp/agent"
echo "docs/configuration.md, docs/runpoolctl.md and docs/agent.md now carry the references of $build"
