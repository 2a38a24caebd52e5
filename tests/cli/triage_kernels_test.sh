#!/usr/bin/env bash
# `ncclscope triage` with kernel views (issue 6 item 5) on real data: the corpus cores of
# corefiles/skip-collective (2x H200, NVLink; rank 1 skipped its 4th AllReduce) plus the
# `nccl-kernels --json` documents recorded under cuda-gdb on the same scenario.
# The kernel views were recorded on ANOTHER run of the same scenario (the replay bundles
# tests/gdb/data/kernel-replay/skip-collective-rank{0,1}.replay.json.xz, comm hash
# 0x91a16347ba1dcfd3, pids 654/655); comm hashes are random per run, so the views written
# here keep everything the cuda-gdb session decoded but carry the cores' comm hash (read
# with `ncclscope state`) and rank. Checks: the evidence on missing-collective AllReduce #4,
# the graph edge's kernel reason, the verdict sentence, a directory holding cores and
# *.kernels.json, a view naming no matching communicator (warning only, report unchanged),
# rank 0 alone (host: incomplete) where the kernel names the absent rank 1, and the recorded
# mismatched-collective view whose waits are unknown (evidence only, never a culprit).
set -u
BUILD=${NCCLSCOPE_BUILD:?}
SRC=${NCCLSCOPE_SRC:?}
NSC=$BUILD/bin/ncclscope
SCENARIO=$SRC/corefiles/skip-collective
REPLAY=$SRC/tests/gdb/data/kernel-replay
[ -x "$NSC" ] || { echo "SKIP: $NSC not built"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
command -v xz >/dev/null || { echo "SKIP: xz missing"; exit 77; }
[ -f "$SCENARIO/rank0.core.xz" ] && [ -f "$REPLAY/skip-collective-rank0.replay.json.xz" ] ||
  { echo "SKIP: corefiles/skip-collective or the kernel replay bundles missing"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir -p "$WORK/job"
xz -dc "$SCENARIO/rank0.core.xz" >"$WORK/job/rank0.core" || fail "unpack rank0"
xz -dc "$SCENARIO/rank1.core.xz" >"$WORK/job/rank1.core" || fail "unpack rank1"
packed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["executable"])' "$SCENARIO/expected.json")
xz -dc "$SRC/corefiles/$packed" >"$WORK/exe" && chmod +x "$WORK/exe" || fail "unpack the executable"

# The cores' world communicator, as ncclscope state decodes it (exit 1: the sliced core lacks
# some regions, which the document's errors[] lists).
"$NSC" state "$WORK/job/rank0.core" --exe "$WORK/exe" --json >"$WORK/state0.json" 2>/dev/null
[ $? -le 1 ] || fail "state rank0"
HASH=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["communicators"][0]["comm_hash"])' "$WORK/state0.json")
[ "$HASH" = 0x2879453b282e94f9 ] || fail "comm hash of rank0.core is $HASH"

# rankR.kernels.json: the recorded result, comm hash (and rank) rewritten to the cores' run.
for rank in 0 1; do
  xz -dc "$REPLAY/skip-collective-rank$rank.replay.json.xz" | python3 -c '
import json, sys
rank, new_hash, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
view = json.load(sys.stdin)["result"]
assert view["schema"] == "ncclscope.kernels/1"
for kernel in view["kernels"]:
    if kernel.get("communicator"):
        kernel["communicator"]["comm_hash"] = new_hash
        kernel["communicator"]["rank"] = rank
for comm in view["communicators"]:
    comm["comm_hash"] = new_hash
    comm["rank"] = rank
json.dump(view, open(out, "w"), indent=1, sort_keys=True)
' "$rank" "$HASH" "$WORK/job/rank$rank.kernels.json" || fail "write rank$rank.kernels.json"
done
# As recorded (the other run's comm hash): matches no core.
xz -dc "$REPLAY/skip-collective-rank0.replay.json.xz" |
  python3 -c 'import json,sys; json.dump(json.load(sys.stdin)["result"], open(sys.argv[1], "w"))' "$WORK/other-run.kernels.json"

J="$WORK/job"
"$NSC" triage "$J/rank0.core" "$J/rank1.core" "$J/rank0.kernels.json" "$J/rank1.kernels.json" --exe "$WORK/exe" \
  --json >"$WORK/joined.json" 2>"$WORK/joined.err"
rc=$?
# Exit 1: the sliced cores lack some CUDA memory (`state` exits 1 on them too: issue 14).
[ $rc -le 1 ] || { cat "$WORK/joined.err"; fail "triage with kernel views exited $rc"; }
"$NSC" triage "$J/rank0.core" "$J/rank1.core" "$J/rank0.kernels.json" "$J/rank1.kernels.json" --exe "$WORK/exe" \
  >"$WORK/joined.txt" 2>&1; [ $? -le 1 ] || fail "text triage"
