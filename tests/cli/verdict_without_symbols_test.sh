#!/usr/bin/env bash
# Issue 13, item 3: the verdict does not depend on symbols. For every corpus scenario, triage
# with the program (--exe) and the GPU machine's system libraries, then with neither (frames in
# the program and in libc stay unnamed; libcuda is stripped anyway): verdict, culprit_ranks and
# suspect_ranks must be equal. Without --exe a host thread inside libcuda has no name for its
# call, so waiting on the GPU is a labelled guess (docs/triage.md); it must not flip a verdict.
# Skips (77) when the corpus, xz or python3 is missing.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
ls "$src"/corefiles/*/expected.json >/dev/null 2>&1 || { echo "SKIP: no scenario in corefiles/"; exit 77; }
WORK=$work SRC=$src NSC=$cli
mkdir -p "$WORK/lib"
for packed in "$SRC"/corefiles/lib/*.tar.xz; do
  [ -f "$packed" ] && tar -C "$WORK/lib" -xJf "$packed" --transform 's|.*/||'
done
summary() {  # triage JSON on stdin -> "verdict culprits suspects"
  python3 -c 'import json,sys; d=json.load(sys.stdin)
print(d["verdict"], d.get("culprit_ranks"), d.get("suspect_ranks"))'
}
checked=0
for dir in "$SRC"/corefiles/*/; do
  [ -f "$dir/expected.json" ] || continue
  scenario=$(basename "$dir") scratch=$WORK/$(basename "$dir")
  mkdir -p "$scratch"
  for packed in "$dir"/*.core.xz; do [ -f "$packed" ] && xz -dc "$packed" > "$scratch/$(basename "${packed%.xz}")"; done
  [ -f "$dir/ranks.tar.xz" ] && tar -C "$scratch" -xJf "$dir/ranks.tar.xz"
  ls "$scratch"/*.core >/dev/null 2>&1 || continue
  exe_args=()
  packed=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("executable") or "")' "$dir/expected.json")
  if [ -n "$packed" ] && [ -f "$SRC/corefiles/$packed" ]; then
    xz -dc "$SRC/corefiles/$packed" > "$scratch/program" && chmod +x "$scratch/program"
    exe_args=(--exe "$scratch/program")
  fi
  with=$("$NSC" triage "$scratch"/*.core "${exe_args[@]}" --solib-search-path "$WORK/lib:/usr/local/cuda-13.0/lib" --json 2>/dev/null | summary)
  without=$("$NSC" triage "$scratch"/*.core --json 2>/dev/null | summary)
  checked=$((checked + 1))
  if [ -z "$with" ] || [ "$with" != "$without" ]; then
    echo "FAIL $scenario: with symbols '$with', without '$without'"
    failures=$((failures + 1))
  else
    echo "ok   $scenario: $with"
  fi
  rm -rf "$scratch"
done
[ "$checked" -gt 0 ] || { echo "SKIP: no scenario had cores"; exit 77; }
echo "$checked scenarios, $failures differ"
[ "$failures" -eq 0 ]
