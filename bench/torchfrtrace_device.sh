#!/usr/bin/env bash
# PyTorch's own analyzer (torchfrtrace: torch.distributed.flight_recorder.fr_trace) on the same
# generated dumps as bench/fr_dumps_scale.sh, where PyTorch is installed (the GPU machine: no
# PyPI here). Per size: wall time, the analyzer's peak RSS, its exit status, the lines that name
# the culprit; a run past LIMIT seconds is stopped and said so.
#
#   PY=/opt/torch/.venv/bin/python RANKS="512 4096" LIMIT=420 bench/torchfrtrace_device.sh
set -u
cd "$(dirname "$0")/.."
py=${PY:-/opt/torch/.venv/bin/python}
limit=${LIMIT:-420}
"$py" -c 'import torch; print("torch", torch.__version__)'
for ranks in ${RANKS:-512 4096}; do
  dir=/tmp/frtrace-bench-$ranks
  rm -rf "$dir"
  start=$(date +%s)
  for part in $(seq 0 15); do "$py" bench/gen_fr_dumps.py "$ranks" "${ENTRIES:-2000}" "$dir" --part "$part/16" > /dev/null & done
  wait
  echo "$ranks ranks: $(ls "$dir" | wc -l) dumps, $(du -sh "$dir" | cut -f1), written in $(( $(date +%s) - start )) s"
  "$py" - "$py" "$dir" "$limit" "$ranks" <<'PY'
import resource, subprocess, sys, time
py, directory, limit, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
start = time.time()
try:
    run = subprocess.run([py, "-m", "torch.distributed.flight_recorder.fr_trace", directory, "--prefix", "fr_rank"],
                         capture_output=True, text=True, timeout=limit)
    status, out = run.returncode, run.stdout + run.stderr
except subprocess.TimeoutExpired as stopped:
    status, out = "stopped after %d s" % limit, (stopped.stdout or b"").decode() + (stopped.stderr or b"").decode()
wall = time.time() - start
rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
print("%s ranks: torchfrtrace exit %s, wall %.1f s, peak RSS %.0f MB" % (ranks, status, wall, rss))
lines = [l for l in out.splitlines() if "ulprit" in l or "Not all ranks" in l or "rror" in l]
print("\n".join(lines[:6]) or out[-600:])
PY
done
