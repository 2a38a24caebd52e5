#!/usr/bin/env bash
# A library whose file in --solib-search-path has another name than the one the core recorded
# (the GPU machine's libstdc++: mapped as libstdc++.so.6.0.33, shipped in corefiles/lib as
# libstdc++.so.6, its soname) is found by its build-id, as gdb finds it by soname: the frames
# of PyTorch's watchdog abort on a real core are named (std::rethrow_exception, std::terminate).
# Without that file in the search path the same frames stay unnamed (the test can fail).
set -uo pipefail
build=${NCCLSCOPE_BUILD:?} src=${NCCLSCOPE_SRC:?}
capture=$src/corefiles/crash-watchdog-timeout/ranks.tar.xz
libs=$src/corefiles/lib/ubuntu-24.04-x86_64-libs.tar.xz
for needed in "$capture" "$libs"; do [ -f "$needed" ] || { echo "SKIP: no $needed"; exit 77; }; done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xJf "$capture" rank0.core
mkdir -p "$work/lib" "$work/lib-without"
tar -C "$work/lib" -xJf "$libs" --transform 's|.*/||'
cp "$work/lib"/* "$work/lib-without/" && rm "$work/lib-without/libstdc++.so.6"
frames() {  # the functions named in libstdc++ frames of every thread
  "$build/bin/ncclscope" state --core "$work/rank0.core" --solib-search-path "$1" --json 2> /dev/null |
    python3 -c '
import json, sys
for thread in json.load(sys.stdin).get("threads", []):
    for frame in thread.get("frames") or []:
        if "libstdc++" in (frame.get("module") or "") and frame.get("function"):
            print(frame["function"])'
}
failures=0
with=$(frames "$work/lib")
echo "$with" | grep -qx "std::terminate()" || { echo "FAIL: no std::terminate() frame with libstdc++.so.6 in the search path: $(echo "$with" | sort -u | head -5)"; failures=1; }
without=$(frames "$work/lib-without")
[ -z "$without" ] || { echo "FAIL: libstdc++ frames named with no libstdc++ in the search path: $(echo "$without" | sort -u | head -3)"; failures=1; }
[ "$failures" = 0 ] && echo "stacks_library_by_build_id: all checks passed"
exit $failures