"$NSC" triage "$J" --exe "$WORK/exe" --json >"$WORK/directory.json" 2>"$WORK/directory.err"; [ $? -le 1 ] || fail "triage DIR"
"$NSC" triage "$J/rank0.core" "$J/rank1.core" --exe "$WORK/exe" --json >"$WORK/plain.json" 2>/dev/null; [ $? -le 1 ] || fail "plain triage"
"$NSC" triage "$J/rank0.core" "$J/rank1.core" "$WORK/other-run.kernels.json" --exe "$WORK/exe" --json \
  >"$WORK/other.json" 2>"$WORK/other.err"
other_rc=$?
"$NSC" triage "$J/rank0.core" "$J/rank0.kernels.json" --exe "$WORK/exe" --json >"$WORK/alone.json" 2>/dev/null
alone_rc=$?
"$NSC" triage "$J/rank0.core" --exe "$WORK/exe" --json >"$WORK/alone-plain.json" 2>/dev/null

# mismatched-collective (rank 1 launched ReduceScatter): rank 0's recorded kernel view has only
# unknown waits ("rank 1 posted 4 steps ..."), from another run too; its hash rewritten likewise.
MISMATCHED=$SRC/corefiles/mismatched-collective
if [ -f "$MISMATCHED/rank0.core.xz" ] && [ -f "$REPLAY/mismatched-collective-rank0.replay.json.xz" ]; then
  mkdir -p "$WORK/mm"
  xz -dc "$MISMATCHED/rank0.core.xz" >"$WORK/mm/rank0.core" && xz -dc "$MISMATCHED/rank1.core.xz" >"$WORK/mm/rank1.core"
  "$NSC" state "$WORK/mm/rank0.core" --exe "$WORK/exe" --json >"$WORK/mm-state0.json" 2>/dev/null
  MM_HASH=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["communicators"][0]["comm_hash"])' "$WORK/mm-state0.json")
  xz -dc "$REPLAY/mismatched-collective-rank0.replay.json.xz" | python3 -c '
import json, sys
view = json.load(sys.stdin)["result"]
for item in [k["communicator"] for k in view["kernels"] if k.get("communicator")] + view["communicators"]:
    item["comm_hash"] = sys.argv[1]
json.dump(view, open(sys.argv[2], "w"))
' "$MM_HASH" "$WORK/mm/rank0.kernels.json"
  "$NSC" triage "$WORK/mm" --exe "$WORK/exe" --json >"$WORK/mm.json" 2>/dev/null
fi

python3 - "$WORK" "$other_rc" "$alone_rc" <<'PY' || exit 1
import json, sys
work, other_rc, alone_rc = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
load = lambda name: json.load(open("%s/%s" % (work, name)))
problems = []
def check(ok, what):
    if not ok: problems.append(what)

r = load("joined.json")
text = open(work + "/joined.txt").read()
KERNEL = ("kernel view, rank 0: AllReduce kernel (ncclDevFunc_AllReduce_Sum_f32_RING_SIMPLE, RING SIMPLE): "
          "24 of 24 blocks waiting for data from rank 1 at step 24 (channels 0-23)")
REASON = "rank 0 waits for data from rank 1 at step 24 on channels 0-23 (24 of 24 blocks)"
check(r["verdict"] == "hang" and r["culprit_ranks"] == [1], "verdict %s culprits %s" % (r["verdict"], r["culprit_ranks"]))
findings = [f for c in r["communicators"] for f in c["findings"]]
missing = [f for f in findings if f["kind"] == "missing-collective" and f["collective"] == "AllReduce" and f["seq"] == 4]
check(len(missing) == 1, "no missing-collective AllReduce #4")
if missing:
    f = missing[0]
    check(KERNEL in f["evidence"], "kernel evidence missing: %s" % f["evidence"])
    check("kernel view, rank 1: no NCCL kernel resident on its GPU" in f["evidence"], "culprit's GPU side missing")
    check([w["text"] for w in f.get("kernel_waits", [])] == [REASON], "kernel_waits %s" % f.get("kernel_waits"))
check(not [f for f in findings if f["kind"] == "kernel-wait"], "kernel-wait although the host view names rank 1")
edges = r["graph"]["edges"]
check(len(edges) == 1 and edges[0]["from"] == [0] and edges[0]["to"] == [1], "edges %s" % edges)
if edges:
    kernel = edges[0].get("kernel", [])
    check(len(kernel) == 1 and kernel[0]["text"] == REASON and kernel[0]["channels"] == list(range(24))
          and kernel[0]["steps"] == [24] and kernel[0]["blocks"] == 24, "edge kernel reason %s" % kernel)
check("Kernel view: rank 0: AllReduce kernel (RING SIMPLE): 24 of 24 blocks waiting for data from rank 1 at step 24 "
      "(channels 0-23); rank 1: no NCCL kernel resident." in r["summary"], "summary: %s" % r["summary"])
