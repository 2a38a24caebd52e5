#!/usr/bin/env bash
# GPU machine, one call (issue 20 item 1, issue 36 item 1): real NCCL hangs whose buffers hold NaN (injected on
# rank 0, cascaded to every rank by one good AllReduce) or underflowed values, for several
# datatypes, and an fp16 sum that overflows to +Inf. Device buffers: `nccl-numerics` under cuda-gdb on the hung ranks. Pinned host
# buffers (cudaHostAlloc): `ncclscope numerics --pid`, `triage --pid`, then cores (kill -ABRT,
# coredump_filter 0x33), `numerics --core`, `slice`. Every answer is compared with the
# program's own counts (tests/scenarios/check_numerics.py).
# Run from the repo root with $OUT set, carrying .device-carry/ (bin/ncclscope,
# lib/{libncclscope.so,libdw.so.1,libelf.so.1}, nccl_numerics_hang).
set -uo pipefail
: "${OUT:?}"
REPO=$(pwd); CARRY=$REPO/.device-carry; BIN=$CARRY/nccl_numerics_hang; NSC=$CARRY/ncclscope-run
cat > "$NSC" <<SH
#!/bin/sh
LD_LIBRARY_PATH=$CARRY/lib exec $CARRY/bin/ncclscope "\$@"
SH
chmod +x "$NSC" "$CARRY/bin/ncclscope" "$BIN"
NCCL_DIR=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=WARN NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1
R=$OUT/numerics; mkdir -p "$R" /tmp/cores
echo '/tmp/cores/core.%p' > /proc/sys/kernel/core_pattern
log() { echo "[numerics $(date +%T) ${SECONDS}s] $*"; }
{ cuda-gdb --version | head -2; nvidia-smi -L; ls -l $NCCL_DIR/libnccl.so.2; } > "$R/machine.txt" 2>&1

PIDS=()
start_case() {  # NAME ARGS...
  local name=$1; shift; local W=/tmp/numerics-$name
  rm -rf "$W"; mkdir -p "$W"; PIDS=()
  for ((rank = 0; rank < ${NRANKS:-2}; rank++)); do
    NCCL_HOSTID=nsc-numerics-$rank LD_LIBRARY_PATH=$NCCL_DIR bash -c \
      'ulimit -c unlimited; echo 0x33 > /proc/self/coredump_filter; exec "$@"' _ \
      "$BIN" --rank $rank --nranks "${NRANKS:-2}" --id-file "$W/id" "$@" > "$W/rank$rank.log" 2>&1 &
    PIDS+=($!)
  done
  local deadline=$((SECONDS + 60))
  while [ $SECONDS -lt $deadline ]; do
    [ "$(cat "$W"/rank*.log | grep -c HANG_POINT_REACHED)" -ge "${NRANKS:-2}" ] && break; sleep 0.5
  done
  sleep 2
  log "$name: $(grep -h 'HANG_POINT_REACHED\|COMPLETED\|error' "$W"/rank*.log | tr '\n' ' ' | cut -c1-300)"
  for ((rank = 0; rank < ${NRANKS:-2}; rank++)); do cp "$W/rank$rank.log" "$R/$name-rank$rank.log"; done
}

end_case() { for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null; done; wait 2>/dev/null; }

under_cuda_gdb() {  # NAME RANK
  local base=$R/$1-rank$2
  NCCLSCOPE_LIB=$CARRY/lib/libncclscope.so LD_LIBRARY_PATH=$CARRY/lib \
  timeout 240 cuda-gdb -nx -batch -p "${PIDS[$2]}" \
    -ex "source $REPO/gdbext/ncclscope-gdb.py" \
    -ex 'python import time; t0 = time.time()' \
    -ex 'echo (gdb) nccl-numerics\n' -ex 'nccl-numerics' \
    -ex 'python print("[nccl-numerics took %.2f s]" % (time.time() - t0))' \
    -ex "pipe nccl-numerics --json | cat > $base.numerics.json" \
    -ex 'python t0 = time.time()' \
    -ex 'echo (gdb) nccl-numerics --full-read-bytes 1024 --sample-chunks 8 --chunk-bytes 4096\n' \
    -ex 'nccl-numerics --full-read-bytes 1024 --sample-chunks 8 --chunk-bytes 4096' \
    -ex 'python print("[sampled nccl-numerics took %.2f s]" % (time.time() - t0))' \
    -ex 'echo (gdb) nccl-kernels\n' -ex 'nccl-kernels' \
    > "$base.cuda-gdb.txt" 2>&1
  log "$1 rank $2: cuda-gdb exit $?; $(grep -h 'took' "$base.cuda-gdb.txt" | tr '\n' ' ')"
  python3 "$REPO/tests/scenarios/check_numerics.py" "$R/$1-rank$2.log" "$base.numerics.json" > "$base.check.txt" 2>&1
  log "$1 rank $2 check (exit $?): $(tr '\n' ' ' < "$base.check.txt")"
}

