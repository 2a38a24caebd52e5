#!/usr/bin/env bash
# Live stacks of a node without a GPU (issue 35): PROCS processes (default 8), each with THREADS
# threads (default 200) parked in pause() below DEPTH frames of a generated shared object of
# FUNCTIONS symbols (default 10^6, one FDE each: .eh_frame ~28 MB, .symtab ~24 MB), like a JAX
# rank mapping XLA. Times (wall, and CPU of that run), on the same processes in the same run, best wall of RUNS (eu-stack:
# of EU_RUNS, default 1: with 10^6 symbols it takes minutes per process):
#   eu-stack -p PID (elfutils) of each process in turn,
#   ncclscope triage --pid P1 ... --pid PN   (every rank's state, stacks, Python, verdict),
#   ncclscope state --pid P1 --stacks --json (one process).
#   bench/stacks_scale.sh [--procs N] [--threads N] [--depth N] [--functions N] [--runs N]
#                         [--eu-runs N] [--baseline NCCLSCOPE] [--cache DIR]
# Each process has RANK/WORLD_SIZE set, so triage takes it as a rank that never loaded NCCL.
# --baseline times another ncclscope build beside this one, alternating run by run, and compares
# its state --stacks document with this build's. The generated module is kept in
# DIR (default /tmp/ncclscope-stacks-scale-FUNCTIONS): generating 10^6 functions takes about a
# minute of CPU (the assembler's), once. Needs gcc, as, ld, eu-stack (apt-get install elfutils).
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
NEW=${NCCLSCOPE_BUILD:-$SRC/build}/bin/ncclscope
PROCS=8 THREADS=200 DEPTH=8 FUNCTIONS=1000000 RUNS=3 EU_RUNS=1 BASE="" CACHE=""
while [ $# -gt 0 ]; do
  case $1 in
    --procs) PROCS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --depth) DEPTH=$2; shift 2 ;;
    --functions) FUNCTIONS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --eu-runs) EU_RUNS=$2; shift 2 ;;
    --baseline) BASE=$2; shift 2 ;;
    --cache) CACHE=$2; shift 2 ;;
    *) sed -n '2,16p' "$0" >&2; exit 64 ;;
  esac
done
CACHE=${CACHE:-/tmp/ncclscope-stacks-scale-$FUNCTIONS}
command -v eu-stack >/dev/null || { echo "eu-stack missing (apt-get install elfutils)" >&2; exit 77; }
[ -x "$NEW" ] || { echo "$NEW missing: build the ncclscope target" >&2; exit 2; }

mkdir -p "$CACHE"
if [ ! -f "$CACHE/libbigmodule.so" ]; then
  echo "generating $FUNCTIONS functions in $CACHE (once) ..." >&2
  start=$(date +%s.%N)
  python3 "$SRC/bench/stacks_scale/gen_big_module.py" --functions "$FUNCTIONS" --chunks 16 -o "$CACHE/gen"
  for s in "$CACHE"/gen/*.s; do as -o "${s%.s}.o" "$s"; done
  gcc -shared -o "$CACHE/libbigmodule.so.tmp" "$CACHE"/gen/*.o
  mv "$CACHE/libbigmodule.so.tmp" "$CACHE/libbigmodule.so"
  rm -rf "$CACHE/gen"
  echo "generated in $(python3 -c "import time; print(round(time.time() - $start, 1))") s wall" >&2
fi
gcc -O2 -pthread -o "$CACHE/waiter" "$SRC/bench/stacks_scale/waiter.c" -L"$CACHE" -lbigmodule -Wl,-rpath,"$CACHE"

WORK=$(mktemp -d)
PIDS=()
cleanup() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
for p in $(seq "$PROCS"); do
  RANK=$((p - 1)) LOCAL_RANK=$((p - 1)) WORLD_SIZE=$PROCS "$CACHE/waiter" "$THREADS" "$DEPTH" "$p" >"$WORK/ready.$p" &
  PIDS+=($!)
done
# Ready: every process printed "ready" and each of its threads sleeps (in pause()).
for attempt in $(seq 600); do
  parked=0
  for i in "${!PIDS[@]}"; do
    pid=${PIDS[$i]}
    grep -q ready "$WORK/ready.$((i + 1))" 2>/dev/null || continue
    sleeping=$(cat /proc/"$pid"/task/*/stat 2>/dev/null | awk '{ sub(/.*\) /, ""); if ($1 == "S") n++ } END { print n + 0 }')
    [ "$sleeping" -eq $((THREADS + 1)) ] && parked=$((parked + 1))
  done
  [ "$parked" -eq "$PROCS" ] && break
  sleep 0.1
done
[ "$parked" -eq "$PROCS" ] || { echo "processes did not park" >&2; exit 1; }

