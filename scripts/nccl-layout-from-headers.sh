#!/usr/bin/env bash
# An NCCL layout profile from a version's source headers, for a stripped libnccl of that version
# (no DWARF, no build-id profile). Host compiler only: no nvcc, no device code.
#
#   scripts/nccl-layout-from-headers.sh SRC_DIR|TAG OUT.json
#     SRC_DIR: an NCCL source tree (its src/ and makefiles/version.mk);
#     TAG: a release tag (v2.28.9-1), read from $NCCL_GIT_DIR (default the fetched mirror).
#
# As NCCL's src/Makefile does: nccl.h is generated from src/nccl.h.in with the version of
# makefiles/version.mk, and sources are compiled with -I. -I<build>/include -Iinclude
# -Iinclude/plugin and CUDA's include dirs, -DCUDA_MAJOR/-DCUDA_MINOR of the CUDA used
# ($CUDA_HOME, default /usr/local/cuda-13.0). One TU includes the headers that define the decoded
# structs; the three structs NCCL defines in .cc files (ncclProxyPool in proxy.cc,
# ncclStrongStreamCapture in misc/strongstream.cc, p2pResources in transport/p2p.cc) come from
# compiling those files with -g -c. The objects are linked into one shared object whose DWARF
# `ncclscope layout extract --headers` reads: the profile is keyed by NCCL version, not build-id,
# and its struct sizes are the checks made against a target before it is used.
set -euo pipefail
cd "$(dirname "$0")/.."
[[ $# -eq 2 ]] || { echo "usage: $0 SRC_DIR|TAG OUT.json" >&2; exit 64; }
source_arg=$1 out=$2
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda-13.0}
NCCL_GIT_DIR=${NCCL_GIT_DIR:-/work/.mirror/NVIDIA+nccl/repo}
CXX=${CXX:-g++}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [[ -d $source_arg ]]; then
  src=$(cd "$source_arg" && pwd)
else
  git --git-dir="$NCCL_GIT_DIR" archive "$source_arg" src makefiles | tar -x -C "$work"
  src=$work
fi
[[ -f $src/makefiles/version.mk && -f $src/src/nccl.h.in ]] ||
  { echo "$0: $source_arg: no makefiles/version.mk or src/nccl.h.in" >&2; exit 2; }

version_field() { sed -n "s/^$1 *:= *//p" "$src/makefiles/version.mk" | tr -d ' '; }
major=$(version_field NCCL_MAJOR) minor=$(version_field NCCL_MINOR) patch=$(version_field NCCL_PATCH)
suffix=$(version_field NCCL_SUFFIX)
code=$(printf "%d%02d%02d" "$major" "$minor" "$patch")
mkdir -p "$work/include"
sed -e "s/\${nccl:Major}/$major/g" -e "s/\${nccl:Minor}/$minor/g" -e "s/\${nccl:Patch}/$patch/g" \
    -e "s/\${nccl:Suffix}/$suffix/g" -e "s/\${nccl:Version}/$code/g" \
    "$src/src/nccl.h.in" > "$work/include/nccl.h"

# The -D and -std flags NCCL's makefiles/common.mk gives its sources (-DPROFAPI, -DNCCL_OS_LINUX
# in 2.29 and later, ...), asked from make itself; CUDA_MAJOR/MINOR from cuda.h after them.
printf 'ncclscope-print-flags:\n\t@echo $(CXXFLAGS)\n' > "$work/print-flags.mk"
make_flags=$(make -s -C "$src" -f makefiles/common.mk -f "$work/print-flags.mk" ncclscope-print-flags \
             CUDA_HOME="$CUDA_HOME" 2>/dev/null | tail -1)
cuda_version=$(sed -n 's/^#define CUDA_VERSION \([0-9]*\).*/\1/p' "$CUDA_HOME/include/cuda.h")
cuda_major=$((cuda_version / 1000)) cuda_minor=$((cuda_version % 1000 / 10))
flags=(-g -O0 -fPIC -fno-eliminate-unused-debug-types -w)
std=-std=c++14
for flag in $make_flags; do
  case $flag in -std=*) std=$flag ;; -D*) flags+=("$flag") ;; esac
