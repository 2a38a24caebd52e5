#!/usr/bin/env bash
# PyTorch's flight recorder read from real rank cores (sliced) of the GPU machine, checked
# against the pickle PyTorch itself dumped from the same process
# (torch._C._distributed_c10d._dump_nccl_trace()): every entry's ids, op, sizes, dtypes,
# state, times and frames (tests/scenarios/fr_compare.py; a state the dump shows later,
# because it queried the CUDA events after our read, is a note). Scenarios: every
# corefiles/<scenario>/ with ranks.tar.xz (the multi-group PyTorch captures: rank<R>.core) and
# truth/fr_rank<R>.pkl, or every directory under $NCCLSCOPE_TORCH_FR_COREFILES holding
# fr_rank<R>.pkl beside rank<R>.core[.xz]. Skips when none.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
compare=$src/tests/scenarios/fr_compare.py
pairs=0
check_rank() {  # name rank core pickle
  local name=$1 rank=$2 core=$3 pickle=$4
  pairs=$((pairs + 1))
  "$cli" state --core "$core" --json > "$work/state.json" 2> "$work/state.err"
  if python3 -c "import pickle, sys; sys.exit(0 if pickle.load(open(sys.argv[1], 'rb'))['entries'] else 1)" "$pickle"; then
    check "$name rank $rank: state read the recorder" python3 -c "
import json, sys
torch = json.load(open(sys.argv[1])).get('torch') or {}
sys.exit(0 if torch and not torch.get('unavailable') and torch.get('entries') else 1)" "$work/state.json"
    check "$name rank $rank: entries equal PyTorch's dump" python3 "$compare" "$pickle" "$work/state.json" --allow-later-state
  else  # TORCH_FR_BUFFER_SIZE=0: PyTorch dumped no entry; the state says the recorder is off
    check "$name rank $rank: recorder off, no entries, as PyTorch's dump" python3 -c "
import json, sys
torch = json.load(open(sys.argv[1])).get('torch') or {}
sys.exit(0 if torch.get('enabled') is False and torch.get('entries') == [] and not torch.get('unavailable') else 1)" "$work/state.json"
  fi
}
if [ -n "${NCCLSCOPE_TORCH_FR_COREFILES:-}" ]; then
  for scenario in "$NCCLSCOPE_TORCH_FR_COREFILES"/*/; do
    for pickle in "$scenario"fr_rank*.pkl; do
      [ -f "$pickle" ] || continue
      rank=$(basename "$pickle" .pkl); rank=${rank#fr_rank}
      core=$scenario/rank$rank.core
      [ -f "$core.xz" ] && { xz -dc "$core.xz" > "$work/rank.core"; core=$work/rank.core; }
      [ -f "$core" ] && check_rank "$(basename "$scenario")" "$rank" "$core" "$pickle"
    done
  done
else
  each_torch_rank check_rank
fi
[ $pairs -gt 0 ] || { echo "SKIP: no PyTorch capture with fr_rankN.pkl and a rank core"; exit 77; }
exit $((failures > 0))
