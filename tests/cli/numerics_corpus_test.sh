#!/usr/bin/env bash
# Numerics on real cores (issue 20 item 1): corefiles/skip-collective (NCCL 2.28.9, 2x H200, rank 1
# skipped AllReduce #4). The launched plans on comm->callbackQueue and the hung collective's
# buffers, as gdb with libnccl's own DWARF printed them on these cores (docs/numerics.md):
#   rank 0: 4 plans, newest 0x564f529a99a8: AllReduce, count 1048576, ncclFloat32,
#           sendbuff 0x7f0adcc00000, recvbuff 0x7f0add400000 (seqNumber[4] = 4);
#   rank 1: 3 plans, newest 0x556e6bb87a78, sendbuff 0x7f8ad4c00000, recvbuff 0x7f8ad5400000 (3).
# The buffers are device memory, not in a host core: "not readable here", never counted as zeros,
# exit 1; triage then adds no numerics section (nothing read, nothing given).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
dir=$src/corefiles/skip-collective
[ -x "$cli" ] || { echo "SKIP: $cli not built"; exit 77; }
command -v xz >/dev/null || { echo "SKIP: xz missing"; exit 77; }
for rank in 0 1; do
  [ -f "$dir/rank$rank.core.xz" ] || { echo "SKIP: $dir/rank$rank.core.xz missing"; exit 77; }
  xz -dc "$dir/rank$rank.core.xz" > "$work/rank$rank.core"
done

check_rank() {  # RANK SEQ PLANS NEWEST_PLAN SENDBUFF RECVBUFF
  local rank=$1
  "$cli" numerics --core "$work/rank$rank.core" --json > "$work/numerics$rank.json" 2> "$work/numerics$rank.err"
  local rc=$?
  check "rank $rank: numerics exit $rc is 1 (buffers in device memory)" test "$rc" = 1
  check "rank $rank: the hung collective's buffers, unread and said so" python3 - "$work/numerics$rank.json" "$@" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
seq, send, recv = int(sys.argv[3]), sys.argv[6], sys.argv[7]
launched = [b for b in doc["buffers"] if b["stage"] == "launched"]
assert [(b["role"], b["address"]) for b in launched] == [("send", send), ("recv", recv)], launched
for b in launched:
    assert (b["collective"], b["seq"], b["elements"], b["element_type"]) == ("AllReduce", seq, 1048576, "f32"), b
    assert b["stats"] is None, b
    assert "not readable here" in b["unreadable"] and "cuda-gdb" in b["unreadable"], b["unreadable"]
PY
  "$cli" state --core "$work/rank$rank.core" --json --no-stacks > "$work/state$rank.json" 2>/dev/null
  check "rank $rank: launched plans as gdb + DWARF printed them" python3 - "$work/state$rank.json" "$@" <<'PY'
import json, sys
comm = json.load(open(sys.argv[1]))["communicators"][0]
launched = comm["launched"]
plans, newest = int(sys.argv[4]), sys.argv[5]
assert launched["source"] == "callbackQueue" and launched["plans_awaiting_reclaim"] == plans, launched
assert len(launched["colls"]) == plans and launched["p2p"] == []
assert [c["seq"] for c in launched["colls"]] == list(range(1, plans + 1)), launched["colls"]
last = launched["colls"][-1]
assert (last["plan"], last["sendbuff"], last["recvbuff"]) == (newest, sys.argv[6], sys.argv[7]), last
assert (last["count"], last["datatype"], last["op"]) == (1048576, "ncclFloat32", "ncclSum"), last
PY
}

check "rank 0: state text names the newest launched collective and its buffers" grep -q \
  "^  awaiting: 4 launched plan(s) not reclaimed; newest AllReduce #4 count 1048576 ncclFloat32 ncclSum send 0x7f0adcc00000 recv 0x7f0add400000$" \
  <("$cli" state --core "$work/rank0.core" --no-stacks 2>/dev/null)
check_rank 0 4 4 0x564f529a99a8 0x7f0adcc00000 0x7f0add400000
check_rank 1 3 3 0x556e6bb87a78 0x7f8ad4c00000 0x7f8ad5400000
"$cli" triage "$work/rank0.core" "$work/rank1.core" --json > "$work/triage.json" 2>/dev/null
check "triage: culprit [1], no numerics section (no buffer readable here)" python3 -c '
import json, sys
report = json.load(open(sys.argv[1]))
assert report["verdict"] == "hang" and report["culprit_ranks"] == [1], report["culprit_ranks"]
assert "numerics" not in report' "$work/triage.json"
echo "$failures failure(s)"
[ "$failures" = 0 ]
