#!/usr/bin/env bash
# `ncclscope audit` on every real core in corefiles/ (issue 20 item 2): the findings each
# scenario gives, checked against the values decoded from the same cores (expected.json holds
# gdb's reading of them). No false errors on the hang corpus: seq-order-inconsistent on
# mismatched-collective is that scenario's ground truth (rank 0 launched AllReduce #4 where rank 1
# launched ReduceScatter #1); comm-async-error on abort and tpdp-rank-died is the proxy's
# ncclRemoteError after a peer went away (checked with gdb, below). Also: snapshots audit like
# their cores, usage and bad input.
source "$(dirname "$0")/corpus_prelude.sh"
ls "$SRC"/corefiles/*/*.core.xz >/dev/null 2>&1 || { echo "SKIP: no corefiles/"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
checked=0
check() {  # NAME CONDITION-COMMAND...
  local name=$1; shift
  if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failures=$((failures + 1)); fi
}

# Unpacks one scenario's cores into $WORK/<scenario>/ and sets ARGS (cores, its own libnccl).
unpack_scenario() {
  local dir=$1 scenario core own_lib
  scenario=$(basename "$dir"); ARGS=()
  mkdir -p "$WORK/$scenario"
  for core in "$dir"*.core.xz; do
    [ -e "$core" ] || continue
    xz -dc "$core" >"$WORK/$scenario/$(basename "${core%.xz}")" && ARGS+=("$WORK/$scenario/$(basename "${core%.xz}")")
  done
  if [ -f "$dir/ranks.tar.xz" ]; then  # the PyTorch multi-group captures
    tar -C "$WORK/$scenario" -xJf "$dir/ranks.tar.xz"
    for core in "$WORK/$scenario"/rank*.core; do ARGS+=("$core"); done
  fi
  own_lib=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("libnccl") or "")' "$dir/expected.json" 2>/dev/null)
  if [ -n "$own_lib" ]; then
    mkdir -p "$WORK/$scenario/lib" && xz -dc "$dir/$own_lib" >"$WORK/$scenario/lib/libnccl.so.2"
    ARGS+=(--solib-search-path "$WORK/$scenario/lib")
  fi
}

for dir in "$SRC"/corefiles/*/; do
  scenario=$(basename "$dir")
  unpack_scenario "$dir"
  [ ${#ARGS[@]} -gt 0 ] || continue
  "$NSC" audit "${ARGS[@]}" --json >"$WORK/$scenario.json" 2>"$WORK/$scenario.err"
  rc=$?
  checked=$((checked + 1))
  if ! python3 - "$scenario" "$WORK/$scenario.json" "$rc" <<'PY'
import collections, json, sys
scenario, path, rc = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = json.load(open(path))
fired = collections.Counter("%s@%s" % (f["rule"], ",".join(str(w["rank"]) for w in f["where"])) for f in d["findings"])
# Verified by hand against each core's decoded seq_launched (and expected.json's gdb reading):
# every hang with a rank behind shows seq-spread (info) at the rank behind; nothing else fires.
spread_at_1 = {"seq-spread@1": 1}
expected = {
    "mismatched-collective": {"seq-order-inconsistent@1,0": 1, "seq-spread@1": 1},
    # A peer went away while this rank's proxy received from it over the socket transport: rank 1
    # aborted (abort), rank 2 died (tpdp-rank-died, its comms with ranks 0 and 3). gdb with
    # libnccl's DWARF on these cores: comm->proxyState->asyncResult = ncclRemoteError (comm
    # 0x55b43e812290 of abort/rank0; 0x1e0c55b0 of rank0, 0x3cb8a600 of rank3), asyncResult ncclSuccess.
    "abort": {"comm-async-error@0": 1},
    "tpdp-rank-died": {"comm-async-error@0": 1, "comm-async-error@1": 1},
    # The sub comm splits with reversed keys: process 1 is its rank 0, at AllReduce 3 against 4.
    "split-comm": {"seq-spread@0": 1},
    "tpdp-fewer-steps": {"seq-spread@1": 2}, "tpdp-fewer-steps-timing": {"seq-spread@1": 2},
    "tpdp-fr-off": {"seq-spread@1": 2},
    # Issue 32's crashes (a rank killed, raised, faulted): every survivor's proxy reports the lost
    # peer (ncclRemoteError, evidence checked below); ranks are each communicator's own. A rank
    # that died mid-step is also behind on its comms (seq-spread). A watchdog timeout aborts
    # cleanly: no error left in memory.
    "crash-sigkill": {"comm-async-error@0": 2, "comm-async-error@1": 1, "comm-async-error@3": 1},
    "crash-exception": {"comm-async-error@0": 1, "comm-async-error@1": 1, "comm-async-error@2": 1},
    "crash-cuda-illegal-address": {"comm-async-error@0": 4, "comm-async-error@1": 1, "comm-async-error@2": 1},
    "crash-native-segfault": {"comm-async-error@1": 4, "comm-async-error@2": 1, "comm-async-error@3": 1,
                              "seq-spread@0": 2},
    # Issue 33's lock-order inversion: ranks 0 and 1 each one AllReduce ahead on a different group.
    "order-lock-inversion": {"seq-spread@0": 1, "seq-spread@1": 1, "seq-spread@0,1": 1},
    "order-lock-inversion-fr-off": {"seq-spread@0": 1, "seq-spread@1": 1, "seq-spread@0,1": 1},
}
for name in ["cross-stream", "cross-stream-lazy-load", "cross-stream-recorder", "skip-collective",
             "skip-collective-0x11", "skip-collective-net", "skip-collective-recorder", "torch-allreduce",
             "skip-collective-nccl2.26.2", "skip-collective-nccl2.27.7", "skip-collective-nccl2.28.3-stripped",
             "skip-collective-nccl2.29.7", "skip-collective-nccl2.30.7", "two-libraries"]:
    expected[name] = spread_at_1
want = expected.get(scenario, {})
problems = []
if dict(fired) != want: problems.append("findings %s, want %s" % (dict(fired), want))
s = d["summary"]
want_rc = 1 if s["errors"] or s["inputs_read_in_part"] or s["inputs_unusable"] else 0
if rc != want_rc: problems.append("exit %d, want %d" % (rc, want_rc))
if s["warnings"]: problems.append("%d warnings" % s["warnings"])
if scenario == "mismatched-collective":
    f = next(f for f in d["findings"] if f["rule"] == "seq-order-inconsistent")
    e = f["evidence"]
    if (e["seq_launched_a"]["ReduceScatter"], e["seq_launched_b"]["AllReduce"]) != (1, 4):
        problems.append("evidence %s" % e)
for f in d["findings"]:
    if f["rule"] == "comm-async-error" and (f["evidence"]["proxy_async_result"], f["evidence"]["async_result"]) != ("ncclRemoteError", "ncclSuccess"):
        problems.append("evidence %s" % f["evidence"])
if scenario == "skip-collective-nccl2.21.5":  # no seqNumber[] in 2.21.5: said, not guessed
    reasons = [n["reason"] for n in d["not_checked"] if n["rule"] == "seq-order-inconsistent"]
    if not reasons or "not in NCCL 2.21.5" not in reasons[0]: problems.append("not checked %s" % reasons)
if problems:
    print("FAIL %s: %s" % (scenario, "; ".join(problems))); sys.exit(1)
print("ok   %-36s %s exit %d" % (scenario, " ".join(sorted(fired)) or "-", rc))
PY
  then
    failures=$((failures + 1))
    head -3 "$WORK/$scenario.err"
  fi
done
[ "$checked" -gt 0 ] || { echo "SKIP: no scenario with cores"; exit 77; }

# Snapshots (`state --json`) audit like the cores they came from.
cores=("$WORK"/mismatched-collective/rank*.core)
for core in "${cores[@]}"; do "$NSC" state "$core" --no-stacks --json >"${core%.core}.json" 2>/dev/null; done
"$NSC" audit "$WORK"/mismatched-collective/rank*.json --json >"$WORK/snapshots.json" 2>/dev/null
findings() { python3 -c 'import json,sys; print(sorted((f["rule"], f["message"]) for f in json.load(open(sys.argv[1]))["findings"]))' "$1"; }
check "snapshots give the cores' findings" test "$(findings "$WORK/snapshots.json")" = "$(findings "$WORK/mismatched-collective.json")"
"$NSC" audit "${cores[0]}" >"$WORK/text.txt" 2>&1
check "text: summary line and rule table" grep -q "^audit of 1 input, 1 communicator: 0 errors, 0 warnings, 0 info" "$WORK/text.txt"
check "text: a not-checked reason" grep -q "seq-spread  1 time(s); first: .*only\|fewer than 2 ranks" "$WORK/text.txt"

# Exit codes: usage 64, an unusable input beside a usable one 1, nothing usable 2.
"$NSC" audit >/dev/null 2>&1; check "no input: 64" test $? = 64
"$NSC" audit --bogus x >/dev/null 2>&1; check "unknown option: 64" test $? = 64
echo '{"schema": "ncclscope.triage/1"}' >"$WORK/other.json"
"$NSC" audit "$WORK/other.json" >/dev/null 2>"$WORK/other.err"; check "not a state document: 2" test $? = 2
check "it says why" grep -q 'not an ncclscope.state/1 document (schema is "ncclscope.triage/1")' "$WORK/other.err"
"$NSC" audit "$WORK/other.json" "$WORK"/mismatched-collective/rank0.json >/dev/null 2>&1
check "one unusable input beside a usable one: 1" test $? = 1
# Hostile snapshots: wrong types anywhere give "not checked", a non-object communicator bad input.
python3 - "$WORK" <<'PY'
import json, sys
comm = {"comm_hash": "0x1", "rank": 0, "nranks": "x", "health": [1, 2], "seq_launched": {"AllReduce": "x"},
        "proxy_ops": [5, {"state": 2, "subs": [7, {"transport": 3}]}, {"state": 2, "subs": 5}], "planned": 7,
        "cuda": {"registrations": {"page_size": -4, "buffers": [1, {"begin": "zz", "end": 3},
                 {"begin": "0x1000", "end": "0x0", "ipc_imports": [3, {"peer_rank": "a"}]}]},
                 "p2p_transport": [1, {"recv_mem_ipc": "0x10", "type": None, "peer": 1}]}, "unavailable": []}
doc = {"schema": "ncclscope.state/1", "target": 5, "communicators": [comm, dict(comm, seq_launched=[])], "errors": []}
json.dump(doc, open(sys.argv[1] + "/odd.json", "w"))
doc["communicators"].append(3)
json.dump(doc, open(sys.argv[1] + "/hostile.json", "w"))
PY
"$NSC" audit "$WORK/odd.json" --json >"$WORK/odd.out" 2>&1; check "odd field types: exit 0, every rule not checked or passed" test $? = 0
check "odd field types: no finding" python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert not d["findings"] and d["not_checked"]' "$WORK/odd.out"
"$NSC" audit "$WORK/hostile.json" >/dev/null 2>"$WORK/hostile.err"; check "a communicator that is no object: 2" test $? = 2
check "it names it" grep -q 'communicators\[2\] is not an object' "$WORK/hostile.err"
"$NSC" audit --help | grep -q "^usage: ncclscope audit"; check "--help" test $? = 0
"$NSC" --help | grep -q "^  audit "; check "listed in ncclscope --help" test $? = 0

if [ "$failures" -ne 0 ]; then
  echo "$failures check(s) failed"
  exit 1
fi
echo "audit corpus: $checked scenario(s) and the CLI checks passed"
