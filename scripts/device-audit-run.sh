#!/usr/bin/env bash
# GPU machine, one call (issue 20 item 2): real cases of `ncclscope audit` rules
# (tests/scenarios/nccl_audit_scenarios.cu, docs/audit.md). For each case two ranks run, one
# process each; once both reach their hang point the audit runs live (--pid, frozen read), on
# `state --pid --json` snapshots, on the kernel cores (kill -ABRT, coredump_filter 0x33) and on
# their slices. Everything lands in $OUT/audit (cores sliced and xz'ed; full cores stay behind).
#
# Run from the repo root with $OUT set, carrying .device-carry/:
#   .device-carry/bin/ncclscope, .device-carry/lib/{libdw.so.1,libelf.so.1} (the GPU machine has
#   no libdw), .device-carry/nccl_audit_scenarios (nvcc-built here, rpath to the venv's libnccl):
#     mkdir -p .device-carry/bin .device-carry/lib
#     strip -o .device-carry/bin/ncclscope build/bin/ncclscope   # 3.6 MB (106 MB with debug info)
#     cp -L /usr/lib/x86_64-linux-gnu/libdw.so.1 /usr/lib/x86_64-linux-gnu/libelf.so.1 .device-carry/lib/
#     cp build/scenarios/nccl_audit_scenarios .device-carry/   # CMake builds it where nvcc is; or:
#     /usr/local/cuda-13.0/bin/nvcc -std=c++17 -arch=sm_90 -o .device-carry/nccl_audit_scenarios \
#       tests/scenarios/nccl_audit_scenarios.cu -I/usr/local/cuda-13.0/include -L/usr/local/cuda-13.0/lib \
#       -lnccl -Xlinker -rpath=/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib
#   scripts/device-audit-run.sh [CASE...]   (default: every case below; TWO_GPUS=auto|0|1)
#
# Cases: revoke-no-destroy destroy-stuck peer-exit register-unaligned abort-stuck register-leak;
# with two GPUs also destroy-stuck-p2p (one rank per GPU: P2P/cuMem imports, for
# ipc-import-from-dead-peer). Each audit (live, snapshots, cores, slices) is checked against the
# case's expected findings by tests/scenarios/check_audit.py: one PASS/FAIL line each, all of them
# in $OUT/audit/verdicts.txt and at the end of the output.
set -uo pipefail
: "${OUT:?OUT must name the folder whose files come back}"
REPO=$(pwd); CARRY=$REPO/.device-carry
BIN=$CARRY/nccl_audit_scenarios; NSC=$CARRY/ncclscope-audit-run
# The carried libdw/libelf for ncclscope only; the ranks load the venv's libnccl by rpath.
cat > "$NSC" <<SH
#!/bin/sh
LD_LIBRARY_PATH=$CARRY/lib exec $CARRY/bin/ncclscope "\$@"
SH
chmod +x "$NSC" "$CARRY/bin/ncclscope" "$BIN"
NCCL_DIR=${NCCL_DIR:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib}
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=${NCCL_DEBUG:-WARN} NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1
R=$OUT/audit; CORES=/tmp/cores; mkdir -p "$R" "$CORES"
echo "$CORES/core.%p" > /proc/sys/kernel/core_pattern
log() { echo "[audit $(date +%T) ${SECONDS}s] $*" | tee -a "$R/run.log"; }
{ nvidia-smi -L; ls -l "$NCCL_DIR/libnccl.so.2"; "$NSC" --version; } > "$R/machine.txt" 2>&1
GPUS=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
CASES=("$@")
if [ ${#CASES[@]} -eq 0 ]; then
  CASES=(revoke-no-destroy destroy-stuck peer-exit register-unaligned abort-stuck register-leak)
  [ "$GPUS" -ge 2 ] && [ "${TWO_GPUS:-auto}" != 0 ] && CASES+=(destroy-stuck-p2p)
fi

PIDS=()
start_case() {  # NAME MODE TWO_GPUS
  local name=$1 mode=$2 two=$3 W=/tmp/audit-$1 rank device host_id
  rm -rf "$W"; mkdir -p "$W"; PIDS=()
  for rank in 0 1; do
    device=0; host_id=nsc-audit-$rank
    [ "$two" = 1 ] && { device=$rank; host_id=nsc-audit-host; }
    NCCL_HOSTID=$host_id LD_LIBRARY_PATH=$NCCL_DIR bash -c 'ulimit -c unlimited; echo 0x33 > /proc/self/coredump_filter; exec "$@"' _ \
      "$BIN" --rank $rank --nranks 2 --id-file "$W/id" --mode "$mode" --device $device > "$W/rank$rank.log" 2>&1 &
    PIDS+=($!)
  done
  local deadline=$((SECONDS + 60))
  while [ $SECONDS -lt $deadline ]; do
    [ "$(cat "$W"/rank*.log | grep -c HANG_POINT_REACHED)" -ge 2 ] && break; sleep 0.5
  done
  sleep "${SETTLE_S:-4}"  # peer-exit: rank 0's proxy must see the closed socket
  log "$name: $(grep -h 'HANG_POINT_REACHED\|rror' "$W"/rank*.log | tr '\n' ' ' | cut -c1-300)"
  cp "$W"/rank*.log "$R/" 2>/dev/null; for rank in 0 1; do mv "$R/rank$rank.log" "$R/$name-rank$rank.log" 2>/dev/null; done
}

# PASS/FAIL of one audit document against the case's expected findings (check_audit.py).
verdict() {  # NAME LABEL AUDIT.json
  local base=$R/$1 line state states=()
  for state in "$base".rank*.state.json; do [ -f "$state" ] && states+=(--state "$state"); done
  line=$(python3 "$REPO/tests/scenarios/check_audit.py" "$1" "$3" --label "$2" \
    --truth "$R/$1-rank0.log" --truth "$R/$1-rank1.log" "${states[@]}" 2>&1)
  echo "$line" | tee -a "$R/verdicts.txt" | sed 's/^/  /'
}

alive_pid_args() { local pid; for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && printf -- '--pid %s ' "$pid"; done; }

# The rules each input kind fired: "rule@rank" per finding, one line.
fired() { python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
print(" ".join(sorted("%s@%s" % (f["rule"], ",".join(str(w["rank"]) for w in f["where"])) for f in d["findings"])) or "-")' "$1" 2>/dev/null; }

audit_live() {  # NAME
  local name=$1 base=$R/$1 rank
  # shellcheck disable=SC2046
  "$NSC" audit $(alive_pid_args) --json > "$base.live.audit.json" 2> "$base.live.audit.err"
  log "$name live audit exit $?: $(fired "$base.live.audit.json")"
  verdict "$name" live "$base.live.audit.json"
  "$NSC" audit $(alive_pid_args) --verbose > "$base.live.audit.txt" 2>&1
  for rank in 0 1; do
    kill -0 "${PIDS[$rank]}" 2>/dev/null || continue
    "$NSC" state --pid "${PIDS[$rank]}" --freeze --json > "$base.rank$rank.state.json" 2> "$base.rank$rank.state.err"
  done
  "$NSC" audit "$base".rank*.state.json --json > "$base.snapshots.audit.json" 2>&1
  log "$name snapshot audit exit $?: $(fired "$base.snapshots.audit.json")"
  verdict "$name" snapshots "$base.snapshots.audit.json"
}

audit_cores() {  # NAME
  local name=$1 base=$R/$1 rank pid cores=() slices=()
  for pid in "${PIDS[@]}"; do kill -0 "$pid" 2>/dev/null && kill -ABRT "$pid"; done
  for rank in 0 1; do
    pid=${PIDS[$rank]}; wait "$pid" 2>/dev/null
    [ -f "$CORES/core.$pid" ] || continue
    mv "$CORES/core.$pid" "/tmp/audit-$name/rank$rank.core"; cores+=("/tmp/audit-$name/rank$rank.core")
    "$NSC" slice "/tmp/audit-$name/rank$rank.core" -o "/tmp/audit-$name/rank$rank.sliced.core" --exe "$BIN" \
      --solib-search-path "$NCCL_DIR" >> "$R/slice.log" 2>&1
    slices+=("/tmp/audit-$name/rank$rank.sliced.core")
    xz -9 -T4 -c "/tmp/audit-$name/rank$rank.sliced.core" > "$base.rank$rank.core.xz"
  done
  [ ${#cores[@]} -gt 0 ] || { log "$name: no core"; return; }
  "$NSC" audit "${cores[@]}" --json > "$base.cores.audit.json" 2> "$base.cores.audit.err"
  log "$name core audit exit $?: $(fired "$base.cores.audit.json")"
  verdict "$name" cores "$base.cores.audit.json"
  "$NSC" audit "${slices[@]}" --json > "$base.slices.audit.json" 2> "$base.slices.audit.err"
  log "$name slice audit exit $?: $(fired "$base.slices.audit.json")"
  verdict "$name" slices "$base.slices.audit.json"
  "$NSC" audit "${slices[@]}" --verbose > "$base.slices.audit.txt" 2>&1
}

for case in "${CASES[@]}"; do
  mode=$case two=0
  [ "$case" = destroy-stuck-p2p ] && { mode=destroy-stuck; two=1; }
  if ! grep -q -a -- "$mode" "$BIN"; then  # a binary built before the mode was added
    echo "FAIL $case: $BIN has no mode $mode: rebuild it from this tree" | tee -a "$R/verdicts.txt"; continue
  fi
  start_case "$case" "$mode" "$two"
  audit_live "$case"
  audit_cores "$case"
  for pid in "${PIDS[@]}"; do kill -9 "$pid" 2>/dev/null; done; wait 2>/dev/null
done
cp "$BIN" "$R/nccl_audit_scenarios"
log "done; $(du -sh "$R" | cut -f1) in $R"
echo "== audit verdicts: $(grep -c '^PASS' "$R/verdicts.txt" 2>/dev/null) PASS, $(grep -c '^FAIL' "$R/verdicts.txt" 2>/dev/null) FAIL"
cat "$R/verdicts.txt" 2>/dev/null
