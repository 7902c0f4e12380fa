#!/usr/bin/env bash
# The operator's docs stay true to the code: docs/configuration.md carries both binaries' generated
# key references verbatim; docs/architecture.md's state diagram has exactly the record states the
# code knows, and each mermaid block is of a known diagram type.
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