done
# CUDA 13's headers need C++17 (NCCL 2.27+'s common.mk says so; older tags ask for C++11/14).
[[ $cuda_major -ge 13 ]] && std=-std=c++17
flags+=("$std" -DCUDA_MAJOR="$cuda_major" -DCUDA_MINOR="$cuda_minor"
        -I "$src/src" -I "$work/include" -I "$src/src/include" -I "$src/src/include/plugin"
        -I "$CUDA_HOME/include" -I "$CUDA_HOME/include/cccl")
echo "$0: NCCL $major.$minor.$patch$suffix, CUDA $cuda_major.$cuda_minor headers, ${flags[*]}" >&2

# NCCL before 2.27 names driver entry points PFN_cuX; CUDA 13's cudaTypedefs.h only has the
# versioned PFN_cuX_vN. Name each after its newest version (function pointers: no layout change).
grep -oE '\*PFN_cu[A-Za-z0-9_]*_v[0-9]+\)' "$CUDA_HOME/include/cudaTypedefs.h" | tr -d '*)' | sort -u |
  sed 's/^\(PFN_cu[A-Za-z0-9_]*\)_v\([0-9]*\)$/\2 \1/' | sort -k2,2 -k1,1n |
  awk '{newest[$2] = $1} END {for (n in newest) printf "#ifndef %s\n#define %s %s_v%s\n#endif\n", n, n, n, newest[n]}' \
  > "$work/pfn_compat.h"
flags+=(-include cudaTypedefs.h -include "$work/pfn_compat.h")

# The headers that define the decoded structs (those that exist in this version), and the
# version string as init.cc spells it, so the profile names its version the way a library does.
{
  for header in comm.h device.h proxy.h transport.h strongstream.h group.h register.h p2p.h \
                enqueue.h channel.h info.h; do
    [[ -f $src/src/include/$header ]] && echo "#include \"$header\""
  done
  echo '#define NCCLSCOPE_STR2(v) #v'
  echo '#define NCCLSCOPE_STR(v) NCCLSCOPE_STR2(v)'
  echo 'extern "C" __attribute__((used)) const char ncclscope_header_version[] = "NCCL version "'
  echo '    NCCLSCOPE_STR(NCCL_MAJOR) "." NCCLSCOPE_STR(NCCL_MINOR) "." NCCLSCOPE_STR(NCCL_PATCH)'
  echo '    NCCL_SUFFIX "+cuda" NCCLSCOPE_STR(CUDA_MAJOR) "." NCCLSCOPE_STR(CUDA_MINOR);'
} > "$work/nccl_layout_tu.cc"

# A .cc that does not compile against these CUDA headers (NCCL < 2.27 calls runtime functions
# whose signatures CUDA 13 changed) is cut to its preprocessor lines and top-level type
# definitions: the structs are the same, the functions that do not compile are gone.
objects=("$work/nccl_layout_tu.o")
"$CXX" "${flags[@]}" -c "$work/nccl_layout_tu.cc" -o "$work/nccl_layout_tu.o"
for file in proxy.cc misc/strongstream.cc transport/p2p.cc; do
  [[ -f $src/src/$file ]] || continue
  object=$work/$(echo "$file" | tr / _).o
  if ! "$CXX" "${flags[@]}" -c "$src/src/$file" -o "$object" 2> "$object.log"; then
    echo "$0: $file does not compile here ($(grep -m1 error: "$object.log" | sed 's/.*error: //')): its type definitions only" >&2
    mkdir -p "$(dirname "$work/types/$file")"
    python3 scripts/nccl_types_only.py "$src/src/$file" > "$work/types/$file"
    "$CXX" "${flags[@]}" -I "$src/src/$(dirname "$file")" -c "$work/types/$file" -o "$object"
  fi
  objects+=("$object")
done
"$CXX" -shared -o "$work/nccl_layout_headers.so" "${objects[@]}"
"${NCCLSCOPE_BIN:-build/bin/ncclscope}" layout extract "$work/nccl_layout_headers.so" --headers -o "$out"
