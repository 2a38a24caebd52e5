#!/usr/bin/env bash
# Builds everything with ASan+UBSan (-DNCCLSCOPE_SANITIZE=ON) and runs the whole
# CTest suite there, safely:
#
#   scripts/asan-tests.sh [ctest options...]     e.g. -R 'native\.' for the native subset
#
# Any sanitizer report fails the test it happens in (UBSan halts, ASan aborts;
# LeakSanitizer is on). Environment:
#   NCCLSCOPE_ASAN_BUILD   build directory (default: <repo>/build-asan; run-tests.sh uses the
#                          clang fuzz build, sanitized too)
#   NCCLSCOPE_ASAN_EXCLUDE a regex of tests to leave out
#   NCCLSCOPE_JOBS         build parallelism (default 2)
#   NCCLSCOPE_PLAIN_CORE   a plain build's native/libncclscope_core.a: the fixtures link it
#                          instead of a plain copy of the core compiled here
#   NCCLSCOPE_TEST_JOBS    tests run at once (default 2)
#   NCCLSCOPE_MIN_FREE_GB  free space on the build's file system below which the
#                          run is stopped (default 2)
#
# What differs from the plain suite, and why:
# * The fixtures (the programs the tests debug) are built plain, against a plain
#   copy of the core (tests/CMakeLists.txt): gdb's gcore writes every readable
#   mapping, and an ASan process maps a 14 TiB read-write shadow (gdb ignores its
#   MADV_DONTDUMP). As guards against a runaway core all the same, every test
#   runs with `ulimit -f` 4 GiB, and a watcher stops the run when free space
#   drops under NCCLSCOPE_MIN_FREE_GB.
# * gdb is not instrumented; the instrumented libncclscope.so it loads needs the
#   ASan runtime loaded first. The gdb.* tests run gdb through a wrapper
#   ($build/asan-gdb, NCCLSCOPE_TEST_GDB) that preloads it, plus a stub
#   swift_demangle (tests/support/asan_swift_demangle_stub.c says why gdb
#   otherwise hangs before main) and libstdc++ (ASan looks up the real
#   __cxa_throw when it starts); leak checks off inside gdb (gdb's and Python's
#   allocations are not ours; the native and CLI tests check ours). The wrapper
#   unsets LD_PRELOAD for the programs gdb starts. gdb.unit_test loads the
#   library into python3 through ctypes, preloaded the same way.
# * The recorder library stays uninstrumented (root CMakeLists.txt says why).
set -uo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(realpath -m "${NCCLSCOPE_ASAN_BUILD:-$src/build-asan}")
jobs=${NCCLSCOPE_JOBS:-2}
min_free_gb=${NCCLSCOPE_MIN_FREE_GB:-2}

# NCCLSCOPE_PLAIN_CORE: a plain build's native/libncclscope_core.a for the fixtures (else compiled here).
plain_core=()
[ -n "${NCCLSCOPE_PLAIN_CORE:-}" ] && [ -f "$NCCLSCOPE_PLAIN_CORE" ] &&
  plain_core=(-DNCCLSCOPE_PLAIN_CORE_LIBRARY="$(realpath "$NCCLSCOPE_PLAIN_CORE")")
cmake -S "$src" -B "$build" -G Ninja -DNCCLSCOPE_SANITIZE=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo "${plain_core[@]}" > /dev/null
# Keep going past a target that does not build: its tests show as "Not Run".
cmake --build "$build" -j"$jobs" -- -k 0 || echo "asan-tests: some targets failed to build; running the rest"

# Load the instrumented library into an uninstrumented python3 (run separately, preloaded).
preloaded_tests=(gdb.unit_test)
join() { local IFS='|'; echo "^($*)\$"; }

# The ASan runtime the instrumented library expects (gcc: libasan.so; clang: its shared rt).
if grep -q '^CMAKE_CXX_COMPILER:.*clang' "$build/CMakeCache.txt"; then
  runtime=$(clang -print-file-name=libclang_rt.asan-x86_64.so)
else
  runtime=$(c++ -print-file-name=libasan.so)
