#!/usr/bin/env bash
# The launcher object of `ncclscope state` (RANK, LOCAL_RANK, ... from the process's
# environment): live from /proc/PID/environ, from a gcore and its slice through the
# initial stack, and never a variable outside the allowlist (SECRET_TOKEN) anywhere.
set -uo pipefail
source "${NCCLSCOPE_SRC:?}/tests/cli/lib.sh"
[ -x "$comm_fixture" ] && [ -x "$cli" ] || { echo "skip: fixture or cli not built"; exit 77; }
fake_lib=$build/fixtures/fakelib/libnccl.so.2
python3 "$src/tests/cli/fake_profile.py" "$profile" "$fake_lib" "$work/profiles" > /dev/null

launcher_is() {  # launcher_is DOC.json RANK LOCAL_RANK WORLD_SIZE RANK_FROM SOURCE_PREFIX
  python3 - "$@" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
l = doc["launcher"]
want = {"rank": int(sys.argv[2]), "local_rank": int(sys.argv[3]),
        "world_size": None if sys.argv[4] == "null" else int(sys.argv[4]), "rank_from": sys.argv[5]}
got = {k: l[k] for k in want}
ok = got == want and l["source"].startswith(sys.argv[6]) and l["unavailable"] is None
ok = ok and l["variables"] == {"RANK": "5", "LOCAL_RANK": "1", "MASTER_PORT": "29511"}
if not ok: print("launcher:", json.dumps(l), file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}
no_secret() { ! grep -q "SECRET_TOKEN\|hunter2" "$@"; }

out=$work/fixture.out
env RANK=5 LOCAL_RANK=1 MASTER_PORT=29511 SECRET_TOKEN=hunter2 PATH="$PATH" \
  "$comm_fixture" --profile "$profile" --library "$fake_lib" > "$out" 2>&1 &
pid=$!; pids+=($pid)
for _ in $(seq 50); do [ -s "$out" ] && break; sleep 0.1; done
check "fixture started with the variables" grep -q "RANK=5" "/proc/$pid/environ"

"$cli" state --json --pid "$pid" --profile-path "$work/profiles" > "$work/live.json" 2> "$work/live.err"
check "live: exit 0" test $? = 0
check "live: rank 5, local rank 1 from /proc/PID/environ" launcher_is "$work/live.json" 5 1 null RANK /proc/
"$cli" state --pid "$pid" --profile-path "$work/profiles" > "$work/live.txt" 2>&1
check "live text: launcher line" grep -q "^launcher   RANK=5 LOCAL_RANK=1 (from /proc/$pid/environ)$" "$work/live.txt"
check "live: no SECRET_TOKEN in any output" no_secret "$work/live.json" "$work/live.err" "$work/live.txt"

if command -v gdb > /dev/null; then
  gdb -p "$pid" -batch -nx -ex "gcore $work/fixture.core" > /dev/null 2>&1
  "$cli" state --json --core "$work/fixture.core" --profile-path "$work/profiles" > "$work/core.json" 2> "$work/core.err"
  check "gcore: rank 5, local rank 1 from the initial stack" launcher_is "$work/core.json" 5 1 null RANK "initial stack"
  "$cli" state --core "$work/fixture.core" --profile-path "$work/profiles" > "$work/core.txt" 2>&1
  check "gcore text: launcher line" grep -q "^launcher   RANK=5 LOCAL_RANK=1 (from the initial stack)$" "$work/core.txt"
  check "gcore: no SECRET_TOKEN in any output" no_secret "$work/core.json" "$work/core.err" "$work/core.txt"
  "$cli" slice "$work/fixture.core" -o "$work/small.core" --profile-path "$work/profiles" > /dev/null 2>&1
  check "slice: exit 0" test $? = 0
  check "gcore: the secret's value is in the whole core" grep -qa "SECRET_TOKEN=hunter2" "$work/fixture.core"
  check "slice: no value of a variable outside the allowlist (hunter2, PATH's) in the slice" \
    bash -c '! grep -qa "hunter2\|$0" "$1"' "$PATH" "$work/small.core"
  check "slice: the allowlisted values are kept" grep -qa "RANK=5" "$work/small.core"
  "$cli" slice "$work/fixture.core" -o "$work/small2.core" --profile-path "$work/profiles" --json > "$work/slice.json" 2>/dev/null
  check "slice --json: environment bytes dropped counted" python3 -c '
import json, sys
figures = json.load(open(sys.argv[1]))
sys.exit(0 if figures["environment_bytes_redacted"] > len("hunter2") else 1)' "$work/slice.json"
  "$cli" state --json --core "$work/small.core" --profile-path "$work/profiles" > "$work/small.json" 2>/dev/null
  check "slice: the same launcher object" python3 -c '
import json, sys
a, b = (json.load(open(p))["launcher"] for p in sys.argv[1:3])
sys.exit(0 if a == b and a["rank"] == 5 else 1)' "$work/core.json" "$work/small.json"
else
  echo "skip: gdb absent, no gcore checks"
fi
[ "$failures" = 0 ]
