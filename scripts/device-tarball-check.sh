#!/usr/bin/env bash
# Issue 19 item 2 on the GPU machine: the relocatable tarball (cpack -G TGZ, carried as
# build/ncclscope-*.tar.gz) runs there with nothing carried beside it: ldd resolves libdw/libelf
# from its own lib/, triage of committed corefiles, and cuda-gdb sources its gdb extension and
# decodes a core. From the repo root, $OUT set.
set -uo pipefail
: "${OUT:?}"
work=/tmp/tarball-check; rm -rf "$work"; mkdir -p "$work/cores"
tar -xzf build/ncclscope-*-Linux-x86_64.tar.gz -C "$work"
tree=$(ls -d "$work"/ncclscope-*-Linux-x86_64)
{
  echo "== uname / glibc"; uname -r; ldd --version | head -1
  echo "== ldd (LD_LIBRARY_PATH empty)"; env -u LD_LIBRARY_PATH ldd "$tree/bin/ncclscope" "$tree/lib/libncclscope.so" | grep -E "libdw|libelf|not found"
  for rank in 0 1; do xz -dc corefiles/skip-collective/rank$rank.core.xz > "$work/cores/rank$rank.core"; done
  exe=$(python3 -c "import json; print(json.load(open('corefiles/skip-collective/expected.json'))['executable'])")
  xz -dc "corefiles/$exe" > "$work/nccl_hang_scenarios"; chmod +x "$work/nccl_hang_scenarios"
  echo "== triage (env -i)"; env -i PATH=/usr/bin:/bin "$tree/bin/ncclscope" triage "$work/cores/rank0.core" "$work/cores/rank1.core"; echo "rc=$?"
  for sc in tpdp-fewer-steps ppdp-skip-send; do
    [ -f corefiles/$sc/ranks.tar.xz ] || continue
    mkdir -p "$work/$sc" && tar -xJf corefiles/$sc/ranks.tar.xz -C "$work/$sc"
    echo "== triage $sc"; env -i PATH=/usr/bin:/bin "$tree/bin/ncclscope" triage "$work/$sc" 2>&1 | head -3; echo "rc=${PIPESTATUS[0]}"
  done
  echo "== cuda-gdb with the tarball's extension"
  timeout 120 cuda-gdb -nx -batch -ex "source $tree/share/ncclscope/gdb/ncclscope-gdb.py" -ex "nccl-state" \
    "$work/nccl_hang_scenarios" "$work/cores/rank0.core" 2>&1 | tail -15; echo "rc=$?"
} > "$OUT/tarball-check.txt" 2>&1
cat "$OUT/tarball-check.txt"
