#!/usr/bin/env bash
# Issue 32: PyTorch's watchdog liveness (torch/watchdog.h) decoded from real PyTorch 2.11 cores
# (corefiles/torch-watchdog/: rank 1 skipped all_reduce #4, rank 0's watchdog timed out after 80 s,
# PyTorch aborted both). Each rank's `state --core --json` liveness must equal expected.json's
# ranks[].liveness: the objects' addresses and tids the GPU probe found in the live processes, and
# each value read raw from the core at the offsets of the probe's -fno-access-control program
# (truth/offsets.txt); the heartbeat must also be at least every live read of it (it only grows).
# Skips (77) when the cores are missing.
source "$(dirname "$0")/corpus_prelude.sh"
dir=$SRC/corefiles/torch-watchdog
[ -f "$dir/ranks.tar.xz" ] || { echo "SKIP: no $dir/ranks.tar.xz"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xJf "$dir/ranks.tar.xz"
xz -dc "$SRC/corefiles/$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["executable"])' "$dir/expected.json")" > "$work/python"
chmod +x "$work/python"
failures=0
for rank in 0 1; do
  "$NSC" state --core "$work/rank$rank.core" --exe "$work/python" --json > "$work/rank$rank.json" 2> "$work/rank$rank.err"
  rc=$?
  [ $rc -le 1 ] || { echo "FAIL: rank $rank: state exit $rc: $(head -1 "$work/rank$rank.err")"; failures=$((failures + 1)); continue; }
  python3 - "$work/rank$rank.json" "$dir/expected.json" "$rank" <<'PY' || failures=$((failures + 1))
import json, sys
state, expected, rank = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
want = next(r for r in expected["ranks"] if r["rank"] == rank)["liveness"]
liveness = (state.get("torch") or {}).get("liveness") or {}
problems = []
def check(what, got, value):
    if got != value:
        problems.append("%s: %r, want %r" % (what, got, value))
dogs, monitors = liveness.get("watchdogs", []), liveness.get("heartbeat_monitors", [])
check("watchdogs", len(dogs), 1)
check("monitors", len(monitors), 1)
if dogs:
    dog = dogs[0]
    check("watchdog", dog.get("watchdog"), want["watchdog"])
    check("process_group", dog.get("process_group"), want["process_group"])
    check("watchdog tid", dog.get("tid"), want["watchdog_tid"])
    for key in ("heartbeat", "error", "timeout_ms", "pg_rank", "pg_size", "pg_uid", "terminating", "exception_stored"):
        check(key, dog.get(key), want[key])
    check("unavailable", dog.get("unavailable"), {})
    if not all(isinstance(dog.get("heartbeat"), int) and dog["heartbeat"] >= live for live in want["heartbeat_live_reads"]):
        problems.append("heartbeat %r below a live read %r" % (dog.get("heartbeat"), want["heartbeat_live_reads"]))
if monitors:
    monitor = monitors[0]
    check("monitor", monitor.get("monitor"), want["monitor"])
    check("monitor tid", monitor.get("tid"), want["monitor_tid"])
    for key in ("heartbeat_timeout_s", "dump_timeout_ms", "monitoring_enabled", "terminate_requested",
                "last_work_list_update_steady_ns"):
        check(key, monitor.get(key), want[key])
    check("unavailable", monitor.get("unavailable"), {})
check("should_dump", liveness.get("should_dump"), want["should_dump"])
for p in problems:
    print("FAIL: rank %d: %s" % (rank, p))
if not problems:
    print("ok   rank %d: watchdog %s heartbeat %d error %s, monitor %s" % (rank, want["watchdog"], want["heartbeat"], want["error"], want["monitor"]))
sys.exit(1 if problems else 0)
PY
done
[ "$failures" -eq 0 ] || { echo "$failures rank(s) failed"; exit 1; }
echo "torch watchdog cores: both ranks' liveness equals the probe's reads"
