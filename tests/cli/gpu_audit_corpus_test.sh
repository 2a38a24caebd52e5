#!/usr/bin/env bash
# `ncclscope audit` on the invariant audit's real GPU cases (issue 36 item 2): corefiles/gpu-audit/
# <case>/rank<R>.core.xz, sliced cores of tests/scenarios/nccl_audit_scenarios.cu captured by
# scripts/device-audit-run.sh (NCCL 2.28.9; four cases on an H100 2026-12-05, abort-stuck and
# register-leak on an H200 2026-12-06, machine.txt; truth/ holds each rank's GROUND_TRUTH line and
# the audit the GPU machine made live and from the full cores). Each case's rules must be the
# program's expectation and the same as the live audit of the running processes; every case
# below must be present.
source "$(dirname "$0")/corpus_prelude.sh"
ROOT=$SRC/corefiles/gpu-audit
ls "$ROOT"/*/rank0.core.xz >/dev/null 2>&1 || { echo "SKIP: no corefiles/gpu-audit"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
for case in revoke-no-destroy destroy-stuck peer-exit register-unaligned abort-stuck register-leak; do
  [ -f "$ROOT/$case/rank0.core.xz" ] || { echo "FAIL $case: no $ROOT/$case/rank0.core.xz"; failures=$((failures + 1)); }
done
for dir in "$ROOT"/*/; do
  case=$(basename "$dir"); cores=()
  for packed in "$dir"rank*.core.xz; do
    xz -dc "$packed" > "$WORK/$case.$(basename "${packed%.xz}")" && cores+=("$WORK/$case.$(basename "${packed%.xz}")")
  done
  "$NSC" audit "${cores[@]}" --json > "$WORK/$case.json" 2> "$WORK/$case.err"
  if ! python3 - "$case" "$WORK/$case.json" "$dir/truth/$case.live.audit.json" <<'PY'
import json, sys
case, got_path, live_path = sys.argv[1:4]
# What the program leaves in NCCL (its GROUND_TRUTH "expect" lines) and what follows from it:
# the skipped or never-joined AllReduce leaves one rank a launch behind (seq-spread, info).
want = {
    "revoke-no-destroy": {"revoked-comm-not-destroyed@1", "comm-async-error@0", "seq-spread@1"},
    "destroy-stuck": {"destroyed-comm-holds-cuda-work@1", "seq-spread@0"},
    "peer-exit": {"comm-async-error@0"},  # rank 1 called _exit(): no core
    "register-unaligned": {"seq-spread@1"},  # NCCL rounds the range out to pages: no finding
    # ncclCommAbort sets abortFlag and destroyFlag, then waits in commDestroySync for a stream whose
    # AllReduce sits behind a kernel that never ends: the comm is never freed and still holds that
    # launched work. Both ranks launched 4 AllReduce: no seq-spread.
    "abort-stuck": {"abort-not-reclaimed@1", "destroyed-comm-holds-cuda-work@1"},
    # as destroy-stuck, on a registered receive buffer that is never deregistered
    "register-leak": {"destroyed-comm-holds-cuda-work@1", "seq-spread@0"},
}[case]
fired = lambda d: {"%s@%s" % (f["rule"], ",".join(str(w["rank"]) for w in f["where"])) for f in d["findings"]}
got, live = fired(json.load(open(got_path))), fired(json.load(open(live_path)))
problems = []
if got != want: problems.append("rules %s, want %s" % (sorted(got), sorted(want)))
if got != live: problems.append("rules %s, the live audit on the GPU machine %s" % (sorted(got), sorted(live)))
print(("FAIL %s: %s" % (case, "; ".join(problems))) if problems else "ok   %-20s %s" % (case, " ".join(sorted(got))))
sys.exit(1 if problems else 0)
PY
  then failures=$((failures + 1)); head -3 "$WORK/$case.err"; fi
done
[ "$failures" -eq 0 ] || { echo "$failures case(s) failed"; exit 1; }
