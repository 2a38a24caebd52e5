#!/bin/bash
# Issue 32: gdb's nccl-state shows PyTorch's watchdog failure first (torch.liveness), on a
# kernel-written core of the stand-in libtorch_cuda.so (tests/cli/torch_watchdog_mock.sh),
# whether the library opens the core itself or reads gdb's memory and registers (callback).
source "$(dirname "$0")/lib.sh"
require_gdb
require_library
command -v g++ > /dev/null || skip "no g++"
case "$(cat /proc/sys/kernel/core_pattern 2>/dev/null)" in
  core|core.*) ;;
  *) skip "core_pattern writes no core into the working directory" ;;
esac
source "$src/tests/cli/torch_watchdog_mock.sh"
build_watchdog_mock "$work" "$build/bin/ncclscope" || fail "the stand-in did not build"
cd "$work" || exit 1
ulimit -c unlimited
mkfifo "$work/out"
"$work/mock" > "$work/out" &
pid=$!
read -r expected < "$work/out"
watchdog_tid=$(python3 -c 'import json, sys; print(json.loads(sys.argv[1])["watchdog_tid"])' "$expected")
kill -ABRT "$pid"; wait "$pid" 2> /dev/null
core=$(ls "$work"/core* 2> /dev/null | head -1)
[ -n "$core" ] || fail "no core written"
line="PYTORCH watchdog pg 0 (rank 1/2, thread $watchdog_tid): heartbeat "
for mode in library callback; do
  gdb_run "$work/$mode.out" -ex "set ncclscope memory $mode" -ex "set ncclscope profile-path $work/profiles" \
    -ex "file $work/mock" -ex "core-file $core" -ex "$(begin state)" -ex "nccl-state" -ex "$(end state)"
  section_of "$work/$mode.out" state > "$work/$mode.state"
  grep -F "$line" "$work/$mode.state" | grep -q "timeout 80000 ms, error TIMEOUT, terminating, rethrew an exception$" ||
    fail "$mode: nccl-state lacks the watchdog line: $(head -5 "$work/$mode.state")"
  grep -qF "PYTORCH shouldDump_ set" "$work/$mode.state" || fail "$mode: nccl-state lacks shouldDump_"
  echo "$mode: $(grep -F "$line" "$work/$mode.state")"
done
finish
