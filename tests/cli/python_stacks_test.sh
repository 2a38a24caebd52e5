#!/usr/bin/env bash
# Python stacks of Debian's CPython 3.11 (/usr/bin/python3.11), live and from a
# gcore'd core, checked frame by frame against the interpreter's own
# faulthandler.dump_traceback of the same threads; `state` carries them per
# thread; a slice keeps them; an interpreter without DWARF or profile gets one line.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
python=/usr/bin/python3.11
if [ ! -x "$python" ] || ! command -v gcore >/dev/null; then
  echo "SKIP: needs $python and gcore"; exit 77
fi
fixture=$src/tests/fixtures/python/threads_fixture.py
checker=$src/tests/cli/check_python_stacks.py

start_python_fixture() {  # start_python_fixture PYTHON TAG: sets FIXTURE_PID, dump in $work/TAG.dump
  local tag=$2
  "$1" "$fixture" "$work/$tag.ready" "$work/$tag.dump" > "$work/$tag.out" 2>&1 &
  pids+=($!)
  FIXTURE_PID=$!
  for _ in $(seq 100); do [ -s "$work/$tag.ready" ] && break; sleep 0.1; done
  kill -USR1 "$FIXTURE_PID"
  for _ in $(seq 50); do grep -q "Current thread" "$work/$tag.dump" 2>/dev/null && break; sleep 0.1; done
}

start_python_fixture "$python" live
"$cli" py-stacks --pid "$FIXTURE_PID" --json > "$work/live.json" 2> "$work/live.err"
check "live: exit 0" test $? -eq 0
check "live: frames agree with faulthandler" python3 "$checker" "$work/live.dump" "$work/live.json"
check "live: process not left stopped" bash -c "! grep -q '^State:.*(stopped\|tracing stop)' /proc/$FIXTURE_PID/status"
check "live: layout from the shipped profile or DWARF" \
  python3 -c "import json,sys; s=json.load(open(sys.argv[1]))['python']['layout_source']; sys.exit(not ('profile:' in s or 'dwarf:' in s))" "$work/live.json"
check "live: version 3.11" python3 -c "import json,sys; sys.exit(json.load(open(sys.argv[1]))['python']['version'][:5] != '3.11.')" "$work/live.json"

gcore -o "$work/py" "$FIXTURE_PID" > /dev/null 2>&1
core=$work/py.$FIXTURE_PID
check "core: written" test -s "$core"
"$cli" py-stacks --core "$core" --json > "$work/core.json" 2> "$work/core.err"
check "core: exit 0" test $? -eq 0
check "core: frames agree with faulthandler" python3 "$checker" "$work/live.dump" "$work/core.json"
"$cli" py-stacks --core "$core" --native --json > "$work/native.json" 2> "$work/native.err"
check "core --native: merged stacks replace _PyEval_EvalFrameDefault" python3 - "$work/native.json" <<'PY'
import json, sys
threads = json.load(open(sys.argv[1]))["threads"]
merged = [t for t in threads if t.get("merged_frames")]
ok = len(merged) == len(threads) and all(
    not any(f.get("function") == "_PyEval_EvalFrameDefault" for f in t["merged_frames"] if f["kind"] == "native")
    and [f["function"] for f in t["merged_frames"] if f["kind"] == "python"] == [f["qualname"] for f in t["frames"]]
    and "merge_note" not in t for t in threads)
sys.exit(0 if ok else 1)
PY
"$cli" py-stacks --core "$core" > "$work/core.txt"
check "core text: names the blocked line" grep -q "Worker.run (.*threads_fixture.py:[0-9][0-9]*)" "$work/core.txt"

