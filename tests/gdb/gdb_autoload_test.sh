#!/bin/bash
# The auto-load script (gdbext/auto-load/libnccl.so.2-gdb.py): gdb runs it when
# it loads a libnccl.so.2 whose auto-load path holds it, and the commands exist
# without any `source`. Uses the stand-in libnccl in the comm fixture.
source "$(dirname "$0")/lib.sh"
require_gdb
require_library
require_comm_fixture

# gdb looks for <scripts-directory>/<real path of the objfile>-gdb.py.
lib_real=$(readlink -f "$fake_lib")
mkdir -p "$work/auto-load$(dirname "$lib_real")"
cp "$src/gdbext/auto-load/libnccl.so.2-gdb.py" "$work/auto-load$lib_real-gdb.py"
start_comm_fixture "$fake_lib"
out=$work/autoload.out
NCCLSCOPE_GDBEXT=$src/gdbext timeout 120 $test_gdb -nx -batch \
  -iex "set auto-load scripts-directory $work/auto-load" \
  -iex "add-auto-load-safe-path $work/auto-load" \
  -p "$fixture_pid" -ex "$(fixture_settings)" \
  -ex "$(begin state)" -ex 'nccl-state' -ex "$(end state)" >"$out" 2>&1
section_of "$out" state > "$work/state.txt"
expect "$work/state.txt" "^#0  $fixture_comm  hash 0x6db0a96d9cb7fc37  rank 1/2 "
expect_not "$out" 'Undefined command|not loaded|declined'

# Without the safe-path the script is declined and gdb says so (no commands).
out=$work/declined.out
NCCLSCOPE_GDBEXT=$src/gdbext timeout 120 $test_gdb -nx -batch \
  -iex "set auto-load scripts-directory $work/auto-load" -iex "set auto-load safe-path /nonexistent" \
  -p "$fixture_pid" -ex 'nccl-state' >"$out" 2>&1
expect "$out" 'declined'
expect "$out" 'Undefined command: "nccl-state"'

# An installed tree (cmake --install, as the tarball lays it out; docs/install.md): the
# auto-load script symlinked into the scripts directory loads the package beside its real
# path, which loads that tree's libncclscope.so, with no NCCLSCOPE_GDBEXT or NCCLSCOPE_LIB.
if cmake --install "$build" --prefix "$work/prefix" > "$work/install.log" 2>&1; then
  rm -rf "$work/auto-load"
  mkdir -p "$work/auto-load$(dirname "$lib_real")"
  ln -s "$work/prefix/share/ncclscope/gdb/auto-load/libnccl.so.2-gdb.py" "$work/auto-load$lib_real-gdb.py"
  out=$work/installed.out
  (cd / && env -u NCCLSCOPE_GDBEXT -u NCCLSCOPE_LIB timeout 120 $test_gdb -nx -batch \
    -iex "set auto-load scripts-directory $work/auto-load" -iex "add-auto-load-safe-path $work/auto-load" \
    -p "$fixture_pid" -ex "$(fixture_settings)" \
    -ex 'python import ncclscope.library as l; print("library:", l.find_library())' \
    -ex "$(begin state)" -ex 'nccl-state' -ex "$(end state)") >"$out" 2>&1
  section_of "$out" state > "$work/installed-state.txt"
  expect "$out" "^library: $work/prefix/lib/libncclscope.so\$" "installed: the package loads the tree's library"
  expect "$work/installed-state.txt" "^#0  $fixture_comm  hash 0x6db0a96d9cb7fc37  rank 1/2 "
  expect_not "$out" 'Undefined command|not loaded|declined|not found'
else
  echo "note: cmake --install failed (not every installed target built): the installed tree is not checked"
  tail -n 3 "$work/install.log"
fi
finish
