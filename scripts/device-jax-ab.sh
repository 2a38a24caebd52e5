#!/usr/bin/env bash
# One GPU-machine call (issue 35 item 1): where one JAX process's `triage --pid` spends its wall
# time. Starts tests/scenarios/jax_hang.py (2 processes), then times `triage --pid` of the waiting
# one, ROUNDS rounds of: bin/ncclscope, bin/ncclscope-base (an older build), bin/ncclscope with
# GLIBC_TUNABLES set (no huge-page re-exec), bin/ncclscope --jobs 1 (wall, CPU, context switches). Carries .device-carry/{bin/ncclscope,bin/ncclscope-base,lib/}.
set -uo pipefail
: "${OUT:?}"
REPO=$(pwd); CARRY=$REPO/.device-carry; PY=${JAX_PYTHON:-/opt/torch/.venv/bin/python}
export NCCL_NVLS_ENABLE=0 NCCL_DEBUG=WARN NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1 \
       XLA_PYTHON_CLIENT_PREALLOCATE=false MASTER_ADDR=127.0.0.1 LD_LIBRARY_PATH=$CARRY/lib
W=/tmp/jax-ab; rm -rf "$W"; mkdir -p "$W"; PIDS=()
trap 'for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done' EXIT
port=$((30000 + RANDOM % 300))
for rank in 0 1; do
  NCCL_HOSTID=nsc-ab-jax-$rank RANK=$rank WORLD_SIZE=2 MASTER_PORT=$port "$PY" "$REPO/tests/scenarios/jax_hang.py" > "$W/rank$rank.log" 2>&1 &
  PIDS+=($!)
done
for _ in $(seq 120); do [ "$(cat "$W"/rank*.log | grep -c HANG_POINT_REACHED)" -ge 2 ] && break; sleep 1; done
sleep 3; P=${PIDS[0]}; echo "jax ready: pid $P, $(ls /proc/$P/task | wc -l) threads, load $(cut -d' ' -f1-3 /proc/loadavg)"
one() {  # LABEL CMD...
  local label=$1; shift
  python3 -c '
import resource, subprocess, sys, time
t = time.time(); subprocess.run(sys.argv[2:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
w = time.time() - t; r = resource.getrusage(resource.RUSAGE_CHILDREN)
print("%s wall %.3f user %.3f sys %.3f vcs %d ivcs %d rss %d" % (sys.argv[1], w, r.ru_utime, r.ru_stime, r.ru_nvcsw, r.ru_nivcsw, r.ru_maxrss))
' "$label" "$@" >> "$W/time.txt"
}
for round in $(seq "${ROUNDS:-5}"); do
  one new "$CARRY/bin/ncclscope" triage --pid "$P"
  one base "$CARRY/bin/ncclscope-base" triage --pid "$P"
  GLIBC_TUNABLES=glibc.malloc.hugetlb=0 one new-no-thp "$CARRY/bin/ncclscope" triage --pid "$P"
  one new-jobs1 "$CARRY/bin/ncclscope" triage --pid "$P" --jobs 1
  one new-state "$CARRY/bin/ncclscope" state --pid "$P" --stacks
  one base-state "$CARRY/bin/ncclscope-base" state --pid "$P" --stacks
done
sort -k1,1 -s "$W/time.txt" | tee "$OUT/jax-ab.txt"
python3 - "$W/time.txt" <<'PY' | tee -a "$OUT/jax-ab.txt"
import sys, collections
rows = collections.defaultdict(list)
for line in open(sys.argv[1]):
    p = line.split()
    if len(p) > 4 and p[1] == "wall":
        rows[p[0]].append((float(p[2]), float(p[4]) + float(p[6])))
for label, v in sorted(rows.items()):
    walls = sorted(w for w, _ in v); cpus = sorted(c for _, c in v)
    print("%-12s best wall %.3f median wall %.3f median CPU %.3f (%d runs)" % (label, walls[0], walls[len(walls) // 2], cpus[len(cpus) // 2], len(v)))
PY
