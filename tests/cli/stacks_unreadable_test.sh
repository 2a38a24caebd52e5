#!/usr/bin/env bash
# Issue 35, bad input: a live thread whose stack is unmapped (tests/fixtures/
# unreadable_stack_fixture.cc). `state --pid --stacks` must give that thread its registers'
# frame (read) and a reason that names the unreadable stack pointer, unwind the main thread
# to main(), finish in bounded time (the test's timeout), and leave the process running
# (never stopped, never killed by the stop).
set -uo pipefail
source "$(dirname "$0")/live_fixture.sh"
start_live_fixture unreadable_stack_fixture '^ready$'
grep -q '^ready$' "$work/fixture.out" || { echo "FAIL: fixture not ready"; exit 1; }
pid=$(sed -n 's/^pid //p' "$work/fixture.out")
tid=$(sed -n 's/^tid fx-nostack //p' "$work/fixture.out")
timeout 120 "$build/bin/ncclscope" state --pid "$pid" --stacks --json > "$work/state.json" 2> "$work/state.err"
rc=$?
[ "$rc" -le 1 ] || { echo "FAIL: state exit $rc"; cat "$work/state.err"; exit 1; }
sleep 0.2
failures=0
state=$(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null)
case $state in
  S|R|D) ;;
  *) echo "FAIL: the fixture is '${state:-gone}' after state --pid, not running"; failures=1 ;;
esac
python3 - "$work/state.json" "$tid" <<'PY' || failures=1
import json, sys
threads = {t["tid"]: t for t in json.load(open(sys.argv[1]))["threads"]}
tid = int(sys.argv[2])
failures = []
nostack = threads.get(tid)
if nostack is None:
    failures.append("thread %d (fx-nostack) missing" % tid)
else:
    functions = [f.get("function") for f in nostack["frames"]]
    if not functions or functions[0] not in ("read", "__libc_read", "__GI___libc_read"):
        failures.append("fx-nostack's frame 0 should be read(), got %s" % functions)
    error = nostack.get("error") or ""
    if "stack memory unreadable at its stack pointer 0x" not in error:
        failures.append("fx-nostack's error should name the unreadable stack, got %r" % error)
main = [t for t in threads.values() if any(f.get("function") == "main" for f in t["frames"])]
if len(main) != 1:
    failures.append("the main thread should unwind to main(), %d threads do" % len(main))
elif main[0].get("error"):
    failures.append("the main thread has an error: %r" % main[0]["error"])
for failure in failures:
    print("FAIL:", failure)
print("%d threads checked" % len(threads))
sys.exit(1 if failures else 0)
PY
exit $failures
