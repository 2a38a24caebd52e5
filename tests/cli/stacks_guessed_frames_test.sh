#!/usr/bin/env bash
# Host stacks of a real core whose libnccl file is not available (a user's
# machine without CUDA): past a libnccl frame libdwfl can only guess by frame
# pointers, and on corefiles/skip-collective rank 0 one thread's guess is
# 0x706d742f00000045 (ASCII "/tmp"). That frame must not be shown; the thread's
# error says where and why the unwind stopped. libcuda frames guessed the same
# way but landing in loaded code stay (they match the program's own frames).
set -uo pipefail
build=${NCCLSCOPE_BUILD:?} src=${NCCLSCOPE_SRC:?}
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
scenario=$src/corefiles/skip-collective
xz -dc "$scenario/rank0.core.xz" > "$work/rank0.core"
program=$(sed -n 's/^ *"executable": *"\([^"]*\)".*/\1/p' "$scenario/expected.json" | head -n 1)
xz -dc "$src/corefiles/$program" > "$work/program"
mkdir -p "$work/lib" "$work/empty-sysroot"
tar -C "$work/lib" -xJf "$src"/corefiles/lib/*.tar.xz --transform 's|.*/||'
# The empty sysroot hides /usr/local/cuda-13.0/lib/libnccl.so.2 where it exists.
"$build/bin/ncclscope" state --core "$work/rank0.core" --exe "$work/program" \
  --sysroot "$work/empty-sysroot" --solib-search-path "$work/lib" --json > "$work/state.json" 2>/dev/null
rc=$?
[ "$rc" -le 1 ] || { echo "FAIL: state exit $rc"; exit 1; }
python3 - "$work/state.json" <<'PY'
import json, sys
threads = json.load(open(sys.argv[1]))["threads"]
failures = []
pcs = [f.get("pc") for t in threads for f in t["frames"]]
if "0x706d742f00000045" in pcs:
    failures.append("the guessed garbage frame 0x706d742f00000045 is still shown")
cut = [t for t in threads if "guessed 0x706d742f00000045, which lies in no loaded module" in (t.get("error") or "")]
if len(cut) != 1:
    failures.append("expected one thread whose error names the cut, got %d" % len(cut))
elif [f.get("module") for f in cut[0]["frames"]] != ["libc.so.6", "libnccl.so.2"]:
    failures.append("the cut thread should keep __poll and its libnccl caller: %s" % cut[0]["frames"])
main = [t for t in threads if any(f.get("function") == "main" for f in t["frames"])]
if not main or not any(f.get("module", "").startswith("libcuda.so") for f in main[0]["frames"]):
    failures.append("rank 0's main thread lost its libcuda frames")
for failure in failures:
    print("FAIL:", failure)
print("%d threads checked" % len(threads))
sys.exit(1 if failures else 0)
PY
