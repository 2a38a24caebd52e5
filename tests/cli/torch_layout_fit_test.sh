#!/usr/bin/env bash
# A torch layout profile is checked against real memory before it is trusted
# (native/src/torch/layout_fit.h). On the real torch 2.11 rank cores of corefiles/ (every
# rank whose recorder holds entries), two deliberately wrong profiles, found first because
# they carry the real one's PT_LOAD fingerprint, must give "unreadable: layout does not fit
# (why)" and no entry, group or status, with the NCCL view (communicators) unchanged:
#   smaller:  the 2.11 Entry without reset_epoch_ (as older torch lays it out), later members 8 bytes earlier
#   shifted:  the 2.11 Entry with an 8-byte member inserted after id_ (as a newer torch might), same size
#   recorder: FlightRecorder's entries_ 8 bytes later
# And a profile directory with no profile for the build: one line, communicators unchanged.
# One rank with recorder entries per capture (each run reads a whole core). Skips when none is there.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
shipped=$src/native/profiles/torch/d5a8ca54ade703f346f36090e67116f56c5e3a64.json
make_wrong() {  # KIND DIR: a wrong copy of the shipped profile under DIR/torch/
  mkdir -p "$2/torch"
  python3 - "$1" "$shipped" "$2/torch/$(basename "$shipped")" <<'EOF'
import json, sys
kind, source, target = sys.argv[1:]
profile = json.load(open(source))
structs = profile["structs"]
entry = structs["c10d::FlightRecorder<c10::cuda::CUDAEvent>::Entry"]
if kind == "smaller":
    removed = next(m for m in entry["members"] if m["name"] == "reset_epoch_")["offset"]
    entry["members"] = [dict(m, offset=m["offset"] - 8 if m["offset"] > removed else m["offset"])
                        for m in entry["members"] if m["name"] != "reset_epoch_"]
    entry["size"] -= 8
elif kind == "shifted":  # what fits in the same size moves (the last, retired_, stays)
    entry["members"] = [dict(m, offset=m["offset"] + 8) if m["name"] != "id_" and m["offset"] + m["size"] + 8 <= entry["size"]
                        else m for m in entry["members"]]
else:
    recorder = structs["c10d::FlightRecorder<c10::cuda::CUDAEvent>"]
    for member in recorder["members"]:
        if member["name"] == "entries_":
            member["offset"] += 8
json.dump(profile, open(target, "w"))
EOF
}
for kind in smaller shifted recorder; do make_wrong $kind "$work/wrong-$kind"; done
mkdir -p "$work/profiles"  # the NCCL profiles; torch/ beside them only for the second run
ln -s "$src"/native/profiles/*.json "$work/profiles/"
ranks=0
done_scenarios=" "
communicators() { python3 -c "import json, sys; print(json.dumps(json.load(open(sys.argv[1])).get('communicators'), sort_keys=True))" "$1"; }
check_rank() {  # name rank core pickle
  local name=$1 rank=$2 core=$3 pickle=$4
  case "$done_scenarios" in *" $name "*) return 0 ;; esac
  python3 -c "import pickle, sys; sys.exit(0 if pickle.load(open(sys.argv[1], 'rb'))['entries'] else 1)" "$pickle" || return 0
  done_scenarios+="$name "
  ranks=$((ranks + 1))
  "$cli" state --core "$core" --json > "$work/right.json" 2> /dev/null
  for kind in smaller shifted recorder; do
    "$cli" state --core "$core" --json --profile-path "$work/wrong-$kind" > "$work/wrong.json" 2> /dev/null
    check "$name rank $rank: $kind-wrong profile: layout does not fit, no entries" python3 -c "
import json, sys
torch = json.load(open(sys.argv[1]))['torch']
reason = torch.get('unavailable') or ''
print('   ', reason)
sys.exit(0 if reason.startswith('unreadable: layout does not fit (') and 'entries' not in torch and 'process_groups' not in torch else 1)" "$work/wrong.json"
    check "$name rank $rank: $kind-wrong profile: communicators unchanged" \
      test "$(communicators "$work/wrong.json")" = "$(communicators "$work/right.json")"
  done
  NCCLSCOPE_NO_SHIPPED_PROFILES=1 "$cli" state --core "$core" --json --profile-path "$work/profiles" > "$work/none.json" 2> /dev/null
  ln -s "$src/native/profiles/torch" "$work/profiles/torch"
  NCCLSCOPE_NO_SHIPPED_PROFILES=1 "$cli" state --core "$core" --json --profile-path "$work/profiles" > "$work/with-torch.json" 2> /dev/null
  rm "$work/profiles/torch"
  check "$name rank $rank: no profile for the build: one line, communicators unchanged" python3 -c "
import json, sys
none, right = (json.load(open(p)) for p in sys.argv[1:])
reason = none['torch'].get('unavailable') or ''
sys.exit(0 if 'no torch layout profile for this build' in reason and '\n' not in reason
         and none.get('communicators') == right.get('communicators') else 1)" "$work/none.json" "$work/with-torch.json"
}
each_torch_rank check_rank
[ $ranks -gt 0 ] || { echo "SKIP: no PyTorch capture with recorder entries in corefiles/"; exit 77; }
exit $((failures > 0))
