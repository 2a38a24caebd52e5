#!/usr/bin/env bash
# GPU machine, one call: real NCCL hangs inspected with `nccl-kernels` under cuda-gdb
# (issue 6). For each case: start both ranks, wait for the hang, attach cuda-gdb to the
# ranks named, run nccl-kernels (text, --json, --record replay bundle) and nccl-state.
# Run from the repo root with $OUT set, carrying .device-carry/ (nccl_hang_scenarios,
# lib/{libncclscope.so,libdw.so.1,libelf.so.1}). ONE_GPU=1: both ranks on GPU 0 with
# different NCCL_HOSTIDs (NET transport); default: one rank per GPU (NVLink P2P).
set -uo pipefail
: "${OUT:?}"
REPO=$(pwd); CARRY=$REPO/.device-carry; BIN=$CARRY/nccl_hang_scenarios
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=WARN
RESULTS=$OUT/kernels; mkdir -p "$RESULTS"
log() { echo "[kernels $(date +%T) ${SECONDS}s] $*"; }
{ cuda-gdb --version | head -2; nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv; } > "$RESULTS/machine.txt" 2>&1

inspect() {  # NAME RANK PID
  local name=$1 rank=$2 pid=$3 base=$RESULTS/$1-rank$2
  NCCLSCOPE_LIB=$CARRY/lib/libncclscope.so LD_LIBRARY_PATH=$CARRY/lib \
  timeout 180 cuda-gdb -nx -batch -p "$pid" \
    -ex "source $REPO/gdbext/ncclscope-gdb.py" \
    -ex 'echo (gdb) info cuda kernels\n' -ex 'info cuda kernels' \
    -ex 'python import time; t0 = time.time()' \
    -ex 'echo (gdb) nccl-kernels\n' -ex 'nccl-kernels' \
    -ex 'python print("[nccl-kernels took %.2f s]" % (time.time() - t0))' \
    -ex 'echo (gdb) cuda kernel block thread\n' -ex 'cuda kernel block thread' \
    -ex "pipe nccl-kernels --json | cat > $base.kernels.json" \
    -ex "nccl-kernels --record $base.replay.json" \
    -ex 'echo (gdb) nccl-state\n' -ex 'nccl-state' \
    -ex "pipe nccl-state --json | cat > $base.state.json" \
    -ex 'echo (gdb) nccl-ring\n' -ex 'nccl-ring' \
    > "$base.cuda-gdb.txt" 2>&1
  log "$name rank $rank: cuda-gdb exit $?; $(grep -c . "$base.cuda-gdb.txt") lines"
}

run_case() {  # NAME MODE PROTO "RANKS TO INSPECT"
  local name=$1 mode=$2 proto=$3 ranks=$4 W=/tmp/kernels-$1
  rm -rf "$W"; mkdir -p "$W"; local pids=()
  for rank in 0 1; do
    local dev=$rank hostid=""
    if [ "${ONE_GPU:-0}" = 1 ]; then dev=0; hostid=nsc-kernels-host-$rank; fi
    env ${proto:+NCCL_PROTO=$proto} ${hostid:+NCCL_HOSTID=$hostid} "$BIN" --rank $rank --nranks 2 \
      --id-file "$W/id" --mode "$mode" --device $dev > "$W/rank$rank.log" 2>&1 &
    pids+=($!)
  done
  local deadline=$((SECONDS + 40))
  while [ $SECONDS -lt $deadline ]; do
    [ "$(cat "$W"/rank*.log | grep -c HANG_POINT_REACHED)" -ge 2 ] && break; sleep 0.5
  done
  sleep 2
  log "$name: $(grep -h 'HANG_POINT_REACHED\|GROUND_TRUTH' "$W"/rank*.log | tr '\n' ' ' | cut -c1-400)"
  for rank in $ranks; do inspect "$name" "$rank" "${pids[$rank]}"; done
  for rank in 0 1; do cp "$W/rank$rank.log" "$RESULTS/$name-rank$rank.log"; done
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null; done; wait 2>/dev/null
}

# CASES picks a subset (default: all), e.g. CASES="p2p-cycle-net".
wanted() { [ -z "${CASES:-}" ] || [[ " $CASES " == *" $1 "* ]]; }
wanted skip-collective && run_case skip-collective skip-collective "" "0 1"
wanted skip-collective-simple && run_case skip-collective-simple skip-collective Simple "0"
wanted skip-collective-ll128 && run_case skip-collective-ll128 skip-collective LL128 "0"
wanted mismatched-collective && run_case mismatched-collective mismatched-collective "" "0 1"
wanted skip-collective-net && ONE_GPU=1 run_case skip-collective-net skip-collective "" "0"
# Point-to-point: hangs on the socket NET transport (completes on NVLink, docs/corpus.md).
wanted p2p-cycle-net && ONE_GPU=1 run_case p2p-cycle-net p2p-cycle "" "0 1"
for f in "$RESULTS"/*-rank0.cuda-gdb.txt; do echo "===== $f"; sed -n '/^(gdb) nccl-kernels/,/^\[nccl-kernels took/p' "$f" | head -20; done
tar -C "$OUT" -cJf "$OUT/kernels.tar.xz" kernels && rm -rf "$RESULTS"
ls -l "$OUT"; log done
