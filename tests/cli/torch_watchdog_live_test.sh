#!/usr/bin/env bash
# Issue 32: PyTorch's watchdog liveness (torch/watchdog.h) read from a real process and from its
# kernel-written core, not synthetic memory: tests/cli/torch_watchdog_mock.cc built as a
# libtorch_cuda.so (the watchdog and monitor classes nested and started as PyTorch 2.11 does,
# with real libstdc++ std::thread states), its profile made from its own DWARF by
# `layout extract` (the structs and enum by name) plus the two state vtables and shouldDump_
# from its .symtab, as the torch profile carries them. Checked: the objects' addresses and tids
# the program printed, every value it set, without --freeze (a live thread's stack pointer from
# /proc/PID/task/TID/syscall), from the core and from its slice, and the `state` text's failure line.
set -uo pipefail
build=${NCCLSCOPE_BUILD:?} src=${NCCLSCOPE_SRC:?}
cli=$build/bin/ncclscope
command -v g++ > /dev/null || { echo "SKIP: no g++"; exit 77; }
work=$(mktemp -d)
trap '[ -n "${MOCK_PID:-}" ] && kill -KILL "$MOCK_PID" 2> /dev/null; rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

source "$src/tests/cli/torch_watchdog_mock.sh"
build_watchdog_mock "$work" "$cli" || { echo "FAIL: the stand-in did not build"; exit 1; }

check() {  # state.json expected.json label
  python3 - "$1" "$2" "$3" <<'PY'
import json, sys
state, expected, label = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
liveness = (state.get("torch") or {}).get("liveness") or {}
problems = []
def want(what, got, value):
    if got != value:
        problems.append("%s: %r, want %r" % (what, got, value))
dogs, monitors = liveness.get("watchdogs", []), liveness.get("heartbeat_monitors", [])
want("watchdogs", len(dogs), 1)
want("monitors", len(monitors), 1)
if dogs:
    dog = dogs[0]
    want("watchdog", int(dog["watchdog"], 16), int(expected["watchdog"], 16))
    want("process_group", int(dog["process_group"], 16), int(expected["process_group"], 16))
    want("watchdog tid", dog["tid"], expected["watchdog_tid"])
    for key, value in (("error", "TIMEOUT"), ("timeout_ms", 80000), ("pg_rank", 1), ("pg_size", 2), ("pg_uid", 0),
                       ("terminating", True), ("exception_stored", True), ("unavailable", {})):
        want(key, dog.get(key), value)
    if not isinstance(dog.get("heartbeat"), int) or dog["heartbeat"] < 1:
        problems.append("heartbeat %r" % dog.get("heartbeat"))
if monitors:
    monitor = monitors[0]
    want("monitor", int(monitor["monitor"], 16), int(expected["monitor"], 16))
    want("monitor tid", monitor["tid"], expected["monitor_tid"])
    for key, value in (("heartbeat_timeout_s", 20), ("dump_timeout_ms", 2000), ("monitoring_enabled", True),
                       ("terminate_requested", False), ("pg_uid", 0), ("unavailable", {})):
        want(key, monitor.get(key), value)
    if not isinstance(monitor.get("last_work_list_update_steady_ns"), int) or monitor["last_work_list_update_steady_ns"] <= 0:
        problems.append("last_work_list_update_steady_ns %r" % monitor.get("last_work_list_update_steady_ns"))
want("should_dump", liveness.get("should_dump"), True)
for p in problems:
    print("FAIL: %s: %s" % (label, p))
sys.exit(1 if problems else 0)
PY
}

cd "$work" || exit 1
ulimit -c unlimited
mkfifo "$work/out"
"$work/mock" > "$work/out" &
MOCK_PID=$!
head -1 "$work/out" > "$work/expected.json"
"$cli" state --pid "$MOCK_PID" --json --profile-path "$work/profiles" > "$work/live.json" 2> /dev/null
check "$work/live.json" "$work/expected.json" live || failures=$((failures + 1))
"$cli" state --pid "$MOCK_PID" --profile-path "$work/profiles" > "$work/live.txt" 2> /dev/null
grep -q "^PYTORCH watchdog pg 0 (rank 1/2, thread $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["watchdog_tid"])' "$work/expected.json")): heartbeat [0-9]*, timeout 80000 ms, error TIMEOUT, terminating, rethrew an exception$" "$work/live.txt" ||
  fail "no PYTORCH watchdog failure line: $(grep -i watchdog "$work/live.txt" | head -3)"

pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
case "$pattern" in
  core|core.*)
    kill -ABRT "$MOCK_PID"; wait "$MOCK_PID" 2> /dev/null; MOCK_PID=
    core=$(ls "$work"/core* 2> /dev/null | head -1)
    if [ -z "$core" ]; then
      fail "no core written"
    else
      "$cli" state --core "$core" --exe "$work/mock" --json --profile-path "$work/profiles" > "$work/core.json" 2> /dev/null
      check "$work/core.json" "$work/expected.json" core || failures=$((failures + 1))
      # A slice keeps what the decoder read (the stack word, the objects, shouldDump_).
      "$cli" slice "$core" -o "$work/small.core" --exe "$work/mock" --profile-path "$work/profiles" > /dev/null 2>&1 ||
        fail "slice failed"
      "$cli" state --core "$work/small.core" --exe "$work/mock" --json --profile-path "$work/profiles" > "$work/slice.json" 2> /dev/null
      check "$work/slice.json" "$work/expected.json" slice || failures=$((failures + 1))
    fi ;;
  *) echo "note: core_pattern '$pattern' writes no core here: the core half skipped" ;;
esac
[ "$failures" -eq 0 ] && echo "PASS: watchdog liveness live, from the core and from its slice"
exit $((failures > 0))
