#!/usr/bin/env bash
# Issue 32 on real cores: every error signal in memory is shown, none summarized as ok.
# corefiles/tpdp-rank-died rank 0 (rank 2 was SIGKILLed; the capture then SIGABRTed the
# survivors under python -X faulthandler), values checked with gdb 13 + libnccl 2.28.9 DWARF:
#   $_siginfo: si_signo 6, si_code -6 (SI_TKILL), _kill.si_pid 9620 (the process itself: faulthandler
#   re-raised the capture's SIGABRT; no abort() frame), thread 1 = LWP 9620;
#   ncclLastError at 0x7fce0b503d20: "socketProgress: Connection closed by remote peer localhost<36858>";
#   ((struct ncclComm*)0x1e0c55b0)->proxyState->asyncResult = ncclRemoteError, ->asyncResult = ncclSuccess,
#   commHash 15284900453210491491 (0xd41edffab4d18a63).
# Bad input: the same core cut before its notes, and a core of a process without NCCL: one line
# each, never a crash inferred from what is missing.
source "$(dirname "$0")/corpus_prelude.sh"
scenario=$SRC/corefiles/tpdp-rank-died
[ -f "$scenario/ranks.tar.xz" ] || { echo "SKIP: no corefiles/tpdp-rank-died"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
tar -C "$WORK" -xJf "$scenario/ranks.tar.xz"
mkdir -p "$WORK/lib"
for packed in "$SRC"/corefiles/lib/*.tar.xz; do tar -C "$WORK/lib" -xJf "$packed" --transform 's|.*/||'; done
libs=(--solib-search-path "$WORK/lib")
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }

"$NSC" state --core "$WORK/rank0.core" "${libs[@]}" --json > "$WORK/rank0.json" 2>/dev/null
"$NSC" state --core "$WORK/rank0.core" "${libs[@]}" > "$WORK/rank0.txt" 2>/dev/null
python3 - "$WORK/rank0.json" "$WORK/rank0.txt" <<'PY' || fail "rank 0 state"
import json, sys
doc = json.load(open(sys.argv[1]))
text = open(sys.argv[2]).read()
problems = []
def want(what, got, expected):
    if got != expected:
        problems.append("%s: %r, want %r" % (what, got, expected))
signal = doc.get("fatal_signal") or {}
for key, value in (("signal", 6), ("name", "SIGABRT"), ("code", -6), ("code_name", "SI_TKILL"), ("sender_pid", 9620),
                   ("tid", 9620), ("origin", "re-raised"), ("failure", False)):
    want("fatal_signal." + key, signal.get(key), value)
want("nccl.last_error.text", ((doc.get("nccl") or {}).get("last_error") or {}).get("text"),
     "socketProgress: Connection closed by remote peer localhost<36858>")
want("nccl.last_error.address", ((doc.get("nccl") or {}).get("last_error") or {}).get("address"), "0x7fce0b503d20")
comm = [c for c in doc["communicators"] if c.get("comm_hash") == "0xd41edffab4d18a63"]
want("communicators with hash 0xd41edffab4d18a63", len(comm), 1)
if comm:
    want("its address", comm[0]["address"], "0x1e0c55b0")
    want("its health.proxy_async_result", comm[0]["health"].get("proxy_async_result"), "ncclRemoteError")
    want("its health.async_result", comm[0]["health"].get("async_result"), "ncclSuccess")
# Errors first, and never "health ok" for that communicator.
head = text.split("\n\n")[0]
for line in ("signal SIGABRT raised again by the process's own handler",
             "NCCL ERROR comm 0xd41edffab4d18a63 rank 0/2 (0x1e0c55b0): proxy_async_result=ncclRemoteError",
             'NCCL last error: "socketProgress: Connection closed by remote peer localhost<36858>"'):
    if line not in head:
        problems.append("not in the header: " + line)
section = text.split("hash 0xd41edffab4d18a63", 1)[-1].split("\ncommunicator ", 1)[0]
if "health ok" in section:
    problems.append("'health ok' printed for the communicator whose proxy reads ncclRemoteError")
if "health proxy_async_result=ncclRemoteError" not in section:
    problems.append("its health line does not name proxy_async_result=ncclRemoteError")
for problem in problems:
    print(problem)
sys.exit(1 if problems else 0)
PY

# The survivors' cores were taken by the capture (SIGABRT from outside): no crash, and the
# remote errors are reactions, never an errored (blamed) rank; rank 2 stays a suspect.
"$NSC" triage "$WORK"/rank*.core "${libs[@]}" --json > "$WORK/triage.json" 2>/dev/null
python3 - "$WORK/triage.json" <<'PY' || fail "triage of the survivors"
import json, sys
report = json.load(open(sys.argv[1]))
problems = []
if report["verdict"] != "incomplete" or report["suspect_ranks"] != [2] or report["culprit_ranks"] != []:
    problems.append("verdict %s culprits %s suspects %s, want incomplete [] [2]"
                    % (report["verdict"], report["culprit_ranks"], report["suspect_ranks"]))
