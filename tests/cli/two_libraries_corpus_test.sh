#!/usr/bin/env bash
# Two libnccl in one process, real (issue 17): corefiles/two-libraries/ holds the sliced cores of
# tests/scenarios/nccl_two_libraries.cu captured on the GPU machine (comm "a" on the venv's NCCL
# 2.28.9, comm "b" on NCCL 2.26.2 built from its tag; rank 1 skipped an AllReduce on comm b) and
# each library's copy without code (build-id, .rodata, .dynsym). Both files are named
# libnccl.so.2, in two --solib-search-path directories: in either order each library must get the
# file of its own build-id. Checks, against the program's ground truth (rankN.ground_truth.json):
# both communicators found, each with its library and version, address/rank/nranks/launched;
# then `ncclscope triage` on both ranks names rank 1 culprit on comm b and nothing on comm a.
# Layouts come from the shipped build-id profiles: no /usr/local/cuda needed.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
dir=$src/corefiles/two-libraries
[ -x "$cli" ] || { echo "SKIP: $cli not built"; exit 77; }
command -v xz >/dev/null || { echo "SKIP: xz missing"; exit 77; }
for f in rank0.core.xz rank1.core.xz rank0.ground_truth.json rank1.ground_truth.json \
         libnccl-2.28.9.so.2.min.xz libnccl-2.26.2.so.2.min.xz; do
  [ -f "$dir/$f" ] || { echo "SKIP: $dir/$f missing"; exit 77; }
done
mkdir -p "$work/lib-2.28.9" "$work/lib-2.26.2"
xz -dc "$dir/libnccl-2.28.9.so.2.min.xz" > "$work/lib-2.28.9/libnccl.so.2"
xz -dc "$dir/libnccl-2.26.2.so.2.min.xz" > "$work/lib-2.26.2/libnccl.so.2"
for rank in 0 1; do xz -dc "$dir/rank$rank.core.xz" > "$work/rank$rank.core"; done

for order in "$work/lib-2.28.9:$work/lib-2.26.2" "$work/lib-2.26.2:$work/lib-2.28.9"; do
  label="search path $(echo "$order" | sed "s|$work/||g")"
  for rank in 0 1; do
    "$cli" state --core "$work/rank$rank.core" --no-stacks --json --solib-search-path "$order" \
      > "$work/state$rank.json" 2> "$work/state$rank.err"
    rc=$?
    check "$label, rank $rank: state exit $rc (0 or 1)" test "$rc" -le 1
    check "$label, rank $rank: both communicators, each with its own library file and version" python3 - \
      "$dir/rank$rank.ground_truth.json" "$work/state$rank.json" "$work" <<'PY'
import json, sys
truth, state, work = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
versions = {22809: "2.28.9", 22602: "2.26.2"}
found = {int(c["address"], 16): c for c in state["communicators"]}
assert len(state["communicators"]) == 2, [c["address"] for c in state["communicators"]]
libraries = {l["library"]: l for l in state["nccl"]["libraries"]}
for want in truth["comms"]:
    got = found.get(int(want["address"], 16))
    assert got is not None, ("comm", want["name"], want["address"], sorted(hex(a) for a in found))
    version = versions[want["nccl_version"]]
    assert got["library"]["path"] == want["library"], (want["name"], got["library"]["path"])
    assert got["library"]["version"] == version, (want["name"], got["library"]["version"], version)
    assert (got["rank"], got["nranks"]) == (want["rank"], want["nranks"]), (want["name"], got["rank"], got["nranks"])
    for func, count in want["launched"].items():
        assert got["seq_launched"].get(func) == count, (want["name"], func, got["seq_launched"], count)
    library = libraries[want["library"]]
    # The file of its build-id, whatever the order of the directories (same basename in both).
    assert library["local_file"] == f"{work}/lib-{version}/libnccl.so.2", (version, library["local_file"])
    assert library["build_id_mismatch"] is False, library
    assert library["layout_source"].startswith("profile:") and library["build_id"] in library["layout_source"], library
PY
  done
done

# Triage of both ranks: rank 1 culprit on comm b (missing AllReduce #4), comm a without a culprit.
"$cli" triage "$work/rank0.core" "$work/rank1.core" --json \
  --solib-search-path "$work/lib-2.28.9:$work/lib-2.26.2" > "$work/triage.json" 2> "$work/triage.err"
rc=$?
check "triage exit $rc (0 or 1)" test "$rc" -le 1
check "triage: both inputs read whole, no library set aside as a problem (exit 0)" test "$rc" -eq 0
check "triage: rank 1 culprit on comm b, none on comm a" python3 - "$work/triage.json" \
  "$dir/rank0.ground_truth.json" "$work/state0.json" <<'PY'
import json, sys
report, truth, state = (json.load(open(p)) for p in sys.argv[1:4])
hash_of = {int(c["address"], 16): c["comm_hash"] for c in state["communicators"]}
names = {hash_of[int(c["address"], 16)]: c["name"] for c in truth["comms"]}
assert report["verdict"] == "hang", report["verdict"]
assert report["culprit_ranks"] == [1], report["culprit_ranks"]
by_name = {names[c["comm_hash"]]: c for c in report["communicators"]}
assert sorted(by_name) == ["a", "b"], sorted(by_name)
missing = [f for f in by_name["b"]["findings"] if f["kind"] == "missing-collective"]
assert missing and missing[0]["culprit_comm_ranks"] == [1] and missing[0]["collective"] == "AllReduce" \
    and missing[0]["seq"] == 4, by_name["b"]["findings"]
assert not any(f.get("culprit_comm_ranks") for f in by_name["a"]["findings"]), by_name["a"]["findings"]
PY
head -c 400 "$work/triage.err"

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
