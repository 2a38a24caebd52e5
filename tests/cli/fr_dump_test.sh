#!/usr/bin/env bash
# `ncclscope fr-dump` on the real PyTorch captures (corefiles/<scenario>/ranks.tar.xz): each rank's
# pickle, written from the sliced core, loads with Python's pickle and equals the dump PyTorch
# itself wrote from the same process (truth/fr_rank<R>.pkl) key for key, entry for entry. One
# allowance: an entry PyTorch shows further along (scheduled -> completed) because its dump
# queried the CUDA events after the core's memory was read. Bad input: a core without
# libtorch exits 2 with one line. Skips (77) without the captures or python3.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
pairs=0
dump_and_compare() {  # name rank core pickle
  local name=$1 rank=$2 core=$3 pickle=$4
  pairs=$((pairs + 1))
  "$cli" fr-dump "$core" -o "$work/ours.pkl" 2> "$work/err"
  check "$name rank $rank: fr-dump exit 0" test $? -eq 0
  check "$name rank $rank: the dump equals PyTorch's" python3 -c "$compare_pickles" "$work/ours.pkl" "$pickle"
}
compare_pickles='
import pickle, sys
ours, theirs = (pickle.load(open(path, "rb")) for path in sys.argv[1:3])
problems = [key for key in ("version", "pg_config", "comm_lib_version", "pg_status") if ours.get(key) != theirs.get(key)]
if len(ours.get("entries", [])) != len(theirs.get("entries", [])):
    problems.append("entries: %d, PyTorch %d" % (len(ours.get("entries", [])), len(theirs.get("entries", []))))
later = {"scheduled": ("started", "completed"), "started": ("completed",)}
for mine, real in zip(ours.get("entries", []), theirs.get("entries", [])):
    differ = {k for k in set(mine) | set(real) if mine.get(k) != real.get(k)}
    if mine.get("state") != real.get("state") and real.get("state") in later.get(mine.get("state"), ()):
        differ -= {"state", "time_discovered_started_ns", "time_discovered_completed_ns", "retired"}
    if differ:
        problems.append("record %s: %s" % (real.get("record_id"), ", ".join(sorted(differ))))
if problems:
    print("  " + "; ".join(problems[:5]))
sys.exit(1 if problems else 0)
'
each_torch_rank dump_and_compare
[ $pairs -gt 0 ] || { echo "SKIP: no PyTorch capture with truth/fr_rankN.pkl"; exit 77; }
# A process without libtorch: one line, exit 2.
plain=$(ls "$src"/corefiles/skip-collective/rank*.core.xz 2>/dev/null | head -1)
if [ -n "$plain" ]; then
  xz -dc "$plain" > "$work/plain.core"
  "$cli" fr-dump "$work/plain.core" -o "$work/plain.pkl" 2> "$work/plain.err"
  check "no libtorch: exit 2" test $? -eq 2
  check "no libtorch: one line naming why" test "$(wc -l < "$work/plain.err")" -eq 1
  check "no libtorch: no file written" test ! -e "$work/plain.pkl"
fi
"$cli" fr-dump "$work/plain.core" > /dev/null 2>&1
check "no -o: usage exit 64" test $? -eq 64
echo "$pairs rank dumps compared"
exit $((failures > 0))
