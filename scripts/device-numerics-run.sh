#!/usr/bin/env bash
# GPU machine, one call (issue 20 item 1, issue 36 item 1): real NCCL hangs whose buffers hold NaN (injected on
# rank 0, cascaded to every rank by one good AllReduce) or underflowed values, for several
# datatypes, and an fp16 sum that overflows to +Inf. Device buffers: `nccl-numerics` under cuda-gdb on the hung ranks. Pinned host
# buffers (cudaHostAlloc): `ncclscope numerics --pid`, `triage --pid`, then cores (kill -ABRT,
# coredump_filter 0x33), `numerics --core`, `slice`. Every answer is compared with the
# program's own counts (tests/scenarios/check_numerics.py).
# Run from the repo root with $OUT set, carrying .device-carry/ (bin/ncclscope,
# lib/{libncclscope.so,libdw.so.1,libelf.so.1}, nccl_numerics_hang).
#
#   CASES="overflow-f16-3ranks-device torch-nan-bf16" scripts/device-numerics-run.sh
#
# Cases run in the order CASES names them (default: every case below). torch-nan-bf16 is the
# PyTorch form of issue 36 item 1 (tests/scenarios/torch_numerics_nan.py, 3 ranks on the venv's
# python, TORCH_PYTHON): rank 1's bf16 all_reduce input holds 4,096 NaN, rank 2 skips it; the
# counts torch printed (torch.isnan(t).sum() and the rest) are compared with cuda-gdb's.
#
# Time box: cuda-gdb reads device memory at about 160 KB/s (2026-12-05, H100: 4 MiB in 24.7-26.9 s),
# and the last run's 300 s were spent before the fp16 receive buffer was read. Every device read
# must end by NUMERICS_DEADLINE_S (default 280 s after the start). A rank is read whole when its
# estimated time (bytes / READ_RATE_BPS + 15 s to attach) fits in what is left after a reserve of
# 15 s for each read still to come; else sampled (SAMPLE_CHUNKS chunks of SAMPLE_CHUNK_BYTES of
# each buffer, default 64 x 4 KiB, stated in the document and the check line, which then checks
# consistency, not equality); else not read, and the log says so. PASS/FAIL per rank read lands in
# $OUT/numerics/verdicts.txt and at the end of the output.
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
START_S=$SECONDS; DEADLINE=$((SECONDS + ${NUMERICS_DEADLINE_S:-280})); READ_RATE_BPS=${READ_RATE_BPS:-160000}
TORCH_PYTHON=${TORCH_PYTHON:-/opt/torch/.venv/bin/python}
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
  wait_hang "$name" 60
}

# torch_numerics_nan.py, one process per rank on the one GPU (own NCCL_HOSTID each: socket NET).
start_torch_case() {  # NAME ARGS...
  local name=$1 port=$((29500 + RANDOM % 1000)); shift; local W=/tmp/numerics-$name
  rm -rf "$W"; mkdir -p "$W"; PIDS=()
  for ((rank = 0; rank < ${NRANKS:-3}; rank++)); do
    NCCL_HOSTID=nsc-torch-numerics-$rank RANK=$rank LOCAL_RANK=0 WORLD_SIZE=${NRANKS:-3} MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$port TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 bash -c \
      'ulimit -c unlimited; echo 0x33 > /proc/self/coredump_filter; exec "$@"' _ \
      "$TORCH_PYTHON" "$REPO/tests/scenarios/torch_numerics_nan.py" "$@" > "$W/rank$rank.log" 2>&1 &
    PIDS+=($!)
  done
  wait_hang "$name" 90
}

wait_hang() {  # NAME SECONDS: every rank printed HANG_POINT_REACHED, or the wait ran out
  local name=$1 W=/tmp/numerics-$1 deadline=$((SECONDS + $2))
  while [ $SECONDS -lt $deadline ]; do
    [ "$(cat "$W"/rank*.log | grep -c HANG_POINT_REACHED)" -ge "${NRANKS:-2}" ] && break; sleep 0.5
  done
  sleep 2
  log "$name: $(grep -h 'HANG_POINT_REACHED\|COMPLETED\|error' "$W"/rank*.log | tr '\n' ' ' | cut -c1-300)"
  for ((rank = 0; rank < ${NRANKS:-2}; rank++)); do cp "$W/rank$rank.log" "$R/$name-rank$rank.log"; done
  grep -h '^TORCH_COUNT' "$W"/rank*.log 2>/dev/null | sed "s/^/  $name: /"
}

end_case() { for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null; done; wait 2>/dev/null; }
trap end_case EXIT  # no rank outlives the script (a time-out included)

verdict() { echo "$*" | tee -a "$R/verdicts.txt"; }

