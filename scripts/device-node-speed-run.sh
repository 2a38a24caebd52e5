#!/usr/bin/env bash
# Issue 35 item 1 in one GPU-machine call: how fast `ncclscope triage --pid` answers for a hung
# node, live, on real jobs of three frameworks sharing the one GPU:
#   8 PyTorch ranks  tests/scenarios/torch_multigroup.py ppdp-skip-send (PP 4 x DP 2, NCCL, one
#                    NCCL_HOSTID per rank: socket NET transport; flight recorder on, as shipped)
#   2 JAX processes  tests/scenarios/jax_hang.py (XLA's NCCL all-gather, process 1 skips one)
#   2 CuPy processes tests/scenarios/cupy_hang.py (cupy.cuda.nccl allReduce, rank 1 skips one)
# Sets timed: torch8, jax1 (the waiting JAX process), jax2, cupy2, node (every process above).
# Tools, on the same processes in the same run: ncclscope triage --pid ... (best of 3, wall and
# CPU of that run), eu-stack -p and py-spy dump --pid of each process in turn (1 run each, when
# installed; eu-stack also from .device-carry/bin). Goals (issue 35): torch8 < 0.5 s, jax1 < 0.3 s.
#
#   timeout 560 bash scripts/device-node-speed-run.sh   (from the repo root, $OUT set; it also
#   guards itself with TOTAL_S, default 540 s), carrying .device-carry/:
#     bin/ncclscope (stripped), lib/{libdw.so.1,libelf.so.1}, optional bin/eu-stack (Debian's,
#     runs on the carried libdw/libelf):  cp /usr/bin/eu-stack .device-carry/bin/, optional
#     bin/ncclscope-base (an older build, stripped: timed beside bin/ncclscope on torch8 and jax1,
#     same processes, same call; its row's "vs ncclscope" column is old / new)
# Env: TORCH_PYTHON (default /opt/torch/.venv/bin/python), JAX_PYTHON, CUPY_PYTHON (default the
# same), READY_S (120: wait for every rank's HANG_POINT_REACHED), TIMING_S (280: every timing ends
# by then; a measurement that no longer fits is "not timed"), RUNS (3), CORES (1: then the torch
# ranks and the waiting JAX process get SIGABRT and their cores are timed the same way, within
# CORE_TIMING_S, 150), STEPS ("torch8 ncclscope;jax1 ncclscope": only these measurements),
# TIMINGS (1: each set also run with NCCLSCOPE_TIMINGS=1, its phases per rank in timings-*.txt,
# twice right after the hang and twice after the other timings; under perf when the machine has
# it), COMPARE (1: every process's frames against eu-stack's, and with bin/ncclscope-base against
# the old build's read, compare.txt), HUGEPAGE_AB (1: triage with and without its huge-page heap,
# alternating, with /proc/vmstat's compaction counters, hugepage-ab.txt).
# Out ($OUT, 2 files): node-speed.md (the table, machine, load) and node-speed.tar.xz (rank logs,
# each set's first triage text, raw timings). Every process it started is killed at exit (trap).
if [ -z "${NODE_SPEED_INNER:-}" ]; then
  NODE_SPEED_INNER=1 exec timeout -k 10 "${TOTAL_S:-540}" bash "$0" "$@"
fi
set -uo pipefail
: "${OUT:?OUT must name the folder whose files come back}"
REPO=$(pwd); CARRY=$REPO/.device-carry
wrap() {  # BINARY [ENV=VALUE]: prints the path of a script that runs it on the carried libdw/libelf
  cat > "$1-run" <<SH
#!/bin/sh
LD_LIBRARY_PATH=$CARRY/lib ${2:-} exec $1 "\$@"
SH
  chmod +x "$1-run" "$1"; echo "$1-run"
}
NSC=$(wrap "$CARRY/bin/ncclscope")
# An older build looks for its shipped profiles where it was built: point it at this checkout's.
NSC_BASE=; [ -f "$CARRY/bin/ncclscope-base" ] && NSC_BASE=$(wrap "$CARRY/bin/ncclscope-base" "NCCLSCOPE_PROFILE_PATH=$REPO/native/profiles")
PY=${TORCH_PYTHON:-/opt/torch/.venv/bin/python}; JAX_PY=${JAX_PYTHON:-$PY}; CUPY_PY=${CUPY_PYTHON:-$PY}
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=WARN NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 \
       TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 XLA_PYTHON_CLIENT_PREALLOCATE=false MASTER_ADDR=127.0.0.1
