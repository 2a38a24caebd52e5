#!/usr/bin/env bash
# scripts/cluster-collect.sh through a real Slurm on this machine: munged, slurmctld and
# slurmd started here in a private configuration (own key, socket, state, spool, ports),
# a 4-task job of live comm_fixture ranks (rank = SLURM_PROCID, rank 2 launched one
# AllReduce fewer), then the collector as `srun --overlap --jobid J` beside it and the real
# `ncclscope triage` on what came back. Also: an srun that fails (a job id that does not
# exist), and a rank whose read hangs past the node timeout. Every daemon is stopped at exit.
set -uo pipefail
source "${NCCLSCOPE_SRC:?}/tests/cli/cluster_lib.sh"
need_root
need_localhost
need_commands munged:munge slurmctld:slurmctld slurmd:slurmd srun:slurm-client squeue:slurm-client \
  scancel:slurm-client sinfo:slurm-client
NRANKS=4 CULPRIT=2
setup_work
export SLURM_CONF=$work/slurm.conf
mkdir -p "$work/munge" "$work/state" "$work/spool" "$work/log"
# munged wants every directory above its socket open to all (x): $work may sit under a
# mode-700 home (a root's clone in /root), so the socket gets its own directory in /tmp.
munge_socket_dir=$(mktemp -d /tmp/ncclscope-munge.XXXXXX) && chmod 755 "$munge_socket_dir"
munge_socket=$munge_socket_dir/munge.sock
chmod 700 "$work/state" "$work/spool" "$work/log"
daemons=() job_srun=""
queue_empty() { [ -z "$(timeout 2 squeue -h 2>/dev/null)" ]; }
cleanup() {
  # The job first (its slurmstepd outlives slurmd), while the controller still answers.
  timeout 5 scancel --full --quiet --jobname ncclscope-fixture 2>/dev/null
  wait_for 10 queue_empty
  [ -n "$job_srun" ] && kill "$job_srun" 2>/dev/null
  local p
  for p in "${daemons[@]}"; do kill "$p" 2>/dev/null; done
  for p in "${daemons[@]}"; do wait_for 5 test ! -e "/proc/$p" || kill -9 "$p" 2>/dev/null; done
  # A step daemon left behind carries our SLURM_CONF in its environment: only ours are killed.
  for p in $(grep -lsF "SLURM_CONF=$work/slurm.conf" /proc/[0-9]*/environ | cut -d/ -f3); do
    [ "$p" != $$ ] && [ "$p" != "$BASHPID" ] && kill -9 "$p" 2>/dev/null
  done
  [ -d "${CLUSTER_TEST_SAMPLES:-}" ] && cp "$work"/*.err "$CLUSTER_TEST_SAMPLES"/ 2>/dev/null
  rm -rf "$work" "$munge_socket_dir"
}
trap cleanup EXIT
# Every daemon runs under `timeout 120`: even a test killed with SIGKILL leaves nothing behind for long.

# munge: a fresh key, its own socket, pid, seed and log.
head -c 1024 /dev/urandom >"$work/munge/munge.key" && chmod 400 "$work/munge/munge.key"
timeout 120 munged -F --socket="$munge_socket" --key-file="$work/munge/munge.key" \
  --pid-file="$work/munge/munged.pid" --seed-file="$work/munge/seed" \
  --log-file="$work/log/munged.log" >"$work/log/munged.out" 2>&1 &
daemons+=($!)
wait_for 10 test -S "$munge_socket" || { cat "$work/log/munged.out"; echo "FAIL: munged did not start"; exit 1; }

ctld_port=$(free_port) slurmd_port=$(free_port)
cat >"$SLURM_CONF" <<EOF
ClusterName=ncclscope-test
SlurmctldHost=localhost
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$munge_socket
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
ReturnToService=2
SlurmdParameters=config_overrides
SchedulerType=sched/builtin
KillWait=2
MessageTimeout=5
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$NRANKS State=UNKNOWN
PartitionName=test Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
timeout 120 slurmctld -D -i >"$work/log/slurmctld.out" 2>&1 &
daemons+=($!)
timeout 120 slurmd -D -N localhost >"$work/log/slurmd.out" 2>&1 &
daemons+=($!)
node_idle() { [ "$(timeout 2 sinfo -h -N -o %t 2>/dev/null)" = idle ]; }
if ! wait_for 20 node_idle; then
  tail -n 5 "$work"/log/slurm*.log; echo "FAIL: slurmctld/slurmd did not bring localhost up"; exit 1
fi

# The hung job: 4 tasks, each a live fixture rank that says its rank from SLURM_PROCID.
fixture_cmd="exec $comm_fixture --profile $profile --library $fake_lib --rank \$SLURM_PROCID \
  --nranks $NRANKS --allreduce \$(( SLURM_PROCID == $CULPRIT ? 6 : 7 ))"
timeout 120 srun --job-name ncclscope-fixture --time 2 --ntasks $NRANKS bash -c "$fixture_cmd" >"$work/job.out" 2>&1 &
job_srun=$!
ranks_up() { [ "$(grep -c '"pid"' "$work/job.out")" = "$NRANKS" ]; }
wait_for 20 ranks_up || { cat "$work/job.out"; echo "FAIL: the fixture job did not start"; exit 1; }
job=$(timeout 5 squeue -h --name ncclscope-fixture -o %i)
# Only this job's ranks (srun hands the environment to the step): other tests' fixtures may run
# on this machine at the same time.
NCCLSCOPE_PIDS=$(python3 -c 'import json,sys; print(" ".join(str(json.loads(l)["pid"]) for l in sys.stdin if l.startswith("{")))' <"$work/job.out")
export NCCLSCOPE_PIDS

# 1. Every rank answers: rank-0..3.json, progress, the culprit.
start=$SECONDS
bash "$collect" --out "$work/all" --launcher "srun --overlap --jobid $job --ntasks-per-node 1" \
  --ncclscope "$work/node-ncclscope" --local-ncclscope "$cli" -- --json >"$work/all.json" 2>"$work/all.err"
rc=$?
echo "collect through srun: $((SECONDS - start)) s"
check "srun: exit 0" test "$rc" = 0
check_snapshots "$work/all" 0 1 2 3
check "srun: progress on stderr" grep -qx "cluster-collect: collected 4/4 ranks (1/1 nodes done)" "$work/all.err"
check "srun: no problem" grep -q "4 snapshot(s) in $work/all, 0 problem(s)" "$work/all.err"
json_check "srun: triage verdict hang, culprit rank 2" "$work/all.json" 'r["verdict"] == "hang" and r["culprit_ranks"] == [2]'

# 2. An srun that fails (no such job): one line saying so, nothing usable (exit 2).
bash "$collect" --out "$work/nojob" --launcher "srun --overlap --jobid 999999 --ntasks-per-node 1" \
  --ncclscope "$work/node-ncclscope" --local-ncclscope "$cli" >/dev/null 2>"$work/nojob.err"
rc=$?
check "srun fails: exit 2 (nothing usable)" test "$rc" = 2
check "srun fails: one line naming srun's error" \
  test "$(grep -c 'cluster-collect: launcher exited 1: srun: error: .*999999' "$work/nojob.err")" = 1

# 3. Rank 3's read hangs. A node reads its ranks one after the other within one budget (the node
#    timeout, 3 s): read in the order 0, 1, 3, 2, ranks 0 and 1 are collected, rank 3's read is
#    ended, rank 2 is not read; one line each, exit 1, the triage names ranks 2, 3 absent.
rank_pid() {  # rank_pid R: the job's rank R
  local f p
  for f in /proc/[0-9]*/environ; do
    p=${f#/proc/}; p=${p%/environ}
    [[ " $NCCLSCOPE_PIDS " == *" $p "* ]] && tr '\0' '\n' 2>/dev/null <"$f" | grep -qx "SLURM_PROCID=$1" && echo "$p"
  done 2>/dev/null | head -n 1
}
hang_pid=$(rank_pid 3) unread_pid=$(rank_pid 2)
start=$SECONDS
NCCLSCOPE_PIDS="$(rank_pid 0) $(rank_pid 1) $hang_pid $unread_pid" NCCLSCOPE_TEST_HANG_PID=$hang_pid \
  bash "$collect" --out "$work/hang" --node-timeout 3 --launcher "srun --overlap --jobid $job --ntasks-per-node 1" \
  --ncclscope "$work/node-ncclscope" --local-ncclscope "$cli" -- --json >"$work/hang.json" 2>"$work/hang.err"
rc=$?
echo "collect with a hanging rank, --node-timeout 3: $((SECONDS - start)) s"
check "node timeout: exit 1 (partial)" test "$rc" = 1
check "node timeout: one line for the hung rank" \
  test "$(grep -c "pid $hang_pid: ncclscope state did not finish within the node timeout (3 s)" "$work/hang.err")" = 1
check "node timeout: one line for the rank not read" \
  test "$(grep -c "pid $unread_pid: not read, the node timeout (3 s) is spent" "$work/hang.err")" = 1
check_snapshots "$work/hang" 0 1
check "node timeout: progress 2/4" grep -qx "cluster-collect: collected 2/4 ranks (1/1 nodes done)" "$work/hang.err"
json_check "node timeout: triage names ranks 2, 3 as absent" "$work/hang.json" \
  '[f["culprit_ranks"] for c in r["communicators"] for f in c["findings"] if f["kind"] == "absent-ranks"] == [[2, 3]]'

finish "cluster through slurm" 3
