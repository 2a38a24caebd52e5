#!/usr/bin/env bash
# Scan throughput, ncclscope vs gdb, on the same core in one run; prints the
# ratio and writes docs/bench-scan.md.  Usage: bench/scan_compare.sh CORE [EXE]
set -euo pipefail
cd "$(dirname "$0")/.."
core=${1:?usage: bench/scan_compare.sh CORE [EXE]}
exe=${2:-}
build=${NCCLSCOPE_BUILD_DIR:-build}
cmake --build "$build" --target scan_bench >/dev/null
ours=$("$build/bench/scan_bench" "$core" 5)
gdb_runs=()
for i in 1 2 3; do
  gdb_runs+=("$(NCCLSCOPE_BENCH_CORE="$core" gdb -nx --batch ${exe:+"$exe"} -ex "core-file $core" \
    -ex "python exec(open('bench/gdb_scan.py').read())" 2>/dev/null | tail -n 1)")
done
python3 - "$core" "$ours" "${gdb_runs[@]}" <<'PY'
import json, sys, datetime
core, ours = sys.argv[1], json.loads(sys.argv[2])
gdb = [json.loads(r) for r in sys.argv[3:]]
best_gdb = min(g["seconds"] for g in gdb)
gdb_rate = gdb[0]["bytes"] / best_gdb / 1e9
ratio = ours["gb_per_s"] / gdb_rate
print(f"ncclscope: {ours['bytes']/1e6:.1f} MB in {ours['scan_best_s']*1e3:.1f} ms = {ours['gb_per_s']:.2f} GB/s, {ours['matches']} matches")
print(f"gdb:       {gdb[0]['bytes']/1e6:.1f} MB in {best_gdb*1e3:.1f} ms = {gdb_rate:.2f} GB/s, {gdb[0]['matches']} matches")
print(f"throughput ratio ncclscope/gdb: {ratio:.1f}x")
with open("docs/bench-scan.md", "w") as f:
    f.write("# Communicator scan: ncclscope vs gdb\n\n")
    f.write(f"Measured {datetime.date.today()} on this 2-core machine with `bench/scan_compare.sh {core}`.\n")
    f.write("Both look for 16-byte aligned NCCL_MAGIC in the core's writable memory; best of 5 (ours) and 3 (gdb) runs.\n\n")
    f.write("| tool | bytes scanned | best time | throughput | matches |\n|---|---|---|---|---|\n")
    f.write(f"| ncclscope scan_for_value | {ours['bytes']} | {ours['scan_best_s']*1e3:.1f} ms | {ours['gb_per_s']:.2f} GB/s | {ours['matches']} |\n")
    f.write(f"| gdb Inferior.search_memory | {gdb[0]['bytes']} | {best_gdb*1e3:.1f} ms | {gdb_rate:.2f} GB/s | {gdb[0]['matches']} |\n\n")
    f.write(f"Throughput ratio: **{ratio:.1f}x** (goal: at least 5x).\n")
PY
