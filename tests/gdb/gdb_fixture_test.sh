#!/bin/bash
# nccl-state and friends on the comm fixture (a process holding a
# communicator laid out from the real 2.28.9 profile), under gdb:
#   live (the library reads /proc/PID itself), live through gdb's memory
#   (set ncclscope memory callback), a gcore of it (library and callback),
#   the ncclComms registry route, and $nccl_comm with libnccl's DWARF.
# Runs with the stand-in libnccl, and with the real one when installed.
source "$(dirname "$0")/lib.sh"
require_gdb
require_library
require_comm_fixture

for lib in $(fixture_libraries); do
  tag=$([ "$lib" = "$fake_lib" ] && echo fake || echo real)
  echo "== $tag libnccl: $lib"
  start_comm_fixture "$lib"
  pid=$fixture_pid
  out=$work/$tag-live.out
  gdb_run "$out" -ex "$(fixture_settings)" -p "$pid" \
    -ex "$(begin state)" -ex 'nccl-state' -ex "$(end state)" \
    -ex "$(begin state-json)" -ex 'nccl-state --json' -ex "$(end state-json)" \
    -ex "$(begin comm)" -ex "nccl-comm $fixture_comm" -ex "$(end comm)" \
    -ex "$(begin comm-hash-json)" -ex 'nccl-comm 0x6db0a96d9cb7fc37 --json' -ex "$(end comm-hash-json)" \
    -ex "set \$fixture_comm = (char *) $fixture_comm" \
    -ex "$(begin comm-expr-json)" -ex 'nccl-comm (void *) $fixture_comm --json' -ex "$(end comm-expr-json)" \
    -ex "$(begin ring)" -ex 'nccl-ring' -ex "$(end ring)" \
    -ex "$(begin proxy)" -ex 'nccl-proxy' -ex "$(end proxy)" \
    -ex 'set ncclscope memory callback' \
    -ex "$(begin callback-json)" -ex 'nccl-state --json' -ex "$(end callback-json)" \
    -ex 'set ncclscope memory auto' \
    -ex "$(begin dwarf)" -ex 'p $nccl_comm(0)->rank' -ex 'p $nccl_comm(0)->nRanks' -ex "$(end dwarf)" \
    -ex "gcore $work/$tag.core"
  check_state "$out" state-json live scan
  check_state "$out" callback-json callback
  check_json "$out" comm-hash-json "assert [c['rank'] for c in doc] == [1]"
  check_json "$out" comm-expr-json "assert [c['address'] for c in doc] == ['$fixture_comm']"
  section_of "$out" state > "$work/state.txt"
  expect "$work/state.txt" "^NCCL 2\\.28\\.9 in live pid $pid "
  expect "$work/state.txt" "^#0  $fixture_comm  hash 0x6db0a96d9cb7fc37  rank 1/2  dev 1 \\(0000:19:00\\.0\\)  launched AllGather=1 AllReduce=7  health ok$"
  expect "$work/state.txt" '^1 communicator(;|$)'
  section_of "$out" comm > "$work/comm.txt"
  expect "$work/comm.txt" "^communicator $fixture_comm  hash 0x6db0a96d9cb7fc37$"
  expect "$work/comm.txt" '^  coll_op_count 8  op_count 0  p2p_op_count 3 \(per channel: 0 3\)$'
  expect "$work/comm.txt" '^    AllReduce count 1024 ncclFloat32 ncclSum root 0$'
  section_of "$out" ring > "$work/ring.txt"
  expect "$work/ring.txt" '^  ch0-1  ring: 1 -> 0 -> 1   tree: up 0 down \[\]$'
  section_of "$out" proxy > "$work/proxy.txt"
  expect "$work/proxy.txt" '^    1        0     8       4       0         4            2$'
  section_of "$out" dwarf > "$work/dwarf.txt"
  if [ "$tag" = real ]; then
    expect "$work/dwarf.txt" '^\$1 = 1$' '$nccl_comm(0)->rank is not 1'
    expect "$work/dwarf.txt" '^\$2 = 2$' '$nccl_comm(0)->nRanks is not 2'
  else
    expect "$work/dwarf.txt" '^\$nccl_comm: no DWARF for struct ncclComm'
  fi
  expect_not "$out" 'Traceback|internal error'
  state=$(process_state "$pid")
  [ "$state" = S ] || fail "$tag: fixture left in state '$state' after gdb detached"
  stop_fixture "$pid"

  # The core of that process, read by the library and through gdb.
  core=$work/$tag.core
  if [ -s "$core" ]; then
    out=$work/$tag-core.out
    gdb_run "$out" -ex "$(fixture_settings)" "$comm_fixture" "$core" \
      -ex "$(begin state-json)" -ex 'nccl-state --json' -ex "$(end state-json)" \
      -ex "$(begin state)" -ex 'nccl-state' -ex "$(end state)" \
      -ex 'set ncclscope memory callback' \
      -ex "$(begin callback-json)" -ex 'nccl-state --json' -ex "$(end callback-json)"
    check_state "$out" state-json core scan
    check_json "$out" state-json "assert doc['target']['path'] == '$core', doc['target']"
    check_state "$out" callback-json callback
    section_of "$out" state > "$work/state.txt"
    expect "$work/state.txt" "^NCCL 2\\.28\\.9 in core $core \\(pid $pid\\) "
    rm -f "$core"
  else
    fail "$tag: gcore wrote no core"
  fi
done

# The registry route (ncclComms in the real library's .bss).
if [ -r "$real_lib" ]; then
  start_comm_fixture "$real_lib" --registry
  out=$work/registry.out
  gdb_run "$out" -p "$fixture_pid" -ex "$(begin state-json)" -ex 'nccl-state --json' -ex "$(end state-json)"
  check_state "$out" state-json live registry
  stop_fixture "$fixture_pid"
fi
finish
