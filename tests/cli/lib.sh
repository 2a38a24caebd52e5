# Shared set-up of the live-fixture CLI tests (sourced, not run): paths, a scratch
# directory with its own profile cache, fixtures killed and the directory removed
# at exit, and check NAME COMMAND... counting failures.
build=${NCCLSCOPE_BUILD:?} src=${NCCLSCOPE_SRC:?}
cli=$build/bin/ncclscope
comm_fixture=$build/fixtures/comm_fixture
stack_fixture=$build/fixtures/stack_fixture
profile=$src/native/profiles/9fcf74d93a8c3605bf7718f594d0a24366e38536.json
real_lib=/usr/local/cuda-13.0/lib/libnccl.so.2
work=$(mktemp -d)
export XDG_CACHE_HOME=$work/cache
pids=()
cleanup() { for p in "${pids[@]}"; do { kill -9 "$p"; wait "$p"; } 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
failures=0
check() {  # check NAME CONDITION-COMMAND...
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}

# each_torch_rank FUNCTION: FUNCTION NAME RANK CORE PICKLE for every rank of the multi-group
# PyTorch captures (corefiles/<scenario>/ranks.tar.xz beside truth/fr_rank<R>.pkl).
each_torch_rank() {
  local callback=$1 scenario name pickle rank
  for scenario in "$src"/corefiles/*/; do
    [ -f "$scenario/ranks.tar.xz" ] && ls "$scenario"truth/fr_rank*.pkl > /dev/null 2>&1 || continue
    name=$(basename "$scenario")
    rm -rf "$work/ranks"; mkdir -p "$work/ranks"
    tar -C "$work/ranks" -xJf "$scenario/ranks.tar.xz"
    for pickle in "$scenario"truth/fr_rank*.pkl; do
      rank=$(basename "$pickle" .pkl); rank=${rank#fr_rank}
      [ -f "$work/ranks/rank$rank.core" ] && "$callback" "$name" "$rank" "$work/ranks/rank$rank.core" "$pickle"
    done
  done
}
