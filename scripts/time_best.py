#!/usr/bin/env python3
"""Best-of-N wall and CPU time of one command, every run under a time limit, as one JSON line.

  time_best.py [--runs 3] [--timeout S] [--stop-after S] [--out FILE] -- COMMAND ARGS...

CPU is the command's own (user + system of the waited child, from getrusage), of the run with the
best wall time. The first run's stdout+stderr go to FILE. A run past --timeout is killed and
counted in "timeouts" (no time recorded for it; its whole process group is killed); after a run slower than --stop-after no more
runs are made ("runs" says how many were). Used by scripts/device-node-speed-run.sh.
"""
import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time


def one_run(command, timeout, out):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    # Its own process group: a time-out kills every process it started (eu-stack under a shell loop).
    process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    # A blocking wait: Popen.wait(timeout=) polls, sleeping up to 50 ms, which rounded every wall
    # up to the next poll (0.114, 0.164, 0.214 s ...). A timer kills a run past the limit instead.
    expired = threading.Event()

    def kill():
        expired.set()
        os.killpg(process.pid, signal.SIGKILL)

    timer = threading.Timer(timeout, kill)
    timer.start()
    rc = process.wait()
    wall = time.perf_counter() - start
    timer.cancel()
    if expired.is_set():
        return None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": round(wall, 3), "cpu": round(cpu, 3), "rc": rc}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=60.0)
    parser.add_argument("--stop-after", type=float, default=20.0)
    parser.add_argument("--out", default="/dev/null")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command or args.runs < 1 or args.timeout <= 0:
        parser.error("a command, --runs >= 1 and --timeout > 0 are needed")
    runs, timeouts = [], 0
    for index in range(args.runs):
        with open(args.out if index == 0 else "/dev/null", "wb") as out:
            result = one_run(command, args.timeout, out)
        if result is None:
            timeouts += 1
            break
        runs.append(result)
        if result["wall"] > args.stop_after:
            break
    best = min(runs, key=lambda run: run["wall"]) if runs else None
    print(json.dumps({"runs": len(runs), "timeouts": timeouts, "timeout_s": args.timeout,
                      "walls": [run["wall"] for run in runs],
                      "best_wall": best["wall"] if best else None, "best_cpu": best["cpu"] if best else None,
                      "rc": best["rc"] if best else None}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
