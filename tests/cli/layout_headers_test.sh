#!/usr/bin/env bash
# Layout profiles built from NCCL's source headers (issue 17):
#   1. the committed nccl-2.28.9.headers.json equals, struct by struct and member by member,
#      the profile extracted from the DWARF of the real libnccl 2.28.9;
#   2. a stripped copy of that library (no DWARF; only the header profile on the search path)
#      decodes the real 2.28.9 cores of corefiles/ exactly as its DWARF does;
#   3. a header profile whose sizes do not fit the target is refused (exit 2), naming both sizes.
# Skips (77) without the real library.
set -uo pipefail
build=${NCCLSCOPE_BUILD:?} src=${NCCLSCOPE_SRC:?}
cli=$build/bin/ncclscope
real_lib=/usr/local/cuda-13.0/lib/libnccl.so.2
headers_profile=$src/native/profiles/nccl-2.28.9.headers.json
[ -r "$real_lib" ] || { echo "SKIP: $real_lib is not here"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export XDG_CACHE_HOME=$work/cache NCCLSCOPE_NO_PROFILE_CACHE=1
failures=0
check() {  # check NAME CONDITION-COMMAND...
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}

# 1. Header profile == DWARF profile (glibc's own pthread types are reported, not compared).
"$cli" layout extract "$real_lib" -o "$work/dwarf.json" 2>/dev/null
check "header-built 2.28.9 profile equals the library's DWARF" \
  python3 "$src/tests/cli/compare_profiles.py" --system-types-as-notes "$work/dwarf.json" "$headers_profile"

# 2. The stripped path: build-id kept, DWARF gone, shipped build-id profiles left out.
mkdir -p "$work/stripped" "$work/profiles"
objcopy --strip-debug "$real_lib" "$work/stripped/libnccl.so.2"
cp "$headers_profile" "$work/profiles/"
stripped_run() { NCCLSCOPE_NO_SHIPPED_PROFILES=1 "$cli" "$@" --profile-path "$work/profiles"; }
stripped_run layout show "$work/stripped/libnccl.so.2" > "$work/show.txt" 2>&1
check "stripped library: layout show uses the header profile" grep -q "nccl-2.28.9.headers.json" "$work/show.txt"

mkdir -p "$work/no-profiles"
NCCLSCOPE_NO_SHIPPED_PROFILES=1 "$cli" layout show "$work/stripped/libnccl.so.2" --profile-path "$work/no-profiles" \
  > /dev/null 2> "$work/none.err"
rc=$?
check "stripped library, no header profile: exit 2 (got $rc), the file it wanted named" \
  grep -q "no header profile nccl-2.28.9.headers.json" "$work/none.err"
check "  and the exit code is 2" test "$rc" -eq 2

decoded_cores=0
for scenario in skip-collective p2p-cycle split-comm; do
  expected=$src/corefiles/$scenario/expected.json
  [ -f "$expected" ] || continue
  exe_xz=$src/corefiles/$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["executable"])' "$expected")
  xz -dc "$exe_xz" > "$work/program" && chmod +x "$work/program"
  for core_xz in "$src/corefiles/$scenario"/rank*.core.xz; do
    core=$work/$(basename "$core_xz" .xz)
    xz -dc "$core_xz" > "$core"
    "$cli" state --core "$core" --exe "$work/program" --no-stacks --json \
      --solib-search-path "$(dirname "$real_lib")" > "$work/dwarf.state.json" 2>/dev/null
    stripped_run state --core "$core" --exe "$work/program" --no-stacks --json \
      --solib-search-path "$work/stripped" > "$work/headers.state.json" 2> "$work/headers.err"
    check "$scenario $(basename "$core"): stripped + header profile decodes as DWARF does" python3 - \
      "$work/dwarf.state.json" "$work/headers.state.json" <<'PY'
import json, sys
dwarf, headers = (json.load(open(path)) for path in sys.argv[1:3])
assert "nccl-2.28.9.headers.json" in headers["nccl"]["layout_source"], headers["nccl"]["layout_source"]
assert dwarf["nccl"]["layout_source"].startswith(("dwarf:", "profile:")), dwarf["nccl"]["layout_source"]
assert headers["communicators"], "no communicators decoded"
# Each comm names its library (issue 17): the same library, through another layout.
assert [c["library"]["path"] for c in dwarf["communicators"]] == [c["library"]["path"] for c in headers["communicators"]]
for comm in dwarf["communicators"] + headers["communicators"]:
    del comm["library"]
