#!/usr/bin/env bash
# Issue 33 item 4: a GPU busy outside NCCL. Four rank snapshots of a TP 2 x DP 2 job
# (bench/gen_snapshots.py --scenario gpu-spin, the shape of tests/scenarios/torch_crash_order.py's
# order-gpu-spin): every rank launched AllReduce #4 on tp, dp and world; rank 2's tp and dp peers
# receive from it; rank 2 has nothing in flight. Host state alone cannot tell why (incomplete);
# rank 2's kernel view (cuda-gdb: no NCCL kernel, PyTorch's spin_kernel resident) makes it the
# culprit, its GPU never started the collective. Checks the verdict, the findings, the headline
# form (<= 3 lines, <= 60 words, one blame), that a kernel on another device blames nobody, and the
# same verdict on a real 4-rank PyTorch capture with every rank's cuda-gdb view.
source "$(dirname "$0")/corpus_prelude.sh"
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

python3 "$SRC/bench/gen_snapshots.py" --ranks 4 --culprit 2 --scenario gpu-spin --channels 2 --out "$WORK/job" ||
  fail "gen_snapshots gpu-spin"
mkdir -p "$WORK/host-only"
cp "$WORK"/job/rank-?.json "$WORK/host-only/"

"$NSC" triage "$WORK/host-only" --json >"$WORK/host.json"; rc=$?
[ $rc -eq 0 ] || fail "host-only triage exit $rc"
"$NSC" triage "$WORK/job" --json >"$WORK/view.json"; rc=$?
[ $rc -eq 0 ] || fail "triage with the kernel view exit $rc"
"$NSC" triage "$WORK/job" >"$WORK/view.txt" || fail "text report"

python3 - "$WORK/host.json" "$WORK/view.json" "$WORK/view.txt" <<'PY' || exit 1
import json, sys
host, view = (json.load(open(path)) for path in sys.argv[1:3])
text = open(sys.argv[3]).read()
def check(ok, what):
    if not ok:
        print("FAIL:", what); sys.exit(1)
check(host["verdict"] == "incomplete" and host["culprit_ranks"] == [], "host alone: %s %s" % (host["verdict"], host["culprit_ranks"]))
check(view["verdict"] == "hang", "verdict %s" % view["verdict"])
check(view["culprit_ranks"] == [2], "culprits %s" % view["culprit_ranks"])
busy = [(c["comm_hash"], f) for c in view["communicators"] for f in c["findings"] if f["kind"] == "gpu-busy"]
# tp [2,3] (rank 3 receives from 2) and dp [0,2] (rank 0 receives from 2); world: nobody entered #4.
check(sorted(h for h, _ in busy) == ["0x5a1e000000000011", "0x5a1e000000000020"], "gpu-busy on %s" % [h for h, _ in busy])
for _, finding in busy:
    check(finding["collective"] == "AllReduce" and finding["seq"] == 4, "op %s #%s" % (finding["collective"], finding["seq"]))
    check(finding["culprit_ranks"] == [2], "finding culprits %s" % finding["culprit_ranks"])
    check(any("GPU 0 runs at::cuda::(anonymous namespace)::spin_kernel (grid (1,1,1), block (1,1,1)" in e
              for e in finding["evidence"]), "kernel evidence %s" % finding["evidence"])
    check(any("inferred: same device" in e for e in finding["evidence"]), "the relation is labelled inferred")
lines = view["headline"]["lines"]
words = sum(len(line.split()) for line in lines)
check(len(lines) <= 3 and words <= 60, "headline %d lines, %d words: %s" % (len(lines), words, lines))
check("rank 2's GPU runs at::cuda::(anonymous namespace)::spin_kernel; its AllReduce #4" in lines[0] and
      "never started" in lines[0], "headline line 1: %s" % lines[0])
blamed = set(view["culprit_ranks"]) | set(view["suspect_ranks"])
for comm in view["communicators"]:
    for finding in comm["findings"]:
        check(set(finding.get("culprit_ranks") or []) <= blamed, "finding %s blames beyond the verdict" % finding["kind"])
check(text.startswith("\n".join(lines) + "\n\n"), "text report opens with the headline")
print("\n".join(lines))
PY

# The same kernel on another device than the communicators': nothing queued behind it there.
python3 - "$WORK/job/rank-2.kernels.json" <<'PY'
import json, sys
view = json.load(open(sys.argv[1]))
view["other_kernels"][0]["device"] = 5
view["other_kernels"][0]["queued_behind"] = []
json.dump(view, open(sys.argv[1], "w"))
PY
"$NSC" triage "$WORK/job" --json >"$WORK/elsewhere.json" || fail "triage, kernel on device 5"
python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); kinds={f["kind"] for c in r["communicators"] for f in c["findings"]}
sys.exit(0 if r["verdict"] == "incomplete" and "gpu-busy" not in kinds else "FAIL: device 5: %s %s" % (r["verdict"], kinds))' "$WORK/elsewhere.json" || exit 1
# The real capture (corefiles/order-gpu-spin/truth/gdb: PyTorch 2.11, H200, 2026-12-06): every rank's
# live `state --pid --json` and its cuda-gdb `nccl-kernels --all --json` of one hung job, rank 2's GPU
# in torch.cuda._sleep's spin kernel (its log's GROUND_TRUTH: role culprit). Without the views the
# cores of the same shape stay incomplete (corefiles/order-gpu-spin/expected.json).
real=$SRC/corefiles/order-gpu-spin/truth/gdb
if [ -f "$real/rank0.state.json.xz" ]; then
  mkdir -p "$WORK/real"
  cp "$real"/rank?.state.json.xz "$real"/rank?.nccl-kernels.json "$WORK/real/"
  "$NSC" triage "$WORK/real" --json >"$WORK/real.json" || fail "triage of the real capture"
  python3 - "$WORK/real.json" "$real" <<'PY' || exit 1
import json, re, sys
report, truth = json.load(open(sys.argv[1])), sys.argv[2]
roles = {}
for rank in range(4):
    line = [l for l in open("%s/rank%d.log" % (truth, rank)) if l.startswith("GROUND_TRUTH ")][-1]
    roles[rank] = json.loads(line.split(" ", 1)[1])["role"]
want = [rank for rank, role in roles.items() if role == "culprit"]
lines = report["headline"]["lines"]
if report["verdict"] != "hang" or report["culprit_ranks"] != want:
    sys.exit("FAIL: real capture: %s %s, the program says culprit %s" % (report["verdict"], report["culprit_ranks"], want))
if "rank 2's GPU runs at::cuda::(anonymous namespace)::spin_kernel" not in lines[0] or "skip" in " ".join(lines):
    sys.exit("FAIL: real capture headline: %s" % lines)
if "skipped" in report.get("summary", "") or "its GPU never started" not in report.get("summary", ""):
    sys.exit("FAIL: real capture: the summary says rank 2 skipped: %s" % report.get("summary", "")[:300])
print("real capture:", " / ".join(lines))
PY
else
  echo "real capture missing ($real): only the synthetic job checked"
fi
echo "PASS"