W=/tmp/node-speed; R=$W/out; rm -rf "$W"; mkdir -p "$R" "$W/torch"
log() { echo "[node-speed $(date +%T) ${SECONDS}s] $*" | tee -a "$R/run.log"; }

ALL_PIDS=()
cleanup() { local pid; for pid in "${ALL_PIDS[@]}"; do kill -9 "$pid" 2>/dev/null; done; wait 2>/dev/null; }
trap cleanup EXIT
trap 'exit 124' TERM INT

declare -A GROUP_PIDS  # group -> "pid pid ..." in rank order
start_rank() {  # GROUP RANK LOG PYTHON ARGS... (env set by the caller)
  local group=$1 rank=$2 logfile=$3; shift 3
  # Core-ready (the core phase below): ulimit -c, coredump_filter 0x33; exec keeps the pid.
  bash -c 'ulimit -c unlimited; echo 0x33 > /proc/self/coredump_filter; exec "$@"' _ "$@" > "$logfile" 2>&1 &
  ALL_PIDS+=($!); GROUP_PIDS[$group]="${GROUP_PIDS[$group]:-} $!"
}
start_torch() {
  local rank port=$((29600 + RANDOM % 300))
  for rank in 0 1 2 3 4 5 6 7; do
    NCCL_HOSTID=nsc-speed-torch-$rank RANK=$rank LOCAL_RANK=0 WORLD_SIZE=8 MASTER_PORT=$port \
      start_rank torch $rank "$W/torch-rank$rank.log" "$PY" "$REPO/tests/scenarios/torch_multigroup.py" \
      --scenario ppdp-skip-send --fr-dump-dir "$W/torch"
  done
}
start_jax() {
  local rank port=$((30000 + RANDOM % 300))
  for rank in 0 1; do
    NCCL_HOSTID=nsc-speed-jax-$rank RANK=$rank WORLD_SIZE=2 MASTER_PORT=$port \
      start_rank jax $rank "$W/jax-rank$rank.log" "$JAX_PY" "$REPO/tests/scenarios/jax_hang.py"
  done
}
start_cupy() {
  local rank
  for rank in 0 1; do
    NCCL_HOSTID=nsc-speed-cupy-$rank RANK=$rank WORLD_SIZE=2 \
      start_rank cupy $rank "$W/cupy-rank$rank.log" "$CUPY_PY" "$REPO/tests/scenarios/cupy_hang.py" --id-file "$W/cupy.id"
  done
}

ready() {  # GROUP: every rank printed HANG_POINT_REACHED and is alive
  local pid log count=0 n=0
  for pid in ${GROUP_PIDS[$1]}; do
    log=$W/$1-rank$n.log; n=$((n + 1))
    kill -0 "$pid" 2>/dev/null && grep -q HANG_POINT_REACHED "$log" && count=$((count + 1))
  done
  [ "$count" -eq "$n" ]
}

{ nvidia-smi -L; nproc; timeout "${PROBE_S:-60}" "$PY" -c 'import torch; print("torch", torch.__version__)'; "$NSC" --version
  command -v eu-stack || ls "$CARRY/bin/eu-stack"; command -v py-spy || ls "$(dirname "$PY")/py-spy"; } > "$R/machine.txt" 2>&1
start_cupy; start_jax; start_torch
declare -A READY=([none]="")  # never empty: older bash calls an empty array unbound under set -u
deadline=$((SECONDS + ${READY_S:-120})) nready=0
while [ $SECONDS -lt $deadline ]; do
  for group in torch jax cupy; do
    [ -z "${READY[$group]:-}" ] && ready $group && READY[$group]=1 && nready=$((nready + 1)) && log "$group: every rank at its hang point"
  done
  [ $nready -eq 3 ] && break
  sleep 1
