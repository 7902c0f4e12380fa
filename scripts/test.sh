#!/usr/bin/env bash
# The test command: set up, build with AddressSanitizer + UndefinedBehaviorSanitizer, run every
# ctest tier (unit, integration, e2e). Extra arguments go to ctest, e.g. `scripts/test.sh -L unit`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

build=${RUNPOOL_TEST_BUILD_DIR:-build-asan}
# A unity build (README.md): a target's sources compiled a few at a time, half the time.
# The benchmarks are not tests: scripts/bench.sh builds them in a build of their own
# (RelWithDebInfo), and leaving them out of this one saves CI minutes of sanitizer compiles.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DRUNPOOL_SANITIZE=ON -DCMAKE_UNITY_BUILD=ON -DRUNPOOL_BENCH=OFF >/dev/null
cmake --build "$build" -j "$(nproc)"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$build"
ctest --output-on-failure --timeout 600 -j 2 "$@"

# The parsers' libFuzzer targets, a few seconds each (scripts/fuzz.sh; RUNPOOL_FUZZ_SECONDS=0 skips).
cd "$OLDPWD"
if [ "${RUNPOOL_FUZZ_SECONDS:-6}" != 0 ]; then scripts/fuzz.sh "${RUNPOOL_FUZZ_SECONDS:-6}"; fi
