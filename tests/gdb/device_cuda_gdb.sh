#!/usr/bin/env bash
# cuda-gdb transcript on a real hung 2-rank NCCL job (GPU machine, issue 4 item 6).
# Run there from the repository root with $OUT set by the device tool:
#
#   tests/gdb/device_cuda_gdb.sh [MODE]        (default MODE: skip-collective)
#
# Carried from the build machine (see docs/gdb.md, "On the GPU machine"):
#   .device-carry/nccl_hang_scenarios  the scenario binary (tests/scenarios/*.cu)
#   build-gdbext/devlib/               libncclscope.so (debug stripped), libdw.so.1, libelf.so.1
# Starts rank 0 on GPU 0 and rank 1 on GPU 1, waits for HANG_POINT_REACHED, attaches
# cuda-gdb to each rank in turn (the ncclscope commands, then `info cuda kernels`),
# kills both ranks and writes the transcripts to $OUT.
set -uo pipefail
: "${OUT:?OUT must name the folder whose files come back}"
MODE=${1:-skip-collective}
REPO=$(pwd)
BIN=${BIN:-$REPO/.device-carry/nccl_hang_scenarios}
DEVLIB=${DEVLIB:-$REPO/build-gdbext/devlib}
WORK=${WORK:-/tmp/nsc-cuda-gdb}
HANG_TIMEOUT_S=${HANG_TIMEOUT_S:-60}
rm -rf "$WORK"; mkdir -p "$WORK"
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=${NCCL_DEBUG:-WARN}
log() { echo "[cuda-gdb $(date +%T)] $*"; }

{ cuda-gdb --version | head -2; nvidia-smi -L; } > "$OUT/machine.txt" 2>&1
pids=()
for rank in 0 1; do
  "$BIN" --rank $rank --nranks 2 --id-file "$WORK/nccl.id" --mode "$MODE" --device $rank \
    > "$WORK/rank$rank.log" 2>&1 &
  pids+=($!)
done
cleanup() { for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done; }
trap cleanup EXIT

deadline=$((SECONDS + HANG_TIMEOUT_S))
while [ $SECONDS -lt $deadline ]; do
  n=$(cat "$WORK"/rank*.log 2>/dev/null | grep -c HANG_POINT_REACHED)
  [ "$n" -ge 2 ] && break
  sleep 0.5
done
log "hang points: $(grep -h HANG_POINT_REACHED "$WORK"/rank*.log | tr '\n' ' ')"
sleep 2  # let the waiting rank's kernel settle

for rank in 0 1; do
  pid=${pids[$rank]}
  log "attaching cuda-gdb to rank $rank (pid $pid)"
  start=$SECONDS
  NCCLSCOPE_LIB=$DEVLIB/libncclscope.so LD_LIBRARY_PATH=$DEVLIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} \
  timeout 200 cuda-gdb -nx -batch -p "$pid" \
    -ex 'python import sys; print("python", sys.version.split()[0])' \
    -ex "source $REPO/gdbext/ncclscope-gdb.py" \
    -ex 'python print("connection", gdb.selected_inferior().connection.type)' \
    -ex 'echo (gdb) cuda kernel block thread\n' -ex 'cuda kernel block thread' \
    -ex 'python import time; t0 = time.time()' \
    -ex 'echo (gdb) nccl-state\n' -ex 'nccl-state' \
    -ex 'python print("[nccl-state took %.2f s, memory %s]" % (time.time() - t0, gdb.parameter("ncclscope memory")))' \
    -ex 'echo (gdb) nccl-comm #0\n' -ex 'nccl-comm #0' \
    -ex 'echo (gdb) nccl-ring\n' -ex 'nccl-ring' \
    -ex 'echo (gdb) nccl-proxy\n' -ex 'nccl-proxy' \
    -ex 'echo (gdb) nccl-threads --frames 4\n' -ex 'nccl-threads --frames 4' \
    -ex 'echo (gdb) cuda kernel block thread\n' -ex 'cuda kernel block thread' \
    -ex 'echo (gdb) p $nccl_comm(0)->rank\n' -ex 'p $nccl_comm(0)->rank' \
    -ex 'echo (gdb) thread 1\n' -ex 'thread 1' \
    -ex 'echo (gdb) p $nccl_comm(0)->rank\n' -ex 'p $nccl_comm(0)->rank' \
    -ex 'echo (gdb) p $nccl_comm(0)->seqNumber\n' -ex 'p $nccl_comm(0)->seqNumber' \
    -ex 'echo (gdb) info cuda kernels\n' -ex 'info cuda kernels' \
    -ex 'echo (gdb) nccl-kernels\n' -ex 'nccl-kernels' \
    -ex 'echo (gdb) nccl-kernels --json\n' -ex 'nccl-kernels --json' \
    -ex 'echo (gdb) set ncclscope memory library\n' -ex 'set ncclscope memory library' \
    -ex 'python t0 = time.time()' \
    -ex 'echo (gdb) nccl-state\n' -ex 'nccl-state' \
    -ex 'python print("[nccl-state took %.2f s, memory %s]" % (time.time() - t0, gdb.parameter("ncclscope memory")))' \
    -ex 'set ncclscope memory auto' \
    -ex "pipe nccl-state --json | cat > $OUT/rank$rank.state.json" \
    > "$OUT/rank$rank.cuda-gdb.txt" 2>&1
  log "rank $rank: cuda-gdb exit $? after $((SECONDS - start)) s"
done
cp "$WORK"/rank*.log "$OUT/" 2>/dev/null
for rank in 0 1; do
  echo "===== rank $rank"; grep -v '^\[New Thread\|^\[Thread .* exited\]' "$OUT/rank$rank.cuda-gdb.txt" | head -120
done
