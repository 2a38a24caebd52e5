#!/usr/bin/env bash
# The tarball on a node with no elfutils and no compiler (issue 19): a fresh Debian 12
# (bookworm) minbase chroot, without any -dev package, libdw1/libelf1 or gcc, unpacks the
# tarball and triages the corpus's hung job inside the chroot.
# The chroot: $NCCLSCOPE_BOOKWORM_CHROOT if set, else one made once with debootstrap under
# ${XDG_CACHE_HOME:-$HOME/.cache}/ncclscope/ (needs root and Debian's mirror). Skipped (77)
# where neither is possible: not root, no debootstrap, no network, no built tree.
set -uo pipefail
cache_root=${XDG_CACHE_HOME:-${HOME:-/root}/.cache}  # before lib.sh moves XDG_CACHE_HOME
source "$(dirname "$0")/lib.sh"
[ "$(id -u)" = 0 ] || { echo "skip: chroot needs root"; exit 77; }
for built in "$cli" "$build/lib/libncclscope.so" "$build/lib/libncclscope-recorder.so"; do
  [ -f "$built" ] || { echo "skip: $built not built"; exit 77; }
done
command -v cpack > /dev/null || { echo "skip: no cpack"; exit 77; }
# A sanitized build (scripts/asan-tests.sh) needs libasan/libubsan, which a node does not have.
grep -q '^NCCLSCOPE_SANITIZE:BOOL=ON' "$build/CMakeCache.txt" 2>/dev/null &&
  { echo "skip: $build is a sanitizer build (its runtime is not on a node)"; exit 77; }
[ -f "$src/corefiles/skip-collective/rank0.core.xz" ] || { echo "skip: no corefiles/skip-collective"; exit 77; }
root=${NCCLSCOPE_BOOKWORM_CHROOT:-$cache_root/ncclscope/bookworm-chroot}
if [ ! -x "$root/bin/sh" ]; then
  command -v debootstrap > /dev/null || { echo "skip: no chroot at $root and no debootstrap (apt-get install debootstrap)"; exit 77; }
  echo "  debootstrap --variant=minbase bookworm $root (once)"
  mkdir -p "$(dirname "$root")"
  if ! debootstrap --variant=minbase bookworm "$root.partial" "${NCCLSCOPE_DEBIAN_MIRROR:-http://deb.debian.org/debian}" \
       > "$work/debootstrap.log" 2>&1; then
    tail -n 3 "$work/debootstrap.log"; rm -rf "$root.partial"
    echo "skip: debootstrap failed (no network to the mirror?)"; exit 77
  fi
  mv "$root.partial" "$root"
fi
check "chroot is Debian 12" grep -q '^VERSION_ID="12"' "$root/etc/os-release"
check "chroot has no elfutils library (libdw1/libelf1 not installed, no libdw.so.1)" sh -c \
  "! chroot '$root' dpkg-query -W -f='\${Status}' libdw1 libelf1 2>/dev/null | grep -q 'install ok' && test -z \"\$(find '$root/usr/lib' '$root/lib' -name 'libdw.so*' -o -name 'libelf.so*' 2>/dev/null)\""
check "chroot has no -dev package and no compiler" sh -c \
  "test -z \"\$(chroot '$root' dpkg-query -W -f='\${Package}\n' | grep -E -- '-dev\$|^(gcc|gcc-[0-9]+|g\\+\\+.*|clang.*|cpp|cpp-[0-9]+)\$')\" && ! chroot '$root' sh -c 'command -v cc || command -v gcc || command -v c++'"

cpack -G TGZ --config "$build/CPackConfig.cmake" -B "$work/pkg" > "$work/cpack.log" 2>&1
tarball=$(ls "$work"/pkg/ncclscope-*-Linux-*.tar.gz 2>/dev/null | head -n 1)
check "cpack -G TGZ" test -n "$tarball"
[ -n "$tarball" ] || exit 1
# Inside the chroot: a node's home directory, the tarball, one scenario's rank cores and the
# GPU machine's libraries (what triage-corpus.sh prepares), nothing of the build.
job=$(mktemp -d "$root/tmp/ncclscope-node.XXXXXX"); inside=/tmp/$(basename "$job")
mounted=""
cleanup_chroot() { [ -n "$mounted" ] && umount "$root/proc"; rm -rf "$job"; }
trap 'cleanup_chroot; cleanup' EXIT
mountpoint -q "$root/proc" || { mount -t proc proc "$root/proc" && mounted=1; }
cp "$tarball" "$job/"
mkdir -p "$job/cores" "$job/lib"
for packed in "$src"/corefiles/skip-collective/*.core.xz; do xz -dc "$packed" > "$job/cores/$(basename "${packed%.xz}")"; done
executable=$(sed -n 's/^ *"executable": *"\([^"]*\)".*/\1/p' "$src/corefiles/skip-collective/expected.json" | head -n 1)
exe_args=()
if [ -n "$executable" ] && [ -f "$src/corefiles/$executable" ]; then
  xz -dc "$src/corefiles/$executable" > "$job/program" && chmod +x "$job/program"
  exe_args=(--exe "$inside/program")
fi
for packed in "$src"/corefiles/lib/*.tar.xz; do [ -f "$packed" ] && tar -C "$job/lib" -xJf "$packed" --transform 's|.*/||'; done
in_chroot() { chroot "$root" /usr/bin/env -i PATH=/usr/bin:/bin HOME="$inside" "$@"; }
in_chroot tar -C "$inside" -xzf "$inside/$(basename "$tarball")"
node_prefix=$(cd "$job" && ls -d ncclscope-*/ | head -n 1); node_prefix=$inside/${node_prefix%/}
in_chroot "$node_prefix/bin/ncclscope" --version > "$work/version.txt" 2>&1; rc=$?
check "chroot: bin/ncclscope runs (exit $rc: $(head -c 80 "$work/version.txt"))" test "$rc" = 0
cores=()
for core in "$job"/cores/*.core; do cores+=("$inside/cores/$(basename "$core")"); done
in_chroot "$node_prefix/bin/ncclscope" triage "${cores[@]}" "${exe_args[@]}" \
  --solib-search-path "$inside/lib" --json > "$work/triage.json" 2> "$work/triage.err"; rc=$?
check "chroot: triage of skip-collective (exit $rc)" test "$rc" -le 1
[ "$rc" -le 1 ] || head -n 5 "$work/triage.err"
check "chroot: verdict hang, culprit [1] (the corpus's expected verdict)" python3 - "$work/triage.json" \
  "$src/corefiles/skip-collective/expected.json" <<'PY'
import json, sys
report = json.load(open(sys.argv[1]))
print("  verdict", report["verdict"], "culprits", report["culprit_ranks"])
sys.exit(0 if report["verdict"] == "hang" and report["culprit_ranks"] == [1] else 1)
PY
in_chroot "$node_prefix/bin/ncclscope" triage "${cores[@]}" "${exe_args[@]}" --solib-search-path "$inside/lib" \
  --html "$inside/page.html" > "$work/triage.txt" 2>&1
check "chroot: the text report names the culprit" grep -q 'Culprit: rank 1' "$work/triage.txt"
check "chroot: --html writes the page of the hang" grep -q 'class="verdict verdict-hang">hang<' "$job/page.html"
echo "$failures failure(s)"
[ "$failures" = 0 ]
