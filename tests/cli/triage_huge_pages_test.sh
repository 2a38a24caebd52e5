#!/usr/bin/env bash
# `ncclscope triage` runs itself again with GLIBC_TUNABLES=glibc.malloc.hugetlb=1 (its heap on
# transparent huge pages: a quarter less CPU at 100,000 ranks, docs/triage.md "Scale"), once,
# only when the user set no tunables, only for triage; the report is the same either way.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
[ -x "$cli" ] || { echo "skip: $cli not built"; exit 77; }
strace -qq -o /dev/null true 2> /dev/null || { echo "skip: strace missing or not allowed to trace"; exit 77; }
python3 "$src/bench/gen_snapshots.py" --ranks 64 --scenario tp-pp-dp --culprit 5 --out "$work/snapshots" > /dev/null

execs() {  # execs TRACE: the execve calls that strace saw succeed, one per line
  grep -E 'execve\(' "$1" | grep -v -e '= -1' -e 'resumed>' -e 'unfinished' || true
}

unset GLIBC_TUNABLES
# A sanitized build: LeakSanitizer cannot run under ptrace (strace) and aborts at exit.
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
strace -f -qq -v -s 4096 -o "$work/trace" -e trace=execve "$cli" triage "$work/snapshots" --json > "$work/default.json"
rc_default=$?
check "exit 0 (got $rc_default)" test "$rc_default" = 0
execs "$work/trace" > "$work/execs"
check "two execs: the command and its rerun" test "$(wc -l < "$work/execs")" = 2
check "the first has no tunable" bash -c "sed -n 1p '$work/execs' | grep -qv GLIBC_TUNABLES"
check "the rerun is /proc/self/exe with the same arguments and the tunable" \
  grep -q "execve(\"/proc/self/exe\", \[\"$cli\", \"triage\", \"$work/snapshots\", \"--json\"\], .*\"GLIBC_TUNABLES=glibc.malloc.hugetlb=1\"" "$work/execs"

GLIBC_TUNABLES=glibc.malloc.check=0 strace -f -qq -v -s 4096 -o "$work/trace-set" -e trace=execve \
  "$cli" triage "$work/snapshots" --json > "$work/tunables-set.json"
execs "$work/trace-set" > "$work/execs-set"
check "tunables set by the user: one exec" test "$(wc -l < "$work/execs-set")" = 1
check "... with their tunables kept" grep -q '"GLIBC_TUNABLES=glibc.malloc.check=0"' "$work/execs-set"
check "same report with and without huge pages" cmp -s "$work/default.json" "$work/tunables-set.json"
check "the verdict: a hang, rank 5" python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(not (d["verdict"] == "hang" and d["culprit_ranks"] == [5]))' "$work/default.json"

strace -f -qq -o "$work/trace-state" -e trace=execve "$cli" state --help > /dev/null
check "other commands are not run again" test "$(execs "$work/trace-state" | wc -l)" = 1

[ "$failures" = 0 ] && echo "all passed" || { echo "$failures failed"; exit 1; }
