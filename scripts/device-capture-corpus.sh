#!/usr/bin/env bash
# Capture real NCCL hang cores on the GPU machine (issue 3, item 2).  Runs there, from the
# repository root, with $OUT set by the device tool:
#
#   scripts/device-capture-corpus.sh [SCENARIO...]      (default: every scenario)
#
# Scenarios: skip-collective skip-collective-0x11 mismatched-collective mismatched-count
#            p2p-cycle cross-stream split-comm abort torch-allreduce
#
# Needs the scenario binary built elsewhere and carried (BIN, default
# .device-carry/nccl_hang_scenarios, rpath to the DWARF libnccl below).  For each scenario it
# starts both ranks with the chosen /proc/self/coredump_filter, waits for HANG_POINT_REACHED,
# lets the hang settle, kills every rank with SIGABRT and collects the kernel cores.  It never
# attaches a debugger (a debugged process dumps a much larger core) and never uses gcore.
#
# Only 64 MiB come back, so the first core of the run is xz'ed whole and every other core is a
# page delta (tests/scenarios/core_delta.py) against it and its scenario's rank 0, xz'ed too.
# Everything goes into one tar split into 15 MiB parts, lowest priority dropped first; logs,
# ground truth, maps, env and nvidia-smi go in logs.tar.xz.  A summary table ends the output.
#
# One GPU: both ranks share --device 0 with different NCCL_HOSTID, so NCCL sees two nodes and
# connects them through the socket NET transport (see docs/corpus.md).
set -uo pipefail

REPO=$(pwd)
: "${OUT:?OUT must name the folder whose files come back}"
BIN=${BIN:-$REPO/.device-carry/nccl_hang_scenarios}
PY=${PY:-/opt/torch/.venv/bin/python}
NCCL_LIBDIR=${NCCL_LIBDIR:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib}
WORK=${WORK:-/tmp/corpus}
CORE_DIR=$WORK/cores
HANG_TIMEOUT_S=${HANG_TIMEOUT_S:-45}
SETTLE_S=${SETTLE_S:-2}
PAYLOAD_BUDGET_MB=${PAYLOAD_BUDGET_MB:-62}
XZ_LEVEL=${XZ_LEVEL:-6}
DEVICE_INDEX=${DEVICE_INDEX:-0}
ALL_SCENARIOS=(skip-collective abort cross-stream split-comm mismatched-collective p2p-cycle
               mismatched-count skip-collective-0x11 torch-allreduce)
SCENARIOS=("$@")
[ ${#SCENARIOS[@]} -eq 0 ] && SCENARIOS=("${ALL_SCENARIOS[@]}")

log() { echo "[capture $(date +%T)] $*"; }

# The environment every rank shares: socket NET over loopback, no NVLink multicast.
export NCCL_IB_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0 \
       NCCL_DEBUG=${NCCL_DEBUG:-WARN} TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 \
       PYTHONUNBUFFERED=1 LD_LIBRARY_PATH=$NCCL_LIBDIR${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

record_machine() {
  mkdir -p "$WORK/logs"
  nvidia-smi > "$WORK/logs/nvidia-smi.txt" 2>&1
  nvidia-smi --query-gpu=name,driver_version,memory.total,pci.bus_id --format=csv \
    > "$WORK/logs/gpu.csv" 2>&1
  { uname -a; cat /proc/version; ulimit -a; cat /proc/sys/kernel/core_pattern;
    sha256sum "$NCCL_LIBDIR/libnccl.so.2" "$BIN"; "$PY" -c 'import torch; print(torch.__version__, torch.cuda.nccl.version())';
  } > "$WORK/logs/machine.txt" 2>&1
  env | sort > "$WORK/logs/env.txt"
}

setup_core_pattern() {
  mkdir -p "$CORE_DIR"
  echo "$CORE_DIR/core.%p" > /proc/sys/kernel/core_pattern 2>/dev/null \
    || log "WARNING: core_pattern not writable: $(cat /proc/sys/kernel/core_pattern)"
  log "core_pattern=$(cat /proc/sys/kernel/core_pattern)"
}

# scenario name -> "filter kind mode extra-args"
scenario_spec() {
  case $1 in
    skip-collective)       echo "0x33 cpp skip-collective" ;;
    skip-collective-0x11)  echo "0x11 cpp skip-collective" ;;
    mismatched-collective) echo "0x33 cpp mismatched-collective" ;;
    mismatched-count)      echo "0x33 cpp mismatched-count" ;;
    p2p-cycle)             echo "0x33 cpp p2p-cycle --count 4194304" ;;
    cross-stream)          echo "0x33 cpp cross-stream" ;;
    split-comm)            echo "0x33 cpp split-comm" ;;
    abort)                 echo "0x33 cpp abort" ;;
    torch-allreduce)       echo "0x33 torch -" ;;
    *) return 1 ;;
  esac
}

