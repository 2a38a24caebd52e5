#!/usr/bin/env bash
# Real multi-group PyTorch hangs on the GPU machine (issue 13, item 7), one scripted call:
#
#   scripts/device-torch-multigroup.sh SCENARIO...   (tests/scenarios/torch_multigroup.py names,
#                                                     crash-*/order-* of torch_crash_order.py)
#
# crash-* scenarios (issue 32) end by themselves: no SIGABRT from here unless a rank is still
# alive CRASH_WAIT_S after the start (then it is aborted and its rank<R>.exit says so); each
# rank's /proc/PID/maps is copied while it lives (the python slice needs it), and rank<R>.exit
# records its wait status and when it was first seen gone. SPIN_GDB=1 adds a separate
# order-gpu-spin job (its cores are never kept) inspected live by cuda-gdb: `info cuda kernels`
# and the extension's nccl-kernels (--all, --json, --record) into order-gpu-spin/gdb/.
#
# Runs there from the repo root with $OUT set by the device tool, carrying .device-carry/ with
# ncclscope (stripped CLI) and lib/{libdw.so.1,libelf.so.1}. All ranks share GPU 0, one
# NCCL_HOSTID each (socket NET transport, see docs/corpus.md). Per scenario: every rank runs under
# `python -X faulthandler` with coredump_filter 0x33; once each live rank printed
# HANG_POINT_REACHED (and its flight-recorder dump is written), /proc facts are saved and every
# rank gets SIGABRT (faulthandler prints each thread's Python stack, then the kernel writes the
# core). Never a debugger, never gcore. Each core is then, on this machine:
#   - triaged and decoded whole (`ncclscope triage` and `state --json`: figures to compare with);
#   - sliced twice: the NCCL slice, and a "python" slice that also keeps [heap] and anonymous
#     mappings up to 64 MiB (where CPython keeps thread states, frames and code objects);
# and the slices go back in one xz'ed tar (big dictionary: ranks share most pages), the python
# slices first while they fit in the budget, else the NCCL slice of that rank.
set -uo pipefail
: "${OUT:?OUT must name the folder whose files come back}"
REPO=$(pwd); CARRY=$REPO/.device-carry
PY=${PY:-/opt/torch/.venv/bin/python}
NCCL_LIBDIR=${NCCL_LIBDIR:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib}
WORK=${WORK:-/tmp/multigroup}
HANG_TIMEOUT_S=${HANG_TIMEOUT_S:-120}
BUDGET_BYTES=${BUDGET_BYTES:-$((60 * 1024 * 1024))}
RICH_MAX_MB=${RICH_MAX_MB:-8}
SCENARIOS=("$@")
log() { echo "[multigroup $(date +%T) ${SECONDS}s] $*"; }

export NCCL_IB_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0 NCCL_DEBUG=WARN \
       TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1 \
       MASTER_ADDR=127.0.0.1

NSC_BIN=$CARRY/bin/ncclscope; [ -f "$NSC_BIN" ] || NSC_BIN=$CARRY/ncclscope   # either layout of the carry
cat > "$CARRY/ncclscope-run" <<SH
#!/bin/sh
LD_LIBRARY_PATH=$CARRY/lib exec $NSC_BIN "\$@" --profile-path $REPO/native/profiles
SH
chmod +x "$CARRY/ncclscope-run" "$NSC_BIN"
NSC=$CARRY/ncclscope-run

world_of() { case $1 in tpdp-* | crash-* | order-*) echo 4 ;; ppdp-*) echo 8 ;; *) return 1 ;; esac; }
program_of() {
  case $1 in
    crash-* | order-*) echo "$REPO/tests/scenarios/torch_crash_order.py --native-dir $WORK/native" ;;
    *) echo "$REPO/tests/scenarios/torch_multigroup.py" ;;
  esac
}

