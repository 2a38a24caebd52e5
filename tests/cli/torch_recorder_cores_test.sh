#!/usr/bin/env bash
# PyTorch's flight recorder read from real rank cores (sliced) of the GPU machine, checked
# against the pickle PyTorch itself dumped from the same process
# (torch._C._distributed_c10d._dump_nccl_trace()): every entry's ids, op, sizes, dtypes,
# state, times and frames (tests/scenarios/fr_compare.py; a state the dump shows later,
# because it queried the CUDA events after our read, is a note). Scenarios: corefiles/torch-*/
# (or every directory under $NCCLSCOPE_TORCH_FR_COREFILES) holding fr_rankN.pkl beside
# rankN.core / rankN.fr.core / <name>.rankN.*.core (.xz too). Skips when none.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
compare=$src/tests/scenarios/fr_compare.py
roots=${NCCLSCOPE_TORCH_FR_COREFILES:-$src/corefiles}
pattern='torch-*'; [ -n "${NCCLSCOPE_TORCH_FR_COREFILES:-}" ] && pattern='*'
pairs=0
for scenario in "$roots"/$pattern; do
  [ -d "$scenario" ] || continue
  name=$(basename "$scenario")
  for pickle in "$scenario"/fr_rank*.pkl; do
    [ -f "$pickle" ] || continue
    rank=$(basename "$pickle" .pkl); rank=${rank#fr_rank}
    core=
    for candidate in "$scenario"/rank$rank.fr.core.xz "$scenario"/rank$rank.fr.core "$scenario"/rank$rank.core.xz \
                     "$scenario"/rank$rank.core "$roots"/$name.rank$rank.fr.core.xz "$roots"/$name.rank$rank.fr.core; do
      [ -f "$candidate" ] && { core=$candidate; break; }
    done
    [ -n "$core" ] || continue
    pairs=$((pairs + 1))
    case $core in *.xz) xz -dc "$core" > "$work/rank.core"; core=$work/rank.core ;; esac
    "$cli" state --core "$core" --json > "$work/state.json" 2> "$work/state.err"
    check "$name rank $rank: state read the recorder" python3 -c "
import json, sys
torch = json.load(open(sys.argv[1])).get('torch') or {}
sys.exit(0 if torch and not torch.get('unavailable') and torch.get('entries') else 1)" "$work/state.json"
    check "$name rank $rank: entries equal PyTorch's dump" python3 "$compare" "$pickle" "$work/state.json" --allow-later-state
  done
done
[ $pairs -gt 0 ] || { echo "SKIP: no torch-* scenario with fr_rankN.pkl and a rank core under $roots"; exit 77; }
exit $((failures > 0))