views = r["kernel_views"]["inputs"]
check([v["joined_to"]["world_rank"] for v in views] == [0, 1], "views joined to %s" % [v["joined_to"] for v in views])
check([v["joined_to"]["pid_agrees"] for v in views] == [False, False], "the views come from another run (pids 654/655)")
check(r["kernel_views"]["warnings"] == [], "warnings %s" % r["kernel_views"]["warnings"])
for line in ["      - " + KERNEL, "      kernel: " + REASON,
             "Inputs: 2 usable, 0 unusable; kernel views: 2 joined, 0 not joined"]:
    check(line + "\n" in text, "text lacks %r" % line)

# A directory holding the cores and the *.kernels.json files: the same join.
d = load("directory.json")
check(d["graph"]["edges"] == r["graph"]["edges"], "directory: edges differ")
check(d["summary"] == r["summary"].replace(work + "/job/", work + "/job/"), "directory: summary differs")

# Without kernel views: no kernel key anywhere; with a view of another run: only a warning.
plain, other = load("plain.json"), load("other.json")
check("kernel_views" not in plain and "kernel" not in plain["graph"]["edges"][0], "plain report has kernel keys")
unusable = [e for e in other["errors"] if "read only in part" not in e["message"]]
check(other_rc <= 1 and unusable == [], "other-run view: exit %d errors %s" % (other_rc, unusable))
check(other["kernel_views"]["warnings"] == [work + "/other-run.kernels.json: no input holds communicator "
      "0x91a16347ba1dcfd3 rank 0; kernel view not joined"], "warning %s" % other["kernel_views"]["warnings"])
check("warning: " + work + "/other-run.kernels.json: no input holds communicator 0x91a16347ba1dcfd3 rank 0"
      in open(work + "/other.err").read(), "no warning on stderr")
for key in ["verdict", "summary", "culprit_ranks", "communicators"]:
    check(other[key] == plain[key], "other-run view changed %s" % key)
check(other["graph"]["edges"] == plain["graph"]["edges"], "other-run view changed the edges")

# Rank 0 alone: host triage is incomplete (rank 1 absent); the kernel names the wait on rank 1,
# which stays a suspect: absence is never evidence (issue 37).
alone, alone_plain = load("alone.json"), load("alone-plain.json")
check(alone_plain["verdict"] == "incomplete", "rank 0 alone without a view: %s" % alone_plain["verdict"])
check(alone_rc <= 1 and alone["verdict"] == "incomplete" and alone["culprit_ranks"] == [] and alone["suspect_ranks"] == [1],
      "rank 0 alone with its view: %s %s %s (exit %d)" % (alone["verdict"], alone["culprit_ranks"], alone["suspect_ranks"], alone_rc))
waits = [f for c in alone["communicators"] for f in c["findings"] if f["kind"] == "kernel-wait"]
check(len(waits) == 1 and waits[0]["waiting_ranks"] == [0] and waits[0]["culprit_ranks"] == [1]
      and waits[0]["culprits_absent"], "kernel-wait %s" % waits)
check("Kernel view: rank 0: AllReduce kernel (RING SIMPLE): 24 of 24 blocks waiting for data from rank 1 at step 24"
      in alone["summary"] and "Suspects: rank 1: no input holds this rank" in alone["summary"],
      "alone summary: %s" % alone["summary"])

# Unknown waits: shown with the decoder's text, never a culprit or an edge reason.
import os
if os.path.exists(work + "/mm.json"):
    mm = load("mm.json")
    check(mm["verdict"] == "hang" and mm["culprit_ranks"] == [1], "mismatched: %s %s" % (mm["verdict"], mm["culprit_ranks"]))
    mismatch = [f for c in mm["communicators"] for f in c["findings"] if f["kind"] == "collective-mismatch"]
    check(len(mismatch) == 1 and "kernel_waits" not in mismatch[0], "mismatched: finding %s" % mismatch)
    check(mismatch and any(e.startswith("kernel view, rank 0: AllReduce kernel (ncclDevFunc_AllReduce_Sum_f32_RING_SIMPLE, "
                                        "RING SIMPLE): 24 of 24 blocks: wait unknown (recv: rank 1 posted 4 steps since the "
                                        "kernel started at step 24") for e in mismatch[0]["evidence"]),
          "mismatched: no unknown-wait evidence")
    check(not [f for c in mm["communicators"] for f in c["findings"] if f["kind"] == "kernel-wait"], "mismatched: kernel-wait")
    check(all("kernel" not in e for e in mm["graph"]["edges"]), "mismatched: an edge has a kernel reason")
else:
    print("note: mismatched-collective data absent, unknown-wait check skipped")

if problems:
    print("FAIL:\n  " + "\n  ".join(problems))
    sys.exit(1)
print("ok: evidence, edge reason, verdict sentence, directory, other-run warning, rank 0 alone, unknown waits")
PY
echo "triage kernels: passed"