# How to read a rank's buffers (BYTES in all) in the time left: "whole", "sampled" or "skip".
# READS_AFTER: device reads still to come after this one, each kept 15 s (a sampled read: attach
# 3-15 s, 0.4 s to read).
read_mode() {  # BYTES READS_AFTER
  local left=$((DEADLINE - SECONDS - 15 * $2)) whole_s=$(($1 / READ_RATE_BPS + 15))
  if [ "$left" -ge "$whole_s" ]; then echo whole
  elif [ $((DEADLINE - SECONDS)) -ge 25 ]; then echo sampled
  else echo skip; fi
}

under_cuda_gdb() {  # NAME RANK BYTES READS_AFTER [ROLE]
  local base=$R/$1-rank$2 mode limit args check
  mode=$(read_mode "$3" "$4")
  if [ "$mode" = skip ]; then
    verdict "NOT READ $1 rank $2: the numerics time box (${NUMERICS_DEADLINE_S:-280} s) is spent"; return
  fi
  if [ "$mode" = whole ]; then
    args="--full-read-bytes $3"; limit=$((DEADLINE - SECONDS))
  else
    args="--full-read-bytes 1024 --sample-chunks ${SAMPLE_CHUNKS:-64} --chunk-bytes ${SAMPLE_CHUNK_BYTES:-4096}"
    limit=$((DEADLINE - SECONDS < 60 ? DEADLINE - SECONDS : 60))
  fi
  NCCLSCOPE_LIB=$CARRY/lib/libncclscope.so LD_LIBRARY_PATH=$CARRY/lib \
  timeout -k 5 "$limit" cuda-gdb -nx -batch -p "${PIDS[$2]}" \
    -ex "source $REPO/gdbext/ncclscope-gdb.py" \
    -ex 'python import time; t0 = time.time()' \
    -ex "echo (gdb) nccl-numerics --json $args\n" \
    -ex "pipe nccl-numerics --json $args | cat > $base.numerics.json" \
    -ex 'python print("[nccl-numerics took %.2f s]" % (time.time() - t0))' \
    -ex 'echo (gdb) nccl-kernels\n' -ex 'nccl-kernels' \
    > "$base.cuda-gdb.txt" 2>&1
  log "$1 rank $2 ($mode read, limit $limit s): cuda-gdb exit $?; $(grep -h 'took' "$base.cuda-gdb.txt" | tr '\n' ' ')"
  python3 "$REPO/tests/scenarios/check_numerics.py" "$R/$1-rank$2.log" "$base.numerics.json" ${5:-both} > "$base.check.txt" 2>&1
  check=$?
  [ $check = 0 ] && verdict "PASS $1 rank $2 ($mode): $(tr '\n' ' ' < "$base.check.txt")" ||
    verdict "FAIL $1 rank $2 ($mode, exit $check): $(tr '\n' ' ' < "$base.check.txt")"
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
READS_LEFT=0  # device reads still to come over every case asked for (set below)
device_case() {  # NAME BYTES ROLE RANK...
  local name=$1 bytes=$2 role=$3 rank pids=() docs=(); shift 3
  for rank in "$@"; do
    READS_LEFT=$((READS_LEFT - 1))
    under_cuda_gdb "$name" "$rank" "$bytes" "$READS_LEFT" "$role"
    [ -s "$R/$name-rank$rank.numerics.json" ] && docs+=("$R/$name-rank$rank.numerics.json")
  done
  for rank in "${!PIDS[@]}"; do pids+=(--pid "${PIDS[$rank]}"); done
  timeout 30 "$NSC" triage "${pids[@]}" "${docs[@]}" > "$R/$name.triage-live.txt" 2>&1; log "$name triage --pid + numerics exit $?"
  timeout 30 "$NSC" triage "${pids[@]}" "${docs[@]}" --json > "$R/$name.triage-live.json" 2>/dev/null
  head -6 "$R/$name.triage-live.txt"
  [ "${SHIP_CORES:-0}" = 1 ] && ship_cores "$name"
}

# SHIP_CORES=1: every rank's core (SIGABRT, coredump_filter 0x33), sliced here, for corefiles/:
# $R/ship/NAME/rankR.core beside the rank's cuda-gdb numerics view (the device buffers are in no
# host core) and the triage of the slices with those views.
ship_cores() {  # NAME
  local name=$1 rank core D=$R/ship/$1 deadline=$((SECONDS + 90)); mkdir -p "$D"
  for rank in "${!PIDS[@]}"; do kill -ABRT "${PIDS[$rank]}" 2>/dev/null; done
  for rank in "${!PIDS[@]}"; do
    while kill -0 "${PIDS[$rank]}" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.5; done
  done
  for rank in "${!PIDS[@]}"; do
    core=/tmp/cores/core.${PIDS[$rank]}
    [ -f "$core" ] || { log "$name rank $rank: no core"; continue; }
    "$NSC" slice "$core" -o "$D/rank$rank.core" > "$D/rank$rank.slice.log" 2>&1
    log "$name rank $rank: core $(stat -c %s "$core") B, slice exit $?, $(stat -c %s "$D/rank$rank.core" 2>/dev/null) B"
    cp "$R/$name-rank$rank.log" "$D/rank$rank.log"
    [ -f "$R/$name-rank$rank.numerics.json" ] && cp "$R/$name-rank$rank.numerics.json" "$D/rank$rank.numerics.json"
    rm -f "$core"
  done
  "$NSC" triage "$D"/rank*.core "$D"/rank*.numerics.json > "$D/triage.txt" 2>&1
  "$NSC" triage "$D"/rank*.core "$D"/rank*.numerics.json --json > "$D/triage.json" 2>/dev/null
  log "$name triage of the slices + views:"; head -6 "$D/triage.txt"
}

# Issue 36: three ranks, rank 1 injects (NaN) or every rank's values overflow in the sum; rank 2
# skips the collective the others hang in. BYTES: one rank's send + receive buffers.
MiB4=4194304 MiB2=2097152
run_case() {  # NAME
  case $1 in
    overflow-f16-3ranks-device)  # first by default: its receive buffers were never read whole
      NRANKS=3 start_case "$1" --dtype f16 --mode overflow --count 1048576
      device_case "$1" $MiB4 both 0 1 ;;
    torch-nan-bf16)  # rank 1 holds the NaN; in place, so the send buffer is the receive buffer
      NRANKS=3 start_torch_case "$1" --count 1048576 --nan-count 4096 --inject-rank 1
      device_case "$1" $MiB4 send 1 0 ;;
    nan-bf16-3ranks-device)
      NRANKS=3 start_case "$1" --dtype bf16 --mode nan --count 1048576 --nan-count 4096 --inject-rank 1
      device_case "$1" $MiB4 both 1 0 ;;
    underflow-e4m3-3ranks-device)
      NRANKS=3 start_case "$1" --dtype e4m3 --mode underflow --count 1048576
      device_case "$1" $MiB2 both 0 1 ;;
    nan-bf16-device)
      start_case "$1" --dtype bf16 --mode nan --count 1048576 --nan-count 4096
      READS_LEFT=$((READS_LEFT - 2))
      under_cuda_gdb "$1" 0 $MiB4 $((READS_LEFT + 1)); under_cuda_gdb "$1" 1 $MiB4 "$READS_LEFT" ;;
    underflow-e4m3-device)
      start_case "$1" --dtype e4m3 --mode underflow --count 1048576
      READS_LEFT=$((READS_LEFT - 1)); under_cuda_gdb "$1" 0 $MiB2 "$READS_LEFT" ;;
    nan-bf16-host)
      start_case "$1" --dtype bf16 --mode nan --count 262144 --nan-count 4096 --host-buffers; host_case "$1" ;;
    underflow-bf16-host)
      start_case "$1" --dtype bf16 --mode underflow --count 262144 --host-buffers; host_case "$1" ;;
    underflow-f16-host|nan-e5m2-host|underflow-f32-host|nan-e4m3-host|underflow-e5m2-host)
      local name=${1%-host}
      start_case "$1" --dtype "${name#*-}" --mode "${name%%-*}" --count 262144 --nan-count 1000 --host-buffers
      CORES=0 host_case "$1" ;;
    *) log "unknown case $1"; return ;;
  esac
  end_case
}

