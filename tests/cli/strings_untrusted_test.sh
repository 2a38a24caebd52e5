#!/usr/bin/env bash
# Untrusted strings (issue 8): thread names and library paths come from the
# target; text output must carry no raw control byte (no terminal escape gets
# through) and JSON output must be valid, with the string escaped exactly.
set -uo pipefail
source "$(dirname "$0")/lib.sh"

# No byte below 0x20 other than newline and tab, and no DEL, anywhere in FILE.
no_control_bytes() {  # no_control_bytes FILE
  python3 - "$1" <<'PY'
import sys
data = open(sys.argv[1], "rb").read()
bad = [i for i, b in enumerate(data) if (b < 0x20 and b not in (0x0a, 0x09)) or b == 0x7f]
# C1 controls (U+0080..U+009F, e.g. U+009B CSI) encoded in UTF-8: some terminals obey them.
bad += [i for i in range(len(data) - 1) if data[i] == 0xC2 and 0x80 <= data[i + 1] <= 0x9F]
bad.sort()
if bad:
    i = bad[0]
    print(f"  {len(bad)} control byte(s); first at {i}: {data[max(0, i - 20):i + 20]!r}")
sys.exit(1 if bad else 0)
PY
}

# FILE is valid JSON (strict UTF-8) and some string in it equals TEXT (Python escapes allowed).
json_has_string() {  # json_has_string FILE PYTHON-STRING-LITERAL
  python3 - "$1" "$2" <<'PY'
import ast, json, sys
raw = open(sys.argv[1], "rb").read()
document = json.loads(raw.decode("utf-8", errors="strict"))
wanted = ast.literal_eval(sys.argv[2])
def strings(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)
found = any(wanted in text for text in strings(document))
if not found:
    print(f"  {wanted!r} not found in the JSON strings")
sys.exit(0 if found else 1)
PY
}

# 1. A library path with an escape sequence and an invalid UTF-8 byte (from /proc/PID/maps).
fake_lib=$build/fixtures/fakelib/libnccl.so.2
evil_dir=$work/$'\e[2J\e]0;pwned\a'$'\xff'dir
mkdir -p "$evil_dir" "$work/profiles"
cp "$fake_lib" "$evil_dir/libnccl.so.2"
fake_id=$(python3 "$src/tests/cli/fake_profile.py" "$profile" "$fake_lib" "$work/profiles")
"$comm_fixture" --profile "$profile" --library "$evil_dir/libnccl.so.2" > "$work/fixture.out" 2>&1 &
fixture=$!; pids+=($fixture)
for _ in $(seq 50); do [ -s "$work/fixture.out" ] && break; sleep 0.1; done
"$cli" state --pid "$fixture" --profile-path "$work/profiles" > "$work/path.txt" 2> "$work/path.err"; rc=$?
check "evil library path: state answers (exit $rc)" test "$rc" -le 1
check "evil library path: the path is shown, escaped" grep -qF '\x1b[2J' "$work/path.txt"
check "evil library path: no raw control byte in text output" no_control_bytes "$work/path.txt"
check "evil library path: no raw control byte on stderr" no_control_bytes "$work/path.err"
"$cli" state --json --pid "$fixture" --profile-path "$work/profiles" > "$work/path.json" 2>/dev/null
check "evil library path: JSON valid, path kept (escape intact, bad byte replaced)" \
  json_has_string "$work/path.json" "'\\x1b[2J\\x1b]0;pwned\\x07\\ufffddir/libnccl.so.2'"
"$cli" triage --pid "$fixture" --profile-path "$work/profiles" > "$work/path-triage.txt" 2>&1
check "evil library path: no raw control byte in triage text" no_control_bytes "$work/path-triage.txt"
"$cli" triage --json --pid "$fixture" --profile-path "$work/profiles" > "$work/path-triage.json" 2>/dev/null
check "evil library path: triage JSON valid" json_has_string "$work/path-triage.json" "'ncclscope.triage/1'"

# 2. A thread named "\x1b[31mevil" (the stack fixture), with frames (--freeze).
if [ ! -r "$real_lib" ]; then
  echo "note: $real_lib absent: thread-name checks need it (the fixture must map a libnccl with NCCL code)"
