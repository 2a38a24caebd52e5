#!/usr/bin/env bash
# Builds everything with ASan+UBSan (-DNCCLSCOPE_SANITIZE=ON) in build-asan and
# runs the whole CTest suite there.
#
#   scripts/asan-tests.sh [ctest options...]     e.g. -R 'native\.' for the native subset
#
# Any sanitizer report fails the test it happens in (UBSan halts, ASan aborts;
# LeakSanitizer is on). Environment:
#   NCCLSCOPE_ASAN_BUILD   build directory (default: <repo>/build-asan; the clang
#                          fuzz build, build-fuzz, is sanitized too and can serve)
#   NCCLSCOPE_JOBS         build parallelism (default 2)
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${NCCLSCOPE_ASAN_BUILD:-$src/build-asan}
jobs=${NCCLSCOPE_JOBS:-2}

cmake -S "$src" -B "$build" -G Ninja -DNCCLSCOPE_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
# Keep going past a target that does not build: its tests show as "Not Run".
cmake --build "$build" -j"$jobs" -- -k 0 || echo "asan-tests: some targets failed to build; running the rest"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Note: gdb itself is not instrumented, so the gdb tests that load the
# instrumented libncclscope.so with ctypes need the ASan runtime preloaded
# into gdb (LD_PRELOAD=$(c++ -print-file-name=libasan.so)); they fail otherwise.
start=$(date +%s)
status=0
ctest --test-dir "$build" --output-on-failure --timeout 900 "$@" || status=$?
echo "asan-tests: ctest exit $status after $(( $(date +%s) - start )) s"
exit $status
