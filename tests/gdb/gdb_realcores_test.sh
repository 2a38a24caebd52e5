#!/bin/bash
# nccl-state on real rank cores of real NCCL 2.28.9 hangs (captured on the GPU
# machine, issue 3), opened as a user would: gdb EXE CORE, with the GPU
# machine's system libraries as sysroot and solib-search-path pointing at a
# local copy of the job's libnccl. Every live communicator must match the
# values measured by hand with plain gdb and libnccl's DWARF.
#
# Two layouts are read:
#   corefiles/<scenario>/expected.json   sliced, xz'ed cores in the repository
#       (executables in corefiles/bin/, system libraries in corefiles/lib/*.tar.xz)
#   /work/cores/<scenario>/rankN.core + rankN.gdb.json (+ rankN.ground_truth.json)
#       whole cores of the capture runs, when that directory exists
# The repository's corefiles/ when present, else /work/cores; $NCCLSCOPE_CORES
# (space-separated directories) replaces both.
source "$(dirname "$0")/lib.sh"
require_gdb
require_library
command -v xz >/dev/null || skip "xz not installed"

if [ -n "${NCCLSCOPE_CORES:-}" ]; then dirs=($NCCLSCOPE_CORES)
elif ls "$src"/corefiles/*/expected.json >/dev/null 2>&1; then dirs=("$src"/corefiles/*/)
else dirs=(/work/cores/*/); fi
search_path=$(dirname "$real_lib")
checked=0

# The GPU machine's libc & co, for gdb's own unwinding of the threads.
sysroot=
libs_tar=$(ls "$src"/corefiles/lib/*.tar.xz 2>/dev/null | head -n 1)
if [ -n "$libs_tar" ]; then
  mkdir -p "$work/sysroot" && tar xJf "$libs_tar" -C "$work/sysroot" && sysroot=$work/sysroot
fi

# check_core NAME CORE EXE EXPECTED.json : EXPECTED holds the normalised comms
#   [{"address","comm_hash","rank","nranks","cuda_dev","coll_op_count","async_result",
#     "seq":[5 counts], "launched":{...} (optional)}]
check_core() {
  local name=$1 core=$2 exe=$3 expected=$4 out=$work/core.out target
  if [ -n "$exe" ]; then target=("$exe" "$core"); else target=(-c "$core"); fi
  local settings=(-iex "set solib-search-path $search_path")
  [ -n "$sysroot" ] && settings+=(-iex "set sysroot $sysroot")
  gdb_run "$out" "${settings[@]}" "${target[@]}" \
    -ex "$(begin json)" -ex 'nccl-state --json' -ex "$(end json)" \
    -ex "$(begin text)" -ex 'nccl-state' -ex "$(end text)" \
    -ex "$(begin threads)" -ex 'nccl-threads --json' -ex "$(end threads)"
  check_json "$out" json "
import os
measured = json.load(open('$expected'))
names = ['Broadcast', 'Reduce', 'AllGather', 'ReduceScatter', 'AllReduce']
found = {c['address']: c for c in doc['communicators']}
assert sorted(found) == sorted(m['address'] for m in measured), ('$name', sorted(found), measured)
for m in measured:
    c = found[m['address']]
    got = (c['rank'], c['nranks'], c['cuda_dev'], c['comm_hash'], c['coll_op_count'], c['health']['async_result'])
    want = (m['rank'], m['nranks'], m['cuda_dev'], m['comm_hash'], m['coll_op_count'], m['async_result'])
    assert got == want, ('$name', got, want)
    assert [c['seq_launched'][n] for n in names] == m['seq'], ('$name', c['seq_launched'], m['seq'])
    for collective, count in (m.get('launched') or {}).items():
        assert c['seq_launched'][collective] == count, ('$name', collective, c['seq_launched'], count)
assert doc['target']['kind'] == 'core' and doc['target']['path'] == '$core', doc['target']
assert doc['nccl']['version'] == '2.28.9', doc['nccl']
# Found through gdb's solib-search-path (the core names /opt/torch/.../libnccl.so.2).
assert not os.path.exists('$real_lib') or doc['nccl']['local_file'] == '$real_lib', doc['nccl']
"
  check_json "$out" threads "
assert doc['threads'], '$name: no threads'
assert all(t['blocked_in'] for t in doc['threads']), '$name: a thread without blocked_in'"
  section_of "$out" text > "$work/text.txt"
  local count
  count=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))))' "$expected")
  expect "$work/text.txt" "^$count communicators?(;|$)" "$name: the text does not list $count communicator(s)"
  expect_not "$out" 'Traceback|internal error'
  checked=$((checked + 1))
}

for dir in "${dirs[@]}"; do
  dir=${dir%/}
  [ -f "$dir/ranks.tar.xz" ] && continue  # multi-rank PyTorch captures: tests/cli/multigroup_corpus_test.sh
  if [ -f "$dir/expected.json" ]; then
    version=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("nccl_version", ""))' "$dir/expected.json")
    if [ "$version" != 2.28.9 ]; then  # other versions: tests/cli/layout_headers_test.sh, corpus_test.sh
      echo "not here: $(basename "$dir") is NCCL $version (this test reads 2.28.9 cores through gdb)"
      continue
    fi
    # corefiles/<scenario>/: one expected.json for every rank.
    count=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["ranks"]))' "$dir/expected.json")
    for index in $(seq 0 $((count - 1))); do
      python3 - "$dir/expected.json" "$index" "$work/expected.json" "$work/meta" <<'PY'
import json, sys
scenario = json.load(open(sys.argv[1]))
rank = scenario["ranks"][int(sys.argv[2])]
names = ["Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"]
# A communicator freed by ncclCommAbort (nranks 0, hash 0) is not live: not listed.
comms = [dict(c, seq=[c["seq_launched"][n] for n in names]) for c in rank["comms"] if c["nranks"] > 0]
json.dump(comms, open(sys.argv[3], "w"))
open(sys.argv[4], "w").write("%s %s\n" % (rank["core"], scenario.get("executable") or ""))
PY
      read -r core_name exe_name < "$work/meta"
      xz -dc "$dir/$core_name" > "$work/rank.core" || { fail "cannot unpack $dir/$core_name"; continue; }
      exe=
      if [ -n "$exe_name" ] && [ -f "$src/corefiles/$exe_name" ]; then
        exe=$work/$(basename "$exe_name" .xz)
        [ -x "$exe" ] || { xz -dc "$src/corefiles/$exe_name" > "$exe" && chmod +x "$exe"; }
      fi
      check_core "$(basename "$dir")/rank$index" "$work/rank.core" "$exe" "$work/expected.json"
    done
    continue
  fi
  # /work/cores/<scenario>/: rankN.gdb.json beside each whole core.
  for truth in "$dir"/rank*.gdb.json; do
    [ -f "$truth" ] || continue
    rank=$(basename "$truth" .gdb.json)
    [ -f "$dir/$rank.core" ] || continue
    python3 - "$truth" "$dir/$rank.ground_truth.json" "$work/expected.json" <<'PY'
import json, os, sys
launched = {}
if os.path.exists(sys.argv[2]):
    for comm in json.load(open(sys.argv[2])).get("comms", []):
        launched[comm["address"]] = comm.get("launched", {})
comms = []
for m in json.load(open(sys.argv[1]))["comms"]:
    if m.get("endMagic") != "0x0280028002800280":
        continue  # freed by ncclCommAbort: not live
    comms.append({"address": m["address"], "comm_hash": m["commHash"], "rank": m["rank"],
                  "nranks": m["nRanks"], "cuda_dev": m["cudaDev"], "coll_op_count": m["collOpCount"],
                  "async_result": m["asyncResultName"], "seq": m["seqNumber"],
                  "launched": launched.get(m["address"], {})})
json.dump(comms, open(sys.argv[3], "w"))
PY
    exe=$(cat "$dir/EXE" 2>/dev/null)
    [ -n "$exe" ] && [ -x "$exe" ] || exe=
    check_core "$(basename "$dir")/$rank" "$dir/$rank.core" "$exe" "$work/expected.json"
  done
done
[ "$checked" -gt 0 ] || skip "no real cores found"
echo "$checked real core(s) checked"
finish
