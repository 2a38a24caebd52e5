#!/usr/bin/env bash
# The Kubernetes recipe of docs/cluster-triage.md, run as written there (between its
# kubectl-recipe markers), with a stand-in `kubectl`: `get pods` lists two pods, `exec POD --`
# runs the command here with that pod's ranks (NCCLSCOPE_PIDS) and hostname, as a container
# would. Live comm_fixture ranks: worker-0 holds ranks 0, 1 and worker-1 ranks 2, 3; rank 2
# launched one AllReduce fewer.
#  1. both pods answer: four snapshots, the culprit rank 2;
#  2. worker-1 is gone (NotFound): one line naming it, worker-0's ranks collected,
#     the triage names ranks 2, 3 as absent; that pod's call alone exits 2.
set -uo pipefail
source "${NCCLSCOPE_SRC:?}/tests/cli/cluster_lib.sh"
NRANKS=4 CULPRIT=2
setup_work
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  [ -d "${CLUSTER_TEST_SAMPLES:-}" ] && cp "$work"/*.err "$CLUSTER_TEST_SAMPLES"/ 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
recipe=$(sed -n '/<!-- kubectl-recipe:begin -->/,/<!-- kubectl-recipe:end -->/p' "$src/docs/cluster-triage.md" |
  grep -v '^<!--\|^```')
[ -n "$recipe" ] || { echo "FAIL: no kubectl recipe in docs/cluster-triage.md"; exit 1; }

for rank in $(seq 0 $((NRANKS - 1))); do
  # shellcheck disable=SC2046
  RANK=$rank timeout 120 "$comm_fixture" $(fixture_args "$rank" $NRANKS $CULPRIT) >"$work/rank$rank.out" 2>&1 &
done
start_ranks

# The stand-in: pods from $work/pods ("POD PID PID" lines), live ones from $work/pods.live;
# kubectl's own message and exit code for a pod that is gone.
mkdir -p "$work/bin"
cat >"$work/bin/kubectl" <<STANDIN
#!/usr/bin/env bash
if [ "\$1 \$2" = "get pods" ]; then cut -d' ' -f1 "$work/pods" | sed 's|^|pod/|'; exit 0; fi
[ "\$1" = exec ] || { echo "stand-in kubectl: only get pods, exec" >&2; exit 1; }
shift; [ "\$1" = -i ] && shift
pod=\$1; shift; [ "\$1" = -- ] && shift
line=\$(grep "^\$pod " "$work/pods.live")
[ -n "\$line" ] || { echo "Error from server (NotFound): pods \"\$pod\" not found" >&2; exit 1; }
mkdir -p "$work/host-\$pod" && printf '#!/bin/sh\necho %s\n' "\$pod" >"$work/host-\$pod/hostname"
chmod +x "$work/host-\$pod/hostname"
PATH=$work/host-\$pod:\$PATH NCCLSCOPE_PIDS=\${line#* } exec "\$@"
STANDIN
chmod +x "$work/bin/kubectl"
printf 'worker-0 %s %s\nworker-1 %s %s\n' "${pids[@]}" >"$work/pods"
run_recipe() {  # run_recipe NAME: the docs' block with this build's paths, output in $work/NAME
  local script=${recipe//scripts\/cluster-collect.sh/bash $collect}
  script=${script//\/opt\/ncclscope\/bin\/ncclscope/$work/node-ncclscope}
  script=${script//ncclscope triage \$out/$cli triage --json \$out}
  script=${script//out=hang-train/out=$work/$1}
  (cd "$work" && PATH=$work/bin:$PATH bash -c "$script") >"$work/$1.json" 2>"$work/$1.err"
}

# 1. Both pods answer.
cp "$work/pods" "$work/pods.live"
start=$SECONDS
run_recipe all
check "kubectl recipe: triage exit 0" test $? = 0
echo "kubectl recipe, 2 pods: $((SECONDS - start)) s"
check_snapshots "$work/all" 0 1 2 3
check "kubectl recipe: progress per pod" test "$(grep -c 'collected 2/4 ranks (1/1 nodes done)' "$work/all.err")" = 2
check "kubectl recipe: no node named" test ! -e "$work/all/unanswered-nodes.txt"
json_check "kubectl recipe: verdict hang, culprit rank 2" "$work/all.json" 'r["verdict"] == "hang" and r["culprit_ranks"] == [2]'

# 2. worker-1 is gone.
grep '^worker-0 ' "$work/pods" >"$work/pods.live"
run_recipe gone
check_snapshots "$work/gone" 0 1
check "pod gone: one line naming it" test "$(grep -c 'did not answer' "$work/gone.err")" = 1
check "pod gone: kubectl's reason" \
  grep -qx 'cluster-collect: node worker-1 did not answer: Error from server (NotFound): pods "worker-1" not found' "$work/gone.err"
check "pod gone: unanswered-nodes.txt" test "$(cut -f1 "$work/gone/unanswered-nodes.txt")" = worker-1
json_check "pod gone: triage names ranks 2, 3 as absent" "$work/gone.json" \
  '[f["culprit_ranks"] for c in r["communicators"] for f in c["findings"] if f["kind"] == "absent-ranks"] == [[2, 3]]'
bash "$collect" --out "$work/one" --no-triage --nodes worker-1 --launcher "$work/bin/kubectl exec -i worker-1 --" \
  --ncclscope "$work/node-ncclscope" 2>/dev/null
check "pod gone: its own call exits 2 (nothing gathered)" test $? = 2

if [ "$failures" -ne 0 ]; then
  echo "$failures failure(s)"; tail -n 5 "$work"/*.err
  exit 1
fi
echo "cluster through kubectl (stand-in): all checks passed"
