#!/usr/bin/env bash
# The fixture of a test tool from PyPI (packaging.cfn_lint_venv, moto.venv): a virtual environment
# of the build directory holding exactly what a requirements file pins (every package at its
# version, nothing else), with PROGRAM among its scripts. A copy of the requirements in the
# environment records what it holds: when they change, or the environment is broken or gone, it is
# made again from scratch.
#
# Usage: pinned_venv.sh PYTHON3 VENV_DIR REQUIREMENTS PROGRAM
set -euo pipefail
python=$1 venv=$2 req=$3 program=$4
stamp=$venv/runpool-requirements.txt
name=$(basename "$venv")

mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"        # two ctest runs in one build directory make it once
flock 9

pinned() { grep -Ev '^\s*(#|$)' "$req" | tr '\n' ' '; }

if cmp -s "$req" "$stamp" && "$venv/bin/python" -c '' 2>/dev/null && [ -x "$venv/bin/$program" ]; then
  echo "$name: $venv is up to date: $(pinned)"
  exit 0
fi

rm -rf "$venv"
# Debian's python3 needs python3-venv for this (scripts/setup.sh installs it).
"$python" -m venv "$venv"
"$venv/bin/pip" install --disable-pip-version-check --no-input --quiet --no-deps -r "$req"
"$venv/bin/pip" check --disable-pip-version-check

# Exactly the pinned set: a requirement that pip resolved differently, or a package left out of the
# file (which --no-deps would not install, and pip check would report), fails here.
want=$(grep -Ev '^\s*(#|$)' "$req" | sort -f)
have=$("$venv/bin/pip" freeze --disable-pip-version-check | sort -f)
if [ "$want" != "$have" ]; then
  echo "$name: $venv does not hold exactly $req:" >&2
  diff <(echo "$want") <(echo "$have") >&2 || true
  exit 1
fi
if [ ! -x "$venv/bin/$program" ]; then
  echo "$name: $req installs no $program" >&2
  exit 1
fi
cp "$req" "$stamp"
echo "$name: made $venv: $(pinned)"
