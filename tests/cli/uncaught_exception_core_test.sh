#!/usr/bin/env bash
# Issue 32: the C++ exception a process died of, read from a real kernel-written core. The comm
# fixture (a communicator laid out from the real 2.28.9 profile, over the stand-in libnccl)
# throws from a thread, uncaught: a std::runtime_error subclass with a short and a 300-byte
# message (COW string), c10::DistBackendError laid out as c10::Error (std::string msg_ after the
# vptr), and the same rethrown with std::rethrow_exception as PyTorch's watchdog does. Checked:
# `state --json` (type, message, object), gdb on the same core (`info symbol` of the object's
# vptr and of the type_info pointer 112 bytes before it), the `state` text, gdb `nccl-state` (library
# and callback memory), `state` on a slice of the core (the same exception) and triage's per-rank failure (the crash verdict's culprit line) lead with
# "terminate: TYPE: MESSAGE".
set -uo pipefail
build=${NCCLSCOPE_BUILD:?} src=${NCCLSCOPE_SRC:?}
cli=$build/bin/ncclscope
fixture=$build/fixtures/comm_fixture
profile=$src/native/profiles/9fcf74d93a8c3605bf7718f594d0a24366e38536.json
fake_lib=$build/fixtures/fakelib/libnccl.so.2
pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
case "$pattern" in
  core|core.*) ;;
  *) echo "SKIP: core_pattern '$pattern' does not write a core into the working directory"; exit 77 ;;
esac
for needed in "$fixture" "$fake_lib" "$profile"; do
  [ -e "$needed" ] || { echo "SKIP: no $needed"; exit 77; }
done
work=$(mktemp -d)
trap '[ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
python3 "$src/tests/cli/fake_profile.py" "$profile" "$fake_lib" "$work/profiles" > /dev/null

long_message="NCCL communicator failed: $(printf 'x%.0s' $(seq 274))"
c10_message="[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, OpType=ALLREDUCE) ran for 15000 milliseconds before timing out."
for kind in short long c10 rethrow; do
  case $kind in
    short) type=fixture::CollectiveFailed message="rank 1 lost its peer" rethrown=False ;;
    long) type=fixture::CollectiveFailed message=$long_message rethrown=False ;;
    c10) type=c10::DistBackendError message=$c10_message rethrown=False ;;
    rethrow) type=c10::DistBackendError message=$c10_message rethrown=True ;;
  esac
  dir=$work/$kind
  mkdir -p "$dir"
  (cd "$dir" && ulimit -c unlimited && exec "$fixture" --profile "$profile" --library "$fake_lib" --throw "$kind") > "$dir/out" 2>&1
  core=$(ls "$dir"/core* 2>/dev/null | head -n 1)
  if [ -z "$core" ]; then
    [ "$kind" = short ] && { echo "SKIP: no core written (core size limit or a container's policy)"; exit 77; }
    fail "$kind: no core"; continue
  fi
  "$cli" state --core "$core" --profile-path "$work/profiles" --json > "$dir/state.json" 2> "$dir/state.err"
  "$cli" state --core "$core" --profile-path "$work/profiles" > "$dir/state.txt" 2>&1
  object=$(python3 - "$dir/state.json" "$type" "$message" "$rethrown" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
want_type, want_message, want_rethrown = sys.argv[2], sys.argv[3], sys.argv[4] == "True"
exception = (doc.get("fatal_signal") or {}).get("exception")
if not isinstance(exception, dict):
    sys.exit("no fatal_signal.exception: %r" % doc.get("fatal_signal"))
problems = []
if exception["type"] != want_type: problems.append("type %r, want %r" % (exception["type"], want_type))
message = exception.get("message") or {}
if message.get("text") != want_message: problems.append("message %r, want %r" % (message.get("text"), want_message))
if message.get("found_by") != "pattern": problems.append("message not labelled as found by pattern")
if exception["rethrown"] != want_rethrown: problems.append("rethrown %r, want %r" % (exception["rethrown"], want_rethrown))
if problems: sys.exit("; ".join(problems))
print(exception["object"])
PY
  ) || { fail "$kind: state --json: $object"; continue; }
  # gdb reads the same core on its own: the object's vptr is T's vtable, the word 112 bytes
  # before the object (__cxa_exception::exceptionType) T's typeinfo.
  if command -v gdb >/dev/null; then
    gdb -batch -nx -ex "info symbol *(void**)$object" -ex "info symbol *(void**)($object-112)" "$fixture" "$core" > "$dir/gdb.txt" 2>&1
    grep -q "^vtable for $type + 16 in section" "$dir/gdb.txt" || fail "$kind: gdb: the object's vptr is not $type's vtable: $(tail -2 "$dir/gdb.txt")"
    grep -q "^typeinfo for $type in section" "$dir/gdb.txt" || fail "$kind: gdb: no typeinfo for $type before the object: $(tail -2 "$dir/gdb.txt")"
  fi
  # The slice keeps the stack words, headers, type name and message: the same exception there.
  "$cli" slice "$core" -o "$dir/slice.core" --profile-path "$work/profiles" > /dev/null 2> "$dir/slice.err" || fail "$kind: slice: $(tail -1 "$dir/slice.err")"
  "$cli" state --core "$dir/slice.core" --profile-path "$work/profiles" --json 2> /dev/null |
    python3 -c 'import json, sys; a, b = (json.load(f)["fatal_signal"].get("exception") for f in (open(sys.argv[1]), sys.stdin)); sys.exit(0 if a == b else "%r != %r" % (b, a))' "$dir/state.json" ||
    fail "$kind: the slice does not show the core's exception"
  first_line=${message%%$'\n'*}
  want="terminate: $type: \"$first_line\" (message found by pattern)"
  sed -n "1,/^communicator /p" "$dir/state.txt" | grep -qF "FATAL SIGNAL $want" || fail "$kind: no '$want' before the communicators: $(head -n 8 "$dir/state.txt")"
  # gdb's nccl-state, the library opening the core and reading gdb's memory: the same line first.
  if command -v gdb >/dev/null && [ -f "$build/lib/libncclscope.so" ]; then
    for mode in library callback; do
      NCCLSCOPE_LIB=$build/lib/libncclscope.so timeout 120 ${NCCLSCOPE_TEST_GDB:-gdb} -nx -batch -iex "source $src/gdbext/ncclscope-gdb.py" \
        -ex "set ncclscope profile-path $work/profiles" -ex "set ncclscope memory $mode" -ex "file $fixture" \
        -ex "core-file $core" -ex "echo @@BEGIN\n" -ex nccl-state > "$dir/gdb-$mode.txt" 2>&1
      sed -n '/^@@BEGIN/,$p' "$dir/gdb-$mode.txt" | sed -n 2,6p | grep -qF "FATAL SIGNAL $want" ||
        fail "$kind: gdb nccl-state ($mode) does not lead with '$want': $(sed -n '/^@@BEGIN/,$p' "$dir/gdb-$mode.txt" | head -n 3)"
    done
  fi
  "$cli" triage "$core" --profile-path "$work/profiles" > "$dir/triage.txt" 2>&1
  sed -n 2p "$dir/triage.txt" | grep -qF "Culprit: rank 1: $want" || fail "$kind: triage's culprit line does not name the exception: $(head -n 3 "$dir/triage.txt")"
done
[ "$failures" = 0 ] && echo "uncaught_exception_core: all checks passed"
exit $((failures > 0))
