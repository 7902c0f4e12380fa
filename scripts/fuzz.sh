#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/, clang with ASan + UBSan) and runs each for a bounded
# time from its committed seed corpus. Fails on the first crash, leak, sanitizer report or broken
# invariant; the input that did it is left as <target>-crash-* in the build directory.
#   scripts/fuzz.sh [seconds per target, default 60] [target ...]
# RUNPOOL_FUZZ_BUILD_DIR (default build-fuzz) is the clang build; new inputs found go to its
# corpus/<target>/, never into the committed seeds. RUNPOOL_FUZZ_JOBS: its parallel compiles
# (default: every core).
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(json record pool_message ec2_xml schedule config github)

build=${RUNPOOL_FUZZ_BUILD_DIR:-build-fuzz}
clang=$(command -v clang++ || command -v clang++-14 || true)
[ -n "$clang" ] || { echo "fuzz: clang++ is not installed (scripts/setup.sh installs it)" >&2; exit 1; }
cmake -S . -B "$build" -DCMAKE_CXX_COMPILER="$clang" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" -DRUNPOOL_FUZZ=ON -DRUNPOOL_BENCH=OFF >/dev/null
cmake --build "$build" -j "${RUNPOOL_FUZZ_JOBS:-$(nproc)}" --target "${targets[@]/%/_fuzz}"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
failed=()
for t in "${targets[@]}"; do
  corpus="$build/corpus/$t"
  mkdir -p "$corpus"
  log="$build/fuzz-$t.log"
  echo "fuzz: $t for ${seconds}s" >&2
  # -rss_limit_mb and -max_len bound memory; -timeout turns a hang into a failure.
  if "$build/tests/fuzz/${t}_fuzz" "$corpus" "tests/fuzz/corpus/$t" -max_total_time="$seconds" \
      -max_len=65536 -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
      -artifact_prefix="$build/$t-" >"$log" 2>&1; then
    grep -E "^stat::number_of_executed_units|cov: " "$log" | tail -2 | sed "s/^/fuzz: $t: /" >&2
  else
    echo "fuzz: $t FAILED (log: $log)" >&2
    tail -40 "$log" >&2
    failed+=("$t")
  fi
done
if ((${#failed[@]})); then
  echo "fuzz: crashes in ${failed[*]}" >&2
  exit 1
fi
echo "fuzz: ${#targets[@]} targets, ${seconds}s each, no crash" >&2
