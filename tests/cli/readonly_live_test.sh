#!/usr/bin/env bash
# Read-only, never stuck (issue 8): a live target is unchanged after every
# command (checksum of its writable memory through /proc/PID/mem, no signal
# pending, every thread running and untraced), also when ncclscope is killed
# with SIGINT, SIGTERM or SIGKILL while it holds the process frozen, or at a
# range of delays into every live path that stops threads (--stacks, triage).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
if [ "$(id -u)" != 0 ] && [ "$(cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo 0)" != 0 ]; then
  echo "skip: needs root or ptrace_scope 0 to read the fixture"; exit 77
fi

# sha256 of each writable mapping (read through /proc/PID/mem), one line per region.
cat > "$work/checksum.py" <<'PY'
import hashlib, sys
pid = sys.argv[1]
lines = []
with open(f"/proc/{pid}/maps") as maps, open(f"/proc/{pid}/mem", "rb", buffering=0) as mem:
    for line in maps:
        fields = line.split()
        span, perms = fields[0], fields[1]
        name = fields[5] if len(fields) > 5 else ""
        if "w" not in perms or name in ("[vvar]", "[vsyscall]", "[vvar_vclock]"):
            continue
        start, end = (int(x, 16) for x in span.split("-"))
        if end - start > (1 << 30):  # sanitizer shadow / allocator reserves: terabytes, untouched
            lines.append(f"{span} {perms} {name} skipped-larger-than-1GiB")
            continue
        digest = hashlib.sha256()
        mem.seek(start)
        remaining = end - start
        while remaining:
            chunk = mem.read(min(remaining, 1 << 20))
            if not chunk:
                break
            digest.update(chunk)
            remaining -= len(chunk)
        lines.append(f"{span} {perms} {name} {digest.hexdigest()} {remaining}")
print("\n".join(lines))
PY

# One line per thread: tid, State letter, TracerPid, and the process's pending signals.
thread_report() {  # thread_report PID
  local pid=$1
  grep -E '^(SigPnd|ShdPnd):' "/proc/$pid/status" | tr -s '\t ' ' '
  for task in /proc/"$pid"/task/*; do
    awk -v tid="${task##*/}" '/^State:/ {s=$2} /^TracerPid:/ {t=$2} /^SigPnd:/ {p=$2}
      END {print "thread", tid, s, "tracer", t, "sigpnd", p}' "$task/status"
  done
}

# All threads sleeping (S), untraced, no signal pending on the process or any thread.
target_is_clean() {  # target_is_clean PID
  local report; report=$(thread_report "$1")
  ! grep -qvE '^(SigPnd: 0000000000000000|ShdPnd: 0000000000000000|thread [0-9]+ S tracer 0 sigpnd 0000000000000000)$' <<< "$report" ||
    { echo "  target not clean:"; grep -vE 'S tracer 0 sigpnd 0+$|: 0+$' <<< "$report" | head -5 | sed 's/^/    /'; false; }
}

# Regions that change while nobody looks (a library's own threads) are left
# out of the comparison: they are listed in $work/volatile.PID.
same_memory() {  # same_memory BEFORE AFTER [VOLATILE]
  local volatile=${3:-/dev/null}
  diff <(grep -vFf <(cat "$volatile"; echo '#none#') "$1") <(grep -vFf <(cat "$volatile"; echo '#none#') "$2") > "$work/diff" ||
    { echo "  changed regions:"; head -6 "$work/diff" | sed 's/^/    /'; false; }
}

# Checksums until two in a row agree (the fixture may still be finishing its
# start-up output); regions still changing after that are recorded as volatile.
settle() {  # settle PID
  local pid=$1 previous current
  previous=$(python3 "$work/checksum.py" "$pid")
  for _ in $(seq 20); do
    sleep 0.3
    current=$(python3 "$work/checksum.py" "$pid")
    [ "$current" = "$previous" ] && break
    previous=$current
  done
  : > "$work/volatile.$pid"
  for _ in 1 2 3; do
    sleep 0.3
    current=$(python3 "$work/checksum.py" "$pid")
    diff <(echo "$previous") <(echo "$current") | sed -n 's/^< \([0-9a-f]*-[0-9a-f]*\) .*/\1/p' >> "$work/volatile.$pid"
    previous=$current
  done
  [ -s "$work/volatile.$pid" ] && echo "note: regions of pid $pid that change by themselves (left out): $(sort -u "$work/volatile.$pid" | tr '\n' ' ')"
  return 0
}

