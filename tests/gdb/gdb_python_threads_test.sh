#!/usr/bin/env bash
# nccl-threads shows each thread's Python stack (CPython 3.11 core of the Python
# fixture; a stand-in libnccl gives the extension its library).
source "$(dirname "$0")/lib.sh"
require_gdb
require_library
python=/usr/bin/python3.11
fake_lib=$build/fixtures/fakelib/libnccl.so.2
[ -x "$python" ] && [ -f "$fake_lib" ] && command -v gcore >/dev/null || skip "needs $python, gcore and $fake_lib"
python3 "$src/tests/cli/fake_profile.py" "$src/native/profiles/9fcf74d93a8c3605bf7718f594d0a24366e38536.json" \
  "$fake_lib" "$work/profiles" > /dev/null
NCCLSCOPE_FIXTURE_LIBNCCL=$fake_lib "$python" "$src/tests/fixtures/python/threads_fixture.py" \
  "$work/ready" "$work/dump" > /dev/null 2>&1 &
pid=$!; started_pids+=($pid)
for _ in $(seq 100); do [ -s "$work/ready" ] && break; sleep 0.1; done
gcore -o "$work/core" "$pid" > /dev/null 2>&1 || fail "gcore"
gdb_run "$work/out" "$python" "$work/core.$pid" -ex "set ncclscope profile-path $work/profiles" \
  -ex "nccl-threads --frames 3" -ex "nccl-threads --json"
grep -q "py#0 Worker.run (.*threads_fixture.py:[0-9]*)" "$work/out" || fail "Worker.run's Python frame shown"
grep -q "py#2 café (.*threads_fixture.py:[0-9]*)" "$work/out" || fail "a non-ASCII function name shown"
grep -q "more Python frame(s)" "$work/out" || fail "--frames caps Python frames too"
grep -q '"qualname": "Worker.run"' "$work/out" || fail "--json carries the python entries"
[ "$failures" -eq 0 ] || cat "$work/out"
finish
