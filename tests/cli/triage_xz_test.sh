#!/usr/bin/env bash
# `ncclscope triage` on xz-compressed cores (issue 30): a directory of rank*.core.xz and the
# files named one by one give the verdict the unpacked cores give, name the user's .xz files,
# and leave no unpacked copy behind, also when one is corrupt.
source "$(dirname "$0")/corpus_prelude.sh"
source "$(dirname "$0")/lib.sh"  # check, and $work removed at exit
scenario=$SRC/corefiles/skip-collective
ls "$scenario"/rank*.core.xz >/dev/null 2>&1 || { echo "SKIP: no $scenario/rank*.core.xz"; exit 77; }
WORK=$work
mkdir -p "$WORK/job" "$WORK/plain" "$WORK/tmp" "$WORK/bad"
cp "$scenario"/rank*.core.xz "$WORK/job/"
for packed in "$WORK"/job/*.xz; do xz -dc "$packed" >"$WORK/plain/$(basename "${packed%.xz}")"; done
packed_exe=$(sed -n 's/^ *"executable": *"\([^"]*\)".*/\1/p' "$scenario/expected.json" | head -n 1)
xz -dc "$SRC/corefiles/$packed_exe" >"$WORK/exe" && chmod +x "$WORK/exe"
export TMPDIR=$WORK/tmp  # where the unpacked copies would be, were any left

"$NSC" triage "$WORK/job" --exe "$WORK/exe" >"$WORK/dir.out" 2>"$WORK/dir.err"
echo "rc=$?" >>"$WORK/dir.out"
"$NSC" triage "$WORK"/job/rank0.core.xz "$WORK"/job/rank1.core.xz --exe "$WORK/exe" >"$WORK/files.out" 2>&1
echo "rc=$?" >>"$WORK/files.out"
"$NSC" triage "$WORK"/plain/rank0.core "$WORK"/plain/rank1.core --exe "$WORK/exe" >"$WORK/plain.out" 2>&1
echo "rc=$?" >>"$WORK/plain.out"
sed "s|$WORK/plain/\(rank[0-9]*\)\.core|$WORK/job/\1.core.xz|g" "$WORK/plain.out" >"$WORK/plain-renamed.out"

check "a directory of .xz cores: the verdict of the unpacked cores, under the .xz names" \
  cmp -s "$WORK/dir.out" "$WORK/plain-renamed.out"
check "the .xz files named one by one: the same" cmp -s "$WORK/files.out" "$WORK/plain-renamed.out"
"$NSC" triage "$WORK/job" --exe "$WORK/exe" --json >"$WORK/dir.json" 2>/dev/null
check "rank 1 is the culprit; inputs named by their .xz paths (JSON)" python3 -c '
import json, sys
report = json.load(open(sys.argv[1]))
assert report["culprit_ranks"] == [1], report["culprit_ranks"]
assert [i["name"] for i in report["inputs"]] == [sys.argv[2] + "/rank0.core.xz", sys.argv[2] + "/rank1.core.xz"]
' "$WORK/dir.json" "$WORK/job"
check "inputs named by their .xz paths" grep -q "$WORK/job/rank1.core.xz" "$WORK/dir.out"
check "no unpacked copy's path printed" bash -c "! grep -q -e /proc/self/fd -e ncclscope-unpacked '$WORK/dir.out' '$WORK/dir.err' '$WORK/files.out'"

printf '\xfd7zXZ\000not really xz' >"$WORK/bad/rank0.core.xz"
cp "$WORK/job/rank1.core.xz" "$WORK/bad/"
"$NSC" triage "$WORK/bad" --exe "$WORK/exe" >"$WORK/bad.out" 2>&1
check "a corrupt .xz costs its rank only (exit 1: partial)" test $? = 1
check "the corrupt .xz is named, with why" grep -q "$WORK/bad/rank0.core.xz: cannot unpack it: " "$WORK/bad.out"
check "no unpacked copy left in TMPDIR" test -z "$(ls -A "$WORK/tmp")"
if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "triage of .xz cores: all checks passed"