assert dwarf["communicators"] == headers["communicators"], "communicators differ"
PY
    decoded_cores=$((decoded_cores + 1))
  done
done
check "real 2.28.9 cores decoded through the stripped path ($decoded_cores)" test "$decoded_cores" -ge 2

# 2b. Real hangs on other versions (corefiles/*-ncclX.Y.Z*, scripts/device-nccl-versions.sh):
# each build's cores through its library stripped of code and DWARF (build-id and .rodata kept)
# and the header profile of its version alone decode to expected.json's values, which came from
# the full cores decoded with the build's own DWARF on the GPU machine.
version_cores=0
for expected in "$src"/corefiles/*-nccl[0-9]*/expected.json; do
  [ -f "$expected" ] || continue
  dir=$(dirname "$expected") name=$(basename "$(dirname "$expected")")
  version=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["nccl_version"])' "$expected")
  build_profile=$src/native/profiles/$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["libnccl_build_id"])' "$expected").json
  if [ -f "$build_profile" ]; then  # built from source there: its DWARF profile came back
    check "$name: header-built $version profile equals the build's DWARF profile" \
      python3 "$src/tests/cli/compare_profiles.py" --system-types-as-notes "$build_profile" \
      "$src/native/profiles/nccl-$version.headers.json"
  fi
  mkdir -p "$work/$name/lib" "$work/$name/profiles"
  xz -dc "$dir/libnccl.so.2.min.xz" > "$work/$name/lib/libnccl.so.2"
  cp "$src/native/profiles/nccl-$version.headers.json" "$work/$name/profiles/"
  for rank in 0 1; do
    xz -dc "$dir/rank$rank.core.xz" > "$work/$name/core"
    NCCLSCOPE_NO_SHIPPED_PROFILES=1 "$cli" state --core "$work/$name/core" --no-stacks --json \
      --solib-search-path "$work/$name/lib" --profile-path "$work/$name/profiles" > "$work/$name/state.json" 2> "$work/$name/err"
    check "$name rank $rank: header profile alone gives expected.json's values" python3 - "$expected" "$rank" \
      "$work/$name/state.json" "$version" <<'PY'
import json, sys
expected, rank, state, version = json.load(open(sys.argv[1])), int(sys.argv[2]), json.load(open(sys.argv[3])), sys.argv[4]
assert f"nccl-{version}.headers.json" in state["nccl"]["layout_source"], state["nccl"]["layout_source"]
found = {c["address"]: c for c in state["communicators"]}
for want in expected["ranks"][rank]["comms"]:
    got = found[want["address"]]
    for key in ("comm_hash", "rank", "nranks", "cuda_dev", "coll_op_count", "seq_launched"):
        assert got[key] == want[key], (key, got[key], want[key])
    assert got["health"]["async_result"] == want["async_result"]
PY
    version_cores=$((version_cores + 1))
  done
done
check "real cores of other NCCL versions decoded through the stripped path ($version_cores)" test "$version_cores" -ge 12

# 3. Sizes that do not fit: ncclComm 8 bytes larger, endMagic 8 bytes later. Refused, both sizes.
python3 - "$headers_profile" "$work/bad/nccl-2.28.9.headers.json" <<'PY'
import json, os, sys
profile = json.load(open(sys.argv[1]))
comm = profile["structs"]["ncclComm"]
comm["size"] += 8
for member in comm["members"]:
    if member["name"] == "endMagic":
        member["offset"] += 8
os.makedirs(os.path.dirname(sys.argv[2]), exist_ok=True)
json.dump(profile, open(sys.argv[2], "w"))
PY
core=$work/rank0.core
[ -f "$core" ] || xz -dc "$src/corefiles/skip-collective/rank0.core.xz" > "$core"
NCCLSCOPE_NO_SHIPPED_PROFILES=1 "$cli" state --core "$core" --no-stacks --json --profile-path "$work/bad" \
  --solib-search-path "$work/stripped" > /dev/null 2> "$work/bad.err"
rc=$?
check "misfit header profile: exit 2 (got $rc)" test "$rc" -eq 2
check "misfit header profile: both sizes named" \
  grep -q "sizeof(ncclComm) = $(( $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["structs"]["ncclComm"]["size"])' "$headers_profile") + 8 )).*sizeof(ncclComm) = [0-9]" "$work/bad.err"
cat "$work/bad.err"

echo "$failures failure(s)"
[ "$failures" -eq 0 ]
