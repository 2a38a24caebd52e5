#!/usr/bin/env bash
# GPU machine (2 GPUs), one call: two corpus scenarios re-run with the flight recorder loaded
# (no code change: CUDA_INJECTION64_PATH + NCCL_PROFILER_PLUGIN), then `ncclscope triage` on
# both ranks live and on their cores (kill -ABRT). mismatched-count is `no-hang` without the
# recorder (it completes silently); with it, triage should name the count mismatch.
# cross-stream should keep its missing-collective verdict and gain the stream chain.
#   run: bash tests/cli/recorder_triage_device.sh   (carry: build-rec7/device)
# build-rec7/device holds ncclscope (stripped), nccl_hang_scenarios (runpath to the DWARF
# libnccl there) and lib/{libncclscope-recorder.so,libdw.so.1,libelf.so.1}.
set -uo pipefail
: "${OUT:?}"
CARRY=${CARRY:-$(pwd)/build-rec7/device}
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=WARN
nsc() { LD_LIBRARY_PATH=$CARRY/lib "$CARRY/ncclscope" "$@"; }
timed() {  # timed COMMAND... : runs it, then prints its exit code and wall time
  local start end rc
  start=$(date +%s.%N); "$@"; rc=$?; end=$(date +%s.%N)
  echo "exit $rc, wall $(echo "$end - $start" | bc 2>/dev/null || python3 -c "print($end - $start)") s"
}
RECORDER=$CARRY/lib/libncclscope-recorder.so
ulimit -c unlimited
echo '/tmp/rt-core.%p' > /proc/sys/kernel/core_pattern
for mode in mismatched-count cross-stream; do
  work=/tmp/rt-$mode
  rm -rf "$work"; mkdir -p "$work"
  pids=()
  for rank in 0 1; do
    CUDA_INJECTION64_PATH=$RECORDER NCCL_PROFILER_PLUGIN=$RECORDER \
      "$CARRY/nccl_hang_scenarios" --rank $rank --nranks 2 --id-file "$work/id" --mode $mode \
      --device $rank > "$work/rank$rank.log" 2>&1 &
    pids+=($!)
  done
  for _ in $(seq 120); do
    [ "$(cat "$work"/rank*.log | grep -cE 'HANG_POINT_REACHED|COLLECTIVE_COMPLETED')" -ge 2 ] && break
    sleep 0.5
  done
  sleep 2
  {
    echo "== $mode with the recorder: pids ${pids[*]}"; cat "$work"/rank*.log
    echo "== ncclscope triage --pid ${pids[0]} --pid ${pids[1]}"
    timed nsc triage --pid "${pids[0]}" --pid "${pids[1]}"
  } > "$OUT/$mode.live.txt" 2>&1
  nsc triage --pid "${pids[0]}" --pid "${pids[1]}" --json > "$OUT/$mode.live.json" 2>&1
  kill -ABRT "${pids[@]}"
  wait "${pids[@]}" 2>/dev/null
  for _ in $(seq 60); do [ -s "/tmp/rt-core.${pids[0]}" ] && [ -s "/tmp/rt-core.${pids[1]}" ] && break; sleep 1; done
  sleep 3
  {
    ls -la /tmp/rt-core.*
    echo "== ncclscope triage (cores)"
    timed nsc triage "/tmp/rt-core.${pids[0]}" "/tmp/rt-core.${pids[1]}"
  } > "$OUT/$mode.core.txt" 2>&1
  nsc triage "/tmp/rt-core.${pids[0]}" "/tmp/rt-core.${pids[1]}" --json > "$OUT/$mode.core.json" 2>&1
  rm -f /tmp/rt-core.*
  head -c 3000 "$OUT/$mode.live.txt"; echo; head -c 1500 "$OUT/$mode.core.txt"; echo
done
