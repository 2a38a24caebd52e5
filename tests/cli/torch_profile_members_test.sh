#!/usr/bin/env bash
# Each torch layout profile against its source's struct definitions: for every manifest
# tests/data/torch_members/*.txt (made by scripts/torch_struct_members.py from the header the
# profile's build was compiled from; "profile: FILE" names the profile under native/profiles/torch),
# the profile's members of each struct, in offset order, must be the source's data members in
# declaration order. A member that moves, is renamed, added or dropped on either side fails.
# The comparison is first shown to fail on a copy of the 2.11 profile with two members swapped.
set -uo pipefail
source "$(dirname "$0")/lib.sh"
compare() {  # MANIFEST PROFILE: exit 1 and one line per struct that differs
  python3 - "$1" "$2" <<'PY'
import json, sys
manifest, profile_path = sys.argv[1:]
structs = json.load(open(profile_path))["structs"]
bad = 0
for line in open(manifest):
    if line.startswith(("source:", "profile:", "#")) or not line.strip():
        continue
    name, _, members = line.rstrip("\n").rpartition(": ")
    declared = members.split()
    if name not in structs:
        print("    %s: not in the profile" % name); bad += 1; continue
    laid_out = [m["name"] for m in sorted(structs[name]["members"], key=lambda m: m["offset"])]
    if laid_out != declared:
        print("    %s: profile %s, source %s" % (name, laid_out, declared)); bad += 1
sys.exit(1 if bad else 0)
PY
}
fails() { ! "$@" > /dev/null; }
manifests=0
for manifest in "$src"/tests/data/torch_members/*.txt; do
  [ -f "$manifest" ] || continue
  manifests=$((manifests + 1))
  profile=$src/native/profiles/torch/$(sed -n 's/^profile: //p' "$manifest")
  check "$(basename "$manifest"): $(basename "$profile") members = source declarations" compare "$manifest" "$profile"
  if [ $manifests -eq 1 ]; then  # the check can fail: two Entry members swapped
    python3 - "$profile" "$work/swapped.json" <<'PY'
import json, sys
profile = json.load(open(sys.argv[1]))
for struct in profile["structs"].values():
    names = [m["name"] for m in struct["members"]]
    if "pg_id_" in names and "reset_epoch_" in names:
        a, b = (next(m for m in struct["members"] if m["name"] == n) for n in ("pg_id_", "reset_epoch_"))
        a["offset"], b["offset"] = b["offset"], a["offset"]
json.dump(profile, open(sys.argv[2], "w"))
PY
    check "$(basename "$manifest"): a profile with two members swapped is caught" fails compare "$manifest" "$work/swapped.json"
  fi
done
[ $manifests -gt 0 ] || { echo "SKIP: no manifest in tests/data/torch_members"; exit 77; }
exit $((failures > 0))
