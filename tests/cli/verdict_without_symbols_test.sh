#!/usr/bin/env bash
# Issue 13, item 3: the verdict does not depend on symbols. For every corpus scenario, triage
# with the program (--exe) and the GPU machine's system libraries, then with neither (frames in
# the program and in libc stay unnamed; libcuda is stripped anyway): verdict, culprit_ranks and
# suspect_ranks must be equal. Without --exe a host thread inside libcuda has no name for its
# call, so waiting on the GPU is a labelled guess (docs/triage.md); it must not flip a verdict.
# Skips (77) when the corpus, xz or python3 is missing.
set -u
BUILD=${NCCLSCOPE_BUILD:?}
SRC=${NCCLSCOPE_SRC:?}
NSC=$BUILD/bin/ncclscope
[ -x "$NSC" ] || { echo "SKIP: $NSC not built"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
command -v xz >/dev/null || { echo "SKIP: xz missing"; exit 77; }
ls "$SRC"/corefiles/*/expected.json >/dev/null 2>&1 || { echo "SKIP: no scenario in corefiles/"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/lib"
for packed in "$SRC"/corefiles/lib/*.tar.xz; do
  [ -f "$packed" ] && tar -C "$WORK/lib" -xJf "$packed" --transform 's|.*/||'
done
summary() {  # triage JSON on stdin -> "verdict culprits suspects"
  python3 -c 'import json,sys; d=json.load(sys.stdin)
print(d["verdict"], d.get("culprit_ranks"), d.get("suspect_ranks"))'
}
failures=0 checked=0
for dir in "$SRC"/corefiles/*/; do
  [ -f "$dir/expected.json" ] || continue
  scenario=$(basename "$dir") work=$WORK/$(basename "$dir")
  mkdir -p "$work"
  for packed in "$dir"/*.core.xz; do [ -f "$packed" ] && xz -dc "$packed" > "$work/$(basename "${packed%.xz}")"; done
  [ -f "$dir/ranks.tar.xz" ] && tar -C "$work" -xJf "$dir/ranks.tar.xz"
  ls "$work"/*.core >/dev/null 2>&1 || continue
  exe_args=()
  packed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("executable") or "")' "$dir/expected.json")
  if [ -n "$packed" ] && [ -f "$SRC/corefiles/$packed" ]; then
    xz -dc "$SRC/corefiles/$packed" > "$work/program" && chmod +x "$work/program"
    exe_args=(--exe "$work/program")
  fi
  with=$("$NSC" triage "$work"/*.core "${exe_args[@]}" --solib-search-path "$WORK/lib:/usr/local/cuda-13.0/lib" --json 2>/dev/null | summary)
  without=$("$NSC" triage "$work"/*.core --json 2>/dev/null | summary)
  checked=$((checked + 1))
  if [ -z "$with" ] || [ "$with" != "$without" ]; then
    echo "FAIL $scenario: with symbols '$with', without '$without'"
    failures=$((failures + 1))
  else
    echo "ok   $scenario: $with"
  fi
  rm -rf "$work"
done
[ "$checked" -gt 0 ] || { echo "SKIP: no scenario had cores"; exit 77; }
echo "$checked scenarios, $failures differ"
[ "$failures" -eq 0 ]