done
for group in torch jax cupy; do
  [ -n "${READY[$group]:-}" ] || log "$group NOT READY after ${READY_S:-120} s: $(tail -q -n 2 "$W/$group"-rank*.log | tr '\n' ' ' | cut -c1-400)"
done
sleep 3  # the torch ranks' flight-recorder dump thread (3 s), NCCL kernels resident

# The sets, each "pid pid ...", only of groups that are ready.
declare -A SET=([none]="")
[ -n "${READY[torch]:-}" ] && SET[torch8]=${GROUP_PIDS[torch]}
if [ -n "${READY[jax]:-}" ]; then SET[jax2]=${GROUP_PIDS[jax]}; SET[jax1]=$(echo "${GROUP_PIDS[jax]}" | awk '{print $1}'); fi
[ -n "${READY[cupy]:-}" ] && SET[cupy2]=${GROUP_PIDS[cupy]}
node=""; for group in torch jax cupy; do [ -n "${READY[$group]:-}" ] && node="$node ${GROUP_PIDS[$group]}"; done
[ -n "$node" ] && SET[node]=$node

EU=$(command -v eu-stack || { [ -x "$CARRY/bin/eu-stack" ] && echo "$CARRY/bin/eu-stack"; })
EU_LIBS=; [ "$EU" = "$CARRY/bin/eu-stack" ] && EU_LIBS=$CARRY/lib  # the carried one runs on the carried libdw
PYSPY=$(command -v py-spy || { [ -x "$(dirname "$PY")/py-spy" ] && echo "$(dirname "$PY")/py-spy"; })
TIMING_END=$((SECONDS + ${TIMING_S:-280}))
threads_of() { local pid n=0; for pid in $1; do n=$((n + $(ls "/proc/$pid/task" 2>/dev/null | wc -l))); done; echo $n; }

measure() {  # SET TOOL
  local set=$1 tool=$2 pids=${SET[$1]:-} left limit runs=1 args=() pid binary
  [ -n "$pids" ] || return 0
  left=$((TIMING_END - SECONDS))
  if [ "$left" -lt 5 ]; then echo "$set|$tool|not timed: the ${TIMING_S:-280} s timing box is spent" >> "$R/results.txt"; return; fi
  case $tool in
    ncclscope|ncclscope-base) for pid in $pids; do args+=(--pid "$pid"); done
               binary=$NSC; [ "$tool" = ncclscope-base ] && binary=$NSC_BASE
               set -- "$binary" triage "${args[@]}"; runs=${RUNS:-3}; limit=60 ;;
    eu-stack) [ -n "$EU" ] || { echo "$set|$tool|not installed" >> "$R/results.txt"; return; }
              set -- env LD_LIBRARY_PATH="$EU_LIBS" sh -c 'for p; do "$0" -p "$p"; done' "$EU" $pids; limit=120 ;;
    py-spy) [ -n "$PYSPY" ] || { echo "$set|$tool|not installed" >> "$R/results.txt"; return; }
            set -- sh -c 'for p; do "$0" dump --pid "$p"; done' "$PYSPY" $pids; limit=120 ;;
  esac
  [ "$limit" -gt "$left" ] && limit=$left
  local timing
  timing=$(python3 "$REPO/scripts/time_best.py" --runs "$runs" --timeout "$limit" --stop-after 20 \
    --out "$R/$tool-$set.txt" -- "$@")
  echo "$set|$tool|$(wc -w <<< "$pids")|$(threads_of "$pids")|$(cut -d' ' -f1 /proc/loadavg)|$timing" >> "$R/results.txt"
  log "$tool $set: $timing"
}

