#!/usr/bin/env bash
# Issue 36 in one GPU-machine call: the numeric audit on real 3-rank hangs (an fp16 sum
# overflowing to +Inf, PyTorch's bf16 all_reduce with NaN on rank 1 (torch_numerics_nan.py),
# bf16 NaN injected on rank 1, e4m3 underflow; cuda-gdb's nccl-numerics on the waiting ranks,
# compared with the programs' own counts, live triage joined with it) and the invariant audit's
# GPU cases (incl. abort-stuck and register-leak), each checked against its expected findings.
#   scripts/device-issue36-run.sh        (from the repo root, $OUT set, carrying .device-carry/:
#   bin/ncclscope, lib/{libncclscope.so,libdw.so.1,libelf.so.1}, nccl_numerics_hang,
#   nccl_audit_scenarios; see the two scripts it runs for how to make them)
# Time: numerics boxed at NUMERICS_DEADLINE_S (280 s: whole reads where they fit, else sampled,
# said per read; killed at NUMERICS_S 330 s), audit about 60 s (4 cases took 32 s on 2026-12-05;
# killed at AUDIT_S 150 s), packing a few seconds: about 360 s expected, 490 s at most. Prints PASS/FAIL per numerics read and per audit
# input kind, then a two-line summary. Each part is packed into one file: at most 8 files come back.
set -uo pipefail
: "${OUT:?OUT must name the folder whose files come back}"
CASES=${NUMERICS_CASES:-"overflow-f16-3ranks-device torch-nan-bf16 nan-bf16-3ranks-device underflow-e4m3-3ranks-device"} \
  NUMERICS_DEADLINE_S=${NUMERICS_DEADLINE_S:-280} \
  timeout -k 10 "${NUMERICS_S:-330}" bash scripts/device-numerics-run.sh 2>&1 | tee "$OUT/numerics.log"
timeout -k 10 "${AUDIT_S:-150}" bash scripts/device-audit-run.sh 2>&1 | tee "$OUT/audit.log"
rm -f "$OUT/audit/nccl_audit_scenarios"  # the lead has the same binary
[ -d "$OUT/audit" ] && (cd "$OUT" && tar -cf - audit | split -b 15M -d - audit.tar.part && rm -rf audit)
ls -l "$OUT"
grep -h '^== ' "$OUT/numerics.log" "$OUT/audit.log"
grep -h '^FAIL\|^NOT READ' "$OUT/numerics.log" "$OUT/audit.log" | sort -u | head -20