fi
runtime=$(readlink -f "$runtime")
stub=$build/libasan_swift_demangle_stub.so
cc -shared -fPIC -O2 -o "$stub" "$src/tests/support/asan_swift_demangle_stub.c" || exit 1
preload=$runtime:$stub:$(c++ -print-file-name=libstdc++.so.6)
preload_options="detect_leaks=0:alloc_dealloc_mismatch=0:new_delete_type_mismatch=0:detect_odr_violation=0"
cat > "$build/asan-gdb" <<WRAPPER
#!/bin/sh
# gdb with the sanitizer runtime preloaded, for an instrumented libncclscope.so
# (written by scripts/asan-tests.sh; programs gdb starts get no preload).
LD_PRELOAD=$preload ASAN_OPTIONS=\${ASAN_OPTIONS:-}:$preload_options \\
  exec gdb -iex 'unset environment LD_PRELOAD' "\$@"
WRAPPER
chmod +x "$build/asan-gdb"
export NCCLSCOPE_TEST_GDB=$build/asan-gdb

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
ulimit -f $((4 << 20))  # KiB: no file over 4 GiB (a runaway core)

# Stops the run (ctest and everything under it) when the disk runs low.
watch_disk() {
  local target=$1
  while kill -0 "$target" 2>/dev/null; do
    local free_gb
    free_gb=$(df -P -BG "$build" | awk 'NR==2 {sub("G", "", $4); print $4}')
    if [ "${free_gb:-0}" -lt "$min_free_gb" ]; then
      echo "asan-tests: only ${free_gb} GB free on $build: stopping the run" >&2
      kill -TERM -- "-$target" 2>/dev/null || kill -TERM "$target"
      return
    fi
    sleep 5
  done
}

# The kill-timing loop of readonly_live_test: a shorter range here (each run is ~10x slower).
export NCCLSCOPE_KILL_DELAYS=${NCCLSCOPE_KILL_DELAYS:-0 30} NCCLSCOPE_KILL_STACK_DELAYS=${NCCLSCOPE_KILL_STACK_DELAYS:-10}
run_ctest() {  # run_ctest LOG ctest-args...: in its own process group, watched
  local log=$1; shift
  set -m
  ctest --test-dir "$build" --output-on-failure --timeout 900 -j "${NCCLSCOPE_TEST_JOBS:-2}" "$@" > "$log" 2>&1 &
  local pid=$!
  set +m
  watch_disk "$pid" &
  local watcher=$!
  wait "$pid"; local rc=$?
  kill "$watcher" 2>/dev/null; wait "$watcher" 2>/dev/null
  cat "$log"
  return $rc
}

start=$(date +%s)
logs=$(mktemp -d)
status=0
# NCCLSCOPE_ASAN_EXCLUDE: a regex of more tests left out (run-tests.sh: the fuzz.* runs when skipped).
excluded=("${preloaded_tests[@]}"); [ -n "${NCCLSCOPE_ASAN_EXCLUDE:-}" ] && excluded+=("$NCCLSCOPE_ASAN_EXCLUDE")
run_ctest "$logs/main.log" -E "$(join "${excluded[@]}")" "$@" || status=$?
LD_PRELOAD=$preload ASAN_OPTIONS=$ASAN_OPTIONS:$preload_options \
  run_ctest "$logs/preloaded.log" "$@" -R "$(join "${preloaded_tests[@]}")" || status=$?  # always: the last -R wins

# Summary: ctest's own counts, plus what this script left out and why.
count() { grep -hE "$1" "$logs"/*.log | wc -l; }
passed=$(count '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed')
failed=$(count '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*(Failed|Exception|Timeout|Not Run)')
skipped=$(count '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*Skipped')
echo "asan-tests: ran $((passed + failed + skipped)): passed $passed, failed $failed, skipped by the test (exit 77) $skipped"
grep -hE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*Skipped' "$logs"/*.log | sed 's/^/  skipped: /'
grep -hE '^ *[0-9]+/[0-9]+ Test +#[0-9]+: .*(Failed|Exception|Timeout|Not Run)' "$logs"/*.log | sed 's/^/  failed: /'
echo "asan-tests: ctest exit $status after $(( $(date +%s) - start )) s; $(df -h "$build" | awk 'NR==2 {print $4}') free"
rm -rf "$logs"
exit $status