# Starts one rank in the background: coredump_filter and ulimit are set in a shell that
# then execs the program, so the rank's pid is $! and nothing else sits in its tree.
# Sets STARTED_PID (no command substitution: the rank must be a child of this shell).
start_rank() {
  local dir=$1 rank=$2 filter=$3 kind=$4 mode=$5; shift 5
  mkdir -p "$dir/rank$rank"
  local cmd
  if [ "$kind" = torch ]; then
    cmd=("$PY" "$REPO/tests/scenarios/torch_hang.py" --device "$DEVICE_INDEX")
  else
    cmd=("$BIN" --rank "$rank" --nranks 2 --id-file "$dir/nccl.id" --mode "$mode"
         --device "$DEVICE_INDEX" "$@")
  fi
  # TWO_GPUS=1: one rank per GPU on one host (real P2P/NVLink); else both ranks share
  # DEVICE_INDEX and differ in NCCL_HOSTID (see the header).
  local host_id=rank$rank-host
  if [ "${TWO_GPUS:-0}" = 1 ]; then
    host_id=${NCCL_HOSTID:-}
    [ "$kind" = torch ] && cmd=("$PY" "$REPO/tests/scenarios/torch_hang.py" --device "$rank")
    [ "$kind" = torch ] || cmd=("$BIN" --rank "$rank" --nranks 2 --id-file "$dir/nccl.id" --mode "$mode"
                                 --device "$rank" "$@")
  fi
  echo "coredump_filter=$filter NCCL_HOSTID=$host_id RANK=$rank ${cmd[*]}" >> "$dir/command.txt"
  NCCL_HOSTID=$host_id RANK=$rank WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29531 \
    bash -c 'echo "$0" > /proc/self/coredump_filter && ulimit -c unlimited && cd "$1" && shift && exec "$@"' \
    "$filter" "$dir/rank$rank" "${cmd[@]}" > "$dir/rank$rank.log" 2>&1 &
  STARTED_PID=$!
}

# Waits until every rank printed HANG_POINT_REACHED (or died); echoes "reached" or "timeout".
wait_for_hang_points() {
  local dir=$1; shift
  local deadline=$((SECONDS + HANG_TIMEOUT_S)) rank pid ready
  while [ $SECONDS -lt $deadline ]; do
    ready=1
    for rank in 0 1; do
      pid=${1}; [ $rank = 1 ] && pid=$2
      grep -q HANG_POINT_REACHED "$dir/rank$rank.log" 2>/dev/null && continue
      kill -0 "$pid" 2>/dev/null || continue   # died: nothing more to wait for
      ready=0
    done
    [ $ready = 1 ] && { echo reached; return; }
    sleep 0.5
  done
  echo timeout
}

# A zombie still answers kill -0, so read the state letter: gone or Z means the dump is done.
wait_for_exit() {
  local pid=$1 limit_s=$2 deadline state
  deadline=$((SECONDS + limit_s))
  while [ $SECONDS -lt $deadline ]; do
    state=$(awk '{print $3}' /proc/$pid/stat 2>/dev/null)
    [ -z "$state" ] || [ "$state" = Z ] && return 0
    sleep 0.2
  done
  return 1
}

