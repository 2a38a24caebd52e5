#!/bin/bash
# Issue 32: gdb's nccl-state shows the error signals first, on a real core, whether the library
# opens the core itself or reads gdb's memory (`set ncclscope memory callback`: the signal then
# comes from gdb's $_siginfo). corefiles/tpdp-rank-died rank 0: the capture's SIGABRT re-raised
# by faulthandler (no failure of its own), proxyState->asyncResult ncclRemoteError on comm
# 0xd41edffab4d18a63, ncclLastError "socketProgress: Connection closed by remote peer localhost<36858>"
# (values from gdb + libnccl DWARF: tests/cli/crash_state_test.sh).
source "$(dirname "$0")/lib.sh"
require_gdb
require_library
command -v xz >/dev/null || skip "xz not installed"
tar_file=$src/corefiles/tpdp-rank-died/ranks.tar.xz
[ -f "$tar_file" ] || skip "no corefiles/tpdp-rank-died"
tar -C "$work" -xJf "$tar_file"
exe=$(ls "$src"/corefiles/bin/python3.12.*.xz 2>/dev/null | head -n 1)
[ -n "$exe" ] || skip "no corefiles/bin/python3.12.*.xz"
xz -dc "$exe" > "$work/python3.12" && chmod +x "$work/python3.12"
mkdir -p "$work/lib"
for packed in "$src"/corefiles/lib/*.tar.xz; do tar -C "$work/lib" -xJf "$packed" --transform 's|.*/||'; done
lines=("signal SIGABRT raised again by the process's own handler (Python faulthandler) without abort()"
       "NCCL ERROR comm 0xd41edffab4d18a63 rank 0/2 (0x1e0c55b0): proxy_async_result=ncclRemoteError"
       'NCCL last error: "socketProgress: Connection closed by remote peer localhost<36858>"')
for mode in library callback; do
  gdb_run "$work/$mode.out" -iex "set solib-search-path $work/lib:$(dirname "${real_lib:-/usr/local/cuda-13.0/lib/libnccl.so.2}")" \
    -ex "set ncclscope memory $mode" -ex "file $work/python3.12" -ex "core-file $work/rank0.core" -ex "$(begin state)" -ex "nccl-state" -ex "$(end state)"
  section_of "$work/$mode.out" state > "$work/$mode.state"
  for line in "${lines[@]}"; do
    grep -qF "$line" "$work/$mode.state" || fail "$mode: nccl-state lacks: $line"
  done
  grep "0xd41edffab4d18a63" "$work/$mode.state" | grep -q "health ok" && fail "$mode: 'health ok' beside ncclRemoteError"
  # The error lines come before the communicator table.
  first_comm=$(grep -n "^#0 " "$work/$mode.state" | head -n 1 | cut -d: -f1)
  error_line=$(grep -n "^NCCL ERROR" "$work/$mode.state" | head -n 1 | cut -d: -f1)
  [ -n "$first_comm" ] && [ -n "$error_line" ] && [ "$error_line" -lt "$first_comm" ] || fail "$mode: errors not first"
done
finish
