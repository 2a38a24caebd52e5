# Shared helpers of the gdb extension tests (sourced, not a test itself).
#   NCCLSCOPE_SRC / NCCLSCOPE_BUILD from CTest (defaults: this tree, build/).
set -u
src=${NCCLSCOPE_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
build=${NCCLSCOPE_BUILD:-$src/build}
export NCCLSCOPE_LIB=${NCCLSCOPE_LIB:-$build/lib/libncclscope.so}
# The gdb that loads the extension: scripts/asan-tests.sh sets a wrapper that
# preloads the sanitizer runtime an instrumented libncclscope.so needs.
test_gdb=${NCCLSCOPE_TEST_GDB:-gdb}
work=$(mktemp -d "${TMPDIR:-/tmp}/nsc-gdbtest.XXXXXX")
started_pids=()
failures=0

cleanup() {
  for pid in "${started_pids[@]}"; do kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; done
  rm -rf "$work"
}
trap cleanup EXIT

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
finish() {
  if [ "$failures" -ne 0 ]; then echo "$failures check(s) failed"; exit 1; fi
  echo "all checks passed"; exit 0
}

require_gdb() {
  command -v gdb >/dev/null || skip "gdb not installed"
  gdb -nx -batch -ex 'python import gdb' >/dev/null 2>&1 || skip "gdb has no Python"
}

require_library() {
  [ -f "$NCCLSCOPE_LIB" ] || skip "no $NCCLSCOPE_LIB (build the ncclscope target)"
}

# gdb_run OUTFILE GDB-ARGS...: gdb --batch -nx with the extension loaded first.
gdb_run() {
  local out=$1; shift
  timeout 120 $test_gdb -nx -batch -iex "source $src/gdbext/ncclscope-gdb.py" "$@" >"$out" 2>&1
}

# mark NAME: -ex arguments bracketing the next command's output for json_of.
begin() { echo "echo @@BEGIN $1\\n"; }
end() { echo "echo @@END $1\\n"; }

# json_of FILE NAME: the text gdb printed between @@BEGIN NAME and @@END NAME.
section_of() {
  awk -v name="$2" '$0 == "@@BEGIN " name {on = 1; next} $0 == "@@END " name {on = 0} on' "$1"
}

# check_json FILE NAME PYTHON: runs PYTHON with `doc` = the parsed JSON section.
check_json() {
  local file=$1 name=$2 code=$3
  section_of "$file" "$name" > "$work/section.json"
  if ! python3 - "$work/section.json" "$name" <<PY
import json, sys
try:
    doc = json.load(open(sys.argv[1]))
except ValueError as error:
    print("section %s is not JSON: %s" % (sys.argv[2], error)); sys.exit(1)
$code
PY
  then fail "$name: JSON check failed"; fi
}

# expect FILE REGEX [WHAT]: grep -E must find REGEX in FILE.
expect() {
  grep -Eq -- "$2" "$1" || { fail "${3:-expected /$2/}"; echo "---- $1:"; sed -n 1,80p "$1"; }
}
expect_not() {
  if grep -Eq -- "$2" "$1"; then fail "${3:-unexpected /$2/}"; grep -En -- "$2" "$1" | head -5; fi
}

# start_fixture PROGRAM ARGS...: runs it in the background until it prints "ready".
start_fixture() {
  local log=$work/fixture.$$.$RANDOM
  "$@" >"$log" 2>&1 &
  local pid=$!
  started_pids+=("$pid")
  for _ in $(seq 200); do
    grep -q '^ready' "$log" 2>/dev/null && break
    sleep 0.05
  done
  grep -q '^ready' "$log" || { fail "fixture $1 did not become ready"; cat "$log"; finish; }
  fixture_pid=$pid
  fixture_log=$log
}

# The process state letter (S, R, t, T...) of a pid.
process_state() { awk '{print $3}' "/proc/$1/stat" 2>/dev/null; }

# --- the comm fixture (tests/fixtures/comm_fixture.cc) ---
profile=$src/native/profiles/9fcf74d93a8c3605bf7718f594d0a24366e38536.json
real_lib=${NCCLSCOPE_REAL_NCCL:-/usr/local/cuda-13.0/lib/libnccl.so.2}
fake_lib=$build/fixtures/fakelib/libnccl.so.2
comm_fixture=$build/fixtures/comm_fixture

require_comm_fixture() {
  [ -x "$comm_fixture" ] || skip "no $comm_fixture (build the comm_fixture target)"
  [ -f "$fake_lib" ] || skip "no $fake_lib (build the fake_nccl target)"
  [ -f "$profile" ] || skip "no $profile"
  # The stand-in library is stripped: it needs a profile under its own build-id.
  python3 "$src/tests/gdb/fixture_support.py" fake-profile "$profile" "$fake_lib" "$work/profiles" >/dev/null \
    || skip "cannot make a profile for $fake_lib"
  export XDG_CACHE_HOME=$work/cache  # no profile cached by earlier runs
}

# The libraries to run with: the stand-in always, the real 2.28.9 when installed.
fixture_libraries() {
  echo "$fake_lib"
  [ -r "$real_lib" ] && echo "$real_lib"
}

# start_comm_fixture LIB [ARGS...]: sets fixture_pid and fixture_json (expected values).
start_comm_fixture() {
  local log=$work/comm_fixture.$RANDOM
  "$comm_fixture" --profile "$profile" --library "$@" >"$log" 2>&1 &
  local pid=$!
  started_pids+=("$pid")
  for _ in $(seq 100); do [ -s "$log" ] && break; sleep 0.05; done
  fixture_json=$(head -n 1 "$log")
  fixture_pid=$pid
  expected_value() { python3 -c 'import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])' "$fixture_json" "$1"; }
  fixture_comm=$(expected_value comm) || { fail "comm_fixture printed no JSON: $(cat "$log")"; finish; }
}

stop_fixture() { kill "$1" 2>/dev/null; wait "$1" 2>/dev/null; }

# ex_settings: the -ex arguments every fixture session needs.
fixture_settings() { echo "set ncclscope profile-path $work/profiles"; }

# The values comm_fixture.cc writes: rank 1 of 2, AllGather 1, AllReduce 7, one proxy op.
comm_checks='
comms = doc["communicators"]
assert len(comms) == 1, len(comms)
c = comms[0]
assert c["address"] == EXPECTED["comm"], (c["address"], EXPECTED["comm"])
assert c["comm_hash"] == "0x6db0a96d9cb7fc37"
assert (c["rank"], c["nranks"], c["cuda_dev"], c["nvml_dev"]) == (1, 2, 1, 3)
assert c["seq_launched"]["AllGather"] == 1 and c["seq_launched"]["AllReduce"] == 7
assert c["coll_op_count"] == 8 and c["p2p_op_count"]["per_channel"] == [0, 3]
assert c["health"]["abort_flag"] is False and c["health"]["async_result"] == "ncclSuccess"
assert [ch["ring"]["user_ranks"] for ch in c["channels"]] == [[1, 0], [1, 0]]
op = c["proxy_ops"][0]
assert op["address"] == EXPECTED["proxy_args"] and op["op_count"] == 42
assert (op["subs"][0]["posted"], op["subs"][0]["transmitted"], op["subs"][0]["done"]) == (4, 4, 2)
'

check_state() {  # check_state OUT SECTION KIND [METHOD] [PID (default: the fixture's)]
  check_json "$1" "$2" "EXPECTED = $fixture_json
$comm_checks
assert doc[\"target\"][\"kind\"] == \"$3\", doc[\"target\"]
assert doc[\"target\"][\"pid\"] == ${5:-EXPECTED[\"pid\"]}, doc[\"target\"]
assert \"${4:-}\" == \"\" or doc[\"discovery\"][\"method\"] == \"${4:-}\", doc[\"discovery\"]"
}
