#!/usr/bin/env bash
# Python stacks of a live many-thread CPython 3.11 process: `ncclscope py-stacks --pid`
# against Debian's austin and gdb's py-bt (python3.11-dbg's libpython.py) on the same
# process in the same run. Prints a markdown table (docs/bench-python.md).
# Usage: bench/python_stacks_compare.sh [EXTRA_THREADS=200] [RUNS=5]
set -uo pipefail
cd "$(dirname "$0")/.."
extra=${1:-200} runs=${2:-5}
cli=${NCCLSCOPE_BIN:-build/bin/ncclscope}
python=/usr/bin/python3.11
work=$(mktemp -d)
trap 'kill -9 $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$work"' EXIT
"$python" tests/fixtures/python/threads_fixture.py "$work/ready" "$work/dump" "$extra" > /dev/null 2>&1 &
pid=$!
for _ in $(seq 200); do [ -s "$work/ready" ] && break; sleep 0.1; done
kill -USR1 $pid; sleep 0.5

best() {  # best RUNS COMMAND...: the fastest wall time in seconds
  local n=$1 best_time=""; shift
  for _ in $(seq "$n"); do
    local start end
    start=$(date +%s.%N); "$@" > /dev/null 2>&1; end=$(date +%s.%N)
    best_time=$(python3 -c "import sys; t=float(sys.argv[2])-float(sys.argv[1]); b=sys.argv[3]; print('%.3f' % (t if not b or t < float(b) else float(b)))" "$start" "$end" "$best_time")
  done
  echo "$best_time"
}

"$cli" py-stacks --pid $pid --json > "$work/ours.json"
agreement=$(python3 tests/cli/check_python_stacks.py "$work/dump" "$work/ours.json" | tail -1)
threads=$(python3 -c "import json,sys; print(len(json.load(open(sys.argv[1]))['threads']))" "$work/ours.json")
ours=$(best "$runs" "$cli" py-stacks --pid $pid)
ours_native=$(best 3 "$cli" py-stacks --pid $pid --native)
austin_out=$(timeout 10 austin -i 0 -p $pid -o "$work/austin.txt" 2>&1 | head -1); austin_rc=$?
austin_samples=$(grep -c "^P" "$work/austin.txt" 2>/dev/null || true)
gdb_script=/usr/share/gdb/auto-load/usr/bin/python3.11-gdb.py
gdb_time=$(best 1 gdb -p $pid -batch -nx -ex "source $gdb_script" -ex "thread apply all py-bt")
ratio=$(python3 -c "import sys; print('%.1f' % (float(sys.argv[1]) / float(sys.argv[2])))" "$gdb_time" "$ours")

echo "| job ($threads Python threads, $(nproc) cores) | wall time |"
echo "|---|---|"
echo "| ncclscope py-stacks --pid (no stop; best of $runs) | ${ours} s |"
echo "| ncclscope py-stacks --pid --native (merged, ptrace stops; best of 3) | ${ours_native} s |"
echo "| gdb -p + py-bt of every thread (python3.11-dbg's libpython.py) | ${gdb_time} s |"
echo "| austin $(austin -V | awk '{print $2}') -i 0 -p (Debian's) | no sample: \"${austin_out}\" (${austin_samples:-0} samples) |"
echo
echo "Ratio gdb py-bt / ncclscope: **${ratio}x**. Agreement with faulthandler: ${agreement}."
