#!/usr/bin/env bash
# scripts/nccl-layout-from-headers.sh remakes the committed nccl-2.28.9.headers.json from the
# v2.28.9-1 tag (issue 17): the shipped header profiles are what the script makes, not hand-edited.
# Skips (77) without the NCCL git mirror ($NCCL_GIT_DIR), g++, make or the CUDA 13 headers.
set -uo pipefail
build=${NCCLSCOPE_BUILD:?} src=${NCCLSCOPE_SRC:?}
git_dir=${NCCL_GIT_DIR:-/work/.mirror/NVIDIA+nccl/repo}
cuda=${CUDA_HOME:-/usr/local/cuda-13.0}
git --git-dir="$git_dir" rev-parse -q --verify v2.28.9-1 >/dev/null 2>&1 || { echo "SKIP: no NCCL mirror at $git_dir"; exit 77; }
command -v g++ >/dev/null && command -v make >/dev/null || { echo "SKIP: no g++/make"; exit 77; }
[ -f "$cuda/include/cuda.h" ] || { echo "SKIP: no CUDA headers at $cuda"; exit 77; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
NCCLSCOPE_BIN=$build/bin/ncclscope NCCL_GIT_DIR=$git_dir CUDA_HOME=$cuda \
  bash "$src/scripts/nccl-layout-from-headers.sh" v2.28.9-1 "$work/nccl-2.28.9.headers.json" 2> "$work/log" ||
  { cat "$work/log"; echo "FAIL the script failed"; exit 1; }
python3 "$src/tests/cli/compare_profiles.py" "$src/native/profiles/nccl-2.28.9.headers.json" \
  "$work/nccl-2.28.9.headers.json" && echo "ok   regenerated profile equals the committed one"
