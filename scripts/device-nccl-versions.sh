#!/usr/bin/env bash
# Real hangs on NCCL versions other than PyTorch 2.11's 2.28.9 (issue 17), one scripted call on
# the GPU machine, from the repo root with $OUT set:
#
#   bash .device-carry/nccl-src/device-nccl-versions.sh [VERSION...]   (default: 2.27.7 2.29.7)
#
# Versions before 2.27 are patched for CUDA 13 first (nccl-cuda13-compat.sh, carried beside this
# script: host code only, no decoded struct changes). TWO_LIBRARIES=VERSION also runs
# nccl_two_libraries (carried beside it too): one process with the venv's libnccl and that
# version's build dlopen'ed at once, one communicator each, a hang on the second.
# EXTRA_HANGS="NAME:VERSION:MODE[:VAR=value] ..." runs more scenarios of nccl_hang_scenarios on a
# version's build (e.g. split-share-v2.20.5:2.20.5:split-comm:NCCL_COMM_SPLIT_SHARE_RESOURCES=1).
#
# Carries .device-carry/lib/{libdw.so.1,libelf.so.1} and .device-carry/nccl-src/: this script,
# nccl-vX.Y.Z-1.tar.xz (git archive of the tag), ncclscope (this branch's CLI, stripped),
# profiles/ (the header-built nccl-X.Y.Z.headers.json) and nccl_hang_scenarios (the C++ scenario
# binary; NCCL's API is the same in every version it calls, so one binary runs on each library
# through LD_LIBRARY_PATH, which wins over its RUNPATH).
#
# 1. Builds the versions from source in parallel (make src.build, sm_90 only, ONLY_FUNCS cut to
#    what the scenarios launch), while the machine's own stripped libnccl (2.28.3) hangs first.
# 2. Per library: the skip-collective hang (2 ranks on GPU 0, one NCCL_HOSTID each: socket NET),
#    cores by SIGABRT (coredump_filter 0x33, no debugger), then with the carried ncclscope:
#    the build's DWARF profile (`layout extract`), `state --json` of each full core (the
#    expected values: the build's own DWARF), `slice`, `state --json` of the slice, and the
#    stripped path: the same slice decoded against a stripped copy of the library with only the
#    header profiles to go on. A copy of the library without DWARF and without device code
#    (build-id, .rodata version string, .dynsym kept) comes back for the tests.
# 3. Everything into ONE file, $OUT/nccl-versions.tar.xz (at most 14 MB), summary on stdout.
set -uo pipefail
: "${OUT:?OUT must name the folder whose files come back}"
REPO=$(pwd); CARRY=$REPO/.device-carry; SRC=$CARRY/nccl-src
WORK=${WORK:-/tmp/nccl-versions}
BIN=${BIN:-$SRC/nccl_hang_scenarios}
SYSTEM_NCCL=${SYSTEM_NCCL:-/usr/lib/x86_64-linux-gnu/libnccl.so.2}
VENV_NCCL=${VENV_NCCL:-/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2}
JOBS=${JOBS:-8}
BUILD_TIMEOUT_S=${BUILD_TIMEOUT_S:-300}
HANG_TIMEOUT_S=${HANG_TIMEOUT_S:-60}
ONLY_FUNCS=${ONLY_FUNCS:-AllReduce Sum f32 * *|AllGather * *|ReduceScatter Sum f32 * *|SendRecv}
MAX_BYTES=$((14 * 1000 * 1000))
VERSIONS=("$@"); [ ${#VERSIONS[@]} -eq 0 ] && VERSIONS=(2.27.7 2.29.7)
CUDA_HOME=${CUDA_HOME:-$(dirname "$(dirname "$(readlink -f "$(which nvcc)")")")}
log() { echo "[versions $(date +%T) ${SECONDS}s] $*"; }

export NCCL_IB_DISABLE=1 NCCL_NET=Socket NCCL_SOCKET_IFNAME=lo NCCL_NVLS_ENABLE=0 NCCL_DEBUG=WARN \
       TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
# No profile cache: a build-id profile cached by the DWARF run must not hide the header path.
export NCCLSCOPE_NO_PROFILE_CACHE=1 XDG_CACHE_HOME=$WORK/empty-cache
NSC=$SRC/ncclscope; [ -f "$NSC" ] || NSC=$CARRY/ncclscope   # main's CLI: no header profiles
chmod +x "$NSC" "$BIN" 2>/dev/null
# Profiles: a build-id one first, then the library's DWARF, then the header-built one by version.
nsc() { LD_LIBRARY_PATH=$CARRY/lib "$NSC" "$@" --profile-path "$SRC/profiles"; }

build_version() {  # version -> $WORK/vV/lib/libnccl.so.2, build.rc, build.seconds
  local v=$1 dir=$WORK/v$1 start=$SECONDS rc
  mkdir -p "$dir" && tar -xJf "$SRC/nccl-v$v-1.tar.xz" -C "$dir"
  bash "$SRC/nccl-cuda13-compat.sh" "$dir/nccl-v$v-1" "$CUDA_HOME" > "$dir/compat.log" 2>&1
  ( cd "$dir/nccl-v$v-1" && timeout "$BUILD_TIMEOUT_S" make -j"$JOBS" src.build \
      NVCC_GENCODE="-gencode=arch=compute_90,code=sm_90" CUDA_HOME="$CUDA_HOME" \
      ONLY_FUNCS="$ONLY_FUNCS" ) > "$dir/build.log" 2>&1
  rc=$?
  echo $rc > "$dir/build.rc"; echo $((SECONDS - start)) > "$dir/build.seconds"
  mkdir -p "$dir/lib"
  [ -f "$dir/nccl-v$v-1/build/lib/libnccl.so.2" ] &&
    cp -L "$dir/nccl-v$v-1/build/lib/libnccl.so.2" "$dir/lib/libnccl.so.2"
}

start_rank() {  # dir rank libdir [mode [VAR=value]] -> STARTED_PID (a child of this shell)
  local dir=$1 rank=$2 libdir=$3 mode=${4:-skip-collective} extra_env=${5:-}
  mkdir -p "$dir/rank$rank"
  # shellcheck disable=SC2086
  env $extra_env LD_LIBRARY_PATH=$libdir NCCL_HOSTID=rank$rank-host RANK=$rank WORLD_SIZE=2 \
    bash -c 'echo 0x33 > /proc/self/coredump_filter && ulimit -c unlimited && cd "$0" && exec "$@"' \
    "$dir/rank$rank" "$BIN" --rank "$rank" --nranks 2 --id-file "$dir/nccl.id" --mode "$mode" \
    --device 0 > "$dir/rank$rank.log" 2>&1 &
  STARTED_PID=$!
}

wait_gone() {  # pid seconds: a zombie or a missing pid means the dump is written
  local deadline=$((SECONDS + $2)) state
  while [ $SECONDS -lt $deadline ]; do
    state=$(awk '{print $3}' /proc/$1/stat 2>/dev/null)
    { [ -z "$state" ] || [ "$state" = Z ]; } && return 0
    sleep 0.2
  done
  return 1
}

hang() {  # name libdir [mode [VAR=value]]: one hang (skip-collective by default), cores in $WORK/name/rankR.core
  local name=$1 libdir=$2 mode=${3:-skip-collective} extra_env=${4:-} dir=$WORK/$1 pid0 pid1 rank pid deadline
  rm -rf "$dir"; mkdir -p "$dir"
  start_rank "$dir" 0 "$libdir" "$mode" "$extra_env"; pid0=$STARTED_PID
  start_rank "$dir" 1 "$libdir" "$mode" "$extra_env"; pid1=$STARTED_PID
  deadline=$((SECONDS + HANG_TIMEOUT_S))
  while [ $SECONDS -lt $deadline ]; do
    local ready=1
    for rank in 0 1; do
      pid=$pid0; [ $rank = 1 ] && pid=$pid1
      grep -q HANG_POINT_REACHED "$dir/rank$rank.log" 2>/dev/null && continue
      kill -0 "$pid" 2>/dev/null && ready=0
    done
    [ $ready = 1 ] && break
    sleep 0.5
  done
  sleep 2
  for rank in 0 1; do
    pid=$pid0; [ $rank = 1 ] && pid=$pid1
    cp /proc/$pid/maps "$dir/rank$rank.maps" 2>/dev/null
  done
  kill -ABRT "$pid0" "$pid1" 2>/dev/null
  for rank in 0 1; do
    pid=$pid0; [ $rank = 1 ] && pid=$pid1
    wait_gone "$pid" 90 || kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    [ -f "$CORE_DIR/core.$pid" ] && mv "$CORE_DIR/core.$pid" "$dir/rank$rank.core"
    grep -h '^GROUND_TRUTH ' "$dir/rank$rank.log" | sed 's/^GROUND_TRUTH //' > "$dir/rank$rank.ground_truth.json"
  done
  log "$name: $(grep -c HANG_POINT_REACHED "$dir"/rank*.log | tr '\n' ' ') cores: $(ls -s --block-size=1M "$dir"/*.core 2>/dev/null | tr '\n' ' ')"
}

# Two libnccl in one process: the venv's (with DWARF) and a build of another version, dlopen'ed by
# path. Full cores come back when they fit, else slices that keep [heap] and small anonymous
# mappings (where both libraries' communicators live) beside what the slicer itself keeps.
two_libraries() {  # version
  local v=$1 dir=$WORK/two-libraries pack=$WORK/pack/two-libraries rank pids=() pid
  local lib_a=$VENV_NCCL lib_b=$WORK/v$1/lib/libnccl.so.2 bin=$SRC/nccl_two_libraries
  if [ ! -f "$lib_b" ] && [ -f "$SYSTEM_NCCL" ]; then  # that version did not build: the system one
    mkdir -p "$WORK/system-lib" && cp -L "$SYSTEM_NCCL" "$WORK/system-lib/libnccl.so.2"; lib_b=$WORK/system-lib/libnccl.so.2
  fi
  [ -f "$lib_b" ] && [ -f "$bin" ] || { log "two-libraries: no v$v build or no fixture"; return; }
  chmod +x "$bin"; rm -rf "$dir"; mkdir -p "$dir" "$pack"
  for rank in 0 1; do
    NCCL_HOSTID=rank$rank-host bash -c 'echo 0x33 > /proc/self/coredump_filter && ulimit -c unlimited && exec "$@"' \
      two "$bin" --rank $rank --id-dir "$dir" --lib-a "$lib_a" --lib-b "$lib_b" > "$dir/rank$rank.log" 2>&1 &
    pids[$rank]=$!
  done
  local deadline=$((SECONDS + HANG_TIMEOUT_S))
  while [ $SECONDS -lt $deadline ]; do
    [ "$(grep -l HANG_POINT_REACHED "$dir"/rank?.log 2>/dev/null | wc -l)" = 2 ] && break; sleep 0.5
  done
  sleep 2
  for rank in 0 1; do cp /proc/${pids[$rank]}/maps "$dir/rank$rank.maps" 2>/dev/null; done
  kill -ABRT "${pids[@]}" 2>/dev/null
  for rank in 0 1; do
    pid=${pids[$rank]}; wait_gone "$pid" 90 || kill -KILL "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
    [ -f "$CORE_DIR/core.$pid" ] && mv "$CORE_DIR/core.$pid" "$dir/rank$rank.core"
    grep -h '^GROUND_TRUTH ' "$dir/rank$rank.log" | sed 's/^GROUND_TRUTH //' > "$pack/rank$rank.ground_truth.json"
    cp "$dir/rank$rank.log" "$dir/rank$rank.maps" "$pack/" 2>/dev/null
    [ -f "$dir/rank$rank.core" ] || continue
    ls -l "$dir/rank$rank.core" > "$pack/rank$rank.core.size"
    nsc state --core "$dir/rank$rank.core" --exe "$bin" --solib-search-path "$(dirname "$lib_a"):$(dirname "$lib_b")" \
      --json > "$pack/rank$rank.state.full.json" 2> "$pack/rank$rank.state.full.err"
    local regions="" range perms rest name start end
    while read -r range perms _ _ _ name; do
      start=$((16#${range%-*})); end=$((16#${range#*-}))
      [[ $perms == rw* ]] && { [ "$name" = "[heap]" ] || { [ -z "$name" ] && [ $((end - start)) -le 8388608 ]; }; } &&
        regions+="--keep-region $range "
    done < "$dir/rank$rank.maps"
    regions=$(echo "$regions" | sed 's/\([0-9a-f]*\)-\([0-9a-f]*\)/0x\1-0x\2/g')
    # shellcheck disable=SC2086
    nsc slice "$dir/rank$rank.core" -o "$pack/rank$rank.core.sliced" --exe "$bin" \
      --solib-search-path "$(dirname "$lib_a")" $regions > "$pack/rank$rank.slice.log" 2>&1
    xz -9 -T8 -k -c "$dir/rank$rank.core" > "$dir/rank$rank.core.xz"
    ls -l "$dir/rank$rank.core.xz" >> "$pack/rank$rank.core.size"
    [ "$(stat -c %s "$dir/rank$rank.core.xz")" -le $((15 * 1024 * 1024)) ] &&
      cp "$dir/rank$rank.core.xz" "$OUT/two-libraries.rank$rank.core.xz"
  done
  { readelf -nW "$lib_b" | grep -A1 'Build ID'; sha256sum "$lib_a" "$lib_b"; } > "$pack/libraries.txt" 2>&1
  log "two-libraries ($lib_a + $lib_b): $(grep -h HANG_POINT "$dir"/rank?.log | tr '\n' ' ')"
}

decode() {  # name libdir: profiles, state of full cores and slices, the stripped path
  local name=$1 libdir=$2 dir=$WORK/$1 pack=$WORK/pack/$1 rank core
  mkdir -p "$pack" "$dir/stripped"
  local lib=$libdir/libnccl.so.2
  { readelf -nW "$lib" | grep -A1 'Build ID'; strings -a "$lib" | grep -m3 'NCCL version';
    readelf -SW "$lib" | grep -c debug_info; sha256sum "$lib"; ls -l "$lib"; } > "$pack/library.txt" 2>&1
  nsc layout extract "$lib" -o "$pack/build-profile.json" > "$pack/extract.log" 2>&1
  # Stripped copy for the header path; a small one (no DWARF, no device code) comes back.
  objcopy --strip-debug "$lib" "$dir/stripped/libnccl.so.2"
  objcopy --strip-all --remove-section=.nv_fatbin --remove-section=__nv_relfatbin \
    --remove-section=.nvFatBinSegment "$lib" "$pack/libnccl.so.2.nodebug" 2>> "$pack/extract.log"
  objcopy --only-section=.note.gnu.build-id --only-section=.rodata --only-section=.dynsym \
    --only-section=.dynstr --only-section=.dynamic --only-section=.gnu.version \
    --only-section=.gnu.version_d --only-section=.gnu.hash "$lib" "$pack/libnccl.so.2.min" 2>> "$pack/extract.log"
  for rank in 0 1; do
    core=$dir/rank$rank.core
    cp "$dir/rank$rank.log" "$dir/rank$rank.ground_truth.json" "$dir/rank$rank.maps" "$pack/" 2>/dev/null
    [ -f "$core" ] || { echo "no core" > "$pack/rank$rank.missing"; continue; }
    ls -l "$core" > "$pack/rank$rank.core.size"
    nsc state --core "$core" --exe "$BIN" --solib-search-path "$libdir" --json \
      > "$pack/rank$rank.state.full.json" 2> "$pack/rank$rank.state.full.err"
    echo "rc=$?" >> "$pack/rank$rank.state.full.err"
    nsc slice "$core" -o "$pack/rank$rank.core.sliced" --exe "$BIN" --solib-search-path "$libdir" \
      > "$pack/rank$rank.slice.log" 2>&1
    nsc state --core "$pack/rank$rank.core.sliced" --exe "$BIN" --solib-search-path "$libdir" --json \
      > "$pack/rank$rank.state.slice.json" 2> "$pack/rank$rank.state.slice.err"
    nsc state --core "$pack/rank$rank.core.sliced" --exe "$BIN" --solib-search-path "$dir/stripped" \
      --json \
      > "$pack/rank$rank.state.headers.json" 2> "$pack/rank$rank.state.headers.err"
    echo "rc=$?" >> "$pack/rank$rank.state.headers.err"
  done
}

main() {
  rm -rf "$WORK"; mkdir -p "$WORK/cores" "$WORK/pack" "$XDG_CACHE_HOME"
  # CORE_DIR given: the caller set core_pattern to CORE_DIR/core.%p (another capture runs beside).
  if [ -z "${CORE_DIR:-}" ]; then
    CORE_DIR=$WORK/cores
    local saved; saved=$(cat /proc/sys/kernel/core_pattern)
    trap 'echo "$saved" > /proc/sys/kernel/core_pattern 2>/dev/null' EXIT
    echo "$CORE_DIR/core.%p" > /proc/sys/kernel/core_pattern
  fi
  { nvidia-smi --query-gpu=name,driver_version --format=csv; nvcc --version | tail -2; nproc; } > "$WORK/pack/machine.txt" 2>&1
  local v extra name version mode extra_env
  declare -A builder
  for v in "${VERSIONS[@]}"; do build_version "$v" & builder[$v]=$!; done
  # The machine's own stripped libnccl, while the builds run: the header profile is all it has.
  if [ -f "$SYSTEM_NCCL" ]; then
    mkdir -p "$WORK/system-lib" && cp -L "$SYSTEM_NCCL" "$WORK/system-lib/libnccl.so.2"
    hang system "$WORK/system-lib"
  fi
  # Each version's hangs as soon as its build is done (list the fast builds first), while the
  # slower ones still build. EXTRA_HANGS="NAME:VERSION:MODE[:VAR=value] ...": more scenarios.
  for v in "${VERSIONS[@]}"; do
    wait "${builder[$v]}"
    log "v$v build rc=$(cat "$WORK/v$v/build.rc") in $(cat "$WORK/v$v/build.seconds") s"
    mkdir -p "$WORK/pack/v$v"; tail -40 "$WORK/v$v/build.log" > "$WORK/pack/v$v/build.log.tail"
    cp "$WORK/v$v/build.rc" "$WORK/v$v/build.seconds" "$WORK/v$v/compat.log" "$WORK/pack/v$v/"
    [ -f "$WORK/v$v/lib/libnccl.so.2" ] || continue
    hang "hang-v$v" "$WORK/v$v/lib"
    decode "hang-v$v" "$WORK/v$v/lib"
    for extra in ${EXTRA_HANGS:-}; do
      IFS=: read -r name version mode extra_env <<< "$extra"
      [ "$version" = "$v" ] || continue
      hang "$name" "$WORK/v$v/lib" "$mode" "$extra_env" && decode "$name" "$WORK/v$v/lib"
    done
  done
  [ -n "${TWO_LIBRARIES:-}" ] && two_libraries "$TWO_LIBRARIES"
  [ -d "$WORK/system" ] && decode system "$WORK/system-lib"
  log "decoded; packing"
  ( cd "$WORK/pack" && for f in */rank?.state.*.json; do
      printf '%-34s %s\n' "$f" "$(python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))
print("comms=%d errors=%d layout=%s" % (len(d.get("communicators") or []), len(d.get("errors") or []),
      (d.get("nccl") or {}).get("layout_source")))' "$f" 2>&1 | tail -1)"
    done; grep -h rc= */*.err ) | tee "$WORK/pack/summary.txt"
  tar -C "$WORK" -cf - pack | xz -9e -T16 > "$OUT/nccl-versions.tar.xz"
  if [ "$(stat -c %s "$OUT/nccl-versions.tar.xz")" -gt $MAX_BYTES ]; then
    log "over $MAX_BYTES bytes: dropping the library copies"
    rm -f "$WORK"/pack/*/libnccl.so.2.nodebug
    tar -C "$WORK" -cf - pack | xz -9e -T16 > "$OUT/nccl-versions.tar.xz"
  fi
  ls -l "$OUT"; log "total ${SECONDS}s"
}

main
