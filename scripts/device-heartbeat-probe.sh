#!/usr/bin/env bash
# One GPU-machine call (<= 300 s) for issue 32's PyTorch liveness: where PyTorch 2.11 keeps its
# watchdog's heartbeat, checked on live memory, and cores of a job its watchdog ended.
#   1. nm of libtorch_cuda.so (the std::thread state vtables of Watchdog::run and
#      HeartbeatMonitor::runLoop, shouldDump_, kWatchdogThreadSleepMillis) and the offsets of
#      the members, from scripts/heartbeat-offsets.cpp built -g -fno-access-control against the
#      wheel's headers (its DWARF comes back too: a layout source by name).
#   2. tests/scenarios/torch_heartbeat.py, 2 ranks on the one GPU: rank 0 hangs in all_reduce #4,
#      rank 1 never issues it; group timeout TIMEOUT_S (80 s).
#   3. While hung: `ncclscope state --pid --json` of each rank, scripts/heartbeat_find.py (reads
#      /proc/PID/mem itself: the objects, the heartbeat twice 2 s apart), then cuda-gdb batch
#      `x/2gx` of the same addresses.
#   4. Rank 0's watchdog times out and aborts (TORCH_NCCL_ASYNC_ERROR_HANDLING=1); rank 1's
#      heartbeat monitor sees the dump signal and aborts after TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC
#      (else SIGABRT after 45 s). Cores sliced with --keep-region for every object found.
# Run from the repo root with $OUT set, carrying .device-carry/ (ncclscope or bin/ncclscope,
# lib/{libncclscope.so,libdw.so.1,libelf.so.1}). Back in $OUT: log.txt, probe.tar.xz (all small
# text), offsets-dwarf.xz (the offsets program with its DWARF), cores.tar.xz (the two slices).
set -uo pipefail
: "${OUT:?OUT must name the folder whose files come back}"
REPO=$(pwd); CARRY=$REPO/.device-carry
PY=${PY:-/opt/torch/.venv/bin/python}
TIMEOUT_S=${TIMEOUT_S:-80}
WORK=/tmp/heartbeat; rm -rf "$WORK"; mkdir -p "$WORK/cores"
exec > >(tee "$OUT/log.txt") 2>&1
alive() { [ -r "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status"; }  # a zombie is dead
log() { echo "[heartbeat $(date +%T) ${SECONDS}s] $*"; }
NSC_BIN=$CARRY/bin/ncclscope; [ -x "$NSC_BIN" ] || NSC_BIN=$CARRY/ncclscope
chmod +x "$NSC_BIN" 2>/dev/null
nsc() { LD_LIBRARY_PATH=$CARRY/lib "$NSC_BIN" "$@" --profile-path "$REPO/native/profiles"; }

SITE=$("$PY" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
LIB=$SITE/lib/libtorch_cuda.so
NCCL_DIR=$(dirname "$SITE")/nvidia/nccl
CUDA_INC=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")/include
"$PY" -c 'import torch; print(torch.__version__, torch.version.git_version)' > "$WORK/torch_version.txt"
log "torch $(cat "$WORK/torch_version.txt"); $LIB"

# 1. Symbols and offsets.
PATTERN='_State_impl.*(Watchdog|HeartbeatMonitor)|shouldDump_|kWatchdogThreadSleepMillis|FlightRecorderIN3c104cuda9CUDAEventEE3getEvE8instance'
readelf -sW "$LIB" | grep -E "$PATTERN" > "$WORK/libtorch_cuda.symbols.txt"
awk '{print $2, $4, $8}' "$WORK/libtorch_cuda.symbols.txt" > "$WORK/nm.txt"  # VALUE TYPE NAME
awk '{print $8}' "$WORK/libtorch_cuda.symbols.txt" | c++filt > "$WORK/nm-demangled.txt"
readelf -lnW "$LIB" > "$WORK/libtorch_cuda.headers.txt"
log "nm:"; cat "$WORK/nm.txt" "$WORK/nm-demangled.txt"
# Built while the job starts (ProcessGroupNCCL.hpp pulls in most of ATen).
( time g++ -g -O0 -femit-class-debug-always -fno-access-control -std=c++17 -Wno-interference-size -Wno-invalid-offsetof \
    -D_GLIBCXX_USE_CXX11_ABI=1 -DUSE_C10D_NCCL -DUSE_CUDA -I "$SITE/include" -I "$SITE/include/torch/csrc/api/include" \
    -I "$CUDA_INC" -I "$NCCL_DIR/include" -o "$WORK/heartbeat-offsets" scripts/heartbeat-offsets.cpp \
    -Wl,--unresolved-symbols=ignore-all ) > "$WORK/offsets-build.log" 2>&1 &
COMPILER=$!

# 2. The job.
SAVED_CORE_PATTERN=$(cat /proc/sys/kernel/core_pattern)
cleanup() {
  echo "$SAVED_CORE_PATTERN" > /proc/sys/kernel/core_pattern
  for pid in "${PIDS[@]:-}"; do [ -n "$pid" ] && kill -KILL "$pid" 2>/dev/null; done
}
trap cleanup EXIT
echo "$WORK/cores/core.%p" > /proc/sys/kernel/core_pattern
export NCCL_IB_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0 NCCL_DEBUG=WARN \
       TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1 MASTER_ADDR=127.0.0.1 \
       TORCH_NCCL_ASYNC_ERROR_HANDLING=1 TORCH_NCCL_WAIT_TIMEOUT_DUMP_MILSEC=2000 TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC=20 \
       TORCH_NCCL_LOG_CPP_STACK_ON_UNCLEAN_SHUTDOWN=0 TORCH_FR_DUMP_TEMP_FILE=$WORK/pt_fr_rank
PORT=$((29500 + RANDOM % 1000)); PIDS=()
for rank in 0 1; do
  NCCL_HOSTID=rank$rank-host RANK=$rank LOCAL_RANK=0 WORLD_SIZE=2 MASTER_PORT=$PORT \
    bash -c 'echo 0x33 > /proc/self/coredump_filter && ulimit -c unlimited && exec "$@"' \
    x "$PY" tests/scenarios/torch_heartbeat.py --timeout-s "$TIMEOUT_S" > "$WORK/rank$rank.log" 2>&1 &
  PIDS[$rank]=$!
done
log "ranks started: pids ${PIDS[*]}"
for ((i = 0; i < 120; i++)); do
  grep -q HANG_POINT_REACHED "$WORK/rank0.log" && grep -q HANG_POINT_REACHED "$WORK/rank1.log" && break
  sleep 0.5
done
log "hang points: $(grep -h HANG_POINT_REACHED "$WORK"/rank*.log | tr '\n' ' ')"
sleep 3  # the watchdogs beat a while with work pending

wait "$COMPILER"
tail -5 "$WORK/offsets-build.log"
"$WORK/heartbeat-offsets" > "$WORK/offsets.txt" 2>&1
log "offsets:"; cat "$WORK/offsets.txt"
xz -6 -T16 -c "$WORK/heartbeat-offsets" > "$OUT/offsets-dwarf.xz" && log "offsets-dwarf.xz $(stat -c %s "$OUT/offsets-dwarf.xz") bytes"
[ "$(stat -c %s "$OUT/offsets-dwarf.xz" 2>/dev/null || echo 0)" -lt $((15 * 1024 * 1024)) ] || rm -f "$OUT/offsets-dwarf.xz"

# 3. Live: ncclscope, the independent reader, cuda-gdb.
for rank in 0 1; do
  pid=${PIDS[$rank]}
  cp "/proc/$pid/maps" "$WORK/rank$rank.maps"
  { time nsc state --pid "$pid" --json > "$WORK/rank$rank.live.state.json"; } 2> "$WORK/rank$rank.live.state.err"
  log "rank $rank: state --pid rc=$? $(tail -3 "$WORK/rank$rank.live.state.err" | tr '\n' ' ')"
done
FINDERS=()
for rank in 0 1; do
  timeout 30 python3 scripts/heartbeat_find.py "${PIDS[$rank]}" "$WORK/offsets.txt" "$WORK/nm.txt" --repeat-after 2 \
    > "$WORK/rank$rank.find.json" 2> "$WORK/rank$rank.find.err" &
  FINDERS+=($!)
done
wait "${FINDERS[@]}"
for rank in 0 1; do log "rank $rank finder:"; cat "$WORK/rank$rank.find.json" "$WORK/rank$rank.find.err"; done
for rank in 0 1; do
  python3 - "$WORK/rank$rank.find.json" > "$WORK/rank$rank.gdb-commands" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for t in doc.get("threads", []):
    for key in ("stack_slot", "state"):
        if t.get(key):
            print("x/2gx %s" % t[key])
    for name, f in list(t.get("fields", {}).items()) + list(t.get("pg_fields", {}).items()):
        if f and name in ("heartbeat_", "pg_", "watchdog_", "heartbeatMonitor_", "lastWorkListUpdateTime_",
                          "terminateHeartbeatMonitorThread_", "heartbeatTimeoutInSec_", "error_", "terminateProcessGroup_"):
            print("x/1gx %s" % f["address"])
    if t.get("timeout_ms"):
        print("x/1gx %s" % t["timeout_ms"]["address"])
PY
  args=(); while read -r line; do args+=(-ex "$line"); done < "$WORK/rank$rank.gdb-commands"
  ( time timeout 60 cuda-gdb -nx -batch -p "${PIDS[$rank]}" "${args[@]}" -ex detach ) > "$WORK/rank$rank.cuda-gdb.txt" 2>&1
  log "rank $rank cuda-gdb:"; grep -E '^0x|real|user|sys' "$WORK/rank$rank.cuda-gdb.txt"
done
python3 scripts/heartbeat_find.py "${PIDS[1]}" "$WORK/offsets.txt" "$WORK/nm.txt" > "$WORK/rank1.find-later.json" 2>&1

# 4. The watchdog ends rank 0; rank 1's monitor (or we) end rank 1.
for ((i = 0; i < 2 * (TIMEOUT_S + 30); i++)); do alive "${PIDS[0]}" || break; sleep 0.5; done
log "rank 0 alive? $(alive "${PIDS[0]}" && echo yes || echo no)"
for ((i = 0; i < 90; i++)); do alive "${PIDS[1]}" || break; sleep 0.5; done
if alive "${PIDS[1]}"; then log "rank 1 still alive: SIGABRT"; kill -ABRT "${PIDS[1]}"; fi
for ((i = 0; i < 60; i++)); do alive "${PIDS[1]}" || break; sleep 0.5; done
sleep 2
ls -l "$WORK/cores"; tail -n 25 "$WORK/rank0.log" "$WORK/rank1.log"
exe=$(readlink -f "$PY"); SLICERS=()
for rank in 0 1; do
  core=$WORK/cores/core.${PIDS[$rank]}
  [ -f "$core" ] || { log "rank $rank: no core"; continue; }
  regions=$(python3 - "$WORK/rank$rank.find.json" "$WORK/offsets.txt" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
sizes = {l.split()[1]: int(l.split()[2]) for l in open(sys.argv[2]) if l.startswith("SIZE ")}
out = []
def keep(address, size):
    if address:
        a = int(address, 16)
        out.append("--keep-region 0x%x-0x%x" % (a, a + size))
for t in doc.get("threads", []):
    kind = "WatchdogState" if t["comm"] == "pt_nccl_watchdg" else "MonitorState"
    cls = "PG::Watchdog" if kind == "WatchdogState" else "PG::HeartbeatMonitor"
    keep(t.get("stack_slot"), 8)
    keep(t.get("state"), sizes.get(kind, 64))
    keep(t.get("object"), sizes.get(cls, 512))
    keep(t.get("pg"), sizes.get("PG", 4096))
    keep(t.get("options"), 256)
    status = (t.get("pg_fields") or {}).get("pgStatus_")
    if status:
        keep(hex(status["value"]), 512)
for key in ("_ZN4c10d16ProcessGroupNCCL11shouldDump_E", "_ZN4c10d16ProcessGroupNCCL26kWatchdogThreadSleepMillisE"):
    if key in doc:
        keep(doc[key]["address"], 8)
print(" ".join(out))
PY
)
  echo "rank $rank keep: $regions"
  # shellcheck disable=SC2086
  ( { time nsc slice "$core" -o "$WORK/rank$rank.core" --exe "$exe" --solib-search-path "$NCCL_DIR/lib" $regions; } \
      > "$WORK/rank$rank.slice.log" 2>&1
    nsc state --core "$WORK/rank$rank.core" --exe "$exe" --solib-search-path "$NCCL_DIR/lib" --json \
      > "$WORK/rank$rank.core.state.json" 2> "$WORK/rank$rank.core.state.err"
    rm -f "$core" ) &
  SLICERS+=($!)
done
[ ${#SLICERS[@]} -gt 0 ] && wait "${SLICERS[@]}"
log "sliced: $(ls -s --block-size=1M "$WORK"/rank*.core 2>/dev/null | tr '\n' ' ')"
cat "$WORK"/rank*.slice.log | tail -n 12

# 5. Pack.
(cd "$WORK" && tar -cf - --exclude='*.core' --exclude=cores --exclude=heartbeat-offsets .) | xz -6 -T16 > "$OUT/probe.tar.xz"
(cd "$WORK" && ls rank*.core 2>/dev/null | tar -cf - -T -) | xz -6 -T16 > "$OUT/cores.tar.xz"
ls -l "$OUT"
log "done"
