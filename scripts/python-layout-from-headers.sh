#!/usr/bin/env bash
# A CPython 3.11/3.12 layout profile for an interpreter without DWARF: builds
# native/src/python/layout_tu.c with -g against that version's headers (the
# interpreter's own python3.X-dev headers, or Include/ of the cpython tag with a
# pyconfig.h) and extracts the structs from that DWARF; build-id, symbols and
# Py_Version come from the interpreter itself.
# Usage: scripts/python-layout-from-headers.sh INCLUDE_DIR... -- INTERPRETER OUT.json
#   e.g. scripts/python-layout-from-headers.sh /usr/include/python3.12 /usr/include -- /usr/bin/python3.12 p.json
set -euo pipefail
cd "$(dirname "$0")/.."
includes=()
while [[ $# -gt 0 && $1 != -- ]]; do includes+=(-I "$1"); shift; done
[[ $# -eq 3 && $1 == -- ]] || { echo "usage: $0 INCLUDE_DIR... -- INTERPRETER OUT.json" >&2; exit 64; }
interpreter=$2 out=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
gcc -g -O0 -shared -fPIC -Wl,--build-id "${includes[@]}" -o "$work/layout_tu.so" native/src/python/layout_tu.c
"${NCCLSCOPE_BIN:-build/bin/ncclscope}" layout python "$work/layout_tu.so" --interpreter "$interpreter" -o "$out"