if report.get("crash") is not None:
    problems.append("a crash section for cores a capture took")
kinds = [f["kind"] for c in report["communicators"] for f in c["findings"]]
if "errored-rank" in kinds:
    problems.append("a rank that saw ncclRemoteError is an errored rank")
remote = [f for c in report["communicators"] for f in c["findings"] if f["kind"] == "remote-error"]
if not remote or not any(0 in f["waiting_ranks"] for f in remote):
    problems.append("no remote-error finding naming rank 0")
# The headline's third line says it too (ranks 0 and 3 read ncclRemoteError; rank 1 does not).
others = report["headline"]["lines"][2]
if not others.startswith("Others: ranks 0,3 saw ncclRemoteError (a peer's connection failed); ranks 0,1,3 in "):
    problems.append("headline's third line does not say ranks 0,3 saw ncclRemoteError: %r" % others)
for problem in problems:
    print(problem)
sys.exit(1 if problems else 0)
PY

# A core cut before its notes: state names what is missing; triage uses nothing of it and
# infers no crash.
python3 - "$WORK/rank0.core" "$WORK/cut.core" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
phoff, = struct.unpack_from("<Q", data, 0x20)
phentsize, phnum = struct.unpack_from("<HH", data, 0x36)
notes = [struct.unpack_from("<IIQ", data, phoff + i * phentsize)[2] for i in range(phnum)
         if struct.unpack_from("<I", data, phoff + i * phentsize)[0] == 4]
open(sys.argv[2], "wb").write(data[:min(notes)])
PY
"$NSC" state --core "$WORK/cut.core" "${libs[@]}" --json > "$WORK/cut.json" 2> "$WORK/cut.err"
rc=$?
if [ "$rc" = 0 ]; then fail "state on a core cut before its notes exited 0"; fi
if [ -s "$WORK/cut.json" ]; then
  python3 - "$WORK/cut.json" <<'PY' || fail "cut core's document"
import json, sys
doc = json.load(open(sys.argv[1]))
if doc.get("fatal_signal") is not None:
    print("fatal_signal %r from a core without notes" % doc["fatal_signal"]); sys.exit(1)
why = doc.get("fatal_signal_unavailable") or ""
if "cut before them" not in why:
    print("fatal_signal_unavailable %r does not say the notes were cut" % why); sys.exit(1)
PY
fi
"$NSC" triage "$WORK/cut.core" "$WORK/rank1.core" "$WORK/rank3.core" "${libs[@]}" --json > "$WORK/cut-triage.json" 2> "$WORK/cut-triage.err"
python3 - "$WORK/cut-triage.json" <<'PY' || fail "triage with a core cut before its notes"
import json, sys
report = json.load(open(sys.argv[1]))
if report["verdict"] == "crash" or report.get("crash") is not None:
    print("crash inferred from a core without notes"); sys.exit(1)
if 0 in report["culprit_ranks"]:
    print("the cut core's rank blamed"); sys.exit(1)
PY
[ "$(wc -l < "$WORK/cut-triage.err")" -le 2 ] || fail "more than a line per damaged input: $(cat "$WORK/cut-triage.err")"

# A core of a process with no NCCL (gcore of sleep): one line, no crash.
if command -v gdb >/dev/null && command -v gcore >/dev/null; then
  sleep 60 &
  sleeper=$!
  gcore -o "$WORK/sleep" "$sleeper" >/dev/null 2>&1
  kill "$sleeper" 2>/dev/null
  core=$(ls "$WORK"/sleep.* 2>/dev/null | head -n 1)
  if [ -n "$core" ]; then
    "$NSC" triage "$core" --json > "$WORK/sleep.json" 2> "$WORK/sleep.err"
    rc=$?
    [ "$rc" = 2 ] || fail "triage of a core without NCCL exited $rc, want 2"
    [ "$(wc -l < "$WORK/sleep.err")" = 1 ] || fail "triage of a core without NCCL: not one line: $(cat "$WORK/sleep.err")"
    grep -q "no NCCL" "$WORK/sleep.err" || fail "the line does not say there is no NCCL: $(cat "$WORK/sleep.err")"
    grep -q '"verdict": "crash"' "$WORK/sleep.json" && fail "a core without NCCL called a crash"
  fi
fi

[ "$failures" = 0 ] && echo "crash_state: all checks passed"
exit $((failures > 0))
