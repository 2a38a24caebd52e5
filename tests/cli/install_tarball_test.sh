#!/usr/bin/env bash
# The relocatable tarball for cluster nodes (issue 19): `cpack -G TGZ` on this build, unpacked
# into a temporary directory, runs with LD_LIBRARY_PATH cleared: bin/ncclscope and
# lib/libncclscope.so resolve libdw/libelf from the tarball's own lib/ ($ORIGIN rpath), the
# layout profiles come from the tarball's share/ncclscope/profiles, triage of a real hung job
# gives the corpus's verdict, and gdb's `source share/ncclscope/gdb/ncclscope-gdb.py` loads the
# tarball's libncclscope.so. Also the .deb (cpack -G DEB) where dpkg-deb exists.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
for built in "$cli" "$build/lib/libncclscope.so" "$build/lib/libncclscope-recorder.so"; do
  [ -f "$built" ] || { echo "skip: $built not built (cpack installs it)"; exit 77; }
done
command -v cpack > /dev/null || { echo "skip: no cpack"; exit 77; }
core_xz=$src/corefiles/skip-collective/rank0.core.xz
[ -f "$core_xz" ] || { echo "skip: no $core_xz"; exit 77; }

cpack -G TGZ --config "$build/CPackConfig.cmake" -B "$work/pkg" > "$work/cpack.log" 2>&1; rc=$?
tarball=$(ls "$work"/pkg/ncclscope-*-Linux-*.tar.gz 2>/dev/null | head -n 1)
check "cpack -G TGZ makes the tarball (exit $rc)" test "$rc" = 0 -a -n "$tarball"
[ -n "$tarball" ] || { tail -n 20 "$work/cpack.log"; exit 1; }
mkdir -p "$work/node"
tar -C "$work/node" -xzf "$tarball"
prefix=$(ls -d "$work"/node/ncclscope-*/ | head -n 1); prefix=${prefix%/}
echo "  unpacked: $prefix ($(du -sh "$tarball" | cut -f1) tarball)"
for path in bin/ncclscope lib/libncclscope.so lib/libncclscope-recorder.so lib/libdw.so.1 lib/libelf.so.1 \
            share/ncclscope/profiles/9fcf74d93a8c3605bf7718f594d0a24366e38536.json \
            share/ncclscope/gdb/ncclscope-gdb.py share/ncclscope/gdb/ncclscope/library.py \
            share/ncclscope/gdb/auto-load/libnccl.so.2-gdb.py; do
  check "tarball holds $path" test -f "$prefix/$path"
done
check "no __pycache__ in the tarball" test -z "$(find "$prefix" -name __pycache__)"

# The loader's view with no help from the environment.
resolved_from_bundle() {  # resolved_from_bundle BINARY: libdw and libelf from $prefix/lib
  local listing name path
  listing=$(env -u LD_LIBRARY_PATH ldd "$1")
  echo "$listing" | grep -E 'libdw|libelf' | sed 's/^/    /'
  ! echo "$listing" | grep -q 'not found' || return 1
  for name in libdw.so.1 libelf.so.1; do
    path=$(echo "$listing" | sed -n "s|^[[:space:]]*$name => \(.*\) (0x.*|\1|p")
    [ -n "$path" ] && [ "$(realpath "$path")" = "$(realpath "$prefix/lib/$name")" ] || return 1
  done
}
check "ldd bin/ncclscope: libdw/libelf from the tarball's lib/" resolved_from_bundle "$prefix/bin/ncclscope"
check "ldd lib/libncclscope.so: libdw/libelf from the tarball's lib/" resolved_from_bundle "$prefix/lib/libncclscope.so"
check "readelf: bin/ncclscope RUNPATH \$ORIGIN/../lib" sh -c "readelf -d '$prefix/bin/ncclscope' | grep -E 'R(UN)?PATH' | grep -qF '[\$ORIGIN/../lib]'"
check "readelf: libncclscope.so RUNPATH \$ORIGIN" sh -c "readelf -d '$prefix/lib/libncclscope.so' | grep -E 'R(UN)?PATH' | grep -qF '[\$ORIGIN]'"

