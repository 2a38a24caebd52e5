#!/usr/bin/env bash
# `ncclscope triage` with the flight recorder (issue 7), CPU only: "ranks" are
# fixture processes that drive libncclscope-recorder.so's NCCL profiler entry
# points (tests/fixtures/recorder_triage_rank.cc) or its CUPTI handlers too
# (tests/fixtures/recorder_driver.cc), each with the stand-in libnccl mapped.
# Checked from live pids, gcores and `state --json` snapshots:
#  - a count mismatch at the same seq is a finding naming seq, counts and ranks;
#  - a matching pair gives no mismatch finding (and the no-hang verdict);
#  - 3 ranks, one odd: the odd rank is the culprit;
#  - a cross-stream chain ends at the rank that never launched the AllGather.
set -uo pipefail
build=${NCCLSCOPE_BUILD:?} src=${NCCLSCOPE_SRC:?}
cli=$build/bin/ncclscope
rank_fixture=$build/fixtures/recorder_triage_rank
driver=$build/fixtures/recorder_driver
recorder=$build/lib/libncclscope-recorder.so
fake_lib=$build/fixtures/fakelib/libnccl.so.2
profile=$src/native/profiles/9fcf74d93a8c3605bf7718f594d0a24366e38536.json
for needed in "$cli" "$rank_fixture" "$recorder" "$fake_lib"; do
  [ -e "$needed" ] || { echo "SKIP: $needed not built"; exit 77; }
