#!/usr/bin/env python3
"""Prints the best wall time, in seconds, of 3 runs of the command given (output discarded).
   python3 bench/best_of_3.py COMMAND ARGS..."""
import subprocess
import sys
import time

best = 1e9
for _ in range(3):
    start = time.perf_counter()
    subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
    best = min(best, time.perf_counter() - start)
print(f"{best:.3f}")