host_case() {  # NAME: live numerics + triage, then cores, numerics on cores and slices
  local name=$1 t0
  for rank in 0 1; do
    t0=$EPOCHREALTIME
    "$NSC" numerics --pid "${PIDS[$rank]}" --json > "$R/$name-rank$rank.live.json" 2> "$R/$name-rank$rank.live.err"
    log "$name rank $rank: numerics --pid exit $? in $(awk "BEGIN{print $EPOCHREALTIME - $t0}") s"
    python3 "$REPO/tests/scenarios/check_numerics.py" "$R/$name-rank$rank.log" "$R/$name-rank$rank.live.json" | sed "s/^/  live: /"
  done
  "$NSC" triage --pid "${PIDS[0]}" --pid "${PIDS[1]}" > "$R/$name.triage-live.txt" 2>&1; log "$name triage --pid exit $?"
  [ "${CORES:-1}" = 1 ] || return 0
  for rank in 0 1; do kill -ABRT "${PIDS[$rank]}"; done
  sleep 8
  for rank in 0 1; do
    local core=/tmp/cores/core.${PIDS[$rank]}
    [ -f "$core" ] || { log "$name rank $rank: no core"; continue; }
    "$NSC" numerics --core "$core" --json > "$R/$name-rank$rank.core.json" 2>/dev/null
    python3 "$REPO/tests/scenarios/check_numerics.py" "$R/$name-rank$rank.log" "$R/$name-rank$rank.core.json" | sed "s/^/  core: /"
    "$NSC" slice "$core" -o "$R/$name-rank$rank.core" > /dev/null 2>&1
    "$NSC" numerics --core "$R/$name-rank$rank.core" --json > "$R/$name-rank$rank.slice.json" 2>/dev/null
    python3 "$REPO/tests/scenarios/check_numerics.py" "$R/$name-rank$rank.log" "$R/$name-rank$rank.slice.json" | sed "s/^/  slice: /"
    log "$name rank $rank: core $(stat -c %s "$core") B, slice $(stat -c %s "$R/$name-rank$rank.core") B"
    rm -f "$core"
  done
  "$NSC" triage "$R/$name-rank0.core" "$R/$name-rank1.core" > "$R/$name.triage-cores.txt" 2>&1
  log "$name triage of slices exit $?"; head -12 "$R/$name.triage-cores.txt"
}

# Device buffers, N ranks (issue 36 item 1): cuda-gdb's nccl-numerics on each waiting rank, then
# live triage of every rank joined with those numerics documents.
device_case() {  # NAME RANK...
  local name=$1 rank pids=() docs=(); shift
  for rank in "$@"; do under_cuda_gdb "$name" "$rank"; docs+=("$R/$name-rank$rank.numerics.json"); done
  for rank in "${!PIDS[@]}"; do pids+=(--pid "${PIDS[$rank]}"); done
  "$NSC" triage "${pids[@]}" "${docs[@]}" > "$R/$name.triage-live.txt" 2>&1; log "$name triage --pid + numerics exit $?"
  "$NSC" triage "${pids[@]}" "${docs[@]}" --json > "$R/$name.triage-live.json" 2>/dev/null
  head -6 "$R/$name.triage-live.txt"
}

wanted() { [ -z "${CASES:-}" ] || [[ " $CASES " == *" $1 "* ]]; }
# Issue 36: three ranks, rank 1 injects (NaN) or every rank's values overflow in the sum; rank 2
# skips the collective the others hang in.
if wanted nan-bf16-3ranks-device; then
  NRANKS=3 start_case nan-bf16-3ranks-device --dtype bf16 --mode nan --count 1048576 --nan-count 4096 --inject-rank 1
  device_case nan-bf16-3ranks-device 0 1; end_case
fi
if wanted underflow-e4m3-3ranks-device; then
  NRANKS=3 start_case underflow-e4m3-3ranks-device --dtype e4m3 --mode underflow --count 1048576
  device_case underflow-e4m3-3ranks-device 0 1; end_case
fi
if wanted overflow-f16-3ranks-device; then
  NRANKS=3 start_case overflow-f16-3ranks-device --dtype f16 --mode overflow --count 1048576
  device_case overflow-f16-3ranks-device 0 1; end_case
fi
if wanted nan-bf16-device; then
  start_case nan-bf16-device --dtype bf16 --mode nan --count 1048576 --nan-count 4096
  under_cuda_gdb nan-bf16-device 0; under_cuda_gdb nan-bf16-device 1; end_case
fi
if wanted underflow-e4m3-device; then
  start_case underflow-e4m3-device --dtype e4m3 --mode underflow --count 1048576
  under_cuda_gdb underflow-e4m3-device 0; end_case
fi
if wanted nan-bf16-host; then
  start_case nan-bf16-host --dtype bf16 --mode nan --count 262144 --nan-count 4096 --host-buffers
  host_case nan-bf16-host; end_case
fi
if wanted underflow-bf16-host; then
  start_case underflow-bf16-host --dtype bf16 --mode underflow --count 262144 --host-buffers
  host_case underflow-bf16-host; end_case
fi
for case in "underflow-f16 f16 underflow" "nan-e5m2 e5m2 nan" "underflow-f32 f32 underflow" "nan-e4m3 e4m3 nan" "underflow-e5m2 e5m2 underflow"; do
  set -- $case
  wanted "$1-host" || continue
  start_case "$1-host" --dtype "$2" --mode "$3" --count 262144 --nan-count 1000 --host-buffers
  CORES=0 host_case "$1-host"; end_case
done
cd "$OUT" && tar -cJf numerics.tar.xz numerics && rm -rf numerics
ls -l "$OUT"; log done