PID_ARGS=()
for pid in "${PIDS[@]}"; do PID_ARGS+=(--pid "$pid"); done
timed() {  # COMMAND...: prints "WALL CPU" in s (CPU: user + system of the command and its children); out in $WORK/{out,err}.txt
  python3 - "$WORK" "$@" <<'PY'
import resource, subprocess, sys, time
work, command = sys.argv[1], sys.argv[2:]
cpu = lambda: (lambda usage: usage.ru_utime + usage.ru_stime)(resource.getrusage(resource.RUSAGE_CHILDREN))
before = cpu()  # not 0: what python's start-up waited for (a wrapper's children) is counted here too
start = time.perf_counter()
with open(f"{work}/out.txt", "wb") as out, open(f"{work}/err.txt", "wb") as err:
    subprocess.run(command, stdout=out, stderr=err)
wall = time.perf_counter() - start
print(f"{wall:.3f} {cpu() - before:.3f}")
PY
}
declare -A best  # name -> "WALL CPU" of the run with the best wall
record() {  # NAME "WALL CPU"
  local old=${best[$1]:-}
  if [ -z "$old" ] || python3 -c "import sys; sys.exit(0 if ${2%% *} < ${old%% *} else 1)"; then best[$1]=$2; fi
}
shown() { echo "${best[$1]%% *} s wall, ${best[$1]##* } s CPU"; }
for run in $(seq "$EU_RUNS"); do
  record eu_stack "$(timed sh -c 'for p; do eu-stack -p "$p"; done' sh "${PIDS[@]}")"
  cp "$WORK/out.txt" "$WORK/eu-stack.txt"
done
# Old and new builds alternate run by run on the same processes (a shared machine's load drifts).
for run in $(seq "$RUNS"); do
  if [ -n "$BASE" ]; then
    record base_triage "$(timed "$BASE" triage "${PID_ARGS[@]}" --json)"
    record base_state "$(timed "$BASE" state --pid "${PIDS[0]}" --stacks --json)"
    cp "$WORK/out.txt" "$WORK/base-state.json"
  fi
  record triage "$(timed "$NEW" triage "${PID_ARGS[@]}" --json)"
  cp "$WORK/out.txt" "$WORK/triage.json"
  cp "$WORK/err.txt" "$WORK/triage.err"
  record state "$(timed "$NEW" state --pid "${PIDS[0]}" --stacks --json)"
  cp "$WORK/out.txt" "$WORK/state.json"
done

# The same frames: every module frame eu-stack names for the first process, ncclscope names too.
python3 - "$WORK" "${PIDS[0]}" "$PROCS" "$THREADS" "$DEPTH" "$FUNCTIONS" <<'PY'
import json, re, sys
work, pid, procs, threads, depth, functions = sys.argv[1], int(sys.argv[2]), *map(int, sys.argv[3:])
def eu_frames(text, pid):
    frames, tid, current = {}, None, None
    for line in text.splitlines():
        if line.startswith("PID "):
            current = int(line.split()[1])
        elif line.startswith("TID ") and current == pid:
            tid = int(line.split()[1].rstrip(":")); frames[tid] = []
        elif line.startswith("#") and current == pid and tid is not None:
            parts = line.split()
            frames[tid].append(parts[2] if len(parts) > 2 else None)
    return frames
eu = eu_frames(open(f"{work}/eu-stack.txt").read(), pid)
ours = {t["tid"]: [f["function"] for f in t["frames"]] for t in json.load(open(f"{work}/state.json"))["threads"]}
module_frames = sum(1 for frames in eu.values() for f in frames if f and f.startswith("c"))
agree = sum(1 for tid, frames in eu.items() for i, f in enumerate(frames)
            if f and re.match(r"c\d+_fn_\d+$", f) and i < len(ours.get(tid, [])) and ours[tid][i] == f)
print(f"processes: {procs} x {threads + 1} threads, {depth} frames each in a module of {functions} symbols")
print(f"check: {agree} of {module_frames} module frames eu-stack names for pid {pid} named alike by ncclscope state")
def all_frames(path):
    return {t["tid"]: [(f["pc"], f["function"], f.get("module")) for f in t["frames"]] for t in json.load(open(path))["threads"]}
try:
    base = all_frames(f"{work}/base-state.json")
    new = all_frames(f"{work}/state.json")
    same = sum(1 for tid, frames in new.items() if base.get(tid) == frames)
    print(f"check: {same} of {len(new)} threads of pid {pid} have the same frames (pc, function, module) in the baseline's state --stacks")
except FileNotFoundError:
    pass
report = json.load(open(f"{work}/triage.json"))
print(f"triage: verdict {report['verdict']}, {len(report.get('stack_classes', []))} stack classes; "
      + (report.get("headline", {}).get("lines") or [""])[-1])
PY
eu_wall=${best[eu_stack]%% *} triage_wall=${best[triage]%% *}
echo "eu-stack -p (each process in turn): $(shown eu_stack) (best of $EU_RUNS)"
echo "ncclscope triage --pid x $PROCS: $(shown triage) (best of $RUNS); ratio eu-stack / triage: $(python3 -c "print(round($eu_wall / $triage_wall, 2))")"
echo "ncclscope state --pid --stacks (one process): $(shown state) (best of $RUNS)"
if [ -n "$BASE" ]; then
  echo "baseline triage --pid x $PROCS: $(shown base_triage); state --stacks: $(shown base_state) (best of $RUNS, alternating with the new build)"
fi
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg) on $(nproc) CPUs"
