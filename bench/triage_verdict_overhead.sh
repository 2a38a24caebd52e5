#!/usr/bin/env bash
# What the verdict's headline and one-blame work (issue 30) costs at scale: the same generated
# job (4,096 ranks x 4 communicators, bench/gen_snapshots.py tp-pp-dp) triaged by a baseline
# build and by this build, alternately in one run, best CPU time (user+sys) of N each.
#   bench/triage_verdict_overhead.sh BASELINE_NCCLSCOPE [--ranks N] [--runs N]
# Prints one line per build and the ratio; writes nothing else.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BASE=${1:?usage: $0 BASELINE_NCCLSCOPE [--ranks N] [--runs N]}
shift
NEW=${NCCLSCOPE_BUILD:-$SRC/build}/bin/ncclscope
RANKS=4096
RUNS=3
while [ $# -gt 0 ]; do
  case $1 in
    --ranks) RANKS=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    *) echo "usage: $0 BASELINE_NCCLSCOPE [--ranks N] [--runs N]" >&2; exit 64 ;;
  esac
done
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
python3 "$SRC/bench/gen_snapshots.py" --ranks "$RANKS" --out "$WORK/job" --scenario tp-pp-dp \
  --culprit $((RANKS > 1234 ? 1234 : RANKS - 1)) --comms 2 --channels 8 --frames 12 --threads 4
cpu_of() {  # one run's user+sys seconds
  /usr/bin/time -f '%U %S' "$1" triage "$WORK/job" --json >"$WORK/out.json" 2>"$WORK/time.txt" || true
  tail -n 1 "$WORK/time.txt" | awk '{print $1 + $2}'
}
best_base=""; best_new=""
for run in $(seq "$RUNS"); do
  b=$(cpu_of "$BASE"); n=$(cpu_of "$NEW")
  best_base=$(python3 -c "print(min(x for x in [$b, ${best_base:-$b}]))")
  best_new=$(python3 -c "print(min(x for x in [$n, ${best_new:-$n}]))")
done
python3 - "$WORK/out.json" <<PY
import json, sys
report = json.load(open(sys.argv[1]))
print(f"job: $RANKS ranks x 4 communicators; verdict {report['verdict']} culprit {report['culprit_ranks']}")
print("headline:", " / ".join(report.get("headline", {}).get("lines", [])))
print(f"baseline: $best_base s CPU (best of $RUNS)")
print(f"this build: $best_new s CPU (best of $RUNS)")
print(f"ratio: {$best_new / $best_base:.3f}")
PY
