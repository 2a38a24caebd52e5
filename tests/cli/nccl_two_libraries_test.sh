#!/usr/bin/env bash
# Several libnccl in one process (issue 17 item 4), end to end on a real process and its gcore:
# the comm fixture dlopens two stand-in libnccl (RTLD_LOCAL, "NCCL version 2.28.9+fake" and
# "2.30.7+fake", stripped, distinct build-ids), one comm laid out by each version's layout.
# `state` must decode each comm with its own library's layout (found by each library's own
# version string: the shipped header profiles) and name the library of each. Then the GPU
# machine's regression: a libnccl nobody uses, mapped before (below) the preloaded one that
# holds the comm, must not hide it (decoded with the first one's layout: no communicator).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
lib_a=$build/fixtures/fakelib/libnccl.so.2
lib_b=$build/fixtures/fakelib-2.30.7/libnccl.so.2
profile_a=$src/native/profiles/nccl-2.28.9.headers.json
profile_b=$src/native/profiles/nccl-2.30.7.headers.json
[ -x "$comm_fixture" ] && [ -x "$cli" ] && [ -r "$lib_a" ] && [ -r "$lib_b" ] ||
  { echo "skip: fixture, cli or stand-in libraries not built"; exit 77; }

start_fixture() {  # start_fixture [ENV=VALUE...] -- ARGS... -> FIXTURE_PID, FIXTURE_JSON
  local out=$work/fixture.$RANDOM environment=()
  while [ "$1" != -- ]; do environment+=("$1"); shift; done; shift
  env "${environment[@]}" "$comm_fixture" "$@" > "$out" 2>&1 &
  pids+=($!)
  for _ in $(seq 50); do [ -s "$out" ] && break; sleep 0.1; done
  FIXTURE_JSON=$(head -n 1 "$out")
  FIXTURE_PID=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["pid"])' "$FIXTURE_JSON" 2>/dev/null)
  [ -n "$FIXTURE_PID" ] || { echo "FAIL fixture did not start: $(cat "$out")"; exit 1; }
}

# Both comms, each with its own library, version and header profile; both libraries listed.
check_both() {  # check_both DOC.json
  python3 - "$1" "$FIXTURE_JSON" "$lib_a" "$lib_b" <<'EOF'
import json, sys
document, fixture = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
lib_a, lib_b = sys.argv[3], sys.argv[4]
by_hash = {comm["comm_hash"]: comm for comm in document["communicators"]}
assert len(document["communicators"]) == 2, document["communicators"]
first, second = by_hash[fixture["comm_hash"]], by_hash[fixture["second"]["comm_hash"]]
assert first["address"] == fixture["comm"] and second["address"] == fixture["second"]["comm"]
assert first["library"]["path"] == lib_a and first["library"]["version"] == "2.28.9", first["library"]
assert "nccl-2.28.9.headers.json" in first["library"]["layout_source"], first["library"]
assert second["library"]["path"] == lib_b and second["library"]["version"] == "2.30.7", second["library"]
assert "nccl-2.30.7.headers.json" in second["library"]["layout_source"], second["library"]
for comm in (first, second):
    assert comm["rank"] == 1 and comm["nranks"] == 2 and comm["seq_launched"]["AllReduce"] == 7, comm
libraries = document["nccl"]["libraries"]
assert sorted(l["library"] for l in libraries) == sorted([lib_a, lib_b]), libraries
assert all(l["communicators"] == 1 and l["unavailable"] is None for l in libraries), libraries
assert not document["errors"], document["errors"]
EOF
}

start_fixture -- --profile "$profile_a" --library "$lib_a" --also-profile "$profile_b" --also-library "$lib_b"
"$cli" state --json --pid "$FIXTURE_PID" > "$work/live.json" 2> "$work/live.err"; rc=$?
check "two libraries live: exit 0" test "$rc" = 0
check "two libraries live: each comm decoded with its own library's layout" check_both "$work/live.json"
"$cli" state --pid "$FIXTURE_PID" > "$work/live.txt" 2>&1
check "two libraries text: the libraries listed" grep -q "^libraries  2 libnccl mapped" "$work/live.txt"
check "two libraries text: each comm's library" grep -q "^  library lib [01]  NCCL 2.30.7  $lib_b" "$work/live.txt"
if command -v gdb > /dev/null && [ -f "$build/lib/libncclscope.so" ]; then
  NCCLSCOPE_LIB=$build/lib/libncclscope.so timeout 120 ${NCCLSCOPE_TEST_GDB:-gdb} -nx -batch -iex "source $src/gdbext/ncclscope-gdb.py" \
    -p "$FIXTURE_PID" -ex nccl-state > "$work/gdb.txt" 2>&1
  check "two libraries gdb nccl-state: both libraries listed" grep -q "^2 libnccl mapped:" "$work/gdb.txt"
  check "two libraries gdb nccl-state: each comm's library" test "$(grep -c '^#[01]  lib [01]  0x' "$work/gdb.txt")" = 2
fi
if command -v gdb > /dev/null; then
  gdb -p "$FIXTURE_PID" -batch -nx -ex "gcore $work/two.core" > /dev/null 2>&1
  "$cli" state --json --core "$work/two.core" > "$work/core.json" 2> "$work/core.err"
  rc=$?
  # A core has no library files in it: they are found at their paths here, as gdb would.
  check "two libraries core: exit 0" test "$rc" = 0
  check "two libraries core: each comm decoded with its own library's layout" check_both "$work/core.json"
  rm -f "$work/two.core"