# `state`: each thread carries its Python stack (a stand-in libnccl gives state its library).
fake_lib=$build/fixtures/fakelib/libnccl.so.2
if [ -f "$fake_lib" ]; then
  fake_id=$(python3 "$src/tests/cli/fake_profile.py" "$profile" "$fake_lib" "$work/profiles")
  NCCLSCOPE_FIXTURE_LIBNCCL=$fake_lib start_python_fixture "$python" state
  "$cli" state --pid "$FIXTURE_PID" --profile-path "$work/profiles" --json > "$work/state-live.json" 2> "$work/state-live.err"
  check "state live: exit 0" test $? -eq 0
  check "state live: python per thread agrees with faulthandler" python3 "$checker" "$work/state.dump" "$work/state-live.json"
  gcore -o "$work/state" "$FIXTURE_PID" > /dev/null 2>&1
  "$cli" state --core "$work/state.$FIXTURE_PID" --profile-path "$work/profiles" --json > "$work/state-core.json"
  check "state core: python per thread agrees with faulthandler" python3 "$checker" "$work/state.dump" "$work/state-core.json"
  check "state core: every thread has merged frames" python3 -c "
import json, sys
threads = json.load(open(sys.argv[1]))['threads']
sys.exit(not all(t.get('merged_frames') and any(f['kind'] == 'python' for f in t['merged_frames']) for t in threads))" "$work/state-core.json"
  "$cli" state --core "$work/state.$FIXTURE_PID" --profile-path "$work/profiles" > "$work/state-core.txt"
  check "state text: Python frames shown" grep -q "Worker.run (.*threads_fixture.py:[0-9]*)" "$work/state-core.txt"
  "$cli" slice "$work/state.$FIXTURE_PID" -o "$work/small.core" --profile-path "$work/profiles" > "$work/slice.out" 2>&1
  check "slice: written" test -s "$work/small.core"
  "$cli" state --core "$work/small.core" --profile-path "$work/profiles" --json > "$work/state-small.json"
  check "slice: Python stacks survive" python3 "$checker" "$work/state.dump" "$work/state-small.json"
  check "slice: smaller than the core" test "$(stat -c %s "$work/small.core")" -lt "$(stat -c %s "$work/state.$FIXTURE_PID")"
  ls -la "$work/small.core" "$work/state.$FIXTURE_PID" | awk '{print "     ", $5, $9}'
else
  echo "skip state/slice checks: $fake_lib not built"
fi

# An interpreter of a build with no DWARF and no profile: a copy with another build-id.
other=$work/python3.11-other
real_id=$(python3 "$src/tests/cli/build_id.py" "$python")
python3 - "$python" "$other" "$real_id" <<'PY'
import sys
src, dst, build_id = sys.argv[1], sys.argv[2], bytes.fromhex(sys.argv[3])
data = open(src, "rb").read()
assert data.count(build_id) == 1
open(dst, "wb").write(data.replace(build_id, bytes(b ^ 0xff for b in build_id)))
PY
chmod +x "$other"
other_id=$(python3 "$src/tests/cli/build_id.py" "$other")
# A local interpreter of another build (sysroot) is not used for symbols: the profile of the core's own build-id is.
mkdir -p "$work/sysroot/usr/bin" && cp "$other" "$work/sysroot/usr/bin/python3.11"
"$cli" py-stacks --core "$core" --sysroot "$work/sysroot" --json > "$work/mismatch.json" 2> "$work/mismatch.err"
check "core, wrong local build: exit 0" test $? -eq 0
check "core, wrong local build: frames agree with faulthandler" python3 "$checker" "$work/live.dump" "$work/mismatch.json"

start_python_fixture "$other" other
"$cli" py-stacks --pid "$FIXTURE_PID" > "$work/other.out" 2> "$work/other.err"
check "no profile: exit 2" test $? -eq 2
check "no profile: one line" test "$(wc -l < "$work/other.err")" -eq 1
check "no profile: names version and build-id" grep -q "CPython 3\.11\.[0-9]* .*build-id $other_id" "$work/other.err"
check "no profile: says how to make one" grep -q "ncclscope layout python" "$work/other.err"

exit $((failures > 0))
