#!/bin/bash
# nccl-state on real rank cores of real NCCL 2.28.9 hangs (captured on the GPU
# machine, issue 3), opened as a user would: gdb EXE CORE with
# solib-search-path pointing at a local copy of the job's libnccl. Every
# communicator must match what was measured by hand with plain gdb
# (rankN.gdb.json: address, rank, nRanks, cudaDev, commHash, seqNumber,
# collOpCount, asyncResult) and what the job itself printed (rankN.ground_truth.json).
# Core directories: $NCCLSCOPE_CORES (space-separated), else corefiles/*/ in the
# source tree, else /work/cores/*/. Only uncompressed rankN.core and rankN.core.xz.
source "$(dirname "$0")/lib.sh"
require_gdb
require_library

if [ -n "${NCCLSCOPE_CORES:-}" ]; then dirs=($NCCLSCOPE_CORES)
else dirs=($src/corefiles/*/ /work/cores/*/); fi
search_path=$(dirname "$real_lib")
checked=0
for dir in "${dirs[@]}"; do
  dir=${dir%/}
  for truth in "$dir"/rank*.gdb.json; do
    [ -f "$truth" ] || continue
    rank=$(basename "$truth" .gdb.json)
    core=$dir/$rank.core
    if [ ! -f "$core" ] && [ -f "$core.xz" ] && command -v xz >/dev/null; then
      xz -dc "$core.xz" > "$work/$rank.core" && core=$work/$rank.core
    fi
    [ -f "$core" ] || continue
    exe=$(cat "$dir/EXE" 2>/dev/null)
    [ -n "$exe" ] && [ -x "$exe" ] || exe=
    name=$(basename "$dir")/$rank
    out=$work/core.out
    if [ -n "$exe" ]; then target=("$exe" "$core"); else target=(-c "$core"); fi
    gdb_run "$out" -iex "set solib-search-path $search_path" "${target[@]}" \
      -ex "$(begin json)" -ex 'nccl-state --json' -ex "$(end json)" \
      -ex "$(begin text)" -ex 'nccl-state' -ex "$(end text)"
    check_json "$out" json "
import os
# A comm freed by ncclCommAbort (magic overwritten) is not live: not listed.
measured = [m for m in json.load(open('$truth'))['comms'] if m.get('endMagic') == '0x0280028002800280']
truth_file = '$dir/$rank.ground_truth.json'
launched = {}
if os.path.exists(truth_file):
    for comm in json.load(open(truth_file)).get('comms', []):
        launched[comm['address']] = comm.get('launched', {})
names = ['Broadcast', 'Reduce', 'AllGather', 'ReduceScatter', 'AllReduce']
found = {c['address']: c for c in doc['communicators']}
assert sorted(found) == sorted(m['address'] for m in measured), ('$name', sorted(found), measured)
for m in measured:
    c = found[m['address']]
    assert (c['rank'], c['nranks'], c['cuda_dev']) == (m['rank'], m['nRanks'], m['cudaDev']), ('$name', c)
    assert c['comm_hash'] == m['commHash'], ('$name', c['comm_hash'], m['commHash'])
    assert [c['seq_launched'][n] for n in names] == m['seqNumber'], ('$name', c['seq_launched'], m['seqNumber'])
    assert c['coll_op_count'] == m['collOpCount'], ('$name', c['coll_op_count'])
    assert c['health']['async_result'] == m['asyncResultName'], ('$name', c['health'])
    for collective, count in launched.get(m['address'], {}).items():
        assert c['seq_launched'][collective] == count, ('$name', collective, c['seq_launched'], count)
assert doc['target']['kind'] == 'core' and doc['target']['path'] == '$core', doc['target']
assert doc['nccl']['version'] == '2.28.9', doc['nccl']
# Found through gdb's solib-search-path (the core names /opt/torch/.../libnccl.so.2).
assert not os.path.exists('$real_lib') or doc['nccl']['local_file'] == '$real_lib', doc['nccl']
"
    section_of "$out" text > "$work/text.txt"
    count=$(python3 -c 'import json,sys; print(sum(m.get("endMagic") == "0x0280028002800280" for m in json.load(open(sys.argv[1]))["comms"]))' "$truth")
    expect "$work/text.txt" "^$count communicators?(;|$)" "$name: the text does not list $count communicator(s)"
    expect_not "$out" 'Traceback|internal error'
    checked=$((checked + 1))
  done
done
[ "$checked" -gt 0 ] || skip "no real cores with rankN.gdb.json found"
echo "$checked real core(s) checked"
finish
