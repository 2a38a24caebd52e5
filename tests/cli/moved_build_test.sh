#!/usr/bin/env bash
# A build moved elsewhere (or installed: bin/, share/ncclscope/profiles) finds the layout
# profiles it ships relative to itself, not under the source path compiled into it (issue 14).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
core_xz=$src/corefiles/skip-collective/rank0.core.xz
[ -x "$cli" ] || { echo "skip: $cli not built"; exit 77; }
[ -f "$core_xz" ] || { echo "skip: no $core_xz"; exit 77; }
shipped=$build/share/ncclscope/profiles/$(basename "$profile")
check "the build copies the shipped profiles beside its binaries" cmp -s "$shipped" "$profile"
mkdir -p "$work/moved/bin" "$work/moved/share/ncclscope"
cp "$cli" "$work/moved/bin/ncclscope"
cp -r "$build/share/ncclscope/profiles" "$work/moved/share/ncclscope/profiles"
xz -dc "$core_xz" > "$work/rank0.core"
NCCLSCOPE_NO_PROFILE_CACHE=1 "$work/moved/bin/ncclscope" state --core "$work/rank0.core" --json > "$work/moved.json" 2> "$work/moved.err"; rc=$?
check "moved build: decodes (exit $rc)" test "$rc" -le 1
check "moved build: the profile comes from beside the moved binary" python3 -c '
import json, sys
source = json.load(open(sys.argv[1]))["nccl"]["layout_source"]
print("  layout_source:", source)
sys.exit(0 if source.startswith("profile:" + sys.argv[2]) else 1)' "$work/moved.json" "$work/moved/bin/../share/ncclscope/profiles/"
echo "$failures failure(s)"
[ "$failures" = 0 ]
