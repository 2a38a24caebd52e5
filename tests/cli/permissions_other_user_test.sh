#!/usr/bin/env bash
# Permissions (issue 8): reading a process of another user fails with exit 2
# and one line that gives the reason and a hint; and ncclscope asks for no
# more privilege than the read needs (no ptrace at all without --freeze).
# "Another user": ncclscope runs as nobody (setpriv) against a root-owned fixture.
set -uo pipefail
if [ "$(id -u)" != 0 ]; then echo "skip: needs root to start a fixture owned by another user"; exit 77; fi
if ! command -v setpriv > /dev/null; then echo "skip: setpriv (util-linux) missing"; exit 77; fi
source "$(dirname "$0")/lib.sh"
chmod 755 "$work"
as_nobody() { setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent XDG_CACHE_HOME="$work/nobody-cache" "$@"; }
if ! as_nobody test -x "$cli"; then echo "skip: user nobody cannot run $cli (directory permissions)"; exit 77; fi

fake_lib=$build/fixtures/fakelib/libnccl.so.2
fake_id=$(python3 "$src/tests/cli/fake_profile.py" "$profile" "$fake_lib" "$work/profiles")
chmod -R a+rX "$work/profiles"

"$comm_fixture" --profile "$profile" --library "$fake_lib" > "$work/fixture.out" 2>&1 &
fixture=$!; pids+=($fixture)
for _ in $(seq 50); do [ -s "$work/fixture.out" ] && break; sleep 0.1; done

expect_refused() {  # expect_refused NAME ARGS...
  local name=$1; shift
  as_nobody "$cli" "$@" > "$work/out" 2> "$work/err"; local rc=$?
  check "$name: exit 2" test "$rc" = 2
  check "$name: exactly one line on stderr" test "$(wc -l < "$work/err")" = 1
  check "$name: names the pid" grep -q "pid $fixture" "$work/err"
  check "$name: gives the reason (may not trace / not permitted, other uid)" \
    grep -qE "may not trace \((Operation not permitted|Permission denied).*process uid 0 differs from ours \(65534\)" "$work/err"
  check "$name: gives a hint" grep -q "run as the same user or root" "$work/err"
  check "$name: prints no partial document" test ! -s "$work/out"
  sed 's/^/    /' "$work/err"
}
expect_refused "state --pid (other user)" state --pid "$fixture" --profile-path "$work/profiles"
expect_refused "state --pid --freeze (other user)" state --pid "$fixture" --freeze --profile-path "$work/profiles"
expect_refused "state --json --pid (other user)" state --json --pid "$fixture" --profile-path "$work/profiles"

# triage reports the unusable input in its own way: exit 2 (nothing usable) and the reason.
as_nobody "$cli" triage --pid "$fixture" --profile-path "$work/profiles" > "$work/triage.out" 2>&1; rc=$?
check "triage --pid (other user): exit 2" test "$rc" = 2
check "triage --pid (other user): gives the reason and the hint" \
  grep -q "may not trace.*run as the same user or root" "$work/triage.out"

# The fixture is untouched: not stopped, not traced.
check "fixture still sleeping and untraced" grep -q "TracerPid:[[:space:]]*0$" "/proc/$fixture/status"

# Least privilege: without --freeze the read needs no ptrace at all; with it,
# only seize/interrupt/detach. Nothing raises privileges.
if command -v strace > /dev/null; then
  strace -f -qq -o "$work/trace" -e trace=ptrace,setuid,setgid,setresuid,setresgid,capset,prctl \
    "$cli" state --pid "$fixture" --profile-path "$work/profiles" > /dev/null 2>&1
  check "state without --freeze: no ptrace or privilege call" test "$(grep -cE 'ptrace|set.*id|capset' "$work/trace")" = 0
  strace -f -qq -o "$work/trace-freeze" -e trace=ptrace,setuid,setgid,setresuid,setresgid,capset \
    "$cli" state --pid "$fixture" --freeze --profile-path "$work/profiles" > /dev/null 2>&1
  # ATTACH: the unwinder (libdwfl) attaches to read registers; the same access mode as SEIZE.
  check "state --freeze: ptrace used only to stop, read registers and detach" \
    test "$(grep -E 'ptrace\(' "$work/trace-freeze" | grep -cvE 'PTRACE_(SEIZE|INTERRUPT|ATTACH|DETACH|GETREGS|GETFPREGS|PEEK[A-Z]*|GETREGSET)')" = 0
  check "state --freeze: no privilege call" test "$(grep -cE 'set.*id\(|capset\(' "$work/trace-freeze")" = 0
else
  echo "note: strace missing: least-privilege checks skipped"
fi

echo "$failures failure(s)"
[ "$failures" = 0 ]
