#!/usr/bin/env bash
# One GPU-machine call (2 GPUs) for the flight recorder (issue 7 items 5 and 6):
#  1. corpus scenarios re-run with the recorder loaded through the official hooks
#     (CUDA_INJECTION64_PATH + NCCL_PROFILER_PLUGIN, no code change), cores captured by
#     scripts/device-capture-corpus.sh (never a debugger) and sliced there by ncclscope;
#  2. the recorder's cost on a 2-rank PyTorch DDP loop (bench/recorder_overhead.sh gpu),
#     small and medium model, three interleaved configurations.
# Carries .device-carry/{nccl_hang_scenarios,ncclscope,lib/{libncclscope-recorder.so,libdw.so.1,libelf.so.1}}.
set -uo pipefail
: "${OUT:?}"
REPO=$(pwd); CARRY=$REPO/.device-carry
log() { echo "[recorder-corpus $(date +%T) ${SECONDS}s] $*"; }
cat > "$CARRY/slicer" <<SH
#!/bin/sh
LD_LIBRARY_PATH=$CARRY/lib exec $CARRY/ncclscope "\$@"
SH
chmod +x "$CARRY/slicer" "$CARRY/ncclscope"
RECORDER=$CARRY/lib/libncclscope-recorder.so

log "captures with the recorder loaded"
mkdir -p "$OUT/capture"
CUDA_INJECTION64_PATH=$RECORDER NCCL_PROFILER_PLUGIN=$RECORDER \
OUT=$OUT/capture TWO_GPUS=1 SLICER=$CARRY/slicer CAPTURE_DEADLINE_S=${CAPTURE_DEADLINE_S:-150} \
  HANG_TIMEOUT_S=40 MEASURE_XZ=0 timeout 240 bash scripts/device-capture-corpus.sh \
  ${SCENARIOS:-mismatched-count cross-stream skip-collective}
tar -C "$OUT" -cf "$OUT/recorder-capture.tar" capture && rm -rf "$OUT/capture"
ls -l "$OUT"

log "overhead, small model"
MODEL=small STEPS=${SMALL_STEPS:-400} RUNS=${RUNS:-3} timeout 170 bash bench/recorder_overhead.sh gpu "$RECORDER" \
  > "$OUT/recorder-overhead-small.txt" 2>&1
tail -3 "$OUT/recorder-overhead-small.txt"
log "overhead, medium model"
MODEL=medium STEPS=${MEDIUM_STEPS:-120} RUNS=${RUNS:-3} timeout 170 bash bench/recorder_overhead.sh gpu "$RECORDER" \
  > "$OUT/recorder-overhead-medium.txt" 2>&1
tail -3 "$OUT/recorder-overhead-medium.txt"
log done