done
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
work=$(mktemp -d); [ -n "${KEEP_WORK:-}" ] && echo "work: $work"
export XDG_CACHE_HOME=$work/cache
# Every fixture prints its pid first (started inside $(...), so the shell's own list cannot hold them).
cleanup() {
  [ -n "${KEEP_WORK:-}" ] && return
  for p in $(cat "$work"/*.out 2>/dev/null | grep -o '"pid": [0-9]*' | cut -d' ' -f2); do kill "$p" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT
failures=0
check() {  # check NAME COMMAND...
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}
json_check() {  # json_check NAME FILE PYTHON-EXPRESSION-ON-r
  check "$1" python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$2" "$3"
}
python3 "$src/tests/cli/fake_profile.py" "$profile" "$fake_lib" "$work/profiles" >/dev/null
triage() { "$cli" triage --profile-path "$work/profiles" "$@"; }

start() {  # start NAME COMMAND... -> PID_OF[NAME]; waits for its JSON line
  local name=$1; shift
  "$@" >"$work/$name.out" 2>&1 &
  for _ in $(seq 100); do [ -s "$work/$name.out" ] && break; sleep 0.1; done
  python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["pid"])' "$work/$name.out"
}
rank() {  # rank NAME COMM RANK NRANKS COLL... -> pid
  local name=$1 comm=$2 r=$3 n=$4; shift 4
  local args=()
  for coll in "$@"; do args+=(--coll "$coll"); done
  start "$name" "$rank_fixture" --recorder "$recorder" --nccl "$fake_lib" --comm "$comm" --rank "$r" --nranks "$n" "${args[@]}"
}
mapped_bytes() {
  python3 -c 'import sys; print(sum(int(b, 16) - int(a, 16) for a, b in (l.split()[0].split("-") for l in open(sys.argv[1]))))' "/proc/$1/maps"
}
can_gcore() {  # gdb present, and not a sanitizer build (terabytes of shadow would be written)
  command -v gdb >/dev/null && [ "$(mapped_bytes "$1")" -lt $((4 << 30)) ]
}
snapshot() {  # snapshot PID OUT.json CORE : state --json of the live pid, and a gcore when possible
  "$cli" state --json --pid "$1" --profile-path "$work/profiles" >"$2" 2>/dev/null
  rm -f "$3"
  can_gcore "$1" && gdb -nx -batch -p "$1" -ex "gcore $3" >/dev/null 2>&1
}

# 1. Mismatched counts: AllReduce seq 3 (the 4th) is 1048576 floats on rank 0, 524288 on rank 1.
comm=0x5eed0c0ffee00001
same=(AllReduce:0:1048576:ncclFloat32 AllReduce:1:1048576:ncclFloat32 AllReduce:2:1048576:ncclFloat32)
p0=$(rank mm0 $comm 0 2 "${same[@]}" AllReduce:3:1048576:ncclFloat32)
p1=$(rank mm1 $comm 1 2 "${same[@]}" AllReduce:3:524288:ncclFloat32)
snapshot "$p0" "$work/mm0.json" "$work/mm0.core"
snapshot "$p1" "$work/mm1.json" "$work/mm1.core"
routes=("live:--pid $p0 --pid $p1" "snapshot:$work/mm0.json $work/mm1.json")
[ -s "$work/mm0.core" ] && [ -s "$work/mm1.core" ] && routes+=("core:$work/mm0.core $work/mm1.core")
for route in "${routes[@]}"; do
  tag=${route%%:*}
  # shellcheck disable=SC2086
  triage ${route#*:} --json >"$work/mm.$tag.json" 2>"$work/mm.$tag.err"
  check "mismatch $tag: exit 0" test $? = 0
  json_check "mismatch $tag: verdict mismatch" "$work/mm.$tag.json" 'r["verdict"]=="mismatch" and r["culprit_ranks"]==[]'
  json_check "mismatch $tag: finding names seq, counts, ranks" "$work/mm.$tag.json" \
    '[f for f in r["communicators"][0]["findings"] if f["kind"]=="count-mismatch" and f["collective"]=="AllReduce" and f["seq"]==4 and f["recorder_seq"]==3 and f["values"]==[{"rank":0,"count":1048576,"datatype":"ncclFloat32"},{"rank":1,"count":524288,"datatype":"ncclFloat32"}] and f["waiting_ranks"]==[0,1] and f["culprit_ranks"]==[]]'
  json_check "mismatch $tag: evidence line" "$work/mm.$tag.json" \
    '"count-mismatch: comm 0x5eed0c0ffee00001 AllReduce seq 3 (#4, the 4th AllReduce): rank 0 count 1048576 ncclFloat32, rank 1 count 524288 ncclFloat32" in r["communicators"][0]["findings"][0]["evidence"]'
  json_check "mismatch $tag: recorder section" "$work/mm.$tag.json" \
    'len(r["recorder"]["inputs"])==2 and r["recorder"]["inputs_without_recorder"]==[] and [m["seq"] for m in r["recorder"]["mismatches"]]==[4] and r["recorder"]["chains"]==[]'
  json_check "mismatch $tag: no other mismatch, no no-hang-evident" "$work/mm.$tag.json" \
    '[f["kind"] for f in r["communicators"][0]["findings"]]==["count-mismatch"]'
done
triage --pid "$p0" --pid "$p1" >"$work/mm.txt" 2>/dev/null
check "mismatch text: verdict line" grep -q "^MISMATCH in " "$work/mm.txt"
check "mismatch text: summary" grep -q "the ranks launched AllReduce #4 (seq 3) with different count: rank 0 count 1048576 ncclFloat32, rank 1 count 524288 ncclFloat32 (flight recorder)" "$work/mm.txt"
check "mismatch text: finding head" grep -qx "    \[count-mismatch\] AllReduce #4 (seq 3): ranks 0,1 waiting" "$work/mm.txt"
check "mismatch text: numbering stated" grep -q "numbering: #N is the N-th launch" "$work/mm.txt"
cp "$work/mm.txt" "${RECORDER_TRIAGE_SAMPLES:-$work}/mismatch.txt" 2>/dev/null
kill "$p0" "$p1"

# 2. The same collectives with the same arguments: no mismatch finding.
comm=0x5eed0c0ffee00002
p0=$(rank ok0 $comm 0 2 "${same[@]}")
p1=$(rank ok1 $comm 1 2 "${same[@]}")
triage --pid "$p0" --pid "$p1" --json >"$work/ok.json" 2>/dev/null
check "matching: exit 0" test $? = 0
json_check "matching: no-hang, no mismatch" "$work/ok.json" \
  'r["verdict"]=="no-hang" and r["recorder"]["mismatches"]==[] and not [f for f in r["communicators"][0]["findings"] if f["kind"].endswith("-mismatch")]'
json_check "matching: counters from the recorder (AllReduce=3)" "$work/ok.json" \
  '"AllReduce=3" in r["communicators"][0]["findings"][0]["evidence"][0]'
triage --pid "$p0" --pid "$p1" >"$work/ok.txt" 2>/dev/null
check "matching text: arguments agree" grep -qx "  arguments: 3 collectives recorded by two or more ranks, all with the same count, datatype and root" "$work/ok.txt"
json_check "matching: 3 collectives compared" "$work/ok.json" 'r["recorder"]["compared_collectives"]==3' 
kill "$p0" "$p1"

# 3. Three ranks, rank 2 alone records a different datatype: rank 2 is the culprit.
comm=0x5eed0c0ffee00003
p0=$(rank dt0 $comm 0 3 Broadcast:0:4096:ncclBfloat16:0)
p1=$(rank dt1 $comm 1 3 Broadcast:0:4096:ncclBfloat16:0)
p2=$(rank dt2 $comm 2 3 Broadcast:0:4096:ncclFloat16:0)
triage --pid "$p0" --pid "$p1" --pid "$p2" --json >"$work/dt.json" 2>/dev/null
json_check "3 ranks: datatype-mismatch, culprit rank 2" "$work/dt.json" \
  'r["verdict"]=="mismatch" and [f for f in r["communicators"][0]["findings"] if f["kind"]=="datatype-mismatch" and f["seq"]==1 and f["culprit_ranks"]==[2] and f["waiting_ranks"]==[0,1]]'
kill "$p0" "$p1" "$p2"

# 4. The chain: rank 0 (the CUPTI driver) blocks in cudaStreamSynchronize(compute), which
#    waits on an event recorded after AllGather seq 1 (#2); rank 1 launched only AllGather #1.
if [ -x "$driver" ]; then
  p0=$(LD_PRELOAD=$fake_lib start chain0 "$driver")
  if python3 -c 'import json,sys; sys.exit(0 if json.loads(open(sys.argv[1]).readline())["cupti"] else 1)' "$work/chain0.out"; then
    p1=$(rank chain1 0x6db0a96d9cb7fc37 1 2 AllGather:0:1024:ncclFloat32)
    want="rank 0: host thread $p0 blocked in cudaStreamSynchronize(0x5a000010) -> 0x5a000010 waits on event 0x5c000030 -> 0x5c000030 recorded on 0x5b000020 after AllGather #2 (seq 1) count 1024 ncclFloat32 on comm 0x6db0a96d9cb7fc37 -> that AllGather waits for rank 1 (it has launched AllGather 1 time)"
    snapshot "$p0" "$work/chain0.json" "$work/chain0.core"
    snapshot "$p1" "$work/chain1.json" "$work/chain1.core"
    routes=("live:--pid $p0 --pid $p1" "snapshot:$work/chain0.json $work/chain1.json")
    [ -s "$work/chain0.core" ] && [ -s "$work/chain1.core" ] && routes+=("core:$work/chain0.core $work/chain1.core")
    for route in "${routes[@]}"; do
      tag=${route%%:*}
      # shellcheck disable=SC2086
      triage ${route#*:} --json >"$work/chain.$tag.json" 2>/dev/null
      json_check "chain $tag: hang, culprit rank 1, AllGather #2" "$work/chain.$tag.json" \
        'r["verdict"]=="hang" and r["culprit_ranks"]==[1] and [f for f in r["communicators"][0]["findings"] if f["kind"]=="missing-collective" and f["collective"]=="AllGather" and f["seq"]==2 and f["culprit_ranks"]==[1] and f["waiting_ranks"]==[0]]'
      json_check "chain $tag: rendered chain" "$work/chain.$tag.json" \
        "[c for c in r['recorder']['chains'] if c['text']==\"$want\" and c['waits_for_ranks']==[1] and c['finding']=={'comm_hash':'0x6db0a96d9cb7fc37','kind':'missing-collective','collective':'AllGather','seq':2}]"
      json_check "chain $tag: joined to the finding" "$work/chain.$tag.json" \
        "\"flight recorder chain, $want\" in r['communicators'][0]['findings'][0]['evidence']"
      json_check "chain $tag: in the graph" "$work/chain.$tag.json" \
        "[w for w in r['graph']['nodes'][0]['waits_in'] if w['what']=='stream-chain' and w['text']==\"$want\"]"
    done
    triage --pid "$p0" --pid "$p1" >"$work/chain.txt" 2>/dev/null
    check "chain text: chain line" grep -qxF "  chain: $want" "$work/chain.txt"
    check "chain text: recorder-only comm said" grep -q "no NCCL communicator with this hash in memory" "$work/chain.txt"
    cp "$work/chain.txt" "${RECORDER_TRIAGE_SAMPLES:-$work}/chain.txt" 2>/dev/null
    kill "$p1"
  else
    echo "skip chain: recorder_driver built without CUPTI headers"
  fi
  kill "$p0"
fi

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "recorder triage: all checks passed"
