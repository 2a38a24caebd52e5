#!/bin/bash
# nccl-threads under gdb, live (gdb -p) and on a core (gdb EXE CORE), with the
# stack fixture (threads parked in known functions, one with an escape in its
# name). Checks blocked_in, frames, escaping, that the selected thread/frame
# are restored and that the process is left running. No native library needed.
source "$(dirname "$0")/lib.sh"
require_gdb
fixture=${STACK_FIXTURE:-$build/fixtures/stack_fixture}
[ -x "$fixture" ] || skip "no $fixture (build the stack_fixture target)"

start_fixture "$fixture" --extra-threads 1
pid=$fixture_pid
out=$work/live.out
gdb_run "$out" -p "$pid" -ex 'thread 2' -ex 'frame 1' \
  -ex "$(begin json)" -ex 'nccl-threads --json --frames 4' -ex "$(end json)" \
  -ex "$(begin text)" -ex 'nccl-threads --frames 3' -ex "$(end text)" \
  -ex 'python print("SELECTED %d %d" % (gdb.selected_thread().num, gdb.selected_frame().level()))' \
  -ex "gcore $work/fixture.core"

check_json "$out" json '
assert doc["source"] == "gdb"
threads = {t["name"]: t for t in doc["threads"]}
assert set(threads) == {"stack_fixture", "fx-poller", "\x1b[31mevil", "fx-sleeper-0"}, sorted(threads)
def functions(name):
    return [f["function"] for f in threads[name]["frames"]]
# The library classifies the frames gdb unwound too (stacks/blocked_in.cc): pause() is a sleep.
assert threads["stack_fixture"]["blocked_in"] == "sleep", threads["stack_fixture"]["blocked_in"]
assert "fixture_wait_in_user_code" in functions("stack_fixture"), functions("stack_fixture")
assert threads["fx-poller"]["blocked_in"] == "poll/epoll"
assert "fixture_poll_loop" in functions("fx-poller")
assert threads["fx-sleeper-0"]["blocked_in"] == "sleep"
assert all(len(t["frames"]) <= 4 for t in doc["threads"])
main = threads["stack_fixture"]
assert main["tid"] == '"$pid"' and main["gdb_num"] == 1
assert all(f["pc"].startswith("0x") for t in doc["threads"] for f in t["frames"])'
section_of "$out" text > "$work/text.txt"
expect "$work/text.txt" '^\[3\] thread [0-9]+ "\\x1b\[31mevil" blocked in sleep$'
expect "$work/text.txt" '^    #1 0x[0-9a-f]+ fixture_poll_loop\+[0-9]+ in stack_fixture$'
expect "$work/text.txt" '^4 threads \(from gdb\)$'
expect_not "$work/text.txt" $'\x1b' "a raw escape character reached the terminal"
expect "$out" '^SELECTED 2 1$' "nccl-threads did not restore thread 2 / frame 1"
# No native library: gdb's threads still come as data (--json); every text, the threads'
# included, is the library's (snapshot/state_views.cc), so the text commands say why in one line.
NCCLSCOPE_LIB=/nonexistent/libncclscope.so gdb_run "$work/nolib.out" -p "$pid" -ex 'nccl-state' \
  -ex 'nccl-threads --frames 1' -ex "$(begin json)" -ex 'nccl-threads --json --frames 1' -ex "$(end json)"
expect "$work/nolib.out" '^ncclscope: NCCLSCOPE_LIB=/nonexistent/libncclscope.so: no libncclscope.so there$'
test "$(grep -c '^ncclscope: NCCLSCOPE_LIB=/nonexistent/libncclscope.so: no libncclscope.so there$' "$work/nolib.out")" = 2 \
  || fail "nccl-state and nccl-threads without the library: not one line each naming it"
check_json "$work/nolib.out" json '
assert doc["source"] == "gdb" and len(doc["threads"]) == 4, doc
assert all(t["blocked_in"] is None for t in doc["threads"])  # the classifier is the library too'
state=$(process_state "$pid")
[ "$state" = S ] || fail "fixture left in state '$state' after gdb detached (expected S)"

# The same from a core of that process.
[ -s "$work/fixture.core" ] || { fail "gcore wrote no core"; finish; }
core_out=$work/core.out
gdb_run "$core_out" "$fixture" "$work/fixture.core" \
  -ex "$(begin json)" -ex 'nccl-threads --json' -ex "$(end json)"
check_json "$core_out" json '
threads = {t["name"] or t["tid"]: t for t in doc["threads"]}
assert len(doc["threads"]) == 4, len(doc["threads"])
blocked = sorted(t["blocked_in"] for t in doc["threads"])
# From a core the library classifies (stacks/blocked_in.cc): pause() is a sleep.
assert blocked == ["poll/epoll", "sleep", "sleep", "sleep"], blocked
functions = [f["function"] for t in doc["threads"] for f in t["frames"]]
assert "fixture_poll_loop" in functions and "fixture_evil_named_wait" in functions'
finish