# The crash scenarios' native code, built here (gcc, nvcc of this machine).
build_native() {
  mkdir -p "$WORK/native"
  gcc -O0 -g -shared -fPIC -o "$WORK/native/libtorch_crash_native.so" "$REPO/tests/scenarios/torch_crash_native.c" ||
    log "torch_crash_native.c did not build"
  nvcc -O2 -shared -Xcompiler -fPIC -arch=sm_90 -o "$WORK/native/libtorch_crash_kernel.so" \
    "$REPO/tests/scenarios/torch_crash_kernel.cu" || log "torch_crash_kernel.cu did not build"
  log "native: $(ls "$WORK/native" | tr '\n' ' ')"
}

# What the flight-recorder decoder needs from this PyTorch (issue 16), into torch.tar.xz: a TU
# that includes the wheel's own FlightRecorder.hpp, built with -g (its DWARF gives the layouts),
# libtorch_cuda.so's build-id, program headers and the symbols of the recorder singleton, and
# the headers themselves. Never offsets typed by hand.
torch_material() {
  local dir=$WORK/torch site inc cuda_inc
  mkdir -p "$dir"
  site=$("$PY" -c 'import torch, os; print(os.path.dirname(torch.__file__))')
  inc=$site/include; cuda_inc=$(dirname "$(dirname "$(readlink -f "$(which nvcc)")")")/include
  cat > "$dir/fr_layout.cc" <<'CC'
#include <c10/cuda/CUDAEvent.h>
#include <torch/csrc/distributed/c10d/FlightRecorder.hpp>
#include <torch/csrc/profiler/combined_traceback.h>
using Recorder = c10d::FlightRecorder<c10::cuda::CUDAEvent>;
// sizeof makes the compiler complete (and describe in DWARF) each class template instance.
extern const unsigned long ncclscope_sizes[] = {sizeof(Recorder), sizeof(Recorder::Entry),
                                                sizeof(torch::CapturedTraceback)};
Recorder* ncclscope_recorder;
Recorder::Entry* ncclscope_entry;
torch::CapturedTraceback* ncclscope_traceback;
CC
  local flags=(-g -O0 -c -std=c++17 -Wno-interference-size -D_GLIBCXX_USE_CXX11_ABI=1 -DUSE_C10D_NCCL
               -DUSE_CUDA -I "$inc" -I "$inc/torch/csrc/api/include" -I "$cuda_inc")
  ( cd "$dir" && g++ "${flags[@]}" fr_layout.cc -o fr_layout.o > compile.log 2>&1 ) ||
    log "torch TU did not compile: $(tail -3 "$dir/compile.log")"
  local lib=$site/lib/libtorch_cuda.so
  { readelf -n "$lib" | grep -A1 'Build ID'; readelf -lW "$lib"; } > "$dir/libtorch_cuda.headers.txt" 2>&1
  readelf -sW "$lib" | grep -E 'FlightRecorder|CapturedTraceback' > "$dir/libtorch_cuda.symbols.txt"
  readelf -sW "$site/lib/libtorch_python.so" | grep -E 'CapturedTraceback|PythonTraceback' > "$dir/libtorch_python.symbols.txt"
  { "$PY" -c 'import torch; print(torch.__version__, torch.version.git_version)'; sha256sum "$lib"; } > "$dir/torch_version.txt" 2>&1
  (cd "$inc" && tar -cf "$dir/headers.tar" torch/csrc/distributed/c10d/FlightRecorder.hpp \
      torch/csrc/distributed/c10d/FlightRecorderDetail.hpp torch/csrc/profiler/combined_traceback.h \
      torch/csrc/distributed/c10d/TraceUtils.h 2>/dev/null)
  tar -C "$WORK" -cf - torch | xz -9 -T16 > "$OUT/torch.tar.xz"
  log "torch material: $(ls -l "$OUT/torch.tar.xz" | awk '{print $5}') bytes; $(wc -l < "$dir/libtorch_cuda.symbols.txt") symbols"
}

