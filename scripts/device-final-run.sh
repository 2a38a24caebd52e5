#!/usr/bin/env bash
# One GPU-machine call (2 GPUs): real hangs captured with one rank per GPU and sliced
# there by ncclscope itself, the machine's system libraries (so host stacks in its cores
# can be symbolized elsewhere), and a cuda-gdb transcript of the extension on a live hang.
# Run from the repo root with $OUT set, carrying .device-carry/ which holds:
#   nccl_hang_scenarios, ncclscope (the CLI), lib/{libncclscope.so,libdw.so.1,libelf.so.1}
set -uo pipefail
: "${OUT:?}"
REPO=$(pwd)
CARRY=$REPO/.device-carry
log() { echo "[final $(date +%T) ${SECONDS}s] $*"; }
cat > "$CARRY/slicer" <<SH
#!/bin/sh
LD_LIBRARY_PATH=$CARRY/lib exec $CARRY/ncclscope "\$@"
SH
chmod +x "$CARRY/slicer" "$CARRY/ncclscope"
"$CARRY/slicer" --version || log "WARNING: carried ncclscope does not run"

log "captures"
mkdir -p "$OUT/capture"
OUT=$OUT/capture TWO_GPUS=1 SLICER=$CARRY/slicer CAPTURE_DEADLINE_S=170 HANG_TIMEOUT_S=40 MEASURE_XZ=0 \
  timeout 260 bash scripts/device-capture-corpus.sh \
  skip-collective mismatched-collective torch-allreduce p2p-cycle split-comm cross-stream
tar -C "$OUT" -cf "$OUT/capture.tar" capture && rm -rf "$OUT/capture"

log "system libraries"
libs=()
for lib in libc.so.6 libm.so.6 libstdc++.so.6 libgcc_s.so.1 libpthread.so.0 libdl.so.2 librt.so.1; do
  path=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')
  [ -n "$path" ] && libs+=("$path")
done
libs+=(/lib64/ld-linux-x86-64.so.2)
tar -chJf "$OUT/devlibs.tar.xz" "${libs[@]}" 2>/dev/null
ls -l "$OUT/devlibs.tar.xz"

log "cuda-gdb transcript"
mkdir -p "$OUT/cudagdb"
OUT=$OUT/cudagdb BIN=$CARRY/nccl_hang_scenarios DEVLIB=$CARRY/lib HANG_TIMEOUT_S=40 \
  timeout 200 bash tests/gdb/device_cuda_gdb.sh skip-collective > "$OUT/cudagdb/summary.txt" 2>&1
tar -C "$OUT" -cJf "$OUT/cudagdb.tar.xz" cudagdb && rm -rf "$OUT/cudagdb"
log "done"; ls -l "$OUT"
