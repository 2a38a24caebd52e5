#!/usr/bin/env bash
# `ncclscope triage` on PyTorch's flight-recorder dump files (issue 31), for every real
# PyTorch capture that ships PyTorch's own dumps (corefiles/<scenario>/truth/fr_rank<R>.pkl,
# written by the watchdog of the hung job): the verdict, culprit ranks and suspect ranks from
# the dumps alone equal those from the job's cores (scripts/triage-corpus.sh), and so do those
# from the pickles `ncclscope fr-dump` writes from the cores. Mixed inputs (cores and one rank's
# dump) are accepted. Bad input: a pickle that would run code, a truncated dump, a pickle that
# is no dump, a dump of another job: one line naming the file, that input unusable (exit 1),
# the others triaged to the same verdict; the code never runs. Skips (77) without the captures.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
verdict_of='
import json, sys
r = json.load(open(sys.argv[1]))
print(r["verdict"], r["culprit_ranks"], r["suspect_ranks"])'
verdict() { python3 -c "$verdict_of" "$1"; }
# Dumps say what each rank enqueued, never how a process died: where the cores say crash, the
# dumps must not contradict it (incomplete or hang, the cores' culprits among theirs or their
# suspects); otherwise verdict, culprits and suspects are equal.
same_verdict() { python3 - "$1" "$2" <<'PY'
import json, sys
cores, dumps = (json.load(open(path)) for path in sys.argv[1:3])
key = lambda r: (r["verdict"], r["culprit_ranks"], r["suspect_ranks"])
if cores["verdict"] != "crash":
    sys.exit(key(cores) != key(dumps))
named = set(dumps["culprit_ranks"]) | set(dumps["suspect_ranks"])
sys.exit(not set(cores["culprit_ranks"]) <= named)
PY
}
scenarios=0
for dir in "$src"/corefiles/*/; do
  name=$(basename "$dir")
  [ -f "$dir/ranks.tar.xz" ] && ls "$dir"truth/fr_rank*.pkl > /dev/null 2>&1 || continue
  # PyTorch's recorder was off (TORCH_FR_BUFFER_SIZE=0): its dumps hold no entry to decide from.
  python3 -c 'import pickle,sys; sys.exit(0 if pickle.load(open(sys.argv[1],"rb"))["entries"] else 1)' \
    "$(ls "$dir"truth/fr_rank*.pkl | head -1)" || continue
  # Records alone see neither a communicator-creating call (new_group: ranks 2,3 of
  # order-split-vs-collective sit in it and wrote no dump) nor what a GPU runs (order-gpu-spin:
  # every rank issued all_reduce #4, none started): no culprit from the dumps, never no-hang.
  case $name in order-split-vs-collective | order-gpu-spin)
    "$cli" triage "$dir"truth/fr_rank*.pkl --json > "$work/dumps.json" 2> "$work/dumps.err"
    check "$name: dumps alone say incomplete, no culprit ($(verdict "$work/dumps.json"))" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["verdict"] == "incomplete" and r["culprit_ranks"] == [], (r["verdict"], r["culprit_ranks"])
if sys.argv[2] == "order-split-vs-collective":
    assert "ranks 2,3 left no usable flight-recorder dump" in r["headline"]["text"], r["headline"]["text"]' "$work/dumps.json" "$name"
    continue ;;
  esac
  scenarios=$((scenarios + 1))
  NCCLSCOPE_BUILD_DIR=$build bash "$src/scripts/triage-corpus.sh" "$name" --json > "$work/cores.json" 2> /dev/null
  "$cli" triage "$dir"truth/fr_rank*.pkl --json > "$work/dumps.json" 2> "$work/dumps.err"
  check "$name: triage of PyTorch's dumps exits 0" test $? -eq 0
  cores=$(verdict "$work/cores.json") dumps=$(verdict "$work/dumps.json")
  check "$name: dumps give the cores' verdict ($cores; dumps: $dumps)" same_verdict "$work/cores.json" "$work/dumps.json"
  check "$name: the flight_recorder section decides" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
fr = r["flight_recorder"]
assert fr["decides_verdict"] is (r["verdict"] != "mismatch" or bool(fr["findings"])), fr["decides_verdict"]
assert all(rank["groups"] for rank in fr["ranks"]), "a rank without per-group entries"
for rank in fr["ranks"]:
    for group in rank["groups"]:
        assert group["last_enqueued"]["op"] and group["last_enqueued"]["frames"], group' "$work/dumps.json"
  # The pickles fr-dump writes from the cores (memory, not PyTorch's later dump).
  rm -rf "$work/ranks" "$work/ours"; mkdir -p "$work/ranks" "$work/ours"
  tar -C "$work/ranks" -xJf "$dir/ranks.tar.xz"
  for core in "$work"/ranks/rank*.core; do
    rank=$(basename "$core" .core); rank=${rank#rank}
    "$cli" fr-dump "$core" -o "$work/ours/fr_rank$rank" 2> /dev/null
  done
  "$cli" triage "$work"/ours/fr_rank* --json > "$work/ours.json" 2> /dev/null
  ours=$(verdict "$work/ours.json")
  check "$name: fr-dump's pickles give the cores' verdict ($cores; fr-dump: $ours)" same_verdict "$work/cores.json" "$work/ours.json"
done
[ $scenarios -gt 0 ] || { echo "SKIP: no PyTorch capture with truth/fr_rankN.pkl"; exit 77; }

# The HTML page of a dumps-only triage: the checked structure, the per-rank panel with each
# rank's last entry per group, the timeline with rank 3's tp1 #4 "not issued".
dir=$src/corefiles/tpdp-fewer-steps
"$cli" triage "$dir"/truth/fr_rank*.pkl --json > "$work/page.json" 2> /dev/null
"$cli" triage "$dir"/truth/fr_rank*.pkl --html "$work/page.html" > /dev/null 2>&1
check "dumps page: structure (check_html.py)" python3 "$src/tests/cli/check_html.py" "$work/page.html" "$work/page.json"
check "dumps page: rank panel and flight-recorder timeline" python3 -c '
import re, sys
page = open(sys.argv[1]).read()
panel = page[page.index("<table id=\"rank-panel\">"):]
panel = panel[:panel.index("</table>")]
assert panel.count("<tr>") == 5, panel.count("<tr>")
assert "tp1: all_reduce #4 (scheduled) at tpdp_step (torch_multigroup.py:164)" in panel, panel[:400]
timeline = page[page.index("<section id=\"fr-timeline\">"):]
assert "leaves" in timeline and "not issued" in timeline, timeline[:400]' "$work/page.html"

# Mixed: three cores and one rank's dump, in one run.
dir=$src/corefiles/tpdp-fewer-steps
rm -rf "$work/ranks"; mkdir -p "$work/ranks"
tar -C "$work/ranks" -xJf "$dir/ranks.tar.xz"
"$cli" triage "$work"/ranks/rank0.core "$work"/ranks/rank1.core "$work"/ranks/rank2.core "$dir"/truth/fr_rank3.pkl \
  --json > "$work/mixed.json" 2> /dev/null
check "mixed cores and a dump: accepted, the dump's rank has records" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
kinds = sorted(i["kind"] for i in r["inputs"])
assert kinds == ["core", "core", "core", "fr-dump"], kinds
assert [x["rank"] for x in r["flight_recorder"]["ranks"]] == [0, 1, 2, 3], r["flight_recorder"]["ranks"]
assert r["verdict"] != "error"' "$work/mixed.json"

# Bad input beside the four good dumps of tpdp-fewer-steps: each is one line, unusable, and
# the job's verdict stays hang [3].
mkdir -p "$work/bad"
cp "$dir"/truth/fr_rank*.pkl "$work/bad/"
python3 - "$work" <<'EOF'
import os, pickle, sys
work = sys.argv[1]
class Payload:  # what a hostile "dump" does: call os.system when unpickled
    def __reduce__(self):
        return (os.system, ("touch " + work + "/pwned",))
with open(work + "/bad/fr_rank4", "wb") as f:
    pickle.dump(Payload(), f, protocol=2)
with open(work + "/bad/fr_rank5", "wb") as f:
    pickle.dump([1, 2, 3], f, protocol=2)
good = open(work + "/bad/fr_rank1.pkl", "rb").read()
with open(work + "/bad/fr_rank6", "wb") as f:
    f.write(good[: len(good) // 2])
dump = pickle.load(open(work + "/bad/fr_rank2.pkl", "rb"))
dump["pg_config"]["3"]["ranks"] = "[0, 5]"  # another job's dp0
with open(work + "/bad/fr_rank7", "wb") as f:
    pickle.dump(dump, f, protocol=2)
EOF
"$cli" triage "$work"/bad/* --json > "$work/bad.json" 2> "$work/bad.err"
check "bad dumps: exit 1 (some inputs unusable)" test $? -eq 1
check "bad dumps: never executed" test ! -e "$work/pwned"
check "bad dumps: one line each naming the file, the others triaged to hang [3]" python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
errors = {e["input"].rsplit("/", 1)[-1]: e["message"] for e in r["errors"]}
want = {"fr_rank4": "refused: opcode GLOBAL", "fr_rank5": "not a flight-recorder dump",
        "fr_rank6": "truncated", "fr_rank7": "another job"}
for name, words in want.items():
    assert name in errors, (name, errors)
    assert words in errors[name] and "\n" not in errors[name], errors[name]
assert len(errors) == 4, errors
assert (r["verdict"], r["culprit_ranks"]) == ("hang", [3]), (r["verdict"], r["culprit_ranks"])' "$work/bad.json"
exit $((failures > 0))