start_rank() {  # dir rank world scenario port -> STARTED_PID
  local dir=$1 rank=$2 world=$3 scenario=$4 port=$5 program
  program=$(program_of "$scenario")
  mkdir -p "$dir/rank$rank"
  NCCL_HOSTID=rank$rank-host RANK=$rank LOCAL_RANK=0 WORLD_SIZE=$world MASTER_PORT=$port \
    bash -c 'echo 0x33 > /proc/self/coredump_filter && ulimit -c unlimited && cd "$0" && exec "$@"' \
    "$dir/rank$rank" "$PY" -X faulthandler $program \
    --scenario "$scenario" --fr-dump-dir "$dir" > "$dir/rank$rank.log" 2>&1 &
  STARTED_PID=$!
}

# Every live rank printed HANG_POINT_REACHED and, if it made one, wrote its FR dump.
ranks_ready() {
  local dir=$1 world=$2 rank
  for ((rank = 0; rank < world; rank++)); do
    kill -0 "${PIDS[$rank]}" 2>/dev/null || continue
    grep -q HANG_POINT_REACHED "$dir/rank$rank.log" || return 1
  done
}
dumps_done() {
  local dir=$1 world=$2 rank
  for ((rank = 0; rank < world; rank++)); do
    kill -0 "${PIDS[$rank]}" 2>/dev/null || continue
    grep -q "where=loss.item\|where=dist.barrier" "$dir/rank$rank.log" || continue
    grep -q "FR_DUMPED\|FR_DUMP_FAILED" "$dir/rank$rank.log" || return 1
  done
}

# A zombie still answers kill -0, so read the state letter: gone or Z means the dump is done.
wait_for_exit() {
  local pid=$1 deadline=$((SECONDS + $2)) state
  while [ $SECONDS -lt $deadline ]; do
    state=$(awk '{print $3}' /proc/$pid/stat 2>/dev/null)
    { [ -z "$state" ] || [ "$state" = Z ]; } && return 0
    sleep 0.2
  done
  return 1
}

