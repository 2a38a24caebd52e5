#!/bin/bash
# Buffer numerics end to end on the comm fixture (issue 20 item 1): the newest AllReduce is a
# launched plan on comm->callbackQueue whose bf16 buffers are host memory, holding NaN and Inf
# (--launched-buffers nan) or underflowed values (underflow). Each reader must give the counts
# the fixture took through float conversion (tests/scenarios/check_numerics.py):
#   `ncclscope numerics --pid`, gdb `nccl-numerics` live and on a gcore, `ncclscope numerics`
#   on the gcore and on its slice; `ncclscope triage --pid` says the sentence.
# Runs with the stand-in libnccl, and with the real one when installed.
source "$(dirname "$0")/lib.sh"
require_gdb
require_library
require_comm_fixture
cli=$build/bin/ncclscope
[ -x "$cli" ] || skip "no $cli"
checker=$src/tests/scenarios/check_numerics.py

# truth LOG: the fixture's counts as the GROUND_TRUTH line check_numerics.py reads.
write_truth() {
  python3 -c 'import json, sys
line = json.loads(sys.argv[1])
print("GROUND_TRUTH " + json.dumps(dict(line["launched"], rank=1)))' "$fixture_json" > "$1"
}

compare() {  # compare WHAT NUMERICS.json
  if python3 "$checker" "$work/truth.log" "$2" > "$work/compare.txt" 2>&1; then sed "s/^/  $1: /" "$work/compare.txt"
  else fail "$1: counts differ"; cat "$work/compare.txt"; fi
}

for lib in $(fixture_libraries); do
  tag=$([ "$lib" = "$fake_lib" ] && echo fake || echo real)
  for mode in nan underflow; do
    echo "== $tag libnccl, $mode"
    start_comm_fixture "$lib" --launched-buffers "$mode"
    pid=$fixture_pid
    write_truth "$work/truth.log"
    "$cli" numerics --pid "$pid" --json --profile-path "$work/profiles" > "$work/live.json" 2> "$work/live.err"
    rc=$?
    # 1: the fixture's planned task has no buffer address (said, not counted).
    [ "$rc" = 1 ] || fail "$tag $mode: numerics --pid exit $rc, expected 1 ($(cat "$work/live.err"))"
    compare "$tag $mode numerics --pid" "$work/live.json"
    check_json_file() { section_of "$1" "$2" > "$work/$2.json"; compare "$tag $mode gdb $2" "$work/$2.json"; }
    gdb_run "$work/gdb.out" -ex "$(fixture_settings)" -p "$pid" \
      -ex "$(begin live)" -ex 'nccl-numerics --json' -ex "$(end live)" \
      -ex "$(begin text)" -ex 'nccl-numerics' -ex "$(end text)" \
      -ex "gcore $work/fixture.core"
    check_json_file "$work/gdb.out" live
    section_of "$work/gdb.out" text > "$work/text.txt"
    if [ "$mode" = nan ]; then
      expect "$work/text.txt" "^rank 1 comm $fixture_comm AllReduce #7 send 0x[0-9a-f]+ 4,096 x bf16: 1,000 NaN, 0 \+Inf, 0 -Inf, 0 subnormal, 0 zero, max \|x\| 1 \(read 4,096 of 4,096 from host\)"
    fi
    expect_not "$work/gdb.out" 'Traceback|internal error'
    [ "$(process_state "$pid")" = S ] || fail "$tag $mode: fixture not left running after gdb"
    gdb_run "$work/gdb-core.out" -ex "$(fixture_settings)" -ex "core $work/fixture.core" \
      -ex "$(begin core)" -ex 'nccl-numerics --json' -ex "$(end core)"
    check_json_file "$work/gdb-core.out" core
    "$cli" numerics --core "$work/fixture.core" --json --profile-path "$work/profiles" > "$work/core.json" 2>/dev/null
    compare "$tag $mode numerics --core" "$work/core.json"
    "$cli" slice "$work/fixture.core" -o "$work/slice.core" --profile-path "$work/profiles" > /dev/null 2>&1 ||
      fail "$tag $mode: slice failed"
    "$cli" numerics --core "$work/slice.core" --json --profile-path "$work/profiles" > "$work/slice.json" 2>/dev/null
    compare "$tag $mode numerics on the slice" "$work/slice.json"
    "$cli" triage --pid "$pid" --profile-path "$work/profiles" --html "$work/triage.html" > "$work/triage.txt" 2>&1
    expect "$work/triage.html" '<section id="numerics">'
    if [ "$mode" = nan ]; then
      expect "$work/triage.html" "<li>rank 1&#39;s send buffer of AllReduce #7 holds 1,000 NaN \(bf16\)</li>"
      expect "$work/triage.txt" "^  rank 1's send buffer of AllReduce #7 holds 1,000 NaN \(bf16\)$"
      expect "$work/triage.txt" "^  rank 1's recv buffer of AllReduce #7 holds 5 Inf \(bf16\)$"
    else
      expect "$work/triage.txt" "^  rank 1's send buffer of AllReduce #7 is mostly underflowed: [0-9,]+ subnormal and [0-9,]+ zero of 4,096 elements read \(bf16\)$"
    fi
    stop_fixture "$pid"
    rm -f "$work/fixture.core" "$work/slice.core"
  done
done
finish
