#!/usr/bin/env bash
# Issue 32 item 1: the exception PyTorch's watchdog died of, read from the shipped slices of the real
# crash-watchdog-timeout capture (PyTorch 2.11, H200, 2026-12-06; cut by a slicer that keeps what the
# exception decoder reads). libtorch is not shipped, so the type's name is unavailable; libstdc++
# (corefiles/lib) names std::terminate on the stack. Each rank's message must equal the line
# PyTorch itself logged ("[Rank N] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4,
# ..., Timeout(ms)=15000) ran for ... milliseconds before timing out.").
set -uo pipefail
build=${NCCLSCOPE_BUILD:?} src=${NCCLSCOPE_SRC:?}
dir=$src/corefiles/crash-watchdog-timeout
libs=$src/corefiles/lib/ubuntu-24.04-x86_64-libs.tar.xz
for needed in "$dir/ranks.tar.xz" "$libs"; do [ -f "$needed" ] || { echo "SKIP: no $needed"; exit 77; }; done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
tar -C "$work" -xJf "$dir/ranks.tar.xz"
mkdir -p "$work/lib" && tar -C "$work/lib" -xJf "$libs" --transform 's|.*/||'
failures=0
for rank in 0 1 2 3; do
  [ -f "$work/rank$rank.core" ] || continue
  "$build/bin/ncclscope" state --core "$work/rank$rank.core" --solib-search-path "$work/lib" --json > "$work/state$rank.json" 2> /dev/null
  python3 - "$work/state$rank.json" "$dir/truth/rank$rank.log" <<'PY' || failures=$((failures + 1))
import json, re, sys
exception = (json.load(open(sys.argv[1])).get("fatal_signal") or {}).get("exception")
logged = next((m.group(1) for m in (re.search(r"\] (\[Rank \d+\] Watchdog caught collective operation timeout: .*)$", line)
                                   for line in open(sys.argv[2], errors="replace")) if m), None)
if logged is None:
    sys.exit("%s: PyTorch logged no watchdog timeout" % sys.argv[2])
if not isinstance(exception, dict):
    sys.exit("FAIL %s: no fatal_signal.exception" % sys.argv[1])
text = (exception.get("message") or {}).get("text")
if text != logged:
    sys.exit("FAIL %s: message %r, PyTorch logged %r" % (sys.argv[1], text, logged))
if exception.get("type") is not None or not exception.get("type_name_unavailable"):
    sys.exit("FAIL %s: the type should be unavailable without libtorch: %r" % (sys.argv[1], exception))
print("%s: message equals PyTorch's log: %s" % (sys.argv[2].rsplit("/", 1)[-1], text[:60]))
PY
done
[ "$failures" = 0 ] && echo "crash_watchdog_exception: all checks passed"
exit $((failures > 0))
