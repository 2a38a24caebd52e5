#!/usr/bin/env bash
# Issue 32: a CUDA error that PyTorch turned into an abort is told as the CUDA error. Input: the
# real corefiles/crash-cuda-illegal-address capture's own `ncclscope state --json` of each rank's
# full core, made on the GPU machine with libtorch's symbols (truth/state/). Rank 3's kernel wrote
# out of bounds; its main thread sits in c10::cuda::c10_cuda_check_implementation building the
# c10::Error of `loss.item()` at torch_crash_order.py:195, and its watchdog thread died in
# std::terminate rethrowing that error (the process's log: "CUDA error: an illegal memory access
# was encountered"); ranks 0-2 read ncclRemoteError. The error's text is in neither the full-core
# snapshot (no exception decoder then) nor the slices: the frames are the evidence, labelled so.
# Then an edited copy with the exception PyTorch rethrew (message as rank 3's log prints it), and
# two that must not count: the check as the innermost frame (no failure built), and no check.
source "$(dirname "$0")/corpus_prelude.sh"
states=$SRC/corefiles/crash-cuda-illegal-address/truth/state
[ -f "$states/rank3.state.json.xz" ] || { echo "SKIP: no $states"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
for r in 0 1 2 3; do xz -dc "$states/rank$r.state.json.xz" > "$WORK/rank$r.json"; done
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

# edit KIND: rank 3's snapshot changed as KIND says, into $WORK/KIND/ beside ranks 0-2.
edit() {
  mkdir -p "$WORK/$1" && cp "$WORK"/rank[012].json "$WORK/$1/"
  python3 - "$1" "$WORK/rank3.json" "$WORK/$1/rank3.json" <<'PY'
import json, sys
kind, source, target = sys.argv[1:4]
doc = json.load(open(source))
main = next(t for t in doc["threads"] if t["tid"] == 1262)
at = next(i for i, f in enumerate(main["frames"]) if "c10_cuda_check_implementation" in (f.get("function") or ""))
if kind == "message":
    doc["fatal_signal"]["exception"] = {
        "type": "c10::DistBackendError", "type_name": "N3c1016DistBackendErrorE", "type_name_from": "memory",
        "object": "0x7fd6a0000040", "rethrown": True, "found_at": "0x7fd6837fd8c8",
        "message": {"text": "[PG ID 2 PG GUID 4(dp1) Rank 1] Process group watchdog thread terminated with exception: "
                            "CUDA error: an illegal memory access was encountered\nSearch for `cudaErrorIllegalAddress' in "
                            "https://docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html for more information.",
                    "offset": 8, "truncated": False, "found_by": "pattern"}}
elif kind == "innermost":
    for key in ("frames", "merged_frames"):
        main[key] = [f for f in main.get(key) or [] if "c10_cuda_check_implementation" in (f.get("function") or "")
                     or f.get("kind") == "python"]
elif kind == "none":
    for key in ("frames", "merged_frames"):
        main[key] = [f for f in main.get(key) or [] if "c10_cuda_check_implementation" not in (f.get("function") or "")]
json.dump(doc, open(target, "w"))
PY
}
edit message; edit innermost; edit none

# expect NAME DIR RULE KIND TEXT-START HEADLINE-START
expect() {
  "$NSC" triage "$2" --json > "$WORK/$1.json" 2> "$WORK/$1.err" || [ $? -eq 1 ] || { fail "$1: exit $?"; return; }
  python3 - "$WORK/$1.json" "$3" "$4" "$5" "$6" <<'PY' || fail "$1"
import json, sys
doc = json.load(open(sys.argv[1]))
rule, kind, text_start, headline_start = sys.argv[2:6]
problems = []
def want(what, got, expected):
    if got != expected:
        problems.append("%s: %r, want %r" % (what, got, expected))
want("verdict", doc["verdict"], "crash")
want("culprit_ranks", doc["culprit_ranks"], [3])
want("crash.rule", doc["crash"]["rule"], rule)
ranks = {r["world_rank"]: r for r in doc["crash"]["ranks"]}
want("rank 3 kind", ranks[3]["kind"], kind)
if not ranks[3]["text"].startswith(text_start):
    problems.append("rank 3 text %r does not start with %r" % (ranks[3]["text"], text_start))
for r in (0, 1, 2):
    want("rank %d kind, reaction" % r, (ranks[r]["kind"], ranks[r]["reaction"]), ("watchdog-abort", True))
lines = doc["headline"]["lines"] if isinstance(doc["headline"], dict) else doc["headline"]
words = sum(len(line.split()) for line in lines)
if len(lines) > 3 or words > 60:
    problems.append("headline %d lines, %d words (at most 3 and 60)" % (len(lines), words))
if not lines[0].startswith(headline_start):
    problems.append("headline %r does not start with %r" % (lines[0], headline_start))
print("\n".join(problems) if problems else "ok: " + " / ".join(lines))
sys.exit(1 if problems else 0)
PY
}
expect frames "$WORK" local-failure cuda-error \
  "a failed CUDA check (c10_cuda_check_implementation building its error in thread 1262 at run_tpdp (torch_crash_order.py:195); the error's text is not in memory); then PyTorch's watchdog aborted it" \
  "CRASH: rank 3 hit a CUDA error first; no other rank's failure explains it."
expect message "$WORK/message" local-failure cuda-error \
  "CUDA error: an illegal memory access was encountered; then PyTorch's watchdog aborted it" \
  "CRASH: rank 3 hit a CUDA error first"
expect innermost "$WORK/innermost" watchdog-first watchdog-abort "aborted by PyTorch's watchdog, not after a peer's error" \
  "CRASH: PyTorch aborted rank 3 in all_reduce #4 on pg tp1 first"
expect none "$WORK/none" watchdog-first watchdog-abort "aborted by PyTorch's watchdog, not after a peer's error" \
  "CRASH: PyTorch aborted rank 3 in all_reduce #4 on pg tp1 first"
echo "$failures failure(s)"
[ "$failures" -eq 0 ]
