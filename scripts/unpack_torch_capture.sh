#!/usr/bin/env bash
# Turns what scripts/device-torch-multigroup.sh sent back into the inputs of
# scripts/build_torch_corefiles.py:
#
#   scripts/unpack_torch_capture.sh FILES_DIR DEST
#
# FILES_DIR holds meta.tar.xz (or meta.tar.xz.partNN) and cores.tar.partNN. Writes DEST/capture/<scenario>/ (logs, ground
# truth, FR dumps, state/triage of the full cores) and DEST/cores/<scenario>.ranks.tar.xz (that
# scenario's sliced cores as rank<R>.core in one xz stream, made on the GPU machine) with
# <scenario>.kinds.txt (which slice each rank is: python or nccl, and its size).
set -euo pipefail
files=${1:?FILES_DIR}; dest=${2:?DEST}
mkdir -p "$dest/capture" "$dest/cores"
if [ -f "$files/meta.tar.xz" ]; then tar -C "$dest/capture" -xJf "$files/meta.tar.xz"
else cat "$files"/meta.tar.xz.part* | tar -C "$dest/capture" -xJf -; fi  # over 15 MiB: in parts
cat "$files"/cores.tar.part* | tar -C "$dest/cores" -xf -
for packed in "$dest/cores"/*.ranks.tar.xz; do
  scenario=$(basename "$packed" .ranks.tar.xz)
  echo "$scenario: $(stat -c %s "$packed") bytes; $(tr '\n' ' ' < "$dest/cores/$scenario.kinds.txt")"
done