else
  "$stack_fixture" --nccl-lib "$real_lib" > "$work/stack.out" 2>&1 &
  target=$!; pids+=($target)
  for _ in $(seq 100); do grep -q '^ready' "$work/stack.out" && break; sleep 0.1; done
  "$cli" state --pid "$target" --freeze > "$work/threads.txt" 2>&1; rc=$?
  check "evil thread name: state --freeze answers (exit $rc)" test "$rc" -le 1
  check "evil thread name: text shows it escaped" grep -qF '\x1b[31mevil' "$work/threads.txt"
  check "evil thread name: no raw control byte in state text" no_control_bytes "$work/threads.txt"
  "$cli" state --json --pid "$target" --freeze > "$work/threads.json" 2>/dev/null
  check "evil thread name: state JSON valid, name exact" json_has_string "$work/threads.json" "'\\x1b[31mevil'"
  check "evil thread name: JSON escapes ESC as \\u001b" grep -qF '\u001b[31mevil' "$work/threads.json"
  "$cli" triage --pid "$target" > "$work/triage.txt" 2>&1
  check "evil thread name: no raw control byte in triage text" no_control_bytes "$work/triage.txt"
  "$cli" triage "$work/threads.json" > "$work/triage-snap.txt" 2>&1
  check "evil thread name: no raw control byte in triage of the snapshot" no_control_bytes "$work/triage-snap.txt"
fi

# 3. A snapshot from a stranger: every thread name, frame and comm string holds
# ESC sequences and a C1 CSI (U+009B); triage text must neutralise all of them.
cat > "$work/hostile.json" <<'JSON'
{"schema": "ncclscope.state/1", "tool": {"name": "ncclscope", "version": "0.1.0"},
 "target": {"kind": "core", "path": "/x/\u001b[2Jcore", "pid": 7, "executable": "/bin/\u001b]0;t\u0007app"},
 "host": {"hostname": "h\u001b[5m\u009b31m"},
 "nccl": {"version": "2.28.9\u001b[8m", "library": "/l/\u001b[1mlibnccl.so.2", "build_id": "ab",
          "layout_source": "profile:\u009b2J", "build_id_mismatch": false},
 "communicators": [{"address": "0x10", "comm_hash": "0x6db0a96d9cb7fc37", "rank": 0, "nranks": 2,
   "seq_launched": {"Broadcast": 0, "Reduce": 0, "AllGather": 1, "ReduceScatter": 0, "AllReduce": 7},
   "health": {"async_result": "ncclSuccess\u001b[31m", "abort_flag": false, "init_state": "\u009b1m"},
   "channels": [], "proxy_ops": [{"address": "0x20", "collective": "AllReduce\u001b[0m", "pattern": "\u001bring",
                                  "subs": [{"channel": 0, "peer": 1, "nsteps": 8, "posted": 4, "done": 2}]}],
   "planned": {"colls": [{"collective": "\u001b[7mAllReduce"}], "p2p": [], "n_tasks_coll": 1},
   "unavailable": {"x\u001b[1m": "why\u001b[2J\u009b"}, "warnings": ["w\u001b[31m\u009b1m"]}],
 "threads": [{"tid": 7, "name": "\u001b[31mevil\u009b2J", "state": "S", "blocked_in": "cudaStreamSynchronize\u001b[1m",
              "frames": [{"pc": "0x1", "function": "\u001b]8;;http://x\u0007f", "module": "/m/\u001b[4mlib.so"}]}],
 "errors": [{"kind": "read", "subject": "s\u001b[31m", "address": "0x1", "reason": "r\u009b1m"}]}
JSON
sed 's/"rank": 0/"rank": 1/; s/"AllGather": 1/"AllGather": 0/' "$work/hostile.json" > "$work/hostile-rank1.json"
"$cli" triage "$work/hostile.json" "$work/hostile-rank1.json" > "$work/hostile.txt" 2>&1; rc=$?
check "hostile snapshot: triage answers (exit $rc)" test "$rc" -le 2
check "hostile snapshot: triage text carries some of its strings" grep -q 'evil\|AllReduce' "$work/hostile.txt"
check "hostile snapshot: no raw control byte (C0, DEL or C1) in triage text" no_control_bytes "$work/hostile.txt"
"$cli" triage --json "$work/hostile.json" "$work/hostile-rank1.json" > "$work/hostile-triage.json" 2>/dev/null
check "hostile snapshot: triage JSON valid" json_has_string "$work/hostile-triage.json" "'ncclscope.triage/1'"

echo "$failures failure(s)"
[ "$failures" = 0 ]
