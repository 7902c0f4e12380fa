#!/usr/bin/env bash
# The test command: set up, build with AddressSanitizer + UndefinedBehaviorSanitizer, run every
# ctest tier (unit, integration, e2e, fuzz). Extra arguments go to ctest, e.g. `scripts/test.sh -L unit`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh

build=${RUNPOOL_TEST_BUILD_DIR:-build-asan}
# A unity build (README.md): a target's sources compiled a few at a time, half the time.
# The benchmarks are not tests: scripts/bench.sh builds them in a build of their own
# (RelWithDebInfo), and leaving them out of this one saves CI minutes of sanitizer compiles.
# The packaging checks' Debian roots (debootstrap: mostly download) are made beside the build.
scripts/setup.sh --test-roots &
roots=$!
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Debug -DRUNPOOL_SANITIZE=ON -DCMAKE_UNITY_BUILD=ON -DRUNPOOL_BENCH=OFF >/dev/null
cmake --build "$build" -j "$(nproc)"
wait "$roots" || { echo "test: scripts/setup.sh --test-roots failed" >&2; exit 1; }

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
cd "$build"
# Every tier, the parsers' libFuzzer targets included (ctest fuzz.parsers: scripts/fuzz.sh for
# RUNPOOL_FUZZ_SECONDS, default 6, per target; 0 skips).
ctest --output-on-failure --timeout 600 -j 2 "$@"
