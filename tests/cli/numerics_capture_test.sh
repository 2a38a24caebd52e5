#!/usr/bin/env bash
# Issue 36 item 1 on real GPU captures: corefiles/gpu-numerics/<case>/, 3-rank hangs on one GPU
# (scripts/device-numerics-run.sh with SHIP_CORES=1; scripts/build_numerics_corefiles.py): every
# rank's sliced core (ranks.tar.xz) and the cuda-gdb `nccl-numerics --json` view of the waiting
# ranks (views/), read whole from device memory. `ncclscope triage` of cores + views must give
# the program's verdict and, for every viewed buffer, the program's own counts (expected.json,
# from GROUND_TRUTH: torch.isnan(t).sum() and the rest for PyTorch, a host count of the copied-back
# buffer for nccl_numerics_hang), and say where the NaN/Inf came from: through one rank's send
# buffer (torch-nan-bf16: rank 1), or out of the reduction (overflow-f16). Without the views, the
# cores alone give the same verdict and no counts: device memory is in no host core.
source "$(dirname "$0")/corpus_prelude.sh"
ROOT=$SRC/corefiles/gpu-numerics
ls "$ROOT"/*/ranks.tar.xz >/dev/null 2>&1 || { echo "SKIP: no corefiles/gpu-numerics"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/lib"
for packed in "$SRC"/corefiles/lib/*.tar.xz; do tar -C "$WORK/lib" -xJf "$packed" --transform 's|.*/||'; done
failures=0
for case in torch-nan-bf16 overflow-f16; do
  [ -f "$ROOT/$case/ranks.tar.xz" ] || { echo "FAIL $case: no $ROOT/$case/ranks.tar.xz"; failures=$((failures + 1)); }
done
for dir in "$ROOT"/*/; do
  case=$(basename "$dir")
  mkdir -p "$WORK/$case"
  tar -C "$WORK/$case" -xJf "$dir/ranks.tar.xz"
  args=(--solib-search-path "$WORK/lib")
  packed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("executable") or "")' "$dir/expected.json")
  if [ -n "$packed" ] && [ -f "$SRC/corefiles/$packed" ]; then
    xz -dc "$SRC/corefiles/$packed" > "$WORK/$case.exe" && chmod +x "$WORK/$case.exe" && args+=(--exe "$WORK/$case.exe")
  fi
  cores=("$WORK/$case"/rank*.core)
  "$NSC" triage "${cores[@]}" "$dir"views/*.json "${args[@]}" --json > "$WORK/$case.json" 2> "$WORK/$case.err"
  "$NSC" triage "${cores[@]}" "$dir"views/*.json "${args[@]}" > "$WORK/$case.txt" 2>/dev/null
  "$NSC" triage "${cores[@]}" "${args[@]}" --json > "$WORK/$case.cores.json" 2>/dev/null
  if ! python3 - "$dir/expected.json" "$WORK/$case" <<'PY'
import json, sys
expected = json.load(open(sys.argv[1]))
base = sys.argv[2]
report = json.load(open(base + ".json"))
cores_only = json.load(open(base + ".cores.json"))
text = open(base + ".txt").read()
problems = []
for key, want in expected["triage"].items():
    for name, got in (("with views", report), ("cores alone", cores_only)):
        if got[key] != want:
            problems.append("%s: %s %s, want %s" % (name, key, got[key], want))
section = report.get("numerics") or {}
buffers = section.get("buffers", [])
for want in expected["numerics"]["buffers"]:
    found = [b for b in buffers if b["world_rank"] == want["rank"] and b["role"] == want["role"]
             and b["address"] == want["address"] and b["read_from"] == "device" and b["stats"]]
    if len(found) != 1:
        problems.append("rank %d %s %s: %d readings" % (want["rank"], want["role"], want["address"], len(found)))
        continue
    got = found[0]
    if got["sampled"] or got["stats"]["elements_read"] != want["elements"]:
        problems.append("rank %d %s: not read whole" % (want["rank"], want["role"]))
    if got["element_type"] != want["element_type"]:
        problems.append("rank %d %s: type %s, want %s" % (want["rank"], want["role"], got["element_type"], want["element_type"]))
    for key in ("nan", "pos_inf", "neg_inf", "subnormal", "zero"):
        if got["stats"][key] != want[key]:
            problems.append("rank %d %s %s: %s, the program counted %s" % (want["rank"], want["role"], key, got["stats"][key], want[key]))
origin = expected["numerics"]["origin"]
entered = section.get("entered_through", [])
if origin["kind"] == "send":
    want = "through rank %d's send buffer" % origin["rank"]
    if len(entered) != 1 or want not in entered[0]:
        problems.append("entry point %s, want one naming %r" % (entered, want))
    dirty = [b for b in buffers if b["role"] == "send" and b["stats"] and b["stats"]["nan"]]
    sentence = "rank %d's send buffer of AllReduce #" % origin["rank"]
    if not any(b.get("text", "").startswith(sentence) for b in dirty):
        problems.append("no sentence %r... (%s)" % (sentence, [b.get("text") for b in dirty]))
elif len(entered) != 1 or "arose in a reduction" not in entered[0]:
    problems.append("origin %s, want the reduction" % entered)
for sentence in entered:
    if "  " + sentence not in text:
        problems.append("text lacks %r" % sentence)
if "numerics" in cores_only and any(b["stats"] for b in cores_only["numerics"]["buffers"] if b["read_from"] == "device"):
    problems.append("cores alone claim device counts")
headline = text.strip().split("\n\n")[0].splitlines()
if len(headline) > 3 or sum(len(line.split()) for line in headline) > 60:
    problems.append("headline %d lines: %s" % (len(headline), headline))
if problems:
    print("FAIL %s: %s" % (expected["scenario"], "; ".join(problems[:8])))
    sys.exit(1)
print("ok   %-16s %s culprit %s; %d buffers equal the program's counts; %s"
      % (expected["scenario"], report["verdict"], report["culprit_ranks"], len(expected["numerics"]["buffers"]), entered[0]))
PY
  then
    failures=$((failures + 1)); head -3 "$WORK/$case.err"
  fi
done
[ "$failures" -eq 0 ] || { echo "$failures case(s) failed"; exit 1; }
echo "gpu-numerics corpus: every case passed"
