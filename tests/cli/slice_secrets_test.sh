#!/usr/bin/env bash
# `ncclscope slice` makes a core to share (issue 37): no argument value, FP/SIMD register or
# stack byte that no decoder read travels in it; what its input lacked (a truncated core)
# travels as a note that `state` on the slice reports; -o writes only a new or regular file.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
fixture=$build/fixtures/secret_fixture
[ -x "$fixture" ] && [ -x "$cli" ] || { echo "skip: secret_fixture or cli not built"; exit 77; }
secrets=(ARGSECRET-1 ARGSECRET-2 STACKSECRET-5d3f XMMSECRET-9c81e2)

fp_notes_hold() {  # fp_notes_hold CORE TEXT: 0 when an NT_FPREGSET/NT_X86_XSTATE note holds TEXT, 1 not, 2 no such notes
  python3 - "$@" <<'PY'
import struct, sys
data, text = open(sys.argv[1], "rb").read(), sys.argv[2].encode()
phoff, = struct.unpack_from("<Q", data, 32); phentsize, phnum = struct.unpack_from("<HH", data, 54)
found, notes = False, 0
for i in range(phnum):
    p_type, _, offset, _, _, filesz, _, _ = struct.unpack_from("<IIQQQQQQ", data, phoff + i * phentsize)
    if p_type != 4: continue
    at, end = offset, offset + filesz
    while at + 12 <= end:
        namesz, descsz, kind = struct.unpack_from("<III", data, at)
        desc = at + 12 + (namesz + 3) // 4 * 4
        if kind in (2, 0x202):  # NT_FPREGSET, NT_X86_XSTATE
            notes += 1
            found = found or text in data[desc:desc + descsz]
        at = desc + (descsz + 3) // 4 * 4
if notes == 0: print("no FP/SIMD notes", file=sys.stderr); sys.exit(2)
sys.exit(0 if found else 1)
PY
}
fp_notes_clean() { fp_notes_hold "$@"; test $? = 1; }

if command -v gdb > /dev/null; then
  "$fixture" --password=ARGSECRET-1 --token ARGSECRET-2 > "$work/fixture.out" 2>&1 &
  pid=$!; pids+=($pid)
  for _ in $(seq 100); do [ -s "$work/fixture.out" ] && break; sleep 0.1; done
  gdb -p "$pid" -batch -nx -ex "gcore $work/full.core" > /dev/null 2>&1
  for secret in "${secrets[@]}"; do
    check "the whole core holds $secret" grep -qa -- "$secret" "$work/full.core"
  done
  check "the whole core's FP/SIMD notes hold the xmm secret" fp_notes_hold "$work/full.core" XMMSECRET-9c81e2
  "$cli" slice "$work/full.core" -o "$work/small.core" --json > "$work/figures.json" 2> "$work/slice.err"; rc=$?
  check "slice: written (exit 0, got $rc)" test "$rc" = 0 -a -s "$work/small.core"
  for secret in "${secrets[@]}"; do
    check "the slice holds no $secret" bash -c '! grep -qa -- "$0" "$1"' "$secret" "$work/small.core"
  done
  check "the slice's FP/SIMD notes are still there, zeroed" fp_notes_clean "$work/small.core" XMMSECRET-9c81e2
  check "argument names stay: --password= and --token" grep -qa -- "--password=\*\{11\}" "$work/small.core"
  check "argv[0] stays" grep -qa "secret_fixture" "$work/small.core"
  check "figures count what was redacted" python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))
sys.exit(0 if f["argument_bytes_redacted"] >= 22 and f["stack_bytes_redacted"] > 0 and f["register_bytes_cleared"] > 0 else 1)' \
    "$work/figures.json"
  gdb -nx -batch -ex bt -ex 'p $xmm5.uint128' "$fixture" "$work/small.core" > "$work/gdb.out" 2>&1
  check "gdb unwinds the slice to main" grep -q "main ()" "$work/gdb.out"
  check "gdb reads xmm5 of the slice as zero" grep -q '^\$1 = 0$' "$work/gdb.out"
  "$cli" slice "$work/full.core" -o "$work/kept.core" --keep-stacks --json > "$work/kept.json" 2>&1
  check "--keep-stacks keeps the stack bytes" grep -qa STACKSECRET-5d3f "$work/kept.core"
  # (Stack garbage may hold a copy of an argument: --keep-stacks keeps that too, as documented.)
  check "--keep-stacks still redacts the argument strings and pr_psargs" python3 -c '