fi
kill "$FIXTURE_PID"

# Real libraries: NVIDIA's 2.28.9 (DWARF; its shipped build-id profile) dlopened, and the GPU
# machine's stripped 2.28.3 (corefiles/ keeps its headers, build-id and .rodata: no code, so it
# is mapped, not loaded) laid out by its version's header profile: the shape of a process with,
# e.g., a preloaded system libnccl beside PyTorch's.
min_xz=$src/corefiles/skip-collective-nccl2.28.3-stripped/libnccl.so.2.min.xz
check_real() {  # check_real DOC.json
  python3 - "$1" "$FIXTURE_JSON" "$real_lib" "$work/nccl-2.28.3/libnccl.so.2" <<'EOF'
import json, sys
document, fixture = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
by_hash = {comm["comm_hash"]: comm for comm in document["communicators"]}
assert len(by_hash) == 2, document["communicators"]
nvidia, stripped = by_hash[fixture["comm_hash"]], by_hash[fixture["second"]["comm_hash"]]
assert nvidia["address"] == fixture["comm"] and nvidia["library"]["path"] == sys.argv[3], nvidia["library"]
assert nvidia["library"]["version"] == "2.28.9" and nvidia["library"]["build_id"].startswith("9fcf74d9"), nvidia["library"]
assert stripped["address"] == fixture["second"]["comm"] and stripped["library"]["path"] == sys.argv[4]
assert stripped["library"]["build_id"] == "25ddf25afee0a4238fbfda538f005c27f6d33825", stripped["library"]
assert stripped["library"]["version"] == "2.28.3", stripped["library"]
assert "nccl-2.28.3.headers.json" in stripped["library"]["layout_source"], stripped["library"]
for comm in (nvidia, stripped):
    assert comm["rank"] == 1 and comm["seq_launched"]["AllReduce"] == 7 and comm["p2p_op_count"]["total"] == 3, comm
assert not document["errors"], document["errors"]
EOF
}
if [ -r "$real_lib" ] && [ -r "$min_xz" ]; then
  mkdir -p "$work/nccl-2.28.3" && xz -dc "$min_xz" > "$work/nccl-2.28.3/libnccl.so.2"
  start_fixture -- --profile "$profile" --library "$real_lib" --also-profile \
    "$src/native/profiles/nccl-2.28.3.headers.json" --also-library "$work/nccl-2.28.3/libnccl.so.2" --also-mmap
  "$cli" state --json --pid "$FIXTURE_PID" > "$work/real.json" 2> "$work/real.err"; rc=$?
  check "real 2.28.9 + stripped 2.28.3 live: exit 0" test "$rc" = 0
  check "real 2.28.9 + stripped 2.28.3 live: each comm decoded with its own library's layout" check_real "$work/real.json"
  if command -v gdb > /dev/null; then
    gdb -p "$FIXTURE_PID" -batch -nx -ex "gcore $work/real.core" > /dev/null 2>&1
    "$cli" state --json --core "$work/real.core" > "$work/real-core.json" 2> "$work/real-core.err"; rc=$?
    check "real 2.28.9 + stripped 2.28.3 core: exit 0" test "$rc" = 0
    check "real 2.28.9 + stripped 2.28.3 core: each comm decoded with its own library's layout" \
      check_real "$work/real-core.json"
    rm -f "$work/real.core"
  fi
  kill "$FIXTURE_PID"
else
  echo "note: $real_lib or $min_xz absent: the real-library case is not run"
fi

# The GPU machine's regression: the comm's library preloaded, an unused one dlopened after it
# (mapped below it: first in the mappings). Decoding with the first one's layout gave nothing.
start_fixture LD_PRELOAD="$lib_b" -- --profile "$profile_b" --library "$lib_b" --also-library "$lib_a"
check "unused library mapped first (the regression's order)" python3 -c '
import sys
paths = [line.split()[-1] for line in open("/proc/%s/maps" % sys.argv[1]) if "libnccl.so" in line]
assert paths and paths[0] == sys.argv[2], paths' "$FIXTURE_PID" "$lib_a"
"$cli" state --json --pid "$FIXTURE_PID" > "$work/shadow.json" 2> "$work/shadow.err"; rc=$?
check "unused library first: exit 0" test "$rc" = 0
check "unused library first: the comm found, of the other library; the unused one listed with 0" python3 -c '
import json, sys
document, fixture = json.load(open(sys.argv[1])), json.loads(sys.argv[2])
comms = document["communicators"]
assert len(comms) == 1 and comms[0]["address"] == fixture["comm"], comms
assert comms[0]["library"]["path"] == sys.argv[4] and comms[0]["library"]["version"] == "2.30.7", comms[0]["library"]
counts = {l["library"]: l["communicators"] for l in document["nccl"]["libraries"]}
assert counts == {sys.argv[3]: 0, sys.argv[4]: 1}, counts
assert document["nccl"]["library"] == sys.argv[4] and document["nccl"]["version"] == "2.30.7", document["nccl"]
assert not document["errors"], document["errors"]' "$work/shadow.json" "$FIXTURE_JSON" "$lib_a" "$lib_b"
kill "$FIXTURE_PID"

echo "$failures failure(s)"
[ "$failures" = 0 ]