# The kernel rewrites each thread's rseq area (cpu_id) whenever the thread
# passes its return-to-user path, which every ptrace stop causes even though no
# user code runs: fixtures run without rseq so that any change is ncclscope's.
export GLIBC_TUNABLES=glibc.pthread.rseq=0

# A profile for the stand-in library: the real 2.28.9 layout under its build-id.
fake_lib=$build/fixtures/fakelib/libnccl.so.2
fake_id=$(python3 "$src/tests/cli/fake_profile.py" "$profile" "$fake_lib" "$work/profiles")

"$comm_fixture" --profile "$profile" --library "$fake_lib" > "$work/fixture.out" 2>&1 &
fixture=$!; pids+=($fixture)
for _ in $(seq 50); do [ -s "$work/fixture.out" ] && break; sleep 0.1; done
check "comm fixture started" test -s "$work/fixture.out"
settle "$fixture"

# Each command: memory, signals and thread states identical before and after.
n=0
for command in "state --pid $fixture" "state --pid $fixture --freeze" "state --json --pid $fixture --freeze" \
               "triage --pid $fixture" "triage --json --pid $fixture"; do
  n=$((n + 1))
  python3 "$work/checksum.py" "$fixture" > "$work/before.$n"
  # shellcheck disable=SC2086
  "$cli" $command --profile-path "$work/profiles" > "$work/out.$n" 2> "$work/err.$n"; rc=$?
  python3 "$work/checksum.py" "$fixture" > "$work/after.$n"
  check "'$command': answered (exit $rc)" test "$rc" -le 1
  check "'$command': writable memory unchanged ($(wc -l < "$work/before.$n") regions)" same_memory "$work/before.$n" "$work/after.$n" "$work/volatile.$fixture"
  check "'$command': no signal pending, every thread running and untraced" target_is_clean "$fixture"
done
check "state --freeze really decoded the comm" grep -q '"rank": 1' "$work/out.3"

# Killing ncclscope while it holds the target frozen: a target with many
# threads (seizing and unwinding each takes a while) and the real libnccl.
if [ ! -r "$real_lib" ]; then
  echo "note: $real_lib absent: the kill-during-freeze checks are skipped"
else
  "$stack_fixture" --extra-threads 400 --nccl-lib "$real_lib" > "$work/stack.out" 2>&1 &
  target=$!; pids+=($target)
  for _ in $(seq 200); do grep -q '^ready' "$work/stack.out" && break; sleep 0.1; done
  check "stack fixture with 402 threads ready" grep -q '^ready' "$work/stack.out"
  settle "$target"
  # Starts `state --freeze` (SIGINT at its default), spins on the target's main
  # thread until ncclscope traces it (the freeze is under way), sends SIGNAL,
  # and prints "seized EXIT-STATUS".
  cat > "$work/kill_during_freeze.py" <<'PY'
import os, signal, subprocess, sys
target, signame, command = sys.argv[1], sys.argv[2], sys.argv[3:]
def default_signals():
    for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)
tool = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=default_signals)
wanted = f"TracerPid:\t{tool.pid}\n"
seized = False
while tool.poll() is None:
    try:
        with open(f"/proc/{target}/status") as status:
            if wanted in status.read():
                seized = True
                break
    except OSError:
        break
