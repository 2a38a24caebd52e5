#!/usr/bin/env bash
# Scale of `ncclscope triage` on PyTorch flight-recorder dump files (issue 31): writes RANKS
# dumps of ENTRIES entries each (bench/gen_fr_dumps.py: a hung TP8 x DP job, one culprit), then
# times `ncclscope triage DIR --json` (read every dump with the restricted pickle reader, match
# every group's collectives as torchfrtrace does, the verdict) and records wall time, CPU time
# and peak RSS (/usr/bin/time -v), and checks the verdict names the generated culprit.
#
#   bench/fr_dumps_scale.sh [--build DIR] [--ranks 4096] [--entries 2000] [--runs 3] [--dir DIR]
#
# The dumps (~2.2 GB for 4,096 x 2,000) stay in --dir (default /tmp/ncclscope-fr-dumps-RxE)
# for later runs; remove it when done.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${NCCLSCOPE_BUILD:-$SRC/build}
RANKS=4096 ENTRIES=2000 RUNS=3 DIR=""
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --entries) ENTRIES=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    *) echo "usage: $0 [--build DIR] [--ranks N] [--entries N] [--runs N] [--dir DIR]" >&2; exit 64 ;;
  esac
done
DIR=${DIR:-/tmp/ncclscope-fr-dumps-${RANKS}x${ENTRIES}}
if [ ! -f "$DIR/fr_rank$((RANKS - 1))" ]; then
  python3 "$SRC/bench/gen_fr_dumps.py" "$RANKS" "$ENTRIES" "$DIR"
fi
culprit=$(( RANKS - 1 < 1234 ? RANKS - 1 : 1234 ))
echo "$(du -sh "$DIR" | cut -f1) of dumps in $DIR; $(nproc) CPUs; load $(cut -d' ' -f1-3 /proc/loadavg)"
for run in $(seq "$RUNS"); do
  /usr/bin/time -v "$BUILD/bin/ncclscope" triage "$DIR" --json > "$DIR.report.json" 2> "$DIR.time" || true
  wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$DIR.time")
  user=$(sed -n 's/.*User time (seconds): //p' "$DIR.time")
  sys=$(sed -n 's/.*System time (seconds): //p' "$DIR.time")
  rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$DIR.time")
  verdict=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["verdict"], r["culprit_ranks"])' "$DIR.report.json")
  echo "run $run: wall $wall, user ${user} s, sys ${sys} s, peak RSS $((rss / 1024)) MB; verdict $verdict (expected hang [$culprit])"
done
