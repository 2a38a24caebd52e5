#!/usr/bin/env bash
# scripts/cluster-collect.sh through real `pdsh -R ssh` to a real sshd on this machine
# (its own port, host key, authorized key and known_hosts; listening on 127.0.0.1 and
# 127.0.0.2). A 6-rank job of live comm_fixture ranks on three "nodes": localhost (ranks
# 0, 1), 127.0.0.1 (2, 3), 127.0.0.2 (4, 5), each node's ranks given to it by the ssh
# client config (SetEnv NCCLSCOPE_PIDS); rank 2 launched one AllReduce fewer.
#  1. every node answers: six snapshots, the culprit rank 2;
#  2. 127.0.0.1's host key not known (strict checking, empty known_hosts), 127.0.0.2 on a
#     port nothing listens on, 127.0.0.3 a host that accepts and never answers (past the
#     node timeout, 4 s), ghost.invalid resolves nowhere: one line per node with the reason,
#     localhost's ranks still collected, exit 1, triage names ranks 2-5 absent.
set -uo pipefail
source "${NCCLSCOPE_SRC:?}/tests/cli/cluster_lib.sh"
need_root
need_localhost
need_commands pdsh:pdsh ssh:openssh-client ssh-keygen:openssh-client
[ -x /usr/sbin/sshd ] || skip "/usr/sbin/sshd missing (apt-get install openssh-server)"
pdsh -V 2>&1 | grep -q 'rcmd modules:.*ssh' || skip "pdsh has no ssh module"
NRANKS=6 CULPRIT=2
setup_work
pids=() sshd_pid="" made_privsep=""
cleanup() {
  [ -n "$sshd_pid" ] && kill "$sshd_pid" 2>/dev/null
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
  [ -n "$sshd_pid" ] && { wait_for 5 test ! -e "/proc/$sshd_pid" || kill -9 "$sshd_pid" 2>/dev/null; }
  [ -n "$made_privsep" ] && rmdir /run/sshd 2>/dev/null
  [ -d "${CLUSTER_TEST_SAMPLES:-}" ] && cp "$work"/*.err "$CLUSTER_TEST_SAMPLES"/ 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT

# The ranks, each with RANK=r in its environment (as torchrun sets it).
for rank in $(seq 0 $((NRANKS - 1))); do
  # shellcheck disable=SC2046
  RANK=$rank timeout 120 "$comm_fixture" $(fixture_args "$rank" $NRANKS $CULPRIT) >"$work/rank$rank.out" 2>&1 &
done
start_ranks

# sshd: its own host key, port, pid file; the test's key authorized; NCCLSCOPE_PIDS accepted.
port=$(free_port) closed_port=$(free_port)
ssh-keygen -q -t ed25519 -N '' -f "$work/host_key" && ssh-keygen -q -t ed25519 -N '' -f "$work/user_key" || exit 1
cp "$work/user_key.pub" "$work/authorized_keys"
cat >"$work/sshd_config" <<EOF
Port $port
ListenAddress 127.0.0.1
ListenAddress 127.0.0.2
HostKey $work/host_key
PidFile $work/sshd.pid
AuthorizedKeysFile $work/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
AcceptEnv NCCLSCOPE_PIDS
EOF
[ -d /run/sshd ] || { mkdir -p /run/sshd && made_privsep=1; }  # sshd's privilege separation directory
timeout 120 /usr/sbin/sshd -D -e -f "$work/sshd_config" >"$work/sshd.log" 2>&1 &
sshd_pid=$!
wait_for 10 grep -q "Server listening on 127.0.0.2" "$work/sshd.log" || { cat "$work/sshd.log"; echo "FAIL: sshd did not start"; exit 1; }

# A "node" that accepts the connection and never says a word (a hung host): 127.0.0.3.
silent_port=$(free_port)
timeout 120 python3 -c 'import socket, sys, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(8); print("listening", flush=True)
held = []
while True: held.append(s.accept())' "$silent_port" >"$work/silent.log" 2>&1 &
pids+=($!)
wait_for 10 grep -q listening "$work/silent.log" || { echo "FAIL: silent listener did not start"; exit 1; }

host_key=$(cut -d' ' -f1,2 "$work/host_key.pub")
printf '[%s]:%s %s\n' localhost "$port" "$host_key" 127.0.0.1 "$port" "$host_key" 127.0.0.2 "$port" "$host_key" >"$work/known_hosts"
: >"$work/known_hosts.empty"
# ssh_config NAME [127.0.0.1-KNOWN-HOSTS [127.0.0.2-PORT]]: one client config per run.
ssh_config() {
  cat >"$work/$1.ssh_config" <<EOF
Host localhost
  SetEnv NCCLSCOPE_PIDS="${pids[0]} ${pids[1]}"
Host 127.0.0.1
  SetEnv NCCLSCOPE_PIDS="${pids[2]} ${pids[3]}"
  UserKnownHostsFile ${2:-$work/known_hosts}
Host 127.0.0.2
  SetEnv NCCLSCOPE_PIDS="${pids[4]} ${pids[5]}"
  Port ${3:-$port}
Host 127.0.0.3
  HostName 127.0.0.1
  Port $silent_port
  ConnectTimeout 60
Host *
  Port $port
  User root
  IdentityFile $work/user_key
  IdentitiesOnly yes
  UserKnownHostsFile $work/known_hosts
  StrictHostKeyChecking yes
  CheckHostIP no
  BatchMode yes
  ConnectTimeout 5
  AddressFamily inet
  LogLevel ERROR
EOF
}
collect_with() {  # collect_with CONFIG OUT NODES [OPTION...]
  PDSH_SSH_ARGS_APPEND="-F $work/$1.ssh_config" bash "$collect" --out "$work/$2" "${@:4}" \
    --launcher "pdsh -R ssh -w $3" --remote-script "$collect" --ncclscope "$work/node-ncclscope" \
    --local-ncclscope "$cli" -- --json >"$work/$2.json" 2>"$work/$2.err"
}

# 1. Every node answers.
ssh_config good
start=$SECONDS
collect_with good all localhost,127.0.0.1,127.0.0.2
rc=$?
echo "collect through pdsh, 3 nodes: $((SECONDS - start)) s"
check "pdsh: exit 0" test "$rc" = 0
check_snapshots "$work/all" 0 1 2 3 4 5
check "pdsh: progress on stderr" grep -qx "cluster-collect: collected 6/6 ranks (3/3 nodes done)" "$work/all.err"
check "pdsh: no problem" grep -q "6 snapshot(s) in $work/all, 0 problem(s)" "$work/all.err"
json_check "pdsh: triage verdict hang, culprit rank 2" "$work/all.json" 'r["verdict"] == "hang" and r["culprit_ranks"] == [2]'

# 2. Three nodes that do not answer, each for its own reason.
ssh_config bad "$work/known_hosts.empty" "$closed_port"
start=$SECONDS
collect_with bad some localhost,127.0.0.1,127.0.0.2,127.0.0.3,ghost.invalid --node-timeout 4
rc=$?
echo "collect through pdsh, 1 of 5 nodes answering, --node-timeout 4: $((SECONDS - start)) s"
check "unanswered: exit 1 (partial)" test "$rc" = 1
check_snapshots "$work/some" 0 1
check "unanswered: one line per node" test "$(grep -c 'did not answer' "$work/some.err")" = 4
check "unanswered: host key not known" \
  grep -qx "cluster-collect: node 127.0.0.1 did not answer: No ED25519 host key is known for \[127.0.0.1\]:$port and you have requested strict checking." "$work/some.err"
check "unanswered: nothing listens" \
  grep -qx "cluster-collect: node 127.0.0.2 did not answer: ssh: connect to host 127.0.0.2 port $closed_port: Connection refused" "$work/some.err"
check "unanswered: resolves nowhere" \
  grep -q "^cluster-collect: node ghost.invalid did not answer: ssh: Could not resolve hostname ghost.invalid" "$work/some.err"
check "unanswered: hangs past the node timeout" \
  grep -qx "cluster-collect: node 127.0.0.3 did not answer: no complete answer within the node timeout (4 s)" "$work/some.err"
check "unanswered: named in unanswered-nodes.txt" \
  test "$(cut -f1 "$work/some/unanswered-nodes.txt" | tr '\n' ' ')" = "127.0.0.1 127.0.0.2 127.0.0.3 ghost.invalid "
check "unanswered: progress names the job's size" grep -qx "cluster-collect: collected 2/6 ranks (1/5 nodes done)" "$work/some.err"
json_check "unanswered: triage names ranks 2-5 as absent" "$work/some.json" \
  '[f["culprit_ranks"] for c in r["communicators"] for f in c["findings"] if f["kind"] == "absent-ranks"] == [[2, 3, 4, 5]]'

finish "cluster through pdsh" 5
