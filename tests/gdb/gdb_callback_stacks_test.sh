#!/bin/bash
# Library stacks over gdb's memory (set ncclscope memory callback): gdb sends each thread's
# frame-0 registers, the library unwinds over gdb's reads (stacks/thread_stacks.cc
# unwind_threads_over_target). On the stack fixture live (gdb -p) and on its gcore, the
# frames equal those the library unwinds from the core itself (library mode), pc for pc;
# the selected thread and frame are restored and the process is left running.
source "$(dirname "$0")/lib.sh"
require_gdb
require_library
fixture=${STACK_FIXTURE:-$build/fixtures/stack_fixture}
[ -x "$fixture" ] || skip "no $fixture (build the stack_fixture target)"

start_fixture "$fixture" --extra-threads 1
pid=$fixture_pid
sleep 0.2  # "ready" comes just before the main thread's pause()
out=$work/live.out
gdb_run "$out" -p "$pid" -ex 'thread 2' -ex 'frame 1' \
  -ex 'set ncclscope memory callback' \
  -ex "$(begin live-callback)" -ex 'nccl-state --json' -ex "$(end live-callback)" \
  -ex "$(begin live-gdb)" -ex 'nccl-threads --json --source gdb --frames 64' -ex "$(end live-gdb)" \
  -ex 'python print("SELECTED %d %d" % (gdb.selected_thread().num, gdb.selected_frame().level()))' \
  -ex "gcore $work/fixture.core"
expect "$out" '^SELECTED 2 1$' "reading the threads' registers did not restore thread 2 / frame 1"
expect_not "$out" 'Traceback|internal error'
state=$(process_state "$pid")
[ "$state" = S ] || fail "fixture left in state '$state' after gdb detached (expected S)"
section_of "$out" live-callback > "$work/live-callback.json"
section_of "$out" live-gdb > "$work/live-gdb.json"

check_json "$out" live-callback '
assert doc["target"]["kind"] == "callback", doc["target"]
threads = {t["name"]: t for t in doc["threads"]}
assert set(threads) == {"stack_fixture", "fx-poller", "\x1b[31mevil", "fx-sleeper-0"}, sorted(threads)
for thread in doc["threads"]:
    assert "error" not in thread, thread
    assert len(thread["frames"]) >= 4, thread
def functions(name):
    return [f["function"] for f in threads[name]["frames"]]
assert "fixture_wait_in_user_code" in functions("stack_fixture"), functions("stack_fixture")
assert threads["stack_fixture"]["blocked_in"] == "sleep", threads["stack_fixture"]["blocked_in"]
assert "fixture_poll_loop" in functions("fx-poller") and threads["fx-poller"]["blocked_in"] == "poll/epoll"
assert not [w for w in doc["warnings"] if w["kind"] == "stacks"], doc["warnings"]'

# gdb unwound the same threads itself: the library's frames are gdb's, pc for pc (gdb may
# stop at a different outermost frame, so the shorter list is compared).
python3 - "$work/live-callback.json" "$work/live-gdb.json" <<'PY' || fail "live: library frames over gdb's memory differ from gdb's own"
import json, sys
library = {t["tid"]: [f["pc"] for f in t["frames"]] for t in json.load(open(sys.argv[1]))["threads"]}
by_gdb = {t["tid"]: [f["pc"] for f in t["frames"]] for t in json.load(open(sys.argv[2]))["threads"]}
assert set(library) == set(by_gdb), (sorted(library), sorted(by_gdb))
compared = 0
for tid, pcs in library.items():
    common = min(len(pcs), len(by_gdb[tid]))
    assert common >= 3 and pcs[:common] == by_gdb[tid][:common], (tid, pcs, by_gdb[tid])  # gdb stops at main
    compared += common
print("live: %d frames of %d threads equal to gdb's" % (compared, len(library)))
PY

[ -s "$work/fixture.core" ] || { fail "gcore wrote no core"; finish; }
core_out=$work/core.out
gdb_run "$core_out" "$fixture" "$work/fixture.core" \
  -ex "$(begin core-library)" -ex 'nccl-state --json' -ex "$(end core-library)" \
  -ex 'set ncclscope memory callback' \
  -ex "$(begin core-callback)" -ex 'nccl-state --json' -ex "$(end core-callback)"
expect_not "$core_out" 'Traceback|internal error'
section_of "$core_out" core-library > "$work/core-library.json"
section_of "$core_out" core-callback > "$work/core-callback.json"
python3 - "$work/core-library.json" "$work/core-callback.json" "$work/live-callback.json" <<'PY' || fail "frames over gdb's memory differ from the core path's"
import json, sys
library, callback, live = (json.load(open(path)) for path in sys.argv[1:4])
assert library["target"]["kind"] == "core" and callback["target"]["kind"] == "callback"
def frames(document):
    return {t["tid"]: [(f["pc"], f["function"]) for f in t["frames"]] for t in document["threads"]}
core_frames, callback_frames, live_frames = frames(library), frames(callback), frames(live)
assert len(core_frames) == 4, core_frames
assert callback_frames == core_frames, (callback_frames, core_frames)
# gdb -p stopped the process and gcore saved that stop: live and core are one picture.
assert live_frames == core_frames, (live_frames, core_frames)
assert all(len(pcs) >= 4 for pcs in core_frames.values()), core_frames
blocked = {t["tid"]: t["blocked_in"] for t in library["threads"]}
assert {t["tid"]: t["blocked_in"] for t in callback["threads"]} == blocked
total = sum(len(pcs) for pcs in core_frames.values())
print("core: %d frames of %d threads equal (core path, gdb callback on the core, gdb callback live)"
      % (total, len(core_frames)))
PY
finish
