#!/usr/bin/env bash
# Triage one scenario of the shipped corpus: unpack its sliced, xz-compressed
# rank cores into a temporary directory and run `ncclscope triage` on them.
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
for packed in "$dir"/*.core.xz; do
  xz -dc "$packed" > "$work/$(basename "${packed%.xz}")"
done
exe_args=()
if [ -f corefiles/bin/nccl_hang_scenarios.xz ]; then
  xz -dc corefiles/bin/nccl_hang_scenarios.xz > "$work/nccl_hang_scenarios"
  chmod +x "$work/nccl_hang_scenarios"
  exe_args=(--exe "$work/nccl_hang_scenarios")
fi
echo "== ncclscope triage: corefiles/$scenario ($(ls "$work"/*.core | wc -l) rank cores)" >&2
build_dir=${NCCLSCOPE_BUILD_DIR:-build}
"$build_dir/bin/ncclscope" triage "$work"/*.core "${exe_args[@]}" \
  --solib-search-path "corefiles/lib:$work" "$@"