capture_scenario() {
  local name=$1 spec filter kind mode
  spec=$(scenario_spec "$name") || { log "unknown scenario $name"; return; }
  read -r filter kind mode extra <<< "$spec"
  local dir=$WORK/$name; rm -rf "$dir"; mkdir -p "$dir"
  local t0=$SECONDS pid0 pid1
  start_rank "$dir" 0 "$filter" "$kind" "$mode" $extra; pid0=$STARTED_PID
  start_rank "$dir" 1 "$filter" "$kind" "$mode" $extra; pid1=$STARTED_PID
  local state; state=$(wait_for_hang_points "$dir" "$pid0" "$pid1")
  sleep "$SETTLE_S"
  local rank pid
  for rank in 0 1; do
    pid=$pid0; [ $rank = 1 ] && pid=$pid1
    echo "$pid" > "$dir/rank$rank.pid"
    if kill -0 "$pid" 2>/dev/null; then
      cp /proc/$pid/maps "$dir/rank$rank.maps" 2>/dev/null
      { cat /proc/$pid/status; for t in /proc/$pid/task/*; do
          echo "$t $(cat $t/comm) wchan=$(cat $t/wchan 2>/dev/null)"; done; } > "$dir/rank$rank.proc" 2>&1
      echo alive > "$dir/rank$rank.state"
    else
      echo exited > "$dir/rank$rank.state"
    fi
  done
  kill -ABRT "$pid0" "$pid1" 2>/dev/null
  for rank in 0 1; do
    pid=$pid0; [ $rank = 1 ] && pid=$pid1
    wait_for_exit "$pid" 90 || { log "$name rank$rank: no exit 90 s after SIGABRT; SIGKILL";
                                 kill -KILL "$pid" 2>/dev/null; }
    wait "$pid"; echo "exit=$?" >> "$dir/rank$rank.state"
    local core=$CORE_DIR/core.$pid
    [ -f "$core" ] || core=$(ls "$dir/rank$rank"/core* 2>/dev/null | head -1)
    if [ -n "$core" ] && [ -f "$core" ]; then
      mv "$core" "$dir/rank$rank.core"
    fi
    grep -h '^GROUND_TRUTH ' "$dir/rank$rank.log" | sed 's/^GROUND_TRUTH //' > "$dir/rank$rank.ground_truth.json"
  done
  echo "$state $((SECONDS - t0))s filter=$filter" > "$dir/capture.txt"
  log "$name: $state in $((SECONDS - t0)) s; cores: $(ls -s --block-size=1M "$dir"/*.core 2>/dev/null | tr '\n' ' ')"
}

# One core: the run's base goes whole; any other is a page delta against the base (and its
# scenario's rank 0), so its literal pages alone reach xz.  Writes a manifest line per core.
pack_one() {
  local name=$1 rank=$2 base=$3 packed=$WORK/packed
  local core=$WORK/$name/rank$rank.core raw sha xzfull
  raw=$(stat -c %s "$core"); sha=$(sha256sum "$core" | cut -d' ' -f1)
  if [ -n "${SLICER:-}" ]; then  # slice on this machine: only what the decoders read travels
    local exe=$BIN; [ "$(scenario_spec "$name" | cut -d' ' -f2)" = torch ] && exe=$(readlink -f "$PY")
    "$SLICER" slice "$core" -o "$core.sliced" --exe "$exe" --solib-search-path "$NCCL_LIBDIR" \
      >> "$WORK/logs/slice.log" 2>&1
    xz -9 -T2 -c "$core.sliced" > "$packed/$name.rank$rank.core.xz"
    echo "$name rank$rank $raw - sliced $(stat -c %s "$packed/$name.rank$rank.core.xz") $sha -" \
      > "$WORK/manifest.$name.$rank"
    return
  fi
  if [ "$core" = "$base" ]; then
    xz -"$XZ_LEVEL" -T8 -c "$core" > "$packed/$name.rank$rank.core.xz"
    xzfull=$(stat -c %s "$packed/$name.rank$rank.core.xz")
    echo "$name rank$rank $raw $xzfull full $xzfull $sha -" > "$WORK/manifest.$name.$rank"
    return
  fi
  xzfull=-  # for the record: the whole core's xz size (MEASURE_XZ=0 saves device time)
  [ "${MEASURE_XZ:-1}" = 1 ] && xzfull=$(xz -"$XZ_LEVEL" -T2 -c "$core" | wc -c)
  local bases=("$base") basenames="BASE"
  if [ "$rank" = 1 ] && [ -f "$WORK/$name/rank0.core" ] && [ "$WORK/$name/rank0.core" != "$base" ]; then
    bases+=("$WORK/$name/rank0.core"); basenames="BASE,$name.rank0"
  fi
  "$PY" "$REPO/tests/scenarios/core_delta.py" encode "$WORK/$name.$rank.delta" "$core" "${bases[@]}" \
    > "$WORK/delta.$name.$rank.log"
  xz -"$XZ_LEVEL" -T2 -c "$WORK/$name.$rank.delta" > "$packed/$name.rank$rank.delta.xz"
  rm -f "$WORK/$name.$rank.delta"
  echo "$name rank$rank $raw $xzfull delta $(stat -c %s "$packed/$name.rank$rank.delta.xz") $sha $basenames" \
    > "$WORK/manifest.$name.$rank"
}

# The base must come back whole, so it is the smallest core of a scenario program: a PyTorch
# rank core (1.5 GB, 340 MB xz) as base once made every delta of a run useless.
choose_base() {
  local name rank core best="" best_size=0 size
  for pass in cpp any; do
    for name in "${SCENARIOS[@]}"; do
      [ $pass = cpp ] && [ "$(scenario_spec "$name" | cut -d' ' -f2)" != cpp ] && continue
      for rank in 0 1; do
        core=$WORK/$name/rank$rank.core
        [ -f "$core" ] || continue
        size=$(stat -c %s "$core")
        if [ -z "$best" ] || [ "$size" -lt "$best_size" ]; then best=$core; best_size=$size; fi
      done
    done
    [ -n "$best" ] && break
  done
  echo "$best"
}

pack_cores() {
  local base name rank
  mkdir -p "$WORK/packed"
  base=$(choose_base)
  for name in "${SCENARIOS[@]}"; do
    for rank in 0 1; do
      [ -f "$WORK/$name/rank$rank.core" ] || continue
      while [ "$(jobs -rp | wc -l)" -ge 6 ]; do sleep 0.5; done
      pack_one "$name" "$rank" "$base" &
    done
  done
  wait
  echo "$base" > "$WORK/base_core.txt"
  for name in "${SCENARIOS[@]}"; do
    for rank in 0 1; do
      cat "$WORK/manifest.$name.$rank" >> "$WORK/manifest.txt" 2>/dev/null
      cat "$WORK/delta.$name.$rank.log" >> "$WORK/logs/delta.log" 2>/dev/null
    done
  done
}

# Logs always come back; packed cores go in priority order until the budget is spent.
ship() {
  local dir name budget=${PAYLOAD_BUDGET_BYTES:-$((PAYLOAD_BUDGET_MB * 1024 * 1024))} used=0 size f
  for name in "${SCENARIOS[@]}"; do
    dir=$WORK/$name; [ -d "$dir" ] || continue
    mkdir -p "$WORK/logs/$name"
    cp "$dir"/*.log "$dir"/*.json "$dir"/*.txt "$dir"/*.maps "$dir"/*.proc "$dir"/*.state "$dir"/*.pid \
      "$WORK/logs/$name/" 2>/dev/null
  done
  cp "$WORK/manifest.txt" "$WORK/logs/" 2>/dev/null
  mkdir -p "$WORK/ship"
  # The base goes first; a delta goes only when every core it refers to went too.
  local ordered=() line how bases
  for f in "$WORK/packed"/*.core.xz; do [ -f "$f" ] && ordered+=("$f"); done
  for name in "${SCENARIOS[@]}"; do
    for f in "$WORK/packed/$name".rank0.delta.xz "$WORK/packed/$name".rank1.delta.xz; do
      [ -f "$f" ] && ordered+=("$f")
    done
  done
  for f in "${ordered[@]}"; do
    size=$(stat -c %s "$f")
    name=$(basename "$f"); name=${name%%.rank*}
    line=$(grep "^$name rank$(basename "$f" | sed 's/.*\.rank\([01]\)\..*/\1/') " "$WORK/manifest.txt")
    bases=$(echo "$line" | cut -d' ' -f8)
    if [[ $bases == BASE* ]] && [ -z "$(ls "$WORK/ship"/*.core.xz 2>/dev/null)" ]; then
      echo "left behind: $(basename "$f") $size (base did not fit)" >> "$WORK/logs/left_behind.txt"; continue
    fi
    if [[ $bases == *",$name.rank0" ]] && [ -z "$(ls "$WORK/ship/$name".rank0.* 2>/dev/null)" ]; then
      echo "left behind: $(basename "$f") $size (its rank 0 did not fit)" >> "$WORK/logs/left_behind.txt"; continue
    fi
    if [ $((used + size)) -le $budget ]; then
      mv "$f" "$WORK/ship/"; used=$((used + size))
    else
      echo "left behind: $(basename "$f") $size" >> "$WORK/logs/left_behind.txt"
    fi
  done
  summary | tee "$WORK/logs/summary.txt"
  tar -C "$WORK" -cJf "$OUT/logs.tar.xz" logs
  if [ -n "$(ls "$WORK/ship")" ]; then
    tar -C "$WORK/ship" -cf - . | split -b 15M -d - "$OUT/cores.tar.part"
  fi
  ls -l "$OUT"
}

summary() {
  printf '%-22s %-5s %-14s %-10s %-9s %9s %9s %-6s %9s\n' scenario rank hang state exit raw_MB xz_MB packed shipped_MB
  local name rank line
  for name in "${SCENARIOS[@]}"; do
    for rank in 0 1; do
      local dir=$WORK/$name raw=- xzs=- how=- shipped=- st exitc hang
      hang=$(cut -d' ' -f1 "$dir/capture.txt" 2>/dev/null)
      st=$(head -1 "$dir/rank$rank.state" 2>/dev/null)
      exitc=$(grep -o 'exit=[0-9]*' "$dir/rank$rank.state" 2>/dev/null | cut -d= -f2)
      line=$(grep "^$name rank$rank " "$WORK/manifest.txt" 2>/dev/null)
      if [ -n "$line" ]; then
        read -r _ _ raw xzs how packedsz _ <<< "$line"
        raw=$((raw / 1048576)); [ "$xzs" != - ] && xzs=$(awk "BEGIN{printf \"%.1f\", $xzs/1048576}")
        ls "$WORK/ship/$name.rank$rank".* >/dev/null 2>&1 \
          && shipped=$(awk "BEGIN{printf \"%.1f\", $packedsz/1048576}")
      fi
      printf '%-22s %-5s %-14s %-10s %-9s %9s %9s %-6s %9s\n' "$name" "$rank" "${hang:--}" \
        "${st:--}" "${exitc:--}" "$raw" "$xzs" "$how" "$shipped"
    done
  done
}

main() {
  SAVED_CORE_PATTERN=$(cat /proc/sys/kernel/core_pattern)
  trap 'echo "$SAVED_CORE_PATTERN" > /proc/sys/kernel/core_pattern 2>/dev/null' EXIT
  rm -rf "$WORK"; mkdir -p "$WORK/logs"
  [ -x "$BIN" ] || log "WARNING: no scenario binary at $BIN"
  record_machine
  setup_core_pattern
  local name
  for name in "${SCENARIOS[@]}"; do
    # Leave time to pack: a scenario that would start too late is skipped, not half-run.
    if [ $SECONDS -gt "${CAPTURE_DEADLINE_S:-330}" ]; then log "skipping $name: out of time"; continue; fi
    capture_scenario "$name"
  done
  log "captures done at ${SECONDS}s; packing"
  pack_cores
  log "packing done at ${SECONDS}s"
  ship
  log "total ${SECONDS}s"
}

main
