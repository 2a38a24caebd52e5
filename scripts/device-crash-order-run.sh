#!/usr/bin/env bash
# One GPU-machine call for issues 32 and 33 (4-rank PyTorch jobs on one GPU,
# tests/scenarios/torch_crash_order.py), through scripts/device-torch-multigroup.sh:
#
#   scripts/device-crash-order-run.sh crash    # crash-*: the job dies by itself; survivors' cores
#   scripts/device-crash-order-run.sh order    # order-*: hangs, SIGABRT; plus the cuda-gdb probe
#   scripts/device-crash-order-run.sh all      # both, PARALLEL (3) jobs at once
#   scripts/device-crash-order-run.sh pick order-gpu-spin-fr-off ...   # just these, with `all`'s settings
#
# Run from the repo root with $OUT set, carrying .device-carry/ (ncclscope stripped,
# lib/{libncclscope.so,libdw.so.1,libelf.so.1}). Everything comes back in at most 8 files:
# log.txt, meta.tar.xz, sizes.txt, cores.tar.partNN (15 MiB each; inside: <scenario>.ranks.tar.xz).
# `all` keeps NCCL slices only (PYTHON_SLICES=0): 44 python slices of ~600 MB each could not be
# xz'ed inside one call (2026-12-05: the pack outran the 600 s limit). The NCCL slice holds the
# flight recorder and the Python frames triage reads (corefiles/tpdp-* ship the same kind).
set -uo pipefail
: "${OUT:?OUT must name the folder whose files come back}"
case ${1:-} in
  crash) set -- crash-sigkill crash-exception crash-native-segfault crash-cuda-illegal-address crash-watchdog-timeout
         export CRASH_WAIT_S=${CRASH_WAIT_S:-100} SPIN_GDB=0 ;;
  order) set -- order-p2p-skip order-split-vs-collective order-lock-inversion order-gpu-spin \
                order-p2p-skip-fr-off order-lock-inversion-fr-off order-split-vs-collective-fr-off order-gpu-spin-fr-off
         export SPIN_GDB=${SPIN_GDB:-1} HANG_TIMEOUT_S=${HANG_TIMEOUT_S:-60} ;;
  pick) shift; [ $# -gt 0 ] || { echo "pick: name the scenarios" >&2; exit 2; }
        export CRASH_WAIT_S=${CRASH_WAIT_S:-90} SPIN_GDB=${SPIN_GDB:-0} HANG_TIMEOUT_S=${HANG_TIMEOUT_S:-45} \
               PARALLEL=${PARALLEL:-4} PYTHON_SLICES=${PYTHON_SLICES:-0} LIVE_CHECK=${LIVE_CHECK:-0} TRIAGE_TEXT=${TRIAGE_TEXT:-0} \
               TRIAGE_FULL=${TRIAGE_FULL:-0} SPIN_GDB_AFTER=${SPIN_GDB_AFTER:-none} CAPTURE_DEADLINE_S=${CAPTURE_DEADLINE_S:-300} ;;
  all) set -- crash-watchdog-timeout crash-sigkill crash-exception crash-cuda-illegal-address crash-native-segfault \
              order-p2p-skip order-split-vs-collective order-lock-inversion order-gpu-spin \
              order-p2p-skip-fr-off order-lock-inversion-fr-off order-split-vs-collective-fr-off order-gpu-spin-fr-off
       export CRASH_WAIT_S=${CRASH_WAIT_S:-90} SPIN_GDB=${SPIN_GDB:-1} HANG_TIMEOUT_S=${HANG_TIMEOUT_S:-45} \
              PARALLEL=${PARALLEL:-4} PYTHON_SLICES=${PYTHON_SLICES:-0} LIVE_CHECK=${LIVE_CHECK:-0} TRIAGE_TEXT=${TRIAGE_TEXT:-0} \
              TRIAGE_FULL=${TRIAGE_FULL:-0} SPIN_GDB_AFTER=order-gpu-spin CAPTURE_DEADLINE_S=${CAPTURE_DEADLINE_S:-300} ;;
  *) echo "usage: $0 crash|order|all|pick SCENARIO..." >&2; exit 2 ;;
esac
export PARALLEL=${PARALLEL:-3} TORCH_MATERIAL=0 NO_BINARIES=1 BUDGET_BYTES=$((48 * 1024 * 1024)) \
       CAPTURE_DEADLINE_S=${CAPTURE_DEADLINE_S:-360} SPIN_GDB_DEADLINE_S=${SPIN_GDB_DEADLINE_S:-400}
timeout "${RUN_TIMEOUT_S:-575}" bash scripts/device-torch-multigroup.sh "$@" 2>&1 | tee "$OUT/log.txt"
# Cut off before it packed: send back what is there (logs, truths, every slice made so far), fast.
if [ ! -f "$OUT/meta.tar.xz" ]; then
  work=${WORK:-/tmp/multigroup}
  echo "[crash-order] cut off before packing: partial pack of $work"
  tar -C "$work" --exclude='*.core' --exclude='cores' --exclude='native' -cf - . | xz -3 -T16 > "$OUT/meta-partial.tar.xz"
  (cd "$work" && ls -- */rank*.python.core */rank*.nccl.core 2>/dev/null | tar -cf - -T -) | xz -3 -T16 |
    split -b 15M -d - "$OUT/slices-partial.tar.xz.part"
  ls -l "$OUT"
fi
