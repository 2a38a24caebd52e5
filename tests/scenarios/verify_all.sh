#!/usr/bin/env bash
# Run scripts/verify-core-with-gdb.sh on every rank core under a corpus folder and compare the
# gdb values with each rank's GROUND_TRUTH (rank, nRanks, seqNumber per function = launched).
#
#   tests/scenarios/verify_all.sh [CORES_DIR] [LIBDIR]     (/work/cores, /usr/local/cuda-13.0/lib)
#
# Each CORES_DIR/<scenario>/ holds rankN.core, rankN.ground_truth.json and an executable named
# in EXE (a file holding its path) or nccl_hang_scenarios; results go to rankN.gdb.json there.
set -uo pipefail
cores=${1:-/work/cores}; libdir=${2:-/usr/local/cuda-13.0/lib}
here=$(cd "$(dirname "$0")" && pwd)
verify=$here/../../scripts/verify-core-with-gdb.sh
for dir in "$cores"/*/; do
  dir=${dir%/}
  [ "$(basename "$dir")" = _runs ] && continue
  exe=$dir/nccl_hang_scenarios
  [ -f "$dir/EXE" ] && exe=$(cat "$dir/EXE")
  for core in "$dir"/rank*.core; do
    [ -f "$core" ] || continue
    out=${core%.core}.gdb.json
    [ -s "$out" ] || "$verify" "$core" "$exe" "$libdir" > "$out"
  done
done
python3 "$here/check_ground_truth.py" "$cores"
