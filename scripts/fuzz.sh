#!/usr/bin/env bash
# Runs one libFuzzer target for a set time, at nice 19, one process.
#
#   scripts/fuzz.sh TARGET SECONDS [libFuzzer options...]
#   TARGET: core_reader | layout_profile | comm_decoders | snapshot_reader | recorder_decoder
#
# Needs the fuzz build (clang): 
#   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DNCCLSCOPE_FUZZ=ON -DNCCLSCOPE_SANITIZE=ON
#   cmake --build build-fuzz --target fuzz_all -j2
# The committed seeds (tests/fuzz/corpus/TARGET) are read, never written; new
# inputs go to BUILD/fuzz/corpus-TARGET, crashes to BUILD/fuzz/artifacts/TARGET/,
# the log to BUILD/fuzz/logs/. Exit 77 when the fuzz build is missing (CTest: skip).
# NCCLSCOPE_FUZZ_SHORT=1 (CTest): a throw-away working corpus.
set -uo pipefail
target=${1:?usage: fuzz.sh TARGET SECONDS [libFuzzer options]}
seconds=${2:?usage: fuzz.sh TARGET SECONDS [libFuzzer options]}
shift 2
src=$(cd "$(dirname "$0")/.." && pwd)
build=${NCCLSCOPE_FUZZ_BUILD:-$src/build-fuzz}
binary=$build/fuzz/fuzz_$target
if [ ! -x "$binary" ]; then
  echo "fuzz.sh: $binary not built (see the header of this script); skipping"
  exit 77
fi
seeds=$src/tests/fuzz/corpus/$target
# -max_len: the largest seed plus ~20%. Larger inputs only make every execution
# slower (libFuzzer grows units toward max_len), they reach no new code.
case $target in
  core_reader) max_len=196608 ;;       # the sliced fixture core seed is 160,432 bytes
  layout_profile) max_len=98304 ;;     # the real 2.28.9 profile is 82,570 bytes
  snapshot_reader) max_len=16384 ;;    # the state --json seeds are under 4 KB
  comm_decoders) max_len=8192 ;;       # repeated to fill the 1 MB comm
  recorder_decoder) max_len=24576 ;;   # the driver's region (4 rings of 64 records) is 20,353 bytes
  fr_dump) max_len=9216 ;;             # PyTorch's own dumps in corefiles/*/truth are 4.8-7.4 KB
  *) echo "fuzz.sh: unknown target $target"; exit 64 ;;
esac
dict=()
[ -f "$src/tests/fuzz/$target.dict" ] && dict=(-dict="$src/tests/fuzz/$target.dict")

if [ "${NCCLSCOPE_FUZZ_SHORT:-0}" = 1 ]; then
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
  corpus=$work/corpus artifacts=$build/fuzz/artifacts/$target/ log=$work/fuzz.log  # reproducers kept
else
  corpus=$build/fuzz/corpus-$target artifacts=$build/fuzz/artifacts/$target/
  mkdir -p "$build/fuzz/logs"
  log=$build/fuzz/logs/$target-$(date -u +%Y%m%dT%H%M%S).log
fi
mkdir -p "$corpus" "$artifacts"

# Leaks, one malloc over 512 MB (a garbage count turned into an allocation) and
# any unit over 1 s of CPU time count as findings. The limit is CPU time
# (NCCLSCOPE_FUZZ_CPU_LIMIT_MS, checked by the targets: fuzz_entry_points.h), not
# libFuzzer's -timeout, which is wall-clock: on a loaded machine a starved fuzzer
# "timed out" on units that take 0.07-0.6 s of CPU (2026-11-30), so -timeout is
# only a backstop for a unit that never ends. malloc_context_size=0: ASan does
# not unwind the stack on every malloc (10-25% of each execution); a report then
# lacks allocation stacks: rerun the reproducer without it to get them.
# (Exported: as bare assignments on a line of their own they never reached the fuzzer.)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0:malloc_context_size=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export NCCLSCOPE_FUZZ_CPU_LIMIT_MS=${NCCLSCOPE_FUZZ_CPU_LIMIT_MS:-1000}
start_ticks=$(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat)  # our children's CPU so far
nice -n 19 "$binary" "$corpus" "$seeds" -max_total_time="$seconds" -max_len=$max_len \
  -timeout=600 -report_slow_units=600 -rss_limit_mb=2048 -malloc_limit_mb=512 -print_final_stats=1 \
  -artifact_prefix="$artifacts" "${dict[@]}" "$@" > "$log" 2>&1
rc=$?
# Summary: the last status line, the execution count, and executions per CPU
# second (on a shared machine the wall-clock exec/s mostly measures the load).
grep -E '^#[0-9]+' "$log" | tail -n 1
grep -E 'stat::number_of_executed_units|stat::peak_rss_mb' "$log"
cpu_ticks=$(( $(awk '{print $14 + $15 + $16 + $17}' /proc/$$/stat) - start_ticks ))
units=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$')
hz=$(getconf CLK_TCK)
if [ -n "$units" ] && [ "$cpu_ticks" -gt 0 ]; then
  echo "cpu: $(( cpu_ticks / hz )) s of CPU, $(( units * hz / cpu_ticks )) executions per CPU second"
fi
if [ $rc != 0 ]; then
  echo "fuzz.sh: $target FAILED (exit $rc); log: $log"
  grep -E -A30 'ERROR: (AddressSanitizer|libFuzzer|LeakSanitizer)|runtime error|deadly signal|Test unit written' "$log" | head -60
fi
exit $rc