capture() {
  local scenario=$1 world dir=$WORK/$1 port=${PORT:-$((29600 + RANDOM % 300))} rank t0=$SECONDS deadline
  world=$(world_of "$scenario") || { log "unknown scenario $scenario"; return; }
  rm -rf "$dir"; mkdir -p "$dir"; PIDS=()
  for ((rank = 0; rank < world; rank++)); do start_rank "$dir" $rank "$world" "$scenario" $port; PIDS[$rank]=$STARTED_PID; done
  deadline=$((SECONDS + HANG_TIMEOUT_S)); local state=timeout
  while [ $SECONDS -lt $deadline ]; do ranks_ready "$dir" "$world" && { state=reached; break; }; sleep 0.5; done
  deadline=$((SECONDS + 20))
  while [ $SECONDS -lt $deadline ]; do dumps_done "$dir" "$world" && break; sleep 0.5; done
  sleep 2
  for ((rank = 0; rank < world; rank++)); do
    local pid=${PIDS[$rank]}; echo "$pid" > "$dir/rank$rank.pid"
    if kill -0 "$pid" 2>/dev/null && [ "$(awk '{print $3}' /proc/$pid/stat)" != Z ]; then
      cp /proc/$pid/maps "$dir/rank$rank.maps"
      tr '\0' '\n' < /proc/$pid/environ | grep -E '^(RANK|LOCAL_RANK|WORLD_SIZE|NCCL_HOSTID|MASTER_PORT)=' > "$dir/rank$rank.environ"
      { cat /proc/$pid/status; for t in /proc/$pid/task/*; do echo "$t $(cat $t/comm) wchan=$(cat $t/wchan)"; done; } > "$dir/rank$rank.proc" 2>&1
      echo alive > "$dir/rank$rank.state"
      # Live reads, no stop (what `triage --pid` sees), to compare with the core and the FR pickle.
      [ "${LIVE_CHECK:-1}" = 1 ] && {
        "$NSC" state --pid "$pid" --json > "$dir/rank$rank.live.json" 2> "$dir/rank$rank.live.err"
        "$NSC" py-stacks --pid "$pid" > "$dir/rank$rank.live.py.txt" 2>&1; }
    else
      echo exited > "$dir/rank$rank.state"
    fi
  done
  for ((rank = 0; rank < world; rank++)); do kill -ABRT "${PIDS[$rank]}" 2>/dev/null; done
  for ((rank = 0; rank < world; rank++)); do
    local pid=${PIDS[$rank]}
    wait_for_exit "$pid" 90 || { log "$scenario rank$rank: no exit 90 s after SIGABRT; SIGKILL"; kill -KILL "$pid"; }
    wait "$pid"; echo "exit=$?" >> "$dir/rank$rank.state"
    [ -f "$CORE_DIR/core.$pid" ] && mv "$CORE_DIR/core.$pid" "$dir/rank$rank.core"
    grep -h '^GROUND_TRUTH ' "$dir/rank$rank.log" | sed 's/^GROUND_TRUTH //' > "$dir/rank$rank.ground_truth.json"
  done
  echo "$state $((SECONDS - t0))s" > "$dir/capture.txt"
  log "$scenario: $state in $((SECONDS - t0)) s; cores: $(ls -s --block-size=1M "$dir"/*.core 2>/dev/null | tr '\n' ' ')"
}

# A crash scenario ends by itself: keep each rank's maps while it lives, note when it is gone,
# abort the ranks still alive CRASH_WAIT_S after the start (said in rank<R>.exit).
capture_crash() {
  local scenario=$1 world dir=$WORK/$1 port=${PORT:-$((29600 + RANDOM % 300))} rank t0=$SECONDS pid alive
  world=$(world_of "$scenario") || { log "unknown scenario $scenario"; return; }
  rm -rf "$dir"; mkdir -p "$dir"; PIDS=()
  for ((rank = 0; rank < world; rank++)); do start_rank "$dir" $rank "$world" "$scenario" $port; PIDS[$rank]=$STARTED_PID; done
  local deadline=$((SECONDS + ${CRASH_WAIT_S:-120})) state=ended
  while :; do
    alive=0
    for ((rank = 0; rank < world; rank++)); do
      pid=${PIDS[$rank]}
      [ -f "$dir/rank$rank.gone" ] && continue
      if [ -z "$(awk '$3 != "Z" {print $3}' /proc/$pid/stat 2>/dev/null)" ]; then
        date +%s.%N > "$dir/rank$rank.gone"; continue
      fi
      alive=$((alive + 1))
      cp /proc/$pid/maps "$dir/rank$rank.maps.new" 2>/dev/null && mv "$dir/rank$rank.maps.new" "$dir/rank$rank.maps"
      [ -f "$dir/rank$rank.environ" ] || tr '\0' '\n' < /proc/$pid/environ 2>/dev/null |
        grep -E '^(RANK|LOCAL_RANK|WORLD_SIZE|NCCL_HOSTID|MASTER_PORT|TORCH_[A-Z_]*)=' > "$dir/rank$rank.environ"
    done
    [ $alive -eq 0 ] && break
    [ $SECONDS -ge $deadline ] && { state=aborted-by-capture; break; }
    sleep 0.25
  done
  for ((rank = 0; rank < world; rank++)); do
    pid=${PIDS[$rank]}; echo "$pid" > "$dir/rank$rank.pid"
    if [ ! -f "$dir/rank$rank.gone" ]; then
      { cat /proc/$pid/status; for t in /proc/$pid/task/*; do echo "$t $(cat $t/comm) wchan=$(cat $t/wchan)"; done; } > "$dir/rank$rank.proc" 2>&1
      echo "alive ${CRASH_WAIT_S:-120} s after the start: SIGABRT by the capture at $(date +%s.%N)" > "$dir/rank$rank.exit"
      kill -ABRT "$pid" 2>/dev/null
    fi
  done
  for ((rank = 0; rank < world; rank++)); do
    pid=${PIDS[$rank]}
    wait_for_exit "$pid" 90 || { log "$scenario rank$rank: no exit 90 s after SIGABRT; SIGKILL"; kill -KILL "$pid"; }
    wait "$pid"; local status=$?
    [ -f "$dir/rank$rank.gone" ] || date +%s.%N > "$dir/rank$rank.gone"
    echo "wait_status=$status gone_at=$(cat "$dir/rank$rank.gone") core=$([ -f "$CORE_DIR/core.$pid" ] && echo yes || echo no)" >> "$dir/rank$rank.exit"
    # A rank the kernel dumped (or the capture aborted) keeps a core; "alive" makes the builder list it.
    if [ -f "$CORE_DIR/core.$pid" ]; then mv "$CORE_DIR/core.$pid" "$dir/rank$rank.core"; echo alive > "$dir/rank$rank.state"
    else echo exited > "$dir/rank$rank.state"; fi
    echo "exit=$status" >> "$dir/rank$rank.state"
    grep -h '^GROUND_TRUTH ' "$dir/rank$rank.log" | sed 's/^GROUND_TRUTH //' > "$dir/rank$rank.ground_truth.json"
  done
  echo "$state $((SECONDS - t0))s" > "$dir/capture.txt"
  log "$scenario: $state in $((SECONDS - t0)) s; $(for r in $(seq 0 $((world - 1))); do echo -n "rank${r}[$(head -c 60 "$dir/rank$r.exit" | tr '\n' ' ')] "; done)"
  log "$scenario cores: $(ls -s --block-size=1M "$dir"/*.core 2>/dev/null | tr '\n' ' ')"
}

# A separate order-gpu-spin job, never captured: cuda-gdb attaches to every rank in turn (the
# spinning rank 2 first); what it and the extension print goes to order-gpu-spin/gdb/:
# rank<R>.state.json (every rank, live), rank<R>.cuda-gdb.txt, rank<R>.nccl-kernels.json (the
# kernels/1 view triage takes), rank<R>.nccl-kernels.replay.json (replay bundle), rank<R>.log.
spin_gdb_probe() {
  local dir=$WORK/order-gpu-spin-gdb out=$WORK/order-gpu-spin-gdb/gdb port=${PORT:-29990} rank
  rm -rf "$dir"; mkdir -p "$dir" "$out"; local pids=()
  for rank in 0 1 2 3; do start_rank "$dir" $rank 4 order-gpu-spin $port; pids[$rank]=$STARTED_PID; done
  local deadline=$((SECONDS + 90))
  while [ $SECONDS -lt $deadline ]; do [ "$(grep -l HANG_POINT_REACHED "$dir"/rank*.log 2>/dev/null | wc -l)" -ge 4 ] && break; sleep 0.5; done
  sleep 3
  log "spin probe: $(grep -l HANG_POINT_REACHED "$dir"/rank*.log | wc -l) ranks at their hang point"
  # Every rank's host state (live read, no stop), so `ncclscope triage gdb/` joins the views
  # below to the same job (comm hashes are per run).
  for rank in 0 1 2 3; do
    "$NSC" state --pid "${pids[$rank]}" --json > "$out/rank$rank.state.json" 2> "$out/rank$rank.state.err"
  done
  for rank in 2 0 1 3; do
    NCCLSCOPE_LIB=$CARRY/lib/libncclscope.so LD_LIBRARY_PATH=$CARRY/lib \
    timeout "${SPIN_GDB_TIMEOUT_S:-150}" cuda-gdb -nx -batch -p "${pids[$rank]}" \
      -ex "source $REPO/gdbext/ncclscope-gdb.py" \
      -ex 'echo (cuda-gdb) info cuda kernels\n' -ex 'info cuda kernels' \
      -ex 'echo (cuda-gdb) nccl-kernels\n' -ex 'nccl-kernels' \
      -ex 'echo (cuda-gdb) nccl-kernels --all\n' -ex 'nccl-kernels --all' \
      -ex "pipe nccl-kernels --all --json | cat > $out/rank$rank.nccl-kernels.json" \
      -ex "nccl-kernels --all --record $out/rank$rank.nccl-kernels.replay.json" \
      -ex 'echo (cuda-gdb) info cuda contexts\n' -ex 'info cuda contexts' \
      -ex 'detach' > "$out/rank$rank.cuda-gdb.txt" 2>&1
    log "spin probe rank $rank: cuda-gdb exit $?; $(grep -A3 'info cuda kernels' "$out/rank$rank.cuda-gdb.txt" | tail -2 | tr -s ' ' | cut -c1-200)"
  done
  for rank in 0 1 2 3; do cp "$dir/rank$rank.log" "$out/rank$rank.log"; done
  for rank in 0 1 2 3; do kill -KILL "${pids[$rank]}" 2>/dev/null; done
  for rank in 0 1 2 3; do wait "${pids[$rank]}" 2>/dev/null; rm -f "$CORE_DIR/core.${pids[$rank]}"; done
}

# Address ranges of [heap] and of anonymous rw mappings up to RICH_MAX_MB, as --keep-region args.
python_regions() {
  "$PY" - "$1" "$((RICH_MAX_MB * 1024 * 1024))" <<'PYEOF'
import sys
path, limit = sys.argv[1], int(sys.argv[2])
for line in open(path):
    fields = line.split()
    start, end = (int(x, 16) for x in fields[0].split("-"))
    name = fields[5] if len(fields) > 5 else ""
    if fields[1].startswith("rw") and (name == "[heap]" or (name == "" and end - start <= limit)):
        print("--keep-region 0x%x-0x%x" % (start, end))
PYEOF
}

process_scenario() {
  local scenario=$1 dir=$WORK/$1 exe core rank
  exe=$(readlink -f "$PY")
  local cores=("$dir"/rank*.core)
  [ -f "${cores[0]}" ] || { log "$scenario: no core"; return; }
  [ "${TRIAGE_FULL:-1}" = 1 ] &&
    { time "$NSC" triage "${cores[@]}" --exe "$exe" --solib-search-path "$NCCL_LIBDIR" --json > "$dir/triage.full.json"; } 2> "$dir/triage.full.time"
  [ "${TRIAGE_TEXT:-1}" = 1 ] && "$NSC" triage "${cores[@]}" --exe "$exe" --solib-search-path "$NCCL_LIBDIR" > "$dir/triage.full.txt" 2>&1
  for core in "${cores[@]}"; do
    rank=$(basename "$core" .core)
    (
      "$NSC" state --core "$core" --exe "$exe" --solib-search-path "$NCCL_LIBDIR" --json > "$dir/$rank.state.json" 2> "$dir/$rank.state.err"
      "$NSC" slice "$core" -o "$dir/$rank.nccl.core" --exe "$exe" --solib-search-path "$NCCL_LIBDIR" > "$dir/$rank.slice.log" 2>&1
      # shellcheck disable=SC2046
      [ "${PYTHON_SLICES:-1}" = 1 ] && "$NSC" slice "$core" -o "$dir/$rank.python.core" --exe "$exe" --solib-search-path "$NCCL_LIBDIR" \
        $(python_regions "$dir/$rank.maps") >> "$dir/$rank.slice.log" 2>&1
      rm -f "$core"
    ) &
  done
  wait
  log "$scenario sliced: $(ls -s --block-size=1M "$dir"/*.nccl.core "$dir"/*.python.core 2>/dev/null | tr '\n' ' ')"
}

record_machine() {
  mkdir -p "$WORK/machine"
  { uname -a; nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; readlink -f "$PY";
    "$PY" -c 'import torch, sys; print(torch.__version__, torch.cuda.nccl.version(), sys.version)';
    sha256sum "$NCCL_LIBDIR/libnccl.so.2" "$(readlink -f "$PY")"; } > "$WORK/machine/machine.txt" 2>&1
  local torch_lib; torch_lib=$(dirname "$("$PY" -c 'import torch; print(torch.__file__)')")/lib
  { readelf -n "$torch_lib/libtorch_cuda.so" | grep -A1 'Build ID';
    nm -C "$torch_lib/libtorch_cuda.so" | grep -i 'FlightRecorder.*::get()::instance'; } > "$WORK/machine/libtorch_cuda.txt" 2>&1
  [ "${NO_BINARIES:-0}" = 1 ] || cp "$(readlink -f "$PY")" "$WORK/machine/" 2>/dev/null
  local cudart; cudart=$(ls "$(dirname "$torch_lib")"/../nvidia/cu*/lib/libcudart.so.* "$(dirname "$torch_lib")"/../nvidia/cuda_runtime/lib/libcudart.so.* 2>/dev/null | head -1)
  [ -n "$cudart" ] && [ "${NO_BINARIES:-0}" != 1 ] && cp "$cudart" "$WORK/machine/"
  echo "$cudart" >> "$WORK/machine/machine.txt"
}

