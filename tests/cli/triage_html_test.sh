#!/usr/bin/env bash
# `ncclscope triage --html FILE` (issue 19): one self-contained page built from the triage
# document (native/src/triage/html.cc). Checked with Python's html.parser against the same
# run's --json (tests/cli/check_html.py): verdict, inline SVG graph (one box per node, one
# arrow per wait), the ranks x communicators table of launched counters, the stack tree as
# nested <details>; strings from the target (frames, input names) escaped, never markup.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
[ -x "$cli" ] || { echo "skip: $cli not built"; exit 77; }
command -v python3 > /dev/null || { echo "skip: no python3"; exit 77; }
checker=$src/tests/cli/check_html.py

# 1. Snapshots with hostile strings: a frame and an input name that are markup.
mkdir -p "$work/snap"
cp "$src/tests/data/triage/allgather-2ranks/rank-0.json" "$work/snap/rank-0.json"
evil_input="rank-<i>1&amp;.json"
python3 - "$src/tests/data/triage/allgather-2ranks/rank-1.json" "$work/snap/$evil_input" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
for thread in doc["threads"]:
    for frame in thread.get("frames", []):
        if frame.get("function") == "pause":
            frame["function"] = "pause<b>&amp;</b><script>alert(1)</script>\u001b[31m"
json.dump(doc, open(sys.argv[2], "w"))
PY
"$cli" triage "$work/snap" --json > "$work/snap.json" 2> "$work/snap.err"; rc=$?
check "snapshots: triage --json (exit $rc)" test "$rc" = 0
"$cli" triage "$work/snap" --html "$work/snap.html" > "$work/snap.txt" 2>> "$work/snap.err"; rc=$?
check "snapshots: triage --html (exit $rc) writes the page" test "$rc" = 0 -a -s "$work/snap.html"
check "snapshots: the text report still goes to stdout" grep -q '^HANG in ' "$work/snap.txt"
check "snapshots: page structure, escaped frame and input name" python3 "$checker" "$work/snap.html" "$work/snap.json" \
  --expect-text 'pause<b>&amp;</b><script>alert(1)</script>\x1b[31m' --expect-text "$evil_input" \
  --forbid-tag b --forbid-tag i
check "snapshots: the raw markup is escaped in the source" grep -qF 'pause&lt;b&gt;&amp;amp;&lt;/b&gt;&lt;script&gt;' "$work/snap.html"
check "snapshots: no raw ESC byte in the page" python3 -c 'import sys; sys.exit(b"\x1b" in open(sys.argv[1], "rb").read())' "$work/snap.html"
check "snapshots: the counter table shows rank 0 AllGather 4 and rank 1 AllGather 3 (the culprit's cell)" python3 - "$work/snap.html" <<'PY'
import re, sys
page = open(sys.argv[1]).read()
table = page[page.index('<table id="launched">'):]
table = table[:table.index("</table>")]
rows = re.findall(r"<tr><td>(\d+)</td>.*?</tr>", table)
ok = rows == ["0", "1"] and re.search(r'<tr><td>0</td>.*AllGather 4[,<]', table) and \
     re.search(r'<tr><td>1</td>.*<td class="culprit">[^<]*AllGather 3[,<]', table)
print("  rows", rows)
sys.exit(0 if ok else 1)
PY
check "snapshots: the culprit's box is drawn in the culprit colour" python3 -c '
import re, sys
page = open(sys.argv[1]).read()
box = re.search(r"<g [^>]*class=\"node role(-|&#45;)culprit\"[^>]*>(.*?)</g>", page, re.S)
sys.exit(0 if box and ">rank 1" in box.group(2) and "#f4cccc" in box.group(2) else 1)' "$work/snap.html"

# 2. The real corpus: the hung 2-rank job of the README (sliced cores, their program).
if [ -f "$src/corefiles/skip-collective/rank0.core.xz" ]; then
  # One run: the document on stdout, the page beside.
  NCCLSCOPE_BUILD_DIR=$build bash "$src/scripts/triage-corpus.sh" skip-collective --json --html "$work/corpus.html" \
    > "$work/corpus.json" 2> /dev/null; rc=$?
  check "corpus skip-collective: --html (exit $rc)" test "$rc" -le 1 -a -s "$work/corpus.html"
  check "corpus skip-collective: page structure" python3 "$checker" "$work/corpus.html" "$work/corpus.json"
  check "corpus skip-collective: verdict hang, culprit rank 1 on the page" python3 - "$work/corpus.html" <<'PY'
import sys
page = open(sys.argv[1]).read()
sys.exit(0 if '<span id="verdict" class="verdict verdict-hang">hang</span>' in page and
         '<p id="culprits">Culprit rank 1</p>' in page and "AllReduce 4" in page and "AllReduce 3" in page else 1)
PY
else
  echo "note: corefiles/skip-collective absent: the corpus page is not checked"
fi

# 3. A large job (1,024 ranks, TP x PP x DP: hundreds of communicators): the page stays small,
#    keeps its structure, and says which rows and columns of the counter table it left out.
if python3 "$src/bench/gen_snapshots.py" --ranks 1024 --out "$work/big" --scenario tp-pp-dp > /dev/null 2>&1; then
  "$cli" triage "$work/big" --json --html "$work/big.html" > "$work/big.json" 2> /dev/null; rc=$?
  check "1,024 ranks: --html (exit $rc)" test "$rc" -le 1
  check "1,024 ranks: page under 2 MB ($(stat -c %s "$work/big.html") bytes)" test "$(stat -c %s "$work/big.html")" -lt 2000000
  check "1,024 ranks: page structure" python3 "$checker" "$work/big.html" "$work/big.json"
  check "1,024 ranks: the cut is said" grep -q '<p id="launched-cut">Shown: 512 of 1024 ranks' "$work/big.html"
  check "1,024 ranks: the culprit's row is among those shown" python3 - "$work/big.html" "$work/big.json" <<'PY'
import json, re, sys
page, report = open(sys.argv[1]).read(), json.load(open(sys.argv[2]))
table = page[page.index('<table id="launched">'):]
shown = {int(r) for r in re.findall(r"<tr><td>(\d+)</td>", table[:table.index("</table>")])}
print("  culprits", report["culprit_ranks"], "shown rows", len(shown))
sys.exit(0 if report["culprit_ranks"] and set(report["culprit_ranks"]) <= shown else 1)
PY
fi

# 4. A page that cannot be written: one line, exit 2.
"$cli" triage "$work/snap" --html "$work/no/such/dir/page.html" > /dev/null 2> "$work/bad.err"; rc=$?
check "unwritable --html: exit 2 (got $rc)" test "$rc" = 2
check "unwritable --html: one line naming the file" grep -qx "ncclscope triage: $work/no/such/dir/page.html: cannot write" "$work/bad.err"
echo "$failures failure(s)"
[ "$failures" = 0 ]
