#!/usr/bin/env bash
# Python stacks from real PyTorch (CPython 3.12) rank cores of the GPU machine,
# checked against the `python -X faulthandler` text each rank wrote at SIGABRT.
# Scenarios: corefiles/torch-*/ (or every directory under $NCCLSCOPE_TORCH_COREFILES)
# whose expected.json gives a rank's faulthandler text ("faulthandler": text or a
# file name in the directory), or rankN*faulthandler* / rankN.log files holding
# faulthandler's "(most recent call first)" text beside the rank's core
# (rankN.python.core, rankN.core, or <scenario>.rankN.python.core beside the
# directory; .xz too). Skips when none.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
checker=$src/tests/cli/check_python_stacks.py
roots=${NCCLSCOPE_TORCH_COREFILES:-$src/corefiles}
python3 - "$roots" "$work/pairs" <<'PY'
import glob, json, os, sys
root, out = sys.argv[1], sys.argv[2]
pairs = []
pattern = "torch-*" if os.environ.get("NCCLSCOPE_TORCH_COREFILES") is None else "*"
for scenario in sorted(d for d in glob.glob(os.path.join(root, pattern)) if os.path.isdir(d)):
    expected = {}
    if os.path.exists(os.path.join(scenario, "expected.json")):
        expected = json.load(open(os.path.join(scenario, "expected.json")))
    for rank in expected.get("ranks", []):
        text = rank.get("faulthandler")
        core = rank.get("core")
        if not text or not core:
            continue
        path = os.path.join(scenario, text)
        if not os.path.exists(path):
            path = os.path.join(out + "." + str(len(pairs)) + ".txt")
            open(path, "w").write(text)
        pairs.append((os.path.join(scenario, core), path))
    dumps = glob.glob(os.path.join(scenario, "rank*faulthandler*")) + glob.glob(os.path.join(scenario, "rank*.log"))
    for dump in sorted(dumps):
        if "most recent call first" not in open(dump, errors="replace").read():
            continue
        rank = os.path.basename(dump).split(".")[0].split("-")[0].split("_")[0]
        name = os.path.basename(scenario)
        candidates = [os.path.join(scenario, rank + suffix) for suffix in
                      (".python.core.xz", ".python.core", ".core.xz", ".core")]
        candidates += [os.path.join(os.path.dirname(scenario), name + "." + rank + suffix) for suffix in
                       (".python.core.xz", ".python.core")]
        for core in candidates:
            if os.path.exists(core) and (core, dump) not in pairs:
                pairs.append((core, dump))
                break
open(out, "w").write("".join("%s\t%s\n" % pair for pair in pairs))
PY
# The multi-group captures: corefiles/<scenario>/ranks.tar.xz (rank<R>.core) beside
# truth/rank<R>.faulthandler.txt.
if [ -z "${NCCLSCOPE_TORCH_COREFILES:-}" ]; then
  for scenario in "$src"/corefiles/*/; do
    [ -f "$scenario/ranks.tar.xz" ] || continue
    name=$(basename "$scenario")
    mkdir -p "$work/$name" && tar -C "$work/$name" -xJf "$scenario/ranks.tar.xz"
    for dump in "$scenario"truth/rank*.faulthandler.txt; do
      [ -f "$dump" ] && grep -q "most recent call first" "$dump" || continue
      rank=$(basename "$dump" .faulthandler.txt)
      [ -f "$work/$name/$rank.core" ] && printf '%s\t%s\n' "$work/$name/$rank.core" "$dump" >> "$work/pairs"
    done
  done
fi
[ -s "$work/pairs" ] || { echo "SKIP: no PyTorch scenario with faulthandler ground truth under $roots"; exit 77; }
while IFS=$'\t' read -r core dump; do
  name=$(basename "$(dirname "$core")")/$(basename "$core")
  case $core in *.xz) xz -dc "$core" > "$work/rank.core"; core=$work/rank.core ;; esac
  "$cli" py-stacks --core "$core" --json > "$work/py.json" 2> "$work/py.err"
  rc=$?
  check "$name: exit 0" test $rc -eq 0
  [ $rc -eq 0 ] || echo "     exit $rc: $(head -c 300 "$work/py.err")$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['python'].get('errors', ''))" "$work/py.json" 2>/dev/null)"
  check "$name: frames agree with faulthandler" python3 "$checker" "$dump" "$work/py.json"
done < "$work/pairs"
exit $((failures > 0))