# One tar per scenario of its ranks' slices as rank<R>.core, one xz stream (ranks share most
# pages): the python slices while the budget holds, else that scenario's NCCL slices.
pack_scenario() {  # SCENARIO python|nccl
  local dir=$WORK/$1 tmp=$WORK/pack-$1 f rank
  rm -rf "$tmp"; mkdir -p "$tmp"
  for f in "$dir"/rank*.nccl.core; do
    [ -f "$f" ] || continue
    rank=$(basename "$f" .nccl.core)
    if [ "$2" = python ] && [ -f "$dir/$rank.python.core" ]; then
      ln "$dir/$rank.python.core" "$tmp/$rank.core"; echo "$rank python $(stat -c %s "$tmp/$rank.core")"
    else
      ln "$f" "$tmp/$rank.core"; echo "$rank nccl $(stat -c %s "$tmp/$rank.core")"
    fi
  done > "$WORK/cores-out/$1.kinds.txt"
  [ -s "$WORK/cores-out/$1.kinds.txt" ] || { rm -f "$WORK/cores-out/$1.kinds.txt"; return; }
  (cd "$tmp" && tar -cf - rank*.core) | xz -9 -T4 > "$WORK/cores-out/$1.ranks.tar.xz"
  rm -rf "$tmp"
}

