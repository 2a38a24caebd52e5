#!/usr/bin/env bash
# Configures and builds ncclscope into ${NCCLSCOPE_BUILD_DIR:-build}.
# Usage: scripts/build.sh [TARGET...]   (default: everything, tests included)
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir=${NCCLSCOPE_BUILD_DIR:-build}
jobs=${NCCLSCOPE_JOBS:-$(nproc)}
cmake -S . -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE=${NCCLSCOPE_BUILD_TYPE:-RelWithDebInfo} \
  ${NCCLSCOPE_CMAKE_ARGS:-} >/dev/null
targets=()
for target in "$@"; do targets+=(--target "$target"); done
cmake --build "$build_dir" -j "$jobs" "${targets[@]}"