device_reads() {  # NAME: cuda-gdb reads the case makes
  case $1 in
    *-3ranks-device|torch-nan-bf16|nan-bf16-device) echo 2 ;;
    underflow-e4m3-device) echo 1 ;;
    *) echo 0 ;;
  esac
}

CASES=${CASES:-overflow-f16-3ranks-device torch-nan-bf16 nan-bf16-3ranks-device underflow-e4m3-3ranks-device \
nan-bf16-device underflow-e4m3-device nan-bf16-host underflow-bf16-host underflow-f16-host nan-e5m2-host \
underflow-f32-host nan-e4m3-host underflow-e5m2-host}
for case in $CASES; do READS_LEFT=$((READS_LEFT + $(device_reads "$case"))); done
for case in $CASES; do run_case "$case"; done
log "numerics phase: $((SECONDS - START_S)) s of the ${NUMERICS_DEADLINE_S:-280} s box"
echo "== numerics verdicts: $(grep -c '^PASS' "$R/verdicts.txt" 2>/dev/null) PASS, $(grep -c '^FAIL' "$R/verdicts.txt" 2>/dev/null) FAIL, $(grep -c '^NOT READ' "$R/verdicts.txt" 2>/dev/null) not read"
cat "$R/verdicts.txt" 2>/dev/null
cd "$OUT" && tar -cf - numerics | xz -6 -T16 | split -b 15M -d - numerics.tar.xz.part && rm -rf numerics  # cat numerics.tar.xz.part* | tar -xJf -
ls -l "$OUT"; log "done"
