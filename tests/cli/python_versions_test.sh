#!/usr/bin/env bash
# Python stacks of other real CPython builds (3.11-3.14) found on this machine
# (pyenv's under ~/.pyenv/versions, or $NCCLSCOPE_TEST_PYTHONS: space-separated
# interpreters or wrapper scripts that exec one, e.g. Ubuntu's python3.12 of the GPU
# machine run here through corefiles/lib's Ubuntu loader: docs/python.md),
# live and from a gcore'd core, checked against their own faulthandler dumps.
# 3.13+ are read through _Py_DebugOffsets, 3.11/3.12 through their own DWARF.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
fixture=$src/tests/fixtures/python/threads_fixture.py
checker=$src/tests/cli/check_python_stacks.py
pythons=${NCCLSCOPE_TEST_PYTHONS:-$(ls -d "$HOME"/.pyenv/versions/3.1[1-4]*/bin/python3.1[1-4] 2>/dev/null)}
[ -n "$pythons" ] || { echo "SKIP: no other CPython 3.11-3.14 here (set NCCLSCOPE_TEST_PYTHONS)"; exit 77; }
for python in $pythons; do
  tag=$(basename "$(dirname "$(dirname "$python")")")
  [ -n "${NCCLSCOPE_TEST_PYTHONS:-}" ] && tag=$(basename "$python")
  "$python" "$fixture" "$work/$tag.ready" "$work/$tag.dump" > "$work/$tag.out" 2>&1 &
  pid=$!; pids+=($pid)
  for _ in $(seq 100); do [ -s "$work/$tag.ready" ] && break; sleep 0.1; done
  kill -USR1 "$pid"
  for _ in $(seq 50); do grep -q "Current thread" "$work/$tag.dump" 2>/dev/null && break; sleep 0.1; done
  "$cli" py-stacks --pid "$pid" --json > "$work/$tag.live.json" 2> "$work/$tag.live.err"
  check "$tag live: exit 0" test $? -eq 0
  check "$tag live: frames agree with faulthandler" python3 "$checker" "$work/$tag.dump" "$work/$tag.live.json"
  if command -v gcore > /dev/null; then
    gcore -o "$work/$tag" "$pid" > /dev/null 2>&1
    "$cli" py-stacks --core "$work/$tag.$pid" --json > "$work/$tag.core.json" 2> "$work/$tag.core.err"
    check "$tag core: exit 0" test $? -eq 0
    check "$tag core: frames agree with faulthandler" python3 "$checker" "$work/$tag.dump" "$work/$tag.core.json"
    rm -f "$work/$tag.$pid"
  fi
  { kill -9 "$pid"; wait "$pid"; } 2>/dev/null
done
# Older interpreters are named and refused, never misread.
for python in $(ls -d "$HOME"/.pyenv/versions/3.{9,10}*/bin/python3.{9,10} 2>/dev/null); do
  tag=$(basename "$(dirname "$(dirname "$python")")")
  "$python" -c "import time, sys; print(1, flush=True); time.sleep(60)" > "$work/$tag.ready" &
  pid=$!; pids+=($pid)
  for _ in $(seq 100); do [ -s "$work/$tag.ready" ] && break; sleep 0.1; done
  "$cli" py-stacks --pid "$pid" > /dev/null 2> "$work/$tag.err"
  check "$tag: exit 2" test $? -eq 2
  check "$tag: says the version is not supported" grep -q "says 3\.[0-9]*): not supported (3.11-3.14 are)" "$work/$tag.err"
  { kill -9 "$pid"; wait "$pid"; } 2>/dev/null
done
exit $((failures > 0))
