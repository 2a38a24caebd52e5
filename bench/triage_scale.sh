#!/usr/bin/env bash
# Scale of `ncclscope triage`: generates N ranks' snapshots (2 communicators,
# 8 channels, 4 threads of 12 frames each, one culprit), times
# `ncclscope triage DIR --json` (with --text: the default text report) and records wall time
# and peak RSS (/usr/bin/time -v) for 1, 64, 512 and 4096 ranks (or --ranks "4096 100000").
#
#   bench/triage_scale.sh [--build DIR] [--runs N] [--ranks "1 64 512 4096"] [--no-docs]
#                         [--scenario tp-pp-dp] [--data DIR] [--text]
#
# --data DIR keeps the generated snapshots in DIR/SCENARIO-N (under /tmp, never in git) and
# reuses them in a later run (100,000 ranks are 2.4 GB, written in ~1 min of CPU); without it
# they go to a temporary directory removed at the end. Each row also says the 1-minute load
# average before and after its runs: on a shared machine the wall time depends on it.
#
# --scenario tp-pp-dp: four communicators per rank (world, TP 8, PP 4, DP ranks/32), rank 1234
# (or the last) skipped a TP AllReduce and waits in a cycle (bench/gen_snapshots.py); its own
# table (markers bench:triage-scale-tp-pp-dp).
# --text: the text report a user reads (verdict from its "Why (verdict ...)" line); its own table
# (markers bench:triage-scale-SCENARIO-text).
# With docs on (default), the table between the bench markers in
# docs/triage.md is replaced by the new figures.
set -euo pipefail
SRC=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${NCCLSCOPE_BUILD:-$SRC/build}
RUNS=3
RANKS="1 64 512 4096"
SCENARIO=missing-collective
WRITE_DOCS=1
DATA=""
TEXT=0
while [ $# -gt 0 ]; do
  case $1 in
    --build) BUILD=$2; shift 2 ;;
    --runs) RUNS=$2; shift 2 ;;
    --ranks) RANKS=$2; shift 2 ;;
    --no-docs) WRITE_DOCS=0; shift ;;
    --scenario) SCENARIO=$2; shift 2 ;;
    --data) DATA=$2; shift 2 ;;
    --text) TEXT=1; shift ;;
    *) echo "usage: $0 [--build DIR] [--runs N] [--ranks LIST] [--no-docs] [--scenario S] [--data DIR] [--text]" >&2; exit 64 ;;
  esac
done
NSC=$BUILD/bin/ncclscope
[ -x "$NSC" ] || { echo "$NSC not built" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time (GNU time) is needed for peak RSS" >&2; exit 2; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

load1() { cut -d' ' -f1 /proc/loadavg; }

rows=()
for n in $RANKS; do
  dir=$WORK/ranks-$n
  [ -n "$DATA" ] && dir=$DATA/$SCENARIO-$n
  culprit=$((n - 1))
  [ "$SCENARIO" = tp-pp-dp ] && [ "$n" -gt 1234 ] && culprit=1234
  if [ ! -f "$dir/.complete" ]; then
    rm -rf "$dir"
    start=$(date +%s.%N)
    python3 "$SRC/bench/gen_snapshots.py" --ranks "$n" --out "$dir" --scenario "$SCENARIO" \
      --culprit "$culprit" --comms 2 --channels 8 --frames 12 --threads 4
    echo "generated $n snapshots in $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s (wall)"
    touch "$dir/.complete"
  fi
  bytes=$(du -sb --exclude=.complete "$dir" | cut -f1)
  load_before=$(load1)
  best_wall=""; best_rss=""; best_cpu=""; walls=""
  for run in $(seq "$RUNS"); do
    if [ "$TEXT" = 1 ]; then
      /usr/bin/time -v "$NSC" triage "$dir" >"$WORK/out.txt" 2>"$WORK/time.txt" || true
      verdict=$(sed -n 's/^Why (verdict \([a-z-]*\)).*/\1/p' "$WORK/out.txt" | head -1)
    else
      /usr/bin/time -v "$NSC" triage "$dir" --json >"$WORK/out.json" 2>"$WORK/time.txt" || true
      verdict=$(python3 -c "import json; r=json.load(open('$WORK/out.json')); print(r['verdict'], r['culprit_ranks'])")
    fi
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {split($2, t, ":"); s = 0; for (i = 1; i <= length(t); i++) s = s * 60 + t[i]; print s}' "$WORK/time.txt")
    user=$(awk -F': ' '/User time/ {print $2}' "$WORK/time.txt")
    sys=$(awk -F': ' '/System time/ {print $2}' "$WORK/time.txt")
    rss=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$WORK/time.txt")
    cpu=$(python3 -c "print(round($user + $sys, 2))")
    walls="$walls $wall"
    if [ -z "$best_wall" ] || python3 -c "import sys; sys.exit(0 if $wall < $best_wall else 1)"; then
      best_wall=$wall; best_rss=$rss; best_cpu=$cpu
    fi
  done
  load_after=$(load1)
  # The spread says how steady the machine was: on a shared VM one build's runs differ by a third.
  median_wall=$(python3 -c "import statistics, sys; print(round(statistics.median(map(float, sys.argv[1:])), 2))" $walls)
  mib=$(python3 -c "print(round($bytes / 1048576, 1))")
  rss_mib=$(python3 -c "print(round($best_rss / 1024, 1))")
  echo "ranks=$n input=${mib}MiB wall=${best_wall}s median=${median_wall}s cpu=${best_cpu}s peak_rss=${rss_mib}MiB load=$load_before/$load_after verdict: $verdict"
  rows+=("| $n | $mib | $best_wall | $median_wall | $best_cpu | $rss_mib | $load_before / $load_after | $verdict |")
done

marker=triage-scale
[ "$SCENARIO" = missing-collective ] || marker=triage-scale-$SCENARIO
[ "$TEXT" = 1 ] && marker=$marker-text
if [ "$WRITE_DOCS" = 1 ]; then
  doc=$SRC/docs/triage.md
  table=$WORK/table.md
  {
    echo "<!-- bench:$marker:begin (written by bench/triage_scale.sh) -->"
    echo "Measured $(date -u +%Y-%m-%d) on $(nproc) CPUs (load average $(cut -d' ' -f1-3 /proc/loadavg) while measuring), best of $RUNS runs (and their median wall):"
    echo
    echo "| ranks | snapshots (MiB) | wall (s) | median wall (s) | CPU user+sys (s) | peak RSS (MiB) | load before / after | verdict, culprit |"
    echo "|------:|----------------:|---------:|----------------:|-----------------:|---------------:|--------------------:|------------------|"
    printf '%s\n' "${rows[@]}"
    echo "<!-- bench:$marker:end -->"
  } >"$table"
  if [ -f "$doc" ] && grep -q "bench:$marker:begin" "$doc"; then
    python3 - "$doc" "$table" "$marker" <<'PY'
import re, sys
doc, table, marker = sys.argv[1], open(sys.argv[2]).read().rstrip("\n"), sys.argv[3]
text = open(doc).read()
text = re.sub(r"<!-- bench:%s:begin.*?<!-- bench:%s:end -->" % (marker, marker), lambda m: table, text, flags=re.S)
open(doc, "w").write(text)
PY
    echo "updated $doc"
  else
    cat "$table"
  fi
fi
