#!/usr/bin/env bash
# One GPU-machine call (2 GPUs) for the flight recorder: a real hang with the recorder
# loaded (no code change: CUDA_INJECTION64_PATH + NCCL_PROFILER_PLUGIN), read live by
# ncclscope (cuda-streams, state, triage), then the recorder's cost on a DDP training loop.
# Carries .device-carry/{nccl_hang_scenarios,ncclscope,lib/{libncclscope-recorder.so,libdw.so.1,libelf.so.1}}.
set -uo pipefail
: "${OUT:?}"
REPO=$(pwd) CARRY=$REPO/.device-carry
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=WARN
nsc() { LD_LIBRARY_PATH=$CARRY/lib "$CARRY/ncclscope" "$@"; }
RECORDER=$CARRY/lib/libncclscope-recorder.so
work=/tmp/recorder-run; rm -rf "$work"; mkdir -p "$work"
pids=()
for rank in 0 1; do
  CUDA_INJECTION64_PATH=$RECORDER NCCL_PROFILER_PLUGIN=$RECORDER \
    "$CARRY/nccl_hang_scenarios" --rank $rank --nranks 2 --id-file "$work/id" --mode cross-stream \
    --device $rank > "$work/rank$rank.log" 2>&1 &
  pids+=($!)
done
for _ in $(seq 80); do [ "$(cat "$work"/rank*.log | grep -c HANG_POINT_REACHED)" -ge 2 ] && break; sleep 0.5; done
sleep 2
{
  echo "== hang with the recorder loaded: ${pids[*]}"; cat "$work"/rank*.log
  for rank in 0 1; do
    echo "== ncclscope cuda-streams --pid ${pids[$rank]} --nccl (rank $rank)"
    nsc cuda-streams --pid "${pids[$rank]}" --nccl; echo "exit $?"
  done
  echo "== ncclscope triage --pid ${pids[0]} --pid ${pids[1]} --freeze"
  nsc triage --pid "${pids[0]}" --pid "${pids[1]}"; echo "exit $?"
} > "$OUT/recorder-hang.txt" 2>&1
nsc state --pid "${pids[0]}" --json > "$OUT/recorder-rank0.state.json" 2>&1
nsc cuda-streams --pid "${pids[0]}" --nccl --json > "$OUT/recorder-rank0.cuda-streams.json" 2>&1
kill -9 "${pids[@]}" 2>/dev/null
tail -40 "$OUT/recorder-hang.txt"
echo "== overhead"
STEPS=${STEPS:-200} RUNS=${RUNS:-2} timeout 200 bash bench/recorder_overhead.sh gpu "$RECORDER" \
  > "$OUT/recorder-overhead.txt" 2>&1
tail -25 "$OUT/recorder-overhead.txt"
