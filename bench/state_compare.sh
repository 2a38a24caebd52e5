#!/usr/bin/env bash
# Whole job on one core, ncclscope vs gdb by hand, in one run: load the core and
# libnccl's layout, find the communicators, print identity and counters.
# Writes docs/bench-state.md.  Usage: bench/state_compare.sh CORE EXE [SOLIB_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
core=${1:?usage: bench/state_compare.sh CORE EXE [SOLIB_DIR]}
exe=${2:?}
solib=${3:-/usr/local/cuda-13.0/lib}
build=${NCCLSCOPE_BUILD_DIR:-build}
export NCCLSCOPE_BENCH_CORE=$core NCCLSCOPE_BENCH_GDB_SCAN=$PWD/bench/gdb_scan.py
time_of() { python3 bench/best_of_3.py "$@"; }  # best wall time of 3 runs
gdb_cmd=(gdb -nx --batch -ex "set solib-search-path $solib" -ex "set auto-load off" "$exe" "$core"
         -ex "python exec(open('bench/gdb_state.py').read())")
ours_cmd=("$build/bin/ncclscope" state --core "$core" --exe "$exe" --solib-search-path "$solib" --no-stacks)
ours_stacks_cmd=("$build/bin/ncclscope" state --core "$core" --exe "$exe" --solib-search-path "$solib")
echo "gdb by hand:"; "${gdb_cmd[@]}" 2>/dev/null | grep '^comm' || true
echo "ncclscope:"; "${ours_cmd[@]}" | grep '^comm' || true
t_gdb=$(time_of "${gdb_cmd[@]}")
t_ours=$(time_of "${ours_cmd[@]}")
t_ours_stacks=$(time_of "${ours_stacks_cmd[@]}")
ratio=$(python3 -c "print(f'{$t_gdb/$t_ours:.1f}')")
echo "gdb ${t_gdb}s  ncclscope ${t_ours}s (with stacks ${t_ours_stacks}s)  ratio ${ratio}x"
size=$(stat -c %s "$core")
cat > docs/bench-state.md <<MD
# \`ncclscope state --core\` vs gdb by hand

Measured $(date -u +%F) on this 2-core machine with \`bench/state_compare.sh $core $exe $solib\`
(core: $((size / 1000000)) MB). gdb: load the executable and core, libnccl DWARF, find the comms by
NCCL_MAGIC with \`search_memory\`, print identity and counters (bench/gdb_state.py). ncclscope:
\`state --core --no-stacks\` (same information and more), and the default with host stacks. Best of 3.

| job | wall time |
|---|---|
| gdb by hand | ${t_gdb} s |
| ncclscope state --no-stacks | ${t_ours} s |
| ncclscope state (with stacks) | ${t_ours_stacks} s |

Ratio gdb / ncclscope: **${ratio}x** (goal: at least 5x).
MD
