#!/usr/bin/env bash
# Real multi-group PyTorch hangs (issue 13): corefiles/<scenario>/ranks.tar.xz, 3 to 8 sliced
# rank cores of one job (TP x DP, PP x DP; tests/scenarios/torch_multigroup.py). For each:
#  - every communicator decoded from the slice equals the decode of the FULL core made on the
#    GPU machine (expected.json ranks[].comms_full_core: hash, rank, nranks, seq_launched, p2p);
#  - triage's verdict, culprit_ranks and suspect_ranks equal the program's ground truth
#    (expected.json "triage"), and the named finding exists;
#  - the verdict does not depend on input order (inputs reversed).
# Skips (77) when the cores, xz or python3 are missing.
source "$(dirname "$0")/corpus_prelude.sh"
ls "$SRC"/corefiles/*/ranks.tar.xz >/dev/null 2>&1 || { echo "SKIP: no ranks.tar.xz scenario in corefiles/"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/lib"
for packed in "$SRC"/corefiles/lib/*.tar.xz; do tar -C "$WORK/lib" -xJf "$packed" --transform 's|.*/||'; done
failures=0
checked=0
for dir in "$SRC"/corefiles/*/; do
  [ -f "$dir/ranks.tar.xz" ] || continue
  scenario=$(basename "$dir")
  mkdir -p "$WORK/$scenario"
  tar -C "$WORK/$scenario" -xJf "$dir/ranks.tar.xz"
  exe_args=()
  packed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("executable") or "")' "$dir/expected.json")
  if [ -n "$packed" ] && [ -f "$SRC/corefiles/$packed" ]; then
    xz -dc "$SRC/corefiles/$packed" > "$WORK/$scenario.exe" && chmod +x "$WORK/$scenario.exe"
    exe_args=(--exe "$WORK/$scenario.exe")
  fi
  cores=("$WORK/$scenario"/rank*.core)
  reversed=()
  for ((i = ${#cores[@]} - 1; i >= 0; i--)); do reversed+=("${cores[$i]}"); done
  common=("${exe_args[@]}" --solib-search-path "$WORK/lib" --json)
  "$NSC" triage "${cores[@]}" "${common[@]}" > "$WORK/$scenario.json" 2> "$WORK/$scenario.err"
  rc=$?
  "$NSC" triage "${reversed[@]}" "${common[@]}" > "$WORK/$scenario.rev.json" 2>/dev/null
  for core in "${cores[@]}"; do
    "$NSC" state --core "$core" "${common[@]}" > "${core%.core}.state.json" 2>/dev/null
  done
  checked=$((checked + 1))
  if ! python3 - "$scenario" "$dir" "$WORK" "$rc" <<'PY'
import json, os, sys
scenario, directory, work, rc = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
expected = json.load(open(os.path.join(directory, "expected.json")))
want = expected["triage"]
report = json.load(open(os.path.join(work, scenario + ".json")))
reverse = json.load(open(os.path.join(work, scenario + ".rev.json")))
problems = []
for key in ("verdict", "culprit_ranks", "suspect_ranks"):
    if report[key] != want[key]:
        problems.append("%s %s, want %s" % (key, report[key], want[key]))
    if reverse[key] != report[key]:
        problems.append("%s %s with inputs reversed, %s in order" % (key, reverse[key], report[key]))
if want.get("kind"):
    kinds = [f for c in report["communicators"] for f in c["findings"]] + report.get("startup", [])
    if not any(f["kind"] == want["kind"] and f.get("collective", want.get("collective")) == want.get("collective", f.get("collective"))
               for f in kinds):
        problems.append("no %s finding (%s)" % (want["kind"], want.get("collective")))
# The slice decodes every communicator as the full core did on the GPU machine.
compared = 0
for rank in expected["ranks"]:
    if not rank.get("core_in_tar"):
        continue
    state = json.load(open(os.path.join(work, scenario, rank["core_in_tar"].replace(".core", ".state.json"))))
    got = {c.get("comm_hash"): c for c in state.get("communicators", [])}
    for full in rank["comms_full_core"]:
        sliced = got.get(full["comm_hash"])
        if sliced is None:
            problems.append("rank %d: comm %s not decoded from the slice" % (rank["rank"], full["comm_hash"]))
            continue
        for key in ("rank", "nranks", "seq_launched"):
            if sliced.get(key) != full[key]:
                problems.append("rank %d comm %s %s: slice %s, full core %s" % (rank["rank"], full["comm_hash"], key, sliced.get(key), full[key]))
        if (sliced.get("p2p_op_count") or {}).get("total") != full["p2p_total"]:
            problems.append("rank %d comm %s p2p total differs" % (rank["rank"], full["comm_hash"]))
        compared += 1
    if len(got) != len(rank["comms_full_core"]):
        problems.append("rank %d: %d comms in the slice, %d in the full core" % (rank["rank"], len(got), len(rank["comms_full_core"])))
# Every rank with a core has its application thread, and its Python line is the one the
# program announced (hang_site: the file and function of the call it blocks in).
described = {}
for klass in report.get("stack_classes", {}).get("principal", []):
    for world in klass.get("world_ranks", klass.get("ranks", [])):
        described[world] = " > ".join(klass.get("frames", []))
for rank in expected["ranks"]:
    if not rank.get("core_in_tar"):
        continue
    text = described.get(rank["rank"], "")
    site = rank.get("hang_site") or {}
    if not text:
        problems.append("rank %d: no application thread in the stack classes" % rank["rank"])
    elif site.get("function") and site.get("file") and site["function"] + " (" + site["file"] not in text:
        problems.append("rank %d: thread '%s' does not name %s (%s)" % (rank["rank"], text[-300:], site["function"], site["file"]))
if rc not in (0, 1):
    problems.append("exit %d" % rc)
if problems:
    print("FAIL %s: %s\n  %s" % (scenario, "; ".join(problems[:6]), report["summary"][:500]))
    sys.exit(1)
print("ok   %-20s %-10s culprits %s suspects %s; %d communicators equal the full-core decode"
      % (scenario, report["verdict"], report["culprit_ranks"], report["suspect_ranks"], compared), flush=True)
PY
  then
    failures=$((failures + 1))
    head -3 "$WORK/$scenario.err"
  fi
done
[ "$checked" -gt 0 ] || { echo "SKIP: no scenario"; exit 77; }
[ "$failures" -eq 0 ] || { echo "$failures scenario(s) failed"; exit 1; }
echo "multigroup corpus: $checked scenario(s) passed"
