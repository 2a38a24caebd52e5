#!/usr/bin/env bash
# Issue 35, bounded cost: a live thread in uninterruptible sleep (tests/fixtures/
# kernel_sleep_fixture.cc: a vfork parent) takes no ptrace stop; seizing it cost 2 s to wait
# for the stop and 2 s more to detach. `state --pid --stacks` must leave it unseized, say why
# ("in uninterruptible sleep in the kernel (WCHAN) ...") in JSON and text, unwind the main thread
# to main(), and leave the process running with no tracer.
set -uo pipefail
source "$(dirname "$0")/live_fixture.sh"
start_live_fixture kernel_sleep_fixture '^(ready|not-in-D)$'
grep -q '^not-in-D$' "$work/fixture.out" && { echo "SKIP: this kernel does not show a vfork parent in state D"; exit 77; }
grep -q '^ready$' "$work/fixture.out" || { echo "FAIL: fixture not ready"; exit 1; }
pid=$(sed -n 's/^pid //p' "$work/fixture.out")
tid=$(sed -n 's/^tid fx-vfork //p' "$work/fixture.out")
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
timeout 120 "$build/bin/ncclscope" state --pid "$pid" --stacks --json > "$work/state.json" 2> "$work/state.err"
rc=$?
[ "$rc" -le 1 ] || { echo "FAIL: state exit $rc"; cat "$work/state.err"; exit 1; }
timeout 120 "$build/bin/ncclscope" state --pid "$pid" --stacks > "$work/state.txt" 2>&1
grep -A1 "^thread $tid " "$work/state.txt" | grep -q "no frames: in uninterruptible sleep in the kernel" ||
  fail "the text does not say why thread $tid has no frames: $(grep -A1 "^thread $tid " "$work/state.txt")"
tracer=$(awk '/^TracerPid:/{print $2}' "/proc/$pid/status")
[ "$tracer" = 0 ] || fail "the fixture is still traced by $tracer"
[ "$(awk '{print $3}' "/proc/$pid/task/$tid/stat")" = D ] || fail "thread $tid left its sleep (stopped?)"
python3 - "$work/state.json" "$tid" <<'PY' || failures=$((failures + 1))
import json, sys
threads = {t["tid"]: t for t in json.load(open(sys.argv[1]))["threads"]}
sleeper = threads.get(int(sys.argv[2]))
problems = []
if sleeper is None:
    problems.append("thread fx-vfork missing")
else:
    if sleeper.get("state") != "D": problems.append("state %r, want 'D'" % sleeper.get("state"))
    if not (sleeper.get("error") or "").startswith("in uninterruptible sleep in the kernel"):
        problems.append("error %r does not say the thread sleeps in the kernel" % sleeper.get("error"))
    if sleeper.get("frames"): problems.append("frames from a thread never stopped: %r" % sleeper["frames"][:2])
main = [t for t in threads.values() if any(f.get("function") == "main" for f in t.get("frames") or [])]
if len(main) != 1: problems.append("the main thread should unwind to main(), %d threads do" % len(main))
for problem in problems: print("FAIL:", problem)
sys.exit(1 if problems else 0)
PY
[ "$failures" = 0 ] && echo "stacks_kernel_sleep: all checks passed"
exit $((failures > 0))
