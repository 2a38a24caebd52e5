#!/usr/bin/env bash
# scripts/cluster-collect.sh end to end on this machine: four fake rank
# processes (libnccl mapped executable, RANK in their environment) on two fake
# "nodes" behind a pdsh-like launcher; a fake `ncclscope state` hands out
# synthetic snapshots; the real `ncclscope triage` must name the culprit.
source "${NCCLSCOPE_SRC:?}/tests/cli/corpus_prelude.sh"  # BUILD, SRC, NSC; skips when not built
WORK=$(mktemp -d -p "$BUILD" cluster-test.XXXXXX)  # not /tmp: it may be mounted noexec
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/lib" "$WORK/bin" "$WORK/snapshots"
python3 "$SRC/bench/gen_snapshots.py" --ranks 4 --culprit 2 --out "$WORK/snapshots" --comms 1 --threads 2
cp /bin/true "$WORK/lib/libnccl.so.2"

# Fake ranks: map "libnccl.so.2" executable, like a process linked with NCCL.
for rank in 0 1 2 3; do
  RANK=$rank python3 -c '
import mmap, sys, time
f = open(sys.argv[1], "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ | mmap.PROT_EXEC, flags=mmap.MAP_PRIVATE)
time.sleep(120)' "$WORK/lib/libnccl.so.2" &
  pids+=($!)
done
for pid in "${pids[@]}"; do
  for try in $(seq 100); do  # python may take a while to start on a busy machine
    grep -q ' r-xp .*libnccl.so.2' "/proc/$pid/maps" 2>/dev/null && break
    sleep 0.1
  done
  grep -q ' r-xp .*libnccl.so.2' "/proc/$pid/maps" || { echo "SKIP: cannot map an executable file here"; exit 77; }
done

# Fake `ncclscope` on the nodes: `state --pid P --json` prints rank R's snapshot.
cat >"$WORK/bin/ncclscope" <<FAKE
#!/usr/bin/env bash
[ "\$1" = state ] && [ "\$2" = --pid ] || exit 64
rank=\$(tr '\0' '\n' </proc/\$3/environ | sed -n 's/^RANK=//p')
cat "$WORK/snapshots/rank-\$rank.json"
FAKE
# Fake pdsh: two "nodes", two ranks each, lines prefixed with the node name. Like pdsh, whole
# lines only: two seds writing one pipe at once split lines longer than PIPE_BUF.
cat >"$WORK/bin/fake-pdsh" <<FAKE
#!/usr/bin/env bash
out=\$(mktemp -d)
NCCLSCOPE_PIDS="${pids[0]} ${pids[1]}" "\$@" | sed 's/^/node01: /' > "\$out/node01" &
NCCLSCOPE_PIDS="${pids[2]} ${pids[3]}" "\$@" | sed 's/^/node02: /' > "\$out/node02" &
wait
cat "\$out/node01" "\$out/node02"
rm -rf "\$out"
FAKE
chmod +x "$WORK/bin/ncclscope" "$WORK/bin/fake-pdsh"

failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
bash "$SRC/scripts/cluster-collect.sh" --launcher "$WORK/bin/fake-pdsh" --out "$WORK/gathered" \
  --ncclscope "$WORK/bin/ncclscope" --local-ncclscope "$NSC" -- --json >"$WORK/report.json" 2>"$WORK/err"
rc=$?
[ "$rc" = 0 ] || fail "exit $rc: $(cat "$WORK/err")"
[ "$(ls "$WORK/gathered" | sort | tr '\n' ' ')" = "rank-0.json rank-1.json rank-2.json rank-3.json " ] ||
  fail "gathered: $(ls "$WORK/gathered" | tr '\n' ' ')"
cmp -s "$WORK/gathered/rank-2.json" "$WORK/snapshots/rank-2.json" || fail "rank-2.json changed in transit"
grep -q "cluster-collect: 4 snapshot(s) in $WORK/gathered, 0 problem(s)" "$WORK/err" || fail "summary line: $(cat "$WORK/err")"
python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["verdict"] == "hang" and r["culprit_ranks"] == [2], (r["verdict"], r["culprit_ranks"])
' "$WORK/report.json" || fail "triage verdict"

# The same through --remote-script (how pdsh/ssh users run it).
bash "$SRC/scripts/cluster-collect.sh" --launcher "$WORK/bin/fake-pdsh" --out "$WORK/gathered2" \
  --remote-script "$SRC/scripts/cluster-collect.sh" --ncclscope "$WORK/bin/ncclscope" --no-triage 2>"$WORK/err2"
[ "$(ls "$WORK/gathered2" | wc -l)" = 4 ] || fail "--remote-script: $(cat "$WORK/err2")"

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"
  exit 1
fi
echo "cluster collect: all checks passed"