# Logs, truths, FR dumps and the full-core decodes always; then the cores, within BUDGET_BYTES.
pack() {
  local stage=$WORK/stage used scenario size
  mkdir -p "$stage" "$WORK/cores-out"
  cp -r "$WORK/machine" "$stage/"
  for scenario in "${SCENARIOS[@]}"; do
    local dir=$WORK/$scenario; mkdir -p "$stage/$scenario"
    cp "$dir"/*.log "$dir"/*.json "$dir"/*.txt "$dir"/*.time "$dir"/*.environ "$dir"/*.proc "$dir"/*.state "$dir"/*.pid \
       "$dir"/*.pkl "$dir"/*.err "$dir"/*.maps "$dir"/*.exit "$dir"/pt_fr_rank* "$stage/$scenario/" 2>/dev/null
    [ -d "$WORK/$scenario-gdb/gdb" ] && cp -r "$WORK/$scenario-gdb/gdb" "$stage/$scenario/"
  done
  tar -C "$stage" -cf "$WORK/meta.tar" . && xz -9 -T16 "$WORK/meta.tar"
  used=$(stat -c %s "$WORK/meta.tar.xz")
  for scenario in "${SCENARIOS[@]}"; do pack_scenario "$scenario" python & done
  wait
  for scenario in "${SCENARIOS[@]}"; do
    [ -f "$WORK/cores-out/$scenario.ranks.tar.xz" ] || continue
    size=$(stat -c %s "$WORK/cores-out/$scenario.ranks.tar.xz")
    if [ $((used + size)) -gt "$BUDGET_BYTES" ]; then
      pack_scenario "$scenario" nccl; size=$(stat -c %s "$WORK/cores-out/$scenario.ranks.tar.xz")
      [ $((used + size)) -gt "$BUDGET_BYTES" ] && { log "$scenario: over budget, cores left out"; rm -f "$WORK/cores-out/$scenario".*; continue; }
    fi
    used=$((used + size))
    echo "$scenario $size $(tr '\n' ' ' < "$WORK/cores-out/$scenario.kinds.txt")" >> "$WORK/sizes.txt"
  done
  cp "$WORK/sizes.txt" "$OUT/" 2>/dev/null
  # One file comes back at most 16 MiB: a larger meta travels in 15 MiB parts.
  if [ "$(stat -c %s "$WORK/meta.tar.xz")" -gt $((15 * 1048576)) ]; then
    split -b 15M -d "$WORK/meta.tar.xz" "$OUT/meta.tar.xz.part" && rm -f "$WORK/meta.tar.xz"
  else mv "$WORK/meta.tar.xz" "$OUT/"; fi
  tar -C "$WORK/cores-out" -cf - . | split -b 15M -d - "$OUT/cores.tar.part"
  log "packed: $((used / 1048576)) MiB"; cat "$WORK/sizes.txt"
  ls -l "$OUT"
}

run_scenario() {
  case $1 in crash-*) capture_crash "$1" ;; *) capture "$1" ;; esac
  process_scenario "$1"
}

main() {
  rm -rf "$WORK"; mkdir -p "$WORK/cores"
  # CORE_DIR given: the caller set core_pattern to CORE_DIR/core.%p (another capture runs beside).
  if [ -z "${CORE_DIR:-}" ]; then
    CORE_DIR=$WORK/cores
    SAVED_CORE_PATTERN=$(cat /proc/sys/kernel/core_pattern)
    trap 'echo "$SAVED_CORE_PATTERN" > /proc/sys/kernel/core_pattern' EXIT
    echo "$CORE_DIR/core.%p" > /proc/sys/kernel/core_pattern
  fi
  "$NSC" --version || log "WARNING: the carried ncclscope does not run"
  record_machine
  [ "${TORCH_MATERIAL:-1}" = 1 ] && torch_material
  case " ${SCENARIOS[*]} " in *" crash-"*) build_native ;; esac
  { strings "$(dirname "$("$PY" -c 'import torch; print(torch.__file__)')")/lib/libtorch_cuda.so" |
      grep -E 'TORCH_NCCL_(WAIT_TIMEOUT_DUMP_MILSEC|HEARTBEAT_TIMEOUT_SEC|ENABLE_MONITORING|ASYNC_ERROR_HANDLING|DUMP_ON_TIMEOUT)|slept for|First PG on this rank|Terminating the process after attempting|watchdog thread terminated with exception' |
      sort -u; } > "$WORK/machine/torch_teardown_strings.txt" 2>&1
  local scenario index=0
  # PARALLEL scenarios at once (each its own job, port and directory); capture, then slice.
  # SPIN_GDB_AFTER names the scenario the spin probe follows in the queue (default: the last).
  local queue=() name
  for name in "${SCENARIOS[@]}"; do
    queue+=("$name"); [ "$name" = "${SPIN_GDB_AFTER:-}" ] && queue+=(spin-gdb-probe)
  done
  [[ " ${queue[*]} " == *" spin-gdb-probe "* ]] || queue+=(spin-gdb-probe)
  for scenario in "${queue[@]}"; do
    while [ "$(jobs -rp | wc -l)" -ge "${PARALLEL:-1}" ]; do sleep 0.5; done
    [ "$scenario" = spin-gdb-probe ] && [ "${SPIN_GDB:-0}" != 1 ] && continue
    [ $SECONDS -gt "${CAPTURE_DEADLINE_S:-330}" ] && { log "deadline: $scenario not run"; continue; }
    index=$((index + 1))
    if [ "$scenario" = spin-gdb-probe ]; then
      PORT=$((29500 + 20 * index)) spin_gdb_probe &
    else
      PORT=$((29500 + 20 * index)) run_scenario "$scenario" &
    fi
    sleep 1
  done
  wait
  for scenario in "${SCENARIOS[@]}"; do
    log "$scenario: $(cat "$WORK/$scenario/capture.txt" 2>/dev/null)"
    if [ -f "$WORK/$scenario/triage.full.txt" ]; then head -c 1500 "$WORK/$scenario/triage.full.txt"; echo
    else "$PY" -c 'import json, sys; r = json.load(open(sys.argv[1])); print(r["verdict"], r["culprit_ranks"], r["suspect_ranks"], r.get("summary", "")[:600])' \
           "$WORK/$scenario/triage.full.json" 2>&1 | head -c 800; fi
  done
  pack
}
main