: > "$R/results.txt"
log "timing (load $(cut -d' ' -f1-3 /proc/loadavg)); sets: ${!SET[*]}"
base_steps=(); [ -n "$NSC_BASE" ] && base_steps=("torch8 ncclscope-base" "jax1 ncclscope-base")
# Where the time goes (TIMINGS=1): each phase of each rank, NCCLSCOPE_TIMINGS=1 on stderr.
phase_timings() {  # WHEN SET [ARGS...]: inputs are the set's pids, or its cores when SET ends in -cores
  local when=$1 set=$2 args=() input; shift 2
  if [[ $set == *-cores ]]; then for input in ${CORE_SET[$set]:-}; do args+=("$input"); done; args+=(--exe "$PY_EXE")
  else for input in ${SET[$set]:-}; do args+=(--pid "$input"); done; fi
  [ ${#args[@]} -gt 0 ] || return 0
  local n tag=$when-$set${1:+-$(echo "$*" | tr -c 'a-z0-9' -)}
  for n in 1 2; do
    { TIMEFORMAT="wall %R s user %U s sys %S s"; time NCCLSCOPE_TIMINGS=1 "$NSC" triage "${args[@]}" "$@" \
      > /dev/null 2> "$R/timings-$tag-$n.txt"; } 2>> "$R/timings-$tag-$n.txt"
    log "timings $tag run $n: $(tail -1 "$R/timings-$tag-$n.txt")"
  done
}
# Huge pages on a node that just hung (HUGEPAGE_AB=1): triage's heap on transparent huge pages (its
# re-exec with GLIBC_TUNABLES; the default) against plain pages (GLIBC_TUNABLES set: no re-exec),
# alternating, each run's wall, analysis phases and the kernel's compaction counters (/proc/vmstat).
hugepage_ab() {  # SET
  local set=$1 args=() pid n variant before after
  for pid in ${SET[$set]:-}; do args+=(--pid "$pid"); done
  [ ${#args[@]} -gt 0 ] || return 0
  for n in 1 2 3; do
    for variant in huge plain; do
      before=$(grep -E '^(compact_stall|thp_fault_alloc|thp_fault_fallback) ' /proc/vmstat | awk '{printf "%s ", $2}')
      { TIMEFORMAT="wall %R s user %U s sys %S s"
        if [ $variant = plain ]; then time GLIBC_TUNABLES=glibc.malloc.check=0 NCCLSCOPE_TIMINGS=1 "$NSC" triage "${args[@]}" > /dev/null 2> "$R/hugepage-$set-$variant-$n.txt"
        else time NCCLSCOPE_TIMINGS=1 "$NSC" triage "${args[@]}" > /dev/null 2> "$R/hugepage-$set-$variant-$n.txt"; fi
      } 2>> "$R/hugepage-$set-$variant-$n.txt"
      after=$(grep -E '^(compact_stall|thp_fault_alloc|thp_fault_fallback) ' /proc/vmstat | awk '{printf "%s ", $2}')
      echo "$set $variant $n: $(tail -1 "$R/hugepage-$set-$variant-$n.txt"); $(grep -E '^  (triage.analysis|triage.stack_classes|stacks.index_build) ' "$R/hugepage-$set-$variant-$n.txt" | awk '{printf "%s %s ms; ", $1, $2}') vmstat compact_stall thp_fault_alloc thp_fault_fallback: $before-> $after" >> "$R/hugepage-ab.txt"
    done
  done
}
if [ "${HUGEPAGE_AB:-0}" = 1 ]; then
  { for f in enabled defrag; do echo "thp $f: $(cat /sys/kernel/mm/transparent_hugepage/$f)"; done; } >> "$R/hugepage-ab.txt"
  hugepage_ab torch8; hugepage_ab jax1
  cat "$R/hugepage-ab.txt"
fi
# The first runs on a node that just hung are the slow ones (cold page cache, settling jobs):
# their phases too, before anything else reads the processes.
[ "${TIMINGS:-0}" = 1 ] && { phase_timings early torch8; phase_timings early jax1; }
steps=("torch8 ncclscope" "jax1 ncclscope" "${base_steps[@]}" "node ncclscope" "jax2 ncclscope" "cupy2 ncclscope"
       "torch8 eu-stack" "jax1 eu-stack" "torch8 py-spy" "jax1 py-spy" "cupy2 eu-stack" "cupy2 py-spy"
       "node eu-stack" "node py-spy")
[ -n "${STEPS:-}" ] && IFS=';' read -ra steps <<< "$STEPS"
for step in "${steps[@]}"; do
  measure $step
done
# Same frames (COMPARE=1): `state --pid P --stacks --json` of every process, each thread's frames
# against eu-stack's of the node set (by thread and pc) and, with bin/ncclscope-base, against the
# old build's read of the same process (compare_stacks.py; compare.txt).
if [ "${COMPARE:-0}" = 1 ]; then
  mkdir -p "$R/compare"; : > "$R/compare.txt"
  for pid in ${SET[node]:-}; do
    "$NSC" state --pid "$pid" --stacks --json > "$R/compare/$pid.new.json" 2>/dev/null
    [ -n "$NSC_BASE" ] || continue
    "$NSC_BASE" state --pid "$pid" --stacks --json > "$R/compare/$pid.old.json" 2>/dev/null
    python3 "$REPO/scripts/compare_stacks.py" --label "pid $pid" "$R/compare/$pid.old.json" "$R/compare/$pid.new.json" \
      >> "$R/compare.txt"
  done
  [ -n "$NSC_BASE" ] && log "frames, old build against new: $(grep -c ' 0 threads differ' "$R/compare.txt") of $(grep -c '^pid' "$R/compare.txt") processes equal"
  [ -f "$R/eu-stack-node.txt" ] && python3 "$REPO/scripts/compare_stacks.py" --eu-stack "$R/eu-stack-node.txt" "$R"/compare/*.new.json \
    | sed 's/^/eu-stack: /' >> "$R/compare.txt"
  cat "$R/compare.txt"
fi
if [ "${TIMINGS:-0}" = 1 ]; then
  log "startup: $( { TIMEFORMAT='%R s'; time "$NSC" triage --help > /dev/null; } 2>&1 | tail -1) (triage --help, with its re-exec)"
  phase_timings late torch8; phase_timings late torch8 --jobs 1; phase_timings late jax1
  n=0; mkdir -p "$R/snapshots"  # each torch rank's state, to replay the analysis elsewhere
  for pid in ${SET[torch8]:-}; do "$NSC" state --pid "$pid" --stacks --json > "$R/snapshots/rank$n.json" 2>/dev/null; n=$((n + 1)); done
  if command -v perf > /dev/null && [ -n "${SET[torch8]:-}" ]; then
    perf_args=(); for pid in ${SET[torch8]}; do perf_args+=(--pid "$pid"); done
    perf record -g -o "$R/perf-torch8.data" "$NSC" triage "${perf_args[@]}" > /dev/null 2>&1 &&
      perf report -i "$R/perf-torch8.data" --no-children --stdio 2>/dev/null | head -200 > "$R/perf-torch8.txt"
    rm -f "$R/perf-torch8.data"
  else log "perf: not installed"; fi
fi
# Cores the same (issue 35 item 1): the torch ranks and the waiting JAX process get SIGABRT
# (started with ulimit -c unlimited, coredump_filter 0x33); `ncclscope triage` of the 8 torch
# cores and of the JAX core, best of RUNS, beside `eu-stack --core` of each in turn.
core_phase() {
  [ "${CORES:-1}" = 1 ] || return 0
  local set pid core cores=() deadline
  mkdir -p /tmp/cores; echo '/tmp/cores/core.%p' > /proc/sys/kernel/core_pattern
  for set in torch8 jax1; do for pid in ${SET[$set]:-}; do kill -ABRT "$pid" 2>/dev/null; done; done
  deadline=$((SECONDS + ${CORE_WAIT_S:-90}))
  for set in torch8 jax1; do
    for pid in ${SET[$set]:-}; do
      while kill -0 "$pid" 2>/dev/null && [ $SECONDS -lt $deadline ]; do sleep 0.5; done
    done
  done
  log "cores: $(ls -l /tmp/cores | awk 'NR > 1 {printf "%s %d MB; ", $NF, $5 / 1048576}')"
  for set in torch8 jax1; do
    cores=(); for pid in ${SET[$set]:-}; do [ -f "/tmp/cores/core.$pid" ] && cores+=("/tmp/cores/core.$pid"); done
    [ ${#cores[@]} -gt 0 ] || continue
    CORE_SET[$set-cores]="${cores[*]}"
  done
  TIMING_END=$((SECONDS + ${CORE_TIMING_S:-150}))
  for step in "torch8-cores ncclscope" "jax1-cores ncclscope" "torch8-cores eu-stack" "jax1-cores eu-stack"; do
    measure_cores $step
  done
}

measure_cores() {  # SET TOOL
  local set=$1 tool=$2 cores=${CORE_SET[$1]:-} left limit runs=1 timing
  [ -n "$cores" ] || return 0
  left=$((TIMING_END - SECONDS))
  if [ "$left" -lt 5 ]; then echo "$set|$tool|not timed: the core timing box is spent" >> "$R/results.txt"; return; fi
  case $tool in
    ncclscope) set -- "$NSC" triage $cores --exe "$PY_EXE"; runs=${RUNS:-3}; limit=60 ;;
    eu-stack) [ -n "$EU" ] || { echo "$set|$tool|not installed" >> "$R/results.txt"; return; }
              set -- env LD_LIBRARY_PATH="$EU_LIBS" sh -c 'exe=$1; shift; for c; do "$0" --core="$c" -e "$exe"; done' "$EU" "$PY_EXE" $cores
              limit=120 ;;
  esac
  [ "$limit" -gt "$left" ] && limit=$left
  timing=$(python3 "$REPO/scripts/time_best.py" --runs "$runs" --timeout "$limit" --stop-after 20 \
    --out "$R/$tool-$set.txt" -- "$@")
  echo "$set|$tool|$(wc -w <<< "$cores")|cores|$(cut -d' ' -f1 /proc/loadavg)|$timing" >> "$R/results.txt"
  log "$tool $set: $timing"
}
declare -A CORE_SET=([none]="")
PY_EXE=$(readlink -f "$PY")
core_phase
if [ "${TIMINGS:-0}" = 1 ]; then phase_timings late torch8-cores; phase_timings late jax1-cores; fi

for set in torch8 jax1 cupy2 torch8-cores jax1-cores; do [ -f "$R/ncclscope-$set.txt" ] && { echo "== triage of $set:"; head -3 "$R/ncclscope-$set.txt"; }; done

python3 - "$R/results.txt" "$R/machine.txt" > "$OUT/node-speed.md" <<'PY'
import json, sys
goals = {"torch8": 0.5, "jax1": 0.3, "torch8-cores": 0.5, "jax1-cores": 0.3}
rows, best = [], {}
for line in open(sys.argv[1]):
    parts = line.rstrip("\n").split("|")
    if len(parts) < 6:
        rows.append("| %s | %s | | | unavailable | | | | | %s |" % (parts[0], parts[1], parts[2] if len(parts) > 2 else ""))
        continue
    set_, tool, procs, threads, load, timing = parts[0], parts[1], parts[2], parts[3], parts[4], json.loads(parts[5])
    wall, cpu = timing["best_wall"], timing["best_cpu"]
    if wall is not None:
        best[(set_, tool)] = wall
    runs = "%d run(s)%s" % (timing["runs"], ", %d timed out at %g s" % (timing["timeouts"], timing["timeout_s"]) if timing["timeouts"] else "")
    goal = goals.get(set_) if tool == "ncclscope" else None
    met = "" if goal is None or wall is None else ("< %g s: met" % goal if wall < goal else "< %g s: NOT met" % goal)
    ratio = ""
    if tool != "ncclscope" and wall is not None and best.get((set_, "ncclscope")):
        ratio = "%.1fx ncclscope" % (wall / best[(set_, "ncclscope")])
    rows.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | rc %s, load %s |" % (
        set_, tool, procs, threads, "unavailable" if wall is None else "%.3f" % wall,
        "unavailable" if cpu is None else "%.3f" % cpu, runs, met, ratio, timing["rc"], load))
print("# Live triage of a hung node (issue 35 item 1), one GPU machine\n")
print("Best wall of the runs made (ncclscope: best of 3; eu-stack, py-spy: 1 run, each process in turn); CPU of that run.\n")
print("| set | tool | processes | threads | best wall s | CPU s | runs | goal | vs ncclscope | notes |")
print("|---|---|---|---|---|---|---|---|---|---|")
print("\n".join(rows))
print("\nMachine:\n```\n" + open(sys.argv[2]).read() + "```")
PY
cat "$OUT/node-speed.md"
cp "$W"/*.log "$R/" 2>/dev/null
tar -C "$W" -cJf "$OUT/node-speed.tar.xz" out
log "done"