# Triage of the README's hung job with the tarball's binary, nothing from the build.
env -u LD_LIBRARY_PATH NCCLSCOPE_BUILD_DIR="$prefix" NCCLSCOPE_NO_PROFILE_CACHE=1 \
  bash "$src/scripts/triage-corpus.sh" skip-collective --json > "$work/triage.json" 2> "$work/triage.err"; rc=$?
check "tarball: triage skip-collective (exit $rc)" test "$rc" -le 1
check "tarball: verdict hang, culprit [1], missing-collective AllReduce #4" python3 - "$work/triage.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
findings = [f for c in report["communicators"] for f in c["findings"]]
print("  verdict", report["verdict"], "culprits", report["culprit_ranks"])
sys.exit(0 if report["verdict"] == "hang" and report["culprit_ranks"] == [1] and
         any(f["kind"] == "missing-collective" and f["collective"] == "AllReduce" and f["seq"] == 4 for f in findings) else 1)
PY
xz -dc "$core_xz" > "$work/rank0.core"
env -u LD_LIBRARY_PATH NCCLSCOPE_NO_PROFILE_CACHE=1 "$prefix/bin/ncclscope" state --core "$work/rank0.core" --json \
  > "$work/state.json" 2> /dev/null
check "tarball: the layout profile comes from the tarball's share/ncclscope/profiles" python3 -c '
import json, os, sys
source = json.load(open(sys.argv[1]))["nccl"]["layout_source"]
print("  layout_source:", source)
sys.exit(0 if os.path.realpath(source.split(":", 1)[1]).startswith(os.path.realpath(sys.argv[2]) + "/share/ncclscope/profiles/") else 1)' \
  "$work/state.json" "$prefix"

# gdb (NCCLSCOPE_TEST_GDB: scripts/asan-tests.sh preloads the sanitizer runtime an instrumented
# library needs): the installed extension finds the installed library (not the build's).
if command -v gdb > /dev/null && gdb -nx -batch -ex 'python import gdb' > /dev/null 2>&1; then
  env -u LD_LIBRARY_PATH -u NCCLSCOPE_LIB -u NCCLSCOPE_GDBEXT timeout 120 ${NCCLSCOPE_TEST_GDB:-gdb} -nx -batch \
    -ex "source $prefix/share/ncclscope/gdb/ncclscope-gdb.py" \
    -ex 'python import ncclscope.library as l; p = l.find_library(); print("library:", p, l.NativeLibrary(p).version())' \
    -ex 'help nccl-state' > "$work/gdb.out" 2>&1
  sed 's/^/    /' "$work/gdb.out" | head -n 3
  check "gdb: the tarball's extension loads the tarball's libncclscope.so" grep -qx "library: $prefix/lib/libncclscope.so [0-9.]*" "$work/gdb.out"
  check "gdb: nccl-state is registered" sh -c "! grep -q 'Undefined command\|not loaded' '$work/gdb.out'"
else
  echo "note: no gdb with Python: the installed extension is not checked"
fi

# The .deb: the same tree under /opt/ncclscope, no dependency on elfutils.
if command -v dpkg-deb > /dev/null; then
  cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/deb" > "$work/cpack-deb.log" 2>&1; rc=$?
  deb=$(ls "$work"/deb/*.deb 2>/dev/null | head -n 1)
  check "cpack -G DEB makes a .deb (exit $rc)" test "$rc" = 0 -a -n "$deb"
  if [ -n "$deb" ]; then
    dpkg-deb -c "$deb" > "$work/deb.list"
    check ".deb: /opt/ncclscope/bin/ncclscope and the bundled libdw" sh -c \
      "grep -q ' ./opt/ncclscope/bin/ncclscope$' '$work/deb.list' && grep -q ' ./opt/ncclscope/lib/libdw.so.1$' '$work/deb.list'"
    check ".deb: depends on no elfutils package" sh -c "! dpkg-deb -f '$deb' Depends | grep -q 'libdw\|libelf'"
  fi
fi
echo "$failures failure(s)"
[ "$failures" = 0 ]
