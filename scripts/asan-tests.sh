#!/usr/bin/env bash
# Builds everything with ASan+UBSan (-DNCCLSCOPE_SANITIZE=ON) in build-asan and
# runs the whole CTest suite there.
#
#   scripts/asan-tests.sh [ctest options...]     e.g. -R 'native\.' for the native subset
#
# Any sanitizer report fails the test it happens in (UBSan halts, ASan aborts;
# LeakSanitizer is on). gdb runs the extension's ctypes library with the ASan
# runtime preloaded (gdb itself is not instrumented). Environment:
#   NCCLSCOPE_ASAN_BUILD   build directory (default: <repo>/build-asan)
#   NCCLSCOPE_JOBS         build parallelism (default 2)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=${NCCLSCOPE_ASAN_BUILD:-$src/build-asan}
jobs=${NCCLSCOPE_JOBS:-2}

cmake -S "$src" -B "$build" -G Ninja -DNCCLSCOPE_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo > /dev/null
cmake --build "$build" -j"$jobs"

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# For processes that load the instrumented libncclscope.so without being
# instrumented themselves (gdb + ctypes): the runtime must come first.
asan_runtime=$(${CXX:-c++} -print-file-name=libasan.so)
export NCCLSCOPE_ASAN_PRELOAD=$asan_runtime
start=$(date +%s)
status=0
ctest --test-dir "$build" --output-on-failure --timeout 900 "$@" || status=$?
echo "asan-tests: ctest exit $status after $(( $(date +%s) - start )) s"
exit $status
