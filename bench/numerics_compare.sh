#!/usr/bin/env bash
# Buffer numerics on one core, ncclscope vs gdb by hand, in one run (issue 20 item 1): the comm
# fixture holds a launched AllReduce whose two bf16 buffers are host memory (N elements each,
# NaN and Inf in them); gcore'd. gdb by hand: given the buffers' addresses (ncclscope finds them
# itself), read each with the Python API and count NaN, Inf, subnormals and zeros (bench/gdb_numerics.py).
# ncclscope: `numerics --core` (finds the comm, the plan, the buffers, reads and counts). Both
# counts are compared; best of 3. Writes docs/bench-numerics.md.
#   bench/numerics_compare.sh [ELEMENTS]   (default 16777216: 32 MiB per buffer, read whole)
set -euo pipefail
cd "$(dirname "$0")/.."
elements=${1:-16777216}
build=${NCCLSCOPE_BUILD_DIR:-build}
work=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$work"' EXIT
profile=native/profiles/9fcf74d93a8c3605bf7718f594d0a24366e38536.json
lib=/usr/local/cuda-13.0/lib/libnccl.so.2
profile_args=()
if [ ! -r "$lib" ]; then  # the stand-in library, with the real layout under its build-id
  lib=$build/fixtures/fakelib/libnccl.so.2
  python3 tests/cli/fake_profile.py "$profile" "$lib" "$work/profiles" > /dev/null
  profile_args=(--profile-path "$work/profiles")
fi
"$build/fixtures/comm_fixture" --profile "$profile" --library "$lib" --launched-buffers nan \
  --launched-elements "$elements" > "$work/fixture.json" &
pid=$!
for _ in $(seq 100); do [ -s "$work/fixture.json" ] && break; sleep 0.1; done
gdb -p "$pid" -batch -nx -ex "gcore $work/fixture.core" > /dev/null 2>&1
kill "$pid"; pid=
read -r send recv < <(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["launched"]
print(d["send"]["address"], d["recv"]["address"])' "$work/fixture.json")
export NCCLSCOPE_BENCH_BUFFERS="$send:$elements $recv:$elements"
gdb_cmd=(gdb -nx --batch -ex "set auto-load off" "$build/fixtures/comm_fixture" "$work/fixture.core"
         -ex "python exec(open('bench/gdb_numerics.py').read())")
ours_cmd=("$build/bin/ncclscope" numerics --core "$work/fixture.core" --json "${profile_args[@]}")
time_of() {  # the best wall time of 3 runs
  python3 - "$@" <<'PY'
import subprocess, sys, time
best = 1e9
for _ in range(3):
    start = time.perf_counter()
    subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    best = min(best, time.perf_counter() - start)
print(f"{best:.3f}")
PY
}
"${gdb_cmd[@]}" 2>/dev/null | grep '^buffer' > "$work/gdb.txt"
"${ours_cmd[@]}" 2>/dev/null > "$work/ours.json" || true
python3 - "$work/gdb.txt" "$work/ours.json" <<'PY'
import json, sys
gdb = {}
for line in open(sys.argv[1]):
    _, address, *pairs = line.split()
    gdb[address] = {k: int(v) for k, v in (p.split("=") for p in pairs)}
ours = {b["address"]: b["stats"] for b in json.load(open(sys.argv[2]))["buffers"] if b["stage"] == "launched"}
assert len(gdb) == 2, gdb
for address, counts in gdb.items():
    got = ours[address]
    for key, value in counts.items():
        assert got[key] == value, (address, key, got[key], value)
print("counts equal:", json.dumps(gdb))
PY
t_gdb=$(time_of "${gdb_cmd[@]}")
t_ours=$(time_of "${ours_cmd[@]}")
ratio=$(python3 -c "print(f'{$t_gdb/$t_ours:.1f}')")
mib=$((elements * 2 * 2 / 1048576))
echo "gdb ${t_gdb}s  ncclscope ${t_ours}s  ratio ${ratio}x  (${mib} MiB of bf16)"
cat > docs/bench-numerics.md <<MD
# \`ncclscope numerics --core\` vs gdb by hand

Measured $(date -u +%F) on this 2-core machine with \`bench/numerics_compare.sh $elements\`: the comm
fixture's launched bf16 AllReduce, two host-memory buffers of $elements elements (${mib} MiB in all,
read whole), gcore'd ($(($(stat -c %s "$work/fixture.core") / 1000000)) MB). gdb by hand is given the
two buffer addresses (ncclscope finds them itself: comm, callbackQueue, plan, task) and counts NaN,
Inf, subnormals and zeros with its Python API (\`bench/gdb_numerics.py\`, \`array('H')\` over
\`read_memory\`). Both sets of counts are compared before timing (equal). Best of 3.

| job | wall time |
|---|---|
| gdb by hand (addresses given) | ${t_gdb} s |
| ncclscope numerics --core | ${t_ours} s |

Ratio gdb / ncclscope: **${ratio}x**.
MD
