#!/usr/bin/env bash
# Issue 36 in one GPU-machine call: the numeric audit on three real 3-rank NCCL hangs (bf16 NaN
# injected on rank 1, e4m3 underflow, an fp16 sum overflowing to +Inf; cuda-gdb's nccl-numerics on
# the waiting ranks, live triage joined with it) and the invariant audit's GPU cases.
#   scripts/device-issue36-run.sh        (from the repo root, $OUT set, carrying .device-carry/:
#   bin/ncclscope, lib/, nccl_numerics_hang, nccl_audit_scenarios; see the two scripts it runs)
# Each part is time-boxed and packed into one xz'ed tar: at most 8 files come back.
set -uo pipefail
: "${OUT:?OUT must name the folder whose files come back}"
CASES="nan-bf16-3ranks-device underflow-e4m3-3ranks-device overflow-f16-3ranks-device" \
  timeout "${NUMERICS_S:-300}" bash scripts/device-numerics-run.sh 2>&1 | tee "$OUT/numerics.log"
[ -d "$OUT/numerics" ] && (cd "$OUT" && tar -cJf numerics.tar.xz numerics && rm -rf numerics)
timeout "${AUDIT_S:-200}" bash scripts/device-audit-run.sh 2>&1 | tee "$OUT/audit.log"
rm -f "$OUT/audit/nccl_audit_scenarios"  # the lead has the same binary
[ -d "$OUT/audit" ] && (cd "$OUT" && tar -cf - audit | split -b 15M -d - audit.tar.part && rm -rf audit)
ls -l "$OUT"
