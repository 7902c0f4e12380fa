#!/usr/bin/env bash
# The benchmarks (bench/, docs/performance.md): set up, build them (RelWithDebInfo, no sanitizers,
# in build-bench), run each one after the other and print every figure. They print figures; none
# passes or fails. Needs root: the agent drops to the unprivileged runner user.
#
#   scripts/bench.sh                          every benchmark
#   scripts/bench.sh warm_claim release       only these (names as in the list below)
#   scripts/bench.sh --list                   the names
#   scripts/bench.sh release -- --sizes 1,10  arguments after -- go to each benchmark run
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "$(id -u)" -ne 0 ]; then exec sudo -E "$0" "$@"; fi

# One line per benchmark: bench/<name>_bench.cc.
benches=(
  warm_claim
  release
  cold_provision
  provision_cost
  agent_footprint
  control_plane
  idle_cost
  clean_sweep
  docker_clean
  serve_latency
)

picked=()
extra=()
while (($#)); do
  case "$1" in
    --list) printf '%s\n' "${benches[@]}"; exit 0 ;;
    --) shift; extra=("$@"); break ;;
    -h | --help) sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *)
      name=${1%_bench}
      printf '%s\n' "${benches[@]}" | grep -qx "$name" || { echo "bench.sh: no benchmark '$1' (--list)" >&2; exit 2; }
      picked+=("$name")
      ;;
  esac
  shift
done
((${#picked[@]})) || picked=("${benches[@]}")

scripts/setup.sh
build=${RUNPOOL_BENCH_BUILD_DIR:-build-bench}
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRUNPOOL_SANITIZE=OFF -DRUNPOOL_BENCH=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${picked[@]/%/_bench}"

echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(free -g | awk '/^Mem:/ {print $2}') GB RAM; load $(cut -d' ' -f1-3 /proc/loadavg)"
status=0
for name in "${picked[@]}"; do
  "$build/bench/${name}_bench" "${extra[@]}" || { status=1; echo "bench.sh: ${name}_bench could not measure" >&2; }
done
exit "$status"
