#!/bin/bash
# A remote target (gdbserver --attach, then `target remote`): the library cannot
# open the process itself, so gdb supplies memory through the callback, with the
# regions of `info proc mappings`. Same values as the local fixture test.
source "$(dirname "$0")/lib.sh"
require_gdb
require_library
require_comm_fixture
command -v gdbserver >/dev/null || skip "gdbserver not installed"

start_comm_fixture "$fake_lib"
port=$((20000 + RANDOM % 20000))
gdbserver --attach "127.0.0.1:$port" "$fixture_pid" >"$work/gdbserver.log" 2>&1 &
server=$!
started_pids+=("$server")
for _ in $(seq 100); do grep -q "Listening on port" "$work/gdbserver.log" && break; sleep 0.05; done
out=$work/remote.out
gdb_run "$out" -ex "$(fixture_settings)" -ex "target remote 127.0.0.1:$port" \
  -ex 'python print("CONNECTION", gdb.selected_inferior().connection.type)' \
  -ex "$(begin state-json)" -ex 'nccl-state --json' -ex "$(end state-json)" \
  -ex "$(begin state)" -ex 'nccl-state' -ex "$(end state)" \
  -ex "$(begin threads)" -ex 'nccl-threads' -ex "$(end threads)" \
  -ex 'set ncclscope memory library' \
  -ex "$(begin library)" -ex 'nccl-state' -ex "$(end library)" \
  -ex 'detach'
expect "$out" '^CONNECTION remote$'
check_state "$out" state-json callback "" 0
section_of "$out" state > "$work/state.txt"
expect "$work/state.txt" '^NCCL 2\.28\.9 in gdb-supplied memory /.*comm_fixture; '
expect "$work/state.txt" "^#0  $fixture_comm  hash 0x6db0a96d9cb7fc37  rank 1/2 "
section_of "$out" threads > "$work/threads.txt"
expect "$work/threads.txt" "^\\[1\\] thread $fixture_pid \"comm_fixture\" blocked in sleep$"  # the library classifies: pause() is a sleep
# `memory library` on a remote target: nothing to open, a one-line error.
section_of "$out" library > "$work/library.txt"
expect "$work/library.txt" '^ncclscope: the target is remote \(remote\): the library cannot open it'
expect_not "$out" 'Traceback|internal error'
finish
