#!/usr/bin/env bash
# README's first two commands give every entry point (issue 19 item 1): the first code block
# holds exactly `bash scripts/run-main.sh` and `bash scripts/run-tests.sh`; run-main.sh builds
# the CLI, libncclscope.so (what `source gdbext/ncclscope-gdb.py` and the auto-load script
# load) and the recorder; and, from a build inside the source tree, gdb sourcing the extension
# with no NCCLSCOPE_LIB finds that library by itself and decodes the README's real rank core.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
check "README's first code block is exactly the two commands" python3 - "$src/README.md" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
block = re.search(r"```[a-z]*\n(.*?)```", text, re.S).group(1)
lines = [line for line in block.splitlines() if line.strip()]
print("  ", lines)
sys.exit(0 if lines == ["bash scripts/run-main.sh", "bash scripts/run-tests.sh"] else 1)
PY
targets=$(sed -n 's/.*bash scripts\/build.sh \([a-z_ ]*\)>.*/\1/p' "$src/scripts/run-main.sh")
for target in ncclscope_cli ncclscope ncclscope_recorder; do
  check "run-main.sh builds $target" sh -c "echo ' $targets ' | grep -q ' $target '"
done
check "README says in its first lines that gdb and the auto-load script work after run-main" sh -c \
  "head -n 30 '$src/README.md' | grep -q 'source gdbext/ncclscope-gdb.py' && head -n 30 '$src/README.md' | grep -q 'auto-load'"

case "$(realpath "$build")" in
  "$(realpath "$src")"/build*) ;;
  *) echo "note: $build is outside the source tree: the library discovery is not checked"
     echo "$failures failure(s)"; [ "$failures" = 0 ]; exit ;;
esac
command -v gdb > /dev/null && gdb -nx -batch -ex 'python import gdb' > /dev/null 2>&1 || { echo "skip: no gdb with Python"; exit 77; }
[ -f "$build/lib/libncclscope.so" ] || { echo "skip: $build/lib/libncclscope.so not built"; exit 77; }
scenario=$src/corefiles/skip-collective
[ -f "$scenario/rank0.core.xz" ] || { echo "skip: no $scenario"; exit 77; }
xz -dc "$scenario/rank0.core.xz" > "$work/rank0.core"
executable=$(sed -n 's/^ *"executable": *"\([^"]*\)".*/\1/p' "$scenario/expected.json" | head -n 1)
xz -dc "$src/corefiles/$executable" > "$work/program" && chmod +x "$work/program"
mkdir -p "$work/lib"
for packed in "$src"/corefiles/lib/*.tar.xz; do tar -C "$work/lib" -xJf "$packed" --transform 's|.*/||'; done
env -u NCCLSCOPE_LIB -u NCCLSCOPE_GDBEXT timeout 120 ${NCCLSCOPE_TEST_GDB:-gdb} -nx -batch \
  -iex "source $src/gdbext/ncclscope-gdb.py" -iex "set solib-search-path $work/lib" \
  -ex 'python import ncclscope.library as l; print("library:", l.find_library())' \
  -ex 'nccl-state' "$work/program" "$work/rank0.core" > "$work/gdb.out" 2>&1
grep -E '^library:|hash 0x' "$work/gdb.out" | sed 's/^/    /'
check "gdb: the extension found a libncclscope.so of the source tree's builds by itself" \
  grep -qE "^library: $(realpath "$src")/build[^/]*/lib/libncclscope.so$" "$work/gdb.out"
check "gdb: nccl-state decodes the README's rank 0 core (hash 0x2879453b282e94f9, rank 0/2)" \
  grep -qE 'hash 0x2879453b282e94f9 +rank 0/2' "$work/gdb.out"
check "gdb: no 'not found' / 'not loaded'" sh -c "! grep -qE 'libncclscope.so not found|not loaded' '$work/gdb.out'"
echo "$failures failure(s)"
[ "$failures" = 0 ]
