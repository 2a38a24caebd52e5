#!/bin/bash
# Pure-Python logic of the gdb extension (parsing, rendering, escaping, ctypes
# callback), without gdb: python3 -m unittest over tests/gdb/test_*.py.
set -u
src=${NCCLSCOPE_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v python3 >/dev/null || { echo "python3 not found: skipping"; exit 77; }
cd "$src/tests/gdb" || exit 1
# blocked_in classes come from the library: test the one this build made.
[ -f "${NCCLSCOPE_BUILD:-}/lib/libncclscope.so" ] && export NCCLSCOPE_LIB="$NCCLSCOPE_BUILD/lib/libncclscope.so"
PYTHONPATH="$src/gdbext${PYTHONPATH:+:$PYTHONPATH}" exec python3 -m unittest discover -s . -p 'test_*.py' -v