import json, sys
f = json.load(open(sys.argv[1]))
sys.exit(0 if f["argument_bytes_redacted"] >= 22 and f["stack_bytes_redacted"] == 0 else 1)' "$work/kept.json"
else
  echo "skip: gdb absent, no gcore of the secret fixture"
fi

# A truncated input: the slice exits 1, says so, and carries the fact (`state` on it reports it).
corpus=$src/corefiles/skip-collective
if [ -f "$corpus/rank0.core.xz" ] && command -v xz > /dev/null; then
  xz -dc "$corpus/rank0.core.xz" > "$work/rank0.core"
  size=$(stat -c %s "$work/rank0.core")
  head -c $((size - 4096)) "$work/rank0.core" > "$work/cut.core"
  "$cli" slice "$work/cut.core" -o "$work/cut-small.core" > /dev/null 2> "$work/cut.err"; rc=$?
  check "slice of a truncated core: exit 1 (got $rc)" test "$rc" = 1
  check "slice of a truncated core: says it" grep -q "input core_open .*cut.core: core file truncated" "$work/cut.err"
  "$cli" state --json --core "$work/cut-small.core" > "$work/cut-small.json" 2>/dev/null; rc=$?
  check "state on that slice: exit 1 (got $rc)" test "$rc" = 1
  check "state on that slice: names the truncated input" python3 -c '
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(0 if any("slice note: input core_open" in e["reason"] and "core file truncated" in e["reason"]
                  for e in d["errors"]) else 1)' "$work/cut-small.json"
  "$cli" slice "$work/rank0.core" -o "$work/whole-small.core" > /dev/null 2>&1; rc=$?
  check "slice of a whole core: exit 0 (got $rc)" test "$rc" = 0
  "$cli" state --json --core "$work/whole-small.core" > "$work/whole-small.json" 2>/dev/null
  check "state on that slice: no slice note" bash -c '! grep -q "slice note" "$0"' "$work/whole-small.json"

  # -o: a new or regular file only; never a symbolic link, a device, a directory; no .partial left.
  ln -s "$work/target" "$work/link"
  mkdir "$work/dir"
  for output in "$work/link" /dev/null "$work/dir"; do
    "$cli" slice "$work/rank0.core" -o "$output" > /dev/null 2> "$work/o.err"; rc=$?
    check "-o $output: exit 2 (got $rc)" test "$rc" = 2
    check "-o $output: one line naming it" grep -q "^ncclscope slice: slice $output: is a" "$work/o.err"
    check "-o $output: no .partial left" bash -c '! ls "$0".partial* 2>/dev/null' "$output"
  done
  check "-o link: the link still points at nothing" test -L "$work/link" -a ! -e "$work/target"
  check "-o /dev/null: still a device" test -c /dev/null
  echo old > "$work/regular.core"
  "$cli" slice "$work/rank0.core" -o "$work/regular.core" > /dev/null 2>&1; rc=$?
  check "-o an existing regular file: replaced (exit 0, got $rc)" test "$rc" = 0 -a "$(head -c 4 "$work/regular.core" | od -An -c | tr -d ' ')" = '177ELF'
  "$cli" slice "$work/rank0.core" -o "$work/missing-dir/x.core" > /dev/null 2>&1; rc=$?
  check "-o in a missing directory: exit 2 (got $rc)" test "$rc" = 2
else
  echo "skip: truncated-core and -o cases (no $corpus/rank0.core.xz or xz)"
fi
echo "$failures failure(s)"
[ "$failures" = 0 ]
