#!/usr/bin/env bash
# The main job on the embedded default: builds every entry point (the CLI, libncclscope.so
# for `source gdbext/ncclscope-gdb.py` in gdb/cuda-gdb and the auto-load script, the flight
# recorder), then triages a real hung 2-rank NCCL job from the real core dumps shipped in
# corefiles/ (no GPU, no CUDA needed).
# Usage: scripts/run-main.sh [SCENARIO] [extra triage options]
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh build
build_log=$(mktemp)
# Every entry point: the CLI, the C API library the gdb extension (and its auto-load script)
# loads, the flight recorder a job loads.
if ! bash scripts/build.sh ncclscope_cli ncclscope ncclscope_recorder > "$build_log" 2>&1; then
  tail -n 40 "$build_log" >&2
  echo "run-main: build failed (full log: $build_log)" >&2
  exit 2
fi
rm -f "$build_log"
# The flagship: rank 1 of a 2-rank job skips its 4th AllReduce; its cores were sliced after every
# decoder existed, so they hold all a decoder reads (the older skip-collective slices lack the P2P
# connectors and user streams: "read only in part").
scenario=${1:-skip-collective-recorder}
shift || true
exec bash scripts/triage-corpus.sh "$scenario" "$@"
