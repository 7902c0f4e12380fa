#!/usr/bin/env bash
# The operator's docs stay true to the code: docs/configuration.md carries both binaries' generated
# key references verbatim, and scripts/update-doc-references.sh would change no doc; docs/runpoolctl.md
# has a section and a table row for every command `runpoolctl --help` lists, and README.md names
# each; docs/architecture.md's state diagram has exactly the record states the code knows, and each
# mermaid block is of a known diagram type. No doc and no help text speaks the project's internal
# words: references to its planning documents ("Seed 000", "the brief", "../shared/…", their
# reference/*.md notes) or to issue numbers.
# Usage: docs_test.sh SOURCE_DIR RUNPOOLCTL RUNPOOL_AGENT
set -euo pipefail
src=$1 ctl=$2 agent=$3
fail=0
bad() { echo "FAIL: $*" >&2; fail=1; }

conf=$(cat "$src/docs/configuration.md")
# user_data_template's default is the build's install prefix; the doc shows a default build's.
# shellcheck disable=SC2016 # the backquotes are literal Markdown
ctl_ref=$("$ctl" config --reference |
  sed 's#^\(| `user_data_template` | [^|]* | string | `\)[^`]*/share/runpool/user-data.sh.in`#\1/usr/local/share/runpool/user-data.sh.in`#')
agent_ref=$("$agent" --config-reference)
if [ -z "$ctl_ref" ] || [ -z "$agent_ref" ]; then bad "a binary printed no reference"; fi
[[ "$conf" == *"$ctl_ref"* ]] ||
  bad "docs/configuration.md is out of date: replace runpoolctl's table with \`runpoolctl config --reference\`"
[[ "$conf" == *"$agent_ref"* ]] ||
  bad "docs/configuration.md is out of date: replace runpool-agent's table with \`runpool-agent --config-reference\`"

# Internal words, matched case-insensitively in text whose line breaks are spaces (a phrase may be
# wrapped). "seed" alone stays allowed: the race and fuzz suites' random seeds are real product words;
# a planning document is named by number ("Seed 000") or as "the seed".
internal='seeds? #?[0-9]{3}([^0-9]|$)|the seeds?([^a-z]|$)|the brief|\.\./shared|(^|[ (`])reference/[a-z0-9-]+\.md|the issue asks|issues? #?[0-9]+|(^|[ (,;])#[0-9]+([^0-9a-z]|$)'
check_words() {  # name text
  local hits
  hits=$(printf '%s' "$2" | tr '\n' ' ' | tr -s ' ' | grep -ioE ".{0,30}($internal)" || true)
  [ -z "$hits" ] || bad "$1 speaks internal words: $(printf '%s' "$hits" | head -n 3 | tr '\n' '|')"
}
for f in "$src/README.md" "$src"/docs/*.md; do check_words "${f#"$src"/}" "$(cat "$f")"; done
ctl_help=$("$ctl" --help-all) || bad "runpoolctl --help-all failed"
check_words "runpoolctl --help-all" "$ctl_help"
check_words "runpool-agent --help" "$("$agent" --help)"

# The generated references: the update script, run on a copy of the docs, changes nothing.
build=$(cd "$(dirname "$ctl")/.." && pwd)
if [ "$build/agent/runpool-agent" -ef "$agent" ]; then
  copy=$(mktemp -d)
  trap 'rm -rf "$copy"' EXIT
  mkdir "$copy/scripts"
  cp "$src/scripts/update-doc-references.sh" "$copy/scripts/"
  cp -r "$src/docs" "$copy/docs"
  bash "$copy/scripts/update-doc-references.sh" "$build" > /dev/null || bad "scripts/update-doc-references.sh failed"
  stale=$(cd "$copy" && diff -ru "$src/docs" docs) ||
    bad "generated references are stale: run scripts/update-doc-references.sh $build ($(printf '%s' "$stale" | grep -c '^[-+]|') table lines differ)"
else
  bad "$ctl and $agent are not one build's binaries (expected <build>/controller and <build>/agent)"
fi

# Every command runpoolctl lists: a "## <command>" section and a "| `<command>" table row in
# docs/runpoolctl.md, and a mention in README.md.
commands=$("$ctl" --help | awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z][a-z-]* / { print $1 }')
[ "$(wc -w <<<"$commands")" -ge 5 ] || bad "runpoolctl --help lists only: $commands"
for c in $commands; do
  grep -q "^## $c\$" "$src/docs/runpoolctl.md" || bad "docs/runpoolctl.md has no '## $c' section"
  grep -q "^| \`$c[ \`]" "$src/docs/runpoolctl.md" || bad "docs/runpoolctl.md's command table has no $c row"
  grep -q "\`$c\`" "$src/README.md" || bad "README.md does not name the command $c"
done

arch=$src/docs/architecture.md
if [ -f "$arch" ]; then
  # Every record state the code names (common/pool/instance_record.cc) is in the state diagram,
  # and the diagram names no other.
  code_states=$(sed -n 's/^ *{State::k[A-Za-z]*, "\([a-z]*\)"},$/\1/p' "$src/common/pool/instance_record.cc" | sort -u)
  [ -n "$code_states" ] || bad "no state names found in common/pool/instance_record.cc"
  diagram=$(awk '/^```mermaid/ { m = 1; b = ""; next } m && /^```/ { m = 0; if (b ~ /stateDiagram/) print b; next } m { b = b $0 "\n" }' "$arch")
  [ -n "$diagram" ] || bad "docs/architecture.md has no mermaid stateDiagram"
  diagram_states=$(printf '%s\n' "$diagram" | awk '$2 == "-->" { print $1; print $3 }' | grep -x '[a-z]*' | sort -u)
  [ "$code_states" = "$diagram_states" ] ||
    bad "the state diagram's states ($(tr '\n' ' ' <<<"$diagram_states")) differ from the code's ($(tr '\n' ' ' <<<"$code_states"))"
  awk '/^```mermaid/ { getline; print $1 }' "$arch" | while read -r kind; do
    case "$kind" in flowchart | graph | stateDiagram-v2 | sequenceDiagram) ;; *) echo "FAIL: unknown mermaid diagram $kind" >&2; exit 1 ;; esac
  done || fail=1
fi

[ $fail -eq 0 ] && echo "docs_test: OK"
exit $fail
