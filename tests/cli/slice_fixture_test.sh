#!/usr/bin/env bash
# `ncclscope slice` end to end on the comm fixture (real libnccl 2.28.9 DWARF):
# a gcore and a kernel core are sliced; `ncclscope state` must decode the
# sliced core identically (communicators, threads), gdb must print the same
# communicator fields, and the slice must be much smaller.
set -uo pipefail
build=${NCCLSCOPE_BUILD:?} src=${NCCLSCOPE_SRC:?}
cli=$build/bin/ncclscope
fixture=$build/fixtures/comm_fixture
profile=$src/native/profiles/9fcf74d93a8c3605bf7718f594d0a24366e38536.json
lib=/usr/local/cuda-13.0/lib/libnccl.so.2
[ -r "$lib" ] || { echo "skip: $lib absent"; exit 77; }
[ -x "$fixture" ] && [ -x "$cli" ] || { echo "skip: fixture or cli not built"; exit 77; }
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
failures=0
check() {  # check NAME COMMAND...
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}

start_fixture() {  # start_fixture DIR [args...] -> FIXTURE_PID, FIXTURE_JSON
  local dir=$1; shift
  # RANK/WORLD_SIZE: the launcher object (initial stack) must survive the slice too.
  (cd "$dir" && ulimit -c unlimited && RANK=2 WORLD_SIZE=4 exec "$fixture" --profile "$profile" --library "$lib" "$@") \
    > "$dir/fixture.json" 2>&1 &
  FIXTURE_PID=$!
  pids+=($FIXTURE_PID)
  for _ in $(seq 50); do [ -s "$dir/fixture.json" ] && break; sleep 0.1; done
  FIXTURE_JSON=$(head -n 1 "$dir/fixture.json")
}

same_document() {  # same_document A.json B.json KEY... : the keys are equal
  python3 - "$@" <<'PY'
import json, sys
a, b = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
bad = [k for k in sys.argv[3:] if a.get(k) != b.get(k)]
if "launcher" in sys.argv[3:] and a["launcher"]["rank"] != 2: bad.append("launcher.rank is not 2")
if bad: print("differs:", bad, file=sys.stderr)
sys.exit(1 if bad or not a["communicators"] else 0)
PY
}

gdb_fields() {  # gdb_fields CORE COMM_ADDRESS : rank, nRanks, commHash, seqNumber as gdb prints them
  gdb -nx -batch -ex "p ((struct ncclComm*)$2)->rank" -ex "p ((struct ncclComm*)$2)->nRanks" \
    -ex "p/x ((struct ncclComm*)$2)->commHash" -ex "p ((struct ncclComm*)$2)->seqNumber" \
    "$fixture" "$1" 2>/dev/null | grep '^\$'
}

check_slice() {  # check_slice TAG FULL.core MIN_RATIO KEYS...
  local tag=$1 full=$2 ratio=$3; shift 3
  local small=${full%.core}.small.core
  "$cli" state --json --core "$full" > "$full.json"
  "$cli" slice "$full" -o "$small" --json > "$small.figures"; local rc=$?
  "$cli" state --json --core "$small" > "$small.json"
  check "$tag: slice exit 0" test "$rc" = 0
  check "$tag: decoded identically ($*)" same_document "$full.json" "$small.json" "$@"
  check "$tag: at least ${ratio}x smaller" python3 -c 'import json,sys; f=json.load(open(sys.argv[1])); sys.exit(0 if f["output_bytes"] * int(sys.argv[2]) < f["input_bytes"] else 1)' "$small.figures" "$ratio"
  python3 -c 'import json,sys; f=json.load(open(sys.argv[1])); print("     %s: %d -> %d bytes, %d decoder ranges" % (sys.argv[2], f["input_bytes"], f["output_bytes"], f["decoder_ranges"]))' "$small.figures" "$tag"
  if command -v gdb > /dev/null; then
    local comm; comm=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["comm"])' "$FIXTURE_JSON")
    gdb_fields "$full" "$comm" > "$full.gdb"; gdb_fields "$small" "$comm" > "$small.gdb"
    check "$tag: gdb prints the same comm fields" cmp -s "$full.gdb" "$small.gdb"
    check "$tag: gdb printed them" grep -q "0x6db0a96d9cb7fc37" "$small.gdb"
  fi
}

# Kernel core (SIGABRT) when core_pattern writes a plain file in the cwd.
pattern=$(cat /proc/sys/kernel/core_pattern)
if [ "$pattern" = core ] || [ "$pattern" = core.%p ]; then
  mkdir -p "$work/kernel"
  start_fixture "$work/kernel" --registry
  kill -ABRT "$FIXTURE_PID"; wait "$FIXTURE_PID" 2>/dev/null
  core=$(ls "$work"/kernel/core* 2>/dev/null | head -n 1)
  if [ -n "$core" ]; then
    mv "$core" "$work/kernel/full.core"
        # The kernel dumps little here (3 MB: no text, no untouched pages).
    check_slice "kernel core, registry" "$work/kernel/full.core" 3 communicators threads nccl discovery errors launcher
  fi
else
  echo "note: core_pattern '$pattern': kernel core case skipped"
fi

if command -v gdb > /dev/null; then
  for route in registry scan; do
    mkdir -p "$work/$route"
    if [ "$route" = registry ]; then start_fixture "$work/$route" --registry; else start_fixture "$work/$route"; fi
    gdb -p "$FIXTURE_PID" -batch -nx -ex "gcore $work/$route/full.core" > /dev/null 2>&1
    # The scan route scans less memory in the slice: compare what was decoded, not scan figures.
    check_slice "gcore, $route" "$work/$route/full.core" 20 communicators threads nccl errors launcher
    kill "$FIXTURE_PID"
  done
fi

# Bad input and usage.
"$cli" slice /bin/true -o "$work/x.core" 2> "$work/err"; rc=$?
check "ELF not a core: exit 2" test "$rc" = 2
check "ELF not a core: one line naming it" grep -q "core_open /bin/true: not a core file" "$work/err"
"$cli" slice "$work/x.core" 2> "$work/err"; rc=$?
check "no -o: exit 64" test "$rc" = 64

echo "$failures failure(s)"
[ "$failures" = 0 ]
