#!/usr/bin/env bash
# `ncclscope triage` on the real hang corpus (issue 3): every scenario's verdict,
# culprit and finding. Uses corefiles/<scenario>/ (sliced cores) when present,
# else the full cores in $NCCLSCOPE_CORES (default /work/cores); skips (77)
# when neither exists.
source "$(dirname "$0")/corpus_prelude.sh"
roots=()
ls "$SRC"/corefiles/*/*.core* >/dev/null 2>&1 && roots+=("$SRC/corefiles")
CORES=${NCCLSCOPE_CORES:-/work/cores}
[ ${#roots[@]} = 0 ] && ls "$CORES"/*/rank*.core >/dev/null 2>&1 && roots+=("$CORES")
[ ${#roots[@]} = 0 ] && { echo "SKIP: no corpus (corefiles/ or $CORES)"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
checked=0
for root in "${roots[@]}"; do
  for dir in "$root"/*/; do
    scenario=$(basename "$dir")
    cores=("$dir"*.core*)
    [ -e "${cores[0]}" ] || continue
    # corefiles/ holds xz-compressed sliced cores and executables: unpack them.
    mkdir -p "$WORK/$scenario"
    args=()
    for core in "${cores[@]}"; do
      case $core in
        *.xz) xz -dc "$core" >"$WORK/$scenario/$(basename "${core%.xz}")" || continue
              args+=("$WORK/$scenario/$(basename "${core%.xz}")") ;;
        *) args+=("$core") ;;
      esac
    done
    exe=""
    [ -f "$dir/EXE" ] && exe=$(cat "$dir/EXE")
    if [ -f "$dir/expected.json" ]; then
      packed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("executable") or "")' "$dir/expected.json")
      if [ -n "$packed" ] && [ -f "$root/$packed" ]; then
        exe=$WORK/$scenario/exe
        xz -dc "$root/$packed" >"$exe" && chmod +x "$exe"
      fi
    fi
    [ -n "$exe" ] && [ -x "$exe" ] && args+=(--exe "$exe")
    # A scenario's own stripped libnccl (issue 17): its version string picks the header profile.
    own_lib=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("libnccl") or "")' "$dir/expected.json" 2>/dev/null)
    if [ -n "$own_lib" ]; then
      mkdir -p "$WORK/$scenario/lib" && xz -dc "$dir/$own_lib" >"$WORK/$scenario/lib/libnccl.so.2"
      args+=(--solib-search-path "$WORK/$scenario/lib")
    fi
    "$NSC" triage "${args[@]}" --json >"$WORK/$scenario.json" 2>"$WORK/$scenario.err"
    rc=$?
    checked=$((checked + 1))
    if ! python3 - "$scenario" "$dir" "$WORK/$scenario.json" "$rc" <<'PY'
import glob, json, os, sys
scenario, directory, report_path, rc = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
capture = ""
if os.path.exists(os.path.join(directory, "expected.json")):
    capture = json.load(open(os.path.join(directory, "expected.json"))).get("capture", "")
nvlink = "NVLink" in capture  # 2-GPU capture; /work/cores and *-net are 1-GPU socket NET captures
r = json.load(open(report_path))
def findings(kind):
    return [f for c in r["communicators"] for f in c["findings"] if f["kind"] == kind]
# What triage must say for each scenario of tests/scenarios/nccl_hang_scenarios.cu.
expected = {
    "skip-collective": ("hang", [1], "missing-collective", "AllReduce", 4),
    "skip-collective-0x11": ("hang", [1], "missing-collective", "AllReduce", 4),
    "cross-stream": ("hang", [1], "missing-collective", "AllGather", 4),
    "cross-stream-lazy-load": ("hang", [1], "missing-collective", "AllGather", 4),
    "split-comm": ("hang", [1], "missing-collective", "AllReduce", 4),
    "mismatched-collective": ("hang", [1], "collective-mismatch", "AllReduce", 4),
    "abort": ("hang", [1], "absent-ranks", None, None),
    "p2p-cycle": ("hang", [], "p2p-unmatched", "Send", None),
    "p2p-cycle-net": ("deadlock", [], "p2p-unmatched", "Send", None),
    "skip-collective-net": ("hang", [1], "missing-collective", "AllReduce", 4),
    "torch-allreduce": ("hang", [1], "missing-collective", "AllReduce", None),
    # Both ranks printed COLLECTIVE_COMPLETED: the half-count AllReduce completed silently.
    "mismatched-count": ("no-hang", [], "no-hang-evident", None, None),
    "mismatched-collective-rank0-only": ("incomplete", [], "absent-ranks", None, None),
    # Captured with the flight recorder loaded: the same hangs, and the silent count mismatch
    # that host NCCL state cannot see (#4 = the 4th AllReduce; the recorder's seq 3).
    "skip-collective-recorder": ("hang", [1], "missing-collective", "AllReduce", 4),
    "cross-stream-recorder": ("hang", [1], "missing-collective", "AllGather", 4),
    "mismatched-count-recorder": ("mismatch", [], "count-mismatch", "AllReduce", 4),
    # Before 2.23 (no seqNumber[]) the per-comm total (collOpCount) names the rank behind, not
    # the collective's type; 2.18-2.20 comms are found by sharedRes->owner (no NCCL_MAGIC).
    "skip-collective-nccl2.21.5": ("hang", [1], "missing-collective", None, 4),
    "skip-collective-nccl2.20.5": ("hang", [1], "missing-collective", None, 4),
    "skip-collective-nccl2.18.6": ("hang", [1], "missing-collective", None, 4),
    "split-comm-nccl2.20.5": ("hang", [1], "missing-collective", None, 4),
    # splitShare: world and sub share one count (8 vs 7): rank 1 behind on one of them, no #.
    "split-share-nccl2.20.5": ("hang", [1], "missing-collective", None, None),
}
if scenario not in expected:
    truths = [json.load(open(p)) for p in glob.glob(os.path.join(directory, "*ground_truth.json"))]
    truths += [json.load(open(p)) for p in glob.glob(os.path.join(directory, "expected.json"))]
    culprit = next((t.get("expected_culprit_rank") for t in truths if "expected_culprit_rank" in t), None)
    if culprit is None:
        print("SKIP %s: no expectation" % scenario); sys.exit(0)
    expected[scenario] = ("hang", [] if culprit < 0 else [culprit], None, None, None)
if scenario == "p2p-cycle" and nvlink:
    # Over NVLink both blocking sends completed: both main threads sit in pause() right after
    # cudaStreamSynchronize returned (run_p2p_cycle+0x374 follows `call pause`), counters agree.
    expected[scenario] = ("no-hang", [], "no-hang-evident", None, None)
verdict, culprits, kind, collective, seq = expected[scenario]
problems = []
if r["verdict"] != verdict: problems.append("verdict %s, want %s" % (r["verdict"], verdict))
if r["culprit_ranks"] != culprits: problems.append("culprit_ranks %s, want %s" % (r["culprit_ranks"], culprits))
if kind:
    matching = [f for f in findings(kind) if (collective is None or f["collective"] == collective)
                and (seq is None or f["seq"] == seq)]
    if not matching: problems.append("no %s finding with %s #%s" % (kind, collective, seq))
if scenario.startswith("p2p-cycle") and verdict in ("hang", "deadlock") and r["graph"]["cycles"] != [[0, 1]]:
    problems.append("cycles %s, want [[0, 1]]" % r["graph"]["cycles"])
if scenario == "mismatched-collective-rank0-only" and r["suspect_ranks"] != [1]:
    problems.append("suspect_ranks %s, want [1]" % r["suspect_ranks"])
# nvcc's launch stub named after its kernel (the symbol is __device_stub__ + a mangled name).
if scenario == "cross-stream-lazy-load" and "rank 0 in __device_stub__consume_kernel() in run_cross_stream()" not in r["headline"]["text"]:
    problems.append("headline does not name the kernel's launch stub: %r" % r["headline"]["text"])
if rc not in (0, 1): problems.append("exit %d" % rc)
if problems:
    print("FAIL %s: %s\n  %s" % (scenario, "; ".join(problems), r["summary"][:400])); sys.exit(1)
print("ok   %-34s %-10s culprits %s" % (scenario, r["verdict"], r["culprit_ranks"]), flush=True)
PY
    then
      failures=$((failures + 1))
      head -3 "$WORK/$scenario.err"
    fi
  done
done
[ "$checked" -gt 0 ] || { echo "SKIP: no scenario with cores"; exit 77; }
if [ "$failures" -ne 0 ]; then
  echo "$failures scenario(s) failed"
  exit 1
fi
echo "triage corpus: $checked scenario(s) passed"
