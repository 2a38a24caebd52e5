#!/usr/bin/env bash
# `ncclscope triage --jobs 2` must print exactly what --jobs 1 prints. Two real rank cores
# decoded in parallel once lost their outermost stack frames at random (libdwfl is not
# thread-safe across sessions; stacks are now unwound one core at a time).
set -u
BUILD=${NCCLSCOPE_BUILD:?}
SRC=${NCCLSCOPE_SRC:?}
NSC=$BUILD/bin/ncclscope
RUNS=${RUNS:-16}
[ -x "$NSC" ] || { echo "SKIP: $NSC not built"; exit 77; }
command -v xz >/dev/null || { echo "SKIP: xz missing"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
scenario=$SRC/corefiles/mismatched-collective
[ -f "$scenario/rank1.core.xz" ] || { echo "SKIP: $scenario missing"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
for rank in 0 1; do xz -dc "$scenario/rank$rank.core.xz" > "$WORK/rank$rank.core" || exit 1; done
exe=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["executable"])' "$scenario/expected.json")
xz -dc "$SRC/corefiles/$exe" > "$WORK/exe" && chmod +x "$WORK/exe"
args=("$WORK/rank0.core" "$WORK/rank1.core" --exe "$WORK/exe" --solib-search-path "$SRC/corefiles/lib")
"$NSC" triage "${args[@]}" --jobs 1 > "$WORK/serial.txt" 2>/dev/null
grep -q "run_mismatched_collective" "$WORK/serial.txt" || { echo "FAIL: serial run lacks the app frames"; exit 1; }
differing=0
for run in $(seq "$RUNS"); do
  "$NSC" triage "${args[@]}" --jobs 2 > "$WORK/parallel.txt" 2>/dev/null
  if ! cmp -s "$WORK/serial.txt" "$WORK/parallel.txt"; then
    differing=$((differing + 1))
    diff "$WORK/serial.txt" "$WORK/parallel.txt" | head -8
  fi
done
echo "--jobs 2 differed from --jobs 1 in $differing of $RUNS runs"
[ "$differing" = 0 ]
