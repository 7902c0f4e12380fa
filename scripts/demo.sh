#!/usr/bin/env bash
# The main job: set up, build runpoolctl and runpool-agent, and run the whole lifecycle on the
# local cloud (scripts/demo.js). Needs root: the agent drops to the unprivileged runner user.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then exec sudo -E "$0" "$@"; fi
scripts/setup.sh
build=${RUNPOOL_DEMO_BUILD_DIR:-build}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" -j "$(nproc)" --target runpoolctl runpool-agent
exec node scripts/demo.js --build "$build"