os.kill(tool.pid, getattr(signal, "SIG" + signame))
print("seized" if seized else "missed", tool.wait())
PY
  for signal in INT TERM KILL; do
    python3 "$work/checksum.py" "$target" > "$work/before.$signal"
    read -r seized rc < <(python3 "$work/kill_during_freeze.py" "$target" "$signal" "$cli" state --pid "$target" --freeze)
    check "SIG$signal during --freeze: the kill landed while threads were seized" test "$seized" = seized
    check "SIG$signal during --freeze: ncclscope ended by the signal ($rc)" test "$rc" = "-$(kill -l "$signal")"
    sleep 0.2  # let the kernel finish detaching
    python3 "$work/checksum.py" "$target" > "$work/after.$signal"
    check "SIG$signal during --freeze: every thread running again, untraced, no signal pending" target_is_clean "$target"
    check "SIG$signal during --freeze: writable memory unchanged" \
      same_memory "$work/before.$signal" "$work/after.$signal" "$work/volatile.$target"
  done
  # SIGHUP ignored on entry (nohup): ncclscope keeps it ignored and finishes normally.
  python3 "$work/checksum.py" "$target" > "$work/before.HUP"
  nohup "$cli" state --pid "$target" --freeze > "$work/nohup.out" 2> "$work/nohup.err" &
  tool=$!
  for _ in $(seq 1000); do
    grep -qs "^TracerPid:[[:space:]]*$tool\$" /proc/"$target"/task/*/status && break
    sleep 0.01
  done
  kill -HUP "$tool" 2>/dev/null
  wait "$tool"; rc=$?
  check "ignored SIGHUP during --freeze: ncclscope finishes normally (exit $rc)" test "$rc" -le 1
  check "ignored SIGHUP during --freeze: full answer with stacks" grep -q "fx-sleeper-399" "$work/nohup.out"
  python3 "$work/checksum.py" "$target" > "$work/after.HUP"
  check "ignored SIGHUP during --freeze: target clean" target_is_clean "$target"
  check "ignored SIGHUP during --freeze: writable memory unchanged" \
    same_memory "$work/before.HUP" "$work/after.HUP" "$work/volatile.$target"
  # Every live path that stops threads (issue 14): SIGKILL and SIGTERM over a
  # range of delays after ANCHOR: "first" (the first thread traced: the freeze,
  # or the stack phase without --freeze) or "stack" (one thread traced after
  # many: the stack phase after a freeze, one thread stopped at a time).
  # Prints "PHASE EXIT-STATUS": PHASE is how many threads were traced just
  # before the kill (none / one / many) or "finished" when it ended first.
  cat > "$work/kill_at_delay.py" <<'PY'
import glob, os, signal, subprocess, sys, time
target, signame, anchor, delay_ms, command = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5:]
def default_signals():
    for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGHUP, signal.SIGTERM):
        signal.signal(s, signal.SIG_DFL)
tool = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=default_signals)
wanted = f"TracerPid:\t{tool.pid}\n"
def traced_threads():
    count = 0
    for path in glob.glob(f"/proc/{target}/task/*/status"):
        try:
            with open(path) as status:
                count += wanted in status.read()
        except OSError:
            pass
    return count
seen_many = False
while tool.poll() is None:
    traced = traced_threads()
    seen_many = seen_many or traced > 1
    if traced and (anchor == "first" or (seen_many and traced == 1)):
        break
time.sleep(delay_ms / 1000)
traced = traced_threads()
if tool.poll() is not None:
    print("finished", tool.wait()); sys.exit()
os.kill(tool.pid, getattr(signal, "SIG" + signame))
print({0: "none"}.get(traced, "one" if traced == 1 else "many"), tool.wait())
PY
  python3 "$work/checksum.py" "$target" > "$work/before.timing"
  phases=""
  for command in "state --pid $target --stacks" "state --pid $target --freeze --stacks" "triage --pid $target"; do
    anchors="first"
    [ "$command" = "state --pid $target --stacks" ] || anchors="first stack"
    for anchor in $anchors; do
      # NCCLSCOPE_KILL_DELAYS / _STACK_DELAYS: the sanitizer suite runs fewer (10x slower there).
      delays=${NCCLSCOPE_KILL_DELAYS:-0 3 30 300}
      [ "$anchor" = stack ] && delays=${NCCLSCOPE_KILL_STACK_DELAYS:-0 10 100}
      for signal in KILL TERM; do
        for delay in $delays; do
          # shellcheck disable=SC2086
          read -r phase rc < <(python3 "$work/kill_at_delay.py" "$target" "$signal" "$anchor" "$delay" "$cli" $command)
          phases+=" $phase"
          sleep 0.2  # let the kernel finish detaching
          check "SIG$signal ${delay} ms after the $anchor trace of '$command' (kill with $phase thread(s) traced, exit $rc): target clean" \
            target_is_clean "$target"
          target_is_clean "$target" > /dev/null || kill -CONT "$target"  # go on from a clean target
        done
      done
    done
  done
  echo "note: threads traced when the kill landed:$(tr ' ' '\n' <<< "$phases" | sort | uniq -c | tr -s ' \n' ' ')"
  check "kills landed in the stack phase (one thread traced) at least once" grep -qw one <<< "$phases"
  python3 "$work/checksum.py" "$target" > "$work/after.timing"
  check "after the timed kills: writable memory unchanged" \
    same_memory "$work/before.timing" "$work/after.timing" "$work/volatile.$target"
  check "target still alive after all kills" kill -0 "$target"
fi

echo "$failures failure(s)"
[ "$failures" = 0 ]
