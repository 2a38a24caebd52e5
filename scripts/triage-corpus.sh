#!/usr/bin/env bash
# Triage one scenario of the shipped corpus: `ncclscope triage` on its sliced, xz-compressed
# rank cores as shipped (it unpacks each to a private copy and names the corefiles/ path);
# a multi-rank tar, the program and the libraries are unpacked into a temporary directory.
# Usage: scripts/triage-corpus.sh SCENARIO [triage options, e.g. --json]
set -euo pipefail
cd "$(dirname "$0")/.."
scenario=${1:?usage: triage-corpus.sh SCENARIO [options]}
shift
dir=corefiles/$scenario
if [ ! -d "$dir" ]; then
  echo "triage-corpus: no scenario '$scenario' in corefiles/ (have: $(ls corefiles | grep -v -e README -e bin | tr '\n' ' '))" >&2
  exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/ncclscope-corpus.XXXXXX")
trap 'rm -rf "$work"' EXIT
cores=()
for packed in "$dir"/*.core.xz; do
  [ -f "$packed" ] && cores+=("$packed")
done
# Multi-rank PyTorch captures ship all ranks in one tar (one xz dictionary over similar cores).
if [ -f "$dir/ranks.tar.xz" ]; then
  tar -C "$work" -xJf "$dir/ranks.tar.xz"
  cores+=("$work"/*.core)
fi
exe_args=()
# expected.json names the scenario's program: "executable": "bin/<name>.<sha1-12>.xz" (or null).
executable=$(sed -n 's/^ *"executable": *"\([^"]*\)".*/\1/p' "$dir/expected.json" | head -n 1)
if [ -n "$executable" ] && [ -f "corefiles/$executable" ]; then
  xz -dc "corefiles/$executable" > "$work/program"
  chmod +x "$work/program"
  exe_args=(--exe "$work/program")
fi
# The GPU machine's own system libraries (Ubuntu 24.04), so host stacks symbolize here too.
mkdir -p "$work/lib"
for packed in corefiles/lib/*.tar.xz; do
  [ -f "$packed" ] && tar -C "$work/lib" -xJf "$packed" --transform 's|.*/||'
done
# A scenario's own libnccl ("libnccl" in expected.json: a stripped build, issue 17) comes first.
own_lib=$(sed -n 's/^ *"libnccl": *"\([^"]*\)".*/\1/p' "$dir/expected.json" | head -n 1)
lib_path=$work/lib:/usr/local/cuda-13.0/lib
if [ -n "$own_lib" ]; then
  mkdir -p "$work/own-lib" && xz -dc "$dir/$own_lib" > "$work/own-lib/libnccl.so.2"
  lib_path=$work/own-lib:$lib_path
fi
echo "== ncclscope triage: corefiles/$scenario (${#cores[@]} rank cores)" >&2
build_dir=${NCCLSCOPE_BUILD_DIR:-build}
"$build_dir/bin/ncclscope" triage "${cores[@]}" "${exe_args[@]}" \
  --solib-search-path "$lib_path" "$@"
