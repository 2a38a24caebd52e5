#!/usr/bin/env bash
# End-to-end `ncclscope state` on the comm fixture: live (scan and registry
# routes), on a gcore of it, corrupted field by field, and bad inputs.
# Runs with the real libnccl when present, and always with a stand-in library.
set -uo pipefail
build=${NCCLSCOPE_BUILD:?} src=${NCCLSCOPE_SRC:?}
cli=$build/bin/ncclscope
fixture=$build/fixtures/comm_fixture
profile=$src/native/profiles/9fcf74d93a8c3605bf7718f594d0a24366e38536.json
real_lib=/usr/local/cuda-13.0/lib/libnccl.so.2
work=$(mktemp -d)
export XDG_CACHE_HOME=$work/cache  # no profile cached by earlier runs
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
failures=0
check() {  # check NAME CONDITION-COMMAND...
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}

# A profile for the stand-in library: the real 2.28.9 layout under its build-id.
fake_lib=$build/fixtures/fakelib/libnccl.so.2
fake_id=$(python3 "$src/tests/cli/fake_profile.py" "$profile" "$fake_lib" "$work/profiles")

start_fixture() {  # start_fixture LIB [args...] -> sets FIXTURE_PID, FIXTURE_JSON
  local out=$work/fixture.$RANDOM
  "$fixture" --profile "$profile" --library "$@" > "$out" 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do [ -s "$out" ] && break; sleep 0.1; done
  FIXTURE_JSON=$(head -n 1 "$out")
  FIXTURE_PID=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["pid"])' "$FIXTURE_JSON")
}

expect_decoded() {  # expect_decoded DOC.json FIXTURE_JSON METHOD
  python3 "$src/tests/cli/check_state.py" "$1" "$2" "$3"
}

run_state() {  # run_state OUT.json ARGS... ; returns the exit code
  "$cli" state --json "${@:2}" > "$1" 2> "$1.err"
}

libraries=("$fake_lib")
[ -r "$real_lib" ] && libraries+=("$real_lib")
for lib in "${libraries[@]}"; do
  tag=$( [ "$lib" = "$fake_lib" ] && echo fake || echo real )
  start_fixture "$lib"
  run_state "$work/live.json" --pid "$FIXTURE_PID" --profile-path "$work/profiles"; rc=$?
  check "$tag live scan: exit 0" test "$rc" = 0
  check "$tag live scan: values" expect_decoded "$work/live.json" "$FIXTURE_JSON" scan
  check "$tag live: target untouched (not stopped)" grep -q "State:.*S (sleeping)" "/proc/$FIXTURE_PID/status"

  if command -v gdb >/dev/null; then
    gdb -p "$FIXTURE_PID" -batch -nx -ex "gcore $work/fixture.core" >/dev/null 2>&1
    run_state "$work/core.json" --core "$work/fixture.core" --profile-path "$work/profiles"; rc=$?
    check "$tag core: exit 0" test "$rc" = 0
    check "$tag core: values" expect_decoded "$work/core.json" "$FIXTURE_JSON" scan
    head -c 100000 "$work/fixture.core" > "$work/truncated.core"
    run_state "$work/trunc.json" --core "$work/truncated.core" --profile-path "$work/profiles"; rc=$?
    check "$tag truncated core: exit 1 or 2 with a message" test "$rc" = 1 -o "$rc" = 2
    rm -f "$work/fixture.core"
  fi
  kill "$FIXTURE_PID"

  for corruption in endMagic nChannels ring proxy-cycle sharedRes; do
    start_fixture "$lib" --corrupt "$corruption"
    run_state "$work/bad.json" --pid "$FIXTURE_PID" --profile-path "$work/profiles"; rc=$?
    if [ "$corruption" = endMagic ]; then
      check "$tag corrupt $corruption: comm rejected, named" \
        python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert not d["communicators"]; assert "endMagic is 0xdeadbeef" in json.dumps(d["discovery"]["rejected"])' "$work/bad.json"
    else
      check "$tag corrupt $corruption: exit 1 (partial)" test "$rc" = 1
      check "$tag corrupt $corruption: still answers" \
        python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); c=d["communicators"][0]; assert c["rank"] == 1 and c["seq_launched"]["AllReduce"] == 7' "$work/bad.json"
    fi
    kill "$FIXTURE_PID"
  done
done

if [ -r "$real_lib" ]; then
  start_fixture "$real_lib" --registry
  run_state "$work/reg.json" --pid "$FIXTURE_PID"; rc=$?
  check "real registry route: exit 0" test "$rc" = 0
  check "real registry route: values" expect_decoded "$work/reg.json" "$FIXTURE_JSON" registry
  kill "$FIXTURE_PID"
fi

# Bad input: one line, the right exit code.
bad() {  # bad NAME EXPECTED_RC PATTERN ARGS...
  local name=$1 want=$2 pattern=$3; shift 3
  "$cli" state "$@" > "$work/out" 2> "$work/err"; local rc=$?
  check "bad input $name: exit $want" test "$rc" = "$want"
  check "bad input $name: says '$pattern'" grep -q -- "$pattern" "$work/err"
  check "bad input $name: one line" test "$(wc -l < "$work/err")" = 1
}
bad "missing pid" 2 "no such process" --pid 999999
printf 'not an elf' > "$work/text.core"
bad "non-ELF" 2 "not an ELF" --core "$work/text.core"
bad "ELF not a core" 2 "not a core" --core /bin/true
: > "$work/empty.core"
bad "empty file" 2 "empty.core: empty file" --core "$work/empty.core"
bad "device" 2 "/dev/null: not a regular file (a character device)" --core /dev/null  # issue 37
sleep 30 & pids+=($!)
# No libnccl: still a document (launcher rank, threads: a start-up hang's rank), exit 1, the reason.
"$cli" state --pid $! > "$work/out" 2> "$work/err"; rc=$?
check "no NCCL: exit 1 (partial)" test "$rc" = 1
check "no NCCL: says so" grep -q "no NCCL library mapped" "$work/out"
"$cli" state --pid $! --json > "$work/out.json" 2> "$work/err"
check "no NCCL: JSON has nccl null and no communicator" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert d["nccl"] is None and d["communicators"] == [] and "launcher" in d, d.keys()' "$work/out.json"
start_fixture "$fake_lib"
# Stripped, says "NCCL version 2.28.9": the shipped header profile of 2.28.9 decodes it (issue 17).
"$cli" state --pid "$FIXTURE_PID" --json > "$work/out.json" 2> "$work/err"
check "stripped library, no build-id profile: the header profile of its version" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
assert "nccl-2.28.9.headers.json" in d["nccl"]["layout_source"], d["nccl"]
assert d["communicators"], "no communicator"' "$work/out.json"
# Without the shipped profiles there is none at all: bad input, naming the build-id and the way out.
export NCCLSCOPE_NO_SHIPPED_PROFILES=1
bad "no profile for a stripped library" 2 "$fake_id" --pid "$FIXTURE_PID"
check "no profile: says how to make one" grep -q "layout extract" "$work/err"
check "no profile: names the header profile it looked for" grep -q "no header profile nccl-2.28.9.headers.json" "$work/err"
unset NCCLSCOPE_NO_SHIPPED_PROFILES
bad "usage" 64 "usage" --bogus

echo "$failures failure(s)"
[ "$failures" = 0 ]
