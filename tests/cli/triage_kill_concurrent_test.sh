#!/usr/bin/env bash
# `triage --pid A --pid B --jobs 2` unwinds both processes at once, each worker stopping threads of
# its own process (issue 35). Killed (SIGKILL, SIGTERM) at any moment of the run, it must leave
# every thread of both processes running and untraced. Two stack_fixture processes with 200
# extra threads each; kills 0-300 ms after the start (one that lands after the end: "finished",
# still checked).
set -u
. "$(dirname "$0")/lib.sh"
[ -x "$stack_fixture" ] && [ -x "$cli" ] || { echo "SKIP: stack_fixture or ncclscope not built"; exit 77; }
targets=()
for i in 1 2; do
  "$stack_fixture" --extra-threads 200 > "$work/fixture.$i" &
  pids+=($!); targets+=($!)
done
for i in 1 2; do
  for _ in $(seq 200); do grep -q '^ready' "$work/fixture.$i" && break; sleep 0.05; done
  grep -q '^ready' "$work/fixture.$i" || { echo "FAIL: fixture $i not ready"; exit 1; }
done

# Kills the tool DELAY ms after its start; prints how many threads of the targets it traced just
# before (a count, or "finished" when it ended first). The delays spread the kills over the run.
cat > "$work/kill_after.py" <<'PY'
import glob, os, signal, subprocess, sys, time
signame, delay_ms, targets, command = sys.argv[1], float(sys.argv[2]), sys.argv[3:5], sys.argv[5:]
tool = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                        preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
time.sleep(delay_ms / 1000)
traced = 0
for target in targets:
    for path in glob.glob(f"/proc/{target}/task/*/status"):
        try:
            traced += f"TracerPid:\t{tool.pid}\n" in open(path).read()
        except OSError:
            pass
if tool.poll() is not None:
    print("finished"); sys.exit()
os.kill(tool.pid, getattr(signal, "SIG" + signame))
tool.wait()
print(traced)
PY

clean() {  # clean PID: every thread sleeping ('S') and untraced (one awk over all its threads)
  local bad
  bad=$(awk 'FILENAME ~ /stat$/ { sub(/.*\) /, ""); if (substr($0, 1, 1) != "S") print FILENAME ": state " substr($0, 1, 1) }
             /^TracerPid:/ && $2 != 0 { print FILENAME ": tracer " $2 }' /proc/"$1"/task/*/stat /proc/"$1"/task/*/status)
  [ -z "$bad" ] || { head -3 <<< "$bad" | sed 's/^/  /'; false; }
}

landed=""
for signal in KILL TERM; do
  for delay in 0 20 50 100 150 200 300; do
    phase=$(python3 "$work/kill_after.py" "$signal" "$delay" "${targets[@]}" \
      "$cli" triage --pid "${targets[0]}" --pid "${targets[1]}" --jobs 2)
    landed+=" $phase"
    sleep 0.2  # let the kernel finish detaching
    for target in "${targets[@]}"; do
      check "SIG$signal ${delay} ms in ($phase threads traced): pid $target running, untraced" clean "$target"
    done
  done
done
echo "note: threads traced when each kill landed:$landed"
check "a kill landed before the triage ended" grep -qE "(^| )[0-9]+" <<< "$landed"
[ "$failures" = 0 ]
