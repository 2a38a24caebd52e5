#!/usr/bin/env bash
# Rebuild the cores that scripts/device-capture-corpus.sh sent back (issue 3, item 4).
#
#   tests/scenarios/unpack_capture.sh FILES_DIR RUN_NAME [DEST]     (DEST: /work/cores)
#
# FILES_DIR holds logs.tar.xz and cores.tar.partNN.  Writes DEST/_runs/RUN_NAME/ (machine logs,
# manifest, summary) and DEST/_runs/RUN_NAME/<scenario>/rank{0,1}.core plus that scenario's
# logs and ground truth.  Each core's sha256 is checked against the manifest written on the
# GPU machine; a delta whose base did not come back is reported and skipped.
set -euo pipefail
files=${1:?FILES_DIR}; run=${2:?RUN_NAME}; dest=${3:-/work/cores}
here=$(cd "$(dirname "$0")" && pwd)
out=$dest/_runs/$run
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$out"
tar -C "$stage" -xJf "$files/logs.tar.xz"
cp -r "$stage/logs/." "$out/"
if ls "$files"/cores.tar.part* >/dev/null 2>&1; then
  mkdir -p "$stage/packed"
  cat "$files"/cores.tar.part* | tar -C "$stage/packed" -xf -
fi

base=""
# Manifest columns: scenario rankN raw_bytes xz_bytes full|delta packed_bytes sha256 bases
restore() {  # $1: which lines (full, rank0 deltas, rank1 deltas)
  local name rank raw xz how packed sha bases
  while read -r name rank raw xz how packed sha bases; do
    local target=$out/$name/$rank.core
    mkdir -p "$out/$name"
    if [ "$how" = full ]; then
      [ "$1" = full ] || continue
      [ -f "$stage/packed/$name.$rank.core.xz" ] || { echo "missing: $name $rank (base)"; continue; }
      xz -dc "$stage/packed/$name.$rank.core.xz" > "$target"
      base=$target
    else
      [ "$1" = "delta-$rank" ] || continue
      local delta=$stage/packed/$name.$rank.delta.xz
      [ -f "$delta" ] || { echo "missing: $name $rank (not shipped)"; continue; }
      [ -n "$base" ] || { echo "skipped: $name $rank (its base core did not come back)"; continue; }
      local base_list=("$base")
      [[ $bases == *",$name.rank0" ]] && base_list+=("$out/$name/rank0.core")
      xz -dc "$delta" > "$stage/delta"
      python3 "$here/core_delta.py" decode "$target" "$stage/delta" "${base_list[@]}" >/dev/null
    fi
    [ "$(sha256sum "$target" | cut -d' ' -f1)" = "$sha" ] || { echo "sha256 mismatch: $target"; exit 1; }
    echo "restored $name $rank $(stat -c %s "$target") bytes"
  done < "$out/manifest.txt"
}
restore full
restore delta-rank0
restore delta-rank1
