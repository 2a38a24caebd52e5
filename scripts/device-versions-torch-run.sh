#!/usr/bin/env bash
# One GPU-machine call (one H200) for issues 16 and 17, from the repo root with $OUT set:
#
#   bash scripts/device-versions-torch-run.sh
#
# Beside each other, sharing one core_pattern:
# * NCCL 2.30.7, 2.21.5 and 2.26.2 built from their tags (the two older ones patched for CUDA 13 by
#   nccl-cuda13-compat.sh), a skip-collective hang on each, and the two-library process (the
#   venv's 2.28.9 and the 2.30.7 build in one process): scripts/device-nccl-versions.sh, into
#   $OUT/versions/;
# * PyTorch 2.11 hangs with the recorder's timing on (TORCH_NCCL_ENABLE_TIMING=1) and with the
#   recorder off (TORCH_FR_BUFFER_SIZE=0): scripts/device-torch-multigroup.sh, into $OUT/torch/.
# Carries .device-carry/ (ncclscope, lib/, nccl-src/: see device-nccl-versions.sh).
set -uo pipefail
: "${OUT:?OUT must name the folder whose files come back}"
REPO=$(pwd)
log() { echo "[run $(date +%T) ${SECONDS}s] $*"; }
export CORE_DIR=/tmp/run-cores
mkdir -p "$CORE_DIR" "$OUT/versions" "$OUT/torch"
saved=$(cat /proc/sys/kernel/core_pattern)
trap 'echo "$saved" > /proc/sys/kernel/core_pattern 2>/dev/null' EXIT
echo "$CORE_DIR/core.%p" > /proc/sys/kernel/core_pattern

OUT=$OUT/versions TWO_LIBRARIES=2.30.7 SYSTEM_NCCL=/nonexistent BUILD_TIMEOUT_S=${BUILD_TIMEOUT_S:-330} \
  HANG_TIMEOUT_S=45 JOBS=6 bash "$REPO/.device-carry/nccl-src/device-nccl-versions.sh" 2.30.7 2.21.5 2.26.2 \
  > "$REPO/versions.log" 2>&1 &
versions=$!
OUT=$OUT/torch CAPTURE_DEADLINE_S=200 LIVE_CHECK=1 \
  bash "$REPO/scripts/device-torch-multigroup.sh" tpdp-fewer-steps-timing tpdp-fr-off 2>&1 | tail -60
rm -f "$OUT/torch/torch.tar.xz"   # the recorder's layout material: already in native/profiles/torch
log "torch done; waiting for the NCCL versions"
wait "$versions"
tail -40 "$REPO/versions.log"

log "done"; ls -lR "$OUT"
