#!/usr/bin/env bash
# Makes the flight recorder layout profile of one torch wheel, on a machine where it is
# installed: compiles native/src/torch/recorder_layout_tu.cpp -g against the wheel's own
# headers, links it (so libdw reads relocated DWARF), and extracts the profile keyed by the
# build-id of that wheel's libtorch_cuda.so.
# Usage: scripts/torch-layout-from-tu.sh PYTHON [OUT.json]
#   PYTHON: the interpreter of the environment with torch (e.g. /opt/torch/.venv/bin/python)
#   OUT: default native/profiles/torch/<build-id>.json
# Or, with a TU object compiled elsewhere (plus `readelf -sW` and `readelf -n` of its libtorch_cuda.so):
#   scripts/torch-layout-from-tu.sh --object TU.o SYMBOLS.txt HEADERS.txt "VERSION GIT" OUT.json
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${NCCLSCOPE_BIN:-build/bin/ncclscope}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
link() {  # relocatable object -> linked ELF whose DWARF libdw reads as is
  ld --unresolved-symbols=ignore-all --defsym=__dso_handle=0 -e 0 -o "$2" "$1"
}
if [ "${1:-}" = "--object" ]; then
  [ $# -eq 6 ] || { echo "usage: $0 --object TU.o SYMBOLS.txt HEADERS.txt VERSION OUT.json" >&2; exit 64; }
  link "$2" "$work/tu.elf"
  exec "$bin" layout torch "$work/tu.elf" --libtorch-symbols "$3" --libtorch-headers "$4" --torch-version "$5" -o "$6"
fi
[ $# -ge 1 ] || { echo "usage: $0 PYTHON [OUT.json]" >&2; exit 64; }
python=$1
torch_dir=$("$python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
version=$("$python" -c 'import torch; print(torch.__version__, torch.version.git_version)')
cuda_include=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")/include
library=$torch_dir/lib/libtorch_cuda.so
# -femit-class-debug-always: CapturedTraceback's key function is in libtorch, so g++ would only declare it.
g++ -g -O0 -femit-class-debug-always -c -std=c++17 -Wno-interference-size -D_GLIBCXX_USE_CXX11_ABI=1 -DUSE_C10D_NCCL -DUSE_CUDA \
  -I "$torch_dir/include" -I "$torch_dir/include/torch/csrc/api/include" -I "$cuda_include" \
  -I "$(dirname "$torch_dir")/nvidia/nccl/include" \
  -o "$work/tu.o" native/src/torch/recorder_layout_tu.cpp
link "$work/tu.o" "$work/tu.elf"
build_id=$(readelf -n "$library" | sed -n 's/.*Build ID: *\([0-9a-f]*\).*/\1/p' | head -1)
out=${2:-native/profiles/torch/$build_id.json}
"$bin" layout torch "$work/tu.elf" --libtorch "$library" --torch-version "$version" -o "$out"
