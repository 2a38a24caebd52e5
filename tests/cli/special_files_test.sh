#!/usr/bin/env bash
# Special files given as inputs (issue 37): a FIFO, a device, a socket named as a core,
# executable, snapshot or layout file is refused in one line naming it, exit 2, never
# opened for reading (a FIFO blocked every command forever; `layout show /dev/zero` grew
# without bound). A regular file larger than the memory cap is refused, not read.
# `timeout` only guards against the old hang: no check depends on how long a command takes.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
[ -x "$cli" ] || { echo "skip: $cli not built"; exit 77; }
mkfifo "$work/fifo"
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$work/socket"
ln -s "$work/fifo" "$work/link-to-fifo"
declare -A kind_of=(["$work/fifo"]='a FIFO' [/dev/zero]='a character device' [/dev/null]='a character device'
  ["$work/socket"]='a socket' ["$work/link-to-fifo"]='a FIFO')

refused() {  # refused NAME FILE COMMAND... : exit 2, the file named with its kind, no hang
  local name=$1 file=$2; shift 2
  timeout 120 "$@" > "$work/out" 2> "$work/err" < /dev/null; local rc=$?
  check "$name: exit 2 (got $rc)" test "$rc" = 2
  check "$name: says $file is ${kind_of[$file]}" grep -qF "$file: not a regular file (${kind_of[$file]})" "$work/err"
}

for file in "${!kind_of[@]}"; do
  for command in state cuda-streams cuda-ipc py-stacks numerics; do
    refused "$command --core $file" "$file" "$cli" "$command" --core "$file"
    check "$command --core $file: one line" test "$(wc -l < "$work/err")" = 1
  done
  refused "fr-dump --core $file" "$file" "$cli" fr-dump --core "$file" -o "$work/fr.pkl"
  refused "slice $file" "$file" "$cli" slice "$file" -o "$work/small.core"
  refused "triage $file" "$file" "$cli" triage "$file"
  refused "audit $file" "$file" "$cli" audit "$file"
  refused "layout show $file" "$file" "$cli" layout show "$file"
done

# A 2 GiB sparse file (over the 1 GiB cap on text inputs; under the 4 GiB `ulimit -f` of the
# ASan suite) is no layout profile: refused by its size, never read into memory.
truncate -s 2G "$work/sparse.json" || { echo "FAIL cannot make a 2 GiB sparse file"; failures=$((failures + 1)); }
timeout 120 "$cli" layout show "$work/sparse.json" > /dev/null 2> "$work/err"; rc=$?
check "layout show 2 GiB sparse file: exit 2 (got $rc)" test "$rc" = 2
check "layout show 2 GiB sparse file: too large" grep -q "sparse.json: too large (2147483648 bytes" "$work/err"

# A FIFO as --exe beside a real core: skipped like a missing file, never opened for reading.
corpus=$src/corefiles/skip-collective
if [ -f "$corpus/rank0.core.xz" ] && command -v xz > /dev/null; then
  xz -dc "$corpus/rank0.core.xz" > "$work/rank0.core"
  timeout 120 "$cli" state --json --core "$work/rank0.core" --exe "$work/fifo" > "$work/out" 2> "$work/err"; rc=$?
  check "state --exe FIFO: answers (exit 0 or 1, got $rc)" test "$rc" -le 1
  check "state --exe FIFO: says the executable is not used" grep -qF "executable $work/fifo: not a regular file (a FIFO): not used" "$work/out"
else
  echo "skip: --exe FIFO case (no $corpus/rank0.core.xz or xz)"
fi
echo "$failures failure(s)"
[ "$failures" = 0 ]
