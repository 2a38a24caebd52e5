#!/usr/bin/env bash
# End-to-end checks of `ncclscope triage` on synthetic snapshots: verdicts,
# JSON keys, DOT/SVG, bad inputs (one clear line each) and exit codes.
set -u
BUILD=${NCCLSCOPE_BUILD:?}
SRC=${NCCLSCOPE_SRC:?}
NSC=$BUILD/bin/ncclscope
GEN=$SRC/bench/gen_snapshots.py
[ -x "$NSC" ] || { echo "SKIP: $NSC not built"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 missing"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
expect_rc() {  # expect_rc WANT LABEL -- command...
  local want=$1 label=$2; shift 3
  "$@" >"$WORK/out" 2>"$WORK/err"
  local rc=$?
  [ "$rc" = "$want" ] || fail "$label: exit $rc, want $want; stderr: $(head -3 "$WORK/err")"
}
json_check() {  # json_check FILE PYTHON-EXPRESSION-ON-r LABEL
  python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if ($2) else 1)" "$1" \
    || fail "$3: $(python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print(r.get('verdict'), r.get('culprit_ranks'), r.get('summary','')[:300])" "$1" 2>&1)"
}

# 1. The committed 2-rank AllGather hang (rank 1 skipped it).
DATA=$SRC/tests/data/triage/allgather-2ranks
expect_rc 0 "2-rank text" -- "$NSC" triage "$DATA/rank-0.json" "$DATA/rank-1.json"
head -1 "$WORK/out" | grep -q "^HANG in " || fail "2-rank text: first line $(head -1 "$WORK/out")"
grep -q "rank 1 never launched AllGather #4, which rank 0 launched and waits for" "$WORK/out" || fail "2-rank text: verdict sentence"
grep -q "rank 1: pause() called from train_step_0() \[user-code\]" "$WORK/out" || fail "2-rank text: stack class"
expect_rc 0 "2-rank json" -- "$NSC" triage "$DATA" --json --dot "$WORK/g.dot"
cp "$WORK/out" "$WORK/two.json"
json_check "$WORK/two.json" 'r["schema"]=="ncclscope.triage/1" and r["verdict"]=="hang" and r["culprit_ranks"]==[1]' "2-rank json verdict"
json_check "$WORK/two.json" 'r["communicators"][0]["comm_hash"]=="0x6db0a96d9cb7fc37" and r["communicators"][0]["nranks"]==2 and r["communicators"][0]["ranks_seen"]==[0,1] and r["communicators"][0]["missing_ranks"]==[]' "2-rank json communicator"
json_check "$WORK/two.json" '[f for f in r["communicators"][0]["findings"] if f["kind"]=="missing-collective" and f["collective"]=="AllGather" and f["seq"]==4 and f["waiting_ranks"]==[0] and f["culprit_ranks"]==[1]]' "2-rank json finding"
json_check "$WORK/two.json" 'all(k in r for k in ("graph","stack_classes","inputs","errors"))' "2-rank json keys"

# 2. DOT always; SVG only where Graphviz is installed.
head -1 "$WORK/g.dot" | grep -qx "digraph ncclscope_triage {" || fail "dot: header"
grep -q '^  n0 -> n1 \[label="AllGather #4\\n0x6db0a96d9cb7fc37", class="waits-on"\];$' "$WORK/g.dot" || fail "dot: edge n0 -> n1"
grep -q '^  n1 \[label="rank 1\\npause() called from train_step_0() \[user-code\]", fillcolor="#f4cccc", class="role-culprit"' "$WORK/g.dot" || fail "dot: culprit node"
if command -v dot >/dev/null; then
  expect_rc 0 "svg" -- "$NSC" triage "$DATA" --svg "$WORK/g.svg"
  grep -q "<svg" "$WORK/g.svg" || fail "svg: no <svg> element"
else
  expect_rc 0 "svg without dot" -- "$NSC" triage "$DATA" --svg "$WORK/g.svg"
  grep -q "Graphviz \`dot\` is not installed" "$WORK/err" || fail "svg without dot: message"
fi

# 3. Scenarios at 8 ranks from the generator.
for scenario in no-hang collective-mismatch p2p-cycle stuck-before-launch abort split; do
  python3 "$GEN" --ranks 8 --culprit 5 --out "$WORK/$scenario" --scenario "$scenario" --comms 1 --frames 8 --threads 2
  expect_rc 0 "$scenario" -- "$NSC" triage "$WORK/$scenario" --json
  cp "$WORK/out" "$WORK/$scenario.json"
done
json_check "$WORK/no-hang.json" 'r["verdict"]=="no-hang" and r["culprit_ranks"]==[]' "no-hang"
json_check "$WORK/collective-mismatch.json" 'r["verdict"]=="hang" and r["culprit_ranks"]==[5] and r["communicators"][0]["findings"][0]["kind"]=="collective-mismatch"' "collective-mismatch"
json_check "$WORK/p2p-cycle.json" 'r["verdict"]=="hang" and r["culprit_ranks"]==[] and r["graph"]["cycles"]==[[0,1,2,3,4,5,6,7]]' "p2p-cycle"
json_check "$WORK/stuck-before-launch.json" 'r["verdict"]=="hang" and r["culprit_ranks"]==[5] and [f for f in r["communicators"][0]["findings"] if f["kind"]=="stuck-before-launch" and f["collective"]=="AllReduce"]' "stuck-before-launch"
json_check "$WORK/abort.json" 'r["verdict"]=="hang" and r["culprit_ranks"]==[5] and r["communicators"][0]["missing_ranks"]==[5]' "abort"
json_check "$WORK/split.json" 'r["verdict"]=="hang" and r["culprit_ranks"]==[5] and len(r["communicators"])==2' "split"

# 4. Bad input: one clear line each, graded exit codes.
mkdir "$WORK/empty"
expect_rc 2 "empty directory" -- "$NSC" triage "$WORK/empty"
grep -qx "ncclscope triage: $WORK/empty: empty directory (no core\*, \*.core, \*.json or fr_rank\*/\*.pkl file in it)" "$WORK/err" || fail "empty directory: message $(cat "$WORK/err")"
python3 "$GEN" --ranks 4 --out "$WORK/corrupt" --scenario corrupt --comms 1 --threads 1
expect_rc 2 "corrupt alone" -- "$NSC" triage "$WORK/corrupt/rank-3.json"
grep -q "^ncclscope triage: $WORK/corrupt/rank-3.json: corrupt snapshot: parse error at line [0-9]*, column [0-9]*: " "$WORK/err" || fail "corrupt: message $(cat "$WORK/err")"
[ "$(wc -l <"$WORK/err")" = 1 ] || fail "corrupt: more than one line on stderr"
expect_rc 1 "corrupt among good ones" -- "$NSC" triage "$WORK/corrupt"
head -1 "$WORK/out" | grep -q "^INCOMPLETE: " || fail "corrupt among good: verdict $(head -1 "$WORK/out")"
python3 "$GEN" --ranks 2 --out "$WORK/unrelated" --scenario unrelated --comms 1 --threads 1
expect_rc 2 "unrelated jobs" -- "$NSC" triage "$WORK/unrelated"
grep -q "^ncclscope triage: inputs from unrelated jobs: 2 groups share no communicator" "$WORK/err" || fail "unrelated: message $(cat "$WORK/err")"
expect_rc 1 "same file twice" -- "$NSC" triage "$DATA" "$DATA/rank-0.json"
echo "not json, not ELF" >"$WORK/notes.json"
expect_rc 2 "neither" -- "$NSC" triage "$WORK/notes.json"
grep -qx "ncclscope triage: $WORK/notes.json: neither a JSON snapshot, an ELF core nor a flight-recorder dump" "$WORK/err" || fail "neither: message $(cat "$WORK/err")"
expect_rc 2 "missing file" -- "$NSC" triage "$WORK/nope.json"
grep -qx "ncclscope triage: $WORK/nope.json: No such file or directory" "$WORK/err" || fail "missing file: message"
# A core of a process without NCCL (needs gdb's gcore and ptrace rights).
if command -v gdb >/dev/null; then
  sleep 30 &
  sleeper=$!
  gdb -nx -batch -p "$sleeper" -ex "gcore $WORK/core.sleep" >/dev/null 2>&1
  kill "$sleeper" 2>/dev/null
  wait "$sleeper" 2>/dev/null
  if [ -s "$WORK/core.sleep" ]; then
    expect_rc 2 "core without NCCL" -- "$NSC" triage "$WORK/core.sleep"
    [ "$(wc -l <"$WORK/err")" = 1 ] && grep -q "core.sleep.*NCCL" "$WORK/err" || fail "core without NCCL: $(cat "$WORK/err")"
  fi
fi

# A directory's JSON of another kind (ground truth, notes) is ignored, not an error.
mkdir "$WORK/with-notes"
cp "$DATA"/rank-*.json "$WORK/with-notes/"
echo '{"mode": "skip-collective", "expected_culprit_rank": 1}' >"$WORK/with-notes/rank0.ground_truth.json"
expect_rc 0 "directory with other JSON" -- "$NSC" triage "$WORK/with-notes"
grep -q "^Inputs: 2 usable, 0 unusable, 1 ignored" "$WORK/out" || fail "directory with other JSON: $(tail -1 "$WORK/out")"
# A live process without NCCL.
sleep 30 &
sleeper=$!
expect_rc 2 "pid without NCCL" -- "$NSC" triage --pid "$sleeper"
kill "$sleeper" 2>/dev/null
wait "$sleeper" 2>/dev/null
[ "$(wc -l <"$WORK/err")" = 1 ] && grep -q "^ncclscope triage: pid $sleeper: " "$WORK/err" || fail "pid without NCCL: $(cat "$WORK/err")"

# 5. Usage errors.
expect_rc 64 "no input" -- "$NSC" triage
expect_rc 64 "unknown option" -- "$NSC" triage --frobnicate "$DATA"
expect_rc 64 "bad --jobs" -- "$NSC" triage --jobs zero "$DATA"
# One --pid rule for every subcommand (cli/options.cc parse_pid): 1 .. 0x3fffffff.
expect_rc 64 "--pid above the pid range" -- "$NSC" triage --pid 1073741824
grep -q "^ncclscope triage: --pid 1073741824: not a process id$" "$WORK/err" || fail "--pid bound: $(cat "$WORK/err")"
expect_rc 64 "--pid above the pid range (state)" -- "$NSC" state --pid 1073741824

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "triage CLI: all checks passed"
